/**
 * What `pruneWorkTenant` returns (SPEC WR8, issue 3 facade). The shape is public: Promise callers, the CLI's
 * `--json` output and scripts read it, so fields are only ever added. Arrays are plain (mutable) arrays, as
 * in the facade's declared interface; every report is a fresh value.
 */
import * as Schema from "effect/Schema"
import { PruneReason } from "./PrunePlan.js"

const NonNegativeInt = Schema.Number.pipe(Schema.int(), Schema.nonNegative())
const mutableArray = <S extends Schema.Schema.Any>(item: S) => Schema.mutable(Schema.Array(item))

export const RemovedRun = Schema.Struct({
  runId: Schema.String,
  path: Schema.String,
  reason: PruneReason,
  /** `null` when the size walk was cut short. */
  bytes: Schema.NullOr(NonNegativeInt)
})
export type RemovedRun = typeof RemovedRun.Type

export const SkippedRun = Schema.Struct({ runId: Schema.String, path: Schema.String, why: Schema.String })
export type SkippedRun = typeof SkippedRun.Type

export const UnownedEntry = Schema.Struct({ name: Schema.String, path: Schema.String, why: Schema.String })
export type UnownedEntry = typeof UnownedEntry.Type

export const PruneError = Schema.Struct({ path: Schema.String, message: Schema.String })
export type PruneError = typeof PruneError.Type

export const PruneReport = Schema.mutable(Schema.Struct({
  /** Another live pruner held the tenant; nothing was done. */
  busy: Schema.Boolean,
  /** With `busy`: who holds the tenant's prune marker ("prune by pid 123 on host"). */
  busyHolder: Schema.optional(Schema.String),
  /** Present (true) when the tenant directory does not exist: nothing to prune. */
  tenantMissing: Schema.optional(Schema.Boolean),
  dryRun: Schema.Boolean,
  scannedRuns: NonNegativeInt,
  /** The scan stopped at `maxScannedRuns`; entries beyond it were not considered. */
  truncated: Schema.Boolean,
  /** Some size walk was cut short by the `maxEntries` / `maxDepth` budget. */
  incomplete: Schema.Boolean,
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
  bytesBefore: Schema.NullOr(NonNegativeInt),
  bytesAfter: Schema.NullOr(NonNegativeInt),
  /** Non-fatal errors: one bad run never fails the whole prune. */
  errors: mutableArray(PruneError)
}))
export type PruneReport = typeof PruneReport.Type

/** A report with nothing scanned; `busy` marks the "another pruner holds the tenant" answer. */
export const emptyPruneReport = (dryRun: boolean, busy = false): PruneReport => ({
  busy,
  dryRun,
  scannedRuns: 0,
  truncated: false,
  incomplete: false,
  removed: [],
  kept: [],
  active: [],
  skipped: [],
  unowned: [],
  bytesBefore: null,
  bytesAfter: null,
  errors: []
})
