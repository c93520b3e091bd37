/**
 * The heartbeat with one beater per WorkRuns (docs/safety.md "How runs stay safe"): every held lease is refreshed every `remoteLeaseTtl / 3`,
 * a released lease is never written again, and a release waits for its lease's beat in flight.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, TestClock } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { spawnProcess } from "../support/memoryProcess.js"

const BEAT_MS = 5 * 60 * 1000 // the default remote TTL (15 minutes) / 3

const beatsOf = (world: MemoryWorld, from: number, leasePath: string) =>
  world.journal.slice(from).filter((e) => e.op === "writeFileAtomic" && e.path === leasePath).length

const heartbeatAt = (world: MemoryWorld, leasePath: string): number => JSON.parse(world.readFixtureText(leasePath)!).heartbeatAt

describe("WorkRuns heartbeat (TestClock)", () => {
  it.scoped("one beater refreshes every held lease each interval; released leases are never written again; it ends when none is held", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const a = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      yield* TestClock.adjust(BEAT_MS / 2)
      const b = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "named", retention: false })
      const t0 = world.journal.length
      // b was acquired half an interval after a: both are beaten at a's next tick (b earlier than a full interval).
      yield* TestClock.adjust(BEAT_MS / 2)
      assert.deepStrictEqual([beatsOf(world, t0, a.leasePath), beatsOf(world, t0, b.leasePath)], [1, 1])
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      assert.deepStrictEqual([heartbeatAt(world, a.leasePath), heartbeatAt(world, b.leasePath)], [now, now])
      yield* TestClock.adjust(2 * BEAT_MS)
      assert.deepStrictEqual([beatsOf(world, t0, a.leasePath), beatsOf(world, t0, b.leasePath)], [3, 3])
      yield* a.release()
      const t1 = world.journal.length
      yield* TestClock.adjust(3 * BEAT_MS)
      assert.strictEqual(beatsOf(world, t1, a.leasePath), 0, "a released lease is not beaten")
      assert.isUndefined(world.readFixtureText(a.leasePath), "nor written back")
      assert.strictEqual(beatsOf(world, t1, b.leasePath), 3)
      yield* b.release()
      const t2 = world.journal.length
      yield* TestClock.adjust(10 * BEAT_MS)
      assert.strictEqual(world.journal.slice(t2).filter((e) => e.op === "writeFileAtomic").length, 0)
      // A lease held after the beater ended is beaten again, a full interval after it was acquired.
      const c = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      const t3 = world.journal.length
      yield* TestClock.adjust(BEAT_MS - 1)
      assert.strictEqual(beatsOf(world, t3, c.leasePath), 0)
      yield* TestClock.adjust(1)
      assert.strictEqual(beatsOf(world, t3, c.leasePath), 1)
    }))

  it.scoped("a release waits for its lease's beat in flight: the lease it removed is never rewritten", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const entered = yield* Deferred.make<void>()
      const proceed = yield* Deferred.make<void>()
      let gate: string | undefined
      const p = yield* spawnProcess(world, {
        wrapFs: (fs) => ({
          ...fs,
          // The beat's write of the gated lease stops until the test lets it go.
          writeFileAtomic: (path, data, o) =>
            path === gate
              ? Effect.zipRight(Effect.zipRight(Deferred.succeed(entered, undefined), Deferred.await(proceed)), fs.writeFileAtomic(path, data, o))
              : fs.writeFileAtomic(path, data, o)
        })
      })
      const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      gate = run.leasePath
      yield* TestClock.adjust(BEAT_MS)
      yield* Deferred.await(entered)
      const releasing = yield* Effect.fork(run.release())
      // Give the release every chance to finish (a release that does not wait needs a few turns).
      for (let i = 0; i < 200 && Option.isNone(yield* Fiber.poll(releasing)); i++) yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(releasing)), "the release waits for the beat in flight")
      assert.isDefined(world.readFixtureText(run.leasePath))
      yield* Deferred.succeed(proceed, undefined)
      const outcome = yield* Fiber.join(releasing)
      assert.isTrue(outcome.released)
      assert.isUndefined(world.readFixtureText(run.leasePath), "the lease is gone after the release, not written back")
      gate = undefined
      yield* TestClock.adjust(3 * BEAT_MS)
      assert.isUndefined(world.readFixtureText(run.leasePath))
    }))

  it.scoped("a defect in one lease's beat is a warning: every other held lease is still beaten, and so is that one next time", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      let broken: string | undefined
      const p = yield* spawnProcess(world, {
        wrapFs: (fs) => ({
          ...fs,
          // A port that throws instead of failing (a bug): the beat of the broken lease dies.
          writeFileAtomic: (path, data, o) => path === broken ? Effect.die(new Error("port bug")) : fs.writeFileAtomic(path, data, o)
        })
      })
      const a = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      const b = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "named", retention: false })
      broken = a.leasePath
      const t0 = world.journal.length
      yield* TestClock.adjust(2 * BEAT_MS)
      assert.strictEqual(beatsOf(world, t0, b.leasePath), 2, "the other lease is beaten at every tick")
      broken = undefined
      const t1 = world.journal.length
      yield* TestClock.adjust(BEAT_MS)
      assert.deepStrictEqual([beatsOf(world, t1, a.leasePath), beatsOf(world, t1, b.leasePath)], [1, 1], "the loop lives on for both")
    }))
})
