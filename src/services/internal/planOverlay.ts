/**
 * The dry run of a migration plan sees the tree as the run would: a run executes entry 1 before it plans entry
 * 2, so a preview that planned every entry against today's tree would say, for a plan that merges a ledger out
 * of `config/state/` and then moves the rest of `config/state/`, that the ledger collides (it will be gone by
 * then). This is a read-only view of the file-system port with the effects of the entries planned so far laid
 * over it: what they remove is absent, what they move shows at its destination, what they write reads back
 * with its new bytes, and a directory one makes on its way (the run makes missing parents) stays a directory,
 * whatever later entries move out of it, until one moves or removes the directory itself. Only the reads the planner makes are overlaid (`lstat`, `readDirectory`, `readFile`,
 * `readLink`); nothing here writes.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import { FileSystemError } from "../../domain/Errors.js"
import type { DirEntry, FileInfo, FileSystem } from "../FileSystem.js"

type Fs = FileSystem["Type"]

/** One planned change, in terms of the view at the time it happens. */
export type OverlayEffect =
  | { readonly _tag: "Removed"; readonly path: string }
  /** `path` (absent before) now holds what `source` held: the whole entry, moved. */
  | { readonly _tag: "Placed"; readonly path: string; readonly source: string }
  /** `path` is a regular file with these bytes (its other facts from `info`). */
  | { readonly _tag: "Written"; readonly path: string; readonly bytes: Uint8Array; readonly info: FileInfo }

const isAtOrBelow = (path: string, dir: string) => path === dir || path.startsWith(dir.endsWith(NodePath.sep) ? dir : dir + NodePath.sep)

type Seen =
  | { readonly _tag: "Gone" }
  | { readonly _tag: "Written"; readonly bytes: Uint8Array; readonly info: FileInfo }
  /**
   * What is at `path` of the real tree, as the view of the first `at` effects shows it (a placement maps a path
   * back to its source as the view stood before that placement). `directory`: an entry made something below it,
   * so the run has made it a directory on the way if it was not one (and never removes it again).
   */
  | {
    readonly _tag: "Real"
    readonly path: string
    readonly directory: boolean
    /**
     * Where a moved directory was before each move, newest first, each with the effects before that move
     * (what they put below it is in it still; the last is `path`): a listing of the path includes those names.
     */
    readonly before: ReadonlyArray<{ readonly path: string; readonly at: number }>
  }
  /** A directory an entry made on its way after an earlier one removed what was there. */
  | { readonly _tag: "Made" }

const isADirectory = (path: string) =>
  new FileSystemError({ reason: "IsADirectory", errno: "EISDIR", method: "readFile", path, detail: "a directory an earlier entry of the plan made" })

const notFound = (method: string, path: string) =>
  new FileSystemError({ reason: "NotFound", errno: "ENOENT", method, path, detail: "removed by an earlier entry of the plan" })

