import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FastCheck, Fiber, Scope } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const leaseCount = (world: MemoryWorld, runPath: string) =>
  Object.keys(world.tree(`${runPath}/.leases`)).filter((p) => p !== `${runPath}/.leases`).length

describe("ExtensionStorage (WR11) on the Memory layer", () => {
  it.scoped("getStorage does no I/O and names the extension's three places", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      world.clearJournal()
      const view = yield* p.extensions.getStorage("notes")
      assert.deepStrictEqual(world.journal, [])
      assert.deepStrictEqual([view.stateDir, view.cacheDir], [`${AGENT_DIR}/state/extensions/notes`, `${AGENT_DIR}/cache/extensions/notes`])
      assert.isUndefined(world.tree(AGENT_DIR)[AGENT_DIR], "no directory was created")
      const bad = yield* Effect.flip(p.extensions.getStorage("../x"))
      assert.deepStrictEqual([bad._tag, bad.field], ["InvalidSegment", "namespace"])
    }))

  it.scoped("runs live under work/extensions/<ns>/ and unload releases them and refuses new ones", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const view = yield* p.extensions.getStorage("notes")
      const run = yield* view.acquireWorkRun({ retention: false })
      assert.strictEqual(run.path, `${AGENT_DIR}/work/extensions/notes/${run.runId}`)
      assert.strictEqual(leaseCount(world, run.path), 1)
      yield* view.unload
      assert.strictEqual(leaseCount(world, run.path), 0)
      const refused = yield* Effect.flip(view.acquireWorkRun())
      assert.strictEqual(refused._tag, "StorageUnloaded")
      yield* view.unload
    }))

  // An acquisition in flight when unload starts either fails StorageUnloaded or hands out a run that still
  // has its lease until unload releases it; never a run whose lease is already gone.
  it.effect.prop("unload racing acquisitions never hands out a run without its lease", [
    FastCheck.integer({ min: 1, max: 4 }),
    FastCheck.record({ seed: FastCheck.integer(), maxYields: FastCheck.integer({ min: 0, max: 4 }) })
  ], ([acquirers, jitter]) =>
    Effect.scoped(Effect.gen(function*() {
      const world = MemoryWorld.make({ jitter })
      const p = yield* spawnProcess(world)
      const view = yield* p.extensions.getStorage("notes")
      const problems: Array<string> = []
      const acquireOne = Effect.scoped(Effect.gen(function*() {
        const run = yield* view.acquireWorkRun({ retention: false })
        // Returned to us: our lease must exist now, whatever unload is doing.
        if (!(run.leasePath in world.tree(run.path))) problems.push(`run ${run.runId} handed out without its lease`)
      })).pipe(Effect.catchTag("StorageUnloaded", () => Effect.void))
      yield* Effect.all([...Array.from({ length: acquirers }, () => acquireOne), view.unload], { concurrency: "unbounded", discard: true })
      assert.deepStrictEqual(problems, [])
      // After unload every lease of the view is gone, and new acquisitions are refused.
      const leases = Object.keys(world.tree(`${AGENT_DIR}/work/extensions/notes`)).filter((k) => k.includes("/.leases/"))
      assert.deepStrictEqual(leases, [])
      assert.strictEqual((yield* Effect.flip(Effect.scoped(view.acquireWorkRun())))._tag, "StorageUnloaded")
    })), { fastCheck: { numRuns: 200 } })

  it.effect("a failing extension program releases its leases when its scope closes", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      let path = ""
      const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
        const p = yield* spawnProcess(world)
        yield* Effect.scoped(Effect.gen(function*() {
          const view = yield* p.extensions.getStorage("notes")
          // The lease outlives this inner caller scope only through the view; the view goes when the program fails.
          const run = yield* Scope.extend(view.acquireWorkRun({ retention: false }), yield* Scope.make())
          path = run.path
          return yield* Effect.fail("extension crashed")
        }))
      })))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(leaseCount(world, path), 0)
    }))

  it.scoped("an interrupted extension releases its leases", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      let path = ""
      const fiber = yield* Effect.fork(Effect.scoped(Effect.gen(function*() {
        const view = yield* p.extensions.getStorage("notes")
        const run = yield* view.acquireWorkRun({ retention: false })
        path = run.path
        return yield* Effect.never
      })))
      while (path === "" || leaseCount(world, path) === 0) yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(leaseCount(world, path), 0)
    }))

  it.scoped("an extension's retention is clamped to the harness ceiling: it can keep less, never more", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world, { config: { retentionCeiling: { maxAgeMs: 1e12, maxInactiveRuns: 2, maxBytes: 1e12, maxScannedRuns: 100, maxEntries: 1000, maxDepth: 8 } } })
      const view = yield* p.extensions.getStorage("notes")
      for (let i = 0; i < 5; i++) yield* Effect.scoped(view.acquireWorkRun({ retention: false }))
      const greedy = yield* view.pruneWork({ policy: { maxInactiveRuns: 1000 }, dryRun: true })
      assert.strictEqual(greedy.kept.length, 2, "asking for more than the ceiling keeps the ceiling")
      const modest = yield* view.pruneWork({ policy: { maxInactiveRuns: 1 } })
      assert.deepStrictEqual([modest.kept.length, modest.removed.length], [1, 4])
    }))
})
