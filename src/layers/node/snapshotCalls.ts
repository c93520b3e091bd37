/**
 * The two per-directory calls of a state snapshot's walk (services/StateBackups.ts) on the native `fsat`
 * addon: `readDirectoryInfo` (one C call lists a directory and lstats every entry relative to its
 * descriptor, answering plain doubles: no `fs.Stats` with four `Date`s per file) and `linkEach` (one C call
 * links a directory's unchanged files, `linkat` relative to two descriptors, no path resolved per file).
 * An unchanged incremental of 10,000 files is one lstat and one link per file: these were most of its
 * JavaScript cost (BENCHMARKS.md "State snapshots"). The portable versions are in NodeFileSystem.ts; both pass
 * the same conformance suite. And `seek` (SEEK_DATA/SEEK_HOLE), with which a snapshot's copies keep holes
 * (sparse.ts; without it they skip all-zero blocks).
 */
import * as Effect from "effect/Effect"
import type { FileSystemError } from "../../domain/Errors.js"
import type { DirEntryInfo, FileType } from "../../services/FileSystem.js"
import { type Fsat, fsatError, FsatType } from "./fsat.js"
import { hasEscapedBytes } from "../../domain/NameBytes.js"
import { osPath } from "./osPath.js"
import { toFileSystemError } from "./support.js"

type ReadDirectoryInfo = (path: string) => Effect.Effect<ReadonlyArray<DirEntryInfo>, FileSystemError>

export interface SnapshotCalls {
  /**
   * `portable`: the listing through `node:fs`, for a directory where C gave back a name it could not carry as
   * it is (U+FFFD: bytes that are not UTF-8, decoded lossily; domain/NameBytes.ts). Rare; same answer.
   */
  readonly readDirectoryInfo: (path: string, portable: ReadDirectoryInfo) => Effect.Effect<ReadonlyArray<DirEntryInfo>, FileSystemError>
  readonly linkEach: (
    fromDir: string,
    toDir: string,
    names: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<FileSystemError | undefined>, FileSystemError>
  /** Absent from an addon built before it existed: copies then skip all-zero blocks instead. */
  // The addon's own type: this module's declarations are reached from the package root, which must need no @types/node.
  readonly seek?: NonNullable<Fsat["seek"]> | undefined
}

/** Doubles per entry in `listInfo`'s stats (fsat.c INFO_FIELDS) of an addon that does not say (before `blocks`). */
const FIELDS_BEFORE_BLOCKS = 8

const typeOf = (t: number): FileType =>
  t === FsatType.File ? "File" : t === FsatType.Directory ? "Directory" : t === FsatType.SymbolicLink ? "SymbolicLink" : "Other"

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** What C's UTF-8 decoding makes of a byte that is not UTF-8 (it also stands for itself in a valid name). */
const REPLACEMENT = "\ufffd"

/** The native calls, or `undefined` for an addon built before they existed (a stale build/). */
export const nativeSnapshotCalls = (fsat: Fsat): SnapshotCalls | undefined => {
  if (typeof fsat.listInfo !== "function" || typeof fsat.linkEach !== "function") return undefined
  const listInfo = fsat.listInfo
  const linkEach = fsat.linkEach
  const FIELDS = typeof fsat.infoFields === "number" ? fsat.infoFields : FIELDS_BEFORE_BLOCKS
  const seek = fsat.seek
  return {
    seek,
    readDirectoryInfo: (path, portable) =>
      Effect.suspend(() => {
        const listed = listInfo(osPath(path))
        if (typeof listed === "number") return Effect.fail(toFileSystemError("readDirectoryInfo", path, fsatError("readDirectoryInfo", path, listed)))
        const { names, stats } = listed
        for (const name of names) if (name.includes(REPLACEMENT)) return portable(path)
        const order = names.map((_, i) => i).sort((a, b) => byName(names[a]!, names[b]!))
        const out = new Array<DirEntryInfo>(order.length)
        for (let k = 0; k < order.length; k++) {
          const i = order[k]!
          const at = i * FIELDS
          out[k] = {
            name: names[i]!,
            info: {
              type: typeOf(stats[at]!),
              size: stats[at + 1]!,
              mode: stats[at + 2]!,
              uid: stats[at + 3]!,
              ino: stats[at + 4]!,
              dev: stats[at + 5]!,
              nlink: stats[at + 6]!,
              mtimeMs: stats[at + 7]!,
              ...(FIELDS > 8 ? { blocks: stats[at + 8]! } : {})
            }
          }
        }
        return Effect.succeed(out)
      }),
    linkEach: (fromDir, toDir, names) =>
      Effect.sync(() => {
        const from = fromDir.endsWith("/") ? fromDir : `${fromDir}/`
        const failure = (i: number, answer: number) =>
          toFileSystemError("linkEach", from + names[i], fsatError("link", from + names[i], answer))
        const errnos = new Int32Array(names.length)
        const opened = linkEach(osPath(fromDir), osPath(toDir), names.some(hasEscapedBytes) ? names.map(osPath) : names, errnos)
        const out = new Array<FileSystemError | undefined>(names.length)
        for (let i = 0; i < names.length; i++) {
          const answer = opened !== 0 ? opened : -errnos[i]!
          if (answer !== 0) out[i] = failure(i, answer)
        }
        return out
      })
  }
}
