/**
 * Segments already found valid (docs/work-runs.md "Work runs": a segment decoded once is not decoded again). Whether a
 * string is a valid segment depends on its characters alone, so remembering a valid one can never be wrong:
 * a caller who decoded `Segment` once (or passed the same tenant before) pays a set lookup, not the rule. The
 * set is bounded and emptied when full, so a long-lived process that meets many names keeps a small one. Only
 * the decoding paths use it (the `Segment` schema, `decodeSegment`, `parseSegment`); a scan that merely sorts
 * names it found on disk calls the rule directly and remembers nothing.
 */

const REMEMBERED_MAX = 4096
const remembered = new Set<string>()
let evaluations = 0

/** `rule(value)`, unless `value` is a string already found valid; a valid string is remembered. */
export const rememberValid = <V>(value: unknown, rule: (value: unknown) => V | null): V | null => {
  if (typeof value === "string" && remembered.has(value)) return null
  evaluations++
  const violation = rule(value)
  if (violation === null && typeof value === "string") {
    if (remembered.size >= REMEMBERED_MAX) remembered.clear()
    remembered.add(value)
  }
  return violation
}

/** How many times the rule ran through `rememberValid` in this process (what a test measures). */
export const segmentRuleEvaluations = (): number => evaluations
