/**
 * The prune plan (SPEC WR8): one pure function from (scanned runs, policy, now) to decisions with reasons.
 * Dry run and execution both call it, so what a dry run shows is what an execution attempts.
 *
 * Only owned runs are given to the plan: unowned entries never reach it, so they can never be selected.
 */
import * as Schema from "effect/Schema"
import type { RetentionPolicy } from "./Retention.js"

export interface ScannedRun {
  readonly runId: string
  readonly path: string
  readonly createdAt: number
  readonly releasedAt: number | undefined
  readonly newestHeartbeatAt: number | undefined
  /** Has a live lease (or one whose liveness could not be disproved). */
  readonly active: boolean
  /** Measured bytes; a lower bound when `!complete`. */
  readonly bytes: number
  /** The size walk finished within the budget. */
  readonly complete: boolean
}

export const PruneReason = Schema.Literal("age", "count", "bytes", "unmeasured")
export type PruneReason = typeof PruneReason.Type

export interface PlanDecision {
  readonly runId: string
  readonly path: string
  readonly action: "remove" | "keep" | "active"
  /** Present exactly when `action === "remove"`. */
  readonly reason?: PruneReason
  /** Exact size, or `null` when the walk was cut short. */
  readonly bytes: number | null
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
 * Issue 12 point 7: a manifest `createdAt` / `releasedAt` beyond now + the remote lease TTL cannot be a real
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
export const lastUsedAt = (run: ScannedRun): number =>
  Math.max(run.createdAt, run.releasedAt ?? -Infinity, run.newestHeartbeatAt ?? -Infinity)

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
const compareNumbers = (a: number, b: number): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Newest first: lastUsedAt desc, runId desc. The remaining keys only matter for duplicate run ids (which a
 * scan of one tenant does not produce) and make the order total, so the plan never depends on input order.
 */
const newestFirst = (a: { run: ScannedRun; used: number }, b: { run: ScannedRun; used: number }): number =>
  compareNumbers(b.used, a.used) ||
  compareStrings(b.run.runId, a.run.runId) ||
  compareStrings(b.run.path, a.run.path) ||
  compareNumbers(Number(b.run.active), Number(a.run.active)) ||
  compareNumbers(Number(b.run.complete), Number(a.run.complete)) ||
  compareNumbers(b.run.bytes, a.run.bytes) ||
  compareNumbers(b.run.createdAt, a.run.createdAt) ||
  compareNumbers(b.run.releasedAt ?? -Infinity, a.run.releasedAt ?? -Infinity) ||
  compareNumbers(b.run.newestHeartbeatAt ?? -Infinity, a.run.newestHeartbeatAt ?? -Infinity)

const sumKnown = (runs: ReadonlyArray<ScannedRun>): number | null =>
  runs.some((r) => !r.complete) ? null : runs.reduce((total, r) => total + r.bytes, 0)

/**
 * Rules, for inactive runs only (active runs are never removed, whatever the limits):
 * 1. last use older than `maxAgeMs` → "age";
 * 2. size incomplete → "unmeasured" (it counts as over the byte budget, never undercounted);
 * 3. beyond the newest `maxInactiveRuns` of the inactive runs still kept → "count";
 * 4. oldest first while the total of the kept runs, active included, exceeds `maxBytes` → "bytes". An
 *    incomplete active run makes the total unknown, i.e. over budget, so every kept inactive run goes.
 * The first rule that applies names the reason.
 */
export const planPrune = (input: {
  readonly runs: ReadonlyArray<ScannedRun>
  readonly policy: RetentionPolicy
  readonly now: number
}): PrunePlan => {
  const { policy, now } = input
  const ordered = input.runs.map((run) => ({ run, used: lastUsedAt(run) })).sort(newestFirst)

  const reasons = new Map<number, PruneReason>()
  let keptInactive = 0
  ordered.forEach(({ run, used }, index) => {
    if (run.active) return
    if (now - used > policy.maxAgeMs) reasons.set(index, "age")
    else if (!run.complete) reasons.set(index, "unmeasured")
    else if (keptInactive >= policy.maxInactiveRuns) reasons.set(index, "count")
    else keptInactive++
  })

  const kept = (index: number) => !reasons.has(index)
  const activeUnknown = ordered.some(({ run }) => run.active && !run.complete)
  let total = ordered.reduce((sum, { run }, index) => (kept(index) ? sum + run.bytes : sum), 0)
  for (let index = ordered.length - 1; index >= 0; index--) {
    if (!activeUnknown && total <= policy.maxBytes) break
    const { run } = ordered[index]!
    if (run.active || !kept(index)) continue
    reasons.set(index, "bytes")
    total -= run.bytes
  }

  const decisions: Array<PlanDecision> = ordered.map(({ run, used }, index) => {
    const base = { runId: run.runId, path: run.path, bytes: run.complete ? run.bytes : null, lastUsedAt: used }
    if (run.active) return { ...base, action: "active" }
    const reason = reasons.get(index)
    return reason === undefined ? { ...base, action: "keep" } : { ...base, action: "remove", reason }
  })

  return {
    decisions,
    remove: decisions.filter((d) => d.action === "remove").reverse(),
    bytesBefore: sumKnown(input.runs),
    bytesAfter: sumKnown(ordered.filter((_, index) => kept(index)).map(({ run }) => run))
  }
}
