/**
 * A prune removes the dead leases of a run it keeps under that run's cleanup marker; it re-checks there that
 * the run is still a real directory with our manifest, so a run directory swapped for a link after the scan
 * never lets it unlink inside the link's target (I3; review of the merged read model).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`
const exists = (world: MemoryWorld, path: string) => world.tree(path)[path] !== undefined

describe("dead leases of a kept run (Memory)", () => {
  it.scoped("a run dir swapped for a link before the lease cleanup: nothing in the link's target is unlinked", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const holder = yield* spawnProcess(world)
      yield* holder.workRuns.acquire({ category: "tools", tenant: "bash", runId: "victim", retention: false })
      const dying = yield* spawnProcess(world)
      const deadRun = yield* dying.workRuns.acquire({ category: "tools", tenant: "bash", runId: "victim", retention: false })
      const leaseName = deadRun.leasePath.slice(deadRun.leasePath.lastIndexOf("/") + 1)
      const leaseBytes = world.readFixture(deadRun.leasePath)!
      world.kill("h1", dying.host.pid)
      // Outside the tenant: a directory holding a copy of the dead lease, as a link target would.
      yield* world.mkdirFixture("/outside/.leases")
      yield* world.writeFixture(`/outside/.leases/${leaseName}`, leaseBytes)
      let swapped = false
      const pruner = yield* spawnProcess(world, {
        workRuns: { opportunisticRetention: false },
        wrapFs: (fs) => ({
          ...fs,
          // Between the scan (which saw the dead lease) and the cleanup under the run's marker.
          writeFileExclusive: (path, data, o) =>
            Effect.gen(function*() {
              if (!swapped && path === `${tenantDir}/.cleanup/victim`) {
                swapped = true
                yield* fs.rename(`${tenantDir}/victim`, `${tenantDir}/victim-moved`).pipe(Effect.orDie)
                yield* fs.symlink("/outside", `${tenantDir}/victim`).pipe(Effect.orDie)
              }
              return yield* fs.writeFileExclusive(path, data, o)
            })
        })
      })
      const report = yield* pruner.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
      assert.isTrue(swapped, "the swap happened where the cleanup takes its marker")
      assert.deepStrictEqual(report.removed, [])
      assert.isTrue(exists(world, `/outside/.leases/${leaseName}`), "a file behind the link was unlinked")
    }))
})
