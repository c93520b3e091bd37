/** `storage.configHistory()` on the Promise facade: no I/O until called, typed rejections, apply's own error, warnings to onWarning. */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { openAgentStorage } from "../../src/promise.js"

describe("storage.configHistory() (Promise facade)", () => {
  it("creates nothing until a method is called; change() rethrows apply's own rejection after restoring", async () => {
    const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "facade-history-"))
    try {
      const storage = await openAgentStorage({ agentDir, migrate: false })
      const history = storage.configHistory()
      const historyDir = path.join(agentDir, "state", "backups", "config", "history")
      assert.isFalse(fs.existsSync(path.join(agentDir, "state")), "no I/O until called")
      fs.writeFileSync(path.join(agentDir, "settings.json"), '{"v":1}\n')
      const first = await history.snapshot({ message: "first" })
      assert.isString(first.revision)
      assert.isTrue(fs.existsSync(path.join(historyDir, ".git")))
      const boom = new Error("apply failed")
      const rejected = await history.change("break", async () => {
        fs.writeFileSync(path.join(agentDir, "settings.json"), '{"v":"broken"}\n')
        throw boom
      }).then(() => undefined, (e: unknown) => e)
      assert.strictEqual(rejected, boom)
      assert.strictEqual(fs.readFileSync(path.join(agentDir, "settings.json"), "utf8"), '{"v":1}\n')
      const unknown = await history.rollback("cafebabe").then(() => undefined, (e: { _tag: string }) => e)
      assert.strictEqual(unknown?._tag, "UnknownRevision")
      assert.deepStrictEqual((await history.log()).map((e) => e.message), ["first"])
      await storage.close()
      await history.status().then(() => assert.fail("closed"), (e: { _tag: string }) => assert.strictEqual(e._tag, "StorageClosed"))
    } finally {
      fs.rmSync(agentDir, { recursive: true, force: true })
    }
  }, 30_000)
})

describe("storage.configHistory() warnings (a real child process on the built facade)", () => {
  it("a stale index.lock: onWarning gets a typed StaleGitLockRemoved, nothing else reaches stdout or stderr", async () => {
    const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "facade-history-warn-"))
    try {
      const fixture = path.join(import.meta.dirname, "..", "fixtures", "configHistory.mjs")
      const r = spawnSync(process.execPath, [fixture, agentDir, "stale-lock"], { encoding: "utf8" })
      assert.strictEqual(r.status, 0, r.stderr)
      // Exactly the fixture's one JSON line: no logfmt `level=WARN` line from Effect's default logger.
      const lines = r.stdout.split("\n").filter((l) => l !== "")
      assert.lengthOf(lines, 1, r.stdout)
      assert.notInclude(r.stdout, "level=WARN")
      assert.strictEqual(r.stderr, "", "the warning went to onWarning, not to a process warning")
      const { committed, warnings } = JSON.parse(lines[0]!) as { committed: boolean; warnings: Array<Record<string, string>> }
      assert.isTrue(committed, "the snapshot went through once the dead git's lock was removed")
      const lockPath = path.join(agentDir, "state", "backups", "config", "history", ".git", "index.lock")
      assert.deepStrictEqual(warnings, [{
        _tag: "StaleGitLockRemoved",
        path: lockPath,
        message: `config history: removing a stale git lock left by a dead writer: ${lockPath}`
      }])
      assert.isFalse(fs.existsSync(lockPath))
    } finally {
      fs.rmSync(agentDir, { recursive: true, force: true })
    }
  }, 30_000)
})
