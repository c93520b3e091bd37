/**
 * Truncation is said, not hidden (docs/work-runs.md "Retention", "CLI quick tour"), over random trees and budgets in the
 * Memory world: random tenants (released runs of random sizes and depths, stray entries) read by `work ls`,
 * `status` and a prune under random scan bounds. Judged against the truth (every tree walked without a bound):
 * - `truncated` is true exactly when a tenant holds more entries than the bound examines, and `stoppedBy`
 *   then says how many were left and the flag that raises it;
 * - a size is exact (`complete`) exactly when its walk fit in what was left of its tenant's budget and depth,
 *   "not measured" exactly when nothing was left; `incomplete` is true exactly when some size is not exact,
 *   and `stoppedBy` then counts every such size;
 * - under the scan's own entry budget, a tenant is `truncated` exactly when its counts fall short of what it
 *   holds, and `stoppedBy` names the budget;
 * - a prune whose report is not `incomplete` states du's numbers of what it examined; one that is says which
 *   bound stopped a walk and how many runs it left; one whose bounds bind nowhere is never `incomplete`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, FastCheck as fc, Layer, TestClock } from "effect"
import { encodeManifest } from "../../src/domain/Formats.js"
import { DEFAULT_RETENTION } from "../../src/domain/Retention.js"
import type { StoppedBy } from "../../src/domain/StoppedBy.js"
import { isTenantLibraryEntry } from "../../src/domain/TenantEntries.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { Inventory, type Size } from "../../src/services/Inventory.js"
import { AGENT_DIR, processLayer, spawnProcess } from "../support/memoryProcess.js"

const DAY = 24 * 60 * 60 * 1000
const WORK = `${AGENT_DIR}/work`
const TENANTS = [["tools", "bash"], ["tools", "git"], ["mcp", "fs"]] as const

interface RunSpec {
  readonly ageDays: number
  readonly files: number
  /** The files sit two directories down: `maxDepth` 1 or 2 cuts the walk short. */
  readonly nested: boolean
}

const runArb: fc.Arbitrary<RunSpec> = fc.record({
  ageDays: fc.constantFrom(0, 1, 5, 40),
  files: fc.integer({ min: 0, max: 6 }),
  nested: fc.integer({ min: 0, max: 2 }).map((n) => n === 0)
})

const tenantArb = fc.record({
  runs: fc.array(runArb, { maxLength: 6 }),
  /** Entries that are no run (a directory without a manifest): they count against the scan bound too. */
  strays: fc.integer({ min: 0, max: 2 })
})

const caseArb = fc.record({
  tenants: fc.array(tenantArb, { minLength: 1, maxLength: TENANTS.length }),
  maxScannedRuns: fc.oneof(fc.integer({ min: 0, max: 8 }), fc.constant(DEFAULT_RETENTION.maxScannedRuns)),
  maxEntries: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 50 }) }, { weight: 1, arbitrary: fc.constant(DEFAULT_RETENTION.maxEntries) }),
  maxDepth: fc.constantFrom(1, 2, DEFAULT_RETENTION.maxDepth),
  policy: fc.record({
    maxInactiveRuns: fc.integer({ min: 0, max: 6 }),
    maxBytes: fc.oneof(fc.integer({ min: 0, max: 40_000 }), fc.constant(DEFAULT_RETENTION.maxBytes)),
    maxAgeMs: fc.constantFrom(2 * DAY, 30 * DAY)
  }),
  dryRun: fc.boolean()
})
type Case = typeof caseArb extends fc.Arbitrary<infer A> ? A : never

const UNBOUNDED = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }

