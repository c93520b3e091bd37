/**
 * What `acquire` takes (docs/work-runs.md "Effect callers"): a release outcome is never lost with the scope
 * (`deleteOnClose`, `onRelease`), and a `Segment` decoded once is taken as it is (the rule never runs again).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Schema, Scope } from "effect"
import { Segment } from "../../src/domain/Segment.js"
import { segmentRuleEvaluations } from "../../src/domain/SegmentMemo.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import type { ReleaseOutcome } from "../../src/services/WorkRuns.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const exists = (world: MemoryWorld, path: string) => world.tree(path)[path] !== undefined
const heard = () => {
  const outcomes: Array<ReleaseOutcome> = []
  return { outcomes, onRelease: (outcome: ReleaseOutcome) => Effect.sync(() => void outcomes.push(outcome)) }
}

describe("acquire({ deleteOnClose, onRelease }): the release outcome outlives the scope", () => {
  it.scoped("closing the scope deletes the run and hands over the outcome", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const { outcomes, onRelease } = heard()
      const path = yield* Effect.scoped(Effect.map(
        p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false, deleteOnClose: true, onRelease }),
        (run) => run.path
      ))
      assert.isFalse(exists(world, path))
      assert.deepStrictEqual(outcomes, [{ released: true, deleted: true }])
    }))

  it.scoped("a run another live lease holds is kept, and why reaches onRelease (not lost with the scope)", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const a = yield* spawnProcess(world, { pid: 100 })
      const b = yield* spawnProcess(world, { pid: 200 })
      const held = yield* Scope.make()
      const other = yield* Scope.extend(b.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false }), held)
      const { outcomes, onRelease } = heard()
      yield* Effect.scoped(a.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false, deleteOnClose: true, onRelease }))
      assert.lengthOf(outcomes, 1)
      assert.strictEqual(outcomes[0]!.released, true)
      assert.strictEqual(outcomes[0]!.deleted, false)
      assert.strictEqual(outcomes[0]!.keptTag, "LeaseHeld")
      assert.include(outcomes[0]!.keptBecause, "another live lease")
      assert.isTrue(exists(world, other.path))
      yield* Scope.close(held, Exit.void)
    }))

  it.scoped("without deleteOnClose the run stays for retention, and the outcome says released", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const { outcomes, onRelease } = heard()
      const path = yield* Effect.scoped(Effect.map(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false, onRelease }), (r) => r.path))
      assert.isTrue(exists(world, path))
      assert.deepStrictEqual(outcomes, [{ released: true, deleted: false }])
    }))

  it.scoped("a release by hand is the one heard (once); the scope's closing adds nothing", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const { outcomes, onRelease } = heard()
      const byHand = yield* Effect.scoped(Effect.gen(function*() {
        const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false, deleteOnClose: true, onRelease })
        const first = yield* run.release()
        assert.deepStrictEqual(yield* run.release({ delete: true }), { released: false, deleted: false, reason: "already released" })
        return { first, path: run.path }
      }))
      assert.deepStrictEqual(outcomes, [byHand.first])
      assert.deepStrictEqual(byHand.first, { released: true, deleted: false }, "by hand, its own options: no delete")
      assert.isTrue(exists(world, byHand.path))
    }))

  it.scoped("a scope closed by a failure or an interruption releases with the same options and is heard", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const failed = heard()
      let failedPath = ""
      const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
        const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false, deleteOnClose: true, onRelease: failed.onRelease })
        failedPath = run.path
        return yield* Effect.fail("the work failed" as const)
      })))
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(failed.outcomes, [{ released: true, deleted: true }])
      assert.isFalse(exists(world, failedPath))

      const interrupted = heard()
      let path = ""
      const fiber = yield* Effect.fork(Effect.scoped(Effect.gen(function*() {
        const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false, deleteOnClose: true, onRelease: interrupted.onRelease })
        path = run.path
        return yield* Effect.never
      })))
      while (path === "") yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(interrupted.outcomes, [{ released: true, deleted: true }])
      assert.isFalse(exists(world, path))
    }))

  it.scoped("a defect in onRelease fails the scope's closing, after the lease is gone", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      let path = ""
      const exit = yield* Effect.exit(Effect.scoped(Effect.map(
        p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false, onRelease: () => Effect.die("listener bug") }),
        (run) => void (path = run.path)
      )))
      assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
      assert.deepStrictEqual(Object.keys(world.tree(`${path}/.leases`)), [`${path}/.leases`], "the lease was released first")
    }))
})

describe("a Segment decoded once is not decoded again", () => {
  it.scoped("acquire, join, prune and removeRuns given decoded segments never run the rule on them", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const decode = Schema.decodeUnknownSync(Segment)
      const before = segmentRuleEvaluations()
      const category = decode("decoded-once")
      const tenant = decode("tenant-once")
      const runId = decode("named-once")
      assert.strictEqual(segmentRuleEvaluations() - before, 3, "the caller's own decode runs the rule, once each")
      const measured = segmentRuleEvaluations()
      for (let i = 0; i < 5; i++) {
        yield* Effect.scoped(p.workRuns.acquire({ category, tenant, retention: false }))
        yield* Effect.scoped(p.workRuns.acquire({ category, tenant, runId, retention: false }))
      }
      yield* p.workRuns.getProcessWorkRun({ category, tenant })
      yield* p.workRuns.prune({ category, tenant, dryRun: true })
      yield* p.workRuns.removeRuns({ category, tenant, runIds: [runId] })
      assert.strictEqual(segmentRuleEvaluations() - measured, 0)
      assert.isFalse(exists(world, `${AGENT_DIR}/work/decoded-once/tenant-once/named-once`), "removeRuns did its work")
    }))

  it.scoped("a forged Segment (a cast, not a decode) is still refused: nothing trusts the brand alone", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const forged = "../escape" as Segment
      const e = yield* Effect.flip(Effect.scoped(p.workRuns.acquire({ category: forged, tenant: "bash", retention: false })))
      assert.strictEqual(e._tag, "InvalidSegment")
      assert.deepStrictEqual(Object.keys(world.tree("/home/user/.pi/escape")), [])
    }))
})
