/**
 * Lock waits as Schedules, under TestClock: `acquireMarkerWaiting` waits exactly its bound for a live holder,
 * then fails with the caller's typed error; and each service's wait keeps its documented bound (state backups'
 * `lockWaitMs`, the migration's `lockAttempts × lockRetryDelay`, an acquire's `busyAttempts` linear pauses).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option, Schedule, TestClock } from "effect"
import * as fc from "effect/FastCheck"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { DEFAULT_REMOTE_LEASE_TTL_MS } from "../../src/domain/Retention.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import type { Deps } from "../../src/services/internal/deps.js"
import {
  acquireMarkerWaiting,
  type MarkerHeld,
  tryAcquireMarker,
  unreadableAtMost,
  waitingAtMost
} from "../../src/services/internal/markers.js"
import { StateBackups } from "../../src/services/StateBackups.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"
import { runLayout, spawn } from "./migrationSupport.js"

const MARKER = `${AGENT_DIR}/state/some.lock`

const depsOf = (p: { readonly fs: Deps["fs"]; readonly host: Deps["host"] }): Deps => ({
  fs: p.fs,
  host: p.host,
  remoteLeaseTtlMs: DEFAULT_REMOTE_LEASE_TTL_MS,
  staleUnreadableMs: DEFAULT_STALE_UNREADABLE_MS
})

/** A marker held by a live process of the world (another simulated process, same host). */
const liveHolder = (world: MemoryWorld, path: string, purpose: string) =>
  Effect.gen(function*() {
    const holder = yield* spawnProcess(world)
    yield* world.mkdirFixture(path.slice(0, path.lastIndexOf("/")))
    const taken = yield* tryAcquireMarker(depsOf(holder), path, purpose).pipe(Effect.orDie)
    assert.strictEqual(taken._tag, "Acquired")
    return { pid: holder.host.pid, release: taken._tag === "Acquired" ? taken.release : Effect.void }
  })

class Busy {
  readonly _tag = "Busy"
  constructor(readonly holder: string, readonly waitedMs: number) {}
}

const stillWaiting = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) => Effect.map(Fiber.poll(fiber), Option.isNone)

describe("acquireMarkerWaiting (TestClock)", () => {
  it.scoped.prop(
    "a live holder is waited for exactly the bound, then the caller's busy error says how long",
    [fc.integer({ min: 1, max: 3_000 }), fc.integer({ min: 60, max: 700 })],
    ([maxMs, pauseMs]) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const held = yield* liveHolder(world, MARKER, "holder")
        const waiter = yield* spawnProcess(world)
        let tries = 0
        const waiting = yield* Effect.fork(acquireMarkerWaiting(depsOf(waiter), MARKER, "waiter", {
          schedule: Schedule.spaced(Duration.millis(pauseMs)).pipe(Schedule.tapInput(() => Effect.sync(() => tries++)), waitingAtMost(maxMs)),
          busy: (h: MarkerHeld, waitedMs) => new Busy(h.holder, waitedMs)
        }))
        yield* TestClock.adjust(Duration.millis(maxMs - 1))
        assert.isTrue(yield* stillWaiting(waiting), "gave up before the bound")
        yield* TestClock.adjust(Duration.millis(1))
        const error = yield* Effect.flip(Fiber.join(waiting))
        assert.instanceOf(error, Busy)
        assert.strictEqual(error.waitedMs, maxMs, "the last pause is cut short at the bound")
        assert.match(error.holder, new RegExp(`pid ${held.pid}`))
        // One try at 0, one after each pause while under the bound, and the last one at the bound itself.
        assert.strictEqual(tries, Math.ceil(maxMs / pauseMs) + 1)
      }),
    { fastCheck: { numRuns: 8 } }
  )

  it.scoped("a holder that releases mid-wait: the waiter takes the marker then, and its release frees it", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const held = yield* liveHolder(world, MARKER, "holder")
      const waiter = yield* spawnProcess(world)
      const waiting = yield* Effect.fork(acquireMarkerWaiting(depsOf(waiter), MARKER, "waiter", {
        schedule: Schedule.spaced(Duration.millis(10)).pipe(waitingAtMost(1_000)),
        busy: (h: MarkerHeld, waitedMs) => new Busy(h.holder, waitedMs)
      }))
      yield* TestClock.adjust(Duration.millis(500))
      assert.isTrue(yield* stillWaiting(waiting))
      yield* held.release
      yield* TestClock.adjust(Duration.millis(10))
      const release = yield* Fiber.join(waiting)
      assert.match(world.readFixtureText(MARKER) ?? "", /"purpose":"waiter"/)
      yield* release
      assert.isUndefined(world.readFixture(MARKER))
    }))

  it.scoped("a port error ends the wait at once (it is not a held marker)", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture(`${AGENT_DIR}/state`)
      const waiter = yield* spawnProcess(world)
      world.injectFault({ op: "writeFileExclusive", path: MARKER, errno: "EACCES", count: Infinity })
      const error = yield* Effect.flip(acquireMarkerWaiting(depsOf(waiter), MARKER, "waiter", {
        schedule: Schedule.spaced(Duration.millis(10)).pipe(waitingAtMost(1_000)),
        busy: (h: MarkerHeld, waitedMs) => new Busy(h.holder, waitedMs)
      }))
      assert.strictEqual(error._tag, "FileSystemError")
    }))

  it.scoped("unreadableAtMost(n): a fresh unreadable marker is tried n times, then busy; a live readable one does not count", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(MARKER, "") // a writer that died between create and write, still fresh
      const waiter = yield* spawnProcess(world)
      let tries = 0
      const waiting = yield* Effect.fork(acquireMarkerWaiting(depsOf(waiter), MARKER, "waiter", {
        schedule: Schedule.spaced(Duration.millis(1)).pipe(Schedule.tapInput(() => Effect.sync(() => tries++)), Schedule.intersect(unreadableAtMost(60))),
        busy: (h: MarkerHeld, waitedMs) => new Busy(h.holder, waitedMs)
      }))
      yield* TestClock.adjust(Duration.millis(58))
      assert.isTrue(yield* stillWaiting(waiting))
      yield* TestClock.adjust(Duration.millis(1))
      const error = yield* Effect.flip(Fiber.join(waiting))
      assert.strictEqual(error._tag, "Busy")
      assert.strictEqual(tries, 60, "the 60th unreadable try ends the wait")
      // A live, readable holder: the same schedule keeps waiting far past 60 tries.
      const world2 = MemoryWorld.make()
      yield* liveHolder(world2, MARKER, "holder")
      const waiter2 = yield* spawnProcess(world2)
      const patient = yield* Effect.fork(acquireMarkerWaiting(depsOf(waiter2), MARKER, "waiter", {
        schedule: Schedule.spaced(Duration.millis(10)).pipe(Schedule.intersect(unreadableAtMost(60))),
        busy: (h: MarkerHeld, waitedMs) => new Busy(h.holder, waitedMs)
      }))
      yield* TestClock.adjust(Duration.millis(800)) // 80 tries
      assert.isTrue(yield* stillWaiting(patient))
      yield* Fiber.interrupt(patient)
    }))
})

