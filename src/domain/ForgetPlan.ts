/**
 * Retention of state snapshots (docs/snapshots.md "State snapshots"), restic's `forget` rules as a pure function:
 *
 * - snapshots are walked newest first (ties by id, descending, so the plan is deterministic);
 * - `keepLast n` keeps the n newest;
 * - `keepDaily n` / `keepWeekly n` keep the newest snapshot of each of the n newest local days / ISO weeks that
 *   have a snapshot (a bucket counts only when a snapshot is in it: a week without snapshots spends nothing);
 * - buckets follow the walk as restic's do: a new bucket starts whenever the key differs from the previous
 *   snapshot's (so a zone whose clocks went back over midnight can see one date twice, as restic would);
 * - rules OR together and every kept snapshot names each rule that kept it;
 * - an empty policy (nothing above 0) is refused; the newest snapshot is never removed.
 *
 * Days and weeks are the calendar of `timeZone` (an IANA name, through Intl), else the process's local zone.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { InvalidArgument } from "./Errors.js"
import { describeValue } from "./Values.js"

export type ForgetReason = "last" | "daily" | "weekly"

/** A count of buckets to keep: a number, whole (a safe integer) and not negative; the message names the rule. */
const KeepCount = Schema.Number.annotations({ message: () => "is not a number" }).pipe(
  Schema.int({ message: () => "is not a whole number" }),
  Schema.nonNegative({ message: () => "is negative" })
)

/** The forget rules (restic's `--keep-last`, `--keep-daily`, `--keep-weekly`); absent or `undefined` is 0. */
export const ForgetPolicy = Schema.Struct({
  keepLast: Schema.optional(KeepCount),
  keepDaily: Schema.optional(KeepCount),
  keepWeekly: Schema.optional(KeepCount)
})
export type ForgetPolicy = typeof ForgetPolicy.Type

export interface ForgetSnapshot {
  readonly id: string
  /** Epoch milliseconds. */
  readonly createdAt: number
}

export interface ForgetPlan {
  readonly keep: ReadonlyArray<{ readonly id: string; readonly reasons: ReadonlyArray<ForgetReason> }>
  readonly remove: ReadonlyArray<string>
}

export type PlanForgetResult = { readonly ok: true; readonly plan: ForgetPlan } | { readonly ok: false; readonly error: InvalidArgument }

const formatters = new Map<string, Intl.DateTimeFormat>()

/** One formatter per zone (building one costs far more than using it). Throws RangeError for an unknown zone. */
const formatterFor = (timeZone: string | undefined): Intl.DateTimeFormat => {
  const key = timeZone ?? ""
  let f = formatters.get(key)
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", {
      year: "numeric",
      month: "numeric",
      day: "numeric",
      ...(timeZone === undefined ? {} : { timeZone })
    })
    formatters.set(key, f)
  }
  return f
}

/** The local calendar date of an instant in the zone. */
export const localDate = (ms: number, timeZone?: string): { readonly year: number; readonly month: number; readonly day: number } => {
  const parts = formatterFor(timeZone).formatToParts(new Date(ms))
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value)
  return { year: get("year"), month: get("month"), day: get("day") }
}

/** ISO 8601 week of a calendar date: the week (Monday first) holding that week's Thursday, as year*100 + week. */
export const isoWeekKey = (year: number, month: number, day: number): number => {
  const date = Date.UTC(year, month - 1, day)
  const weekday = (new Date(date).getUTCDay() + 6) % 7 // Monday 0 … Sunday 6
  const thursday = new Date(date + (3 - weekday) * 86_400_000)
  const isoYear = thursday.getUTCFullYear()
  const week = Math.floor((thursday.getTime() - Date.UTC(isoYear, 0, 1)) / (7 * 86_400_000)) + 1
  return isoYear * 100 + week
}

const RULES: ReadonlyArray<{ readonly reason: ForgetReason; readonly field: keyof ForgetPolicy }> = [
  { reason: "last", field: "keepLast" },
  { reason: "daily", field: "keepDaily" },
  { reason: "weekly", field: "keepWeekly" }
]

