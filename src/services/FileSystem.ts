/**
 * The narrow FileSystem port (docs/architecture.md "Architecture in a paragraph": it never follows a link unless the operation's name says so).
 *
 * No operation follows a symlink in its last path component unless its name says so (`statFollowingLinks`): `lstat` describes the
 * link itself, `readFile`/`writeFileExclusive`/`chmod`/`utimes` fail with ELOOP (`IsSymlink`) on a link,
 * `readDirectory` of a link fails with ENOTDIR, and the tree walks never descend through one. Intermediate
 * components are resolved as the OS does; callers that must not cross links check their roots with `lstat`.
 *
 * Every failure is a `FileSystemError` carrying the raw errno (EXDEV, ENOTEMPTY, EPERM, ELOOP, EEXIST …).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import type { FileSystemError } from "../domain/Errors.js"
import type { ExpectedFile } from "../domain/FileChange.js"

export type FileType = "File" | "Directory" | "SymbolicLink" | "Other"

export interface FileInfo {
  readonly type: FileType
  /** Bytes (for a symlink, the length of its target string). */
  readonly size: number
  /** Permission bits only (`mode & 0o7777`). */
  readonly mode: number
  readonly uid: number
  readonly ino: number
  readonly dev: number
  readonly nlink: number
  readonly mtimeMs: number
  /** Inode change time (ms), where the layer keeps it (the Node layer's lstat and stat): the config history's clean scan needs it. */
  readonly ctimeMs?: number
  /**
   * Allocated 512-byte blocks (stat(2) `st_blocks`): what the entry takes on disk, below `size / 512` for a
   * sparse file. Both layers fill it (Memory keeps every file dense); optional so a FileInfo written by hand
   * need not make it up.
   */
  readonly blocks?: number
}

export interface DirEntry {
  readonly name: string
  readonly type: FileType
}

/** Budgets shared by the hot tree walks. */
export interface WalkBudget {
  /** Stop after visiting this many entries (the root itself is not counted). */
  readonly maxEntries: number
  /** Do not descend into directories deeper than this below the root (the root's children are depth 1). */
  readonly maxDepth: number
}

/** No bound: a tree already proven the caller's own, walked whole whatever its size and depth. */
export const WHOLE_TREE: WalkBudget = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }

/**
 * What a tree holds, counted as `du` counts it (docs/work-runs.md "Retention": one byte count): every entry of the tree,
 * the root included (directories, symlinks and special files as well as regular files), a file of several
 * hard links once per walk (as `du` counts an inode once per walk: a file linked into two trees counts in
 * each tree's walk). `bytes` is disk usage, allocated 512-byte blocks × 512 (`du -s -B1`; `du -sk` rounds it
 * up to KiB); `apparentBytes` the sizes (`du -sb`). An entry on another file system (a mount point) counts
 * as an entry, never its sizes.
 */
export interface TreeSizes {
  /** Disk usage: allocated blocks × 512 (what fills a disk; below `apparentBytes` for sparse and small files). */
  readonly bytes: number
  /** Apparent size: the entries' `size` (a symlink's is its target's length, a directory's what the file system says). */
  readonly apparentBytes: number
}

export interface TreeMeasure extends TreeSizes {
  /**
   * Regular files' `size` alone (no directories, no links; an inode once): what files hold, for a
   * content budget (the config tier's), never a size shown as the tree's.
   */
  readonly fileBytes: number
  /** Entries visited below the root. */
  readonly entries: number
  /** False when the entry or depth budget (or a mount point) cut the walk short: the sizes are then lower bounds. */
  readonly complete: boolean
}

export interface TreeRemoval {
  readonly removedEntries: number
  /**
   * Sizes of what this call removed (`TreeSizes`, as `measureTree` counts them, the root once it is removed;
   * never through a link), so a prune needs no measuring walk before removing a run it chose by age or count
   * (docs/work-runs.md "Retention"). Lower bounds of the tree's when `!complete`. A removal resumed after a budget
   * stop counts a file of several links again if its other name went in an earlier call.
   */
  readonly removedBytes: number
  readonly removedApparentBytes: number
  /** False when the budget stopped the deletion before the root itself was removed. */
  readonly complete: boolean
}

/** What a streamed hash saw: SHA-256 (lowercase hex) and length of exactly the bytes read. */
export interface FileDigest {
  readonly sha256: string
  readonly bytes: number
}

/** What `copyFileStamped` did: the digest of exactly the bytes written, and its source as it was after the copy. */
export interface StampedCopy extends FileDigest {
  /** The source, described through the descriptor the bytes were read from, after the last byte. */
  readonly source: FileInfo
}

