/**
 * "Did you mean": the known names a mistyped flag or command is a near miss of. Pure; imports nothing.
 *
 * Names are compared without their dashes and case (`-json`, `--JSON` → `--json`). A near miss is at most one
 * edit away (a letter added, dropped, changed, or two swapped), two for a name of five letters or more, or a
 * word that is the start of the name or starts with it (`--dry` → `--dry-run`, `--json-x` → `--json`); a
 * one-letter flag (`-m`) only matches itself in another case. The closest ones are suggested, all of them
 * when they tie.
 */

const bare = (name: string): string => name.replace(/^-+/, "").toLowerCase()

/** Edits between `a` and `b` (insert, delete, substitute, swap two neighbours). */
export const editDistance = (a: string, b: string): number => {
  const d: Array<Array<number>> = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1)
      d[i]![j] = best
    }
  }
  return d[a.length]![b.length]!
}

/** How far `typed` is from `known`, or `undefined` when it is no near miss. */
const nearness = (typed: string, known: string): number | undefined => {
  const t = bare(typed)
  const k = bare(known)
  if (t === k) return 0
  if (k.length <= 1 || t.length === 0) return undefined
  const distance = editDistance(t, k)
  const allowed = k.length >= 5 ? 2 : 1
  const prefix = Math.min(t.length, k.length) >= 3 && (k.startsWith(t) || t.startsWith(k))
  const score = Math.min(distance, prefix ? 1 : Infinity)
  return score <= allowed ? score : undefined
}

/** A known name, or one compared as `match` and suggested as `shown` (`ls` → `work ls`). */
export type Candidate = string | { readonly match: string; readonly shown: string }

/** The known names `typed` is a near miss of, closest first (ties all kept), in their given order. */
export const nearMisses = (typed: string, known: ReadonlyArray<Candidate>): ReadonlyArray<string> => {
  const scored = known.flatMap((c) => {
    const { match, shown } = typeof c === "string" ? { match: c, shown: c } : c
    const score = nearness(typed, match)
    return score === undefined ? [] : [{ shown, score }]
  })
  const best = Math.min(...scored.map((s) => s.score))
  return [...new Set(scored.filter((s) => s.score === best).map((s) => s.shown))]
}

/** ` (did you mean --json?)`, ` (did you mean --root or --json?)`, or `""` when nothing is near. */
export const didYouMean = (typed: string, known: ReadonlyArray<Candidate>): string => {
  const near = nearMisses(typed, known)
  if (near.length === 0) return ""
  const listed = near.length === 1 ? near[0]! : `${near.slice(0, -1).join(", ")} or ${near[near.length - 1]!}`
  return ` (did you mean ${listed}?)`
}
