/**
 * Loads the optional native `fsat` addon (native/fsat.c, built by `npm install` through node-gyp). When it
 * is missing (no compiler, an unsupported platform) or `StorageConfig.walker` is `portable`
 * (`PI_STORAGE_NATIVE=0`, read by `StorageConfig.layerFromEnv`), the Node layer uses the portable walks.
 */
import { createRequire } from "node:module"
import * as os from "node:os"
import { MOVED_DIRECTORY_SYSCALL } from "../../domain/WalkDepth.js"
import { packageFile } from "./packageRoot.js"
import { movedDirectory } from "./syncWalk.js"

/** Entry types as `fsat` reports them. */
export const FsatType = { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 3, Other: 4 } as const

/** A path given to the addon: a string, or a Buffer of its bytes when it holds bytes that are not UTF-8 (osPath.ts). Typed as Uint8Array, which a Buffer is, so the declarations need no Node types. */
export type FsatPath = string | Uint8Array

/** Every call answers a negative errno instead of throwing. Paths it answers with are decoded as UTF-8 (lossily). */
export interface Fsat {
  /**
   * Measure a tree on the calling thread, visiting at most `cap` entries, listing no directory of more than
   * `cap` names, visiting no entry after `maxMs`: 0 with [entries, disk usage, complete (1 or 0), apparent
   * size, file bytes] in `out` (FileSystem `TreeMeasure`); 1 when
   * it stopped at one of those limits below `maxEntries` (measure it with `measureTree`); [negative errno,
   * syscall, path] when the walk failed; a negative errno for bad arguments. Missing from an addon built
   * before it existed.
   */
  /** The version of the measure calls' signatures (fsat.c MEASURE_VERSION); missing before they existed. */
  readonly measureVersion?: number
  readonly measureTreeSync?: (path: FsatPath, maxEntries: number, maxDepth: number, cap: number, maxMs: number, out: Float64Array) => number | readonly [number, string, string]
  /**
   * Queue a whole measuring walk on the libuv thread pool; 0 when queued (else a negative errno, and no
   * callback). The callback gets `(0, entries, complete, bytes, apparentBytes, fileBytes)` or `(-errno, syscall,
   * path, 0, 0, 0)`. Setting `cancel[0]` stops the walk at its next entry (answer ECANCELED).
   */
  readonly measureTree?: (
    path: FsatPath,
    maxEntries: number,
    maxDepth: number,
    callback: (answer: number, a: number | string, b: boolean | string, bytes: number, apparentBytes: number, fileBytes: number) => void,
    cancel?: Int32Array
  ) => number
  /** The version of the removal calls' answers (fsat.c REMOVE_VERSION); missing before it existed (then they answered file bytes only). */
  readonly removeVersion?: number
  /**
   * Queue a whole removal walk on the libuv thread pool; 0 when queued (else a negative errno, and no
   * callback). The callback gets `(0, removedEntries, complete, removedBytes, removedApparentBytes, …)` or
   * `(-errno, syscall, path, 0, 0, …)`; a removal that met a mount point gets `(-EXDEV, "mount", mountPoint,
   * removedBytes, removedApparentBytes, …)` after removing the rest.
   */
  readonly removeTree: (
    path: FsatPath,
    maxEntries: number,
    maxDepth: number,
    callback: (answer: number, a: number | string, b: boolean | string, removedBytes: number, removedApparentBytes: number) => void
  ) => number
  /**
   * Queue several removal walks as one piece of thread-pool work (each exactly `removeTree`'s, in order;
   * budgets per root); 0 when queued (else a negative errno, and no callback). The callback gets
   * `(index, ...removeTree's answer)` once per root, all on one return to the event loop; a root too long
   * for a path answers `(-ENAMETOOLONG, "removeTree", root)` alone. Missing from an addon built before it existed.
   */
  readonly removeTrees?: (
    paths: ReadonlyArray<FsatPath>,
    maxEntries: ReadonlyArray<number>,
    maxDepths: ReadonlyArray<number>,
    callback: (index: number, answer: number, a: number | string, b: boolean | string, removedBytes: number, removedApparentBytes: number) => void
  ) => number
  /**
   * Queue syncfs(2) of the file system holding the directory `path` on the thread pool; 0 when queued (else
   * a negative errno, and no callback). The callback gets `(0, "")` or `(-errno, syscall)`.
   */
  readonly syncFs: (path: FsatPath, callback: (answer: number, syscall: string) => void) => number
  /**
   * A directory's entries (unsorted) with their lstat, relative to its descriptor: per name 8 doubles in
   * `stats` (type, size, permission bits, uid, ino, dev, nlink, mtimeMs as Node computes it); an entry gone
   * before its lstat is left out. A final symlink is refused (ENOTDIR). Else a negative errno.
   */
  readonly listInfo?: (path: FsatPath) => { readonly names: Array<string>; readonly stats: Float64Array } | number
  /** Doubles per entry in `listInfo`'s stats (9 with `blocks`); missing from an addon built before it was 9 (8 then). */
  readonly infoFields?: number
  /**
   * `linkat(fromDir/name, toDir/name)` for each name, both directories opened once (a final symlink refused):
   * each name's errno (0 when linked) into `errnos`; 0, or a negative errno when a directory cannot be opened.
   */
  readonly linkEach?: (fromDir: FsatPath, toDir: FsatPath, names: ReadonlyArray<FsatPath>, errnos: Int32Array) => number
  /**
   * renameat2(a, b, RENAME_EXCHANGE): the two names swap entries atomically. 0, or a negative errno (EINVAL or
   * ENOTSUP where the file system cannot, ENOSYS off Linux). Missing from an addon built before it existed.
   */
  readonly exchange?: (a: FsatPath, b: FsatPath) => number
  /**
   * lseek(fd, offset, SEEK_DATA when whence is 0, SEEK_HOLE when 1): the offset, or a negative errno (-ENXIO:
   * no data at or after `offset`). For copies and hashes that keep holes (sparse.ts). Missing from an addon
   * built before it existed.
   */
  readonly seek?: (fd: number, offset: number, whence: 0 | 1) => number
  /** The version of `readRuns`' answers (fsat.c READ_RUNS_VERSION); missing before it existed. */
  readonly readRunsVersion?: number
  /**
   * Queue the reads of run directories (paths, or one string of them each ended by a NUL) as one piece of
   * thread-pool work (runReads.ts): each directory opened
   * once (never through a link), then relative to it `file`'s bytes (at most `maxBytes`), `listing`'s names and
   * types, and, when `maxEntries` is not negative, its measure. 0 when queued (else a negative errno, and no
   * callback). The callback gets the whole batch's answers in one call, `(numbers, bytes, names, types,
   * texts)`: fsat.c `run_batch_complete` says what each holds.
   */
  readonly readRuns?: (
    dirs: ReadonlyArray<FsatPath> | string,
    file: string,
    listing: string,
    maxBytes: number,
    maxEntries: number,
    maxDepth: number,
    /** `numbers` undefined (and nothing else): no room was left for the answer (every part ENOMEM). */
    callback: (numbers: Float64Array | undefined, bytes?: Uint8Array, names?: string, types?: string, texts?: ReadonlyArray<string> | undefined) => void
  ) => number
}

