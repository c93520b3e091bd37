/**
 * The consumers' test entry from the public exports only (`src/index.ts`): `MemoryWorld.layer` under
 * `Storage.layer`, a held run across a month of `TestClock`, and the public type without internals.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer, TestClock } from "effect"
import { HeartbeatClock, MemoryWorld, Storage, WorkRuns } from "../../src/index.js"

const AGENT_DIR = "/home/user/.pi/agent"
const DAY = 24 * 60 * 60 * 1000

describe("MemoryWorld.layer + Storage.layer (public test entry)", () => {
  const heldAcross = (world: MemoryWorld, adjustMs: number) =>
    Effect.gen(function*() {
      const workRuns = yield* WorkRuns
      const run = yield* workRuns.acquire({ category: "tools", tenant: "bash" })
      const before = world.journal.length
      yield* TestClock.adjust(adjustMs)
      const beats = world.journal.slice(before).filter((e) => e.op === "writeFileAtomic" && e.path === run.leasePath).length
      const report = yield* workRuns.prune({ category: "tools", tenant: "bash", policy: { maxAgeMs: 0, maxInactiveRuns: 0 } })
      return { beats, active: report.active, removed: report.removed, runId: run.runId }
    }).pipe(Effect.scoped)

  it.effect("a run held across a month of TestClock stays active; the heartbeat did not step through every 5 minutes", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const month = yield* heldAcross(world, 30 * DAY).pipe(Effect.provide(Storage.layer(MemoryWorld.layer(world), { agentDir: AGENT_DIR })))
      // A stepping heartbeat would have rewritten the lease 8640 times during the adjust.
      assert.isAtMost(month.beats, 1)
      assert.deepStrictEqual([month.active, month.removed], [[month.runId], []])
      // The journal sees beats when they step: TestClock-driven beats over one hour are 12.
      const other = MemoryWorld.make()
      const stepping = yield* heldAcross(other, 60 * 60 * 1000).pipe(
        Effect.provide(Storage.layer(MemoryWorld.layer(other), { agentDir: AGENT_DIR }).pipe(Layer.provide(HeartbeatClock.layerCurrentClock)))
      )
      assert.strictEqual(stepping.beats, 12)
    }))

  it.effect.prop(
    "a consumer's property: a released run is removed by maxAge exactly when it was unused for longer",
    [fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 5 })],
    ([gapsInDays]) =>
      Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        const runs: Array<{ readonly id: string; readonly releasedAt: number }> = []
        for (const gap of gapsInDays) {
          const run = yield* Effect.scoped(workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
          runs.push({ id: run.runId, releasedAt: yield* Effect.clockWith((c) => c.currentTimeMillis) })
          yield* TestClock.adjust(gap * DAY)
        }
        const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
        const maxAgeMs = 30.5 * DAY
        const report = yield* workRuns.prune({ category: "tools", tenant: "bash", policy: { maxAgeMs, maxInactiveRuns: 100 } })
        assert.deepStrictEqual(
          report.removed.map((r) => r.runId).sort(),
          runs.filter((r) => now - r.releasedAt > maxAgeMs).map((r) => r.id).sort()
        )
      }).pipe(Effect.provide(Storage.layer(MemoryWorld.layer(MemoryWorld.make()), { agentDir: AGENT_DIR }))),
    { fastCheck: { numRuns: 15 } }
  )

  it("the public MemoryWorld type has the driver API and none of the internal mutators", () => {
    const world = MemoryWorld.make()
    type Keys = keyof typeof world
    const internal: ReadonlyArray<string> = ["allocIno", "resolve", "check", "mutated", "record", "newFile", "newDir", "newLink", "tempName"]
    // Compile-time: none of these is a key of the public type (a key would make this assignment fail).
    const none: Extract<Keys, "allocIno" | "resolve" | "check" | "mutated" | "record" | "newFile" | "newDir" | "newLink" | "tempName"> extends never ? true : false = true
    assert.isTrue(none)
    assert.isFunction(world.crashAfter)
    assert.deepStrictEqual(internal.filter((k) => !(k in world)), [], "the runtime object is the full world the layers use")
    assert.throws(() => MemoryWorld.layer({} as typeof world), /MemoryWorld\.make/)
  })
})
