/**
 * The prune plan (docs/work-runs.md "Retention"): one pure function from (scanned runs, policy, now) to decisions with reasons.
 * `now` is the file system's clock, and age is judged by `isPastMaxAge`, which no host's clock skew can fool.
 * Dry run and execution both call it, so what a dry run shows is what an execution attempts.
 *
 * Only owned runs are given to the plan: unowned entries never reach it, so they can never be selected.
 *
 * Measuring is the costly part of a prune (a walk of every run, before the removal walk of the victims), so
 * the plan is made in two phases (docs/work-runs.md "Retention"): `planMeasuring` says which runs need a size before
 * the plan (active runs, and the young inactive runs newest first until `maxInactiveRuns` kept places are
 * taken); every other run is removed by age or count whatever its size, and its bytes are counted by the
 * removal walk instead. The decisions are those `planPrune` makes with every run measured.
 *
 * A run's bytes are its disk usage (allocated blocks, what `du` prints: FileSystem `TreeMeasure`); the byte
 * budget counts them, and the apparent size (`du -sb`) rides beside them for the report.
 *
 * What a size is (the walks share one tenant-wide entry budget, `maxEntries`):
 * - exact: the walk finished;
 * - cut short: the walk started and stopped (the budget ran out during it, `maxDepth`, a mount point, a failed
 *   walk). Its bytes are a lower bound and the tenant's unmeasured remainder is attributed to it: it counts as
 *   over the byte budget by itself;
 * - not measured: never walked, because the budget was spent before its turn. Not measured is not over budget:
 *   such a run counts 0 bytes, is never removed by the byte rules, and stays unless age or count removes it
 *   (neither needs a size). One big run therefore never gets its small neighbours deleted.
 */
import * as Schema from "effect/Schema"
import { isFarFuture } from "./Liveness.js"
import type { RetentionPolicy } from "./Retention.js"
import { runSteps, sortSteps, stepDue, type Steps } from "./Steps.js"

/** What the scan knows of a run without walking it (manifest and leases). */
export interface RunFacts {
  readonly runId: string
  readonly path: string
  /** Stamps written by their holders' hosts, on those hosts' wall clocks. */
  readonly createdAt: number
  readonly releasedAt: number | undefined
  readonly newestHeartbeatAt: number | undefined
  /**
   * The newest mtime of its manifest and lease files: when anyone last wrote them (created, heartbeat,
   * released), on the file system's clock. The pruner reads it for every inactive run; when present it alone is
   * the run's last use (`lastUsedAt`).
   */
  readonly fsLastWrittenAt?: number | undefined
  /** Has a live lease (or one whose liveness could not be disproved). */
  readonly active: boolean
}

/** What a measuring walk found. */
export interface RunSize {
  /** Measured disk usage; a lower bound when `!complete`. */
  readonly bytes: number
  /** Measured apparent size (reported beside `bytes`, never budgeted); a lower bound when `!complete`. */
  readonly apparentBytes: number
  /** The size walk finished within the budget. */
  readonly complete: boolean
  /**
   * `false`: the run was never walked, the tenant's entry budget being spent before its turn ("not measured";
   * `bytes` and `complete` then say nothing). Absent or `true`: it was walked.
   */
  readonly walked?: boolean
}

/** The size of a run the pruner did not walk because the tenant's entry budget was already spent. */
export const NOT_MEASURED: RunSize = { bytes: 0, apparentBytes: 0, complete: false, walked: false }

export interface ScannedRun extends RunFacts, RunSize {}

/**
 * Why a run goes. `unmeasured`: its size walk was cut short, so it counts as over the byte budget by itself
 * (a run never walked is "not measured" and never removed for its size).
 */
export const PruneReason = Schema.Literal("age", "count", "bytes", "unmeasured")
export type PruneReason = typeof PruneReason.Type