/** From the package root: the same file whether this runs from src/, dist/ or a bundle. */
const ADDON_PATH = ["build", "Release", "fsat.node"] as const

/** The addon, or why it cannot be used. Loading is the only thing it does (no configuration read here). */
export const loadFsat = (): { readonly fsat: Fsat } | { readonly why: string } => {
  try {
    return { fsat: createRequire(import.meta.url)(packageFile(...ADDON_PATH)) as Fsat }
  } catch (cause) {
    return { why: `not built (${cause instanceof Error ? cause.message.split("\n")[0] : String(cause)})` }
  }
}

let loaded: ReturnType<typeof loadFsat> | undefined

/** The addon, loaded on first use and kept (a native module loads once per process anyway). */
export const fsatAddon = (): ReturnType<typeof loadFsat> => (loaded ??= loadFsat())

const errnoNames = new Map<number, string>(Object.entries(os.constants.errno).map(([name, value]) => [value, name]))

/** The errno name of a negative `fsat` answer ("ENOENT"), or "" for one this platform does not name. */
export const errnoName = (answer: number): string => errnoNames.get(-answer) ?? ""

/**
 * An Error shaped like the ones `node:fs` throws, for `toFileSystemError`; a walk's re-opened directory that
 * was not the one it left (syscall "reopen") is told as the portable walk tells it (domain/WalkDepth.ts).
 */
export const fsatError = (syscall: string, path: string, answer: number): Error => {
  if (syscall === MOVED_DIRECTORY_SYSCALL) return movedDirectory(path)
  const code = errnoName(answer)
  return Object.assign(new Error(`${code || `errno ${-answer}`}: ${syscall} '${path}'`), { code, path, syscall })
}
