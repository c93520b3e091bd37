/**
 * The FileSystem port on `node:fs` (docs/architecture.md "Architecture in a paragraph").
 *
 * - Names are bytes (docs/safety.md "Names are bytes"): every path goes to `node:fs` through `osPath` (its bytes when it
 *   holds a byte that is not UTF-8), and listings and link targets come back losslessly (node/osPath.ts).
 * - Nothing follows a final symlink: reads, exclusive writes, chmod and copy sources open with O_NOFOLLOW;
 *   `utimes` is `lutimes`; `readDirectory` refuses a link (ENOTDIR).
 * - New files and directories get exactly the requested mode, independent of the process umask (an
 *   `fchmod` after creation when the umask, read when the layer is built, would have cleared requested
 *   bits), so Node and Memory agree.
 * - Durability: files are fsynced before they become visible under their final name, and the parent
 *   directories are fsynced after renames (unless the caller passes `sync: false`).
 * - The hot walks (`measureTree`, `removeTree`) use synchronous syscalls one directory at a time
 *   (async per-entry walks are ~8× slower: docs/architecture.md "Walkers"), chosen in node/walkers.ts. Measuring with
 *   the native `fsat` addon runs whole in C, a small tree on the calling thread and a big one on the thread
 *   pool (node/nativeMeasure.ts), otherwise in 4 ms slices on the event loop. Removing never holds it: with
 *   the addon the whole walk runs in C on the thread pool (node/nativeRemove.ts), otherwise on a remover thread
 *   (node/remover.ts). Memory use is one name list per directory level, never the whole tree. With the
 *   addon every entry is reached relative to its parent's descriptor, never through a link; without it
 *   the portable walks (node/pathWalk.ts) address entries by path.
 * - Small metadata operations (lstat, mkdir, fchmod, exclusive create and write of small files, rename,
 *   unlink, reads under 1 MiB) are synchronous syscalls too: each costs microseconds, while a trip through
 *   the libuv thread pool costs 20–800 µs on a loaded 2-core machine (BENCHMARKS.md: acquire + release made ~40
 *   such trips). Only `fsync` and large reads/copies stay asynchronous, so the event loop never waits on
 *   the disk itself.
 */
