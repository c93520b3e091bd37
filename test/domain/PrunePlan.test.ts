import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import { boundManifestTimes, lastUsedAt, type PlanDecision, planMeasuring, planPrune, type PrunePlan, type ScannedRun } from "../../src/domain/PrunePlan.js"
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
  complete: true,
  ...over
})

const policy = (over: Partial<RetentionPolicy> = {}): RetentionPolicy => ({ ...DEFAULT_RETENTION, ...over })

const summary = (decisions: ReadonlyArray<PlanDecision>) =>
  decisions.map((d) => `${d.runId}:${d.action}${d.reason === undefined ? "" : `:${d.reason}`}`)

// Small ranges on purpose: ties in lastUsedAt, runs around the age limit, totals around the byte limit.
const optTime = fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined })
const runArb = (runId: string): fc.Arbitrary<ScannedRun> =>
  fc.record({
    runId: fc.constant(runId),
    path: fc.constant(`/w/c/t/${runId}`),
    createdAt: fc.integer({ min: 0, max: 40 }),
    releasedAt: optTime,
    newestHeartbeatAt: optTime,
    active: fc.boolean(),
    bytes: fc.integer({ min: 0, max: 30 }),
    complete: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) })
  })
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

  it("active runs over the budget stay, every inactive run goes", () => {
    const plan = planPrune({
      runs: [run("live", { active: true, bytes: 500 }), run("idle", { bytes: 1 })],
      policy: policy({ maxBytes: 100 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["live:active", "idle:remove:bytes"])
    assert.strictEqual(plan.bytesAfter, 500)
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

  it("an incomplete active run makes the total unknown: every inactive run goes for bytes", () => {
    const plan = planPrune({
      runs: [run("live", { active: true, complete: false, bytes: 1 }), run("idle", { bytes: 1 })],
      policy: policy({ maxBytes: 1000 }),
      now: NOW
    })
    assert.deepStrictEqual(summary(plan.decisions), ["live:active", "idle:remove:bytes"])
    assert.isNull(plan.bytesBefore)
    assert.isNull(plan.bytesAfter)
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
      bytesAfter: 0
    })
  })
})

/** Two-phase planning with the sizes of `c.runs` as the measuring walk: the plan and the runs it walked. */
const planInTwoPhases = (c: { runs: ReadonlyArray<ScannedRun>; policy: RetentionPolicy; now: number }) => {
  const runs = byId(c.runs)
  const planning = planMeasuring({ runs: c.runs.map(({ bytes: _b, complete: _c, ...facts }) => facts), policy: c.policy, now: c.now })
  const walked: Array<string> = []
  for (let next = planning.next(); next !== undefined; next = planning.next()) {
    walked.push(next.runId)
    const { bytes, complete } = runs.get(next.runId)!
    planning.measured({ bytes, complete })
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

  it("asking for a size twice, or giving one not asked for, is a defect", () => {
    const planning = planMeasuring({ runs: [run("a"), run("b")], policy: DEFAULT_RETENTION, now: NOW })
    assert.throws(() => planning.measured({ bytes: 1, complete: true }), /no run was asked for/)
    planning.next()
    assert.throws(() => planning.next(), /size of the last run asked for is missing/)
  })

  it.prop("same decisions as measuring every run; sizes of kept runs exact; removals never undercounted", [caseArb], ([c]) => {
    const full = planPrune(c)
    const { plan } = planInTwoPhases(c)
    assert.deepStrictEqual(fates(plan), fates(full))
    assert.deepStrictEqual(plan.remove.map((d) => d.runId), full.remove.map((d) => d.runId))
    assert.strictEqual(plan.bytesAfter, full.bytesAfter)
    const fullById = new Map(full.decisions.map((d) => [d.runId, d]))
    for (const d of plan.decisions) {
      if (d.measured) {
        assert.strictEqual(d.bytes, fullById.get(d.runId)!.bytes)
      } else {
        // Not measured: removed by age or count whatever its size, its bytes left to the removal walk.
        assert.strictEqual(d.action, "remove")
        assert.include(["age", "count"], d.reason)
        assert.isNull(d.bytes)
      }
    }
    assert.strictEqual(plan.bytesBefore, plan.decisions.every((d) => d.measured) ? full.bytesBefore : null)
  })

  it.prop("walks every active run, no aged run, and young ones only until maxInactiveRuns measured complete", [caseArb], ([c]) => {
    const { walked } = planInTwoPhases(c)
    const runs = byId(c.runs)
    const walkedSet = new Set(walked)
    assert.strictEqual(walkedSet.size, walked.length)
    for (const r of c.runs) if (r.active) assert.isTrue(walkedSet.has(r.runId), r.runId)
    const young = walked.map((id) => runs.get(id)!).filter((r) => !r.active)
    for (const r of young) assert.isFalse(isAged(r, c.policy, c.now), r.runId)
    // Every walked young run but the last was needed: fewer than maxInactiveRuns complete ones before it.
    const completeBefore = young.slice(0, -1).filter((r) => r.complete).length
    assert.isBelow(completeBefore, Math.max(1, c.policy.maxInactiveRuns))
    assert.isAtMost(young.filter((r) => r.complete).length, c.policy.maxInactiveRuns)
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
      assert.strictEqual(d.bytes, r.complete ? r.bytes : null)
      assert.isTrue(d.measured)
    }
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

  it.prop("kept inactive runs: at most maxInactiveRuns, none past maxAge, all measured", [caseArb], ([c]) => {
    const plan = planPrune(c)
    const runs = byId(c.runs)
    const kept = plan.decisions.filter((d) => d.action === "keep")
    assert.isAtMost(kept.length, c.policy.maxInactiveRuns)
    for (const d of kept) {
      assert.isAtMost(c.now - d.lastUsedAt, c.policy.maxAgeMs)
      assert.isTrue(runs.get(d.runId)!.complete)
    }
  })

  it.prop("age, count and unmeasured reasons are exact", [caseArb], ([c]) => {
    const plan = planPrune(c)
    const runs = byId(c.runs)
    // Newest first, the young inactive runs measured complete ahead of each run take the kept places.
    let completeAhead = 0
    for (const d of plan.decisions) {
      const r = runs.get(d.runId)!
      if (r.active) continue
      const aged = isAged(r, c.policy, c.now)
      const beyond = !aged && completeAhead >= c.policy.maxInactiveRuns
      assert.strictEqual(d.reason === "age", aged, d.runId)
      assert.strictEqual(d.reason === "count", beyond, d.runId)
      assert.strictEqual(d.reason === "unmeasured", !aged && !beyond && !r.complete, d.runId)
      if (!aged && r.complete) completeAhead++
    }
  })

  it.prop("bytes: with every size known, the kept total fits or only active runs remain", [caseArb], ([c]) => {
    fc.pre(c.runs.every((r) => r.complete))
    const plan = planPrune(c)
    const total = (ds: ReadonlyArray<PlanDecision>) => ds.reduce((s, d) => s + d.bytes!, 0)
    const remaining = plan.decisions.filter((d) => d.action !== "remove")
    assert.strictEqual(plan.bytesBefore, total(plan.decisions))
    assert.strictEqual(plan.bytesAfter, total(remaining))
    assert.isTrue(plan.bytesAfter! <= c.policy.maxBytes || remaining.every((d) => d.action === "active"))
  })

  it.prop("bytes: nothing goes for bytes when the total already fits; otherwise only as much as needed, oldest first", [caseArb], ([c]) => {
    const plan = planPrune(c)
    const runs = byId(c.runs)
    const activeUnknown = c.runs.some((r) => r.active && !r.complete)
    const byBytes = plan.decisions.filter((d) => d.reason === "bytes")
    if (c.runs.every((r) => r.complete) && c.runs.reduce((s, r) => s + r.bytes, 0) <= c.policy.maxBytes) {
      assert.strictEqual(byBytes.length, 0)
    }
    if (byBytes.length > 0 && !activeUnknown) {
      // Putting back the newest run removed for bytes would break the budget again.
      assert.isAbove(plan.bytesAfter! + byBytes[0]!.bytes!, c.policy.maxBytes)
    }
    // Every run removed for bytes is older than every kept inactive run.
    const lastKept = plan.decisions.map((d) => d.action).lastIndexOf("keep")
    for (const d of byBytes) assert.isAbove(plan.decisions.indexOf(d), lastKept)
    for (const d of byBytes) assert.isFalse(runs.get(d.runId)!.active)
  })

  it.prop("an incomplete inactive run is always removed; an incomplete active run removes every inactive run", [caseArb], ([c]) => {
    const plan = planPrune(c)
    const runs = byId(c.runs)
    const activeUnknown = c.runs.some((r) => r.active && !r.complete)
    for (const d of plan.decisions) {
      const r = runs.get(d.runId)!
      if (!r.active && (!r.complete || activeUnknown)) assert.strictEqual(d.action, "remove")
    }
    assert.strictEqual(plan.bytesBefore === null, c.runs.some((r) => !r.complete))
    assert.strictEqual(plan.bytesAfter === null, activeUnknown)
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
  /** The facade's declared interface (issue 3); the schema type must be assignable to it. */
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

describe("boundManifestTimes (far-future stamps, issue 12 point 7)", () => {
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
