/**
 * A prune crashed at every mutating step (the Memory world's crash point), its victims taken through the
 * cleanup protocol as one batch (`quarantineOwnedRuns`: each step one port call over the batch): whatever
 * step it dies at, the live run and everything outside the tenant are untouched, and the next prune (once
 * the stale bound has passed, for a marker its writer died before filling) finishes the job and leaves no
 * marker, no quarantined tree and no released run behind.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { spawnProcess } from "../support/memoryProcess.js"
import { PRUNE_TENANT, PRUNE_TENANT_DIR, plantPruneTenant } from "../support/pruneTenant.js"

const tenantDir = PRUNE_TENANT_DIR
const VICTIMS = 5
const where = PRUNE_TENANT
const policy = { maxInactiveRuns: 0 }

/**
 * What the prune must never change: the held run (its manifest, its output, its lease's existence: the
 * holder's heartbeat rewrites the lease as the clock moves) and the tree outside the tenant.
 */
const untouchable = (world: MemoryWorld, held: { readonly path: string; readonly leasePath: string }) => ({
  held: Object.fromEntries(Object.entries(world.tree(held.path)).filter(([path]) => !path.startsWith(`${held.path}/.leases`))),
  lease: world.tree(held.leasePath)[held.leasePath]?.type,
  outside: world.tree("/outside")
})

/** A tenant of released runs with output (one with a link out of the tenant as bait) and one held run. */
const setUp = Effect.gen(function*() {
  const { world, held } = yield* plantPruneTenant(VICTIMS)
  const pruner = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
  return { world, held, pruner }
})

/** The tenant's entries, library directories' contents included. */
const tenantNames = (world: MemoryWorld) => Object.keys(world.tree(tenantDir)).map((p) => p.slice(tenantDir.length + 1)).filter((p) => p !== "" && !p.includes("/") || /^\.(cleanup|trash|staging)\/[^/]+$/.test(p))

describe("a prune crashed at every step", () => {
  it.scoped("leaves the held run and the outside alone, and the next prune converges", () =>
    Effect.gen(function*() {
      const reference = yield* setUp
      const start = reference.world.mutationCount
      const full = yield* reference.pruner.workRuns.prune({ ...where, policy })
      assert.strictEqual(full.removed.length, VICTIMS)
      assert.deepStrictEqual(full.active, [reference.held.runId])
      const steps = reference.world.mutationCount - start
      // Markers (create, write, unlink), renames and the deletions of every victim.
      assert.isAbove(steps, VICTIMS * 6)
      /** A converged tenant: the held run, and library directories holding nothing. */
      const converged = (heldRunId: string) => [".cleanup", ".last-prune", ".staging", ".trash", heldRunId].sort()
      assert.deepStrictEqual(tenantNames(reference.world).sort(), converged(reference.held.runId))
      for (let k = 0; k < steps; k++) {
        const { world, held, pruner } = yield* setUp
        const before = untouchable(world, held)
        world.crashAfter(k, { pid: pruner.host.pid })
        yield* Effect.either(pruner.workRuns.prune({ ...where, policy }))
        assert.isTrue(world.crashed, `crash point ${k} of ${steps} was reached`)
        world.kill("h1", pruner.host.pid)
        world.recover()
        assert.deepStrictEqual(untouchable(world, held), before, `crash at step ${k}: the held run or the outside changed`)
        // A marker its writer died before filling is held until the stale bound has passed.
        yield* TestClock.adjust(DEFAULT_STALE_UNREADABLE_MS + 1)
        const next = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
        const report = yield* next.workRuns.prune({ ...where, policy })
        assert.deepStrictEqual(report.errors, [], `crash at step ${k}: the next prune reported errors`)
        assert.deepStrictEqual(report.active, [held.runId], `crash at step ${k}: ${JSON.stringify(report)}`)
        assert.deepStrictEqual(tenantNames(world).sort(), converged(held.runId), `crash at step ${k}: the tenant did not converge`)
        assert.deepStrictEqual(untouchable(world, held), before)
      }
    }), 180_000) // a replay per mutating step: minutes on a loaded 2-core machine; the bound catches a hang, not slowness
})
