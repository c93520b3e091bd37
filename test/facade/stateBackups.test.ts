/**
 * The facade's `storage.stateBackups()`: no I/O until a method is called, then the service's results and its
 * typed rejections.
 */
import * as nfs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { openAgentStorage } from "../../src/promise.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

describe("facade: stateBackups", () => {
  it("creates, lists, verifies, forgets and restores; building it touches nothing", async () => {
    const base = scratch("pi-snap-facade-")
    const agentDir = NodePath.join(base, "agent")
    nfs.mkdirSync(NodePath.join(agentDir, "state"), { recursive: true })
    nfs.writeFileSync(NodePath.join(agentDir, "state", "a.json"), "{}")
    const storage = await openAgentStorage({ agentDir, migrate: false })
    try {
      const backups = storage.stateBackups({ root: NodePath.join(base, "bk") })
      assert.strictEqual(backups.root, NodePath.join(base, "bk"))
      assert.isFalse(nfs.existsSync(backups.root), "no I/O until called")
      const created = await backups.create({ label: "facade" })
      assert.strictEqual(created.files, 1)
      const listed = await backups.list()
      assert.deepStrictEqual(listed.map((s) => [s.id, s.label]), [[created.id, "facade"]])
      assert.isTrue((await backups.verify()).ok)
      nfs.writeFileSync(NodePath.join(agentDir, "state", "a.json"), "{\"changed\":true}")
      const restored = await backups.restore(created.id)
      assert.deepStrictEqual(restored.restored, [NodePath.join(agentDir, "state", "a.json")])
      assert.strictEqual(nfs.readFileSync(NodePath.join(agentDir, "state", "a.json"), "utf8"), "{}")
      assert.deepStrictEqual((await backups.forget({ keepLast: 1 })).removed, [])
      const rejected = await backups.forget({}).then(() => undefined, (e: { _tag: string }) => e)
      assert.strictEqual(rejected?._tag, "InvalidArgument")
      const missing = await backups.restore("2020-01-01T00-00-00.000Z-000000").then(() => undefined, (e: { _tag: string }) => e)
      assert.strictEqual(missing?._tag, "SnapshotNotFound")
    } finally {
      await storage.close()
    }
  })
})
