/**
 * Portable path segments (docs/work-runs.md "Work runs"): category, tenant, run id and extension namespace.
 * One rule, one Schema, so CLI input, config and API arguments decode the same way.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { characterWords } from "./Display.js"
import { InvalidSegment } from "./Errors.js"
import { rememberValid } from "./SegmentMemo.js"
import { describeValue, kindOfValue } from "./Values.js"

export const SEGMENT_MAX_LENGTH = 64

const DEVICE_NAMES = new Set([
  "con", "prn", "aux", "nul", "clock$",
  ...Array.from({ length: 10 }, (_, i) => `com${i}`),
  ...Array.from({ length: 10 }, (_, i) => `lpt${i}`)
])

/** Which rule a refused segment broke. */
export type SegmentRule =
  | "not-a-string"
  | "empty"
  | "too-long"
  | "uppercase"
  | "invalid-character"
  | "first-character"
  | "trailing-dot"
  | "device-name"

const ALLOWED = /^[a-z0-9._-]$/
const FIRST = /^[a-z0-9]$/

/**
 * Checks a candidate against WR2; returns the first broken rule with a human message, or `null`. Any value is
 * accepted (JavaScript callers and JSON files pass `undefined`, `5`, `{}`): a non-string is `not-a-string`.
 */
export const segmentViolation = (value: unknown): { readonly rule: SegmentRule; readonly message: string } | null => {
  if (typeof value !== "string") {
    return { rule: "not-a-string", message: `must be a string (got ${kindOfValue(value)}: ${describeValue(value)})` }
  }
  if (value.length === 0) return { rule: "empty", message: "must not be empty" }
  if (value.length > SEGMENT_MAX_LENGTH) {
    return { rule: "too-long", message: `must be at most ${SEGMENT_MAX_LENGTH} characters (got ${value.length})` }
  }
  for (const ch of value) {
    if (ch >= "A" && ch <= "Z") {
      return { rule: "uppercase", message: `must be lowercase (found "${ch}"; uppercase is refused, never lowercased)` }
    }
    if (!ALLOWED.test(ch)) {
      return { rule: "invalid-character", message: `may only contain a-z, 0-9, ".", "_" and "-" (found ${characterWords(ch)})` }
    }
  }
  if (!FIRST.test(value[0]!)) {
    return { rule: "first-character", message: `must start with a-z or 0-9 (starts with ${characterWords(value[0]!)})` }
  }
  if (value.endsWith(".")) return { rule: "trailing-dot", message: "must not end with \".\"" }
  const stem = value.split(".")[0]!
  if (DEVICE_NAMES.has(stem)) {
    return { rule: "device-name", message: `must not be a Windows device name ("${stem}"), with or without an extension` }
  }
  return null
}

/**
 * Why a directory named `name` is none the library makes (WR2), in the words a report gives it (`its name must
 * be lowercase …`); `null` for a valid segment. `work prune --all`'s refusal and the doctor's finding both say it.
 */
export const misnamedWhy = (name: string): string | null => {
  const violation = segmentViolation(name)
  return violation === null ? null : `its name ${violation.message}`
}

/** `segmentViolation`, remembered for the strings it found valid (domain/SegmentMemo.ts). */
const decodingViolation = (value: unknown) => rememberValid(value, segmentViolation)

/**
 * A validated portable segment. Every API that takes a category, tenant, run id, namespace or extension id
 * takes a `Segment` as it is: one decoded here once is not checked by the rule again (SegmentMemo.ts).
 */
export const Segment = Schema.String.pipe(
  Schema.filter((value) => {
    const v = decodingViolation(value)
    return v === null ? true : `${JSON.stringify(value)} is not a valid segment: ${v.message}`
  }, {
    identifier: "Segment",
    description: "1-64 characters of [a-z0-9._-], starting with [a-z0-9], no trailing '.', not a Windows device name"
  }),
  Schema.brand("Segment")
)
export type Segment = typeof Segment.Type

/** Pure decoding helper: Right(segment) or Left({rule, message}) naming the offending value. */
export const parseSegment = (
  value: unknown
): Either.Either<Segment, { readonly rule: SegmentRule; readonly value: string; readonly message: string }> => {
  const v = decodingViolation(value)
  if (v !== null) {
    const shown = describeValue(value)
    return Either.left({ rule: v.rule, value: typeof value === "string" ? value : shown, message: `${typeof value === "string" ? JSON.stringify(value) : shown} is not a valid segment: ${v.message}` })
  }
  return Either.right(Segment.make(value as string, { disableValidation: true }))
}

/**
 * The one conversion from a refused value to the typed error every API fails with: `field` names the
 * argument ("category", "tenant", "runId", "namespace", "extId" …). An `Either` is also an `Effect`.
 */
export const decodeSegment = (field: string, value: unknown): Either.Either<Segment, InvalidSegment> => {
  const v = decodingViolation(value)
  return v === null
    ? Either.right(Segment.make(value as string, { disableValidation: true }))
    : Either.left(
      new InvalidSegment({ field, value: typeof value === "string" ? value : describeValue(value), rule: v.rule, detail: v.message })
    )
}

export const isSegment = Schema.is(Segment)
