/**
 * `work rm`'s report of each run (docs/cli.md "CLI quick tour", `work rm`): a run whose `lstat` failed other than
 * "not found" is its own outcome, `Unreadable` with the file system's reason, in the words and in `--json`,
 * never "missing". Through the built CLI as a child running as another user (we run as root), so a tenant
 * directory without search permission makes the lstat of each run in it fail with EACCES.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { renderRemoval, rmExitCode } from "../../src/cli/commands/rm.js"
import { painter } from "../../src/cli/format.js"
import type { RemoveRunOutcome } from "../../src/services/WorkRuns.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
/** `nobody`: a user that owns the scratch agent dir, so only the missing search bit refuses it. */
const OTHER = 65534
const asRoot = process.getuid?.() === 0

const cliAs = (uid: number, home: string, args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      uid,
      gid: uid,
      env: { ...process.env, HOME: home, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })

describe("work rm report", () => {
  it("an unreadable run is kept with its reason, never shown as missing; exit 1", () => {
    const outcomes: ReadonlyArray<RemoveRunOutcome> = [
      { runId: "old", _tag: "Removed" },
      { runId: "nosuch", _tag: "Missing" },
      { runId: "dark", _tag: "Unreadable", reason: "PermissionDenied", why: "it cannot be examined: EACCES" }
    ]
    assert.strictEqual(
      renderRemoval(painter(false), "tools/bash", outcomes).text,
      "removed  tools/bash/old\n" +
        "missing  tools/bash/nosuch: no such run\n" +
        "kept     tools/bash/dark: it cannot be examined: EACCES (PermissionDenied; left alone, it may be there)\n"
    )
    assert.strictEqual(rmExitCode(outcomes), 1)
    assert.strictEqual(rmExitCode([outcomes[0]!]), 0)
  })

  describe.skipIf(!asRoot)("through the CLI, as another user (needs root to switch user)", () => {
    let scratch = ""
    let agentDir = ""
    beforeAll(() => {
      scratch = Fs.mkdtempSync(Path.join(Os.tmpdir(), "rm-unreadable-"))
      agentDir = Path.join(scratch, "agent")
      Fs.mkdirSync(Path.join(agentDir, "work", "tools", "bash", "dark-run"), { recursive: true })
      for (const p of ["", "agent", "agent/work", "agent/work/tools", "agent/work/tools/bash", "agent/work/tools/bash/dark-run"]) {
        Fs.chownSync(Path.join(scratch, p), OTHER, OTHER)
      }
      Fs.chmodSync(scratch, 0o755)
      // Readable, not searchable: the tenant itself passes the root checks, every lstat inside it is EACCES.
      Fs.chmodSync(Path.join(agentDir, "work", "tools", "bash"), 0o600)
    })
    afterAll(() => Fs.rmSync(scratch, { recursive: true, force: true }))

    it("--json: Unreadable with reason PermissionDenied for each run, none Missing; the run is kept; exit 1", async () => {
      const r = await cliAs(OTHER, scratch, ["--agent-dir", agentDir, "work", "rm", "tools/bash", "dark-run", "nosuch", "--json"])
      assert.strictEqual(r.code, 1, r.stderr)
      const runs = JSON.parse(r.stdout).runs as ReadonlyArray<Record<string, unknown>>
      assert.deepStrictEqual(runs.map((o) => [o["runId"], o["_tag"], o["reason"]]), [
        ["dark-run", "Unreadable", "PermissionDenied"],
        ["nosuch", "Unreadable", "PermissionDenied"]
      ])
      assert.match(String(runs[0]!["why"]), /cannot be examined: .*EACCES/)
      assert.isTrue(Fs.statSync(Path.join(agentDir, "work", "tools", "bash", "dark-run")).isDirectory())

      const human = await cliAs(OTHER, scratch, ["--agent-dir", agentDir, "work", "rm", "tools/bash", "dark-run"])
      assert.strictEqual(human.code, 1, human.stderr)
      assert.match(human.stdout, /^kept {5}tools\/bash\/dark-run: it cannot be examined: .*\(PermissionDenied; left alone, it may be there\)\n$/)
    }, 60_000)
  })
})
