/**
 * A rollback loses nothing history does not hold (docs/config-history.md "Config history"), real git on real files: a live
 * file history could not store (grown over the size budget) is never written over, and a live file the
 * revision does not have is removed only while it is still the version the rollback read (a person's save at
 * that moment is kept and reported `ChangedMeanwhile`, as for a write).
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { unstoredLiveCover } from "../../src/domain/ConfigHistory.js"
import { configSkip } from "../../src/domain/ReportProblems.js"
import { personSavingOnce, setup, tempRoot } from "./configHistorySupport.js"

const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n"

describe("a rollback never loses a live file history does not hold", () => {
  it.scopedLive("a live file grown over the size budget (skipped, RedLine) is left as it is, and reported", () =>
    Effect.gen(function*() {
      const { history, write, read } = yield* setup({ configBudgetBytes: 1024 })
      write("agent/settings.json", json({ theme: "dark" }))
      write("agent/keybindings.json", json({ quit: "ctrl+q" }))
      const first = yield* history.snapshot({ message: "small" })
      const big = json({ theme: "light", notes: "n".repeat(4096) })
      write("agent/settings.json", big)
      write("agent/keybindings.json", json({ quit: "ctrl+x" }))
      const second = yield* history.snapshot({ message: "grown" })
      assert.deepStrictEqual(second.skipped.map((s) => [s._tag, s.path]), [["RedLine", "settings.json"]])
      const back = yield* history.rollback(first.revision!)
      assert.strictEqual(read("agent/settings.json"), big, "the only copy of the grown file is kept")
      assert.strictEqual(read("agent/keybindings.json"), json({ quit: "ctrl+q" }))
      assert.deepStrictEqual(back.restored, ["keybindings.json"])
      assert.deepStrictEqual(back.skipped.map((s) => [s._tag, s.path]), [["RedLine", "settings.json"]])
      assert.match(back.skipped[0]!.reason, /not in history \(config red line .*\), so a rollback would lose it/)
    }))

  it.scopedLive("a person's save of a file the rollback is removing, made as the removal reaches the disk, is kept and reported ChangedMeanwhile", () =>
    Effect.gen(function*() {
      const root = yield* tempRoot
      const agent = NodePath.join(root, "agent")
      const models = NodePath.join(agent, "models.json")
      fs.mkdirSync(agent, { recursive: true })
      const person = personSavingOnce(agent, models, json({ model: "saved by a person" }))
      const history = yield* person.history
      const settings = NodePath.join(agent, "settings.json")
      fs.writeFileSync(settings, json({ theme: "dark" }))
      const first = yield* history.snapshot({ message: "no models yet" })
      fs.writeFileSync(models, json({ model: "recorded" }))
      fs.writeFileSync(settings, json({ theme: "light" }))
      yield* history.snapshot({ message: "models" })

      person.arm()
      const back = yield* history.rollback(first.revision!)
      assert.isTrue(person.saved(), "the person saved during the rollback")
      assert.strictEqual(fs.readFileSync(models, "utf8"), json({ model: "saved by a person" }))
      assert.strictEqual(fs.readFileSync(settings, "utf8"), json({ theme: "dark" }))
      assert.deepStrictEqual(back.removed, [])
      assert.deepStrictEqual(back.skipped.map((s) => [s._tag, s.path]), [["ChangedMeanwhile", "models.json"]])
      // Unchanged meanwhile, it goes.
      const again = yield* history.rollback(first.revision!)
      assert.deepStrictEqual(again.removed, ["models.json"])
      assert.isFalse(fs.existsSync(models))
      assert.deepStrictEqual(fs.readdirSync(agent).filter((n) => n.startsWith(".")), [], "no temp file left")
    }))

  it("the cover rule: the same path, or a path below a skipped directory", () => {
    const skipped = [configSkip("RedLine", "big.json", "too big"), configSkip("TooDeep", "ext/config/a/", "deep")]
    assert.strictEqual(unstoredLiveCover(skipped, "big.json")?._tag, "RedLine")
    assert.strictEqual(unstoredLiveCover(skipped, "ext/config/a/b/c.json")?._tag, "TooDeep")
    assert.isUndefined(unstoredLiveCover(skipped, "ext/config/ab.json"))
    assert.isUndefined(unstoredLiveCover(skipped, "big.json.bak"))
  })
})
