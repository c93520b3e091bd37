/**
 * What `pruneWorkTenant` returns (docs/work-runs.md "Retention"). The shape is public: Promise callers, the CLI's
 * `--json` output and scripts read it, so fields are only ever added. Arrays are plain (mutable) arrays, as
 * in the facade's declared interface; every report is a fresh value.
 *
 * Sizes (docs/work-runs.md "Retention": one byte count): `bytes…` fields are disk usage (allocated blocks, what `du`
 * prints: `du -s -B1` of the run), the byte budget's unit; `apparentBytes…` beside them the apparent size
 * (`du -sb`). Each run is its own walk (a file hard-linked into two runs counts in each).
 */
import * as Schema from "effect/Schema"
import { PruneReason } from "./PrunePlan.js"
import { StoppedBy } from "./StoppedBy.js"

const NonNegativeInt = Schema.Number.pipe(Schema.int(), Schema.nonNegative())
const mutableArray = <S extends Schema.Schema.Any>(item: S) => Schema.mutable(Schema.Array(item))

export const RemovedRun = Schema.Struct({
  runId: Schema.String,
  path: Schema.String,
  reason: PruneReason,
  /** Disk usage; `null` when it is not known exactly (its walk was cut short, or not made: see `stoppedBy`). */
  bytes: Schema.NullOr(NonNegativeInt),
  /** Apparent size; `null` exactly when `bytes` is. */
  apparentBytes: Schema.NullOr(NonNegativeInt)
})
export type RemovedRun = typeof RemovedRun.Type

/**
 * Report problems are tagged values with a message: `_tag` says which kind (for scripts and `switch`), the
 * existing `message`/`why` string says it in words. Each shape is one `TaggedStruct` per tag over the same
 * fields, so a new kind is one more literal here.
 */
const tagged = <const Tags extends ReadonlyArray<string>, Fields extends Schema.Struct.Fields>(tags: Tags, fields: Fields) =>
  Schema.Union(...tags.map((tag) => Schema.TaggedStruct(tag as Tags[number], fields)))

/** Why a chosen candidate was left alone at execution time. */
export const SkippedRunTag = [
  /** Its cleanup marker is held by another live remover, or cannot be read. */
  "MarkerHeld",
  /** The run is gone, no longer a directory, or its manifest no longer owns it. */
  "RunChanged",
  /** A live lease appeared (or leases cannot be read: unknown means held). */
  "LeaseAppeared",
  /** The rename into `.trash/` failed. */
  "QuarantineFailed",
  /** `.cleanup/` or `.trash/` cannot be made: nothing was removed. */
  "RemovalUnprepared"
] as const
export const SkippedRun = tagged(SkippedRunTag, { runId: Schema.String, path: Schema.String, why: Schema.String })
export type SkippedRun = typeof SkippedRun.Type

/**
 * Why a `delete: true` release kept its run (`keptTag`, beside the `keptBecause` words): a `SkippedRun` tag,
 * `LeaseHeld` (another live lease), `RemovalFailed` (quarantined, deletion not finished) or `ProcessRun` (the
 * facade's per-process run, held until the store closes).
 */
export const KeptTag = Schema.Literal(...SkippedRunTag, "LeaseHeld", "RemovalFailed", "ProcessRun")
export type KeptTag = typeof KeptTag.Type

/** Why releasing the process run (WR7) keeps it: it is shared by every caller of the store or runtime. */
export const PROCESS_RUN_KEPT = "the process run is shared: it is held until the store (or runtime) that made it closes"

/** Why an entry of the tenant is not ours. */
export const UnownedEntryTag = [
  /** A symlink (never followed). */
  "Symlink",
  /** A file, socket … where runs are directories. */
  "NotADirectory",
  /** A manifest that names another category, tenant or run. */
  "ManifestMismatch",
  /** No manifest, or one that cannot be read or decoded. */
  "NoManifest"
] as const
export const UnownedEntry = tagged(UnownedEntryTag, { name: Schema.String, path: Schema.String, why: Schema.String })
export type UnownedEntry = typeof UnownedEntry.Type

/**
 * A marker, lease or manifest timestamp that could not be trusted (docs/safety.md "Stale unreadable markers and leases"): empty, garbage,
 * not valid for its schema, a directory or a symlink where a file belongs, or a timestamp beyond now + the
 * remote TTL. `action`: `held` (fresh: its writer may still be writing it; kept), `reclaimed` (older than the
 * stale bound: removed under the dead-holder protocol, or with its run), `reclaimable` (stale, but this prune
 * did not remove it: a dry run, or its run's marker was held), `left` (a non-empty directory: never
 * deleted, remove it by hand), `ignored` (a far-future manifest timestamp: not counted for last use).
 */
export const UnreadableRecord = Schema.Struct({
  path: Schema.String,
  what: Schema.String,
  action: Schema.Literal("held", "reclaimed", "reclaimable", "left", "ignored")
})
export type UnreadableRecord = typeof UnreadableRecord.Type