import { createHash, type Hash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { atomicTempName } from "../domain/AtomicWrite.js"
import { FileSystemError, lengthMismatch } from "../domain/Errors.js"
import { changedError, changeSince, type ExpectedFile, type FileChange, type FileVersion } from "../domain/FileChange.js"
import { aFileType } from "../domain/FileTypeWords.js"
import {
  type DirEntry,
  type DirEntryInfo,
  type FileDigest,
  type FileInfo,
  FileSystem,
  type FileType,
  type StampedCopy,
  type WriteOptions
} from "../services/FileSystem.js"
import { StorageConfig } from "../services/StorageConfig.js"
import { errnoName, type FsatPath, fsatError } from "./node/fsat.js"
import { listDirectory, osPath, readLinkLossless } from "./node/osPath.js"
import { startListing } from "./node/listing.js"
import { makeNativeReadParts } from "./node/runReads.js"
import { attempt, attemptSync, failWith, paced, runWalk, sliceDeadline, toFileSystemError, yieldToEventLoop } from "./node/support.js"
import { copySparse, copySparseSync, hashSparse, hashSparseSync, hasHoles, type SeekData } from "./node/sparse.js"
import { makeWalks, type WalkerKind, type Walks } from "./node/walkers.js"

export { toFileSystemError } from "./node/support.js"

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = fs.constants

/** Flags for opening an existing entry without following a final link (O_NONBLOCK: a FIFO must not hang us). */
const READ_NOFOLLOW = O_RDONLY | O_NOFOLLOW | O_NONBLOCK
const CREATE_EXCLUSIVE = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
const DEFAULT_FILE_MODE = 0o600
const DEFAULT_DIR_MODE = 0o700
const COPY_CHUNK = 64 * 1024

/** `fsync` of an open descriptor on the thread pool: the one call here that waits on the disk. */
const fsyncFd = (method: string, path: string, fd: number): Effect.Effect<void, FileSystemError> =>
  Effect.async<void, FileSystemError>((resume) => {
    fs.fsync(fd, (error) => resume(error ? Effect.fail(toFileSystemError(method, path, error)) : Effect.void))
  })

const closeQuietly = (fd: number) => {
  try {
    fs.closeSync(fd)
  } catch {
    // Already closed or never valid: nothing to release.
  }
}

/** Open synchronously, use, always close. */
const withFd = <A>(
  method: string,
  path: string,
  flags: number,
  mode: number | undefined,
  use: (fd: number) => Effect.Effect<A, FileSystemError>
): Effect.Effect<A, FileSystemError> =>
  Effect.acquireUseRelease(
    attemptSync(method, path, () => fs.openSync(osPath(path), flags, mode)),
    use,
    (fd) => Effect.sync(() => closeQuietly(fd))
  )

/** Best-effort cleanup: its failure must not hide the error being reported. */
const bestEffort = (run: () => Promise<unknown>): Effect.Effect<void> =>
  Effect.promise(() => run().then(() => undefined, () => undefined))

const withHandle = <A>(
  method: string,
  path: string,
  flags: number,
  mode: number | undefined,
  use: (handle: fsp.FileHandle) => Effect.Effect<A, FileSystemError>
): Effect.Effect<A, FileSystemError> =>
  Effect.acquireUseRelease(
    attempt(method, path, () => fsp.open(osPath(path), flags, mode)),
    use,
    (handle) => bestEffort(() => handle.close())
  )

// ---------------------------------------------------------------------------------------------------------
// stats

const typeOfStats = (stats: fs.Stats | fs.Dirent): FileType =>
  stats.isFile() ? "File" : stats.isDirectory() ? "Directory" : stats.isSymbolicLink() ? "SymbolicLink" : "Other"

const toFileInfo = (stats: fs.Stats): FileInfo => ({
  type: typeOfStats(stats),
  size: stats.size,
  mode: stats.mode & 0o7777,
  uid: stats.uid,
  ino: stats.ino,
  dev: stats.dev,
  nlink: stats.nlink,
  mtimeMs: stats.mtimeMs,
  ctimeMs: stats.ctimeMs,
  blocks: stats.blocks
})

/**
 * A synchronous call's answer, never thrown: the hot metadata calls are each one synchronous step (no chain
 * of Effects), and a missing entry is answered without a throw (a prune meets two per run). The single call
 * and its batched form (`…Each`) share the answer, so they cannot disagree; one runtime step per call showed
 * up in a prune's CPU (BENCHMARKS.md "Prune: the protocol in batches").
 */
type Answer<A> = A | FileSystemError

const answer = <A>(method: string, path: string, run: () => A): Answer<A> => {
  try {
    return run()
  } catch (cause) {
    return toFileSystemError(method, path, cause)
  }
}

const asEffect = <A>(answered: Answer<A>): Effect.Effect<A, FileSystemError> =>
  answered instanceof FileSystemError ? Effect.fail(answered) : Effect.succeed(answered)

/** A single call: its answer, computed when the Effect runs. */
const single = <A>(compute: () => Answer<A>): Effect.Effect<A, FileSystemError> => Effect.suspend(() => asEffect(compute()))

/**
 * A batched call: each item's answer, in order, computed synchronously until the stretch's slice is used
 * (node/support.ts), then after a yield to the event loop, and so on: a batch of renames on a slow disk holds
 * the event loop for a slice, not for the batch. Each slice answers at least one item.
 */
const each = <I, A>(items: ReadonlyArray<I>, compute: (item: I) => Answer<A>): Effect.Effect<ReadonlyArray<Either.Either<A, FileSystemError>>> =>
  Effect.suspend(() => {
    const out = new Array<Either.Either<A, FileSystemError>>(items.length)
    let next = 0
    const slice: Effect.Effect<ReadonlyArray<Either.Either<A, FileSystemError>>> = Effect.suspend(() => {
      const until = sliceDeadline()
      do {
        const answered = compute(items[next]!)
        out[next++] = answered instanceof FileSystemError ? Either.left(answered) : Either.right(answered)
      } while (next < items.length && performance.now() < until)
      return next === items.length ? Effect.succeed(out) : Effect.zipRight(yieldToEventLoop, slice)
    })
    return items.length === 0 ? Effect.succeed(out) : slice
  })

const notFound = (method: string, path: string) => failWith(method, path, "ENOENT", "no such file or directory")

const lstatAnswer = (path: string): Answer<FileInfo> => {
  let stats: fs.Stats | undefined
  try {
    stats = fs.lstatSync(osPath(path), { throwIfNoEntry: false })
  } catch (cause) {
    return toFileSystemError("lstat", path, cause)
  }
  return stats === undefined ? notFound("lstat", path) : toFileInfo(stats)
}

const lstat = (path: string): Effect.Effect<FileInfo, FileSystemError> => single(() => lstatAnswer(path))

const statFollowingLinks = (path: string): Effect.Effect<FileInfo, FileSystemError> =>
  attemptSync("statFollowingLinks", path, () => {
    const stats = fs.statSync(osPath(path), { throwIfNoEntry: false })
    if (stats === undefined) throw notFound("statFollowingLinks", path)
    return toFileInfo(stats)
  })

// ---------------------------------------------------------------------------------------------------------
// directories

/** fsync a directory so a rename or create inside it survives a crash. Filesystems without it say EINVAL. */
const syncDirectory = (method: string, dir: string): Effect.Effect<void, FileSystemError> =>
  withFd(method, dir, O_RDONLY | O_DIRECTORY, undefined, (fd) => fsyncFd(method, dir, fd)).pipe(
    Effect.catchIf((error) => error.errno === "EINVAL" || error.errno === "ENOTSUP", () => Effect.void)
  )

/**
 * readdir follows a final link, so a link is refused first. A missing directory is common (runs without
 * leases): answered without Node building an Error. Else its lstat.
 */
const listingRefusal = (path: string): FileSystemError | fs.Stats => {
  const info = fs.lstatSync(osPath(path), { throwIfNoEntry: false })
  if (info === undefined) return notFound("readDirectory", path)
  if (info.isSymbolicLink()) return failWith("readDirectory", path, "ENOTDIR", "is a symbolic link")
  return info
}

/** One `readdir` (libuv sorts it already), in name order. */
const listedAtOnce = (path: string): Array<DirEntry> =>
  listDirectory(path)
    .map((dirent): DirEntry => ({ name: dirent.name, type: typeOfStats(dirent) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

const readDirectoryAnswer = (path: string): Answer<ReadonlyArray<DirEntry>> => {
  try {
    const refused = listingRefusal(path)
    return refused instanceof FileSystemError ? refused : listedAtOnce(path)
  } catch (cause) {
    return toFileSystemError("readDirectory", path, cause)
  }
}

/**
 * A directory this large (its `st_size`: a few thousand entries on ext4, btrfs or tmpfs) is listed in slices
 * of the event loop (node/listing.ts): a tenant of 50,000 runs took one `readdir` of 90 ms. A smaller one in
 * one call, which costs a third of the sliced listing's CPU there. Either way the same answer.
 */
const LARGE_DIRECTORY_BYTES = 64 * 1024

const readDirectory = (path: string): Effect.Effect<ReadonlyArray<DirEntry>, FileSystemError> =>
  Effect.suspend(() => {
    const refused = answer("readDirectory", path, () => listingRefusal(path))
    if (refused instanceof FileSystemError) return Effect.fail(refused)
    return refused.size > LARGE_DIRECTORY_BYTES
      ? runWalk("readDirectory", path, () => startListing(path))
      : asEffect(answer("readDirectory", path, () => listedAtOnce(path)))
  })

const readDirectoryInfo = (path: string): Effect.Effect<ReadonlyArray<DirEntryInfo>, FileSystemError> =>
  Effect.flatMap(readDirectory(path), (entries) =>
    attemptSync("readDirectoryInfo", path, () => {
      const prefix = path.endsWith("/") ? path : `${path}/`
      const out: Array<DirEntryInfo> = []
      for (const entry of entries) {
        const stats = fs.lstatSync(osPath(prefix + entry.name), { throwIfNoEntry: false })
        if (stats !== undefined) out.push({ name: entry.name, info: toFileInfo(stats) })
      }
      return out
    }))

/** One synchronous `link` per name (each microseconds; a directory of a snapshot at a time). */
const linkEach = (fromDir: string, toDir: string, names: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<FileSystemError | undefined>> =>
  Effect.sync(() => {
    const from = fromDir.endsWith("/") ? fromDir : `${fromDir}/`
    const to = toDir.endsWith("/") ? toDir : `${toDir}/`
    const out = new Array<FileSystemError | undefined>(names.length)
    for (let i = 0; i < names.length; i++) {
      const target = to + names[i]
      try {
        fs.linkSync(osPath(from + names[i]), osPath(target))
      } catch (cause) {
        out[i] = toFileSystemError("linkEach", target, cause)
      }
    }
    return out
  })

/**
 * The process umask, read when a layer is built, never at import (reading it is racy only against code that
 * changes it, which this library never does). Process-wide, like the umask itself. New entries get exactly
 * the requested mode: a chmod follows creation only when the umask would have cleared some of the requested
 * bits, which spares three syscalls per directory in the common case. Until a layer is built every mode is
 * set explicitly (0o777: never wrong, only slower).
 */
let umask = 0o777
const umaskStrips = (mode: number): boolean => (mode & umask & 0o777) !== 0

/** Create exactly one directory with exactly `mode`; EEXIST if anything is there. */
const makeOneDirectory = (method: string, path: string, mode: number): Effect.Effect<void, FileSystemError> =>
  attemptSync(method, path, () => fs.mkdirSync(osPath(path), { mode })).pipe(
    Effect.zipRight(umaskStrips(mode) || (mode & ~0o777) !== 0 ? setMode(method, path, mode) : Effect.void)
  )

const makeDirectoryRecursive = (path: string, mode: number, isFinal: boolean): Effect.Effect<void, FileSystemError> =>
  makeOneDirectory("makeDirectory", path, mode).pipe(
    Effect.catchIf((error) => error.errno === "ENOENT" && NodePath.dirname(path) !== path, () =>
      makeDirectoryRecursive(NodePath.dirname(path), mode, false).pipe(
        Effect.zipRight(makeOneDirectory("makeDirectory", path, mode)),
        Effect.catchIf((error) => error.errno === "EEXIST", () => acceptExisting(path, isFinal))
      )),
    Effect.catchIf((error) => error.errno === "EEXIST", () => acceptExisting(path, isFinal))
  )

/** An existing directory is fine; at the final path a symlink or file is not (intermediates resolve as the OS does). */
const acceptExisting = (path: string, isFinal: boolean): Effect.Effect<void, FileSystemError> =>
  Effect.gen(function*() {
    const stats = yield* attemptSync("makeDirectory", path, () => (isFinal ? fs.lstatSync(osPath(path)) : fs.statSync(osPath(path))))
    if (stats.isDirectory()) return
    return yield* Effect.fail(
      isFinal
        ? failWith("makeDirectory", path, "EEXIST", `${aFileType(typeOfStats(stats))} is in the way`)
        : failWith("makeDirectory", path, "ENOTDIR", "a parent component is not a directory")
    )
  })

const makeDirectory = (
  path: string,
  options?: { readonly mode?: number; readonly recursive?: boolean }
): Effect.Effect<void, FileSystemError> => {
  const mode = options?.mode ?? DEFAULT_DIR_MODE
  return options?.recursive === true
    ? makeDirectoryRecursive(NodePath.resolve(path), mode, true)
    : makeOneDirectory("makeDirectory", path, mode)
}

// ---------------------------------------------------------------------------------------------------------
// files

/** Set permission bits on the entry itself: open it without following a link, then fchmod. */
const setMode = (method: string, path: string, mode: number): Effect.Effect<void, FileSystemError> =>
  withFd(method, path, READ_NOFOLLOW, undefined, (fd) => attemptSync(method, path, () => fs.fchmodSync(fd, mode))).pipe(
    // An unreadable file cannot be opened (non-root); fall back to lstat-then-chmod, still refusing links.
    Effect.catchIf((error) => error.errno === "EACCES", () =>
      Effect.gen(function*() {
        const info = yield* lstat(path)
        if (info.type === "SymbolicLink") return yield* Effect.fail(failWith(method, path, "ELOOP", "is a symbolic link"))
        yield* attemptSync(method, path, () => fs.chmodSync(osPath(path), mode))
      }))
  )

const writeAllSync = (fd: number, data: Uint8Array) => {
  let offset = 0
  while (offset < data.byteLength) offset += fs.writeSync(fd, data, offset, data.byteLength - offset)
}

/** Close, then unlink the partial file; best effort (the error being reported matters more). */
const discardPartial = (fd: number, closed: boolean, path: string) => {
  if (!closed) closeQuietly(fd)
  try {
    fs.unlinkSync(osPath(path))
  } catch {
    // Best effort: the error being reported matters more.
  }
}

/** Open `path` exclusively, set its mode when the umask would not, and write `data`; the descriptor stays open. */
const createWrittenSync = (path: string, data: Uint8Array, mode: number): number => {
  const fd = fs.openSync(osPath(path), CREATE_EXCLUSIVE, mode)
  try {
    if (umaskStrips(mode) || (mode & ~0o777) !== 0) fs.fchmodSync(fd, mode)
    writeAllSync(fd, data)
    return fd
  } catch (cause) {
    discardPartial(fd, false, path)
    throw cause
  }
}

/** Create, write and close `path` (no fsync); a failure after creation removes the partial file. */
const createExclusiveAnswer = (method: string, path: string, data: Uint8Array, mode: number): Answer<void> =>
  answer(method, path, () => {
    const fd = createWrittenSync(path, data, mode)
    try {
      fs.closeSync(fd)
    } catch (cause) {
      discardPartial(fd, true, path)
      throw cause
    }
  })

/**
 * Create `path` exclusively and write it; a failure after creation removes the partial file. Without `sync`
 * it is one synchronous step (markers and leases: the common case); with it the fsync waits on the pool.
 */
const createAndWrite = (
  method: string,
  path: string,
  data: Uint8Array,
  mode: number,
  sync: boolean
): Effect.Effect<void, FileSystemError> =>
  !sync
    ? single(() => createExclusiveAnswer(method, path, data, mode))
    : Effect.flatMap(attemptSync(method, path, () => createWrittenSync(path, data, mode)), (fd) => {
      let closed = false
      return fsyncFd(method, path, fd).pipe(
        Effect.zipRight(attemptSync(method, path, () => {
          closed = true
          fs.closeSync(fd)
        })),
        Effect.onExit((exit) => exit._tag === "Success" ? Effect.void : Effect.sync(() => discardPartial(fd, closed, path)))
      )
    })

const writeFileExclusive = (path: string, data: Uint8Array, options?: WriteOptions) =>
  // No fsync unless asked: a lease needs none (docs/safety.md "How runs stay safe": an empty lease counts as held); only writeFileAtomic defaults to it.
  createAndWrite("writeFileExclusive", path, data, options?.mode ?? DEFAULT_FILE_MODE, options?.sync ?? false)

const tempNameBeside = (path: string): string =>
  NodePath.join(NodePath.dirname(path), atomicTempName(NodePath.basename(path), randomBytes(6).toString("hex")))

const writeFileAtomic = (path: string, data: Uint8Array, options?: WriteOptions): Effect.Effect<void, FileSystemError> =>
  Effect.gen(function*() {
    const sync = options?.sync ?? true
    const temp = tempNameBeside(path)
    yield* createAndWrite("writeFileAtomic", temp, data, options?.mode ?? DEFAULT_FILE_MODE, sync)
    // rename(2) replaces a symlink at `path` itself, never writing through it.
    yield* attemptSync("writeFileAtomic", path, () => fs.renameSync(osPath(temp), osPath(path))).pipe(
      Effect.tapError(() => bestEffort(() => fsp.unlink(osPath(temp))))
    )
    if (sync) yield* syncDirectory("writeFileAtomic", NodePath.dirname(path))
  })

/**
 * Read the regular file at `path` (never through a link) for comparison with `expected`: `undefined` when the
 * descriptor's inode is not `expected`'s (the file was swapped between the lstat and the open), else up to one
 * byte more than `expected` holds, enough to tell equal from different.
 */
const readSameInodeSync = (path: string, expected: FileVersion): Uint8Array | undefined => {
  const fd = fs.openSync(osPath(path), READ_NOFOLLOW)
  try {
    const stats = fs.fstatSync(fd)
    if (!stats.isFile() || stats.dev !== expected.dev || stats.ino !== expected.ino) return undefined
    const buffer = Buffer.allocUnsafe(expected.bytes.byteLength + 1)
    let total = 0
    while (total < buffer.byteLength) {
      const n = fs.readSync(fd, buffer, total, buffer.byteLength - total, null)
      if (n === 0) break
      total += n
    }
    return buffer.subarray(0, total)
  } finally {
    closeQuietly(fd)
  }
}

/** The change at `path` since `expected` was read (lstat, then a read through a re-checked descriptor); `null`: none. */
const changeAtSync = (path: string, expected: ExpectedFile): FileChange | null => {
  const stats = fs.lstatSync(osPath(path), { throwIfNoEntry: false })
  const found = stats === undefined ? undefined : { type: typeOfStats(stats), dev: stats.dev, ino: stats.ino, size: stats.size }
  let swapped = false
  const change = changeSince(expected, found, () => {
    const bytes = readSameInodeSync(path, expected!)
    swapped = bytes === undefined
    return bytes ?? new Uint8Array(0)
  })
  return swapped ? { kind: "replaced", detail: "it was replaced by another file since it was read" } : change
}

/** link(2) is missing on this file system (FAT, some FUSE and network mounts): fall back to check-then-rename. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"])
/** renameat2's exchange is missing (no addon, an old kernel, a file system without it): check-then-rename. */
const NO_EXCHANGE = new Set(["EINVAL", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"])

/** renameat2(a, b, RENAME_EXCHANGE) from the native addon: 0 or a negative errno. */
type Exchange = (a: FsatPath, b: FsatPath) => number

const keptNameBeside = (path: string): string =>
  NodePath.join(NodePath.dirname(path), `.${NodePath.basename(path)}.kept-${randomBytes(6).toString("hex")}`)

const unlinkQuietly = (path: string) => {
  try {
    fs.unlinkSync(osPath(path))
  } catch {
    // Best effort: a leftover temp name is harmless; the answer being given matters more.
  }
}

/** Where the conditional replace stands: once the exchange has run, `temp` may name someone else's file. */
interface Swap {
  swapped: boolean
}

/**
 * After the exchange `temp` names what was at `path`. Still the version read: it goes, done. Else someone
 * saved between the check and the exchange: their file is exchanged back and ours dropped; if yet another save
 * replaced ours meanwhile, that newest one goes back to `path` and the one before it is kept beside it under a
 * `.kept-` name. Nothing anyone saved is unlinked.
 */
const settleExchangeSync = (method: string, path: string, temp: string, expected: FileVersion, ours: number, exchange: Exchange): void => {
  const change = changeAtSync(temp, expected)
  if (change === null) return unlinkQuietly(temp)
  const keep = (why: string): never => {
    const kept = keptNameBeside(path)
    fs.renameSync(osPath(temp), osPath(kept))
    throw changedError(method, path, { kind: change.kind, detail: `${change.detail}; ${why} is kept as ${kept}` })
  }
  if (exchange(osPath(temp), osPath(path)) !== 0) keep("that version")
  if (fs.lstatSync(osPath(temp), { throwIfNoEntry: false })?.ino === ours) {
    unlinkQuietly(temp)
    throw changedError(method, path, change)
  }
  if (exchange(osPath(temp), osPath(path)) !== 0) keep("the newest save")
  keep("an earlier save")
}

/**
 * The conditional replace's last step, in one synchronous run (no other JavaScript between the check and the
 * rename). A file expected missing is linked into place (link(2) fails EEXIST if anything arrived meanwhile).
 * An existing one is checked, then exchanged with the new file (renameat2 RENAME_EXCHANGE, with the addon)
 * and the file swapped out checked again, so a save that landed between the check and the exchange is put
 * back, not lost; without the exchange it is renamed over, leaving the microseconds between the check and
 * the rename.
 */
const putIfUnchangedSync = (method: string, path: string, temp: string, expected: ExpectedFile, exchange: Exchange | undefined, swap: Swap): void => {
  if (expected === null) {
    try {
      fs.linkSync(osPath(temp), osPath(path))
      unlinkQuietly(temp)
      return
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code ?? ""
      if (code === "EEXIST") {
        throw changedError(method, path, changeAtSync(path, null) ?? { kind: "created", detail: "an entry was created there since it was read as missing" })
      }
      if (!NO_HARD_LINKS.has(code)) throw cause
    }
  }
  const change = changeAtSync(path, expected)
  if (change !== null) throw changedError(method, path, change)
  if (exchange !== undefined && expected !== null) {
    const ours = fs.lstatSync(osPath(temp)).ino
    const answer = exchange(osPath(temp), osPath(path))
    if (answer === 0) {
      swap.swapped = true
      return settleExchangeSync(method, path, temp, expected, ours, exchange)
    }
    if (!NO_EXCHANGE.has(errnoName(answer))) throw fsatError("renameat2", path, answer)
  }
  fs.renameSync(osPath(temp), osPath(path))
}

/**
 * Remove `path` only while it is `expected`: it is moved aside (one rename, whatever is there at that instant)
 * and checked there; a file someone saved between the check and the move is linked back (or, when they saved
 * again meanwhile, kept beside it under a `.kept-` name).
 */
const removeIfUnchangedSync = (method: string, path: string, expected: ExpectedFile): void => {
  const change = changeAtSync(path, expected)
  if (change?.kind === "removed") return
  if (change !== null) throw changedError(method, path, change)
  if (expected === null) return
  const aside = tempNameBeside(path)
  try {
    fs.renameSync(osPath(path), osPath(aside))
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "ENOENT") return
    throw cause
  }
  const moved = changeAtSync(aside, expected)
  if (moved === null) return unlinkQuietly(aside)
  try {
    fs.linkSync(osPath(aside), osPath(path))
    unlinkQuietly(aside)
    throw changedError(method, path, moved)
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== "EEXIST") throw cause
    const kept = keptNameBeside(path)
    fs.renameSync(osPath(aside), osPath(kept))
    throw changedError(method, path, { kind: moved.kind, detail: `${moved.detail}; that version is kept as ${kept}` })
  }
}

/** The port's `replaceFileIfUnchanged` with a given exchange (`undefined`: check, then rename); the layer passes the addon's. */
export const replaceFileIfUnchangedWith = (exchange: Exchange | undefined) =>
(
  path: string,
  expected: ExpectedFile,
  data: Uint8Array | null,
  options?: WriteOptions
): Effect.Effect<void, FileSystemError> =>
  Effect.gen(function*() {
    const method = "replaceFileIfUnchanged"
    const sync = options?.sync ?? true
    if (data === null) {
      yield* attemptSync(method, path, () => removeIfUnchangedSync(method, path, expected))
    } else {
      // Written and synced before the check, so nothing slow stands between the check and the rename.
      const temp = tempNameBeside(path)
      yield* createAndWrite(method, temp, data, options?.mode ?? DEFAULT_FILE_MODE, sync)
      const swap: Swap = { swapped: false }
      yield* attemptSync(method, path, () => putIfUnchangedSync(method, path, temp, expected, exchange, swap)).pipe(
        // Once exchanged, the temp name may hold someone's file: only the settling step decides about it.
        Effect.tapError(() => (swap.swapped ? Effect.void : bestEffort(() => fsp.unlink(osPath(temp)))))
      )
    }
    if (sync) yield* syncDirectory(method, NodePath.dirname(path))
  })

const writeFileInPlace = (path: string, data: Uint8Array): Effect.Effect<void, FileSystemError> =>
  // O_NONBLOCK: a FIFO planted at `path` must not hang us. Opening a directory for writing is EISDIR.
  withFd("writeFileInPlace", path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK, undefined, (fd) =>
    attemptSync("writeFileInPlace", path, () => {
      const stats = fs.fstatSync(fd)
      if (!stats.isFile()) throw failWith("writeFileInPlace", path, "", "not a regular file")
      if (stats.size !== data.byteLength) throw lengthMismatch(path, stats.size, data.byteLength)
      let written = 0
      while (written < data.byteLength) written += fs.writeSync(fd, data, written, data.byteLength - written, written)
    }))

/** Reads capped at this size are done with synchronous syscalls (manifests, leases, markers, configs). */
const SYNC_READ_MAX = 1 << 20

/** Read a regular file of at most `maxBytes` through one synchronous open, read and close. */
const readFileSmallSync = (path: string, maxBytes: number): Uint8Array => {
  const fd = fs.openSync(osPath(path), READ_NOFOLLOW)
  try {
    const stats = fs.fstatSync(fd)
    if (stats.isDirectory()) throw failWith("readFile", path, "EISDIR", "is a directory")
    if (!stats.isFile()) throw failWith("readFile", path, "", "not a regular file")
    if (stats.size > maxBytes) throw failWith("readFile", path, "EFBIG", `${stats.size} bytes exceeds ${maxBytes}`)
    // Read until EOF but never past the cap: the file may grow between fstat and read. The buffer is the fstat size
    // + 1 (to see EOF; not the cap, nor 4 KiB more: what a prune's three reads per run allocate, the garbage
    // collector pays for) and grows only if the file did.
    let buffer = Buffer.allocUnsafe(stats.size + 1)
    let total = 0
    for (;;) {
      if (total === buffer.byteLength) {
        const grown = Buffer.allocUnsafe(Math.min(maxBytes + 1, buffer.byteLength * 2))
        buffer.copy(grown, 0, 0, total)
        buffer = grown
      }
      const n = fs.readSync(fd, buffer, total, buffer.byteLength - total, null)
      if (n === 0) break
      total += n
      if (total > maxBytes) throw failWith("readFile", path, "EFBIG", `grew beyond ${maxBytes} bytes`)
    }
    return new Uint8Array(buffer.subarray(0, total))
  } finally {
    closeQuietly(fd)
  }
}

const readFileSmall = (path: string, maxBytes: number) => single(() => answer("readFile", path, () => readFileSmallSync(path, maxBytes)))

const readFile = (path: string, options?: { readonly maxBytes?: number }) =>
  options?.maxBytes !== undefined && options.maxBytes <= SYNC_READ_MAX ? readFileSmall(path, options.maxBytes) : withHandle("readFile", path, READ_NOFOLLOW, undefined, (handle) =>
    Effect.gen(function*() {
      const maxBytes = options?.maxBytes ?? Number.MAX_SAFE_INTEGER
      const stats = yield* attempt("readFile", path, () => handle.stat())
      if (stats.isDirectory()) return yield* Effect.fail(failWith("readFile", path, "EISDIR", "is a directory"))
      if (!stats.isFile()) return yield* Effect.fail(failWith("readFile", path, "", "not a regular file"))
      if (stats.size > maxBytes) {
        return yield* Effect.fail(failWith("readFile", path, "EFBIG", `${stats.size} bytes exceeds ${maxBytes}`))
      }
      // Read until EOF but never past the cap: the file may grow between fstat and read.
      const chunks: Array<Uint8Array> = []
      const total = yield* attempt("readFile", path, async () => {
        let sum = 0
        for (;;) {
          // Expect the fstat size (+1 to see EOF), at least 4 KiB if it grew, never more than 1 MiB or the cap + 1.
          const want = Math.min(Math.max(stats.size - sum, 4096) + 1, maxBytes - sum + 1, 1 << 20)
          const buffer = Buffer.allocUnsafe(want)
          const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, null)
          if (bytesRead === 0) return sum
          chunks.push(buffer.subarray(0, bytesRead))
          sum += bytesRead
          if (sum > maxBytes) return sum
        }
      })
      if (total > maxBytes) return yield* Effect.fail(failWith("readFile", path, "EFBIG", `grew beyond ${maxBytes} bytes`))
      return new Uint8Array(Buffer.concat(chunks, total))
    }))

const renameAnswer = (from: string, to: string): Answer<void> => answer("rename", from, () => fs.renameSync(osPath(from), osPath(to)))

const removeFileAnswer = (path: string): Answer<void> => answer("removeFile", path, () => fs.unlinkSync(osPath(path)))

const rename = (from: string, to: string, options?: { readonly sync?: boolean }): Effect.Effect<void, FileSystemError> =>
  options?.sync === false ? single(() => renameAnswer(from, to)) : Effect.gen(function*() {
    yield* attemptSync("rename", from, () => fs.renameSync(osPath(from), osPath(to)))
    const toDir = NodePath.dirname(NodePath.resolve(to))
    const fromDir = NodePath.dirname(NodePath.resolve(from))
    yield* syncDirectory("rename", toDir)
    if (fromDir !== toDir) yield* syncDirectory("rename", fromDir)
  })

/**
 * Copy `from` (opened without following a link) to a new file `to` with the source's mode, feeding every
 * chunk to `hash` when given. Files up to SYNC_READ_MAX are copied with synchronous syscalls (a snapshot
 * copies thousands of small files; a thread-pool trip per chunk would cost more than the copy), larger
 * ones on the thread pool in 64 KiB chunks. A failure after creation removes the partial copy.
 */
/** One chunk buffer for the synchronous copy and hash paths (they never interleave: no await inside). */
const SYNC_CHUNK = Buffer.allocUnsafe(COPY_CHUNK)

/** What the copy saw of its source after the last byte, when asked to stamp the copy with it. */
type Stamp = fs.Stats | undefined

/**
 * `stamp`: after the last write, fstat the source and give the copy its mtime through the descriptor
 * (futimes), so a snapshot needs no second lookup of either path. A source with holes is copied by
 * node/sparse.ts (its holes stay holes; `seek` is the native SEEK_DATA/SEEK_HOLE when the addon is used).
 */
const copyWith = (method: string, from: string, to: string, sync: boolean, hash: Hash | undefined, seek: SeekData | undefined, stamp = false) =>
  withFd(method, from, READ_NOFOLLOW, undefined, (source) =>
    Effect.gen(function*() {
      const stats = yield* attemptSync(method, from, () => fs.fstatSync(source))
      if (stats.isDirectory()) return yield* Effect.fail(failWith(method, from, "EISDIR", "is a directory"))
      if (!stats.isFile()) return yield* Effect.fail(failWith(method, from, "", "not a regular file"))
      const mode = stats.mode & 0o7777
      const target = yield* attemptSync(method, to, () => fs.openSync(osPath(to), CREATE_EXCLUSIVE, mode))
      const removePartial = Effect.sync(() => {
        closeQuietly(target)
        try {
          fs.unlinkSync(osPath(to))
        } catch {
          // Best effort: the error being reported matters more.
        }
      })
      const sparse = hasHoles(stats)
      const copied = stats.size <= SYNC_READ_MAX
        ? attemptSync(method, to, () => {
          if (umaskStrips(mode) || (mode & ~0o777) !== 0) fs.fchmodSync(target, mode)
          return sparse ? copySparseSync(source, target, to, hash, seek) : copyChunksSync(source, target, hash, to)
        })
        : attempt(method, to, async () => {
          fs.fchmodSync(target, mode)
          if (sparse) return copySparse(source, target, to, hash, seek)
          const buffer = Buffer.allocUnsafe(COPY_CHUNK)
          let total = 0
          for (;;) {
            const n = await new Promise<number>((resolve, reject) =>
              fs.read(source, buffer, 0, COPY_CHUNK, null, (e, bytesRead) => (e ? reject(e) : resolve(bytesRead))))
            if (n === 0) break
            hash?.update(buffer.subarray(0, n))
            let offset = 0
            while (offset < n) {
              offset += await new Promise<number>((resolve, reject) =>
                fs.write(target, buffer, offset, n - offset, null, (e, written) => (e ? reject(e) : resolve(written))))
            }
            total += n
          }
          return total
        })
      return yield* copied.pipe(
        Effect.bindTo("bytes"),
        Effect.bind("stamp", (): Effect.Effect<Stamp, FileSystemError> => (stamp ? attemptSync(method, to, () => stampCopy(source, target, to)) : Effect.succeed(undefined))),
        Effect.tap(() => (sync ? fsyncFd(method, to, target) : Effect.void)),
        Effect.tap(() => attemptSync(method, to, () => fs.closeSync(target))),
        Effect.tapError(() => removePartial)
      )
    }))

/** Copy what is left of `source` to `target` with synchronous syscalls through the shared buffer. */
const copyChunksSync = (source: number, target: number, hash: Hash | undefined, to: string): number => {
  const buffer = SYNC_CHUNK
  let total = 0
  for (;;) {
    const n = fs.readSync(source, buffer, 0, buffer.byteLength, null)
    if (n === 0) return total
    hash?.update(buffer.subarray(0, n))
    onTarget(to, () => writeAllSync(target, buffer.subarray(0, n)))
    total += n
  }
}

/** A descriptor's error names no path: name the copy, so a failing write is never taken for an unreadable source. */
const onTarget = <A>(to: string, run: () => A): A => {
  try {
    return run()
  } catch (cause) {
    if (typeof cause === "object" && cause !== null && !("path" in cause)) Object.assign(cause, { path: to })
    throw cause
  }
}

/** The source as it is after the copy; the copy gets its mtime (set last: every write moved the copy's own). */
const stampCopy = (source: number, target: number, to: string): fs.Stats => {
  const after = fs.fstatSync(source)
  onTarget(to, () => fs.futimesSync(target, after.mtimeMs / 1000, after.mtimeMs / 1000))
  return after
}

/**
 * `copyFileStamped` of a small file (the common case in a snapshot): every syscall synchronous in one
 * attempt, no Effect step per syscall (per-file Effect steps were most of a snapshot's CPU, BENCHMARKS.md).
 * Undefined when the source is too large for it (the chunked path on the thread pool copies it instead).
 */
const copyStampedSync = (from: string, to: string, seek: SeekData | undefined): { digest: FileDigest; source: fs.Stats } | undefined => {
  const source = fs.openSync(osPath(from), READ_NOFOLLOW)
  let target: number | undefined
  let created = false
  try {
    const stats = fs.fstatSync(source)
    if (stats.isDirectory()) throw failWith("copyFileStamped", from, "EISDIR", "is a directory")
    if (!stats.isFile()) throw failWith("copyFileStamped", from, "", "not a regular file")
    if (stats.size > SYNC_READ_MAX) return undefined
    const mode = stats.mode & 0o7777
    target = fs.openSync(osPath(to), CREATE_EXCLUSIVE, mode)
    created = true
    const opened = target
    if (umaskStrips(mode) || (mode & ~0o777) !== 0) onTarget(to, () => fs.fchmodSync(opened, mode))
    const hash = createHash("sha256")
    const bytes = hasHoles(stats) ? copySparseSync(source, target, to, hash, seek) : copyChunksSync(source, target, hash, to)
    const after = stampCopy(source, target, to)
    const fd = target
    target = undefined
    onTarget(to, () => fs.closeSync(fd))
    created = false
    return { digest: { sha256: hash.digest("hex"), bytes }, source: after }
  } finally {
    if (target !== undefined) closeQuietly(target)
    if (created) {
      try {
        fs.unlinkSync(osPath(to))
      } catch {
        // Best effort: the error being reported matters more.
      }
    }
    closeQuietly(source)
  }
}

const copyFileStamped = (from: string, to: string, seek: SeekData | undefined): Effect.Effect<StampedCopy, FileSystemError> =>
  Effect.flatMap(attemptSync("copyFileStamped", from, () => copyStampedSync(from, to, seek)), (small) => {
    if (small !== undefined) return Effect.succeed({ ...small.digest, source: toFileInfo(small.source) })
    const hash = createHash("sha256")
    return Effect.map(
      copyWith("copyFileStamped", from, to, false, hash, seek, true),
      ({ bytes, stamp }) => ({ sha256: hash.digest("hex"), bytes, source: toFileInfo(stamp!) })
    )
  })

const copyFile = (from: string, to: string, options: { readonly sync?: boolean } | undefined, seek: SeekData | undefined) =>
  Effect.asVoid(copyWith("copyFile", from, to, options?.sync === true, undefined, seek))

const copyFileHashed = (from: string, to: string, options: { readonly sync?: boolean } | undefined, seek: SeekData | undefined): Effect.Effect<FileDigest, FileSystemError> =>
  Effect.suspend(() => {
    const hash = createHash("sha256")
    return Effect.map(copyWith("copyFileHashed", from, to, options?.sync === true, hash, seek), ({ bytes }) => ({ sha256: hash.digest("hex"), bytes }))
  })

/**
 * A small file's SHA-256 with every syscall synchronous in one attempt (a verify hashes thousands of small
 * files: an Effect step per syscall cost more than the reads); undefined when it is too large for that.
 */
const hashSmallSync = (path: string, seek: SeekData | undefined): FileDigest | undefined => {
  const fd = fs.openSync(osPath(path), READ_NOFOLLOW)
  try {
    const stats = fs.fstatSync(fd)
    if (stats.isDirectory()) throw failWith("hashFile", path, "EISDIR", "is a directory")
    if (!stats.isFile()) throw failWith("hashFile", path, "", "not a regular file")
    if (stats.size > SYNC_READ_MAX) return undefined
    const hash = createHash("sha256")
    if (hasHoles(stats)) {
      const bytes = hashSparseSync(fd, hash, seek)
      return { sha256: hash.digest("hex"), bytes }
    }
    let total = 0
    for (;;) {
      const n = fs.readSync(fd, SYNC_CHUNK, 0, COPY_CHUNK, null)
      if (n === 0) return { sha256: hash.digest("hex"), bytes: total }
      hash.update(SYNC_CHUNK.subarray(0, n))
      total += n
    }
  } finally {
    closeQuietly(fd)
  }
}

/**
 * SHA-256 of a regular file in 64 KiB chunks: synchronously when small, on the thread pool when large; the
 * holes of a sparse file are hashed as zeros without reading them (with the native SEEK_DATA/SEEK_HOLE).
 */
const hashFile = (path: string, seek: SeekData | undefined): Effect.Effect<FileDigest, FileSystemError> =>
  Effect.flatMap(attemptSync("hashFile", path, () => hashSmallSync(path, seek)), (small) =>
    small !== undefined ? Effect.succeed(small) : withFd("hashFile", path, READ_NOFOLLOW, undefined, (fd) =>
      Effect.gen(function*() {
        const stats = yield* attemptSync("hashFile", path, () => fs.fstatSync(fd))
        if (!stats.isFile()) return yield* Effect.fail(failWith("hashFile", path, "", "not a regular file"))
        const hash = createHash("sha256")
        const bytes = yield* attempt("hashFile", path, async () => {
          if (hasHoles(stats)) return hashSparse(fd, hash, seek)
          const buffer = Buffer.allocUnsafe(COPY_CHUNK)
          let total = 0
          for (;;) {
            const n = await new Promise<number>((resolve, reject) =>
              fs.read(fd, buffer, 0, COPY_CHUNK, null, (e, bytesRead) => (e ? reject(e) : resolve(bytesRead))))
            if (n === 0) return total
            hash.update(buffer.subarray(0, n))
            total += n
          }
        })
        return { sha256: hash.digest("hex"), bytes }
      })))

// ---------------------------------------------------------------------------------------------------------
// the service

/** Which tree walker the Node layer uses: "native" (the fsat addon) when it loads, else "portable". */
export type Walker = WalkerKind

/**
 * The Node FileSystem, built in the caller's scope: the tree walks are `StorageConfig.walker`'s with at most
 * `StorageConfig.removerThreads` removals at once, and the portable walks' remover threads are stopped when
 * the scope closes. The umask is read here.
 */
export const make: Effect.Effect<FileSystem["Type"], never, Scope.Scope> = Effect.gen(function*() {
  const config = yield* StorageConfig
  umask = process.umask()
  const walks = yield* makeWalks(config.walker, config.removerThreads)
  return service(walks)
})

/**
 * Every method of `port`, paced (node/support.ts): a call first yields to the event loop when the synchronous
 * work since it last turned has used its slice. Nothing else changes: a call's answer is the same.
 */
const pacedPort = (port: FileSystem["Type"]): FileSystem["Type"] => {
  const out: Record<string, unknown> = {}
  for (const [name, method] of Object.entries(port)) {
    out[name] = typeof method === "function"
      ? (...args: ReadonlyArray<unknown>) => paced(Effect.suspend(() => (method as (...a: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>)(...args)))
      : method
  }
  return out as unknown as FileSystem["Type"]
}

const service = ({ snapshot, exchange, runReads, ...walks }: Walks): FileSystem["Type"] => {
  const seek = snapshot?.seek
  const readParts = runReads === undefined ? undefined : makeNativeReadParts(runReads, readDirectory)
  return pacedPort({
    ...walks,
    lstat,
    statFollowingLinks,
    readDirectory,
    readDirectoryInfo: snapshot === undefined ? readDirectoryInfo : (path) => snapshot.readDirectoryInfo(path, readDirectoryInfo),
    makeDirectory,
    writeFileExclusive,
    writeFileAtomic,
    replaceFileIfUnchanged: replaceFileIfUnchangedWith(exchange),
    writeFileInPlace,
    readFile,
    rename,
    removeFile: (path) => single(() => removeFileAnswer(path)),
    removeDirectory: (path) => attemptSync("removeDirectory", path, () => fs.rmdirSync(osPath(path))),
    // Single metadata syscalls: synchronous (a snapshot makes thousands of links; see the header).
    symlink: (target, path) => attemptSync("symlink", path, () => fs.symlinkSync(osPath(target), osPath(path))),
    readLink: (path) => attemptSync("readLink", path, () => readLinkLossless(path)),
    link: (existing, newPath) => attemptSync("link", newPath, () => fs.linkSync(osPath(existing), osPath(newPath))),
    linkEach: snapshot?.linkEach ?? linkEach,
    utimes: (path, atimeMs, mtimeMs) => attemptSync("utimes", path, () => fs.lutimesSync(osPath(path), atimeMs / 1000, mtimeMs / 1000)),
    chmod: (path, mode) => setMode("chmod", path, mode),
    copyFile: (from, to, options) => copyFile(from, to, options, seek),
    copyFileHashed: (from, to, options) => copyFileHashed(from, to, options, seek),
    copyFileStamped: (from, to) => copyFileStamped(from, to, seek),
    hashFile: (path) => hashFile(path, seek),
    lstatEach: (paths) => each(paths, lstatAnswer),
    // Capped reads above SYNC_READ_MAX are streamed on the pool, one file at a time.
    readFileEach: (paths, { maxBytes }) =>
      maxBytes <= SYNC_READ_MAX
        ? each(paths, (path) => answer("readFile", path, () => readFileSmallSync(path, maxBytes)))
        : Effect.forEach(paths, (path) => Effect.either(readFile(path, { maxBytes }))),
    readDirectoryEach: (paths) => each(paths, readDirectoryAnswer),
    writeFileExclusiveEach: (paths, data) => each(paths, (path) => createExclusiveAnswer("writeFileExclusive", path, data, DEFAULT_FILE_MODE)),
    renameEach: (moves) => each(moves, ([from, to]) => renameAnswer(from, to)),
    removeFileEach: (paths) => each(paths, removeFileAnswer),
    // Without the addon's run reads (portable, a stale build/): each.ts composes the single calls.
    ...(readParts === undefined ? {} : { readDirectoryPartsEach: readParts }),
    // Nothing of its own: `pacedPort` makes it the yield that any call makes once the slice is used.
    pace: () => Effect.void
  })
}

/** The production FileSystem layer (scoped: its remover threads stop with it). */
export const layer: Layer.Layer<FileSystem> = Layer.scoped(FileSystem, make)

/** The Node FileSystem with a chosen walker (tests and benchmarks compare the two). */
export const nodeFileSystemWith = (walker: Walker): Layer.Layer<FileSystem> =>
  layer.pipe(Layer.provide(StorageConfig.layerWith({ walker })))
