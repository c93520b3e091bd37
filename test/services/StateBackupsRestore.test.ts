/**
 * Restore's scope and its report in the simulated world (docs/snapshots.md "State snapshots"): an extension the snapshot
 * holds no state of is refused before anything moves, whatever the live tree holds; with the web data root on
 * another device every directory the live data went aside to is reported.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer } from "effect"
import { segmentViolation } from "../../src/domain/Segment.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { StateBackups } from "../../src/services/StateBackups.js"
import { AGENT, snapshot, spawn } from "./migrationSupport.js"

const ROOT = "/home/user/.pi/backups/agent"
const WEB = "/home/user/.pi/web/data"

const as = <A, E>(world: MemoryWorld, use: (b: StateBackups["Type"]) => Effect.Effect<A, E>) =>
  Effect.provide(
    Effect.flatMap(StateBackups, use),
    StateBackups.layerWith({ root: ROOT, webDataRoot: WEB }).pipe(Layer.provideMerge(AgentDir.layerWith(AGENT)), Layer.provideMerge(spawn(world).layer))
  )

const extensionName = fc.stringMatching(/^[a-z][a-z0-9-]{0,7}$/)

describe("restore scope and report (Memory)", () => {
  it.effect.prop(
    "a restore of an extension the snapshot holds no state of fails ExtensionNotInSnapshot naming what it holds, and nothing moves",
    [fc.uniqueArray(extensionName, { minLength: 0, maxLength: 3 }), extensionName, fc.boolean()],
    ([held, asked, liveToo]) =>
      Effect.gen(function*() {
        // (An invalid name is refused earlier, as InvalidSegment: test/services/StateBackupsNode.)
        if (held.includes(asked) || segmentViolation(asked) !== null) return
        const world = MemoryWorld.make({ journal: false })
        for (const ext of held) yield* world.writeFixture(`${AGENT}/state/extensions/${ext}/x.json`, `{"ext":"${ext}"}`)
        yield* world.writeFixture(`${AGENT}/state/a.json`, "[1]")
        const { id } = yield* as(world, (b) => b.create())
        if (liveToo) yield* world.writeFixture(`${WEB}/${asked}/state/live.json`, "live only")
        yield* world.writeFixture(`${AGENT}/state/extensions/${asked}/live.json`, "live only")
        const before = { agent: snapshot(world), web: snapshot(world, WEB) }
        for (const dryRun of [false, true]) {
          const error = yield* Effect.flip(as(world, (b) => b.restore(id, { extension: asked, dryRun })))
          assert.strictEqual(error._tag, "ExtensionNotInSnapshot")
          assert.deepStrictEqual(error._tag === "ExtensionNotInSnapshot" && error.held, [...held].sort())
        }
        assert.deepStrictEqual({ agent: snapshot(world), web: snapshot(world, WEB) }, before)
      }),
    { fastCheck: { numRuns: 20 } }
  )

  it.effect("with the web data root on another device, the result names both aside directories", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      yield* world.writeFixture(`${AGENT}/state/extensions/foo/x.json`, "agent side")
      yield* world.writeFixture(`${WEB}/foo/state/z.json`, "web side")
      world.mount(WEB, 2)
      const { id } = yield* as(world, (b) => b.create())
      yield* world.writeFixture(`${AGENT}/state/extensions/foo/x.json`, "agent changed")
      yield* world.writeFixture(`${WEB}/foo/state/z.json`, "web changed")
      const r = yield* as(world, (b) => b.restore(id, { extension: "foo" }))
      assert.strictEqual(r.asideDirs.length, 2)
      const [agentAside, webAside] = r.asideDirs
      assert.strictEqual(r.movedAside, agentAside)
      assert.strictEqual(world.readFixtureText(`${agentAside}/agent/state/extensions/foo/x.json`), "agent changed")
      assert.strictEqual(world.readFixtureText(`${webAside}/web/foo/state/z.json`), "web changed")
      assert.isTrue(webAside!.startsWith(`${WEB}/.restore-aside/`))
    }))
})
