/**
 * BK1 with DESIGN "Safety rules" (replace a file a person may edit only if it is still what was read): a
 * person saves a live config file after the rollback read it and before it writes it. The rollback replaces
 * it only if it is still what it read, so their save is kept (reported as skipped, `ChangedMeanwhile`),
 * while the other files are rolled back. Real git, real files; the save is made at exactly that moment by a
 * FileSystem that saves just before the write reaches the port.
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { personSavingOnce, tempRoot } from "./configHistorySupport.js"

const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n"

describe("ConfigHistory rollback beside a person saving a live file", () => {
  it.scopedLive("their save between the rollback's read and its write is kept and reported; the rest is rolled back", () =>
    Effect.gen(function*() {
      const root = yield* tempRoot
      const agent = NodePath.join(root, "agent")
      const settings = NodePath.join(agent, "settings.json")
      const keys = NodePath.join(agent, "keybindings.json")
      fs.mkdirSync(agent, { recursive: true })
      const person = personSavingOnce(agent, settings, json({ theme: "saved by a person" }))
      const history = yield* person.history

      fs.writeFileSync(settings, json({ theme: "dark" }))
      fs.writeFileSync(keys, json({ quit: "ctrl+q" }))
      const first = yield* history.snapshot({ message: "first" })
      fs.writeFileSync(settings, json({ theme: "light" }))
      fs.writeFileSync(keys, json({ quit: "ctrl+x" }))
      yield* history.snapshot({ message: "second" })

      person.arm()
      const back = yield* history.rollback(first.revision!)
      assert.isTrue(person.saved(), "the person saved during the rollback")
      assert.strictEqual(fs.readFileSync(settings, "utf8"), json({ theme: "saved by a person" }))
      assert.strictEqual(fs.readFileSync(keys, "utf8"), json({ quit: "ctrl+q" }))
      assert.deepStrictEqual(back.restored, ["keybindings.json"])
      assert.deepStrictEqual(back.skipped.map((s) => [s._tag, s.path]), [["ChangedMeanwhile", "settings.json"]])
      assert.deepStrictEqual(fs.readdirSync(agent).filter((n) => n.startsWith(".")), [], "no temp file left")
    }))
})