/** A directory entry described by `lstat`. */
export interface DirEntryInfo {
  readonly name: string
  readonly info: FileInfo
}

export interface WriteOptions {
  /** Permission bits for a new file (default 0o600). */
  readonly mode?: number
  /** fsync the file (and, for atomic writes, its directory). */
  readonly sync?: boolean
}

/** What `readDirectoryPartsEach` reads of each directory it is given (`dir`). */
export interface DirectoryParts {
  /** A file's name in `dir`: read as `readFile(dir/file, { maxBytes })` reads it. */
  readonly file: string
  readonly maxBytes: number
  /** A subdirectory's name in `dir`: listed as `readDirectory(dir/listing)` lists it. */
  readonly listing: string
  /** When given, `dir` is measured as `measureTree(dir, measure)` measures it. */
  readonly measure?: WalkBudget | undefined
}

/** One directory's parts (`DirectoryParts`): each the single call's value, or its error. */
export interface DirectoryPartsRead {
  readonly file: Either.Either<Uint8Array, FileSystemError>
  readonly listing: Either.Either<ReadonlyArray<DirEntry>, FileSystemError>
  /** `undefined` when no measure was asked for. */
  readonly measure: Either.Either<TreeMeasure, FileSystemError> | undefined
}

/** One item's answer in a batched call: the single call's value, or its error. */
export type EachAnswers<A> = Effect.Effect<ReadonlyArray<Either.Either<A, FileSystemError>>>