export interface PlanDecision {
  readonly runId: string
  readonly path: string
  readonly action: "remove" | "keep" | "active"
  /** Present exactly when `action === "remove"`. */
  readonly reason?: PruneReason
  /** Exact disk usage, or `null` when the walk was cut short or the run was not walked (see `measured`). */
  readonly bytes: number | null
  /** Exact apparent size, `null` when `bytes` is. */
  readonly apparentBytes: number | null
  /** What is known of its size for certain: `bytes` when exact, the walk's lower bound when cut short, else 0. */
  readonly bytesAtLeast: number
  /** The same of its apparent size. */
  readonly apparentBytesAtLeast: number
  /**
   * A size walk ran (complete or cut short). False for a run not walked: removed by age or count (its removal
   * walk counts its bytes), or "not measured" because the tenant's entry budget was spent before its turn.
   */
  readonly measured: boolean
  /** Its size walk was cut short: `bytesAtLeast` is a lower bound and the tenant's unmeasured remainder is its own. */
  readonly cutShort: boolean
  readonly lastUsedAt: number
}

export interface PrunePlan {
  /** One decision per run, newest first (lastUsedAt desc, then runId desc). */
  readonly decisions: ReadonlyArray<PlanDecision>
  /** The removals, oldest first: an interrupted execution has then removed the most deserving runs. */
  readonly remove: ReadonlyArray<PlanDecision>
  /** Total of every run; `null` when any run's size is not exact. */
  readonly bytesBefore: number | null
  /** Total of the runs the plan keeps (active included); `null` when any of them is not exact. */
  readonly bytesAfter: number | null
  /** `bytesBefore` and `bytesAfter` in apparent size. */
  readonly apparentBytesBefore: number | null
  readonly apparentBytesAfter: number | null
  /**
   * The active runs alone exceed `maxBytes`, or one of their sizes is not exact: removing inactive runs cannot
   * bring the tenant within `maxBytes`, so none goes for its size ("bytes", "unmeasured").
   */
  readonly activeOverBudget: boolean
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
const NO_FAR_FUTURE: ReadonlyArray<string> = Object.freeze([])

export const boundManifestTimes = (input: {
  readonly createdAt: number
  readonly releasedAt: number | undefined
  readonly manifestMtimeMs: number | null
  readonly now: number
  readonly remoteLeaseTtlMs: number
}): BoundedManifestTimes => {
  const { now, remoteLeaseTtlMs } = input
  const farOff = (at: number | undefined) => at !== undefined && isFarFuture(at, now, remoteLeaseTtlMs)
  // Nearly every manifest: nothing beyond the ttl, nothing to say (a view judges 40,000 of them).
  if (!farOff(input.createdAt) && !farOff(input.releasedAt)) {
    return { createdAt: input.createdAt, releasedAt: input.releasedAt, farFuture: NO_FAR_FUTURE }
  }
  const fallback = Math.min(input.manifestMtimeMs ?? now, now)
  const farFuture: Array<string> = []
  const bound = (field: string, at: number): number => {
    if (!farOff(at)) return at
    farFuture.push(`manifest ${field} is ${at - now} ms in the future (beyond the ttl ${input.remoteLeaseTtlMs} ms); the manifest's mtime capped at now counts instead`)
    return fallback
  }
  const createdAt = bound("createdAt", input.createdAt)
  const releasedAt = input.releasedAt === undefined ? undefined : bound("releasedAt", input.releasedAt)
  return { createdAt, releasedAt, farFuture }
}

/**
 * Last use: when the run's files were last written on the file system's clock (`fsLastWrittenAt`) where that is
 * known; else the latest of the holders' stamps `releasedAt`, the newest lease heartbeat and `createdAt` (a reader
 * that does not look at mtimes: the inventory's display).
 */
export const lastUsedAt = (run: RunFacts): number =>
  run.fsLastWrittenAt ?? Math.max(run.createdAt, run.releasedAt ?? -Infinity, run.newestHeartbeatAt ?? -Infinity)

/**
 * Age across hosts (docs/work-runs.md "Retention"): a run is past `maxAgeMs` when its files were last written longer ago
 * than that, both ends on the file system's clock: `now` is a probe's mtime, its last use its files' mtimes
 * (`fsLastWrittenAt`). The holders' stamps are their hosts' wall clocks: compared with nothing, they cannot make
 * a prune remove a run early or keep it late, whichever clock (the pruner's, a holder's) is off, and by how much.
 * `now` `null`: the file system's clock could not be read, and nothing is past its age.
 */
export const isPastMaxAge = (run: RunFacts, policy: Pick<RetentionPolicy, "maxAgeMs">, now: number | null): boolean =>
  now !== null && now - lastUsedAt(run) > policy.maxAgeMs

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

/** Exact, cut short (walked, stopped: a lower bound), or not measured (never walked: the budget was spent). */
type SizeKind = "exact" | "cut-short" | "not-measured"

const kindOf = (size: RunSize): SizeKind => (size.walked === false ? "not-measured" : size.complete ? "exact" : "cut-short")

/**
 * Removing inactive runs can bring the tenant within `maxBytes` only when the active runs' sizes are exact and
 * together within it. An active run cut short carries the tenant's unmeasured remainder (over budget by
 * itself); one not measured may hold anything: either way no removal is known to help.
 */
const isActiveOverBudget = (activeSizes: ReadonlyArray<RunSize | undefined>, maxBytes: number): boolean => {
  let total = 0
  for (const size of activeSizes) {
    if (size === undefined || kindOf(size) !== "exact") return true
    total += size.bytes
  }
  return total > maxBytes
}

/** A young inactive run within the count takes a kept place unless it goes as "unmeasured" (cut short, and removable for its size). */
const takesKeptPlace = (size: RunSize, activeOverBudget: boolean): boolean => kindOf(size) !== "cut-short" || activeOverBudget

/**
 * Rules, for inactive runs only (active runs are never removed, whatever the limits):
 * 1. last use older than `maxAgeMs` → "age";
 * 2. beyond the newest `maxInactiveRuns` of the inactive runs still kept → "count";
 * 3. size walk cut short → "unmeasured": the tenant's unmeasured remainder is its own, so it counts as over the
 *    byte budget by itself (never undercounted) and takes no kept place;
 * 4. while the kept total (active runs included; a run not measured counts 0) exceeds `maxBytes`, the runs
 *    measured exact are taken oldest first → "bytes"; then every one of them whose bytes still fit beside the
 *    kept total is put back, newest first, so no run goes that the byte budget does not need.
 * Rules 3 and 4 apply only when removing inactive runs can bring the tenant within `maxBytes`, i.e. the active
 * runs' sizes are exact and together within it (`activeOverBudget` false). Otherwise nothing goes for its
 * size and a cut-short run is kept like any other (it takes a kept place): a held huge run never gets its
 * released neighbours deleted. A run "not measured" (never walked: the entry budget was spent before its turn)
 * is never removed by rule 3 or 4: not measured is not over budget. Removing the victims of rules 3 and 4
 * therefore always moves the tenant towards its limits, and each was needed to reach them.
 * The first rule that applies names the reason. Age and count come first because they need no size: a run
 * they remove is never measured before its removal (`planMeasuring`).
 */
export const planPrune = (input: {
  readonly runs: ReadonlyArray<ScannedRun>
  readonly policy: RetentionPolicy
  /** Now on the file system's clock (`isPastMaxAge`); `null` when it could not be read (nothing goes by age). */
  readonly now: number | null
}): PrunePlan => {
  const ordered = input.runs.map((run) => ({ run, size: run as RunSize, used: lastUsedAt(run) })).sort(newestFirst)
  return runSteps(planOrdered(ordered, input.policy, input.now))
}

/** A run in the plan's order, with its last use and its size: known (`RunSize`) or not needed (`undefined`: age or count). */
interface Ordered {
  readonly run: RunFacts
  readonly size: RunSize | undefined
  readonly used: number
}

/** The plan over runs already newest first, in steps (domain/Steps.ts). */
function* planOrdered(ordered: ReadonlyArray<Ordered>, policy: RetentionPolicy, now: number | null): Steps<PrunePlan> {
  const exactOf = (size: RunSize | undefined) => size !== undefined && kindOf(size) === "exact"
  /** What is known for certain: exact bytes, a cut-short walk's lower bound, 0 for a run not walked. */
  const atLeastOf = (size: RunSize | undefined) => (size === undefined || kindOf(size) === "not-measured" ? 0 : size.bytes)
  const apparentAtLeastOf = (size: RunSize | undefined) => (size === undefined || kindOf(size) === "not-measured" ? 0 : size.apparentBytes)
  const activeOverBudget = isActiveOverBudget(ordered.filter(({ run }) => run.active).map(({ size }) => size), policy.maxBytes)

  const reasons = new Map<number, PruneReason>()
  let keptInactive = 0
  for (let index = 0; index < ordered.length; index++) {
    if (stepDue(index)) yield
    const { run, size } = ordered[index]!
    if (run.active) continue
    if (isPastMaxAge(run, policy, now)) reasons.set(index, "age")
    else if (keptInactive >= policy.maxInactiveRuns) reasons.set(index, "count")
    else if (size === undefined) throw new Error(`planPrune: run ${run.runId} may be kept but was not measured`)
    else if (!takesKeptPlace(size, activeOverBudget)) reasons.set(index, "unmeasured")
    else keptInactive++
  }
  yield

  const kept = (index: number) => !reasons.has(index)
  if (!activeOverBudget) {
    // Here every kept size is exact or not measured (a cut-short inactive run went by rule 3): the total is known
    // but for what was never walked, which counts 0.
    let total = ordered.reduce((sum, { size }, index) => (kept(index) ? sum + atLeastOf(size) : sum), 0)
    const taken: Array<number> = []
    yield
    for (let index = ordered.length - 1; index >= 0 && total > policy.maxBytes; index--) {
      if (stepDue(index)) yield
      const { run, size } = ordered[index]!
      if (run.active || !kept(index) || !exactOf(size)) continue
      taken.push(index)
      total -= size!.bytes
    }
    // The active total fits, so the loop ends within the budget; a victim not needed for that is put back.
    for (const index of taken.reverse()) {
      const bytes = ordered[index]!.size!.bytes
      if (total + bytes <= policy.maxBytes) total += bytes
      else reasons.set(index, "bytes")
    }
  }

  // Each decision one object literal: spreading a shared part into 10,000 of them cost ~20 ms of CPU, one
  // block of the event loop during a background prune (BENCHMARKS.md).
  yield
  const decisions = new Array<PlanDecision>(ordered.length)
  for (let index = 0; index < ordered.length; index++) {
    if (stepDue(index)) yield
    const { run, size, used } = ordered[index]!
    const kind = size === undefined ? undefined : kindOf(size)
    const bytes = exactOf(size) ? size!.bytes : null
    const apparentBytes = exactOf(size) ? size!.apparentBytes : null
    const bytesAtLeast = atLeastOf(size)
    const apparentBytesAtLeast = apparentAtLeastOf(size)
    const measured = kind === "exact" || kind === "cut-short"
    const cutShort = kind === "cut-short"
    const reason = run.active ? undefined : reasons.get(index)
    const { runId, path } = run
    decisions[index] = reason === undefined
      ? { runId, path, bytes, apparentBytes, bytesAtLeast, apparentBytesAtLeast, measured, cutShort, lastUsedAt: used, action: run.active ? "active" : "keep" }
      : { runId, path, bytes, apparentBytes, bytesAtLeast, apparentBytesAtLeast, measured, cutShort, lastUsedAt: used, action: "remove", reason }
  }
  yield

  const sumOf = (sizes: ReadonlyArray<RunSize | undefined>, of: (size: RunSize) => number) =>
    sizes.every(exactOf) ? sizes.reduce((t, s) => t + of(s!), 0) : null
  const all = ordered.map(({ size }) => size)
  const keptSizes = ordered.filter((_, index) => kept(index)).map(({ size }) => size)
  return {
    decisions,
    remove: decisions.filter((d) => d.action === "remove").reverse(),
    bytesBefore: sumOf(all, (s) => s.bytes),
    bytesAfter: sumOf(keptSizes, (s) => s.bytes),
    apparentBytesBefore: sumOf(all, (s) => s.apparentBytes),
    apparentBytesAfter: sumOf(keptSizes, (s) => s.apparentBytes),
    activeOverBudget
  }
}

/** A plan being made in two phases: sizes are asked for one run at a time, then the plan is made. */
export interface MeasuringPlan {
  /** The next run whose size the plan needs, or `undefined` once it needs no more. */
  readonly next: () => RunFacts | undefined
  /** The size of the run `next` gave (`NOT_MEASURED` when the entry budget was spent before its walk). */
  readonly measured: (size: RunSize) => void
  /** The plan: the decisions `planPrune` makes with every run measured (runs not walked have `bytes: null`). */
  readonly finish: () => PrunePlan
  /** `finish` in steps (domain/Steps.ts). */
  readonly finishSteps: () => Steps<PrunePlan>
}

/**
 * Two-phase planning. Sizes are needed for the active runs (they count towards `maxBytes`), asked for
 * first, and for the young inactive runs, newest first, until `maxInactiveRuns` kept places are taken: every
 * older young run is beyond the count, and every aged run goes by age, whatever their sizes. A run cut short
 * by its walk takes no kept place (it goes as "unmeasured"), so the next one is measured instead, unless the
 * active runs are over budget (then it is kept and takes its place). A run not measured takes its place.
 * Deterministic and free of I/O: the caller does the measuring (the pruner, within its entry budget).
 */
export const planMeasuring = (input: MeasuringInput): MeasuringPlan => runSteps(planMeasuringSteps(input))

interface MeasuringInput {
  readonly runs: ReadonlyArray<RunFacts>
  readonly policy: RetentionPolicy
  /** Now on the file system's clock (`isPastMaxAge`); `null` when it could not be read (nothing goes by age). */
  readonly now: number | null
}

/**
 * `planMeasuring` in steps (domain/Steps.ts). Its order (newest first) is the plan's too: `finish` takes it as
 * it is, sorting 10,000 runs once.
 */
export function* planMeasuringSteps(input: MeasuringInput): Steps<MeasuringPlan> {
  const { policy, now } = input
  const ordered = yield* sortSteps(input.runs.map((run) => ({ run, used: lastUsedAt(run) })), newestFirst)
  const active: Array<RunFacts> = []
  const young: Array<RunFacts> = []
  for (let index = 0; index < ordered.length; index++) {
    if (stepDue(index)) yield
    const { run } = ordered[index]!
    if (run.active) active.push(run)
    else if (!isPastMaxAge(run, policy, now)) young.push(run)
  }
  const queue = [...active, ...young]
  const sizes = new Map<RunFacts, RunSize>()
  let position = 0
  let placesTaken = 0
  /** Known once every active run is measured, i.e. before the first young run's size comes in. */
  let activeOverBudget: boolean | undefined
  let asked: RunFacts | undefined
  yield
  function* finishSteps(): Steps<PrunePlan> {
    const sized = new Array<Ordered>(ordered.length)
    for (let index = 0; index < ordered.length; index++) {
      if (stepDue(index)) yield
      const { run, used } = ordered[index]!
      sized[index] = { run, size: sizes.get(run), used }
    }
    return yield* planOrdered(sized, policy, now)
  }
  return {
    next: () => {
      if (asked !== undefined) throw new Error("planMeasuring: the size of the last run asked for is missing")
      const run = queue[position]
      if (run === undefined || (!run.active && placesTaken >= policy.maxInactiveRuns)) return undefined
      position++
      return (asked = run)
    },
    measured: (size) => {
      if (asked === undefined) throw new Error("planMeasuring: no run was asked for")
      sizes.set(asked, size)
      if (!asked.active) {
        activeOverBudget ??= isActiveOverBudget(active.map((run) => sizes.get(run)), policy.maxBytes)
        if (takesKeptPlace(size, activeOverBudget)) placesTaken++
      }
      asked = undefined
    },
    finish: () => runSteps(finishSteps()),
    finishSteps
  }
}