/** Newest first; equal times by id, descending. */
export const newestFirst = <S extends ForgetSnapshot>(snapshots: ReadonlyArray<S>): Array<S> =>
  [...snapshots].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))

const decodePolicy = Schema.decodeUnknownEither(ForgetPolicy, { errors: "first" })

/**
 * The one check of a forget policy (every caller: the Effect API, the facade, the CLI): each rule a whole
 * count ≥ 0 (refused as `InvalidArgument` naming the rule's field and the value), at least one above 0 (else
 * the field is "policy"). Other keys (a caller's `dryRun`, `timeZone`) are not the policy's and are dropped.
 */
export const decodeForgetPolicy = (input: unknown): Either.Either<ForgetPolicy, InvalidArgument> => {
  const decoded = decodePolicy(input)
  if (Either.isLeft(decoded)) {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
    const key = issue?.path[0]
    if (issue === undefined || key === undefined) {
      return Either.left(new InvalidArgument({ field: "policy", detail: `${describeValue(input)} is not an object of keep rules` }))
    }
    const value = (input as Record<PropertyKey, unknown>)[key]
    return Either.left(new InvalidArgument({ field: String(key), detail: `${describeValue(value)} ${issue.message} (a whole number ≥ 0)` }))
  }
  const policy = decoded.right
  if (RULES.every(({ field }) => (policy[field] ?? 0) === 0)) {
    return Either.left(new InvalidArgument({
      field: "policy",
      detail: "an empty policy would remove every snapshot but the newest; give keepLast, keepDaily or keepWeekly above 0"
    }))
  }
  return Either.right(policy)
}

/** The plan, or a typed refusal (empty or malformed policy, unknown time zone). */
export const planForgetResult = (
  snapshots: ReadonlyArray<ForgetSnapshot>,
  given: ForgetPolicy,
  options?: { readonly timeZone?: string | undefined }
): PlanForgetResult => {
  const decoded = decodeForgetPolicy(given)
  if (Either.isLeft(decoded)) return { ok: false, error: decoded.left }
  const policy = decoded.right
  const timeZone = options?.timeZone
  try {
    formatterFor(timeZone)
  } catch {
    return { ok: false, error: new InvalidArgument({ field: "timeZone", detail: `${JSON.stringify(timeZone)} is not a known time zone` }) }
  }
  const bucketOf: Record<ForgetReason, (s: ForgetSnapshot, index: number) => number> = {
    last: (_s, index) => index, // every snapshot is its own bucket
    daily: (s) => {
      const d = localDate(s.createdAt, timeZone)
      return d.year * 10_000 + d.month * 100 + d.day
    },
    weekly: (s) => {
      const d = localDate(s.createdAt, timeZone)
      return isoWeekKey(d.year, d.month, d.day)
    }
  }
  const state = RULES.map(({ reason, field }) => ({ reason, left: policy[field] ?? 0, last: Number.NaN }))
  const keep: Array<{ id: string; reasons: Array<ForgetReason> }> = []
  const remove: Array<string> = []
  newestFirst(snapshots).forEach((snapshot, index) => {
    const reasons: Array<ForgetReason> = []
    for (const rule of state) {
      if (rule.left <= 0) continue
      const bucket = bucketOf[rule.reason](snapshot, index)
      if (bucket !== rule.last) {
        rule.last = bucket
        rule.left--
        reasons.push(rule.reason)
      }
    }
    if (reasons.length > 0) keep.push({ id: snapshot.id, reasons })
    else remove.push(snapshot.id)
  })
  // Any non-empty policy keeps the newest (it opens every bucket); stated here so no change of rules can break it.
  if (keep[0]?.id !== newestFirst(snapshots)[0]?.id) throw new Error("planForget: the newest snapshot must be kept")
  return { ok: true, plan: { keep, remove } }
}

/** `planForget` for callers that want a throw: the typed `InvalidArgument` on a bad policy or zone. */
export const planForget = (
  snapshots: ReadonlyArray<ForgetSnapshot>,
  policy: ForgetPolicy,
  options?: { readonly timeZone?: string | undefined }
): ForgetPlan => {
  const result = planForgetResult(snapshots, policy, options)
  if (!result.ok) throw result.error
  return result.plan
}
