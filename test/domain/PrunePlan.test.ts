import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import { boundManifestTimes, lastUsedAt, NOT_MEASURED, type PlanDecision, planMeasuring, planPrune, type PrunePlan, type ScannedRun } from "../../src/domain/PrunePlan.js"
import { emptyPruneReport, PruneReport } from "../../src/domain/PruneReport.js"
import { DEFAULT_RETENTION, type RetentionPolicy } from "../../src/domain/Retention.js"

const NOW = 1_000_000

const run = (runId: string, over: Partial<ScannedRun> = {}): ScannedRun => ({
  runId,
  path: `/w/c/t/${runId}`,
  createdAt: NOW - 100,
  releasedAt: undefined,
  newestHeartbeatAt: undefined,
  active: false,
  bytes: 10,
  apparentBytes: 7,
  complete: true,
  ...over
})

const policy = (over: Partial<RetentionPolicy> = {}): RetentionPolicy => ({ ...DEFAULT_RETENTION, ...over })

const summary = (decisions: ReadonlyArray<PlanDecision>) =>
  decisions.map((d) => `${d.runId}:${d.action}${d.reason === undefined ? "" : `:${d.reason}`}`)

// Small ranges on purpose: ties in lastUsedAt, runs around the age limit, totals around the byte limit.
const optTime = fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined })
/** Exact mostly; some cut short (a lower bound), some never walked (their bytes and complete say nothing). */
const bytesArb = fc.integer({ min: 0, max: 30 })
const sizeArb = fc.oneof(
  { weight: 5, arbitrary: fc.record({ bytes: bytesArb, apparentBytes: bytesArb, complete: fc.constant(true) }) },
  { weight: 1, arbitrary: fc.record({ bytes: bytesArb, apparentBytes: bytesArb, complete: fc.constant(false) }) },
  { weight: 1, arbitrary: fc.record({ bytes: bytesArb, apparentBytes: bytesArb, complete: fc.boolean(), walked: fc.constant(false) }) }
)
const runArb = (runId: string): fc.Arbitrary<ScannedRun> =>
  fc.tuple(
    fc.record({
      runId: fc.constant(runId),
      path: fc.constant(`/w/c/t/${runId}`),
      createdAt: fc.integer({ min: 0, max: 40 }),
      releasedAt: optTime,
      newestHeartbeatAt: optTime,
      active: fc.boolean()
    }),
    sizeArb
  ).map(([facts, size]) => ({ ...facts, ...size }))
const runsArb: fc.Arbitrary<ReadonlyArray<ScannedRun>> = fc
  .uniqueArray(fc.stringMatching(/^[a-e][0-9]$/), { maxLength: 12 })
  .chain((ids) => fc.tuple(...ids.map(runArb)))
const policyArb: fc.Arbitrary<RetentionPolicy> = fc.record({
  maxAgeMs: fc.integer({ min: 0, max: 45 }),
  maxInactiveRuns: fc.integer({ min: 0, max: 8 }),
  maxBytes: fc.integer({ min: 0, max: 150 }),
  maxScannedRuns: fc.constant(10_000),
  maxEntries: fc.constant(100_000),
  maxDepth: fc.constant(64)
})
const nowArb = fc.integer({ min: 0, max: 80 })
const caseArb = fc.record({ runs: runsArb, policy: policyArb, now: nowArb })

const byId = (runs: ReadonlyArray<ScannedRun>) => new Map(runs.map((r) => [r.runId, r]))
const isAged = (r: ScannedRun, p: RetentionPolicy, now: number) => now - lastUsedAt(r) > p.maxAgeMs
const notWalked = (r: ScannedRun) => r.walked === false
const isExact = (r: ScannedRun) => !notWalked(r) && r.complete
const isCutShort = (r: ScannedRun) => !notWalked(r) && !r.complete
/** What is known of a run's size for certain: exact bytes, a cut-short walk's lower bound, 0 when never walked. */
const atLeast = (r: ScannedRun) => (notWalked(r) ? 0 : r.bytes)
/** Removing inactive runs can bring the tenant within maxBytes: every active size exact, together within it. */
const activeOverBudget = (c: { runs: ReadonlyArray<ScannedRun>; policy: RetentionPolicy }) => {
  const active = c.runs.filter((r) => r.active)
  return !active.every(isExact) || active.reduce((s, r) => s + r.bytes, 0) > c.policy.maxBytes
}
/** The removal reasons that depend on a run's size. */
const forSize = (d: PlanDecision) => d.reason === "bytes" || d.reason === "unmeasured"

