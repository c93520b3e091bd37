/** Test support: run a Node script as a child process and collect its exit code and output. */
import { spawn } from "node:child_process"

export interface ChildResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export const runNode = (
  script: string,
  args: ReadonlyArray<string>,
  options: { readonly env?: NodeJS.ProcessEnv; readonly cwd?: string } = {}
): Promise<ChildResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
      ...(options.cwd ? { cwd: options.cwd } : {})
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })
