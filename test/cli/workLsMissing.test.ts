/**
 * `work ls CATEGORY/TENANT` naming what is not there says so (as `work prune` does), through the built CLI on
 * real directories; an existing tenant without runs is still "No work runs.".
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

describe("work ls of a category or tenant that is not there (built CLI)", () => {
  it("names the missing part, in words and in --json; an empty tenant has no runs", () => {
    const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-ls-missing-"))
    temps.push(base)
    const agentDir = Path.join(base, "agent")
    Fs.mkdirSync(Path.join(agentDir, "work", "tools", "bash"), { recursive: true, mode: 0o700 })
    const ls = (...args: ReadonlyArray<string>) => {
      const r = spawnSync(process.execPath, [MAIN, "--agent-dir", agentDir, "work", "ls", ...args], { encoding: "utf8" })
      assert.strictEqual(r.status, 0, r.stderr)
      return r.stdout
    }
    assert.strictEqual(ls("tools/zsh"), "tools/zsh: no such tenant\n")
    assert.strictEqual(ls("nosuch"), "nosuch: no such category\n")
    assert.strictEqual(ls("nosuch/zsh"), "nosuch/zsh: no such category\n")
    assert.strictEqual(ls("tools/bash"), "No work runs.\n")
    assert.strictEqual((JSON.parse(ls("tools/zsh", "--json")) as { missing?: string }).missing, "tenant")
    assert.notProperty(JSON.parse(ls("tools/bash", "--json")) as object, "missing")
  })
})
