/**
 * Why a report stopped early (docs/work-runs.md "Retention", "CLI quick tour"): truncation is said, never hidden. Every
 * bound a scan or a size walk can stop at has a tag, its value (`limit`), how much it left undone (`left`, in
 * `unit`s), the option and the CLI flag that raise it, and the same in words (`message`). A prune report
 * (`PruneReport.stoppedBy`), `status` and `work ls` (the inventory's `stoppedBy`) list one per bound that
 * stopped something. Pure: shapes and their constructors.
 */
import * as Schema from "effect/Schema"
import { countOf, groupedCountOf, groupedDigits } from "./Count.js"

const NonNegativeInt = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

export const StoppedByTag = [
  /** Run candidates examined per tenant (the prune's `maxScannedRuns`, the inventory's `maxRunsPerTenant`). */
  "MaxScannedRuns",
  /** Entries the size walks of one tenant may visit (`maxEntries`). */
  "MaxEntries",
  /** How deep a size walk goes (`maxDepth`); a mount point inside a tree stops a walk the same way. */
  "MaxDepth",
  /** Entries one inventory scan reads (directory listings and leases: `maxScanEntries`). */
  "MaxScanEntries"
] as const
export type StoppedByTag = typeof StoppedByTag[number]

export const StoppedBy = Schema.Union(...StoppedByTag.map((tag) =>
  Schema.TaggedStruct(tag, {
    /** The bound's value in this call. */
    limit: NonNegativeInt,
    /** What it left undone, in `unit`s: entries not examined, runs or tenants whose size is not exact. */
    left: NonNegativeInt,
    unit: Schema.Literal("entries", "runs", "tenants", "sizes"),
    /** The option that raises it (facade and Effect API), as the call spells it. */
    option: Schema.String,
    /** The `pi-storage` flag that raises it. */
    flag: Schema.String,
    message: Schema.String
  })
))
export type StoppedBy = typeof StoppedBy.Type

const count = groupedDigits

/** Where the prune's policy bounds are raised: a policy field, clamped to the harness ceiling. */
const POLICY = (field: string) => `policy.${field} (up to the harness ceiling: openAgentStorage({ retentionCeiling }), StorageConfig.retentionCeiling)`

/**
 * What the caller asked of a prune's bound and the harness ceiling over it: a bound at the ceiling is raised
 * only by raising the ceiling, whether the policy asked for more (capped) or left it to the ceiling's default.
 */
export interface BoundAsked {
  readonly asked?: number | undefined
  readonly ceiling?: number | undefined
}

/**
 * How to raise a prune's bound: its policy field and flag; or, when the bound is the harness ceiling's and the
 * caller did not ask for exactly it (the CLI does: its ceiling is what a person asked), the ceiling.
 */
const raisePolicy = (field: string, flag: string, limit: number, bound: BoundAsked = {}): string =>
  bound.ceiling === undefined || limit < bound.ceiling || bound.asked === limit
    ? `raise ${field} (${flag})`
    : bound.asked !== undefined && bound.asked > limit
    ? `raise the harness ceiling (retentionCeiling.${field}): ${field} ${count(bound.asked)} was asked and capped at the ceiling's ${count(limit)}`
    : `raise the harness ceiling (retentionCeiling.${field}): a policy's ${field} is at most the ceiling's ${count(limit)}, its default`

/**
 * A prune scanned `limit` of the tenant's `candidates` entries (docs/work-runs.md "Retention"). `progressed`: it
 * removed (or, dry, would remove) a run, so the next prune's window starts further on; without that, pruning
 * again scans the same first entries and only a larger bound reaches the rest. `asked`: the policy's value
 * before the harness ceiling capped it.
 */
export const pruneScanStopped = (limit: number, candidates: number, progressed: boolean, asked?: BoundAsked): StoppedBy => ({
  _tag: "MaxScannedRuns",
  limit,
  left: candidates - limit,
  unit: "entries",
  option: POLICY("maxScannedRuns"),
  flag: "--max-scanned-runs",
  message: `scanned the first ${count(limit)} of ${count(candidates)} entries of the tenant (maxScannedRuns): ${count(candidates - limit)} not considered; ${
    progressed
      ? `prune again (each prune works through the first ${count(limit)}) or ${raisePolicy("maxScannedRuns", "--max-scanned-runs", limit, asked)}`
      : `none of the first ${count(limit)} could go, so pruning again would scan the same ones: ${raisePolicy("maxScannedRuns", "--max-scanned-runs", limit, asked)}`
  }`
})