export const makeOverlay = (fs: Fs) => {
  const effects: Array<OverlayEffect> = []

  /**
   * `path` as the plan leaves it, newest effect first: a removal hides (unless a newer entry made something
   * below it: then a directory stands there again), a write answers, a placement maps the path back to its
   * source; an entry that made something below the path makes it a directory.
   */
  const see = (path: string): Seen => {
    let p = path
    let madeBelow = false
    const before: Array<{ path: string; at: number }> = []
    for (let i = effects.length - 1; i >= 0; i--) {
      const e = effects[i]!
      if (e._tag === "Removed") {
        if (isAtOrBelow(p, e.path)) return madeBelow ? { _tag: "Made" } : { _tag: "Gone" }
      } else if (e._tag === "Written" && p === e.path) {
        return { _tag: "Written", bytes: e.bytes, info: e.info }
      } else if (e._tag === "Written" && isAtOrBelow(p, e.path)) {
        return madeBelow ? { _tag: "Made" } : { _tag: "Gone" }
      } else if (e._tag === "Placed" && isAtOrBelow(p, e.path)) {
        p = e.source + p.slice(e.path.length)
        before.push({ path: p, at: i })
      } else if (e.path !== p && isAtOrBelow(e.path, p)) {
        madeBelow = true
      }
    }
    return { _tag: "Real", path: p, directory: madeBelow, before }
  }

  /** A real call's error names the path the planner asked about, as the run's would. */
  const asViewed = (real: string, viewed: string) => (e: FileSystemError) =>
    real === viewed || !e.path.startsWith(real)
      ? e
      : new FileSystemError({
        reason: e.reason,
        errno: e.errno,
        method: e.method,
        path: viewed + e.path.slice(real.length),
        ...(e.detail === undefined ? {} : { detail: e.detail }),
        ...(e.cause === undefined ? {} : { cause: e.cause })
      })

  const impliedDirectory = (): FileInfo => ({ type: "Directory", size: 0, mode: 0o700, uid: 0, ino: 0, dev: 0, nlink: 2, mtimeMs: 0 })

  const lstat = (path: string): Effect.Effect<FileInfo, FileSystemError> => {
    const s = see(path)
    return s._tag === "Gone"
      ? Effect.fail(notFound("lstat", path))
      : s._tag === "Written"
      ? Effect.succeed(s.info)
      : s._tag === "Made"
      ? Effect.succeed(impliedDirectory())
      : fs.lstat(s.path).pipe(
        Effect.catchIf((e) => e.reason === "NotFound" && s.directory, () => Effect.succeed(impliedDirectory())),
        Effect.mapError(asViewed(s.path, path))
      )
  }

  const readDirectory = (dir: string): Effect.Effect<ReadonlyArray<DirEntry>, FileSystemError> =>
    Effect.gen(function*() {
      const s = see(dir)
      if (s._tag === "Gone") return yield* Effect.fail(notFound("readDirectory", dir))
      if (s._tag === "Written") {
        return yield* Effect.fail(new FileSystemError({ reason: "NotADirectory", errno: "ENOTDIR", method: "readDirectory", path: dir }))
      }
      const real = s._tag === "Made" ? [] : yield* fs.readDirectory(s.path).pipe(
        Effect.catchIf((e) => e.reason === "NotFound" && s.directory, () => Effect.succeed([])),
        Effect.mapError(asViewed(s.path, dir))
      )
      const names = new Set(real.map((e) => e.name))
      // What earlier entries put below `dir`: their first name under it (a directory made on the way, or the
      // entry); and, when `dir` is a directory an entry moved here, what entries before that one put below
      // where it came from.
      const below = (root: string, upTo: number) => {
        for (const e of effects.slice(0, upTo)) {
          if (e._tag !== "Removed" && e.path !== root && isAtOrBelow(e.path, root)) names.add(e.path.slice(root.length + 1).split(NodePath.sep)[0]!)
        }
      }
      below(dir, effects.length)
      if (s._tag === "Real") for (const stop of s.before) if (stop.path !== dir) below(stop.path, stop.at)
      const entries: Array<DirEntry> = []
      for (const name of names) {
        const info = yield* lstat(NodePath.join(dir, name)).pipe(
          Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(undefined))
        )
        if (info !== undefined) entries.push({ name, type: info.type })
      }
      return entries
    })

  const readFile = (path: string, options?: { readonly maxBytes?: number }): Effect.Effect<Uint8Array, FileSystemError> => {
    const s = see(path)
    return s._tag === "Gone"
      ? Effect.fail(notFound("readFile", path))
      : s._tag === "Written"
      ? Effect.succeed(s.bytes)
      : s._tag === "Made"
      ? Effect.fail(isADirectory(path))
      : fs.readFile(s.path, options).pipe(
        Effect.catchIf((e) => e.reason === "NotFound" && s.directory, () => Effect.fail(isADirectory(path))),
        Effect.mapError(asViewed(s.path, path))
      )
  }

  const readLink = (path: string): Effect.Effect<string, FileSystemError> => {
    const s = see(path)
    return s._tag === "Real"
      ? fs.readLink(s.path).pipe(Effect.mapError(asViewed(s.path, path)))
      : Effect.fail(s._tag === "Gone" ? notFound("readLink", path) : new FileSystemError({ reason: "InvalidData", errno: "EINVAL", method: "readLink", path }))
  }

  return {
    /** The port as the next entry's planner sees it (reads overlaid; it never writes in a dry run). */
    fs: { ...fs, lstat, readDirectory, readFile, readLink } satisfies Fs,
    record: (more: ReadonlyArray<OverlayEffect>) => void effects.push(...more)
  }
}
