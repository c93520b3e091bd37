/**
 * A migration plan's paths as untrusted input (docs/migrations.md "Migrations"): a plan file is written by an extension
 * author and shipped with a deployment, and a typo or a hostile edit must not move anything outside the root
 * its step names. So every `from` / `to` is decoded here, by this one rule, before anything is read or moved
 * (the plan file's Schema and `Migration.runPlan` both call it): relative to the step's root, normalised, no
 * `..`, never absolute, so joining it to the root always lands inside the root. (Links on the way are the
 * other half, judged on disk: `PathChain.ts`.)
 */

/** Longest path (UTF-16 units) a plan may name: each is at least as many bytes, and the kernel's PATH_MAX is 4096 bytes. */
export const PLAN_PATH_MAX = 4096

export interface PlanPath {
  /** The path as written (already normal). */
  readonly path: string
  /** Its names, outermost first; never empty, `.` or `..`. */
  readonly segments: ReadonlyArray<string>
}

export type PlanPathDecoded = { readonly ok: true; readonly value: PlanPath } | { readonly ok: false; readonly why: string }

const refused = (why: string): PlanPathDecoded => ({ ok: false, why })

/**
 * Decode one plan path: names separated by single `/`, none empty, `.` or `..`; not absolute (no leading `/`,
 * no `C:` drive); no `\` (a separator on Windows, so a plan would mean two things) and no NUL. The root itself
 * (an empty path) is refused too: a step moves something inside its root, never the root.
 */
export const decodePlanPath = (path: string): PlanPathDecoded => {
  if (path.length === 0) return refused("is empty (a step names something inside its root, never the root itself)")
  if (path.length > PLAN_PATH_MAX) return refused(`is longer than ${PLAN_PATH_MAX} characters`)
  if (path.includes("\0")) return refused("holds a NUL character")
  if (path.startsWith("/")) return refused("is absolute (a plan path is relative to its step's root)")
  if (/^[A-Za-z]:/.test(path)) return refused("starts with a drive letter (a plan path is relative to its step's root)")
  if (path.includes("\\")) return refused("holds a backslash (separate names with /)")
  const segments = path.split("/")
  for (const segment of segments) {
    if (segment === "") return refused(path.endsWith("/") ? "ends with /" : "has an empty segment (//)")
    if (segment === "..") return refused("has a \"..\" segment (a plan path never leaves its step's root)")
    if (segment === ".") return refused("has a \".\" segment (write the path without it)")
  }
  return { ok: true, value: { path, segments } }
}

/** Whether one decoded path is the other or lies below it (a step whose paths nest cannot move one into the other). */
export const pathsNest = (a: PlanPath, b: PlanPath): boolean => {
  const n = Math.min(a.segments.length, b.segments.length)
  for (let i = 0; i < n; i++) if (a.segments[i] !== b.segments[i]) return false
  return true
}
