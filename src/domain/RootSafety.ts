/**
 * WR10, in one place: a work root, category or tenant directory is safe to descend and prune only when it is
 * a real directory (not a symlink), owned by the current user and not writable by group or others. The
 * pruner refuses the first problem (`UnsafeRoot`); the doctor reports each one. Pure.
 */
import type { UnsafeRootReason } from "./Errors.js"
import { aFileType } from "./FileTypeWords.js"

/** What an `lstat` says about the directory (the port's `FileInfo` fits). */
export interface DirectoryStat {
  readonly type: string
  readonly uid: number
  readonly mode: number
}

export interface RootSafetyProblem {
  readonly reason: UnsafeRootReason
  readonly detail: string
}

/** The permission bits as `ls -l`'s octal would write them (`700`, `2775`): the one mode formatting. */
export const modeString = (mode: number): string => (mode & 0o7777).toString(8).padStart(3, "0")

/** Who besides its owner may write in a directory with this mode: others (world), else its group, else nobody. */
export const writableBy = (mode: number): "world" | "group" | undefined =>
  (mode & 0o002) !== 0 ? "world" : (mode & 0o020) !== 0 ? "group" : undefined

/**
 * Every WR10 problem of one directory, in the order the pruner checks them; empty when safe. A symlink or a
 * non-directory is the only problem reported (nothing behind it is looked at). `currentUid` is `null` where
 * ownership cannot be checked.
 */
export const rootSafetyProblems = (info: DirectoryStat, currentUid: number | null): ReadonlyArray<RootSafetyProblem> => {
  if (info.type === "SymbolicLink") return [{ reason: "symlink", detail: "it is a symbolic link; pruning never follows links" }]
  if (info.type !== "Directory") return [{ reason: "not-a-directory", detail: `it is ${aFileType(info.type)}` }]
  const problems: Array<RootSafetyProblem> = []
  if (currentUid !== null && info.uid !== currentUid) {
    problems.push({ reason: "foreign-owner", detail: `owned by uid ${info.uid}, not the current user ${currentUid}` })
  }
  if (writableBy(info.mode) !== undefined) {
    problems.push({ reason: "group-or-world-writable", detail: `mode ${modeString(info.mode)} is writable by group or others` })
  }
  return problems
}

/** Whether a walk may descend into it: a real directory (ownership and mode problems are reported, not fatal to a read). */
export const isDescendable = (info: DirectoryStat): boolean => info.type === "Directory"
