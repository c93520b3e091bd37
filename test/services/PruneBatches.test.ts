/**
 * A prune of more victims than two of its protocol batches (`QUARANTINE_BATCH`), with the world changing
 * under the batch: a lease that lands in one victim once its marker is taken, and another victim's directory
 * swapped for a stranger's once its leases are read. Each is skipped and left as it is (the skipped one's
 * marker dropped at once, not held for the rest of its batch); every other victim goes, across the batches,
 * and no marker is left behind.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { QUARANTINE_BATCH } from "../../src/services/internal/prune.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`
const where = { category: "tools", tenant: "bash" } as const
const VICTIMS = 2 * QUARANTINE_BATCH + 6

describe("a prune in batches", () => {
  it.scoped("skips a victim a lease reaches under its marker and one swapped before its rename, and removes the rest", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const maker = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
      const runIds: Array<string> = []
      for (let i = 0; i < VICTIMS; i++) {
        yield* Effect.scoped(Effect.flatMap(maker.workRuns.acquire({ ...where, retention: false }), (run) => {
          runIds.push(run.runId)
          return world.writeFixture(`${run.path}/out.txt`, `output ${i}`)
        }))
      }
      const holder = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
      // One victim in the first batch, one in the last.
      const leased = runIds[5]!
      const swapped = runIds[2 * QUARANTINE_BATCH + 3]!
      const lease = `${tenantDir}/${leased}/.leases/h1-${holder.host.pid}-late.json`
      const listings = new Map<string, number>()
      let leaseLanded = false
      let swapDone = false
      const lstats = new Map<string, number>()
      let markerHeldThen: boolean | undefined
      const pruner = yield* spawnProcess(world, {
        workRuns: { opportunisticRetention: false },
        wrapFs: (fs) => ({
          ...fs,
          // The batch's last check of another victim in the leased one's batch (its second lstat) comes after
          // the leased victim was skipped: by then its marker must be gone, not held for the rest of the batch.
          lstat: (path) => {
            if (path === `${tenantDir}/${runIds[6]}`) {
              const seen = (lstats.get(path) ?? 0) + 1
              lstats.set(path, seen)
              if (seen === 2) markerHeldThen = world.tree(`${tenantDir}/.cleanup/${leased}`)[`${tenantDir}/.cleanup/${leased}`] !== undefined
            }
            return fs.lstat(path)
          },
          readDirectory: (path) =>
            Effect.gen(function*() {
              const seen = (listings.get(path) ?? 0) + 1
              listings.set(path, seen)
              // The scan lists each victim's leases first; the second listing is under the victim's marker.
              if (seen === 2 && path === `${tenantDir}/${leased}/.leases`) {
                // An acquirer that wrote its lease before the marker existed (its marker check comes next).
                yield* world.writeFixture(lease, JSON.stringify({ version: 2, host: "h1", pid: holder.host.pid, processStartedAt: world.startTimeOf("h1", holder.host.pid), acquiredAt: 0, heartbeatAt: 0 }))
                leaseLanded = true
              }
              const listed = yield* fs.readDirectory(path)
              if (seen === 2 && path === `${tenantDir}/${swapped}/.leases`) {
                // Checked and lease-free: now a tool moves the run away and puts its own directory there.
                yield* fs.rename(`${tenantDir}/${swapped}`, `/elsewhere-${swapped}`).pipe(Effect.orDie)
                yield* world.writeFixture(`${tenantDir}/${swapped}/stranger.txt`, "not a run")
                swapDone = true
              }
              return listed
            })
        })
      })
      const report = yield* pruner.workRuns.prune({ ...where, policy: { maxInactiveRuns: 0 } })
      assert.isTrue(leaseLanded && swapDone, "both changes happened under the batch")
      assert.strictEqual(markerHeldThen, false, "the skipped victim's marker was dropped before the rest of its batch went on")
      assert.deepStrictEqual(report.skipped.map((s) => [s.runId, s._tag, s.why]), [
        [leased, "LeaseAppeared", "a live lease holds it"],
        [swapped, "RunChanged", "replaced while it was being checked"]
      ])
      assert.deepStrictEqual(report.removed.map((r) => r.runId).sort(), runIds.filter((id) => id !== leased && id !== swapped).sort())
      assert.deepStrictEqual(report.errors, [])
      // The leased run is whole; the stranger's directory and the moved run are as they were.
      assert.strictEqual(world.readFixtureText(`${tenantDir}/${leased}/out.txt`), "output 5")
      assert.isDefined(world.readFixtureText(lease))
      assert.strictEqual(world.readFixtureText(`${tenantDir}/${swapped}/stranger.txt`), "not a run")
      assert.strictEqual(world.readFixtureText(`/elsewhere-${swapped}/out.txt`), `output ${2 * QUARANTINE_BATCH + 3}`)
      const left = Object.keys(world.tree(tenantDir)).map((p) => p.slice(tenantDir.length + 1)).filter((p) => /^\.(cleanup|trash)\/[^/]+$/.test(p))
      assert.deepStrictEqual(left, [], "no marker and no quarantined tree left")
    }))
})
