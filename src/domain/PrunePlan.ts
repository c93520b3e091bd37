/**
 * The prune plan (README "Retention"): one pure function from (scanned runs, policy, now) to decisions with reasons.
 * Dry run and execution both call it, so what a dry run shows is what an execution attempts.
 *
 * Only owned runs are given to the plan: unowned entries never reach it, so they can never be selected.
 *
 * Measuring is the costly part of a prune (a walk of every run, before the removal walk of the victims), so
 * the plan is made in two phases (README "Retention"): `planMeasuring` says which runs need a size before
 * the plan (active runs, and the young inactive runs newest first until `maxInactiveRuns` of them measured
 * complete); every other run is removed by age or count whatever its size, and its bytes are counted by the
 * removal walk instead. The decisions are those `planPrune` makes with every run measured.
 */
import * as Schema from "effect/Schema"
import type { RetentionPolicy } from "./Retention.js"

/** What the scan knows of a run without walking it (manifest and leases). */
export interface RunFacts {
  readonly runId: string
  readonly path: string
  readonly createdAt: number
  readonly releasedAt: number | undefined
  readonly newestHeartbeatAt: number | undefined
  /** Has a live lease (or one whose liveness could not be disproved). */
  readonly active: boolean
}

/** What a measuring walk found. */
export interface RunSize {
  /** Measured bytes; a lower bound when `!complete`. */
  readonly bytes: number
  /** The size walk finished within the budget. */
  readonly complete: boolean
}

export interface ScannedRun extends RunFacts, RunSize {}

export const PruneReason = Schema.Literal("age", "count", "bytes", "unmeasured")
export type PruneReason = typeof PruneReason.Type

export interface PlanDecision {
  readonly runId: string
  readonly path: string
  readonly action: "remove" | "keep" | "active"
  /** Present exactly when `action === "remove"`. */
  readonly reason?: PruneReason
  /** Exact size, or `null` when the walk was cut short or the run was not measured (see `measured`). */
  readonly bytes: number | null
  /** False for a run removed by age or count without a measuring walk: its removal walk counts its bytes. */
  readonly measured: boolean
  readonly lastUsedAt: number
}

export interface PrunePlan {
  /** One decision per run, newest first (lastUsedAt desc, then runId desc). */
  readonly decisions: ReadonlyArray<PlanDecision>
  /** The removals, oldest first: an interrupted execution has then removed the most deserving runs. */
  readonly remove: ReadonlyArray<PlanDecision>
  /** Total of every run; `null` when any run's size is incomplete. */
  readonly bytesBefore: number | null
  /** Total of the runs the plan keeps (active included); `null` when any of them is incomplete. */
  readonly bytesAfter: number | null
}

/** A manifest's timestamps after the far-future rule, with what was set aside (to report). */
export interface BoundedManifestTimes {
  readonly createdAt: number
  readonly releasedAt: number | undefined
  /** One sentence per timestamp set aside; empty when both were plausible. */
  readonly farFuture: ReadonlyArray<string>
}

/**
 * A manifest `createdAt` / `releasedAt` beyond now + the remote lease TTL cannot be a real
 * stamp (a clock far off, or a forged file) and would pin the run forever. It does not count for last use;
 * in its place counts the manifest file's mtime capped at now (the last time anyone wrote it), or `now` when
 * the mtime is unknown — so such a run ages from the moment it was seen, never from the future.
 */
export const boundManifestTimes = (input: {
  readonly createdAt: number
  readonly releasedAt: number | undefined
  readonly manifestMtimeMs: number | null
  readonly now: number
  readonly remoteLeaseTtlMs: number
}): BoundedManifestTimes => {
  const { now } = input
  const limit = now + input.remoteLeaseTtlMs
  const fallback = Math.min(input.manifestMtimeMs ?? now, now)
  const farFuture: Array<string> = []
  const bound = (field: string, at: number): number => {
    if (at <= limit) return at
    farFuture.push(`manifest ${field} is ${at - now} ms in the future (beyond the ttl ${input.remoteLeaseTtlMs} ms); the manifest's mtime capped at now counts instead`)
    return fallback
  }
  const createdAt = bound("createdAt", input.createdAt)
  const releasedAt = input.releasedAt === undefined ? undefined : bound("releasedAt", input.releasedAt)
  return { createdAt, releasedAt, farFuture }
}

/** Last use = latest of `releasedAt`, the newest lease heartbeat, and `createdAt`. */
export const lastUsedAt = (run: RunFacts): number =>
  Math.max(run.createdAt, run.releasedAt ?? -Infinity, run.newestHeartbeatAt ?? -Infinity)

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
const compareNumbers = (a: number, b: number): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Newest first: lastUsedAt desc, runId desc. The remaining keys only matter for duplicate run ids (which a
 * scan of one tenant does not produce) and make the order total over the facts, so the plan never depends
 * on input order. (Sizes are no key: both phases of `planMeasuring` must see one order.)
 */
const newestFirst = (a: { run: RunFacts; used: number }, b: { run: RunFacts; used: number }): number =>
  compareNumbers(b.used, a.used) ||
  compareStrings(b.run.runId, a.run.runId) ||
  compareStrings(b.run.path, a.run.path) ||
  compareNumbers(Number(b.run.active), Number(a.run.active)) ||
  compareNumbers(b.run.createdAt, a.run.createdAt) ||
  compareNumbers(b.run.releasedAt ?? -Infinity, a.run.releasedAt ?? -Infinity) ||
  compareNumbers(b.run.newestHeartbeatAt ?? -Infinity, a.run.newestHeartbeatAt ?? -Infinity)

