/**
 * A generated run needs no cleanup-marker check (BENCHMARKS.md "Acquire: CPU per pair"): it appears from staging with its creator's lease
 * inside, so a pruner that names it right after it appeared reads that lease under its marker and keeps it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import type { RemoveRunOutcome } from "../../src/services/WorkRuns.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`
const leasesOf = (world: MemoryWorld, runPath: string) =>
  Object.keys(world.tree(`${runPath}/.leases`)).filter((p) => p !== `${runPath}/.leases`)

describe("a generated run, pruned the moment it appears", () => {
  for (const pruner of ["work rm", "prune"] as const) {
    it.scoped(`${pruner} between the rename into place and the acquire's return keeps it; the acquire hands out a whole run`, () =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const q = yield* spawnProcess(world, { pid: 4242 })
        const outcomes: Array<RemoveRunOutcome> = []
        const active: Array<string> = []
        let fired = false
        const a = yield* spawnProcess(world, {
          wrapFs: (fs) => ({
            ...fs,
            rename: (from, to, o) =>
              Effect.tap(fs.rename(from, to, o), () => {
                if (fired || !from.startsWith(`${tenantDir}/.staging/`)) return Effect.void
                fired = true
                const runId = to.slice(tenantDir.length + 1)
                // Another process removes or prunes the run as soon as it is in place, before the acquirer looks again.
                return pruner === "work rm"
                  ? Effect.map(q.workRuns.removeRuns({ category: "tools", tenant: "bash", runIds: [runId] }), (o) => void outcomes.push(...o))
                  : Effect.map(
                    q.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxAgeMs: 0, maxInactiveRuns: 0 } }),
                    (r) => void active.push(...r.active)
                  )
              }).pipe(Effect.orDie)
          })
        })
        const run = yield* a.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
        assert.isTrue(fired, "the pruner ran right after the run appeared")
        if (pruner === "work rm") assert.deepStrictEqual(outcomes.map((o) => o._tag), ["Held"])
        else assert.deepStrictEqual(active, [run.runId])
        assert.deepStrictEqual(leasesOf(world, run.path), [run.leasePath])
        assert.isDefined(world.readFixtureText(`${run.path}/.pi-work-run.json`))
        assert.isTrue((yield* run.release()).released)
      }))
  }
})
