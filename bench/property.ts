/**
 * Measurement 6: property throughput — random interleaved acquire/release/prune schedules (several
 * simulated processes, clock jumps) run per second on the Memory layer, each checked for I1/I4 while held.
 */
import { Effect, Exit, FastCheck as fc, Scope, TestClock, TestContext } from "effect"
import { MemoryWorld } from "../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../test/support/memoryProcess.js"
import type { Measurement } from "./result.js"
import { nowMs, summarize } from "./util.js"

type Op =
  | { readonly _tag: "hold"; readonly runId: string | undefined; readonly steps: number; readonly del: boolean }
  | { readonly _tag: "prune"; readonly maxInactiveRuns: number }
  | { readonly _tag: "jump"; readonly ms: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    _tag: fc.constant("hold" as const),
    runId: fc.constantFrom(undefined, undefined, "shared"),
    steps: fc.integer({ min: 0, max: 3 }),
    del: fc.boolean()
  }),
  fc.record({ _tag: fc.constant("prune" as const), maxInactiveRuns: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ _tag: fc.constant("jump" as const), ms: fc.constantFrom(0, 1000, 2 * 60 * 60 * 1000) })
)

const scheduleArb = fc.array(fc.array(opArb, { minLength: 1, maxLength: 5 }), { minLength: 2, maxLength: 4 })

const TENANT = `${AGENT_DIR}/work/tools/bash`

/** Run one schedule; returns its operation count and invariant violations. */
const runSchedule = (actors: ReadonlyArray<ReadonlyArray<Op>>) =>
  Effect.scoped(Effect.gen(function*() {
    const world = MemoryWorld.make()
    yield* world.mkdirFixture(TENANT, { mode: 0o700 })
    const violations: Array<string> = []
    const exists = (p: string) => world.tree(p)[p] !== undefined
    const processes = yield* Effect.forEach(actors, () => spawnProcess(world, { hostname: "h1", config: { busyAttempts: 4 } }))
    let ops = 0
    const actor = (list: ReadonlyArray<Op>, p: (typeof processes)[number]) =>
      Effect.gen(function*() {
        for (const op of list) {
          ops++
          if (op._tag === "jump") yield* TestClock.adjust(op.ms)
          else if (op._tag === "prune") yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: op.maxInactiveRuns } })
          else {
            const scope = yield* Scope.make()
            const run = yield* Scope.extend(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: op.runId, retention: { maxInactiveRuns: 1 } }), scope).pipe(
              Effect.catchTag("RunBusy", () => Effect.succeed(null))
            )
            if (run === null) continue
            for (let i = 0; i <= op.steps; i++) {
              if (!exists(`${run.path}/.pi-work-run.json`) || !exists(run.leasePath)) violations.push(`held run ${run.path} lost its manifest or lease`)
              yield* Effect.yieldNow()
            }
            yield* run.release(op.del ? { delete: true } : undefined)
            yield* Scope.close(scope, Exit.void)
          }
        }
      })
    yield* Effect.all(actors.map((list, i) => actor(list, processes[i]!)), { concurrency: "unbounded", discard: true })
    yield* Effect.forEach(processes, (p) => p.workRuns.awaitBackground)
    return { ops, violations }
  })).pipe(Effect.provide(TestContext.TestContext))

export interface PropertyOptions {
  readonly seconds: number
  readonly log: (line: string) => void
}

export const benchProperty = async (o: PropertyOptions): Promise<Measurement> => {
  const samples = fc.sample(scheduleArb, { numRuns: 200, seed: 42 })
  // Warm-up.
  for (const s of samples.slice(0, 10)) await Effect.runPromise(runSchedule(s))
  const perSecond: Array<number> = []
  const opsPerSecond: Array<number> = []
  let violations: Array<string> = []
  let schedules = 0
  const deadline = nowMs() + o.seconds * 1000
  // One-second windows, so the spread shows.
  while (nowMs() < deadline) {
    const t0 = nowMs()
    let n = 0
    let ops = 0
    while (nowMs() - t0 < 1000) {
      const r = await Effect.runPromise(runSchedule(samples[(schedules + n) % samples.length]!))
      n++
      ops += r.ops
      violations = violations.concat(r.violations)
    }
    const secs = (nowMs() - t0) / 1000
    schedules += n
    perSecond.push(n / secs)
    opsPerSecond.push(ops / secs)
  }
  if (violations.length > 0) throw new Error(`property schedules found violations: ${violations.slice(0, 3).join("; ")}`)
  return {
    name: "6 property",
    rows: [
      { label: "schedules per second (Memory)", unit: "1/s", ours: summarize(perSecond) },
      { label: "schedule operations per second", unit: "1/s", ours: summarize(opsPerSecond) }
    ],
    notes: { schedules, seconds: o.seconds, violations: violations.length }
  }
}
