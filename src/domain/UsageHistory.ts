/**
 * The usage history (docs/dashboard.md "Dashboard"): bytes per tier over time, one small record per run of an operation
 * that already writes (a prune, a state snapshot, a config snapshot), at most one per hour per root, kept
 * bounded by thinning old records. Pure: the record format, its strict decoder, the "is one due" rule and the
 * thinning. The file is `state/usage-history.jsonl` (one JSON record a line); I/O is services/UsageHistory.ts.
 */
import * as Schema from "effect/Schema"

/** Under the agent dir: `state/usage-history.jsonl`. */
export const USAGE_HISTORY_FILE = ["state", "usage-history.jsonl"] as const

/** The tiers a record counts (the treemap's top level): what a person loses if each is deleted. */
export const USAGE_TIERS = ["config", "state", "cache", "work", "other"] as const
export type UsageTier = (typeof USAGE_TIERS)[number]

/** The agent dir, or the web host's extension data root. */
export const UsageRoot = Schema.Literal("agent", "web")
export type UsageRoot = typeof UsageRoot.Type

/** Which writing operation appended the record. */
export const UsageCause = Schema.Literal("prune", "background-prune", "snapshot", "config-snapshot")
export type UsageCause = typeof UsageCause.Type

const NonNegativeInt = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

export const TierBytes = Schema.Struct({
  config: NonNegativeInt,
  state: NonNegativeInt,
  cache: NonNegativeInt,
  work: NonNegativeInt,
  other: NonNegativeInt
})
export type TierBytes = typeof TierBytes.Type

export const UsageRecord = Schema.Struct({
  v: Schema.Literal(1),
  /** Epoch ms (the Clock of the process that wrote it). */
  at: NonNegativeInt,
  root: UsageRoot,
  cause: UsageCause,
  /** Bytes per tier (the size walk's bytes: a lower bound where `complete` is false). */
  tiers: TierBytes,
  /** Entries below the root that the walk visited. */
  entries: NonNegativeInt,
  /** False when the walk's budget cut a tier short: its bytes are a lower bound. */
  complete: Schema.Boolean
})
export type UsageRecord = typeof UsageRecord.Type

/** At most one record per root per this long. */
export const USAGE_RECORD_INTERVAL_MS = 60 * 60 * 1000
/** Records of the last week are kept as written (at most hourly); older ones are thinned to one a day per root. */
export const USAGE_HOURLY_KEEP_MS = 7 * 24 * 60 * 60 * 1000
/** Records older than this are dropped. */
export const USAGE_KEEP_MS = 400 * 24 * 60 * 60 * 1000
/** Whatever the clock did, never more records than this (the oldest go first): the file stays under ~256 KiB. */
export const USAGE_MAX_RECORDS = 1500
/** A history file larger than this is not read (hostile input): the thinning keeps it far below. */
export const USAGE_FILE_MAX_BYTES = 1 << 20
const DAY_MS = 24 * 60 * 60 * 1000

export interface DecodedHistory {
  readonly records: ReadonlyArray<UsageRecord>
  /** The first line that does not decode (1-based) and why; `null` when every line does. */
  readonly problem: { readonly line: number; readonly why: string } | null
}

const decodeRecord = Schema.decodeUnknownEither(UsageRecord, { onExcessProperty: "error" })

/**
 * The history file's text, strictly: every non-empty line one `UsageRecord` (no unknown field). The records
 * before the first bad line are kept; the bad line and what follows are not trusted (`problem`), and the file
 * is then never rewritten by the library (docs/dashboard.md "Dashboard").
 */
export const decodeHistory = (text: string): DecodedHistory => {
  const records: Array<UsageRecord> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (line === "") continue
    let json: unknown
    try {
      json = JSON.parse(line)
    } catch {
      return { records, problem: { line: i + 1, why: "not valid JSON" } }
    }
    const decoded = decodeRecord(json)
    if (decoded._tag === "Left") return { records, problem: { line: i + 1, why: "not a usage record" } }
    records.push(decoded.right)
  }
  return { records, problem: null }
}

export const encodeHistory = (records: ReadonlyArray<UsageRecord>): string => records.map((r) => JSON.stringify(r) + "\n").join("")

/**
 * A record for `root` is due at `now` unless one was written within the last hour. A record stamped in the
 * future (another host's clock, a clock set back) does not hold new ones off beyond an hour from now.
 */
export const isRecordDue = (records: ReadonlyArray<UsageRecord>, root: UsageRoot, now: number): boolean =>
  !records.some((r) => r.root === root && r.at > now - USAGE_RECORD_INTERVAL_MS && r.at <= now + USAGE_RECORD_INTERVAL_MS)

/**
 * The bounded history after `now`: records of the last week as they are; older ones thinned to the newest of
 * each (root, UTC day); none older than `USAGE_KEEP_MS`; at most `USAGE_MAX_RECORDS` (the newest). Sorted by
 * time, then root.
 */
export const thinHistory = (records: ReadonlyArray<UsageRecord>, now: number): ReadonlyArray<UsageRecord> => {
  const sorted = [...records].sort((a, b) => a.at - b.at || (a.root < b.root ? -1 : a.root > b.root ? 1 : 0))
  const newestOfDay = new Map<string, number>()
  sorted.forEach((r, i) => {
    if (now - r.at > USAGE_HOURLY_KEEP_MS) newestOfDay.set(`${r.root}/${Math.floor(r.at / DAY_MS)}`, i)
  })
  const kept = sorted.filter((r, i) => {
    const age = now - r.at
    if (age > USAGE_KEEP_MS) return false
    if (age <= USAGE_HOURLY_KEEP_MS) return true
    return newestOfDay.get(`${r.root}/${Math.floor(r.at / DAY_MS)}`) === i
  })
  return kept.slice(Math.max(0, kept.length - USAGE_MAX_RECORDS))
}

/** The history with `record` appended, thinned and bounded. */
export const appendRecord = (records: ReadonlyArray<UsageRecord>, record: UsageRecord, now: number): ReadonlyArray<UsageRecord> =>
  thinHistory([...records, record], now)

/** The records of the last `days` days, oldest first. */
export const recordsSince = (records: ReadonlyArray<UsageRecord>, now: number, days: number): ReadonlyArray<UsageRecord> =>
  records.filter((r) => r.at >= now - days * DAY_MS).sort((a, b) => a.at - b.at)
