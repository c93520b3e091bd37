/**
 * docs/safety.md "How runs stay safe", on the Memory layer: empty markers and leases as a crash outcome. The Memory world's
 * `writeFileExclusive` is two steps (create empty, write), so crashing a process at every mutating step of
 * acquire, release and prune leaves empty prune markers, cleanup markers and leases. Whatever is left, once
 * the stale bound has passed a fresh process prunes without being busy, reports each empty file it reclaimed,
 * joins the named run, and leaves no library leftovers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope, TestClock } from "effect"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const TENANT = `${AGENT_DIR}/work/tools/bash`
const HOUR = 60 * 60 * 1000
const options = { workRuns: { opportunisticRetention: false }, config: { busyAttempts: 2 } }

const makeWorld = () =>
  Effect.gen(function*() {
    const world = MemoryWorld.make({ journal: false })
    for (const dir of [TENANT, `${AGENT_DIR}/work/tools`, `${AGENT_DIR}/work`]) yield* world.mkdirFixture(dir, { mode: 0o700 })
    return world
  })

/** Everything the first process does: make the named run, hold a generated one, prune with a marker on every run. */
const scenario = (p: Effect.Effect.Success<ReturnType<typeof spawnProcess>>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const shared = yield* Scope.extend(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared" }), scope)
    yield* shared.release()
    const gen = yield* Scope.extend(p.workRuns.acquire({ category: "tools", tenant: "bash" }), scope)
    yield* gen.release()
    yield* Scope.close(scope, Exit.void)
    yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0, maxAgeMs: 0 } })
    const again = yield* Scope.make()
    yield* Scope.extend(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared" }), again)
    // Left held: the process dies holding it.
  })

const emptyFiles = (world: MemoryWorld) =>
  Object.entries(world.tree(TENANT)).filter(([p, e]) => e.type === "File" && e.size === 0 && !p.endsWith("/.last-prune")).map(([p]) => p)

describe("empty markers and leases as a crash outcome (Memory)", () => {
  it.effect("a crash at every mutating step of acquire/release/prune converges once the stale bound passes", () =>
    Effect.gen(function*() {
      const reference = yield* makeWorld()
      const start = reference.mutationCount
      yield* Effect.scoped(Effect.flatMap(spawnProcess(reference, options), scenario))
      const steps = reference.mutationCount - start
      assert.isAbove(steps, 10)
      const leftKinds = new Set<string>()
      for (let k = 0; k <= steps; k++) {
        yield* Effect.scoped(Effect.gen(function*() {
          const world = yield* makeWorld()
          const first = yield* spawnProcess(world, options)
          world.crashAfter(k, { hostname: first.host.hostname, pid: first.host.pid })
          yield* scenario(first).pipe(Effect.exit)
          world.recover()
          world.kill(first.host.hostname, first.host.pid)
          const empties = emptyFiles(world)
          for (const e of empties) leftKinds.add(e.includes("/.leases/") ? "lease" : e.endsWith("/.prune") ? "prune" : e.includes("/.cleanup/") ? "cleanup" : "other")
          const fresh = yield* spawnProcess(world, options)
          if (empties.some((e) => e.endsWith("/.prune"))) {
            // Fresh: a writer may be about to fill it in, so it is held, and said so.
            const busy = yield* fresh.workRuns.prune({ category: "tools", tenant: "bash" })
            assert.isTrue(busy.busy, `crash ${k}`)
            assert.deepStrictEqual(busy.unreadable.map((u) => u.action), ["held"], `crash ${k}`)
          }
          yield* TestClock.adjust(DEFAULT_STALE_UNREADABLE_MS + 1)
          const report = yield* fresh.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0, maxAgeMs: 0 } })
          assert.isFalse(report.busy, `crash ${k}: ${JSON.stringify(report)}`)
          assert.deepStrictEqual(report.errors, [], `crash ${k}`)
          // Every empty marker or lease the crash left was reclaimed and reported (a staged run's empty
          // manifest goes with its run and is not a marker).
          const reported = new Set(report.unreadable.filter((u) => u.action === "reclaimed").map((u) => u.path))
          for (const e of empties.filter((e) => !e.endsWith("/.pi-work-run.json"))) assert.isTrue(reported.has(e), `crash ${k}: ${e} not reported in ${JSON.stringify(report.unreadable)}`)
          // The named run can be joined (or made anew) and released.
          const scope = yield* Scope.make()
          const run = yield* Scope.extend(fresh.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared" }), scope)
          yield* run.release()
          yield* Scope.close(scope, Exit.void)
          // Converged: no marker, no cleanup marker, no trash; staging empty once its own one-hour rule passed too.
          yield* TestClock.adjust(HOUR)
          yield* fresh.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0, maxAgeMs: 0 } })
          for (const dir of [".cleanup", ".trash", ".staging"]) {
            const left = Object.keys(world.tree(`${TENANT}/${dir}`)).filter((p) => p !== `${TENANT}/${dir}`)
            assert.deepStrictEqual(left, [], `crash ${k}: leftovers in ${dir}`)
          }
          assert.isUndefined(world.tree(`${TENANT}/.prune`)[`${TENANT}/.prune`], `crash ${k}: prune marker left`)
        }))
      }
      // The crash points did leave every kind of empty file (so the convergence above was tested on them).
      assert.deepStrictEqual([...leftKinds].filter((k) => k !== "other").sort(), ["cleanup", "lease", "prune"])
    }))
})

