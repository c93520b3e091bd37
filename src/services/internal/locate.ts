/**
 * Where a path resolves on disk (the `ResolvedLocation` of `domain/TierIdentity.ts`): the deepest existing
 * prefix, links followed, and that directory's physical ancestors, reached with "/.." (which the OS resolves
 * from the directory itself, not from the path's text). The Effect half of "compare directories by identity
 * (device + inode after resolving links), never by string": the tiers (TD5) and the state-backup root (BK2)
 * both gather locations here and judge them with `resolvedWithin`.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import { type FileSystemError, TierUnresolvable } from "../../domain/Errors.js"
import { type FileIdentity, identityOf, type ResolvedLocation, sameFile } from "../../domain/TierIdentity.js"
import type { FileInfo, FileSystem } from "../FileSystem.js"

/** Physical ancestors followed at most (a deeper path is refused rather than half-compared). */
const MAX_ANCESTORS = 4096

const MAX_LOCATE_ATTEMPTS = 8

const isAbsentComponent = (error: FileSystemError): boolean => error.reason === "NotFound" || error.reason === "NotADirectory"

export const locate = (fs: FileSystem["Type"], path: string, attempt = 1): Effect.Effect<ResolvedLocation, FileSystemError | TierUnresolvable> =>
  locateOnce(fs, path).pipe(
    // The tree changed under the walk (a concurrent clear removed the directory being climbed): start again.
    Effect.catchIf((e) => e._tag === "FileSystemError" && isAbsentComponent(e) && attempt < MAX_LOCATE_ATTEMPTS, () => locate(fs, path, attempt + 1))
  )

const locateOnce = (fs: FileSystem["Type"], path: string): Effect.Effect<ResolvedLocation, FileSystemError | TierUnresolvable> =>
  Effect.gen(function*() {
    const missing: Array<string> = []
    let prefix = NodePath.resolve(path)
    let top: FileInfo | undefined
    while (top === undefined) {
      // "/" itself missing is the port's own failure, passed on as it is.
      const isRoot = NodePath.dirname(prefix) === prefix
      top = yield* fs.statFollowingLinks(prefix).pipe(Effect.catchIf((e) => !isRoot && isAbsentComponent(e), () => Effect.succeed(undefined)))
      if (top !== undefined) break
      missing.unshift(NodePath.basename(prefix))
      prefix = NodePath.dirname(prefix)
    }
    const chain: Array<FileIdentity> = [identityOf(top)]
    let dir = prefix
    if (top.type !== "Directory") {
      dir = NodePath.dirname(prefix)
      chain.push(identityOf(yield* fs.statFollowingLinks(dir)))
    }
    for (let i = 0; ; i++) {
      if (i >= MAX_ANCESTORS) {
        return yield* Effect.fail(new TierUnresolvable({ path, detail: `more than ${MAX_ANCESTORS} ancestors to compare` }))
      }
      dir = dir.endsWith("/") ? `${dir}..` : `${dir}/..`
      const up = identityOf(yield* fs.statFollowingLinks(dir))
      if (sameFile(up, chain[chain.length - 1]!)) break // "/.." is "/"
      chain.push(up)
    }
    return { chain, missing }
  })
