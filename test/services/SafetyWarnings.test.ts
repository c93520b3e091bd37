/**
 * Ignores at a safety boundary that used to be silent (docs/errors.md "Errors": deliberate ignores): a dead marker whose reclaim lock
 * cannot be made, a held lease that no longer decodes, dead leases whose cleanup marker cannot be taken. Each
 * is now a warning with annotations (or, inside a prune, a tagged report error), and the program still does
 * what it did: nothing is removed or rewritten that was left before.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { capturing, warningsOf } from "../support/logs.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`

/** A marker body naming a process of h1 that is dead by the time it is judged. */
const deadMarker = (world: MemoryWorld, purpose: string) => {
  const pid = world.spawn("h1")
  const body = JSON.stringify({ version: 1, purpose, host: "h1", bootId: world.bootId("h1"), pid, processStartedAt: world.startTimeOf("h1", pid), createdAt: 0 })
  world.kill("h1", pid)
  return body
}

describe("safety-boundary ignores are said", () => {
  it.scoped("a dead prune marker whose reclaim lock cannot be made stays, with a MarkerLeftInPlace warning", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world)
        yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
        const body = deadMarker(world, "prune")
        yield* world.writeFixture(`${tenantDir}/.prune`, body)
        world.injectFault({ op: "writeFileExclusive", path: `${tenantDir}/.prune.reclaim`, count: Infinity, errno: "EACCES" })
        yield* p.workRuns.prune({ category: "tools", tenant: "bash" })
        assert.strictEqual(new TextDecoder().decode(world.readFixture(`${tenantDir}/.prune`)), body, "the dead marker is left as it was")
        const warned = warningsOf(logged, "MarkerLeftInPlace").filter((w) => w.annotations["path"] === `${tenantDir}/.prune`)
        assert.isAtLeast(warned.length, 1, JSON.stringify(logged))
        assert.match(String(warned[0]!.annotations["reason"]), /reclaim lock cannot be made \(PermissionDenied\)/)
        assert.match(warned[0]!.message, /^marker left in place: it was not reclaimed/)
      })))

  it.scoped("a held lease that no longer decodes is not refreshed, with a HeartbeatFailed warning", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world)
        const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
        yield* world.writeFixture(run.leasePath, "{ torn")
        yield* TestClock.adjust(6 * 60 * 1000)
        assert.strictEqual(new TextDecoder().decode(world.readFixture(run.leasePath)), "{ torn", "never overwritten")
        const warned = warningsOf(logged, "HeartbeatFailed")
        assert.isAtLeast(warned.length, 1, JSON.stringify(logged))
        assert.strictEqual(warned[0]!.annotations["leasePath"], run.leasePath)
        assert.match(warned[0]!.message, /no longer decodes/)
      })))

  it.scoped("a releasedAt stamp that cannot be written is a ReleaseStampFailed warning; the release still completes", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world)
        const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "named", retention: false })
        const manifest = `${run.path}/.pi-work-run.json`
        const before = world.readFixtureText(manifest)
        // Both ways of stamping fail (in place, then the whole-file replace); reading it still works.
        world.injectFault({ op: "writeFileInPlace", path: manifest, count: Infinity, errno: "EIO" })
        world.injectFault({ op: "writeFileAtomic", path: manifest, count: Infinity, errno: "EIO" })
        const outcome = yield* run.release()
        assert.isTrue(outcome.released)
        assert.strictEqual(world.readFixtureText(manifest), before, "the manifest is as it was")
        const warned = warningsOf(logged, "ReleaseStampFailed")
        assert.strictEqual(warned.length, 1, JSON.stringify(logged))
        assert.strictEqual(warned[0]!.annotations["runDir"], run.path)
        assert.match(warned[0]!.message, /could not stamp releasedAt/)
      })))

  it.scoped("dead leases whose cleanup marker cannot be taken are kept and reported (LeaseNotRemoved)", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const holder = yield* spawnProcess(world)
      const run = yield* holder.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      world.kill("h1", holder.host.pid)
      const pruner = yield* spawnProcess(world)
      world.injectFault({ op: "writeFileExclusive", path: `${tenantDir}/.cleanup/${run.runId}`, count: Infinity, errno: "EACCES" })
      const report = yield* pruner.workRuns.prune({ category: "tools", tenant: "bash" })
      assert.isDefined(world.readFixture(run.leasePath), "the dead lease is kept")
      const error = report.errors.find((e) => e.path === `${tenantDir}/.cleanup/${run.runId}`)
      assert.isDefined(error, JSON.stringify(report.errors))
      assert.strictEqual(error!._tag, "LeaseNotRemoved")
      assert.match(error!.message, new RegExp(`dead leases of ${run.runId} kept: its cleanup marker cannot be taken .*EACCES`))
    }))
})
