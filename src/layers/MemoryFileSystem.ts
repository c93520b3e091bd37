/**
 * The FileSystem port over the simulated inode tree of `MemoryWorld`, with Linux semantics (see the port's
 * documentation and `MemoryWorld.ts` for faults, crashes and the journal).
 *
 * Every call yields once before acting (so concurrent fibers interleave) and is then atomic; the compound
 * calls `writeFileAtomic` and `removeTree` also yield between their steps. Permission bits and owners are
 * recorded, never enforced (see `MemoryWorld.ts`). `sync` options are accepted and ignored: the simulated
 * disk never loses a completed step.
 *
 * `layerMemory(options?)` is the one-process convenience: a fresh world (or the one given) with this
 * FileSystem, a `MemoryHost` process and the `MemoryDriver`.
 */
import { createHash } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { FileSystemError, lengthMismatch, reasonOfErrno } from "../domain/Errors.js"
import { changedError, changeSince, type ExpectedFile, type FileChange } from "../domain/FileChange.js"
import { CROSSED_MOUNT_DETAIL, CROSSED_MOUNT_ERRNO } from "../domain/OneFileSystem.js"
import { type DirEntry, type DirEntryInfo, type FileDigest, type FileInfo, FileSystem, type StampedCopy, type TreeMeasure, type TreeRemoval } from "../services/FileSystem.js"
import { Host } from "../services/Host.js"
import * as MemoryHost from "./MemoryHost.js"
import {
  attach,
  CRASHED,
  detach as unlink,
  type DirNode,
  errno,
  type Errno,
  type FaultStep,
  type FileNode,
  isErrno,
  isSpecialName,
  renameRefusal,
  joinPath,
  type Lookup,
  MemoryDriver,
  MemoryWorld,
  type MemoryWorldOptions,
  type Node,
  type ProcessContext,
  sizeOf
} from "./MemoryWorld.js"

export interface MemoryFileSystemOptions {
  /** Owner of the entries this process creates (default 1000). */
  readonly uid?: number
  /**
   * Bits cleared from the mode of created files and directories (default 0: modes are exact, as the Node
   * layer makes them with an fchmod after creation).
   */
  readonly umask?: number
  /** Directory relative paths resolve against (default "/"). */
  readonly cwd?: string
  /** The simulated process, for the journal, faults and scoped crash points (its machine's world name). */
  readonly hostname?: string
  readonly pid?: number
  /**
   * How far the calling process's `Clock` is off the world's (ms, + ahead; default 0): mtimes are stamped on
   * the world's clock (the caller's minus this), as a shared file system stamps them whatever its clients'
   * clocks say.
   */
  readonly clockSkewMs?: number
}


const compareNames = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
const sortedNames = (dir: DirNode): Array<string> => [...dir.entries.keys()].sort(compareNames)

/** The simulated disk keeps every file dense, in 4 KiB blocks (a directory one block, a link none): as ext4. */
const blocksOf = (node: Node): number =>
  node.kind === "File" ? Math.ceil(node.data.length / 4096) * 8 : node.kind === "Directory" ? 8 : 0

/**
 * The sizes a walk adds up, as `du` does (FileSystem `TreeMeasure`): every entry's own, a node of more than
 * one link once per walk (a removal's later names of it, with one link fewer, are found in the set too).
 */
const makeTally = () => {
  const linked = new Set<Node>()
  const total = { bytes: 0, apparentBytes: 0, fileBytes: 0 }
  const add = (node: Node) => {
    if (node.kind !== "Directory" && (node.nlink > 1 || linked.size > 0)) {
      if (linked.has(node)) return
      if (node.nlink > 1) linked.add(node)
    }
    total.bytes += blocksOf(node) * 512
    total.apparentBytes += sizeOf(node)
    if (node.kind === "File") total.fileBytes += node.data.length
  }
  return { total, add }
}

const infoOf = (node: Node): FileInfo => ({
  type: node.kind,
  size: sizeOf(node),
  mode: node.mode,
  uid: node.uid,
  ino: node.ino,
  dev: node.dev,
  nlink: node.nlink,
  mtimeMs: node.mtimeMs,
  blocks: blocksOf(node)
})