/**
 * Rules, for inactive runs only (active runs are never removed, whatever the limits):
 * 1. last use older than `maxAgeMs` → "age";
 * 2. beyond the newest `maxInactiveRuns` of the inactive runs still kept → "count";
 * 3. size incomplete → "unmeasured" (it counts as over the byte budget, never undercounted; it takes no
 *    place among the kept runs);
 * 4. oldest first while the total of the kept runs, active included, exceeds `maxBytes` → "bytes". An
 *    incomplete active run makes the total unknown, i.e. over budget, so every kept inactive run goes.
 * The first rule that applies names the reason. Age and count come first because they need no size: a run
 * they remove is never measured before its removal (`planMeasuring`).
 */
export const planPrune = (input: {
  readonly runs: ReadonlyArray<ScannedRun>
  readonly policy: RetentionPolicy
  readonly now: number
}): PrunePlan => planSized(input.runs.map((run) => ({ run, size: run })), input.policy, input.now)

/** The plan over runs whose size is known (`RunSize`) or was not needed (`undefined`: age or count). */
const planSized = (
  runs: ReadonlyArray<{ readonly run: RunFacts; readonly size: RunSize | undefined }>,
  policy: RetentionPolicy,
  now: number
): PrunePlan => {
  const ordered = runs.map(({ run, size }) => ({ run, size, used: lastUsedAt(run) })).sort(newestFirst)
  const bytesOf = (size: RunSize | undefined) => (size === undefined ? 0 : size.bytes)
  const completeOf = (size: RunSize | undefined) => size !== undefined && size.complete

  const reasons = new Map<number, PruneReason>()
  let keptInactive = 0
  ordered.forEach(({ run, size, used }, index) => {
    if (run.active) return
    if (now - used > policy.maxAgeMs) reasons.set(index, "age")
    else if (keptInactive >= policy.maxInactiveRuns) reasons.set(index, "count")
    else if (size === undefined) throw new Error(`planPrune: run ${run.runId} may be kept but was not measured`)
    else if (!size.complete) reasons.set(index, "unmeasured")
    else keptInactive++
  })

  const kept = (index: number) => !reasons.has(index)
  const activeUnknown = ordered.some(({ run, size }) => run.active && !completeOf(size))
  let total = ordered.reduce((sum, { size }, index) => (kept(index) ? sum + bytesOf(size) : sum), 0)
  for (let index = ordered.length - 1; index >= 0; index--) {
    if (!activeUnknown && total <= policy.maxBytes) break
    const { run, size } = ordered[index]!
    if (run.active || !kept(index)) continue
    reasons.set(index, "bytes")
    total -= bytesOf(size)
  }

  const decisions: Array<PlanDecision> = ordered.map(({ run, size, used }, index) => {
    const base = { runId: run.runId, path: run.path, bytes: completeOf(size) ? bytesOf(size) : null, measured: size !== undefined, lastUsedAt: used }
    if (run.active) return { ...base, action: "active" }
    const reason = reasons.get(index)
    return reason === undefined ? { ...base, action: "keep" } : { ...base, action: "remove", reason }
  })

  const sumOf = (sizes: ReadonlyArray<RunSize | undefined>) => (sizes.every(completeOf) ? sizes.reduce((t, s) => t + bytesOf(s), 0) : null)
  return {
    decisions,
    remove: decisions.filter((d) => d.action === "remove").reverse(),
    bytesBefore: sumOf(ordered.map(({ size }) => size)),
    bytesAfter: sumOf(ordered.filter((_, index) => kept(index)).map(({ size }) => size))
  }
}

/** A plan being made in two phases: sizes are asked for one run at a time, then the plan is made. */
export interface MeasuringPlan {
  /** The next run whose size the plan needs, or `undefined` once it needs no more. */
  readonly next: () => RunFacts | undefined
  /** The size of the run `next` gave. */
  readonly measured: (size: RunSize) => void
  /** The plan: the decisions `planPrune` makes with every run measured (unmeasured runs have `bytes: null`). */
  readonly finish: () => PrunePlan
}

/**
 * Two-phase planning. Sizes are needed for the active runs (they count towards `maxBytes`) and for the
 * young inactive runs, newest first, until `maxInactiveRuns` of them measured complete: every older young
 * run is beyond the count, and every aged run goes by age, whatever their sizes. A run cut short by its
 * walk takes no kept place, so the next one is measured instead. Deterministic and free of I/O: the caller
 * does the measuring (the pruner, within its entry budget).
 */
export const planMeasuring = (input: {
  readonly runs: ReadonlyArray<RunFacts>
  readonly policy: RetentionPolicy
  readonly now: number
}): MeasuringPlan => {
  const { policy, now } = input
  const ordered = input.runs.map((run) => ({ run, used: lastUsedAt(run) })).sort(newestFirst)
  const young = ordered.filter(({ run, used }) => !run.active && now - used <= policy.maxAgeMs).map(({ run }) => run)
  const queue = [...ordered.filter(({ run }) => run.active).map(({ run }) => run), ...young]
  const sizes = new Map<RunFacts, RunSize>()
  let position = 0
  let completeYoung = 0
  let asked: RunFacts | undefined
  return {
    next: () => {
      if (asked !== undefined) throw new Error("planMeasuring: the size of the last run asked for is missing")
      const run = queue[position]
      if (run === undefined || (!run.active && completeYoung >= policy.maxInactiveRuns)) return undefined
      position++
      return (asked = run)
    },
    measured: (size) => {
      if (asked === undefined) throw new Error("planMeasuring: no run was asked for")
      sizes.set(asked, size)
      if (!asked.active && size.complete) completeYoung++
      asked = undefined
    },
    finish: () => planSized(input.runs.map((run) => ({ run, size: sizes.get(run) })), policy, now)
  }
}
