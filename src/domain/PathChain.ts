/**
 * The directories a write or removal under a managed root goes through (docs/tiers.md "Extension data tiers (web host)"): each one below the
 * root must be a real directory, never a symlink or a file, so that nothing lands outside the root through an
 * intermediate link. Pure: the list of paths, and the judgement of what an `lstat` found there.
 */
import * as NodePath from "node:path"
import { aFileType } from "./FileTypeWords.js"

/**
 * The directories strictly below `root` down to `file`'s parent, outermost first (`root/a`, `root/a/b` for
 * `root/a/b/f`); empty when `file` sits in `root` itself; `undefined` when `file` is not below `root`.
 * The root is the anchor the caller named (it may itself be a link, as every module follows it).
 */
export const dirsBelowRoot = (root: string, file: string): ReadonlyArray<string> | undefined => {
  const rel = NodePath.relative(root, file)
  if (rel === "" || rel === ".." || rel.startsWith(`..${NodePath.sep}`) || NodePath.isAbsolute(rel)) return undefined
  const parts = rel.split(NodePath.sep).slice(0, -1)
  return parts.map((_, i) => NodePath.join(root, ...parts.slice(0, i + 1)))
}

/** Why an existing component cannot be gone through (`null`: a real directory). `type` is the port's `FileType`. */
export const chainComponentViolation = (type: string): string | null =>
  type === "Directory" ? null : `${aFileType(type)} on the way (never written through)`
