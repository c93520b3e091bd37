/**
 * Test-only (it registers vitest hooks; hosts.ts stays importable from the bench and the stress tool).
 */
import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, beforeEach } from "vitest"
import { exited } from "./hosts.js"

/**
 * Each test's scratch dir (its agent dir at `agent/`) and the children it starts on other hosts: made before
 * each test, the children SIGKILLed and awaited and the dir removed after it. Call at a test file's top level.
 */
export const hostScratch = (prefix: string) => {
  const state = { scratch: "", agentDir: "", children: [] as Array<ChildProcess> }
  beforeEach(() => {
    state.scratch = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
    state.agentDir = path.join(state.scratch, "agent")
  })
  afterEach(async () => {
    for (const child of state.children.splice(0)) {
      child.kill("SIGKILL")
      await exited(child)
    }
    fs.rmSync(state.scratch, { recursive: true, force: true })
  })
  return state
}