describe("a lease this reader cannot read (Memory)", () => {
  it.scoped("an I/O error reading a live holder's lease is held whatever the lease's age, never judged stale", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      // A long remote TTL keeps the holder's heartbeat from touching its lease during the hour below.
      const slow = { ...options, config: { ...options.config, remoteLeaseTtlMs: 30 * 24 * HOUR } }
      const holder = yield* spawnProcess(world, { ...slow, pid: 100 })
      const run = yield* holder.workRuns.acquire({ category: "tools", tenant: "bash" })
      yield* TestClock.adjust(HOUR) // the lease file is now far older than the stale bound
      const fault = world.injectFault({ op: "readFile", path: run.leasePath, count: Infinity, errno: "EIO" })
      const pruner = yield* spawnProcess(world, { ...slow, pid: 200 })
      const report = yield* pruner.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxAgeMs: 0, maxInactiveRuns: 0 } })
      assert.isTrue(fault.fired() > 0, "the pruner did meet the read error")
      assert.deepStrictEqual(report.removed, [])
      assert.deepStrictEqual(report.active, [run.runId])
      assert.isTrue(world.readFixture(`${run.path}/.pi-work-run.json`) !== undefined, "the run is still in place")
    }))
})

describe("a prune that cannot prepare removal (Memory)", () => {
  it.scoped("a file where .trash belongs: every victim is skipped and kept, and its bytes stay in the total", () =>
    Effect.gen(function*() {
      const world = yield* makeWorld()
      const p = yield* spawnProcess(world, options)
      const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash" })
      yield* world.writeFixture(`${run.path}/output.log`, "x".repeat(1000))
      yield* run.release()
      yield* world.writeFixture(`${TENANT}/.trash`, "not a directory")
      const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
      assert.deepStrictEqual(report.removed, [])
      assert.deepStrictEqual(report.skipped.map((s) => s.runId), [run.runId])
      assert.include(report.kept, run.runId)
      assert.isAtLeast(report.bytesAfter ?? 0, 1000, "the run that stayed is counted")
      assert.strictEqual(report.bytesBefore, report.bytesAfter)
      assert.isTrue(report.errors.some((e) => e.path === TENANT), JSON.stringify(report.errors))
      // The leftover pass says it could not look into .trash, rather than taking it for empty.
      assert.isTrue(report.errors.some((e) => e.path === `${TENANT}/.trash` && /cannot list \.trash/.test(e.message)), JSON.stringify(report.errors))
      assert.isDefined(world.readFixture(`${run.path}/output.log`))
    }))
})
