/**
 * Retention policy for work tenants (docs/work-runs.md "Retention", "Extension storage (agent side)"): the schema, the defaults, and the two ways a
 * policy is derived: `resolvePolicy` (caller input over a base) and `clamp` (an extension's wish under the
 * harness ceiling). Pure.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { InvalidPolicy, type PolicyRule } from "./Errors.js"
import { describeValue } from "./Values.js"

/**
 * A limit: a finite, non-negative, safe integer. Each check's message is its `PolicyRule`, so a refusal
 * names the rule it broke (see `decodeRetentionInput`).
 */
const NonNegativeInt = Schema.Number.annotations({ message: () => "not-a-number" }).pipe(
  Schema.finite({ message: () => "not-finite" }),
  Schema.int({ message: () => "not-an-integer" }),
  Schema.nonNegative({ message: () => "negative" })
)

/** Every limit the pruner honours, per tenant. All fields are required non-negative integers. */
export const RetentionPolicy = Schema.Struct({
  /** A run whose last use is older than this is removed ("age"). */
  maxAgeMs: NonNegativeInt,
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

const RULE_DETAILS: Readonly<Record<PolicyRule, string>> = {
  "not-an-object": "a policy is an object of limits (or undefined for the defaults)",
  "unknown-key": "not a policy field (maxAgeMs, maxInactiveRuns, maxBytes, maxScannedRuns, maxEntries, maxDepth)",
  "not-a-number": "a limit is a number (a string such as \"2\" is not one)",
  "not-finite": "a limit must be finite",
  "not-an-integer": "a limit must be a whole number no larger than 2^53 - 1",
  negative: "a limit must not be negative",
  unreadable: "the policy could not be read"
}

const isPolicyRule = (text: string): text is PolicyRule => Object.hasOwn(RULE_DETAILS, text)

const invalid = (field: string, value: unknown, rule: PolicyRule): InvalidPolicy =>
  new InvalidPolicy({ field, value: describeValue(value), rule, detail: RULE_DETAILS[rule] })

const decodeInput = Schema.decodeUnknownEither(Schema.partial(RetentionPolicy), { errors: "first", onExcessProperty: "error" })

/**
 * Policies are data (docs/work-runs.md "Retention"): the one decoding of a policy from any caller (Effect API, facade, extension view, CLI): a plain
 * object whose known fields are non-negative integers (or undefined); `undefined` is "no policy". Anything
 * else is `InvalidPolicy` naming the field, the value and the rule.
 */
export const decodeRetentionInput = (input: unknown): Either.Either<RetentionInput, InvalidPolicy> => {
  if (input === undefined) return Either.right({})
  try {
    // Only a plain object is a policy: arrays, dates, maps and class instances would read as "no limits given".
    const proto = typeof input === "object" && input !== null ? Object.getPrototypeOf(input) : undefined
    if (proto !== Object.prototype && proto !== null) return Either.left(invalid("policy", input, "not-an-object"))
    const decoded = decodeInput(input)
    if (Either.isRight(decoded)) return Either.right(decoded.right)
    const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
    const key = issue?.path[0]
    if (issue === undefined || key === undefined) return Either.left(invalid("policy", input, "not-an-object"))
    const field = String(key)
    const value = (input as Record<PropertyKey, unknown>)[key]
    if (issue._tag === "Unexpected") return Either.left(invalid(field, value, "unknown-key"))
    return Either.left(invalid(field, value, isPolicyRule(issue.message) ? issue.message : "not-a-number"))
  } catch {
    // A getter that throws, a revoked proxy: not data.
    return Either.left(invalid("policy", input, "unreadable"))
  }
}

const DAY_MS = 24 * 60 * 60 * 1000
const MIB = 1024 * 1024

/** The harness ceiling (docs/work-runs.md "Retention"). */
export const DEFAULT_RETENTION: RetentionPolicy = {
  maxAgeMs: 30 * DAY_MS,
  maxInactiveRuns: 64,
  maxBytes: 512 * MIB,
  maxScannedRuns: 10_000,
  maxEntries: 100_000,
  maxDepth: 64
}

/** A lease on another host is alive until its heartbeat is older than this (docs/safety.md "Leases and liveness"). */
export const DEFAULT_REMOTE_LEASE_TTL_MS = 15 * 60 * 1000

/** Acquiring a run starts a background prune of its tenant at most this often (docs/work-runs.md "Retention"). */
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
 * Field by field minimum of a wish and a ceiling (docs/tiers.md "Extension storage (agent side)"): an extension can keep less, never more.
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