/** A non-fatal problem of one prune. */
export const PruneErrorTag = [
  /** A library directory (`.trash/` …) cannot be listed. */
  "ListingFailed",
  /** Deleting a quarantined or abandoned tree failed or stopped; it stays in `.trash/` or `.staging/` for the next prune. */
  "RemovalFailed",
  /** This prune's time for `.trash/` is spent; the next prune continues. */
  "TrashPending",
  /** Something squats on the tenant's prune marker: nothing was pruned. */
  "MarkerSquatted",
  /** `.cleanup/` or `.trash/` cannot be made: the victims were kept. */
  "RemovalUnprepared",
  /** A run's size walk failed: its size is a lower bound. */
  "MeasureFailed",
  /** A dead holder's lease could not be removed. */
  "LeaseNotRemoved",
  /**
   * The file system's clock could not be read (no probe could be made in `.cleanup/`): ages cannot be judged,
   * so nothing went by age and runs left in `.staging/` stayed.
   */
  "ClockUnread"
] as const
export const PruneError = tagged(PruneErrorTag, { path: Schema.String, message: Schema.String })
export type PruneError = typeof PruneError.Type

/** Why a run's measuring walk stopped before its end. */
export const CutShortTag = [
  /** The tenant's entry budget (`maxEntries`) ran out during its walk: the run that made the scan incomplete. */
  "EntryBudget",
  /** `maxDepth`, or a mount point inside the run (never crossed), stopped its walk. */
  "WalkStopped",
  /** Its walk failed (the failure is in `errors` as `MeasureFailed`). */
  "WalkFailed"
] as const
/**
 * A run whose measuring walk was cut short (docs/work-runs.md "Retention"): `bytesAtLeast` is a lower bound, and the
 * tenant's unmeasured remainder is attributed to it, so it counts as over the byte budget by itself.
 */
export const CutShortRun = tagged(CutShortTag, {
  runId: Schema.String,
  path: Schema.String,
  /** Held by a live lease: never removed, and then nothing goes for its size (`activeOverBudget`). */
  active: Schema.Boolean,
  bytesAtLeast: NonNegativeInt,
  apparentBytesAtLeast: NonNegativeInt,
  why: Schema.String
})
export type CutShortRun = typeof CutShortRun.Type

export const PruneReport = Schema.mutable(Schema.Struct({
  /** Another live pruner held the tenant; nothing was done. */
  busy: Schema.Boolean,
  /** With `busy`: who holds the tenant's prune marker ("prune by pid 123 on host"). */
  busyHolder: Schema.optional(Schema.String),
  /** Present (true) when the tenant directory does not exist: nothing to prune. */
  tenantMissing: Schema.optional(Schema.Boolean),
  dryRun: Schema.Boolean,
  scannedRuns: NonNegativeInt,
  /** The scan stopped at `maxScannedRuns`: entries beyond it were not considered (`stoppedBy` says how many). */
  truncated: Schema.Boolean,
  /**
   * Some size in the report is not exact (`bytesBefore` is then `null`): a size walk cut short (`cutShort`), a
   * run not measured (`notMeasured`), a victim whose size no walk counted. `stoppedBy` names the bound.
   */
  incomplete: Schema.Boolean,
  /** Each bound that stopped this prune early: how much it left and the option or flag that raises it. */
  stoppedBy: mutableArray(StoppedBy),
  /**
   * The runs whose size walk was cut short, newest first; the `EntryBudget` one made the scan incomplete. An
   * inactive one within age and count goes as `unmeasured`, unless `activeOverBudget` (then it is kept).
   */
  cutShort: mutableArray(CutShortRun),
  /**
   * runIds of the runs never walked, newest first: the entry budget was spent before their turn. Not measured
   * is not over budget: they stay unless age or count removes them, never for their size.
   */
  notMeasured: mutableArray(Schema.String),
  /**
   * The active runs alone exceed `maxBytes`, or one of their sizes is not exact (cut short, not measured):
   * removing inactive runs cannot bring the tenant within `maxBytes`, so none went for its size.
   */
  activeOverBudget: Schema.Boolean,
  /** In a dry run: the runs that would be removed. */
  removed: mutableArray(RemovedRun),
  /** runIds of the inactive runs kept. */
  kept: mutableArray(Schema.String),
  /** runIds of the runs with a live lease. */
  active: mutableArray(Schema.String),
  /** Candidates the plan chose but execution left alone (a lease appeared, the manifest changed, …). */
  skipped: mutableArray(SkippedRun),
  /** Entries of the tenant the library does not own: never deleted, always reported. */
  unowned: mutableArray(UnownedEntry),
  /** The owned runs' disk usage before and after; `null` when some size is not exact (`incomplete`). */
  bytesBefore: Schema.NullOr(NonNegativeInt),
  bytesAfter: Schema.NullOr(NonNegativeInt),
  /** The same in apparent size. */
  apparentBytesBefore: Schema.NullOr(NonNegativeInt),
  apparentBytesAfter: Schema.NullOr(NonNegativeInt),
  /** Non-fatal errors: one bad run never fails the whole prune. */
  errors: mutableArray(PruneError),
  /** Markers, leases and manifest timestamps that could not be trusted, and what the prune did with each. */
  unreadable: mutableArray(UnreadableRecord)
}))
export type PruneReport = typeof PruneReport.Type

/** A report with nothing scanned; `busy` marks the "another pruner holds the tenant" answer. */
export const emptyPruneReport = (dryRun: boolean, busy = false): PruneReport => ({
  busy,
  dryRun,
  scannedRuns: 0,
  truncated: false,
  incomplete: false,
  stoppedBy: [],
  cutShort: [],
  notMeasured: [],
  activeOverBudget: false,
  removed: [],
  kept: [],
  active: [],
  skipped: [],
  unowned: [],
  bytesBefore: null,
  bytesAfter: null,
  apparentBytesBefore: null,
  apparentBytesAfter: null,
  errors: [],
  unreadable: []
})
