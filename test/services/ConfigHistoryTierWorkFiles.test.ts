/**
 * The tier's machinery is never config: a settings lock held (or left by a crash) and a torn atomic write's temp
 * in an extension's config/ are not recorded by a snapshot (and the snapshot says so), and a rollback to a
 * revision an older build made with a lock in it does not write the lock back (it would stall the next
 * `config.set` for the lock's stale age) and says so. A person's file that only looks like a temp
 * (`.draft.tmp-1`) is config like any other.
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { isTierWorkFile, SETTINGS_LOCK } from "../../src/domain/Tiers.js"
import { rawGit, setup } from "./configHistorySupport.js"

describe("config history and the tiers' own files", () => {
  it("the rule: the settings lock and atomic temps, nothing else", () => {
    assert.isTrue(isTierWorkFile(SETTINGS_LOCK))
    assert.isTrue(isTierWorkFile(".settings.json.tmp-0a1b2c3d4e5f"))
    assert.isTrue(isTierWorkFile(".theme.css.tmp-00ff00ff00ff"))
    const lookAlikes = [".draft.tmp-1", ".notes.tmp-cafe", ".x.tmp-2024", ".x.tmp-0a1b2c3d4e5f6", ".x.tmp-0A1B2C3D4E5F", ".x.tmp-", ".x.tmp-XYZ"]
    for (const data of ["settings.json", ".settings.json.kept-2026", "lock", ".settings.json.lock.bak", ...lookAlikes]) {
      assert.isFalse(isTierWorkFile(data), data)
    }
  })

  it.effect("a snapshot records neither a held lock nor a torn write's temp; the data beside them is recorded", () =>
    Effect.scoped(Effect.gen(function*() {
      const fx = yield* setup()
      fx.write("web/e/config/settings.json", "{\"a\":1}\n")
      fx.write(`web/e/config/${SETTINGS_LOCK}`, "token\n")
      fx.write("web/e/config/.settings.json.tmp-0123abcd4567", "{\"a\":")
      fx.write("web/e/config/sub/.notes.txt.tmp-99887766aabb", "half")
      fx.write("web/e/config/.draft.tmp-1", "a person's draft")
      const result = yield* fx.history.snapshot({ message: "one" })
      assert.deepStrictEqual([...result.changed].sort(), ["e/config/.draft.tmp-1", "e/config/settings.json"])
      assert.deepStrictEqual(
        result.skipped.map((s) => [s._tag, s.path]).sort(),
        [["TierWorkFile", `e/config/${SETTINGS_LOCK}`], ["TierWorkFile", "e/config/.settings.json.tmp-0123abcd4567"], ["TierWorkFile", "e/config/sub/.notes.txt.tmp-99887766aabb"]]
      )
      const tree = rawGit(fx.history.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim().split("\n")
      assert.deepStrictEqual(tree, ["web/e/config/.draft.tmp-1", "web/e/config/settings.json"])
      assert.deepStrictEqual((yield* fx.history.diff()).files, [])
      // The lock and the temp are where they were.
      assert.isTrue(fx.exists(`web/e/config/${SETTINGS_LOCK}`) && fx.exists("web/e/config/.settings.json.tmp-0123abcd4567"))
    })))

  it.effect("a revision holding a lock (an older build's): a rollback does not write it back, and the next snapshot drops it", () =>
    Effect.scoped(Effect.gen(function*() {
      const fx = yield* setup()
      fx.write("web/e/config/settings.json", "{\"a\":1}\n")
      const first = yield* fx.history.snapshot({ message: "one" })
      // What an older build committed: the lock in the mirror, in a revision of its own.
      const mirrorLock = NodePath.join(fx.history.dir, "web", "e", "config", SETTINGS_LOCK)
      fs.writeFileSync(mirrorLock, "old token\n")
      rawGit(fx.history.dir, ["add", "--", `web/e/config/${SETTINGS_LOCK}`])
      rawGit(fx.history.dir, ["-c", "user.name=old", "-c", "user.email=old@build", "commit", "-q", "-m", "older build"])
      const old = rawGit(fx.history.dir, ["rev-parse", "HEAD"]).trim()
      fx.write("web/e/config/settings.json", "{\"a\":2}\n")
      const rolled = yield* fx.history.rollback(old)
      assert.isFalse(fx.exists(`web/e/config/${SETTINGS_LOCK}`), "the rollback wrote the lock back")
      assert.strictEqual(fx.read("web/e/config/settings.json"), "{\"a\":1}\n")
      assert.notInclude(rolled.restored, `e/config/${SETTINGS_LOCK}`)
      assert.deepStrictEqual(rolled.skipped.map((s) => [s._tag, s.path]), [["TierWorkFile", `e/config/${SETTINGS_LOCK}`]])
      // The history no longer holds it once it has recorded the live files again.
      const tree = rawGit(fx.history.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim().split("\n")
      assert.notInclude(tree, `web/e/config/${SETTINGS_LOCK}`)
      assert.isNotNull(first.revision)
    })))
})