/** Whether a walk from `root` must not enter `dir`: another device, or a mount point (OneFileSystem.ts). */
const crossesFrom = (root: Node, dir: DirNode): boolean => dir.mountRoot || dir.dev !== root.dev

/** Remove an entry from its directory, which changes the directory's mtime. */
const detach = (dir: DirNode, name: string, node: Node, now: number): void => {
  unlink(dir, name, node)
  dir.mtimeMs = now
}

const digestOf = (data: Uint8Array): FileDigest => ({ sha256: createHash("sha256").update(data).digest("hex"), bytes: data.length })

export const make = (world: MemoryWorld, options?: MemoryFileSystemOptions): Context.Tag.Service<FileSystem> => {
  const ctx: ProcessContext = {
    uid: options?.uid ?? 1000,
    umask: options?.umask ?? 0,
    cwd: options?.cwd ?? "/",
    hostname: options?.hostname,
    pid: options?.pid
  }
  const lookup = (path: string, follow: boolean): Lookup | Errno => world.resolve(path, ctx.cwd, follow)
  const skew = options?.clockSkewMs ?? 0
  /** Now on the world's clock: what the file system stamps. */
  const fsNow: Effect.Effect<number> = skew === 0 ? Clock.currentTimeMillis : Effect.map(Clock.currentTimeMillis, (t) => t - skew)
  const toError = (method: string, path: string, code: string): FileSystemError =>
    new FileSystemError({ reason: reasonOfErrno(code), errno: code, method, path })

  /** Record the end of a call and turn its result into an Effect. */
  const finish = <A>(method: string, path: string, path2: string | undefined, result: A | Errno) => {
    world.record(ctx, method, path, path2, isErrno(result) ? result.errno : undefined)
    return isErrno(result) ? Effect.fail(toError(method, path, result.errno)) : Effect.succeed(result)
  }

  const yieldBeforeCall = (): Effect.Effect<void> => {
    const n = world.yieldsBeforeCall()
    return n === 1 ? Effect.yieldNow() : Effect.repeatN(Effect.yieldNow(), n - 1)
  }

  /** A single-step call: yield, pass the crash and fault gates, then act atomically. */
  const call = <A>(
    method: string,
    path: string,
    path2: string | undefined,
    body: (now: number) => A | Errno
  ): Effect.Effect<A, FileSystemError> =>
    Effect.zipRight(
      yieldBeforeCall(),
      Effect.flatMap(fsNow, (now) => {
        const blocked = world.check(ctx, method, path, path2)
        return finish(method, path, path2, blocked === undefined ? body(now) : errno(blocked))
      })
    )

  /** A step of a compound call, with its own gate and journal entry. */
  const step = <A>(op: FaultStep, path: string, path2: string | undefined, body: () => A | Errno): A | Errno => {
    const blocked = world.check(ctx, op, path, path2)
    const result = blocked === undefined ? body() : errno(blocked)
    world.record(ctx, op, path, path2, isErrno(result) ? result.errno : undefined)
    return result
  }

  /**
   * One atomic step: a new file at `to` with the source's bytes and mode (and, `stamped`, its mtime); the
   * digest of those bytes and the source as it was.
   */
  const copyInto = (method: string, from: string, to: string, stamped = false): Effect.Effect<StampedCopy, FileSystemError> =>
    Effect.suspend(() => {
      // A failure at the target names the target (as the OS error of open(to) does), never the source.
      let atTarget = false
      return call(method, from, to, (now) => {
      const a = lookup(from, false)
      if (isErrno(a)) return a
      const src = a.node
      if (src === undefined) return errno("ENOENT")
      if (src.kind === "SymbolicLink") return errno("ELOOP")
      if (src.kind === "Directory") return errno("EISDIR")
      atTarget = true
      const b = lookup(to, false)
      if (isErrno(b)) return b
      if (b.node !== undefined) return errno("EEXIST")
      if (b.trailingSlash) return errno("EISDIR")
      // The copy keeps the source's mode exactly (the OS copy does fchmod after create).
      const copy = world.newFile(b.dir, src.data.slice(), src.mode, ctx.uid, now)
      if (stamped) copy.mtimeMs = src.mtimeMs
      attach(b.dir, b.name, copy)
      b.dir.mtimeMs = now
      world.mutated(ctx)
      return { ...digestOf(src.data), source: infoOf(src) }
    }).pipe(Effect.mapError((e) => (atTarget ? toError(method, to, e.errno) : e)))
    })

  // ------------------------------------------------------------------------------------------ bodies

  /** The regular file at `path` itself (never through a final link: ELOOP), as open(O_NOFOLLOW) sees it. */
  const fileAt = (path: string): FileNode | Errno => {
    const at = lookup(path, false)
    if (isErrno(at)) return at
    const node = at.node
    if (node === undefined) return errno("ENOENT")
    if (node.kind === "SymbolicLink") return errno("ELOOP")
    if (node.kind === "Directory") return errno("EISDIR")
    return node
  }

  const createFile = (path: string, data: Uint8Array, mode: number, now: number): FileNode | Errno => {
    const at = lookup(path, false)
    if (isErrno(at)) return at
    if (at.node !== undefined) return errno("EEXIST")
    if (at.trailingSlash) return errno("EISDIR")
    const file = world.newFile(at.dir, data.slice(), mode & ~ctx.umask, ctx.uid, now)
    attach(at.dir, at.name, file)
    at.dir.mtimeMs = now
    world.mutated(ctx)
    return file
  }

  const renameEntry = (from: string, to: string, now: number): void | Errno => {
    const a = lookup(from, false)
    if (isErrno(a)) return a
    const b = lookup(to, false)
    if (isErrno(b)) return b
    const refusal = renameRefusal(a, b)
    if (refusal === "same") return undefined
    if (refusal !== undefined) return refusal
    const src = a.node!
    const dst = b.node
    if (dst !== undefined) detach(b.dir, b.name, dst, now)
    detach(a.dir, a.name, src, now)
    attach(b.dir, b.name, src)
    b.dir.mtimeMs = now
    if (src.kind === "Directory") src.parent = b.dir
    world.mutated(ctx)
  }

  const unlinkEntry = (path: string, now: number): void | Errno => {
    const at = lookup(path, false)
    if (isErrno(at)) return at
    if (at.node === undefined) return errno("ENOENT")
    if (at.node.kind === "Directory") return errno("EISDIR")
    detach(at.dir, at.name, at.node, now)
    world.mutated(ctx)
  }

  const makeOneDirectory = (at: Lookup, mode: number, now: number): void => {
    attach(at.dir, at.name, world.newDir(at.dir, mode, ctx.uid, now))
    at.dir.mtimeMs = now
    world.mutated(ctx)
  }

  /** `mkdir -p`: every missing component is created (each one a step for the crash point). */
  const makeDirectories = (path: string, mode: number, now: number): void | Errno => {
    const comps = path.split("/").filter((c) => c !== "")
    if (path === "") return errno("ENOENT")
    let prefix = path.startsWith("/") ? "" : "."
    for (let k = 0; k < comps.length; k++) {
      prefix = `${prefix}/${comps[k]}`
      const isLast = k === comps.length - 1
      const at = lookup(prefix, false)
      if (isErrno(at)) return at
      const node = at.node
      if (node === undefined) {
        if (world.isCrashed(ctx)) return errno(CRASHED)
        makeOneDirectory(at, mode, now)
      } else if (node.kind === "SymbolicLink") {
        if (isLast) return errno("EEXIST")
        const through = lookup(prefix, true)
        if (isErrno(through)) return through
        if (through.node === undefined) return errno("ENOENT")
        if (through.node.kind !== "Directory") return errno("ENOTDIR")
      } else if (node.kind === "File") {
        return errno(isLast ? "EEXIST" : "ENOTDIR")
      }
    }
  }

  /** link(2): a second name for a file or symlink, on its own device. */
  const linkEntry = (existing: string, newPath: string, now: number): void | Errno => {
    const a = lookup(existing, false)
    if (isErrno(a)) return a
    const node = a.node
    if (node === undefined) return errno("ENOENT")
    const b = lookup(newPath, false)
    if (isErrno(b)) return b
    if (b.node !== undefined) return errno("EEXIST")
    if (node.dev !== b.dir.dev) return errno("EXDEV")
    if (node.kind === "Directory") return errno("EPERM")
    attach(b.dir, b.name, node)
    b.dir.mtimeMs = now
    world.mutated(ctx)
  }

  const measure = (path: string, maxEntries: number, maxDepth: number): TreeMeasure | Errno => {
    const at = lookup(path, false)
    if (isErrno(at)) return at
    const root = at.node
    if (root === undefined) return errno("ENOENT")
    const tally = makeTally()
    tally.add(root)
    let entries = 0
    let complete = true
    // Depth-first, names in order; a directory at depth d is listed only when d < maxDepth, and only a
    // non-empty directory left unopened makes the measure a lower bound (as in the Node layer). A mount
    // point counts as an entry and is never opened: the measure is then a lower bound (OneFileSystem.ts).
    // A stack of its own, not recursion: any depth (domain/WalkDepth.ts), never the JavaScript stack's.
    const stack: Array<{ readonly dir: DirNode; readonly names: ReadonlyArray<string>; index: number; readonly depth: number }> = []
    const enter = (dir: DirNode, depth: number) => {
      if (dir !== root && crossesFrom(root, dir)) {
        complete = false // another file system: neither its entries nor its own sizes count
        return
      }
      if (dir !== root) tally.add(dir)
      if (depth >= maxDepth) complete &&= dir.entries.size === 0
      else stack.push({ dir, names: sortedNames(dir), index: 0, depth })
    }
    if (root.kind === "Directory") enter(root, 0)
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!
      if (top.index >= top.names.length) {
        stack.pop()
        continue
      }
      if (entries >= maxEntries) {
        complete = false
        break
      }
      const child = top.dir.entries.get(top.names[top.index++]!)!
      entries++
      if (child.kind === "Directory") enter(child, top.depth + 1)
      else tally.add(child)
    }
    return { ...tally.total, entries, complete }
  }

  // ------------------------------------------------------------------------------------------ compound calls

  const writeFileAtomic = (path: string, data: Uint8Array, mode: number): Effect.Effect<void, FileSystemError> =>
    Effect.gen(function*() {
      const done = (result: void | Errno) => finish("writeFileAtomic", path, undefined, result)
      yield* yieldBeforeCall()
      const now = yield* fsNow
      const blocked = world.check(ctx, "writeFileAtomic", path)
      if (blocked !== undefined) return yield* done(errno(blocked))
      const at = lookup(path, false)
      if (isErrno(at)) return yield* done(at)
      if (isSpecialName(at.name) || at.trailingSlash) {
        return yield* done(errno("EISDIR"))
      }
      const temp = path.slice(0, path.lastIndexOf("/") + 1) + world.tempName(at.name, ctx)
      const created = step("writeFileAtomic.create", temp, undefined, () => createFile(temp, data, mode, now))
      if (isErrno(created)) return yield* done(created)
      yield* yieldBeforeCall()
      const later = yield* fsNow
      const renamed = step("writeFileAtomic.rename", temp, path, () => renameEntry(temp, path, later))
      if (isErrno(renamed) && renamed.errno !== CRASHED) {
        // A failed rename leaves no temp file behind (unless the process is gone).
        step("writeFileAtomic.cleanup", temp, undefined, () => unlinkEntry(temp, later))
      }
      return yield* done(renamed)
    })

  /** The change at `path` since `expected` (domain/FileChange.ts), judged on the entry itself. */
  const changeAt = (path: string, expected: ExpectedFile): FileChange | Errno | null => {
    const at = lookup(path, false)
    if (isErrno(at)) return at
    const node = at.node
    const found = node === undefined ? undefined : { type: node.kind, dev: node.dev, ino: node.ino, size: sizeOf(node) }
    return changeSince(expected, found, () => (node as FileNode).data)
  }

  /**
   * `writeFileAtomic` whose rename (or, for `data` `null`, whose unlink) happens only if the entry is still
   * `expected`: the check and the rename are one atomic step, so no other fiber's write falls between them.
   */
  const replaceFileIfUnchanged = (path: string, expected: ExpectedFile, data: Uint8Array | null, mode: number): Effect.Effect<void, FileSystemError> =>
    Effect.gen(function*() {
      const method = "replaceFileIfUnchanged"
      let changed: FileChange | null = null
      /** The step's body: the check, then `act` only when nothing changed ("" is the journal's errno for a change). */
      const ifUnchanged = (act: () => void | Errno) => (): void | Errno => {
        const change = changeAt(path, expected)
        if (isErrno(change)) return change
        if (change === null) return act()
        // Removing what is already gone: nothing is there, and nothing anyone saved was removed.
        if (data === null && change.kind === "removed") return undefined
        changed = change
        return errno("")
      }
      const done = (result: void | Errno) => {
        if (changed === null) return finish(method, path, undefined, result)
        world.record(ctx, method, path, undefined, "")
        return Effect.fail(changedError(method, path, changed))
      }
      yield* yieldBeforeCall()
      const now = yield* Clock.currentTimeMillis
      const blocked = world.check(ctx, method, path)
      if (blocked !== undefined) return yield* done(errno(blocked))
      const at = lookup(path, false)
      if (isErrno(at)) return yield* done(at)
      if (isSpecialName(at.name) || at.trailingSlash) return yield* done(errno("EISDIR"))
      if (data === null) {
        return yield* done(step(`${method}.remove`, path, undefined, ifUnchanged(() => (expected === null ? undefined : unlinkEntry(path, now)))))
      }
      const temp = path.slice(0, path.lastIndexOf("/") + 1) + world.tempName(at.name, ctx)
      const created = step(`${method}.create`, temp, undefined, () => createFile(temp, data, mode, now))
      if (isErrno(created)) return yield* done(created)
      yield* yieldBeforeCall()
      const later = yield* Clock.currentTimeMillis
      const renamed = step(`${method}.rename`, temp, path, ifUnchanged(() => renameEntry(temp, path, later)))
      if (isErrno(renamed) && renamed.errno !== CRASHED) {
        // A refused or failed rename leaves no temp file behind (unless the process is gone).
        step(`${method}.cleanup`, temp, undefined, () => unlinkEntry(temp, later))
      }
      return yield* done(renamed)
    })

  const removeTree = (path: string, maxEntries: number, maxDepth: number): Effect.Effect<TreeRemoval, FileSystemError> =>
    Effect.gen(function*() {
      yield* yieldBeforeCall()
      let now = yield* fsNow
      const method = "removeTree"
      const done = (result: TreeRemoval | Errno) => finish(method, path, undefined, result)
      const blocked = world.check(ctx, method, path)
      if (blocked !== undefined) return yield* done(errno(blocked))
      const at = lookup(path, false)
      // A missing parent is a missing root, as lstat(2) reports it (ENOENT) in the Node layer.
      const nothing = (complete: boolean): TreeRemoval => ({ removedEntries: 0, complete, removedBytes: 0, removedApparentBytes: 0 })
      if (isErrno(at)) return yield* done(at.errno === "ENOENT" ? nothing(true) : at)
      const root = at.node
      if (root === undefined) return yield* done(nothing(true))
      if (isSpecialName(at.name)) {
        return yield* done(errno(at.name === "" ? "EBUSY" : "EINVAL"))
      }
      let removed = 0
      const tally = makeTally()
      let stopped = false
      let blockedByDepth = false
      /** The first mount point met: never entered nor removed; the removal fails naming it. */
      let mountPoint: string | undefined
      /** Remove one entry (an emptied directory or a non-directory) as its own step. */
      const removeEntry = (dir: DirNode, name: string, node: Node, entryPath: string): Errno | undefined => {
        const op = node.kind === "Directory" ? "removeTree.removeDirectory" : "removeTree.removeFile"
        const result = step(op, entryPath, undefined, () => {
          if (dir.entries.get(name) !== node) return undefined // removed by someone else meanwhile
          if (node.kind === "Directory") {
            if (node.mountRoot) return errno("EBUSY")
            if (node.entries.size > 0) return errno("ENOTEMPTY")
          }
          // Its sizes as it was before the unlink (a node of several links is counted once, at its first name).
          tally.add(node)
          detach(dir, name, node, now)
          world.mutated(ctx)
        })
        return isErrno(result) ? result : undefined
      }
      /** Like `removeEntry`, counted against the budget; sets `stopped` when the budget is spent. */
      const removeCounted = (dir: DirNode, name: string, node: Node, entryPath: string): Errno | undefined => {
        if (removed >= maxEntries) {
          stopped = true
          return undefined
        }
        const failed = removeEntry(dir, name, node, entryPath)
        if (failed === undefined) removed++
        return failed
      }
      // Bottom-up, names in order; a directory at depth d is opened only when d < maxDepth (an empty one is
      // removed anyway). The root is neither counted nor budgeted (as in the Node layer).
      const emptyDirectory = (dir: DirNode, dirPath: string, depth: number): Effect.Effect<Errno | undefined> =>
        Effect.gen(function*() {
          yield* yieldBeforeCall()
          now = yield* fsNow
          for (const name of sortedNames(dir)) {
            if (stopped) return undefined
            const child = dir.entries.get(name)
            if (child === undefined) continue
            const childPath = joinPath(dirPath, name)
            if (child.kind === "Directory" && crossesFrom(root, child)) {
              mountPoint ??= childPath
              continue
            }
            if (child.kind === "Directory" && child.entries.size > 0) {
              if (depth + 1 >= maxDepth) {
                blockedByDepth = true
                continue
              }
              const failed = yield* emptyDirectory(child, childPath, depth + 1)
              if (failed !== undefined) return failed
              if (stopped) return undefined
              if (child.entries.size > 0) continue // something deeper was left in place
            }
            const failed = removeCounted(dir, name, child, childPath)
            if (failed !== undefined) return failed
          }
          return undefined
        })
      if (root.kind === "Directory" && root.entries.size > 0) {
        if (maxDepth < 1) return yield* done(nothing(false))
        const failed = yield* emptyDirectory(root, path, 0)
        if (failed !== undefined) return yield* done(failed)
      }
      if (mountPoint !== undefined) {
        world.record(ctx, method, path, undefined, CROSSED_MOUNT_ERRNO)
        return yield* Effect.fail(
          new FileSystemError({ reason: reasonOfErrno(CROSSED_MOUNT_ERRNO), errno: CROSSED_MOUNT_ERRNO, method, path: mountPoint, detail: CROSSED_MOUNT_DETAIL })
        )
      }
      const result = (complete: boolean): TreeRemoval => ({ removedEntries: removed, complete, removedBytes: tally.total.bytes, removedApparentBytes: tally.total.apparentBytes })
      if (stopped || blockedByDepth) return yield* done(result(false))
      const failed = removeEntry(at.dir, at.name, root, path)
      return yield* done(failed ?? result(true))
    })

  // ------------------------------------------------------------------------------------------ the port

  return {
    lstat: (path) =>
      call("lstat", path, undefined, () => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        return at.node === undefined ? errno("ENOENT") : infoOf(at.node)
      }),

    statFollowingLinks: (path) =>
      call("statFollowingLinks", path, undefined, () => {
        const at = lookup(path, true)
        if (isErrno(at)) return at
        return at.node === undefined ? errno("ENOENT") : infoOf(at.node)
      }),

    readDirectory: (path) =>
      call("readDirectory", path, undefined, (): ReadonlyArray<DirEntry> | Errno => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        const dir = at.node
        if (dir === undefined) return errno("ENOENT")
        if (dir.kind !== "Directory") return errno("ENOTDIR")
        return sortedNames(dir).map((name) => ({ name, type: dir.entries.get(name)!.kind }))
      }),

    readDirectoryInfo: (path) =>
      call("readDirectoryInfo", path, undefined, (): ReadonlyArray<DirEntryInfo> | Errno => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        const dir = at.node
        if (dir === undefined) return errno("ENOENT")
        if (dir.kind !== "Directory") return errno("ENOTDIR")
        return sortedNames(dir).map((name) => ({ name, info: infoOf(dir.entries.get(name)!) }))
      }),

    makeDirectory: (path, options) =>
      call("makeDirectory", path, undefined, (now) => {
        const mode = (options?.mode ?? 0o700) & ~ctx.umask
        if (options?.recursive === true) return makeDirectories(path, mode, now)
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node !== undefined) return errno("EEXIST")
        makeOneDirectory(at, mode, now)
      }),

    // Two steps, as open(O_CREAT|O_EXCL) then write(2): a crash between them leaves an empty file (docs/safety.md "Stale unreadable markers and leases").
    writeFileExclusive: (path, data, options) =>
      call("writeFileExclusive", path, undefined, (now) => {
        const created = step("writeFileExclusive.create", path, undefined, () => createFile(path, new Uint8Array(), options?.mode ?? 0o600, now))
        if (isErrno(created) || data.length === 0) return isErrno(created) ? created : undefined
        return step("writeFileExclusive.write", path, undefined, () => {
          created.data = data.slice()
          world.mutated(ctx)
        })
      }),

    writeFileAtomic: (path, data, options) => writeFileAtomic(path, data, options?.mode ?? 0o600),
    replaceFileIfUnchanged: (path, expected, data, options) => replaceFileIfUnchanged(path, expected, data, options?.mode ?? 0o600),

    writeFileInPlace: (path, data) =>
      Effect.flatMap(
        call("writeFileInPlace", path, undefined, (now): number | undefined | Errno => {
          const node = fileAt(path)
          if (isErrno(node)) return node
          if (node.data.length !== data.length) return node.data.length
          node.data = data.slice()
          node.mtimeMs = now
          world.mutated(ctx)
          return undefined
        }),
        (found) => found === undefined ? Effect.void : Effect.fail(lengthMismatch(path, found, data.length))
      ),

    readFile: (path, options) =>
      call("readFile", path, undefined, () => {
        const node = fileAt(path)
        if (isErrno(node)) return node
        if (options?.maxBytes !== undefined && node.data.length > options.maxBytes) return errno("EFBIG")
        return node.data.slice()
      }),

    rename: (from, to, _options) => call("rename", from, to, (now) => renameEntry(from, to, now)),

    removeFile: (path) => call("removeFile", path, undefined, (now) => unlinkEntry(path, now)),

    removeDirectory: (path) =>
      call("removeDirectory", path, undefined, (now) => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        const node = at.node
        if (at.name === "..") return errno("ENOTEMPTY")
        if (at.name === ".") return errno("EINVAL")
        if (at.name === "") return errno("EBUSY")
        if (node === undefined) return errno("ENOENT")
        if (node.kind !== "Directory") return errno("ENOTDIR")
        if (node.mountRoot) return errno("EBUSY")
        if (node.entries.size > 0) return errno("ENOTEMPTY")
        detach(at.dir, at.name, node, now)
        world.mutated(ctx)
      }),

    symlink: (target, path) =>
      call("symlink", path, target, (now) => {
        if (target === "") return errno("ENOENT")
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node !== undefined) return errno("EEXIST")
        attach(at.dir, at.name, world.newLink(at.dir, target, ctx.uid, now))
        at.dir.mtimeMs = now
        world.mutated(ctx)
      }),

    readLink: (path) =>
      call("readLink", path, undefined, () => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node === undefined) return errno("ENOENT")
        return at.node.kind === "SymbolicLink" ? at.node.target : errno("EINVAL")
      }),

    link: (existing, newPath) => call("link", existing, newPath, (now) => linkEntry(existing, newPath, now)),

    // One call, one link step per name (each a crash point); a crash ends the call, other failures are answers.
    linkEach: (fromDir, toDir, names) =>
      call("linkEach", fromDir, toDir, (now): ReadonlyArray<FileSystemError | undefined> | Errno => {
        const out: Array<FileSystemError | undefined> = []
        for (const name of names) {
          const existing = joinPath(fromDir, name)
          const linked = step("linkEach.link", existing, joinPath(toDir, name), () => linkEntry(existing, joinPath(toDir, name), now))
          if (isErrno(linked) && linked.errno === CRASHED) return linked
          out.push(isErrno(linked) ? toError("linkEach", existing, linked.errno) : undefined)
        }
        return out
      }),

    utimes: (path, _atimeMs, mtimeMs) =>
      call("utimes", path, undefined, () => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node === undefined) return errno("ENOENT")
        at.node.mtimeMs = mtimeMs
        world.mutated(ctx)
      }),

    chmod: (path, mode) =>
      call("chmod", path, undefined, () => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node === undefined) return errno("ENOENT")
        if (at.node.kind === "SymbolicLink") return errno("ELOOP")
        at.node.mode = mode & 0o7777
        world.mutated(ctx)
      }),

    copyFile: (from, to) => Effect.asVoid(copyInto("copyFile", from, to)),

    copyFileHashed: (from, to) => Effect.map(copyInto("copyFileHashed", from, to), ({ bytes, sha256 }) => ({ sha256, bytes })),

    copyFileStamped: (from, to) => copyInto("copyFileStamped", from, to, true),

    hashFile: (path) =>
      call("hashFile", path, undefined, () => {
        const node = fileAt(path)
        return isErrno(node) ? node : digestOf(node.data)
      }),

    // The simulated world has no page cache: what is written is durable; only the path is checked.
    syncFileSystem: (path) =>
      call("syncFileSystem", path, undefined, () => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node === undefined) return errno("ENOENT")
        if (at.node.kind === "SymbolicLink") return errno("ELOOP")
        if (at.node.kind !== "Directory") return errno("ENOTDIR")
      }),

    measureTree: (path, budget) =>
      call("measureTree", path, undefined, () => measure(path, budget.maxEntries, budget.maxDepth)),

    removeTree: (path, budget) => removeTree(path, budget.maxEntries, budget.maxDepth)
  }
}

