/**
 * The layout migration's decisions (docs/migrations.md "Migrations"), pure: what happens to one legacy entry given the facts the
 * planner read (its type, what is at its destination, whether the bytes are the same), the words that say
 * why, and the report derived from the decisions a run executed. `Migration.plan` (the dry run) and
 * `Migration.run` both take their decisions from here, so the preview cannot say something the run does not do.
 */
import * as NodePath from "node:path"

/** Where a colliding legacy entry is preserved (`state/migration-conflicts/`), below the agent dir. */
export const MIGRATION_CONFLICTS: ReadonlyArray<string> = ["state", "migration-conflicts"]

/**
 * The conflicts directory inside a state tier (the agent dir's `state/`, a web extension's `data/<id>/state/`, an
 * agent extension's own state directory): where a migration keeps what collided, and where the doctor looks.
 */
export const migrationConflictsDir = (stateTier: string): string => NodePath.join(stateTier, MIGRATION_CONFLICTS[MIGRATION_CONFLICTS.length - 1]!)

/** The port's file type (`File`, `Directory`, `SymbolicLink`, `Other`), as a plain string so this stays pure. */
type EntryType = string

/**
 * - `move`: nothing at the destination; one rename (a verified copy across devices).
 * - `merge-json`: `trust.json` at both places; objects merged, canonical values win (`keptAt`: where the
 *   legacy copy is kept because some of its values lost).
 * - `merge-directory`: both are directories; the decisions that follow (paths below `from`) are its entries,
 *   then the emptied legacy directory is removed.
 * - `remove-duplicate`: an identical copy (same bytes, same link target) is already at `to`.
 * - `preserve-conflict`: the destination holds something else; the legacy entry is kept at `to`, under
 *   `state/migration-conflicts/`, and neither copy is overwritten.
 * - `already-done`: the legacy entry vanished since it was listed (another migration finished it).
 * - `refuse`: it could not be read; it is left where it is and reported.
 */
export type LayoutAction =
  | "move"
  | "merge-json"
  | "merge-directory"
  | "remove-duplicate"
  | "preserve-conflict"
  | "already-done"
  | "refuse"

/** One unit decision; paths relative to the agent dir, `/`-separated. */
export interface LayoutDecision {
  readonly action: LayoutAction
  readonly from: string
  readonly to: string
  readonly why: string
  /** `merge-json` only: where the legacy copy is kept (some of its values lost to the canonical ones). */
  readonly keptAt?: string
}

export type DecisionOutcome = "done" | "failed" | "skipped"

/** A decision as a run executed it: `failed` with the error, `skipped` when an earlier step of its entry failed. */
export interface ExecutedDecision extends LayoutDecision {
  readonly outcome: DecisionOutcome
  readonly error?: string
}

/** The dry run: the decisions a run would execute now, in the order it would take them. */
export interface LayoutPlan {
  readonly agentDir: string
  /** False when the agent dir (after resolving a symlink at its own path) does not exist. */
  readonly exists: boolean
  /** Its file type in words when it is not a directory, else `null`. */
  readonly notADirectory: string | null
  readonly decisions: ReadonlyArray<LayoutDecision>
  /** True when the entry budget (`maxEntries`) cut the plan; a run does this much and says `partial`. */
  readonly partial: boolean
}

export interface LayoutReport {
  /** Legacy entries (relative to the agent dir) now at their canonical place (moved, or an identical copy was). */
  readonly moved: ReadonlyArray<string>
  /** Legacy root entries merged into an existing destination (entry by entry, or a JSON object merge). */
  readonly merged: ReadonlyArray<string>
  /** Colliding entries preserved under `state/migration-conflicts/` (relative paths). */
  readonly conflicts: ReadonlyArray<{ readonly from: string; readonly to: string }>
  /** True when the entry budget cut the call short; call again to continue. */
  readonly partial: boolean
  readonly errors: ReadonlyArray<LayoutProblem>
  /** Every decision of the plan this run executed, in plan order, with its outcome. */
  readonly decisions: ReadonlyArray<ExecutedDecision>
}

/**
 * A layout migration's problem, tagged beside its words (fields only added): the agent dir could not be read
 * (`AgentDirUnreadable`), another live migration holds the marker (`MigrationBusy`), or one unit failed or was
 * refused (`UnitFailed`; nothing of it was lost, a rerun retries).
 */
export interface LayoutProblem {
  readonly _tag: "AgentDirUnreadable" | "MigrationBusy" | "UnitFailed"
  readonly path: string
  readonly message: string
}

export const emptyLayoutReport: LayoutReport = { moved: [], merged: [], conflicts: [], partial: false, errors: [], decisions: [] }

const CONFLICTS_PREFIX = `${MIGRATION_CONFLICTS.join("/")}/`

/** Is this relative path a place where the migration keeps colliding copies? */
export const isConflictPath = (rel: string): boolean => rel.startsWith(CONFLICTS_PREFIX)