/** The prune's shared entry budget ran out before or during `runs` runs' size walks. */
export const pruneEntriesStopped = (limit: number, runs: number, asked?: BoundAsked): StoppedBy => ({
  _tag: "MaxEntries",
  limit,
  left: runs,
  unit: "runs",
  option: POLICY("maxEntries"),
  flag: "--max-entries",
  message: `the size walks' entry budget (maxEntries ${count(limit)}, shared by this prune's walks) ran out: ${
    countOf(runs, "run")
  } not measured or measured only in part (${runs === 1 ? "its size unknown or a lower bound unless its removal counted it" : "their sizes unknown or lower bounds unless their removal counted them"}); ${raisePolicy("maxEntries", "--max-entries", limit, asked)}`
})

/** `runs` of a prune's size walks stopped at `maxDepth` (or at a mount point: the walk cannot tell which). */
export const pruneDepthStopped = (limit: number, runs: number, asked?: BoundAsked): StoppedBy => ({
  _tag: "MaxDepth",
  limit,
  left: runs,
  unit: "runs",
  option: POLICY("maxDepth"),
  flag: "--max-depth",
  message: `the size ${runs === 1 ? "walk" : "walks"} of ${countOf(runs, "run")} stopped at maxDepth ${limit} or at a mount point (never crossed): ${
    runs === 1 ? "its size is a lower bound" : "their sizes are lower bounds"
  }; where it is the depth, ${raisePolicy("maxDepth", "--max-depth", limit, asked)}`
})

/** The inventory listed at most `limit` entries of each of `tenants` tenants, leaving `left` unlisted. */
export const listingStopped = (limit: number, left: number, tenants: number): StoppedBy => ({
  _tag: "MaxScannedRuns",
  limit,
  left,
  unit: "entries",
  option: "maxRunsPerTenant",
  flag: "--max-scanned-runs",
  message: `${countOf(tenants, "tenant")} ${tenants === 1 ? "holds" : "hold"} more than the ${groupedCountOf(limit, "entry", "entries")} examined per tenant: ${
    count(left)
  } not listed; raise it (--max-scanned-runs)`
})

/**
 * The inventory's size walks stopped at the per-tenant entry budget: `sizes` sizes not exact, of which
 * `notMeasured` were never walked (a tenant's runs after its budget ran out).
 */
export const inventoryEntriesStopped = (limit: number, sizes: number, notMeasured: number): StoppedBy => ({
  _tag: "MaxEntries",
  limit,
  left: sizes,
  unit: "sizes",
  option: "maxEntries",
  flag: "--max-entries",
  message: `the size walks stopped at their entry budget (maxEntries ${count(limit)} per tenant): ${countOf(sizes, "size")} ${
    notMeasured === 0
      ? (sizes === 1 ? "is a lower bound" : "are lower bounds")
      : notMeasured === sizes
      ? (sizes === 1 ? "is not measured" : "are not measured")
      : `not exact (${count(notMeasured)} not measured, ${sizes - notMeasured === 1 ? "the other a lower bound" : "the rest lower bounds"})`
  }; raise it (--max-entries)`
})

/** `sizes` of the inventory's size walks stopped at `maxDepth` or at a mount point. */
export const inventoryDepthStopped = (limit: number, sizes: number): StoppedBy => ({
  _tag: "MaxDepth",
  limit,
  left: sizes,
  unit: "sizes",
  option: "maxDepth",
  flag: "--max-depth",
  message: `${countOf(sizes, "size walk")} stopped at maxDepth ${limit} or at a mount point (never crossed): those sizes are lower bounds; raise maxDepth (--max-depth) where it is the depth`
})

/**
 * A scan read its budget of entries; at least `left` more were seen and not read. `option`: how the call spells
 * the budget (the inventory's `maxScanEntries`, the doctor's `maxEntries`); the CLI flag is the same for both.
 */
export const scanEntriesStopped = (limit: number, left: number, option: "maxScanEntries" | "maxEntries" = "maxScanEntries"): StoppedBy => ({
  _tag: "MaxScanEntries",
  limit,
  left,
  unit: "entries",
  option,
  flag: "--max-scan-entries",
  message: `the scan read its budget of ${groupedCountOf(limit, "entry", "entries")} (directory listings and leases): at least ${
    count(left)
  } more were not read, and what they hold is not shown; raise it (--max-scan-entries)`
})
