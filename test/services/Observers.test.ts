/**
 * The read-only observers (doctor, inventory) run while other processes acquire, release and prune: they must
 * always answer with a report (a run vanishing under them is a finding or a skip, never a failure), and
 * never change the tree.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, FastCheck as fc, Layer } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { doctorAt } from "../support/doctor.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { Inventory } from "../../src/services/Inventory.js"
import { AGENT_DIR, processLayer, spawnProcess } from "../support/memoryProcess.js"

const inventoryOf = (world: MemoryWorld) =>
  Effect.map(Layer.build(Inventory.layer.pipe(Layer.provide(processLayer(world)))), (ctx) => Context.get(ctx, Inventory))

describe("observers during concurrent work (Memory, jittered)", () => {
  it.effect.prop("doctor and inventory always answer while runs come and go", [
    fc.integer({ min: 1, max: 4 }),
    fc.record({ seed: fc.integer(), maxYields: fc.integer({ min: 0, max: 4 }) })
  ], ([workers, jitter]) =>
    Effect.scoped(Effect.gen(function*() {
      const world = MemoryWorld.make({ jitter, journal: false })
      const procs = yield* Effect.forEach(Array.from({ length: workers }), () => spawnProcess(world, { workRuns: { opportunisticRetention: false } }))
      const observer = yield* spawnProcess(world)
      const inventory = yield* inventoryOf(world)
      const work = (p: (typeof procs)[number], i: number) =>
        Effect.gen(function*() {
          for (let round = 0; round < 3; round++) {
            yield* Effect.scoped(Effect.gen(function*() {
              const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: i % 2 === 0 ? "shared" : undefined, retention: false })
              yield* p.fs.writeFileExclusive(`${run.path}/out-${round}.txt`, new TextEncoder().encode("x".repeat(round * 10))).pipe(Effect.ignore)
              yield* run.release(round === 2 ? { delete: true } : undefined)
            })).pipe(Effect.catchTag("RunBusy", () => Effect.void))
            yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0, maxAgeMs: 0 } })
          }
        })
      const observe = Effect.gen(function*() {
        for (let round = 0; round < 4; round++) {
          const report = yield* doctorAt(AGENT_DIR).pipe(Effect.provideService(FileSystem, observer.fs), Effect.provideService(Host, observer.host), Effect.exit)
          assert.isTrue(Exit.isSuccess(report), `doctor failed: ${Exit.isFailure(report) ? String(report.cause) : ""}`)
          const summary = yield* Effect.exit(inventory.summary())
          assert.isTrue(Exit.isSuccess(summary), `inventory summary failed: ${Exit.isFailure(summary) ? String(summary.cause) : ""}`)
          const runs = yield* Effect.exit(inventory.listRuns())
          assert.isTrue(Exit.isSuccess(runs), `inventory listRuns failed: ${Exit.isFailure(runs) ? String(runs.cause) : ""}`)
        }
      })
      yield* Effect.all([...procs.map(work), observe], { concurrency: "unbounded", discard: true })
    })), { fastCheck: { numRuns: 60 }, timeout: 180_000 }) // the bound catches a hang, not slowness (a loaded 2-core machine takes a minute)
})
