/**
 * The acquire/prune handshake alone, many times (its own file, so it runs beside the schedule property of
 * WorkRunsProperties.test.ts on another worker). `PROPERTY_RUNS_HANDSHAKE` raises the count for a soak.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { spawnProcess } from "../support/memoryProcess.js"

const exists = (world: MemoryWorld, path: string) => world.tree(path)[path] !== undefined

/**
 * The handshake alone, many times: holders of one named run race pruners that want every inactive run gone.
 * A holder must find its run, manifest and lease intact for as long as it holds it (I1, I4).
 */
const raceArb = fc.record({
  holders: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 3 }),
  pruners: fc.integer({ min: 1, max: 2 }),
  deleteOnRelease: fc.boolean(),
  // Uneven scheduling: a process may run several steps while another runs one.
  jitterSeed: fc.integer(),
  maxYields: fc.integer({ min: 0, max: 4 })
})

describe("acquire/prune handshake (Memory)", () => {
  it.effect.prop(
    "a held run is never quarantined, whatever the interleaving",
    [raceArb],
    ([race]) =>
      Effect.scoped(Effect.gen(function*() {
        const world = MemoryWorld.make({ jitter: { seed: race.jitterSeed, maxYields: race.maxYields } })
        const violations: Array<string> = []
        const holders = yield* Effect.forEach(race.holders, () => spawnProcess(world, { config: { busyAttempts: 50 }, workRuns: { opportunisticRetention: false } }))
        const pruners = yield* Effect.forEach(Array.from({ length: race.pruners }), () => spawnProcess(world, { workRuns: { opportunisticRetention: false } }))
        const hold = (p: (typeof holders)[number], steps: number) =>
          Effect.scoped(Effect.gen(function*() {
            const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared" })
            for (let i = 0; i <= steps; i++) {
              if (!exists(world, `${run.path}/.pi-work-run.json`) || !exists(world, run.leasePath)) violations.push(`step ${i}: run or lease gone`)
              yield* Effect.yieldNow()
            }
            yield* run.release(race.deleteOnRelease ? { delete: true } : undefined)
          }))
        const prune = (p: (typeof pruners)[number]) =>
          Effect.repeatN(p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0, maxAgeMs: 0 } }), 2)
        yield* Effect.all([...holders.map((p, i) => hold(p, race.holders[i]!)), ...pruners.map(prune)], { concurrency: "unbounded", discard: true })
        return violations
      })).pipe(Effect.map((violations) => assert.strictEqual(violations.join("\n"), ""))),
    { timeout: 180_000, fastCheck: { numRuns: Number(process.env.PROPERTY_RUNS_HANDSHAKE ?? 400) } }
  )
})
