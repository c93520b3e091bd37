/**
 * `readDirectoryPartsEach` for the native walker (fsat.c `readRuns`): a batch of run directories read on the
 * thread pool, each opened once (never through a link) and its manifest, lease listing and, when asked, size
 * read relative to it, so a view costs about the syscalls `du` makes for the same tree instead of a `node:fs`
 * call per file (BENCHMARKS.md "Views"). Each part is turned into what its single call answers (the errors'
 * reason and errno; the port's readFile and readDirectory refusals worded as theirs); a listing holding a
 * name C cannot hand over as it is (not UTF-8, U+FFFD, an unknown type) is listed by the single call.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NodePath from "node:path"
import type { FileSystemError } from "../../domain/Errors.js"
import type { DirectoryParts, DirectoryPartsRead, DirEntry, FileType, TreeMeasure } from "../../services/FileSystem.js"
import { type Fsat, fsatError } from "./fsat.js"
import { osPath } from "./osPath.js"
import { failWith, toFileSystemError } from "./support.js"

/** The answers this module reads (fsat.c READ_RUNS_VERSION). */
export const READ_RUNS_VERSION = 1

const TYPES: ReadonlyArray<FileType> = ["Other", "File", "Directory", "SymbolicLink", "Other"]

type ReadDirectory = (path: string) => Effect.Effect<ReadonlyArray<DirEntry>, FileSystemError>

const byName = (a: DirEntry, b: DirEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** The native form, or undefined for an addon without it (a stale build/: the port's fallback composes the single calls). */
export const makeNativeReadParts = (fsat: Fsat, readDirectory: ReadDirectory) => {
  const readRuns = fsat.readRunsVersion === READ_RUNS_VERSION ? fsat.readRuns : undefined
  if (readRuns === undefined) return undefined
  return (dirs: ReadonlyArray<string>, parts: DirectoryParts): Effect.Effect<ReadonlyArray<DirectoryPartsRead>> =>
    Effect.suspend(() => {
      const out = new Array<DirectoryPartsRead>(dirs.length)
      /** Directories whose listing the single call reads (a name C does not hand over as it is). */
      const relist: Array<number> = []
      const listingPath = (index: number) => NodePath.join(dirs[index]!, parts.listing)
      const read = Effect.async<void>((resume) => {
        const queued = readRuns(
          dirs.map(osPath),
          parts.file,
          parts.listing,
          parts.maxBytes,
          parts.measure === undefined ? -1 : parts.measure.maxEntries,
          parts.measure === undefined ? 0 : parts.measure.maxDepth,
          (index, fileAnswer, fileData, listAnswer, names, types, m0, m1, m2, m3, m4, m5) => {
            const dir = dirs[index]!
            const file = fileOf(NodePath.join(dir, parts.file), parts.maxBytes, fileAnswer, fileData)
            const measure = parts.measure === undefined ? undefined : measureOf(dir, m0, m1, m2, m3, m4, m5)
            if (listAnswer === 1) relist.push(index)
            const listing: DirectoryPartsRead["listing"] = listAnswer === 0
              ? Either.right(listingOf(names, types))
              : Either.left(toFileSystemError("readDirectory", listingPath(index), fsatError("scandir", listingPath(index), listAnswer)))
            out[index] = { file, listing, measure }
            // One completion answers the whole batch, in order: the last answer is the batch's end.
            if (index === dirs.length - 1) resume(Effect.void)
          }
        )
        if (queued !== 0) {
          const error = (method: string, path: string) => toFileSystemError(method, path, fsatError("readRuns", path, queued))
          dirs.forEach((dir, index) => {
            out[index] = {
              file: Either.left(error("readFile", NodePath.join(dir, parts.file))),
              listing: Either.left(error("readDirectory", listingPath(index))),
              measure: parts.measure === undefined ? undefined : Either.left(error("measureTree", dir))
            }
          })
          resume(Effect.void)
        }
      })
      return Effect.flatMap(read, () =>
        Effect.as(
          Effect.forEach(relist, (index) =>
            Effect.map(Effect.either(readDirectory(listingPath(index))), (listing) => {
              out[index] = { ...out[index]!, listing }
            }), { discard: true }),
          out
        ))
    })
}

/** readFile's answer from C's: the bytes, an errno, or one of readFile's own refusals (fsat.c `readRuns`). */
const fileOf = (path: string, maxBytes: number, answer: number, data: Uint8Array | string | number): Either.Either<Uint8Array, FileSystemError> => {
  switch (answer) {
    case 0:
      return Either.right(new Uint8Array((data as Uint8Array).buffer, (data as Uint8Array).byteOffset, (data as Uint8Array).byteLength))
    case 1:
      return Either.left(failWith("readFile", path, "EISDIR", "is a directory"))
    case 2:
      return Either.left(failWith("readFile", path, "", "not a regular file"))
    case 3:
      return Either.left(failWith("readFile", path, "EFBIG", `${data as number} bytes exceeds ${maxBytes}`))
    case 4:
      return Either.left(failWith("readFile", path, "EFBIG", `grew beyond ${maxBytes} bytes`))
    default:
      return Either.left(toFileSystemError("readFile", path, fsatError(String(data), path, answer)))
  }
}

const listingOf = (names: string, types: string): Array<DirEntry> => {
  if (types.length === 0) return []
  const split = names.split("/")
  return split.map((name, i): DirEntry => ({ name, type: TYPES[types.charCodeAt(i) - 48] ?? "Other" })).sort(byName)
}

/** measureTree's answer from the walk's (nativeMeasure.ts reads the same six). */
const measureOf = (
  root: string,
  answer: number,
  a: number | string,
  b: boolean | string,
  bytes: number,
  apparentBytes: number,
  fileBytes: number
): Either.Either<TreeMeasure, FileSystemError> =>
  answer === 0
    ? Either.right({ bytes, apparentBytes, fileBytes, entries: a as number, complete: b as boolean })
    : Either.left(toFileSystemError("measureTree", root, fsatError(String(a), String(b), answer)))
