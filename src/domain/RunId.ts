/**
 * Generated run ids (docs/safety.md "How runs stay safe": creation is atomic): portable segments that sort lexicographically by creation time.
 *
 * Format, fixed width, 37 characters, all lowercase:
 *
 *     yyyymmddthhmmssSSSz-qqqqqqqq-rrrrrrrr
 *     20261130t125426123z-00000000-1a2b3c4d
 *
 * - `yyyymmddthhmmssSSSz`: the creation instant in UTC to the millisecond (ISO 8601 basic form, lowercased
 *   because segments refuse uppercase);
 * - `qqqqqqqq`: the per-process sequence number, 8 hex digits, so ids made in the same millisecond by one
 *   process keep their creation order;
 * - `rrrrrrrr`: 31 random bits (Effect Random's 0 … 2^31 − 2), 8 hex digits, so ids from different processes do not collide.
 *
 * Because every part has a fixed width, string order equals (time, sequence, random) order.
 */
import type { Segment } from "./Segment.js"

/** Earliest and latest instants the 4-digit year can hold; other inputs are clamped into this range. */
export const RUN_ID_MIN_MS = 0
export const RUN_ID_MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
const U32 = 0x1_0000_0000

export const RUN_ID_PATTERN = /^(\d{4})(\d{2})(\d{2})t(\d{2})(\d{2})(\d{2})(\d{3})z-([0-9a-f]{8})-([0-9a-f]{8})$/

const pad = (n: number, width: number): string => String(n).padStart(width, "0")

/** Integer in [0, 2^32 - 1]; out-of-range values saturate (so the order stays non-decreasing). */
const u32Hex = (n: number): string => {
  const v = Number.isFinite(n) ? Math.min(U32 - 1, Math.max(0, Math.floor(n))) : n > 0 ? U32 - 1 : 0
  return v.toString(16).padStart(8, "0")
}

/**
 * A fresh run id. `nowMs` is epoch milliseconds (clamped to years 1970–9999), `random` an integer in
 * [0, 2^32) from Effect's `Random`, `sequence` a per-process counter (saturates at 2^32 - 1; the random part
 * keeps such ids distinct). Pure: the caller supplies time and randomness.
 */
export const generateRunId = (nowMs: number, random: number, sequence: number): Segment => {
  const ms = Number.isNaN(nowMs) ? 0 : Math.min(RUN_ID_MAX_MS, Math.max(RUN_ID_MIN_MS, Math.floor(nowMs)))
  const d = new Date(ms)
  const stamp = pad(d.getUTCFullYear(), 4) + pad(d.getUTCMonth() + 1, 2) + pad(d.getUTCDate(), 2) + "t" +
    pad(d.getUTCHours(), 2) + pad(d.getUTCMinutes(), 2) + pad(d.getUTCSeconds(), 2) +
    pad(d.getUTCMilliseconds(), 3) + "z"
  // The format is a valid segment by construction (checked by the property tests), so no re-validation here.
  return `${stamp}-${u32Hex(sequence)}-${u32Hex(random)}` as Segment
}

/** The parts of a generated id, or `undefined` for a named run (or any other string). */
export const parseGeneratedRunId = (
  runId: string
): { readonly createdAt: number; readonly sequence: number; readonly random: number } | undefined => {
  const m = RUN_ID_PATTERN.exec(runId)
  if (m === null) return undefined
  const [, y, mo, d, h, mi, s, ms, seq, rnd] = m.map((part, i) => (i >= 8 ? part : Number(part))) as [
    unknown, number, number, number, number, number, number, number, string, string
  ]
  const createdAt = Date.UTC(y, mo - 1, d, h, mi, s, ms)
  // Reject impossible calendar values (Date.UTC would roll them over) by round-tripping.
  if (Number.isNaN(createdAt) || createdAt < RUN_ID_MIN_MS || generateRunId(createdAt, 0, 0).slice(0, 19) !== runId.slice(0, 19)) {
    return undefined
  }
  return { createdAt, sequence: parseInt(seq, 16), random: parseInt(rnd, 16) }
}
