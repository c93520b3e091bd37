/**
 * A store closed during the background prune an acquire started (docs/work-runs.md "Retention"): closing interrupts the
 * prune at its next yield, whichever step that is. Unlike a crash, an interrupt runs finalizers, so the
 * pruner — still alive — leaves no marker or lock behind (one would hold the tenant or a run until its process
 * exits): taking a marker and guaranteeing its release are one uninterruptible step. The held run and the
 * outside are untouched, and the next prune, at once (no stale bound to wait for), finishes the job.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { HeartbeatClock } from "../../src/services/HeartbeatClock.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { processLayer, spawnProcess } from "../support/memoryProcess.js"
import { PRUNE_TENANT, PRUNE_TENANT_DIR, plantPruneTenant } from "../support/pruneTenant.js"

const tenantDir = PRUNE_TENANT_DIR
const VICTIMS = 5
const where = PRUNE_TENANT
const policy = { maxInactiveRuns: 0 }

/** The held run (but its lease, which its heartbeat rewrites) and the tree outside the tenant. */
const untouchable = (world: MemoryWorld, held: { readonly path: string }) => ({
  held: Object.fromEntries(Object.entries(world.tree(held.path)).filter(([path]) => !path.startsWith(`${held.path}/.leases`))),
  outside: world.tree("/outside")
})

/**
 * Released runs with output (one with a link out of the tenant as bait), one run held by another process, and
 * the pruner: a process in a scope of its own whose acquire starts the background prune (no stamp yet).
 */
const setUp = Effect.gen(function*() {
  const { world, held } = yield* plantPruneTenant(VICTIMS)
  // The pruner's WorkRuns alone in a scope (its process's other services in the test's): closing that scope
  // is then the background prune's interruption, at the step reached, with nothing else closing first. Its
  // lease lives in the test's scope, released by hand.
  const services = yield* Layer.build(processLayer(world))
  const scope = yield* Scope.make()
  const workRuns = yield* Scope.extend(WorkRuns.make(), scope).pipe(
    Effect.provide(Layer.merge(Layer.succeedContext(services), HeartbeatClock.layerCurrentClock))
  )
  const own = yield* workRuns.acquire({ ...where, retention: policy })
  return { world, held, workRuns, scope, own, start: world.mutationCount }
})

/** Every entry of the tenant that is a marker or a lock: the prune's, a run's cleanup marker, a reclaim lock or clock probe. */
const markersLeft = (world: MemoryWorld) =>
  Object.keys(world.tree(tenantDir)).filter((path) => {
    const rel = path.slice(tenantDir.length + 1)
    return rel === ".prune" || rel.endsWith(".reclaim") || /^\.cleanup\/[^/]+$/.test(rel)
  })

const tenantNames = (world: MemoryWorld) =>
  Object.keys(world.tree(tenantDir)).map((p) => p.slice(tenantDir.length + 1)).filter((p) => p !== "" && !p.includes("/") || /^\.(cleanup|trash|staging)\/[^/]+$/.test(p))

describe("a store closed during its background prune", () => {
  it.scoped("at every step: the prune drops its markers, touches nothing held, and the next prune converges at once", () =>
    Effect.gen(function*() {
      const reference = yield* setUp
      yield* reference.workRuns.awaitBackground
      const steps = reference.world.mutationCount - reference.start
      // Markers (create, write, unlink), renames and the deletions of every victim.
      assert.isAbove(steps, VICTIMS * 6)
      yield* Scope.close(reference.scope, Exit.void)
      yield* reference.own.release()
      const converged = (heldRunId: string) => [".cleanup", ".last-prune", ".staging", ".trash", heldRunId].sort()
      // Whole, the background prune left the held run and the pruner's own (active while it ran) only.
      assert.strictEqual(tenantNames(reference.world).filter((n) => !n.startsWith(".")).length, 2)
      for (let k = 0; k < steps; k++) {
        const { world, held, scope, own, start } = yield* setUp
        const before = untouchable(world, held)
        // The prune runs while this fiber yields (each port call of the simulated world yields once).
        for (let spins = 0; world.mutationCount < start + k; spins++) {
          assert.isBelow(spins, 100_000, `step ${k} of ${steps} was never reached`)
          yield* Effect.yieldNow()
        }
        yield* Scope.close(scope, Exit.void)
        assert.deepStrictEqual(markersLeft(world), [], `closed at step ${k}: markers left by a live process`)
        assert.deepStrictEqual(untouchable(world, held), before, `closed at step ${k}: the held run or the outside changed`)
        yield* own.release()
        const next = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
        const report = yield* next.workRuns.prune({ ...where, policy })
        assert.deepStrictEqual(report.errors, [], `closed at step ${k}: the next prune reported errors`)
        assert.isFalse(report.busy, `closed at step ${k}: the next prune found the tenant busy`)
        assert.deepStrictEqual(report.active, [held.runId], `closed at step ${k}: ${JSON.stringify(report)}`)
        assert.deepStrictEqual(tenantNames(world).sort(), converged(held.runId), `closed at step ${k}: the tenant did not converge`)
        assert.deepStrictEqual(untouchable(world, held), before)
      }
    }), 120_000)
})
