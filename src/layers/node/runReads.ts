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
import type { DirectoryParts, DirectoryPartsRead, DirEntry, FileType } from "../../services/FileSystem.js"
import { type Fsat, fsatError } from "./fsat.js"
import { MEASURE_VERSION } from "./nativeMeasure.js"
import { osPath } from "./osPath.js"
import { failWith, toFileSystemError } from "./support.js"

/** The answers this module reads (fsat.c READ_RUNS_VERSION). */
export const READ_RUNS_VERSION = 2

const TYPES: ReadonlyArray<FileType> = ["Other", "File", "Directory", "SymbolicLink", "Other"]

type ReadDirectory = (path: string) => Effect.Effect<ReadonlyArray<DirEntry>, FileSystemError>

const byName = (a: DirEntry, b: DirEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** The native form, or undefined for an addon without it (a stale build/: the port's fallback composes the single calls). */
export const makeNativeReadParts = (fsat: Fsat, readDirectory: ReadDirectory) => {
  // Its sizes stand for measureTree's (reusableMeasure): only from the walk the port's measure uses too.
  const readRuns = fsat.readRunsVersion === READ_RUNS_VERSION && fsat.measureVersion === MEASURE_VERSION ? fsat.readRuns : undefined
  if (readRuns === undefined) return undefined
  return (dirs: ReadonlyArray<string>, parts: DirectoryParts): Effect.Effect<ReadonlyArray<DirectoryPartsRead>> =>
    Effect.suspend(() => {
      const out = new Array<DirectoryPartsRead>(dirs.length)
      /** Directories whose listing the single call reads (a name C does not hand over as it is). */
      const relist: Array<number> = []
      // Paths are joined only for what failed (an error names its path).
      const filePath = (index: number) => NodePath.join(dirs[index]!, parts.file)
      const listingPath = (index: number) => NodePath.join(dirs[index]!, parts.listing)
      /** Every part of every directory failed with `errno` (the batch was not queued, or had no room for its answer). */
      const answerAll = (errno: number) => {
        const error = (method: string, path: string) => toFileSystemError(method, path, fsatError("readRuns", path, errno))
        dirs.forEach((dir, index) => {
          out[index] = {
            file: Either.left(error("readFile", filePath(index))),
            listing: Either.left(error("readDirectory", listingPath(index))),
            measure: parts.measure === undefined ? undefined : Either.left(error("measureTree", dir))
          }
        })
      }
      const answer = (numbers: Float64Array, bytes: Uint8Array, names: string, types: string, texts: ReadonlyArray<string> | undefined) => {
        const allNames = names === "" ? [] : names.split("/")
        let nameAt = 0
        for (let index = 0; index < dirs.length; index++) {
          const at = index * RUN_FIELDS
          const fileAnswer = numbers[at]!
          const file = fileAnswer === 0
            ? Either.right(new Uint8Array(bytes.buffer, bytes.byteOffset + numbers[at + 1]!, numbers[at + 2]!))
            : refusal(filePath(index), parts.maxBytes, fileAnswer, numbers[at + 1]!, texts?.[3 * index] ?? "open")
          const listAnswer = numbers[at + 3]!
          let listing: DirectoryPartsRead["listing"]
          if (listAnswer === 0) {
            const count = numbers[at + 4]!
            listing = Either.right(count === 0 ? [] : listingOf(allNames, types, nameAt, count))
            nameAt += count
          } else {
            if (listAnswer === 1) relist.push(index)
            listing = Either.left(toFileSystemError("readDirectory", listingPath(index), fsatError("scandir", listingPath(index), listAnswer)))
          }
          const measureAnswer = numbers[at + 5]!
          const measure: DirectoryPartsRead["measure"] = measureAnswer === 1
            ? undefined
            : measureAnswer === 0
            ? Either.right({ entries: numbers[at + 6]!, complete: numbers[at + 7] === 1, bytes: numbers[at + 8]!, apparentBytes: numbers[at + 9]!, fileBytes: numbers[at + 10]! })
            : Either.left(toFileSystemError("measureTree", dirs[index]!, fsatError(texts?.[3 * index + 1] ?? "", texts?.[3 * index + 2] ?? dirs[index]!, measureAnswer)))
          out[index] = { file, listing, measure }
        }
      }
      const read = Effect.async<void>((resume) => {
        // One string for the batch, each path ended by a NUL, unless a path is bytes (or holds a NUL itself).
        const paths = dirs.map(osPath)
        const queued = readRuns(
          paths.every((path) => typeof path === "string" && !path.includes("\0")) ? `${paths.join("\0")}\0` : paths,
          parts.file,
          parts.listing,
          parts.maxBytes,
          parts.measure === undefined ? -1 : parts.measure.maxEntries,
          parts.measure === undefined ? 0 : parts.measure.maxDepth,
          (numbers, bytes, names, types, texts) => {
            try {
              if (numbers === undefined) answerAll(-ENOMEM)
              else answer(numbers, bytes!, names!, types!, texts)
              resume(Effect.void)
            } catch (defect) {
              // A bug here, not a file system answer: the view fails as a defect instead of waiting forever.
              resume(Effect.die(defect))
            }
          }
        )
        if (queued !== 0) {
          answerAll(queued)
          resume(Effect.void)
        }
      })
      return Effect.flatMap(read, () =>
        relist.length === 0 ? Effect.succeed(out) : Effect.as(
          Effect.forEach(relist, (index) =>
            Effect.map(Effect.either(readDirectory(listingPath(index))), (listing) => {
              out[index] = { ...out[index]!, listing }
            }), { discard: true }),
          out
        ))
    })
}

/** Numbers per directory in `readRuns`' answer (fsat.c RUN_FIELDS). */
const RUN_FIELDS = 11

/** fsat.c's answer when it had no room for a batch's answer. */
const ENOMEM = 12

/** readFile's failure from C's answer: an errno, or one of readFile's own refusals (fsat.c `readRuns`). */
const refusal = (path: string, maxBytes: number, answer: number, size: number, syscall: string): Either.Either<never, FileSystemError> => {
  switch (answer) {
    case 1:
      return Either.left(failWith("readFile", path, "EISDIR", "is a directory"))
    case 2:
      return Either.left(failWith("readFile", path, "", "not a regular file"))
    case 3:
      return Either.left(failWith("readFile", path, "EFBIG", `${size} bytes exceeds ${maxBytes}`))
    case 4:
      return Either.left(failWith("readFile", path, "EFBIG", `grew beyond ${maxBytes} bytes`))
    default:
      return Either.left(toFileSystemError("readFile", path, fsatError(syscall, path, answer)))
  }
}

/** `count` names from `from` on, typed by their digits, in name order (readDirectory's). */
const listingOf = (names: ReadonlyArray<string>, types: string, from: number, count: number): Array<DirEntry> => {
  const out = new Array<DirEntry>(count)
  for (let i = 0; i < count; i++) out[i] = { name: names[from + i]!, type: TYPES[types.charCodeAt(from + i) - 48] ?? "Other" }
  return out.sort(byName)
}
