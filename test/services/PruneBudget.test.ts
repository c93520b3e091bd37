/**
 * docs/work-runs.md "Retention" over the Memory world: random tenants (runs of random sizes, depths and ages, some held by
 * a live lease) pruned under random budgets and policies. Whatever the entry budget leaves unmeasured:
 * - every run removed for its size was measured: by `bytes` exactly, by `unmeasured` only the run cut short;
 * - a run not measured is kept unless age or count removes it, and a held run is never removed;
 * - a run goes for its size only when removing inactive runs can bring the tenant within `maxBytes` (the held
 *   runs' true total fits), and each run removed for bytes was needed: put back, the true total breaks it;
 * - removing the victims never moves the tenant away from its limits (true bytes, inactive count, aged runs).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Scope, TestClock } from "effect"
import { encodeManifest } from "../../src/domain/Formats.js"
import { DEFAULT_RETENTION, type RetentionPolicy } from "../../src/domain/Retention.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const TOOL = { category: "tools", tenant: "bash" } as const
const TENANT = `${AGENT_DIR}/work/tools/bash`
const MINUTE = 60 * 1000
const DAY = 24 * 60 * MINUTE

interface RunSpec {
  /** Time since the previous run was made (the first: since the start). */
  readonly gapMs: number
  readonly held: boolean
  readonly files: number
  readonly fileBytes: number
  /** The files sit two directories down (`maxDepth` 2 then cuts the walk short; a lease at depth 2 is still seen). */
  readonly nested: boolean
}

const runSpecArb: fc.Arbitrary<RunSpec> = fc.record({
  gapMs: fc.constantFrom(0, MINUTE, 60 * MINUTE, 10 * DAY, 40 * DAY),
  held: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  files: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 5, max: 30 })),
  fileBytes: fc.integer({ min: 0, max: 40 }),
  nested: fc.integer({ min: 0, max: 3 }).map((n) => n === 0)
})

const policyArb: fc.Arbitrary<RetentionPolicy> = fc.record({
  maxAgeMs: fc.constantFrom(2 * 60 * MINUTE, 30 * DAY),
  maxInactiveRuns: fc.integer({ min: 0, max: 6 }),
  maxBytes: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 400 }) }, { weight: 1, arbitrary: fc.constant(DEFAULT_RETENTION.maxBytes) }),
  maxScannedRuns: fc.constant(DEFAULT_RETENTION.maxScannedRuns),
  maxEntries: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 60 }) }, { weight: 1, arbitrary: fc.constant(DEFAULT_RETENTION.maxEntries) }),
  maxDepth: fc.constantFrom(2, DEFAULT_RETENTION.maxDepth)
})

const caseArb = fc.record({
  runs: fc.array(runSpecArb, { minLength: 1, maxLength: 6 }),
  policy: policyArb,
  endGapMs: fc.constantFrom(0, MINUTE, 10 * DAY),
  dryRun: fc.boolean()
})

const runIdOf = (i: number) => `r${i}`

const pruneCase = (c: typeof caseArb extends fc.Arbitrary<infer A> ? A : never) =>
  Effect.gen(function*() {
    const world = MemoryWorld.make()
    // Held runs stay live by their holder's pid on this host; no heartbeats, so day-long clock jumps cost nothing.
    const p = yield* spawnProcess(world, { heartbeats: false })
    for (const dir of [TENANT, `${AGENT_DIR}/work/tools`, `${AGENT_DIR}/work`]) yield* world.mkdirFixture(dir, { mode: 0o700 })
    const holders = yield* Scope.make()
    const paths = new Map<string, string>()
    for (const [i, spec] of c.runs.entries()) {
      yield* TestClock.adjust(spec.gapMs)
      const runId = runIdOf(i)
      let path = `${TENANT}/${runId}`
      if (spec.held) {
        // Held: a real acquire whose lease stays live (its scope stays open through the prune).
        path = (yield* Scope.extend(p.workRuns.acquire({ ...TOOL, runId, retention: false }), holders)).path
      } else {
        // Released runs are planted as a release leaves them (the manifest stamped), which is cheaper than acquiring each.
        const at = yield* TestClock.currentTimeMillis
        const manifest = { version: 2 as const, ...TOOL, runId, kind: "named" as const, createdAt: at, createdBy: { host: "h1", pid: 1 }, releasedAt: at }
        yield* world.writeFixture(`${path}/.pi-work-run.json`, encodeManifest(manifest))
      }
      for (let f = 0; f < spec.files; f++) yield* world.writeFixture(`${path}/${spec.nested ? "d/e/" : ""}f${f}`, "x".repeat(spec.fileBytes))
      paths.set(runId, path)
    }
    yield* TestClock.adjust(c.endGapMs)
    // The truth, walked without any budget: what each run holds.
    const truth = new Map<string, { bytes: number; entries: number; held: boolean }>()
    for (const [i, spec] of c.runs.entries()) {
      const runId = runIdOf(i)
      const size = yield* p.fs.measureTree(paths.get(runId)!, { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER })
      assert.isTrue(size.complete)
      truth.set(runId, { bytes: size.bytes, entries: size.entries, held: spec.held })
    }
    const report = yield* p.workRuns.prune({ ...TOOL, policy: c.policy, dryRun: c.dryRun })
    const gone = (runId: string) => world.tree(paths.get(runId)!)[paths.get(runId)!] === undefined
    return { report, truth, gone }
  })