// ---------------------------------------------------------------------------------------------------------
// The rules

export type PlaceRule = "move" | "merge-directory" | "remove-duplicate" | "preserve"

/** Where a legacy entry meets its destination: move into absence, merge two directories, drop a duplicate, or keep both. */
export const placeRule = (source: EntryType, destination: EntryType | undefined, identical: boolean): PlaceRule =>
  destination === undefined
    ? "move"
    : source === "Directory" && destination === "Directory"
    ? "merge-directory"
    : identical
    ? "remove-duplicate"
    : "preserve"

export type PreserveRule = "take" | "continue-directory" | "already-kept" | "next"

/**
 * One conflict candidate (`<base>`, `<base>.1`, …) for a legacy entry that must be kept: take it when free,
 * finish an interrupted preservation of the same directory in place, or drop the legacy copy when an identical
 * one is already kept there; otherwise try the next. A candidate an earlier decision of the same plan will
 * fill (`claimed`) is taken.
 */
export const preserveRule = (
  source: EntryType,
  candidate: EntryType | undefined,
  identical: boolean,
  claimed: boolean
): PreserveRule =>
  claimed
    ? "next"
    : candidate === undefined
    ? "take"
    : source === "Directory" && candidate === "Directory"
    ? "continue-directory"
    : identical
    ? "already-kept"
    : "next"

// ---------------------------------------------------------------------------------------------------------
// Why, in words

export const why = {
  move: "nothing is at the destination: moved there",
  mergeDirectory: "both are directories: merged entry by entry (below), then the emptied legacy directory is removed",
  continuePreservation: "an earlier preservation of this directory was interrupted: finished in place (below)",
  duplicate: "an identical copy is at the destination: the legacy copy is removed",
  alreadyKept: (destination: string) =>
    `${destination} holds something else, and an identical copy of the legacy entry is already kept here: the legacy copy is removed`,
  conflict: (destination: string, taken: number) =>
    `${destination} holds something else: the legacy entry is kept here, neither copy is overwritten` +
    (taken > 0 ? ` (${taken} earlier conflict path${taken === 1 ? " is" : "s are"} taken)` : ""),
  unparsableJson: (which: "legacy" | "canonical", destination: string) =>
    `${which === "legacy" ? "the legacy copy" : destination} is not a JSON object, so the two cannot be merged: ` +
    "the legacy copy is kept here, neither copy is overwritten",
  mergeJson: (overridden: ReadonlyArray<string>, keptAt: string | undefined) =>
    "both copies exist: the JSON objects are merged, canonical values win" +
    (keptAt === undefined
      ? "; every legacy value survives, so the legacy copy is removed"
      : `; legacy value${overridden.length === 1 ? "" : "s"} of ${overridden.map((k) => JSON.stringify(k)).join(", ")} lost, so the legacy copy is kept at ${keptAt}`),
  jsonKept: (destination: string) =>
    `some of its values lost to the canonical ${destination}: the legacy copy is kept here for review`,
  blocked: (ancestor: string, type: string) =>
    `${ancestor} is ${type} where a directory belongs: nothing can be placed below it, so the legacy entry is left where it is`,
  vanished: "the legacy entry is gone since it was listed (another migration finished it)",
  budget: " (the entry budget ran out: the rest waits for the next call, and the directory stays)"
} as const

// ---------------------------------------------------------------------------------------------------------
// The report, derived from what was executed

/** moved, merged and conflicts are what the executed decisions did; errors are the failed and refused ones. */
export const layoutReportOf = (decisions: ReadonlyArray<ExecutedDecision>, partial: boolean): LayoutReport => {
  const done = decisions.filter((d) => d.outcome === "done")
  const moved = done.filter((d) => (d.action === "move" || d.action === "remove-duplicate") && !isConflictPath(d.to)).map((d) => d.from)
  const merged = done
    .filter((d) => (d.action === "merge-json" || d.action === "merge-directory") && !d.from.includes("/") && !isConflictPath(d.to))
    .map((d) => d.from)
  const conflicts = done.flatMap((d) =>
    d.action === "merge-json" && d.keptAt !== undefined
      ? [{ from: d.from, to: d.keptAt }]
      : (d.action === "preserve-conflict" || d.action === "remove-duplicate") && isConflictPath(d.to)
      ? [{ from: d.from, to: d.to }]
      : []
  )
  // A refusal of "." is the agent dir itself (it could not be read): never a silent "nothing to do".
  const errors = decisions.flatMap((d): Array<LayoutProblem> =>
    d.outcome === "failed"
      ? [{ _tag: "UnitFailed", path: d.from, message: d.error ?? "failed" }]
      : d.action === "refuse" && d.outcome === "done"
      ? [{ _tag: d.from === "." ? "AgentDirUnreadable" : "UnitFailed", path: d.from, message: d.why }]
      : []
  )
  return { moved, merged, conflicts, partial, errors, decisions }
}
