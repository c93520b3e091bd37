/** `storage.configHistory()` on the Promise facade: no I/O until called, typed rejections, apply's own error. */
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