describe("the prune's byte rules under a shared entry budget (Memory)", () => {
  it.effect.prop(
    "runs removed for their size were measured, were needed, and could bring the tenant within maxBytes; runs not measured stay",
    [caseArb],
    ([c]) =>
      Effect.scoped(Effect.gen(function*() {
        const { report, truth, gone } = yield* pruneCase(c)
        const ids = [...truth.keys()]
        const removed = new Map(report.removed.map((r) => [r.runId, r]))
        const context = JSON.stringify({ policy: c.policy, truth: [...truth], report })
        assert.strictEqual(report.errors.length, 0, context)

        // What is on disk is what the report says (a dry run touches nothing); held runs are never removed.
        for (const runId of ids) assert.strictEqual(gone(runId), !c.dryRun && removed.has(runId), `${runId} ${context}`)
        for (const [runId, t] of truth) if (t.held) assert.include(report.active, runId, context)

        // Judged by the truth alone: what went for its size could bring the tenant within maxBytes, and was needed.
        const bySize = report.removed.filter((r) => r.reason === "bytes" || r.reason === "unmeasured")
        const heldTotal = ids.filter((id) => truth.get(id)!.held).reduce((s, id) => s + truth.get(id)!.bytes, 0)
        const keptTotal = ids.filter((id) => !removed.has(id)).reduce((s, id) => s + truth.get(id)!.bytes, 0)
        // With every inactive run gone the tenant would be within maxBytes: a held huge run keeps its neighbours.
        if (bySize.length > 0) assert.isAtMost(heldTotal, c.policy.maxBytes, context)
        for (const r of report.removed.filter((r) => r.reason === "bytes")) {
          assert.strictEqual(r.bytes, truth.get(r.runId)!.bytes, `${r.runId} measured exactly ${context}`)
          // Needed: put back, the tenant's true total is over maxBytes again.
          assert.isAbove(keptTotal + truth.get(r.runId)!.bytes, c.policy.maxBytes, `${r.runId} needed ${context}`)
        }
        // `unmeasured` is the run whose walk was cut short: by maxDepth (files below it), or the one run the entry
        // budget ran out in. Never several runs at once for the budget.
        const depthCut = (runId: string) => {
          const spec = c.runs[ids.indexOf(runId)]!
          return c.policy.maxDepth === 2 && spec.nested && spec.files > 0
        }
        const budgetVictims = report.removed.filter((r) => r.reason === "unmeasured" && !depthCut(r.runId))
        assert.isAtMost(budgetVictims.length, 1, context)

        // The report says what it knows: the runs cut short (bytes a lower bound; one at most by the entry
        // budget), the runs not measured (all kept), and whether the held runs are over budget.
        const cutShort = new Map(report.cutShort.map((r) => [r.runId, r]))
        for (const cut of report.cutShort) assert.isAtMost(cut.bytesAtLeast, truth.get(cut.runId)!.bytes, context)
        const byBudget = report.cutShort.filter((cut) => cut._tag === "EntryBudget")
        assert.isAtMost(byBudget.length, 1, context)
        if (c.policy.maxEntries >= ids.reduce((s, id) => s + truth.get(id)!.entries, 0)) {
          assert.deepStrictEqual([report.notMeasured, byBudget], [[], []], context)
        }
        for (const runId of report.notMeasured) assert.isFalse(removed.has(runId), `${runId} not measured ${context}`)
        for (const r of bySize) {
          assert.strictEqual(cutShort.has(r.runId), r.reason === "unmeasured", `${r.runId} ${context}`)
          if (r.reason === "unmeasured") assert.isFalse(cutShort.get(r.runId)!.active, context)
        }
        assert.strictEqual(report.activeOverBudget, heldTotal > c.policy.maxBytes || report.cutShort.some((cut) => cut.active) || report.notMeasured.some((id) => truth.get(id)!.held), context)
        if (report.activeOverBudget) assert.deepStrictEqual(bySize, [], context)
        assert.strictEqual(report.incomplete, report.cutShort.length > 0 || report.notMeasured.length > 0 || report.removed.some((r) => r.bytes === null), context)

        // Toward the limits: the true distance (bytes over, inactive runs over the count, aged inactive runs) never grows.
        const aged = new Set(report.removed.filter((r) => r.reason === "age").map((r) => r.runId))
        const distance = (runIds: ReadonlyArray<string>) => {
          const inactive = runIds.filter((id) => !truth.get(id)!.held)
          return Math.max(0, runIds.reduce((s, id) => s + truth.get(id)!.bytes, 0) - c.policy.maxBytes) +
            Math.max(0, inactive.length - c.policy.maxInactiveRuns) +
            inactive.filter((id) => aged.has(id)).length
        }
        assert.isAtMost(distance(ids.filter((id) => !removed.has(id))), distance(ids), context)
      })),
    { fastCheck: { numRuns: 40 } }
  )
})