/** The world of a case: each tenant's runs planted as a release leaves them, its strays, nothing else. */
const build = (c: Case) =>
  Effect.gen(function*() {
    const world = MemoryWorld.make({ journal: false })
    const p = yield* spawnProcess(world, { heartbeats: false })
    yield* TestClock.adjust(100 * DAY)
    const now = yield* TestClock.currentTimeMillis
    const tenants = c.tenants.map((_, i) => ({ category: TENANTS[i]![0], tenant: TENANTS[i]![1], dir: `${WORK}/${TENANTS[i]![0]}/${TENANTS[i]![1]}` }))
    for (const dir of [WORK, ...new Set(tenants.map((t) => `${WORK}/${t.category}`)), ...tenants.map((t) => t.dir)]) {
      yield* world.mkdirFixture(dir, { mode: 0o700 })
    }
    for (const [i, spec] of c.tenants.entries()) {
      const { category, tenant, dir } = tenants[i]!
      for (const [r, run] of spec.runs.entries()) {
        const runId = `r${r}`
        const at = now - run.ageDays * DAY - r
        const manifest = { version: 2 as const, category, tenant, runId, kind: "named" as const, createdAt: at, createdBy: { host: "h1", pid: 1 }, releasedAt: at }
        yield* world.writeFixture(`${dir}/${runId}/.pi-work-run.json`, encodeManifest(manifest))
        for (let f = 0; f < run.files; f++) yield* world.writeFixture(`${dir}/${runId}/${run.nested ? "d/e/" : ""}f${f}`, "x".repeat(100 * (f + 1)))
      }
      for (let s = 0; s < spec.strays; s++) yield* world.writeFixture(`${dir}/stray${s}/file`, "s")
    }
    const ctx = yield* Layer.build(Inventory.layer.pipe(Layer.provide(processLayer(world, { heartbeats: false }))))
    return { world, p, tenants, inventory: Context.get(ctx, Inventory) }
  })

/** The candidates a scan bound examines: the first `limit` of the tenant's entries that are not the library's. */
const candidatesOf = (p: { fs: { readDirectory: (path: string) => Effect.Effect<ReadonlyArray<{ name: string }>, unknown> } }, dir: string) =>
  Effect.map(Effect.orDie(p.fs.readDirectory(dir)), (entries) => entries.map((e) => e.name).filter((n) => !isTenantLibraryEntry(n)))

const leftOf = (stoppedBy: ReadonlyArray<StoppedBy>, tag: StoppedBy["_tag"]) => stoppedBy.find((s) => s._tag === tag)?.left

