/**
 * The batched port calls (`FileSystem`'s optional `…Each` methods), with the single calls as the fallback: a
 * layer that has a batched form answers a whole batch in one runtime step (Node); one that leaves it out is
 * called one item at a time, each item its own scheduling point, journal entry, fault and crash gate (the
 * Memory world). Either way the answers are the single call's, item by item, in order.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { FileSystemError } from "../../domain/Errors.js"
import type { DirectoryParts, DirectoryPartsRead, DirEntry, FileInfo, FileSystem, TreeRemoval, WalkBudget } from "../FileSystem.js"

type Port = FileSystem["Type"]
type Answers<A> = Effect.Effect<ReadonlyArray<Either.Either<A, FileSystemError>>>

const oneByOne = <I, A>(items: ReadonlyArray<I>, single: (item: I) => Effect.Effect<A, FileSystemError>): Answers<A> =>
  Effect.forEach(items, (item) => Effect.either(single(item)))

export const lstatEach = (fs: Port, paths: ReadonlyArray<string>): Answers<FileInfo> =>
  paths.length === 0 ? Effect.succeed([]) : fs.lstatEach?.(paths) ?? oneByOne(paths, fs.lstat)

export const readFileEach = (fs: Port, paths: ReadonlyArray<string>, options: { readonly maxBytes: number }): Answers<Uint8Array> =>
  paths.length === 0 ? Effect.succeed([]) : fs.readFileEach?.(paths, options) ?? oneByOne(paths, (path) => fs.readFile(path, options))

export const readDirectoryEach = (fs: Port, paths: ReadonlyArray<string>): Answers<ReadonlyArray<DirEntry>> =>
  paths.length === 0 ? Effect.succeed([]) : fs.readDirectoryEach?.(paths) ?? oneByOne(paths, fs.readDirectory)

export const writeFileExclusiveEach = (fs: Port, paths: ReadonlyArray<string>, data: Uint8Array): Answers<void> =>
  paths.length === 0 ? Effect.succeed([]) : fs.writeFileExclusiveEach?.(paths, data) ?? oneByOne(paths, (path) => fs.writeFileExclusive(path, data))

export const renameEach = (fs: Port, moves: ReadonlyArray<readonly [from: string, to: string]>): Answers<void> =>
  moves.length === 0 ? Effect.succeed([]) : fs.renameEach?.(moves) ?? oneByOne(moves, ([from, to]) => fs.rename(from, to, { sync: false }))

export const removeFileEach = (fs: Port, paths: ReadonlyArray<string>): Answers<void> =>
  paths.length === 0 ? Effect.succeed([]) : fs.removeFileEach?.(paths) ?? oneByOne(paths, fs.removeFile)

/** Without a batched form the removals run at once, as separate calls did (a layer's remover bounds them). */
export const removeTreeEach = (fs: Port, paths: ReadonlyArray<string>, budget: WalkBudget): Answers<TreeRemoval> =>
  paths.length === 0
    ? Effect.succeed([])
    : fs.removeTreeEach?.(paths, budget) ?? Effect.forEach(paths, (path) => Effect.either(fs.removeTree(path, budget)), { concurrency: "unbounded" })

/**
 * Without a batched form: the directory's `lstat` (a symlink there is never gone through: its file and
 * listing answer ENOTDIR, as the batched form's), then the single calls, one after the other.
 */
export const readDirectoryPartsEach = (fs: Port, dirs: ReadonlyArray<string>, parts: DirectoryParts): Effect.Effect<ReadonlyArray<DirectoryPartsRead>> =>
  dirs.length === 0
    ? Effect.succeed([])
    : fs.readDirectoryPartsEach?.(dirs, parts) ?? Effect.forEach(dirs, (dir) =>
      Effect.gen(function*() {
        const info = yield* Effect.either(fs.lstat(dir))
        const filePath = NodePath.join(dir, parts.file)
        const listingPath = NodePath.join(dir, parts.listing)
        const linked = info._tag === "Right" && info.right.type === "SymbolicLink"
        const file = linked
          ? Either.left(notThroughLink("readFile", filePath))
          : yield* Effect.either(fs.readFile(filePath, { maxBytes: parts.maxBytes }))
        const listing = linked ? Either.left(notThroughLink("readDirectory", listingPath)) : yield* Effect.either(fs.readDirectory(listingPath))
        const measure = parts.measure === undefined ? undefined : yield* Effect.either(fs.measureTree(dir, parts.measure))
        return { file, listing, measure }
      }))

const notThroughLink = (method: string, path: string): FileSystemError =>
  new FileSystemError({ reason: "NotADirectory", errno: "ENOTDIR", method, path, detail: "its directory is a symbolic link (never followed)" })
