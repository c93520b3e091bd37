/**
 * Ages across hosts in the simulated world (docs/work-runs.md "Retention"): hosts whose wall clocks are off by up to two
 * days share one file system whose clock stamps every mtime. A run's age is the time since its files were last
 * written, on that clock, against a probe of now; a staged run's age too. So whatever the pruner's and the
 * holder's clocks say, a run goes by age exactly when it is past its age on the file system's clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, TestClock } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const MINUTE = 60 * 1000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const TENANT = { category: "tools", tenant: "bash" } as const
const tenantDir = `${AGENT_DIR}/work/tools/bash`
/** The world's clock starts at a real date, so a host two days behind still stamps valid times. */
const EPOCH = Date.UTC(2027, 0, 15)
const MAX_AGE = 12 * HOUR

describe("ages across hosts with skewed clocks (Memory)", () => {
  it.scoped.prop(
    "a released run goes by age exactly when it was last used more than maxAge ago on the file system's clock, whatever the holder's and the pruner's clocks say",
    [
      fc.integer({ min: -2 * 24 * 60, max: 2 * 24 * 60 }),
      fc.integer({ min: -2 * 24 * 60, max: 2 * 24 * 60 }),
      // Minutes since the release, away from the boundary (the probe and the heartbeat are ms apart).
      fc.oneof(fc.integer({ min: 0, max: 11 * 60 }), fc.integer({ min: 13 * 60, max: 3 * 24 * 60 }))
    ],
    ([holderSkewMin, prunerSkewMin, elapsedMin]) =>
      Effect.gen(function*() {
        yield* TestClock.setTime(EPOCH)
        const world = MemoryWorld.make()
        const holder = yield* spawnProcess(world, { hostname: "holder", clockSkewMs: holderSkewMin * MINUTE })
        const pruner = yield* spawnProcess(world, { hostname: "pruner", clockSkewMs: prunerSkewMin * MINUTE })
        const run = yield* holder.run(Effect.scoped(holder.workRuns.acquire({ ...TENANT, retention: false })))
        yield* TestClock.adjust(elapsedMin * MINUTE)
        const report = yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: { maxAgeMs: MAX_AGE, maxInactiveRuns: 100 } }))
        const expected = elapsedMin * MINUTE > MAX_AGE ? [[run.runId, "age"]] : []
        assert.deepStrictEqual(report.removed.map((r) => [r.runId, r.reason]), expected, `holder ${holderSkewMin} min, pruner ${prunerSkewMin} min, ${elapsedMin} min`)
        assert.deepStrictEqual(report.errors, [])
      }),
    { fastCheck: { numRuns: 25 } }
  )

  it.scoped("a pruner two hours ahead keeps a run another host is creating (staged, its lease not written yet); untouched for over an hour, it goes", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
      const pruner = yield* spawnProcess(world, { hostname: "early", clockSkewMs: 2 * HOUR })
      yield* pruner.run(Effect.scoped(pruner.workRuns.acquire({ ...TENANT, retention: false })))
      // Another host's acquire stopped right after making its staged directory (before its lease).
      const creator = yield* spawnProcess(world, { hostname: "creator" })
      world.crashAfter(1, { pid: creator.host.pid })
      yield* Effect.flip(Effect.scoped(creator.workRuns.acquire({ ...TENANT, runId: "job", retention: false })))
      world.recover()
      const staged = () => Object.keys(world.tree(`${tenantDir}/.staging`)).filter((p) => p !== `${tenantDir}/.staging`)
      assert.strictEqual(staged().length, 1)
      yield* TestClock.adjust(30 * MINUTE)
      const early = yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: { maxInactiveRuns: 100 } }))
      assert.deepStrictEqual(early.errors, [])
      assert.strictEqual(staged().length, 1, "a run being created is kept")
      yield* TestClock.adjust(31 * MINUTE)
      yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: { maxInactiveRuns: 100 } }))
      assert.deepStrictEqual(staged(), [], "abandoned for over an hour: removed")
    }))
})