describe("truncation is said, not hidden (Memory, random trees and budgets)", () => {
  it.effect.prop(
    "work ls and status: truncated, incomplete and every size's exactness are what the bounds make them; stoppedBy counts each",
    [caseArb],
    ([c]) =>
      Effect.scoped(Effect.gen(function*() {
        const { p, tenants, inventory } = yield* build(c)
        const limits = { maxRunsPerTenant: c.maxScannedRuns, maxEntries: c.maxEntries, maxDepth: c.maxDepth }
        const list = yield* inventory.listRuns(undefined, limits)
        const context = JSON.stringify({ c, list })
        assert.deepStrictEqual(list.errors, [], context)

        let cutTenants = 0
        let notListed = 0
        let inexact = 0
        for (const t of tenants) {
          const candidates = yield* candidatesOf(p, t.dir)
          const examined = candidates.slice(0, c.maxScannedRuns)
          if (candidates.length > c.maxScannedRuns) {
            cutTenants++
            notListed += candidates.length - c.maxScannedRuns
          }
          const rows = list.runs.filter((r) => r.category === t.category && r.tenant === t.tenant)
          // Exactly the examined runs are listed; their sizes share the tenant's budget in the listing's order.
          assert.deepStrictEqual(rows.map((r) => r.runId).sort(), examined.filter((n) => n.startsWith("r")).sort(), context)
          let remaining = c.maxEntries
          for (const row of rows) {
            const truth = yield* Effect.orDie(p.fs.measureTree(row.path, UNBOUNDED))
            const atDepth = yield* Effect.orDie(p.fs.measureTree(row.path, { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: c.maxDepth }))
            const size: Size = row.size
            assert.strictEqual(size.measured, remaining > 0, `${row.path} measured ${context}`)
            assert.strictEqual(size.complete, remaining > 0 && atDepth.complete && atDepth.entries <= remaining, `${row.path} complete ${context}`)
            if (size.complete) assert.deepStrictEqual([size.bytes, size.apparentBytes], [truth.bytes, truth.apparentBytes], context)
            else {
              inexact++
              assert.isAtMost(size.bytes, truth.bytes, context)
              assert.isAtMost(size.apparentBytes, truth.apparentBytes, context)
            }
            remaining -= size.entries
          }
        }
        assert.strictEqual(list.truncated, cutTenants > 0, context)
        assert.strictEqual(leftOf(list.stoppedBy, "MaxScannedRuns"), cutTenants > 0 ? notListed : undefined, context)
        assert.strictEqual(list.incomplete, inexact > 0, context)
        assert.strictEqual((leftOf(list.stoppedBy, "MaxEntries") ?? 0) + (leftOf(list.stoppedBy, "MaxDepth") ?? 0), inexact, context)
        for (const s of list.stoppedBy) assert.include(["--max-scanned-runs", "--max-entries", "--max-depth"], s.flag, context)

        // status: each tenant measured whole, within a budget of its own.
        const summary = yield* inventory.summary(limits)
        let inexactTenants = 0
        for (const [i, t] of tenants.entries()) {
          const truth = yield* Effect.orDie(p.fs.measureTree(t.dir, UNBOUNDED))
          const atDepth = yield* Effect.orDie(p.fs.measureTree(t.dir, { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: c.maxDepth }))
          const size = summary.tenants.find((s) => s.category === t.category && s.tenant === t.tenant)!.size
          assert.strictEqual(size.complete, c.maxEntries > 0 && atDepth.complete && atDepth.entries <= c.maxEntries, `tenant ${i} ${context}`)
          if (size.complete) assert.deepStrictEqual([size.bytes, size.apparentBytes], [truth.bytes, truth.apparentBytes], context)
          else inexactTenants++
        }
        assert.strictEqual(summary.truncated, cutTenants > 0, context)
        assert.strictEqual(summary.incomplete, inexactTenants > 0, context)
        assert.strictEqual((leftOf(summary.stoppedBy, "MaxEntries") ?? 0) + (leftOf(summary.stoppedBy, "MaxDepth") ?? 0), inexactTenants, context)
      })),
    { fastCheck: { numRuns: 25 } }
  )

  it.effect.prop(
    "status under the scan's entry budget: a tenant is truncated exactly when its counts fall short of what it holds",
    [caseArb, fc.integer({ min: 0, max: 40 })],
    ([c, maxScanEntries]) =>
      Effect.scoped(Effect.gen(function*() {
        const { p, tenants, inventory } = yield* build(c)
        const summary = yield* inventory.summary({ maxRunsPerTenant: c.maxScannedRuns, maxScanEntries })
        const context = JSON.stringify({ c, maxScanEntries, summary })
        let anyShort = false
        for (const t of tenants) {
          const candidates = yield* candidatesOf(p, t.dir)
          const examinable = Math.min(candidates.length, c.maxScannedRuns)
          const row = summary.tenants.find((s) => s.category === t.category && s.tenant === t.tenant)
          // A tenant the budget never reached is not listed at all: the stop below says so.
          if (row === undefined) {
            anyShort = true
            continue
          }
          const counted = row.runs + row.unowned
          assert.isAtMost(counted, examinable, context)
          anyShort ||= counted < examinable
          assert.strictEqual(row.truncated, counted < examinable || candidates.length > c.maxScannedRuns, `${t.dir} ${context}`)
        }
        // Whatever the budget left unread is said, with the flag that raises it.
        if (anyShort) assert.strictEqual(summary.stoppedBy.find((s) => s._tag === "MaxScanEntries")?.flag, "--max-scan-entries", context)
        assert.isTrue(!summary.truncated || summary.tenants.some((t) => t.truncated) || leftOf(summary.stoppedBy, "MaxScanEntries") !== undefined, context)
      })),
    { fastCheck: { numRuns: 40 } }
  )

  it.effect.prop(
    "a prune: truncated exactly when the tenant holds more entries than maxScannedRuns; not incomplete, its numbers are du's; bounds that bind nowhere leave it exact",
    [caseArb],
    ([c]) =>
      Effect.scoped(Effect.gen(function*() {
        const { p, tenants } = yield* build(c)
        const t = tenants[0]!
        const candidates = yield* candidatesOf(p, t.dir)
        const examinedRuns = candidates.slice(0, c.maxScannedRuns).filter((n) => n.startsWith("r"))
        const truth = new Map<string, { bytes: number; apparentBytes: number; entries: number; deep: boolean }>()
        for (const runId of examinedRuns) {
          const whole = yield* Effect.orDie(p.fs.measureTree(`${t.dir}/${runId}`, UNBOUNDED))
          const atDepth = yield* Effect.orDie(p.fs.measureTree(`${t.dir}/${runId}`, { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: c.maxDepth }))
          truth.set(runId, { bytes: whole.bytes, apparentBytes: whole.apparentBytes, entries: whole.entries, deep: !atDepth.complete })
        }
        const policy = { ...c.policy, maxScannedRuns: c.maxScannedRuns, maxEntries: c.maxEntries, maxDepth: c.maxDepth }
        const report = yield* p.workRuns.prune({ category: t.category, tenant: t.tenant, policy, dryRun: c.dryRun })
        const context = JSON.stringify({ c, truth: [...truth], report })
        assert.deepStrictEqual(report.errors, [], context)

        const truncated = candidates.length > c.maxScannedRuns
        assert.strictEqual(report.truncated, truncated, context)
        assert.strictEqual(report.scannedRuns, Math.min(candidates.length, c.maxScannedRuns), context)
        const scanStop = report.stoppedBy.find((s) => s._tag === "MaxScannedRuns")
        assert.deepStrictEqual(scanStop && [scanStop.limit, scanStop.left, scanStop.flag], truncated ? [c.maxScannedRuns, candidates.length - c.maxScannedRuns, "--max-scanned-runs"] : undefined, context)

        // A total it cannot state makes it incomplete (a run cut short whose removal counted it whole leaves the
        // totals exact, and the report still incomplete: its cut-short entry is a lower bound).
        if (report.bytesBefore === null || report.apparentBytesBefore === null) assert.isTrue(report.incomplete, context)
        // Not incomplete: every number stated is du's of what the prune examined.
        const sum = (ids: ReadonlyArray<string>, of: "bytes" | "apparentBytes") => ids.reduce((s, id) => s + truth.get(id)![of], 0)
        const removed = report.removed.map((r) => r.runId)
        if (!report.incomplete) {
          assert.deepStrictEqual([report.bytesBefore, report.apparentBytesBefore], [sum(examinedRuns, "bytes"), sum(examinedRuns, "apparentBytes")], context)
          const stayed = examinedRuns.filter((id) => !removed.includes(id))
          assert.deepStrictEqual([report.bytesAfter, report.apparentBytesAfter], [sum(stayed, "bytes"), sum(stayed, "apparentBytes")], context)
          for (const r of report.removed) assert.deepStrictEqual([r.bytes, r.apparentBytes], [truth.get(r.runId)!.bytes, truth.get(r.runId)!.apparentBytes], context)
        } else {
          // Said, not hidden: a size bound stopped some walk, and the report counts the runs it left.
          const left = (leftOf(report.stoppedBy, "MaxEntries") ?? 0) + (leftOf(report.stoppedBy, "MaxDepth") ?? 0)
          assert.isAbove(left, 0, context)
        }
        // Bounds that bind nowhere (the examined runs fit in the entry budget, no walk reaches maxDepth): exact.
        const entries = [...truth.values()].reduce((s, x) => s + x.entries, 0)
        if (c.maxEntries >= entries && [...truth.values()].every((x) => !x.deep)) {
          assert.isFalse(report.incomplete, context)
          assert.deepStrictEqual(report.stoppedBy.filter((s) => s._tag !== "MaxScannedRuns"), [], context)
        }
      })),
    { fastCheck: { numRuns: 40 } }
  )
})
