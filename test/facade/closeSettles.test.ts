/**
 * A Promise caller's script may end with `await store.close()`: close() must settle whatever the store's
 * threads are doing, or Node exits with code 13 (an unsettled top-level await) and the script's last steps
 * never run. With the portable walker, deletions run on a remover thread that close() stops; stopping it once
 * let the event loop run empty. Real child processes of the built facade, as a user runs them.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const SCRIPT = path.join(import.meta.dirname, "..", "fixtures", "closeAfterRelease.mjs")
const ATTEMPTS = 6

const runScript = (agentDir: string): Promise<{ readonly code: number; readonly stdout: string }> =>
  new Promise((resolve) => {
    // The portable walker, and no other PI_* setting: the store as a machine without the addon opens it.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("PI_")))
    execFile(process.execPath, [SCRIPT, agentDir], { env: { ...env, PI_STORAGE_NATIVE: "0" }, encoding: "utf8", timeout: 60_000 }, (error, stdout) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout }))
  })

describe("close() settles", () => {
  it("a script that releases with delete and then awaits close() runs to its end (portable walker)", async () => {
    const outcomes: Array<{ readonly code: number; readonly stdout: string }> = []
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-close-settles-"))
      outcomes.push(await runScript(agentDir))
      fs.rmSync(agentDir, { recursive: true, force: true })
    }
    // Before: exit code 13 in most attempts, "closed" never printed.
    expect(outcomes).toEqual(Array.from({ length: ATTEMPTS }, () => ({ code: 0, stdout: "closed\n" })))
  }, 120_000)
})
