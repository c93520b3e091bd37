/**
 * The doctor's answer when a read of one of the library's own paths below the agent dir answered ENOTDIR:
 * some entry on the way is not a directory (`state/user-profile` a regular file, the config history's
 * directory a symlink to one). What lives below it was never there, so the read's own finding (an unsafe
 * profile, an interrupted config change) would be false, and its fix would fail; the entry in the way is
 * the finding (`library-path-blocked`), once.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import type { FindingDraft } from "../../domain/FindingDraft.js"
import { aFileType } from "../../domain/FileTypeWords.js"
import type { Deps } from "./deps.js"

/**
 * The first entry between `agentDir` and `path` (exclusive) that is not a directory, with what it is; none
 * when every entry on the way is one (the path was fixed meanwhile) or is missing (then nothing is below it).
 * A symlink to a directory is a way through, as the kernel takes it; a symlink to anything else blocks.
 */
const firstBlocker = (deps: Pick<Deps, "fs">, agentDir: string, path: string) =>
  Effect.gen(function*() {
    const parts = NodePath.relative(agentDir, NodePath.dirname(path)).split(NodePath.sep).filter((p) => p !== "")
    let at = agentDir
    for (const [depth, part] of parts.entries()) {
      at = NodePath.join(at, part)
      const info = yield* Effect.either(deps.fs.lstat(at))
      // Missing: nothing below it either. Unreadable: nobody can tell what is in the way.
      if (info._tag === "Left") return info.left.reason === "NotFound" ? undefined : "unknown" as const
      if (info.right.type === "Directory") continue
      if (info.right.type === "SymbolicLink") {
        const target = yield* Effect.either(deps.fs.statFollowingLinks(at))
        if (target._tag === "Right" && target.right.type === "Directory") continue
        const what = target._tag === "Right" ? `a symlink to ${aFileType(target.right.type)}` : "a dangling symlink"
        return { path: at, what, rootEntry: depth === 0, link: true }
      }
      return { path: at, what: aFileType(info.right.type), rootEntry: depth === 0, link: false }
    }
    return undefined
  })

/**
 * The finding for `path` (one of `what`'s paths, e.g. "the user profile") that a read could not reach (ENOTDIR).
 * None when the entry in the way is a root entry that is not a symlink: the root's own findings name it
 * already (`canonical-kind-mismatch`, `unknown-root-entry`); `unknown` (the read's own finding stands) when an
 * entry on the way cannot be looked at. Read-only.
 */
export const blockedPathFindings = (
  deps: Pick<Deps, "fs">,
  agentDir: string,
  path: string,
  what: string,
  unknown: FindingDraft
): Effect.Effect<ReadonlyArray<FindingDraft>> =>
  Effect.map(firstBlocker(deps, agentDir, path), (blocker): ReadonlyArray<FindingDraft> =>
    blocker === "unknown"
      ? [unknown]
      : blocker === undefined || (blocker.rootEntry && !blocker.link)
      ? []
      : [{
        code: "library-path-blocked",
        path: blocker.path,
        message: `${blocker.what} where ${what} keeps a directory: nothing below it can be read or written`,
        fix: `move it aside; the library makes the directory again when ${what} is next written`
      }])