describe("lastUsedAt", () => {
  it("is the latest of releasedAt, the newest heartbeat and createdAt", () => {
    assert.strictEqual(lastUsedAt(run("a", { createdAt: 5 })), 5)
    assert.strictEqual(lastUsedAt(run("a", { createdAt: 5, releasedAt: 9, newestHeartbeatAt: 7 })), 9)
    assert.strictEqual(lastUsedAt(run("a", { createdAt: 5, releasedAt: 6, newestHeartbeatAt: 8 })), 8)
    assert.strictEqual(lastUsedAt(run("a", { createdAt: 5, releasedAt: 1 })), 5)
  })
})

describe("planPrune examples", () => {
  it("age: last use past maxAge goes, at the limit stays", () => {
    const plan = planPrune({
      runs: [run("old", { createdAt: NOW - 101 }), run("edge", { createdAt: NOW - 100 }), run("used", { createdAt: 0, newestHeartbeatAt: NOW - 5 })],
      policy: policy({ maxAgeMs: 100 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["used:keep", "edge:keep", "old:remove:age"])
  })

  it("count: keeps the newest maxInactiveRuns inactive runs; ties broken by runId desc; active runs do not count", () => {
    const plan = planPrune({
      runs: [
        run("a", { createdAt: NOW - 3 }),
        run("b", { createdAt: NOW - 3 }),
        run("c", { createdAt: NOW - 1 }),
        run("live", { createdAt: NOW - 50, active: true }),
        run("d", { createdAt: NOW - 9 })
      ],
      policy: policy({ maxInactiveRuns: 2 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["c:keep", "b:keep", "a:remove:count", "d:remove:count", "live:active"])
    assert.deepStrictEqual(summary(plan.remove), ["d:remove:count", "a:remove:count"])
  })

  it("bytes: oldest first while the total, active runs included, exceeds maxBytes", () => {
    const plan = planPrune({
      runs: [
        run("n", { createdAt: NOW - 1, bytes: 30 }),
        run("m", { createdAt: NOW - 2, bytes: 30 }),
        run("o", { createdAt: NOW - 3, bytes: 30 }),
        run("live", { createdAt: NOW - 9, active: true, bytes: 40 })
      ],
      policy: policy({ maxBytes: 99 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["n:keep", "m:remove:bytes", "o:remove:bytes", "live:active"])
    assert.strictEqual(plan.bytesBefore, 130)
    assert.strictEqual(plan.bytesAfter, 70)
    // Exactly at the budget fits.
    const atLimit = planPrune({ runs: [run("n", { bytes: 60 }), run("o", { createdAt: NOW - 200, bytes: 40 })], policy: policy({ maxBytes: 100 }), now: NOW })
    assert.deepStrictEqual(atLimit.remove, [])
  })

  it("active runs alone over the budget: no inactive run goes for bytes, since removing it could not bring the tenant within maxBytes", () => {
    const plan = planPrune({
      runs: [run("live", { active: true, bytes: 500 }), run("idle", { bytes: 1 }), run("older", { createdAt: NOW - 200, bytes: 90 })],
      policy: policy({ maxBytes: 100 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["live:active", "idle:keep", "older:keep"])
    assert.isTrue(plan.activeOverBudget)
    assert.strictEqual(plan.bytesAfter, 591)
    // Within reach again once the held run's bytes fit beside some of the rest.
    const within = planPrune({
      runs: [run("live", { active: true, bytes: 50 }), run("idle", { bytes: 1 }), run("older", { createdAt: NOW - 200, bytes: 90 })],
      policy: policy({ maxBytes: 100 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(within.decisions), ["live:active", "idle:keep", "older:remove:bytes"])
    assert.isFalse(within.activeOverBudget)
  })

  it("bytes: a run the budget does not need is put back, newest first", () => {
    // Oldest first takes "tiny" and then "huge"; with "huge" gone, "tiny" fits again and stays.
    const plan = planPrune({
      runs: [run("new", { createdAt: NOW - 1, bytes: 10 }), run("huge", { createdAt: NOW - 2, bytes: 100 }), run("tiny", { createdAt: NOW - 3, bytes: 1 })],
      policy: policy({ maxBytes: 60 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["new:keep", "huge:remove:bytes", "tiny:keep"])
    assert.strictEqual(plan.bytesAfter, 11)
    // A run not measured counts 0 and is never taken for bytes, wherever it stands.
    const unwalked = planPrune({
      runs: [run("new", { createdAt: NOW - 1, bytes: 45 }), run("mid", { createdAt: NOW - 2, ...NOT_MEASURED, bytes: 30 }), run("old", { createdAt: NOW - 3, bytes: 5 })],
      policy: policy({ maxBytes: 40 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(unwalked.decisions), ["new:remove:bytes", "mid:keep", "old:keep"])
    // A run of 0 bytes never goes for bytes: removing it brings nothing.
    const empty = planPrune({ runs: [run("big", { bytes: 100 }), run("empty", { createdAt: NOW - 300, bytes: 0 })], policy: policy({ maxBytes: 60 }), now: NOW })
    assert.deepStrictEqual(summary(empty.decisions), ["big:remove:bytes", "empty:keep"])
  })

  it("an incomplete inactive run is removed as unmeasured; its bytes are unknown", () => {
    const plan = planPrune({
      runs: [run("big", { complete: false, bytes: 3 }), run("small", { createdAt: NOW - 200, bytes: 3 })],
      policy: policy({ maxBytes: 1000 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["big:remove:unmeasured", "small:keep"])
    assert.isNull(plan.decisions[0]!.bytes)
    assert.isNull(plan.bytesBefore)
    assert.strictEqual(plan.bytesAfter, 3)
  })

  it("one big run never gets its neighbours deleted: it is the one cut short; the runs never walked are not measured, not over budget", () => {
    const runs = [
      run("big", { createdAt: NOW - 1, complete: false, bytes: 7 }),
      ...["s1", "s2", "s3", "s4"].map((id, i) => run(id, { createdAt: NOW - 10 - i, ...NOT_MEASURED }))
    ]
    const plan = planPrune({ runs, policy: DEFAULT_RETENTION, now: NOW })
    assert.deepStrictEqual(summary(plan.decisions), ["big:remove:unmeasured", "s1:keep", "s2:keep", "s3:keep", "s4:keep"])
    assert.deepStrictEqual(plan.decisions.map((d) => [d.runId, d.measured, d.cutShort, d.bytes, d.bytesAtLeast]), [
      ["big", true, true, null, 7],
      ...["s1", "s2", "s3", "s4"].map((id) => [id, false, false, null, 0])
    ])
    assert.isNull(plan.bytesAfter)
    // Age and count need no size: they still apply to runs not measured.
    const counted = planPrune({ runs, policy: policy({ maxInactiveRuns: 2 }), now: NOW })
    assert.deepStrictEqual(summary(counted.decisions), ["big:remove:unmeasured", "s1:keep", "s2:keep", "s3:remove:count", "s4:remove:count"])
  })

  it("an active run cut short carries the unmeasured remainder: nothing goes for its size, a cut-short neighbour stays too", () => {
    const plan = planPrune({
      runs: [
        run("live", { createdAt: NOW, active: true, complete: false, bytes: 1 }),
        run("idle", { createdAt: NOW - 1, bytes: 1 }),
        run("partial", { createdAt: NOW - 2, complete: false, bytes: 5 }),
        run("unwalked", { createdAt: NOW - 3, ...NOT_MEASURED })
      ],
      policy: policy({ maxBytes: 1000 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["live:active", "idle:keep", "partial:keep", "unwalked:keep"])
    assert.isTrue(plan.activeOverBudget)
    assert.isNull(plan.bytesBefore)
    assert.isNull(plan.bytesAfter)
    // …and the cut-short neighbour then takes a kept place like any other.
    const counted = planPrune({
      runs: [run("live", { createdAt: NOW, active: true, complete: false, bytes: 1 }), run("partial", { createdAt: NOW - 2, complete: false }), run("older", { createdAt: NOW - 3 })],
      policy: policy({ maxInactiveRuns: 1 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(counted.decisions), ["live:active", "partial:keep", "older:remove:count"])
  })

  it("an active run not measured (the budget was spent first) may hold anything: nothing goes for its size", () => {
    const plan = planPrune({
      runs: [run("live", { active: true, bytes: 10 }), run("later", { active: true, ...NOT_MEASURED }), run("idle", { bytes: 500 })],
      policy: policy({ maxBytes: 100 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["live:active", "later:active", "idle:keep"])
    assert.isTrue(plan.activeOverBudget)
  })

  it("the first applicable rule names the reason: age before count before unmeasured", () => {
    const plan = planPrune({
      runs: [
        run("new", { createdAt: NOW }),
        run("partial", { createdAt: NOW - 1, complete: false }),
        run("extra", { createdAt: NOW - 2 }),
        run("beyond", { createdAt: NOW - 3, complete: false }),
        run("ancient", { createdAt: 0, complete: false })
      ],
      policy: policy({ maxAgeMs: 100, maxInactiveRuns: 2 }),
      now: NOW
    })
    // "partial" takes no kept place (so "extra" is kept); "beyond" goes by count, which needs no size.
    assert.deepStrictEqual(summary(plan.decisions), ["new:keep", "partial:remove:unmeasured", "extra:keep", "beyond:remove:count", "ancient:remove:age"])
  })

  it("an empty tenant plans nothing", () => {
    assert.deepStrictEqual(planPrune({ runs: [], policy: DEFAULT_RETENTION, now: NOW }), {
      decisions: [],
      remove: [],
      bytesBefore: 0,
      bytesAfter: 0,
      apparentBytesBefore: 0,
      apparentBytesAfter: 0,
      activeOverBudget: false
    })
  })

  it.prop("the byte budget counts disk usage: decisions never depend on the apparent size, which is reported beside it", [caseArb, fc.integer({ min: 0, max: 1000 })], ([c, shift]) => {
    const plan = planPrune(c)
    const other = planPrune({ ...c, runs: c.runs.map((r) => ({ ...r, apparentBytes: (r.apparentBytes * 7 + shift) % 1000 })) })
    assert.deepStrictEqual(fates(other), fates(plan))
    // Beside the disk usage, the apparent sizes of the same runs, exact exactly when it is.
    for (const d of plan.decisions) {
      const r = c.runs.find((x) => x.runId === d.runId)!
      assert.strictEqual(d.apparentBytes, d.bytes === null ? null : r.apparentBytes)
    }
    assert.strictEqual(plan.apparentBytesBefore === null, plan.bytesBefore === null)
    assert.strictEqual(plan.apparentBytesAfter === null, plan.bytesAfter === null)
    if (plan.apparentBytesBefore !== null) assert.strictEqual(plan.apparentBytesBefore, c.runs.reduce((t, r) => t + r.apparentBytes, 0))
  })
})

/** Two-phase planning with the sizes of `c.runs` as the measuring walk: the plan and the runs it walked. */
const planInTwoPhases = (c: { runs: ReadonlyArray<ScannedRun>; policy: RetentionPolicy; now: number }) => {
  const runs = byId(c.runs)
  const planning = planMeasuring({ runs: c.runs.map(({ bytes: _b, apparentBytes: _a, complete: _c, walked: _w, ...facts }) => facts), policy: c.policy, now: c.now })
  const walked: Array<string> = []
  for (let next = planning.next(); next !== undefined; next = planning.next()) {
    walked.push(next.runId)
    const r = runs.get(next.runId)!
    planning.measured(notWalked(r) ? NOT_MEASURED : { bytes: r.bytes, apparentBytes: r.apparentBytes, complete: r.complete })
  }
  return { plan: planning.finish(), walked }
}

const fates = (plan: PrunePlan) => plan.decisions.map((d) => [d.runId, d.action, d.reason])

describe("planMeasuring (two phases: measure only what the plan needs)", () => {
  it("walks the active runs and the newest maxInactiveRuns young ones; the rest go by age or count unmeasured", () => {
    const runs = [
      run("live", { createdAt: NOW, active: true, bytes: 5 }),
      ...Array.from({ length: 20 }, (_, i) => run(`r${String(i).padStart(2, "0")}`, { createdAt: NOW - 100 - i })),
      run("old", { createdAt: 0 })
    ]
    const { plan, walked } = planInTwoPhases({ runs, policy: policy({ maxAgeMs: 1000, maxInactiveRuns: 3 }), now: NOW })
    assert.deepStrictEqual(walked, ["live", "r00", "r01", "r02"])
    assert.deepStrictEqual(plan.remove.map((d) => [d.runId, d.reason, d.bytes, d.measured]).slice(0, 2), [["old", "age", null, false], ["r19", "count", null, false]])
    assert.strictEqual(plan.remove.length, 18)
    assert.strictEqual(plan.bytesAfter, 5 + 3 * 10)
    assert.isNull(plan.bytesBefore) // the removal walks count the rest
  })

  it("a run cut short takes no kept place: the next one is walked instead", () => {
    const runs = [run("a", { createdAt: NOW - 1, complete: false }), run("b", { createdAt: NOW - 2 }), run("c", { createdAt: NOW - 3 })]
    const { plan, walked } = planInTwoPhases({ runs, policy: policy({ maxInactiveRuns: 1 }), now: NOW })
    assert.deepStrictEqual(walked, ["a", "b"])
    assert.deepStrictEqual(summary(plan.decisions), ["a:remove:unmeasured", "b:keep", "c:remove:count"])
  })

  it("a run not measured takes its kept place; behind a held run cut short, a cut-short one does too", () => {
    const notMeasured = [run("a", { createdAt: NOW - 1, ...NOT_MEASURED }), run("b", { createdAt: NOW - 2 }), run("c", { createdAt: NOW - 3 })]
    const first = planInTwoPhases({ runs: notMeasured, policy: policy({ maxInactiveRuns: 1 }), now: NOW })
    assert.deepStrictEqual(first.walked, ["a"])
    assert.deepStrictEqual(summary(first.plan.decisions), ["a:keep", "b:remove:count", "c:remove:count"])
    const held = [run("live", { createdAt: NOW, active: true, complete: false }), run("a", { createdAt: NOW - 1, complete: false }), run("b", { createdAt: NOW - 2 })]
    const second = planInTwoPhases({ runs: held, policy: policy({ maxInactiveRuns: 1 }), now: NOW })
    assert.deepStrictEqual(second.walked, ["live", "a"])
    assert.deepStrictEqual(summary(second.plan.decisions), ["live:active", "a:keep", "b:remove:count"])
  })

  it("asking for a size twice, or giving one not asked for, is a defect", () => {
    const planning = planMeasuring({ runs: [run("a"), run("b")], policy: DEFAULT_RETENTION, now: NOW })
    assert.throws(() => planning.measured({ bytes: 1, apparentBytes: 1, complete: true }), /no run was asked for/)
    planning.next()
    assert.throws(() => planning.next(), /size of the last run asked for is missing/)
  })

  it.prop("same decisions as measuring every run; sizes of kept runs exact; removals never undercounted", [caseArb], ([c]) => {
    const full = planPrune(c)
    const { plan, walked } = planInTwoPhases(c)
    assert.deepStrictEqual(fates(plan), fates(full))
    assert.deepStrictEqual(plan.remove.map((d) => d.runId), full.remove.map((d) => d.runId))
    assert.strictEqual(plan.bytesAfter, full.bytesAfter)
    assert.strictEqual(plan.activeOverBudget, full.activeOverBudget)
    const fullById = new Map(full.decisions.map((d) => [d.runId, d]))
    const asked = new Set(walked)
    for (const d of plan.decisions) {
      if (asked.has(d.runId)) {
        const f = fullById.get(d.runId)!
        assert.deepStrictEqual([d.bytes, d.bytesAtLeast, d.measured, d.cutShort], [f.bytes, f.bytesAtLeast, f.measured, f.cutShort])
      } else {
        // Not asked for: removed by age or count whatever its size, its bytes left to the removal walk.
        assert.strictEqual(d.action, "remove")
        assert.include(["age", "count"], d.reason)
        assert.deepStrictEqual([d.bytes, d.measured, d.cutShort], [null, false, false])
      }
    }
    assert.strictEqual(plan.bytesBefore, plan.decisions.every((d) => asked.has(d.runId)) ? full.bytesBefore : null)
  })

  it.prop("walks every active run first, no aged run, and young ones only until maxInactiveRuns kept places are taken", [caseArb], ([c]) => {
    const { walked } = planInTwoPhases(c)
    const runs = byId(c.runs)
    const walkedSet = new Set(walked)
    assert.strictEqual(walkedSet.size, walked.length)
    for (const r of c.runs) if (r.active) assert.isTrue(walkedSet.has(r.runId), r.runId)
    const activeCount = c.runs.filter((r) => r.active).length
    assert.isTrue(walked.slice(0, activeCount).every((id) => runs.get(id)!.active))
    const young = walked.map((id) => runs.get(id)!).filter((r) => !r.active)
    for (const r of young) assert.isFalse(isAged(r, c.policy, c.now), r.runId)
    // A run takes a kept place unless it was cut short and can go for its size.
    const over = activeOverBudget(c)
    const takesPlace = (r: ScannedRun) => !isCutShort(r) || over
    // Every walked young run but the last was needed: fewer than maxInactiveRuns places taken before it.
    const placesBefore = young.slice(0, -1).filter(takesPlace).length
    assert.isBelow(placesBefore, Math.max(1, c.policy.maxInactiveRuns))
    assert.isAtMost(young.filter(takesPlace).length, c.policy.maxInactiveRuns)
    if (c.policy.maxInactiveRuns === 0) assert.deepStrictEqual(young, [])
  })
})

describe("planPrune properties", () => {
  it.prop("never selects an active run; one decision per run", [caseArb], ([c]) => {
    const plan = planPrune(c)
    assert.strictEqual(plan.decisions.length, c.runs.length)
    const runs = byId(c.runs)
    for (const d of plan.decisions) {
      const r = runs.get(d.runId)!
      assert.strictEqual(d.action === "active", r.active)
      assert.strictEqual(d.reason !== undefined, d.action === "remove")
      assert.strictEqual(d.lastUsedAt, lastUsedAt(r))
      assert.strictEqual(d.bytes, isExact(r) ? r.bytes : null)
      assert.strictEqual(d.bytesAtLeast, atLeast(r))
      assert.strictEqual(d.measured, !notWalked(r))
      assert.strictEqual(d.cutShort, isCutShort(r))
    }
    assert.strictEqual(plan.activeOverBudget, activeOverBudget(c))
  })

  it.prop(
    "the plan does not depend on input order",
    [caseArb.chain((c) => fc.tuple(fc.constant(c), fc.shuffledSubarray([...c.runs], { minLength: c.runs.length })))],
    ([[c, shuffled]]) => {
      assert.deepStrictEqual(planPrune({ ...c, runs: shuffled }), planPrune(c))
    }
  )

  it.prop("decisions are newest first; remove lists the removals oldest first", [caseArb], ([c]) => {
    const plan = planPrune(c)
    for (let i = 1; i < plan.decisions.length; i++) {
      const a = plan.decisions[i - 1]!
      const b = plan.decisions[i]!
      assert.isTrue(a.lastUsedAt > b.lastUsedAt || (a.lastUsedAt === b.lastUsedAt && a.runId > b.runId))
    }
    assert.deepStrictEqual(plan.remove, plan.decisions.filter((d) => d.action === "remove").reverse())
  })

  it.prop("kept inactive runs: at most maxInactiveRuns, none past maxAge; one cut short only when the active runs are over budget", [caseArb], ([c]) => {
    const plan = planPrune(c)
    const runs = byId(c.runs)
    const kept = plan.decisions.filter((d) => d.action === "keep")
    assert.isAtMost(kept.length, c.policy.maxInactiveRuns)
    for (const d of kept) {
      assert.isAtMost(c.now - d.lastUsedAt, c.policy.maxAgeMs)
      if (isCutShort(runs.get(d.runId)!)) assert.isTrue(plan.activeOverBudget, d.runId)
    }
  })

  it.prop("age, count and unmeasured reasons are exact", [caseArb], ([c]) => {
    const plan = planPrune(c)
    const runs = byId(c.runs)
    const over = activeOverBudget(c)
    // Newest first, the young inactive runs that stay ahead of each run take the kept places.
    let placesAhead = 0
    for (const d of plan.decisions) {
      const r = runs.get(d.runId)!
      if (r.active) continue
      const aged = isAged(r, c.policy, c.now)
      const beyond = !aged && placesAhead >= c.policy.maxInactiveRuns
      const unmeasured = !aged && !beyond && isCutShort(r) && !over
      assert.strictEqual(d.reason === "age", aged, d.runId)
      assert.strictEqual(d.reason === "count", beyond, d.runId)
      assert.strictEqual(d.reason === "unmeasured", unmeasured, d.runId)
      if (!aged && !beyond && !unmeasured) placesAhead++
    }
  })

  it.prop("bytes: with every size exact, the kept total fits, or the active runs alone exceed maxBytes and nothing went for bytes", [caseArb], ([c]) => {
    fc.pre(c.runs.every(isExact))
    const plan = planPrune(c)
    const total = (ds: ReadonlyArray<PlanDecision>) => ds.reduce((s, d) => s + d.bytes!, 0)
    const remaining = plan.decisions.filter((d) => d.action !== "remove")
    assert.strictEqual(plan.bytesBefore, total(plan.decisions))
    assert.strictEqual(plan.bytesAfter, total(remaining))
    if (plan.activeOverBudget) {
      assert.isAbove(total(plan.decisions.filter((d) => d.action === "active")), c.policy.maxBytes)
      assert.isFalse(plan.decisions.some(forSize))
    } else {
      assert.isAtMost(plan.bytesAfter!, c.policy.maxBytes)
    }
  })

  it.prop(
    "the victims for size: each measured (exact for bytes) or the cut-short run, taken only when that can reach maxBytes, each one needed",
    [caseArb],
    ([c]) => {
      const plan = planPrune(c)
      const runs = byId(c.runs)
      const bySize = plan.decisions.filter(forSize)
      // Only when removing inactive runs can bring the tenant within maxBytes (the active runs' total is exact and fits).
      if (bySize.length > 0) assert.isFalse(activeOverBudget(c))
      for (const d of bySize) {
        const r = runs.get(d.runId)!
        assert.isFalse(r.active)
        if (d.reason === "bytes") assert.isTrue(isExact(r), d.runId)
        else assert.isTrue(isCutShort(r), d.runId) // the run that carries the unmeasured remainder
        assert.isFalse(notWalked(r), d.runId) // not measured is never over budget
      }
      // What is known of the kept runs fits afterwards; putting back any run removed for bytes breaks it again.
      const keptKnown = plan.decisions.filter((d) => d.action !== "remove").reduce((s, d) => s + d.bytesAtLeast, 0)
      if (!plan.activeOverBudget) assert.isAtMost(keptKnown, c.policy.maxBytes)
      const byBytes = plan.decisions.filter((d) => d.reason === "bytes")
      for (const d of byBytes) assert.isAbove(keptKnown + d.bytes!, c.policy.maxBytes, d.runId)
      // Oldest first: an exact run kept although older than a run removed for bytes was put back, so it is smaller.
      for (const v of byBytes) {
        const older = plan.decisions.slice(plan.decisions.indexOf(v) + 1).filter((d) => d.action === "keep" && isExact(runs.get(d.runId)!))
        for (const k of older) assert.isBelow(k.bytes!, v.bytes!, `${k.runId} kept, ${v.runId} removed`)
      }
      // Nothing goes for its size when the known total already fits and no run was cut short.
      if (!c.runs.some(isCutShort) && c.runs.reduce((s, r) => s + atLeast(r), 0) <= c.policy.maxBytes) assert.deepStrictEqual(bySize, [])
    },
    { fastCheck: { numRuns: 1000 } }
  )

  it.prop("removing the victims never moves the tenant away from its limits, whatever the true sizes", [
    caseArb.chain((c) =>
      fc.tuple(
        fc.constant(c),
        // A true size for every run consistent with what was measured: exact, at least the lower bound, anything when never walked.
        fc.tuple(...c.runs.map((r) => (isExact(r) ? fc.constant(r.bytes) : fc.integer({ min: atLeast(r), max: atLeast(r) + 60 }))))
      )
    )
  ], ([[c, trueSizes]]) => {
    const plan = planPrune(c)
    const trueSize = new Map(c.runs.map((r, i) => [r.runId, trueSizes[i]!]))
    const removed = new Set(plan.remove.map((d) => d.runId))
    const distance = (runs: ReadonlyArray<ScannedRun>) => {
      const inactive = runs.filter((r) => !r.active)
      return Math.max(0, runs.reduce((s, r) => s + trueSize.get(r.runId)!, 0) - c.policy.maxBytes) +
        Math.max(0, inactive.length - c.policy.maxInactiveRuns) +
        inactive.filter((r) => isAged(r, c.policy, c.now)).length
    }
    const after = c.runs.filter((r) => !removed.has(r.runId))
    assert.isAtMost(distance(after), distance(c.runs))
    // A run removed for bytes was needed whatever the runs not measured hold: the true kept total only adds to the known one.
    const trueKept = after.reduce((s, r) => s + trueSize.get(r.runId)!, 0)
    for (const d of plan.decisions) if (d.reason === "bytes") assert.isAbove(trueKept + trueSize.get(d.runId)!, c.policy.maxBytes)
  })

  it.prop("what is unknown: bytesBefore needs every size exact, bytesAfter every remaining one", [caseArb], ([c]) => {
    const plan = planPrune(c)
    const runs = byId(c.runs)
    assert.strictEqual(plan.bytesBefore === null, !c.runs.every(isExact))
    assert.strictEqual(plan.bytesAfter === null, !plan.decisions.filter((d) => d.action !== "remove").every((d) => isExact(runs.get(d.runId)!)))
  })

  it.prop("idempotent: planning again over the kept runs removes nothing", [caseArb], ([c]) => {
    const plan = planPrune(c)
    const removed = new Set(plan.remove.map((d) => d.runId))
    const again = planPrune({ ...c, runs: c.runs.filter((r) => !removed.has(r.runId)) })
    assert.deepStrictEqual(again.remove, [])
    assert.strictEqual(again.bytesAfter, plan.bytesAfter)
  })
})

describe("PruneReport", () => {
  /** The facade's declared interface (src/promise.ts); the schema type must be assignable to it. */
  interface FacadePruneReport {
    busy: boolean; dryRun: boolean; scannedRuns: number; truncated: boolean
    removed: Array<{ runId: string; path: string; reason: "age" | "count" | "bytes" | "unmeasured"; bytes: number | null }>
    kept: Array<string>; active: Array<string>
    skipped: Array<{ runId: string; path: string; why: string }>
    unowned: Array<{ name: string; path: string; why: string }>
    bytesBefore: number | null; bytesAfter: number | null
    errors: Array<{ path: string; message: string }>
    unreadable: Array<{ path: string; what: string; action: "held" | "reclaimed" | "reclaimable" | "left" | "ignored" }>
  }

  it("emptyPruneReport decodes with the schema, fits the facade shape, and is a fresh value each time", () => {
    const report: FacadePruneReport = emptyPruneReport(true)
    assert.isTrue(Schema.is(PruneReport)(report))
    assert.deepStrictEqual<unknown>(Schema.decodeUnknownSync(PruneReport)(report), { ...report, incomplete: false })
    assert.isTrue(report.dryRun)
    assert.isFalse(report.busy)
    assert.isTrue(emptyPruneReport(false, true).busy)
    report.kept.push("x")
    assert.deepStrictEqual(emptyPruneReport(true).kept, [])
  })

  it("the schema refuses an unknown removal reason", () => {
    const bad = { ...emptyPruneReport(false), removed: [{ runId: "a", path: "/a", reason: "whim", bytes: 1 }] }
    assert.isFalse(Schema.is(PruneReport)(bad))
  })
})

describe("boundManifestTimes (far-future stamps, docs/safety.md)", () => {
  it.prop(
    "a stamp beyond now + ttl never counts: the manifest's mtime capped at now does; plausible stamps are kept as they are",
    [
      fc.integer({ min: -1e9, max: 1e9 }),
      fc.option(fc.integer({ min: -1e9, max: 1e9 }), { nil: undefined }),
      fc.option(fc.integer({ min: -1e9, max: 1e9 }), { nil: null }),
      fc.integer({ min: -1e9, max: 1e9 }),
      fc.nat({ max: 1e8 })
    ],
    ([createdAt, releasedAt, manifestMtimeMs, now, ttl]) => {
      const bounded = boundManifestTimes({ createdAt, releasedAt, manifestMtimeMs, now, remoteLeaseTtlMs: ttl })
      const fallback = Math.min(manifestMtimeMs ?? now, now)
      const far = (t: number) => t > now + ttl
      assert.strictEqual(bounded.createdAt, far(createdAt) ? fallback : createdAt)
      assert.strictEqual(bounded.releasedAt, releasedAt === undefined ? undefined : far(releasedAt) ? fallback : releasedAt)
      assert.strictEqual(bounded.farFuture.length, Number(far(createdAt)) + Number(releasedAt !== undefined && far(releasedAt)))
      // Whatever the stamps, last use is never beyond now + ttl: such a run ages like any other.
      const used = lastUsedAt({ runId: "r", path: "/r", createdAt: bounded.createdAt, releasedAt: bounded.releasedAt, newestHeartbeatAt: undefined, active: false })
      assert.isAtMost(used, now + ttl)
    }
  )
})
