/**
 * Issue 13 (and issue 12 point 7's CLI bullets) through the built CLI as a child process: what a person at
 * a shell meets. `npm test` builds `dist/` first.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"

const MAIN = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url))
const DAY = 24 * 60 * 60 * 1000

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const baseEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete env["PI_WEB_DATA_DIR"]
  delete env["NO_COLOR"]
  return env
}

const cli = (args: ReadonlyArray<string>, options: { readonly env?: NodeJS.ProcessEnv; readonly cwd?: string } = {}): Promise<Result> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: options.env ?? baseEnv(),
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

const at = (agentDir: string) => (...args: ReadonlyArray<string>) => cli(["--agent-dir", agentDir, ...args])

const temps: Array<string> = []
const tempDir = (): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-cli13-"))
  temps.push(dir)
  return dir
}

/** A private agent dir with `work/<category>/<tenant>/` made 0700 all the way. */
const agentWithTenant = (category = "tools", tenant = "bash") => {
  const agentDir = Path.join(tempDir(), "agent")
  Fs.mkdirSync(Path.join(agentDir, "work", category, tenant), { recursive: true, mode: 0o700 })
  for (const d of [agentDir, Path.join(agentDir, "work"), Path.join(agentDir, "work", category), Path.join(agentDir, "work", category, tenant)]) {
    Fs.chmodSync(d, 0o700)
  }
  return { agentDir, tenantDir: Path.join(agentDir, "work", category, tenant) }
}

/** A released run whose manifest says it was last used `daysAgo` days ago, with `files` empty files. */
const releasedRun = (tenantDir: string, runId: string, daysAgo: number, files = 0) => {
  const runDir = Path.join(tenantDir, runId)
  Fs.mkdirSync(Path.join(runDir, ".leases"), { recursive: true, mode: 0o700 })
  const [category, tenant] = tenantDir.split(Path.sep).slice(-2)
  const at = Date.now() - daysAgo * DAY
  Fs.writeFileSync(Path.join(runDir, ".pi-work-run.json"), JSON.stringify({
    version: 2, category, tenant, runId, kind: "named", createdAt: at, releasedAt: at, createdBy: { host: Os.hostname(), pid: 1 }
  }))
  for (let i = 0; i < files; i++) Fs.writeFileSync(Path.join(runDir, `f${i}`), "")
  return runDir
}

beforeAll(() => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
})
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

describe("warnings on stderr", () => {
  it("work run in a group-writable tenant: the refused background prune is a warning line on stderr; the child still runs", async () => {
    const { agentDir, tenantDir } = agentWithTenant()
    Fs.chmodSync(tenantDir, 0o777)
    const r = await at(agentDir)("work", "run", "tools/bash", "--", "true")
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stderr, /^pi-storage: warning: the background prune of tools\/bash did not run: .*group/m)
  })
})