export class FileSystem extends Context.Tag("pi-agent-storage/FileSystem")<FileSystem, {
  /** Describe a path without following a final symlink. */
  readonly lstat: (path: string) => Effect.Effect<FileInfo, FileSystemError>
  /**
   * stat(2): describe what `path` resolves to, FOLLOWING every symlink (a dangling one is ENOENT; "x/.." is
   * the physical parent of what x resolves to). Only for comparing directories by identity (TD5), never for
   * deciding what to write or delete.
   */
  readonly statFollowingLinks: (path: string) => Effect.Effect<FileInfo, FileSystemError>
  /** Typed entries of a directory (sorted by name). Fails with ENOTDIR when `path` is a symlink. */
  readonly readDirectory: (path: string) => Effect.Effect<ReadonlyArray<DirEntry>, FileSystemError>
  /**
   * `readDirectory` with every entry `lstat`ed (never through a link), in one call: a snapshot's walk.
   * An entry gone between the listing and its lstat is left out (as if it had gone a moment earlier).
   */
  readonly readDirectoryInfo: (path: string) => Effect.Effect<ReadonlyArray<DirEntryInfo>, FileSystemError>
  /**
   * Create a directory (default mode 0o700). Exclusive (EEXIST) unless `recursive`, which creates missing
   * parents and succeeds when a directory is already there (but fails when a symlink or file is).
   */
  readonly makeDirectory: (
    path: string,
    options?: { readonly mode?: number; readonly recursive?: boolean }
  ) => Effect.Effect<void, FileSystemError>
  /** O_CREAT|O_EXCL|O_NOFOLLOW: fails with EEXIST on any existing entry, a dangling symlink included. */
  readonly writeFileExclusive: (path: string, data: Uint8Array, options?: WriteOptions) => Effect.Effect<void, FileSystemError>
  /**
   * Write to a unique temp file beside `path`, then rename over it (sync defaults to true: fsync the file
   * before and the directory after the rename). Replaces a symlink at `path` rather than writing through it.
   */
  readonly writeFileAtomic: (path: string, data: Uint8Array, options?: WriteOptions) => Effect.Effect<void, FileSystemError>
  /**
   * Replace `path` with `data` only if it is still `expected` (domain/FileChange.ts): the regular file of that
   * device and inode holding exactly those bytes, or, for `null`, nothing at all (then `data` is created
   * exclusively: whoever created it meanwhile wins). `data` `null` removes the file on the same condition (a
   * file already gone is success: nothing is there and nothing anyone saved was removed).
   * Otherwise fails with reason `Changed` (errno "", `detail` says what changed) and leaves the entry as it is.
   * Written like `writeFileAtomic` (a temp file beside it, fsynced unless `sync: false`, renamed; never through
   * a symlink). Memory: the check and the rename are one atomic step. Node: the temp file is written and
   * synced first, then the target is checked again (lstat, then a read through a descriptor whose inode is
   * compared too) in the same synchronous run as the rename, so the only window left is the microseconds
   * between that read and the rename; a write into the old inode by a process that opened it before the
   * rename is not seen (docs/user-profile.md "User profile (USER.md)").
   */
  readonly replaceFileIfUnchanged: (
    path: string,
    expected: ExpectedFile,
    data: Uint8Array | null,
    options?: WriteOptions
  ) => Effect.Effect<void, FileSystemError>
  /**
   * Overwrite an existing regular file from offset 0 with `data` of exactly its current length, in one write:
   * no temp file, no rename, no change of length, no fsync. Never through a symlink (ELOOP); a file of another
   * length fails with `InvalidData` and is left as it was. (On ext4 a rename over an existing file flushes
   * the new file at once, `auto_da_alloc`: an in-place write of a few bytes costs a fraction of it.)
   */
  readonly writeFileInPlace: (path: string, data: Uint8Array) => Effect.Effect<void, FileSystemError>
  /** Read a regular file, never through a symlink (ELOOP). Fails with EFBIG (`TooLarge`) above `maxBytes`. */
  readonly readFile: (path: string, options?: { readonly maxBytes?: number }) => Effect.Effect<Uint8Array, FileSystemError>
  /**
   * rename(2): atomic; replaces a file or an empty directory; ENOTEMPTY, EXDEV as the OS says. Syncs the
   * parent directories unless `sync: false` (for renames whose loss in a power cut is harmless).
   */
  readonly rename: (from: string, to: string, options?: { readonly sync?: boolean }) => Effect.Effect<void, FileSystemError>
  /** unlink(2): removes a file or a symlink (never its target). */
  readonly removeFile: (path: string) => Effect.Effect<void, FileSystemError>
  /** rmdir(2): empty directories only (ENOTEMPTY). */
  readonly removeDirectory: (path: string) => Effect.Effect<void, FileSystemError>
  readonly symlink: (target: string, path: string) => Effect.Effect<void, FileSystemError>
  readonly readLink: (path: string) => Effect.Effect<string, FileSystemError>
  /** Hard link (EXDEV across devices). */
  readonly link: (existing: string, newPath: string) => Effect.Effect<void, FileSystemError>
  /**
   * `link(fromDir/name, toDir/name)` for each name, in order, in one call (a snapshot's unchanged files of one
   * directory). Answers one result per name: `undefined` when it was linked, else that link's error (EEXIST,
   * EMLINK, EXDEV, ENOENT …, as `link` reports it); the other names are still tried. Like `link`, never
   * follows a final symlink. The call itself fails only where the whole world does (the Memory crash point).
   */
  readonly linkEach: (
    fromDir: string,
    toDir: string,
    names: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<FileSystemError | undefined>, FileSystemError>
  /** Set times of the entry itself (a symlink's own times, never its target's). */
  readonly utimes: (path: string, atimeMs: number, mtimeMs: number) => Effect.Effect<void, FileSystemError>
  /** Set permission bits; refuses a symlink (ELOOP) rather than changing its target. */
  readonly chmod: (path: string, mode: number) => Effect.Effect<void, FileSystemError>
  /**
   * Copy a regular file (never through a symlink) to a new path (EEXIST if taken); keeps the mode. The holes
   * of a sparse source stay holes where the layer has them (Node: `blocks` of the copy about the source's);
   * the bytes are the same everywhere. So for the other copies, and `hashFile` need not read a hole.
   */
  readonly copyFile: (from: string, to: string, options?: { readonly sync?: boolean }) => Effect.Effect<void, FileSystemError>
  /**
   * `copyFile` that streams the bytes through SHA-256 as it copies them (in chunks, never the whole file in
   * memory): the digest is of exactly the bytes written to `to`.
   */
  readonly copyFileHashed: (from: string, to: string, options?: { readonly sync?: boolean }) => Effect.Effect<FileDigest, FileSystemError>
  /**
   * `copyFileHashed` for a snapshot, in one call per file: the copy gets the source's mode and, after its
   * last byte, the source's mtime (set through the descriptor), and the answer describes the source by the
   * descriptor it was read from after the copy (a writer meanwhile shows as a changed size or mtime). No
   * fsync (a snapshot makes its files durable as a whole before it is listed).
   */
  readonly copyFileStamped: (from: string, to: string) => Effect.Effect<StampedCopy, FileSystemError>
  /** SHA-256 of a regular file, read in chunks (never whole into memory), never through a symlink (ELOOP). */
  readonly hashFile: (path: string) => Effect.Effect<FileDigest, FileSystemError>
  /**
   * Make everything written below the directory `path` durable in one call, where an fsync per file would
   * commit the journal once per file (Node: syncfs(2) of its file system with the native addon, else an
   * fsync of every file and directory below, never through a link). ENOTDIR for anything but a directory.
   */
  readonly syncFileSystem: (path: string) => Effect.Effect<void, FileSystemError>
  /**
   * Sum a tree as `du -s` does (`TreeMeasure`) without following symlinks or leaving its file system, within
   * the budget. A symlink or file root measures itself.
   */
  readonly measureTree: (path: string, budget: WalkBudget) => Effect.Effect<TreeMeasure, FileSystemError>
  /**
   * Delete a tree bottom-up without following symlinks (links are unlinked, never descended). Stops after
   * `maxEntries` removals; a rerun continues. Missing root: complete with 0 removed.
   */
  readonly removeTree: (path: string, budget: WalkBudget) => Effect.Effect<TreeRemoval, FileSystemError>
  // Batched forms of the hot metadata calls (docs/architecture.md "Architecture in a paragraph"): each answers exactly what
  // its single call would for every item, in order, in one call; a failure answers its item and the rest
  // still run. A prune makes ≈ 14 such calls per run, and one runtime step each cost more CPU than their
  // syscalls (BENCHMARKS.md "Prune: the protocol in batches"). Optional: programs call them through `services/internal/each.ts`,
  // which falls back to the single calls one item at a time; the Memory world leaves them out, so there every
  // item stays its own scheduling point, journal entry, fault and crash gate. A wrapper that overrides a
  // single call must drop or wrap its batched form too.
  readonly lstatEach?: (paths: ReadonlyArray<string>) => EachAnswers<FileInfo>
  /** `readFile` of each path with the same cap. */
  readonly readFileEach?: (paths: ReadonlyArray<string>, options: { readonly maxBytes: number }) => EachAnswers<Uint8Array>
  readonly readDirectoryEach?: (paths: ReadonlyArray<string>) => EachAnswers<ReadonlyArray<DirEntry>>
  /** `writeFileExclusive` of the same bytes at each path (default mode, no fsync). */
  readonly writeFileExclusiveEach?: (paths: ReadonlyArray<string>, data: Uint8Array) => EachAnswers<void>
  /** `rename` of each pair with `sync: false`. */
  readonly renameEach?: (moves: ReadonlyArray<readonly [from: string, to: string]>) => EachAnswers<void>
  readonly removeFileEach?: (paths: ReadonlyArray<string>) => EachAnswers<void>
  /**
   * A point where a long computation between calls (a plan over 10,000 runs) lets the process's event loop
   * turn, when the layer paces its calls and the synchronous work since the loop last turned has used its
   * slice (Node: node/support.ts `paced`). Optional: programs call it through `services/internal/pace.ts`;
   * without it (the Memory world, whose every call is a scheduling point) it does nothing.
   */
  readonly pace?: () => Effect.Effect<void>
  /**
   * A run directory's reads for a view (BENCHMARKS.md "Views"), in one call per batch: for each directory, its
   * `parts` (a file's bytes, a subdirectory's listing and, when asked, its measure), each part what its
   * single call answers, except that the directory itself is never gone through when it is a symlink: then
   * the file and the listing answer ENOTDIR (the single calls would follow it; the measure, as `measureTree`
   * does, measures the link). Node's native walker opens each directory once and does the rest relative to
   * it on the thread pool; elsewhere (services/internal/each.ts) an `lstat` of the directory, then the single calls.
   */
  readonly readDirectoryPartsEach?: (dirs: ReadonlyArray<string>, parts: DirectoryParts) => Effect.Effect<ReadonlyArray<DirectoryPartsRead>>
  /** `removeTree` of each path with the same budget (Node's native walker: all queued for C at once). */
  readonly removeTreeEach?: (paths: ReadonlyArray<string>, budget: WalkBudget) => EachAnswers<TreeRemoval>
}>() {}

/**
 * Whether the current fiber's port calls give way to the event loop once the layer's slice is used (the
 * pacing of `pace` and of every Node call). True by default: a prune or a scan shares the harness's event loop.
 * Lease operations (acquire, release, the heartbeat) run with it false: a handful of calls the harness is
 * waiting for, which must not queue behind a background prune's slices, one slice per call (docs/work-runs.md
 * "Retention": the acquirer never waits for the prune). A background prune sets it true again whatever fiber
 * started it. One value per process, whichever copy of this module a bundle holds.
 */
export const YieldsToEventLoop: FiberRef.FiberRef<boolean> = globalValue(
  Symbol.for("pi-agent-storage/YieldsToEventLoop"),
  () => FiberRef.unsafeMake(true)
)
