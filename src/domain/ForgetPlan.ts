/**
 * Retention of state snapshots (SPEC BK2), restic's `forget` rules as a pure function:
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
import { InvalidArgument } from "./Errors.js"

export type ForgetReason = "last" | "daily" | "weekly"

export interface ForgetPolicy {
  readonly keepLast?: number | undefined
  readonly keepDaily?: number | undefined
  readonly keepWeekly?: number | undefined
}

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

/** Check a policy: whole non-negative counts, at least one above 0. */
export const checkForgetPolicy = (policy: ForgetPolicy): InvalidArgument | undefined => {
  for (const { field } of RULES) {
    const n = policy[field]
    if (n !== undefined && !(Number.isSafeInteger(n) && n >= 0)) {
      return new InvalidArgument({ field, detail: `${String(n)} is not a whole number ≥ 0` })
    }
  }
  if (RULES.every(({ field }) => (policy[field] ?? 0) === 0)) {
    return new InvalidArgument({
      field: "policy",
      detail: "an empty policy would remove every snapshot but the newest; give keepLast, keepDaily or keepWeekly above 0"
    })
  }
  return undefined
}

/** The plan, or a typed refusal (empty or malformed policy, unknown time zone). */
export const planForgetResult = (
  snapshots: ReadonlyArray<ForgetSnapshot>,
  policy: ForgetPolicy,
  options?: { readonly timeZone?: string | undefined }
): PlanForgetResult => {
  const invalid = checkForgetPolicy(policy)
  if (invalid !== undefined) return { ok: false, error: invalid }
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