describe("each service's lock wait keeps its bound (TestClock)", () => {
  it.scoped("state backups: BackupBusy after exactly lockWaitMs, naming the live writer", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const root = "/home/user/.pi/backups/agent"
      yield* world.mkdirFixture(root, { mode: 0o700 })
      const held = yield* liveHolder(world, `${root}/.lock`, "state-backup")
      const layer = StateBackups.layerWith({ root, lockWaitMs: 2_000 }).pipe(Layer.provideMerge(AgentDir.layerWith(AGENT_DIR)), Layer.provideMerge(spawn(world).layer))
      const creating = yield* Effect.fork(Effect.provide(Effect.flatMap(StateBackups, (b) => b.create()), layer))
      yield* TestClock.adjust(Duration.millis(1_999))
      assert.isTrue(yield* stillWaiting(creating))
      yield* TestClock.adjust(Duration.millis(1))
      const error = yield* Effect.flip(Fiber.join(creating))
      assert.strictEqual(error._tag, "BackupBusy")
      assert.strictEqual(error._tag === "BackupBusy" ? error.waitedMs : -1, 2_000)
      assert.match(error._tag === "BackupBusy" ? error.holder : "", new RegExp(`pid ${held.pid}`))
    }))

  it.scoped("migration: lockAttempts tries lockRetryDelay apart, then the busy report, nothing moved", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${AGENT_DIR}/trust.json`, "{}")
      yield* liveHolder(world, `${AGENT_DIR}/.pi-migration.lock`, "migrate-agent-dir")
      const migrating = yield* Effect.fork(Effect.provide(runLayout({ lockAttempts: 3, lockRetryDelay: "100 millis" }, AGENT_DIR), spawn(world).layer))
      yield* TestClock.adjust(Duration.millis(199))
      assert.isTrue(yield* stillWaiting(migrating), "3 tries, 100 ms apart, end at 200 ms")
      yield* TestClock.adjust(Duration.millis(1))
      const report = yield* Fiber.join(migrating)
      assert.deepStrictEqual(report.moved, [])
      assert.match(report.errors[0]!.message, /another migration is running/)
      assert.isDefined(world.readFixture(`${AGENT_DIR}/trust.json`))
    }))

  it.scoped("acquire: RunBusy after busyAttempts backoffs of busyDelay × n; no lease left behind", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world, { config: { busyAttempts: 4, busyDelayMs: 25 } })
      const tenantDir = `${AGENT_DIR}/work/tools/bash`
      const first = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      yield* first.release()
      yield* liveHolder(world, `${tenantDir}/.cleanup/shared`, "cleanup")
      const acquiring = yield* Effect.fork(Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })))
      // Pauses 25, 50, 75 ms: the 4th busy try is at 150 ms.
      yield* TestClock.adjust(Duration.millis(149))
      assert.isTrue(yield* stillWaiting(acquiring))
      yield* TestClock.adjust(Duration.millis(1))
      const error = yield* Effect.flip(Fiber.join(acquiring))
      assert.strictEqual(error._tag, "RunBusy")
      assert.strictEqual(error._tag === "RunBusy" ? error.attempts : -1, 4)
      assert.deepStrictEqual(Object.keys(world.tree(`${first.path}/.leases`)).filter((k) => k.endsWith(".json")), [])
    }))
})
