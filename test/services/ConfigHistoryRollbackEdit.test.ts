/**
 * BK1 with DESIGN "Safety rules" (replace a file a person may edit only if it is still what was read): a
 * person saves a live config file after the rollback read it and before it writes it. The rollback replaces
 * it only if it is still what it read, so their save is kept (reported as skipped, `ChangedMeanwhile`),
 * while the other files are rolled back. Real git, real files; the save is made at exactly that moment by a
 * FileSystem that saves just before the write reaches the port.
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import * as NodeProcessRunner from "../../src/layers/NodeProcessRunner.js"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { ConfigHistory } from "../../src/services/ConfigHistory.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { tempRoot } from "./configHistorySupport.js"

const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n"

describe("ConfigHistory rollback beside a person saving a live file", () => {
  it.scopedLive("their save between the rollback's read and its write is kept and reported; the rest is rolled back", () =>
    Effect.gen(function*() {
      const root = yield* tempRoot
      const agent = NodePath.join(root, "agent")
      const settings = NodePath.join(agent, "settings.json")
      const keys = NodePath.join(agent, "keybindings.json")
      fs.mkdirSync(agent, { recursive: true })
      let armed = false
      /** The person's editor: a temp file beside it renamed over it, once, as the rollback is about to write. */
      const personSaves = (path: string) =>
        Effect.sync(() => {
          if (!armed || path !== settings) return
          armed = false
          fs.writeFileSync(`${settings}.editor`, json({ theme: "saved by a person" }))
          fs.renameSync(`${settings}.editor`, settings)
        })
      const racing = Layer.effect(
        FileSystem,
        Effect.map(FileSystem, (real): FileSystem["Type"] => ({
          ...real,
          writeFileAtomic: (path, data, options) => Effect.zipRight(personSaves(path), real.writeFileAtomic(path, data, options)),
          replaceFileIfUnchanged: (path, expected, data, options) =>
            Effect.zipRight(personSaves(path), real.replaceFileIfUnchanged(path, expected, data, options))
        }))
      ).pipe(Layer.provide(NodeFileSystem.layer))
      const world = Layer.mergeAll(racing, NodeHost.layer, NodeProcessRunner.layer)
      const history = yield* Effect.provide(
        ConfigHistory,
        ConfigHistory.layer.pipe(Layer.provide(Layer.merge(world, AgentDir.layerWith(agent).pipe(Layer.provide(world)))))
      )

      fs.writeFileSync(settings, json({ theme: "dark" }))
      fs.writeFileSync(keys, json({ quit: "ctrl+q" }))
      const first = yield* history.snapshot({ message: "first" })
      fs.writeFileSync(settings, json({ theme: "light" }))
      fs.writeFileSync(keys, json({ quit: "ctrl+x" }))
      yield* history.snapshot({ message: "second" })

      armed = true
      const back = yield* history.rollback(first.revision!)
      assert.isFalse(armed, "the person saved during the rollback")
      assert.strictEqual(fs.readFileSync(settings, "utf8"), json({ theme: "saved by a person" }))
      assert.strictEqual(fs.readFileSync(keys, "utf8"), json({ quit: "ctrl+q" }))
      assert.deepStrictEqual(back.restored, ["keybindings.json"])
      assert.deepStrictEqual(back.skipped.map((s) => [s._tag, s.path]), [["ChangedMeanwhile", "settings.json"]])
      assert.deepStrictEqual(fs.readdirSync(agent).filter((n) => n.startsWith(".")), [], "no temp file left")
    }))
})