/** The FileSystem of one simulated process over `world`. */
export const layer = (world: MemoryWorld, options?: MemoryFileSystemOptions): Layer.Layer<FileSystem> =>
  Layer.sync(FileSystem, () => make(world, options))

export interface LayerMemoryOptions extends MemoryWorldOptions {
  /** Share an existing world (several processes); a fresh one per layer build otherwise. */
  readonly world?: MemoryWorld
  readonly hostname?: string
  /** The world machine the process runs on (default `hostname`): two machines may report one host name. */
  readonly machine?: string
  /** The process's pid (spawned on its host when not alive); a fresh pid when absent. */
  readonly pid?: number
  readonly uid?: number
  readonly umask?: number
  readonly home?: string
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
}

/** One simulated process: FileSystem, Host and the MemoryDriver over a fresh (or given) world. */
export const layerMemory = (options?: LayerMemoryOptions): Layer.Layer<FileSystem | Host | MemoryDriver> =>
  Layer.syncContext(() => {
    const world = options?.world ?? MemoryWorld.make(options)
    const host = MemoryHost.make(world, {
      hostname: options?.hostname ?? "memory-host",
      ...(options?.machine === undefined ? {} : { machine: options.machine }),
      ...(options?.pid === undefined ? {} : { pid: options.pid }),
      ...(options?.uid === undefined ? {} : { uid: options.uid }),
      ...(options?.home === undefined ? {} : { home: options.home }),
      ...(options?.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options?.env === undefined ? {} : { env: options.env })
    })
    const fs = make(world, {
      uid: host.uid ?? 1000,
      hostname: options?.machine ?? host.hostname,
      pid: host.pid,
      ...(options?.umask === undefined ? {} : { umask: options.umask }),
      ...(options?.cwd === undefined ? {} : { cwd: options.cwd })
    })
    return Context.make(FileSystem, fs).pipe(Context.add(Host, host), Context.add(MemoryDriver, world))
  })
