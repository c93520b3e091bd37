/**
 * Retention policy for work tenants (SPEC WR8, WR9, WR11): the schema, the defaults, and the two ways a
 * policy is derived: `resolvePolicy` (caller input over a base) and `clamp` (an extension's wish under the
 * harness ceiling). Pure.
 */
import * as Schema from "effect/Schema"

const NonNegativeInt = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

/** Every limit the pruner honours, per tenant. All fields are required non-negative integers. */
export const RetentionPolicy = Schema.Struct({
  /** A run whose last use is older than this is removed ("age"). */
  maxAgeMs: NonNegativeInt.pipe(Schema.finite()),
  /** At most this many inactive runs are kept, newest first ("count"). */
  maxInactiveRuns: NonNegativeInt,
  /** The tenant's total bytes, active runs included; oldest inactive runs go first ("bytes"). */
  maxBytes: NonNegativeInt,
  /** At most this many tenant entries are scanned by one prune. */
  maxScannedRuns: NonNegativeInt,
  /** Entry budget shared by all size walks of one prune. */
  maxEntries: NonNegativeInt,
  /** Size walks stop below this depth. */
  maxDepth: NonNegativeInt
})
export type RetentionPolicy = typeof RetentionPolicy.Type

/**
 * A partial policy as given by a caller, a config file or the CLI. A field given as `undefined` counts as
 * absent, so `{ maxBytes: undefined }` from an options spread does not erase the base.
 */
export const RetentionInput = Schema.partial(RetentionPolicy)
export type RetentionInput = typeof RetentionInput.Type

const DAY_MS = 24 * 60 * 60 * 1000
const MIB = 1024 * 1024

/** SPEC WR9. */
export const DEFAULT_RETENTION: RetentionPolicy = {
  maxAgeMs: 30 * DAY_MS,
  maxInactiveRuns: 64,
  maxBytes: 512 * MIB,
  maxScannedRuns: 10_000,
  maxEntries: 100_000,
  maxDepth: 64
}

/** A lease on another host is alive until its heartbeat is older than this (SPEC WR4). */
export const DEFAULT_REMOTE_LEASE_TTL_MS = 15 * 60 * 1000

/** Acquiring a run starts a background prune of its tenant at most this often (issue 3). */
export const OPPORTUNISTIC_PRUNE_INTERVAL_MS = 60 * 60 * 1000

const FIELDS = [
  "maxAgeMs",
  "maxInactiveRuns",
  "maxBytes",
  "maxScannedRuns",
  "maxEntries",
  "maxDepth"
] as const satisfies ReadonlyArray<keyof RetentionPolicy>

type Field = (typeof FIELDS)[number]

const build = (pick: (field: Field) => number): RetentionPolicy => ({
  maxAgeMs: pick("maxAgeMs"),
  maxInactiveRuns: pick("maxInactiveRuns"),
  maxBytes: pick("maxBytes"),
  maxScannedRuns: pick("maxScannedRuns"),
  maxEntries: pick("maxEntries"),
  maxDepth: pick("maxDepth")
})

/** The fields the input gives override the base; the rest come from the base. No clamping. */
export const resolvePolicy = (
  input: RetentionInput | undefined,
  base: RetentionPolicy = DEFAULT_RETENTION
): RetentionPolicy => build((field) => input?.[field] ?? base[field])

/**
 * Field by field minimum of a wish and a ceiling (SPEC WR11): an extension can keep less, never more.
 * A field the wish leaves out takes the ceiling's value.
 */
export const clamp = (
  policy: RetentionInput | RetentionPolicy,
  ceiling: RetentionPolicy
): RetentionPolicy =>
  build((field) => {
    const wish = policy[field]
    return wish === undefined ? ceiling[field] : Math.min(wish, ceiling[field])
  })

/** Field names, for callers that render or iterate a policy. */
export const RETENTION_FIELDS: ReadonlyArray<keyof RetentionPolicy> = FIELDS
