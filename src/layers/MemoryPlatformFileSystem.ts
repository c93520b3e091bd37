/**
 * `@effect/platform`'s `FileSystem` (and `Path`) over the simulated world of `MemoryWorld.ts` (docs/testing.md "Testing
 * your code against the simulated world"): a harness's own platform calls and the library's port calls meet
 * in one inode tree, under the same faults, crash points and journal.
 *
 * Semantics are those of `@effect/platform-node`'s `NodeFileSystem.layer` on Linux, as root (permission bits
 * are recorded, never enforced), and `test/layers/platformConformance.ts` runs one suite over both: `stat`
 * follows links (there is no lstat in the platform interface), `readFile`, `open`, `truncate`, `chmod`,
 * `chown`, `utimes`, `access` and `copyFile` follow them too, `readLink`, `link`, `rename` and `remove` do not.
 * `readDirectory({ recursive: true })` descends into links to directories (Node 20 stats each entry), and
 * lists each directory's names sorted. Node's quirks are kept: `copyFile` of a directory fails EISDIR after
 * libuv has opened the destination, whose name it then unlinks (a file there is lost); `copy` is Node's
 * `fs.cp` (links copied with absolute targets, an existing file kept unless `overwrite`); `realPath` folds
 * ".." lexically first; `remove` of a directory without `recursive` is ERR_FS_EISDIR (reason Unknown);
 * recursive `makeDirectory` judges links as Node's asynchronous mkdirp does. `platformConformance.test.ts`
 * also runs random call sequences on both and compares them. Errors are `SystemError`s with the reason
 * Node's layer gives the errno (ENOENT NotFound, EACCES PermissionDenied, EEXIST AlreadyExists,
 * EISDIR/ENOTDIR/ELOOP BadResource, EBUSY Busy, anything else Unknown), the errno as `cause.code`, and
 * `method`, `syscall` and `pathOrDescriptor` as Node's layer sets them.
 *
 * World ops (the `op` of `injectFault`, the journal's `op`): `platform:<name>`, where `<name>` is the
 * `FileSystem` method called (`platform:writeFile`, `platform:makeDirectory`, `platform:remove` …; `exists`
 * is `platform:access`, `readFileString` `platform:readFile`, `writeFileString` `platform:writeFile`, `stream`
 * is `platform:open` then `platform:readAlloc`s, `sink` `platform:open` then `platform:writeAll`s;
 * `makeTempFile(Scoped)` is two calls of its own name, the directory then the file, and the scoped forms'
 * release is one more) or the `File` method (`platform:read`, `platform:readAlloc`, `platform:write`,
 * `platform:writeAll`, and `platform:fstat`, `platform:ftruncate`, `platform:fsync` for its `stat`,
 * `truncate` and `sync`; a handle's calls are journaled under the path it was opened with). Steps of
 * compound calls (matched only by a fault naming them): `platform:writeFile.open`, `platform:writeFile.write`,
 * `platform:remove.unlink`, `platform:remove.rmdir`, `platform:copy.mkdir`, `platform:copy.copyFile`,
 * `platform:copy.symlink`, `platform:copy.unlink`. Closing a handle is not a world operation (it changes
 * nothing in the tree) and is neither gated nor journaled. `watch` checks the path (`stat`), then fails with
 * `SystemError` reason `Unknown`: the simulated world has no change notifications.
 *
 * Mutating steps (each one counts for `crashAfter` and `mutationCount`): a file created or truncated by
 * `open`/`writeFile`, a non-empty `write`/`writeAll`, a `truncate` that changes the size, each directory
 * `makeDirectory` creates, each entry `remove` or `copy` removes or creates, and one each for `rename`,
 * `copyFile`, `link`, `symlink`, `chmod`, `chown`, `utimes`, `makeTempDirectory`.
 *
 * What the world does not hold is kept beside it for the entries this layer touches: a gid (set by `chown`,
 * else the creating process's gid, else the owner's uid) and an atime (set by `utimes`, else the mtime;
 * reads never move it). `birthtime` is `None`. `blocks` counts whole 4 KiB blocks of the size.
 */
import * as PlatformError from "@effect/platform/Error"
import * as PlatformFileSystem from "@effect/platform/FileSystem"
import * as PlatformPath from "@effect/platform/Path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as MemoryHost from "./MemoryHost.js"
import { fail, type Failure, systemError } from "./platform/errors.js"
import { copyOut, extraOf, extras, FLAGS, type Flags, infoOf, setLength, writableData } from "./platform/inodes.js"
import {
  attach,
  CRASHED,
  detach as unlink,
  type DirNode,
  type Errno,
  type FileNode,
  isErrno,
  isSpecialName,
  renameRefusal,
  joinPath,
  type Lookup,
  MemoryWorld,
  type Node,
  type PlatformFaultStep,
  type ProcessContext
} from "./MemoryWorld.js"

/** The simulated process whose calls these are (the same fields `MemoryWorld.layer` takes). */
export interface PlatformProcessOptions {
  /** Default `memory-host`. */
  readonly hostname?: string
  /** Adopted when alive on its host (a process `MemoryWorld.layer` started), spawned otherwise; fresh when absent. */
  readonly pid?: number
  /** Owner of created entries (default 1000). */
  readonly uid?: number
  /** Group of created entries (default the uid). */
  readonly gid?: number
  /** Relative paths (and `Path.resolve`) resolve against it (default "/"). */
  readonly cwd?: string
  /** Cleared from the mode of created files and directories, as Node's process umask is (default 0o022). */
  readonly umask?: number
  /** Where `makeTempDirectory`/`makeTempFile` create without a `directory` (default "/tmp"; it must exist). */
  readonly tmpdir?: string
}

/** The calls that remove a tree, each step named after the call (`platform:remove.unlink`, …). */
type RemoveMethod = "remove" | "makeTempDirectoryScoped" | "makeTempFileScoped"

/** The prefix of every op name this layer gives the world (faults, journal). */
export const PLATFORM_OP_PREFIX = "platform:"

export { platformReasonOfErrno } from "./platform/errors.js"

/** Per world: the counter behind temp names, so two processes never draw the same one. */
const tempCounters = new WeakMap<MemoryWorld, { n: number }>()

const TEMP_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// ---------------------------------------------------------------------------------------------- the service

export interface PlatformServices {
  readonly fileSystem: PlatformFileSystem.FileSystem
  readonly path: PlatformPath.Path
  /** The simulated process the calls are made as. */
  readonly process: { readonly hostname: string; readonly pid: number; readonly uid: number }
}

/** The platform services of one simulated process over `world` (see `layer`). */
export const make = (world: MemoryWorld, basePath: PlatformPath.Path, options?: PlatformProcessOptions): PlatformServices => {
  const host = MemoryHost.make(world, {
    hostname: options?.hostname ?? "memory-host",
    ...(options?.pid === undefined ? {} : { pid: options.pid }),
    ...(options?.uid === undefined ? {} : { uid: options.uid }),
    ...(options?.cwd === undefined ? {} : { cwd: options.cwd })
  })
  const uid = host.uid ?? 1000
  const gid = options?.gid ?? uid
  const ctx: ProcessContext = { uid, cwd: host.cwd, umask: options?.umask ?? 0o022, hostname: host.hostname, pid: host.pid }
  const tmpdir = options?.tmpdir ?? "/tmp"
  const posix = basePath
  const resolvePath = (...segments: ReadonlyArray<string>) => posix.resolve(ctx.cwd, ...segments)
  let nextFd = 3
  const counter = tempCounters.get(world) ?? { n: 0 }
  tempCounters.set(world, counter)

  const lookup = (path: string, follow: boolean): Lookup | Errno => world.resolve(path, ctx.cwd, follow)
  const own = (node: Node): Node => {
    extraOf(node).gid = gid
    return node
  }

  const yieldBeforeCall = (): Effect.Effect<void> => {
    const n = world.yieldsBeforeCall()
    return n === 1 ? Effect.yieldNow() : Effect.repeatN(Effect.yieldNow(), n - 1)
  }

  interface CallSpec {
    /** The world op, without the prefix. */
    readonly op: string
    /** The error's `method` (Node's name for it). */
    readonly method: string
    readonly syscall: string
    /** Journal and fault paths. */
    readonly path: string
    readonly path2?: string
    /** The error's `pathOrDescriptor` (default `path`). */
    readonly subject?: string | number
  }

  const toError = (spec: CallSpec, failure: Failure) =>
    systemError(spec.method, spec.subject ?? spec.path, failure.errno, failure.syscall ?? spec.syscall)

  /**
   * One call: yield, pass the crash and fault gates, act (`body` may yield between the steps of a compound
   * call), journal the end.
   */
  const callWith = <A>(spec: CallSpec, body: (now: number) => Effect.Effect<A | Failure>): Effect.Effect<A, PlatformError.PlatformError> =>
    Effect.gen(function*() {
      yield* yieldBeforeCall()
      const now = yield* Clock.currentTimeMillis
      const op = PLATFORM_OP_PREFIX + spec.op
      const blocked = world.check(ctx, op, spec.path, spec.path2)
      const result = blocked === undefined ? yield* body(now) : fail(blocked)
      const failure = isErrno(result) ? (result as Failure) : undefined
      world.record(ctx, op, spec.path, spec.path2, failure?.errno)
      return failure === undefined ? result as A : yield* Effect.fail(toError(spec, failure))
    })

  /** A call that acts atomically. */
  const call = <A>(spec: CallSpec, body: (now: number) => A | Failure): Effect.Effect<A, PlatformError.PlatformError> =>
    callWith(spec, (now) => Effect.sync(() => body(now)))

  /** A step of a compound call, with its own gate and journal entry. */
  const step = <A>(op: PlatformFaultStep, path: string, path2: string | undefined, body: () => A | Failure): A | Failure => {
    const name = PLATFORM_OP_PREFIX + op
    const blocked = world.check(ctx, name, path, path2)
    const result = blocked === undefined ? body() : fail(blocked)
    world.record(ctx, name, path, path2, isErrno(result) ? result.errno : undefined)
    return result
  }

  /** The next mutation of a call that makes several, unless the process crashed on the previous one. */
  const stillRunning = (): Failure | undefined => (world.isCrashed(ctx) ? fail(CRASHED) : undefined)

  // ------------------------------------------------------------------------------------------ inode bodies

  const touchDir = (dir: DirNode, now: number) => {
    dir.mtimeMs = now
  }

  const createFile = (at: Lookup, mode: number, now: number): FileNode => {
    const file = own(world.newFile(at.dir, new Uint8Array(), mode & ~ctx.umask, ctx.uid, now)) as FileNode
    attach(at.dir, at.name, file)
    touchDir(at.dir, now)
    world.mutated(ctx)
    return file
  }

  const makeOneDirectory = (at: Lookup, mode: number, now: number): DirNode => {
    const dir = own(world.newDir(at.dir, mode & ~ctx.umask, ctx.uid, now)) as DirNode
    attach(at.dir, at.name, dir)
    touchDir(at.dir, now)
    world.mutated(ctx)
    return dir
  }

  /** open(2) with Node's flag strings; a file created or truncated is one step. */
  const openNode = (path: string, flag: Flags, mode: number, now: number): FileNode | DirNode | Failure => {
    if (flag.create && flag.exclusive) {
      const at = lookup(path, false)
      if (isErrno(at)) return at
      if (at.node !== undefined) return fail("EEXIST")
      if (at.trailingSlash) return fail("EISDIR")
      return createFile(at, mode, now)
    }
    const at = lookup(path, true)
    if (isErrno(at)) return at
    const node = at.node
    if (node === undefined) {
      if (!flag.create) return fail("ENOENT")
      if (at.trailingSlash) return fail("EISDIR")
      return createFile(at, mode, now)
    }
    if (node.kind === "Directory") return flag.write ? fail("EISDIR") : node
    if (node.kind === "SymbolicLink") return fail("ELOOP") // resolve follows final links: not reached
    if (flag.truncate && node.data.length > 0) {
      setLength(node, 0)
      node.mtimeMs = now
      world.mutated(ctx)
    }
    return node
  }

  /** pwrite(2), or an O_APPEND write at the end; one step when it writes anything. */
  const writeInto = (node: FileNode, data: Uint8Array, position: number | "end", now: number): number => {
    if (data.length === 0) return 0
    const at = position === "end" ? node.data.length : position
    writableData(node, at + data.length).set(data, at)
    node.mtimeMs = now
    world.mutated(ctx)
    return data.length
  }

  const truncateNode = (node: FileNode, length: number, now: number): void => {
    if (length === node.data.length) return
    setLength(node, length)
    node.mtimeMs = now
    world.mutated(ctx)
  }

  /** The node at `path` following every link (stat(2)). */
  const statNode = (path: string): Node | Failure => {
    const at = lookup(path, true)
    if (isErrno(at)) return at
    return at.node ?? fail("ENOENT")
  }

  /** rename(2), Linux rules (as the library's Memory port has them). */
  const renameEntry = (from: string, to: string, now: number): void | Failure => {
    const a = lookup(from, false)
    if (isErrno(a)) return a
    const b = lookup(to, false)
    if (isErrno(b)) return b
    const refusal = renameRefusal(a, b)
    if (refusal === "same") return undefined
    if (refusal !== undefined) return refusal
    const src = a.node!
    const dst = b.node
    if (dst !== undefined) unlink(b.dir, b.name, dst)
    unlink(a.dir, a.name, src)
    attach(b.dir, b.name, src)
    touchDir(a.dir, now)
    touchDir(b.dir, now)
    if (src.kind === "Directory") src.parent = b.dir
    world.mutated(ctx)
  }

  /**
   * `mkdir -p` as Node's asynchronous mkdirp decides it; each directory created is a step. mkdir(2) of the
   * whole path first: created, or an error other than ENOENT (ENOTDIR, ELOOP) is the answer, or an existing
   * name is judged by stat(2). On ENOENT the components are made top-down; an existing name that is no
   * directory (even through its link) is ENOTDIR inside the path, and at its end the stat error or EEXIST.
   */
  const makeDirectories = (path: string, mode: number, now: number): void | Failure => {
    /** mkdir(2) found `prefix` taken: stat(2) it (following) and judge it. */
    const taken = (prefix: string, isLast: boolean): void | Failure => {
      const through = lookup(prefix, true)
      const node = isErrno(through) ? through : through.node ?? fail("ENOENT")
      if (!isErrno(node) && node.kind === "Directory") return undefined
      return isLast ? (isErrno(node) ? fail(node.errno) : fail("EEXIST")) : fail("ENOTDIR")
    }
    const whole = lookup(path, false)
    if (isErrno(whole) && whole.errno !== "ENOENT") return whole
    if (!isErrno(whole)) {
      if (whole.node !== undefined) return taken(path, true)
      makeOneDirectory(whole, mode, now)
      return undefined
    }
    const comps = path.split("/").filter((c) => c !== "")
    let prefix = path.startsWith("/") ? "" : "."
    for (let k = 0; k < comps.length; k++) {
      prefix = `${prefix}/${comps[k]}`
      const isLast = k === comps.length - 1
      const at = lookup(prefix, false)
      if (isErrno(at)) return at
      if (at.node === undefined) {
        const crashed = stillRunning()
        if (crashed !== undefined) return crashed
        makeOneDirectory(at, mode, now)
      } else if (at.node.kind !== "Directory") {
        const judged = taken(prefix, isLast)
        if (isErrno(judged)) return judged
      }
    }
  }

  /** Canonical absolute path of a directory (names found by identity in each parent). */
  const pathOfDir = (dir: DirNode): string => {
    const names: Array<string> = []
    for (let cur = dir; cur.parent !== cur; cur = cur.parent) {
      for (const [name, child] of cur.parent.entries) {
        if (child === cur) {
          names.push(name)
          break
        }
      }
    }
    return "/" + names.reverse().join("/")
  }

  /** Node's rm: lstat, refuse a directory unless recursive, then unlink or empty-and-rmdir, a step each. */
  const removePath = (method: RemoveMethod, path: string, recursive: boolean, force: boolean, now: number): void | Failure => {
    const at = lookup(path, false)
    if (isErrno(at)) return at.errno === "ENOENT" && force ? undefined : fail(at.errno, "lstat")
    const node = at.node
    if (node === undefined) return force ? undefined : fail("ENOENT", "lstat")
    if (node.kind === "Directory" && !recursive) return fail("ERR_FS_EISDIR", "rm")
    const removeOne = (dir: DirNode, name: string, child: Node, childPath: string): void | Failure => {
      if (child.kind === "Directory") {
        for (const entry of [...child.entries.keys()].sort()) {
          const removed = removeOne(child, entry, child.entries.get(entry)!, joinPath(childPath, entry))
          if (isErrno(removed)) return removed
        }
      }
      return step(`${method}.${child.kind === "Directory" ? "rmdir" : "unlink"}`, childPath, undefined, (): void | Failure => {
        if (child.kind === "Directory") {
          if (isSpecialName(name) || child === world.root) return fail("EBUSY", "rmdir")
          if (child.mountRoot) return fail("EBUSY", "rmdir")
          if (child.entries.size > 0) return fail("ENOTEMPTY", "rmdir")
        }
        unlink(dir, name, child)
        touchDir(dir, now)
        world.mutated(ctx)
      })
    }
    return removeOne(at.dir, at.name, node, path)
  }

  /** copyFile(3) as libuv does it: follows both ends, overwrites in place, gives the copy the source's mode. */
  const copyFileBody = (from: string, to: string, now: number, preserveTimes = false): void | Failure => {
    const src = statNode(from)
    if (isErrno(src)) return src
    if (src.kind === "SymbolicLink") return fail("EINVAL") // statNode follows links: not reached
    const b = lookup(to, true)
    if (isErrno(b)) return b
    const dst = b.node
    if (dst?.kind === "Directory") return fail("EISDIR")
    if (dst === undefined && b.trailingSlash) return fail("EISDIR")
    if (src.kind === "Directory") {
      // libuv opens (creating or truncating) the destination before the copy fails on the directory, then
      // unlinks the destination's name: an existing file there is lost; a link there goes, and its target
      // is left created or emptied.
      if (dst === undefined) createFile(b, src.mode, now)
      else truncateNode(dst as FileNode, 0, now)
      const name = lookup(to, false)
      if (!isErrno(name) && name.node !== undefined && name.node.kind !== "Directory") {
        unlink(name.dir, name.name, name.node)
        touchDir(name.dir, now)
        world.mutated(ctx)
      }
      return fail("EISDIR")
    }
    if (dst === src) return undefined
    const target = dst === undefined
      ? (own(world.newFile(b.dir, new Uint8Array(), src.mode, ctx.uid, now)) as FileNode)
      : (dst as FileNode)
    target.data = new Uint8Array()
    writableData(target, src.data.length).set(src.data)
    target.mode = src.mode
    target.mtimeMs = preserveTimes ? src.mtimeMs : now
    if (preserveTimes) extraOf(target).atimeMs = extras.get(src)?.atimeMs ?? src.mtimeMs
    if (dst === undefined) {
      attach(b.dir, b.name, target)
      touchDir(b.dir, now)
    }
    world.mutated(ctx)
  }

  /** Node's fs.cp with `recursive: true` (the platform's `copy`), each entry created a step. */
  const copyBody = (from: string, to: string, overwrite: boolean, preserveTimestamps: boolean, now: number): void | Failure => {
    const sameNode = (a: string, b: string): boolean => {
      const x = lookup(a, false)
      const y = lookup(b, false)
      return !isErrno(x) && !isErrno(y) && x.node !== undefined && x.node === y.node
    }
    const isSubdir = (parent: string, child: string): boolean => {
      const p = resolvePath(parent).split("/").filter((c) => c !== "")
      const c = resolvePath(child).split("/").filter((c) => c !== "")
      return p.every((name, i) => c[i] === name)
    }
    const one = (src: string, dest: string, top: boolean): void | Failure => {
      const s = lookup(src, false)
      if (isErrno(s)) return fail(s.errno, "lstat")
      const srcNode = s.node
      if (srcNode === undefined) return fail("ENOENT", "lstat")
      const d = lookup(dest, false)
      if (isErrno(d) && d.errno !== "ENOENT") return fail(d.errno, "lstat")
      const destAt = isErrno(d) ? undefined : d
      const destNode = destAt?.node
      if (destNode !== undefined && sameNode(src, dest)) return fail("ERR_FS_CP_EINVAL", "cp")
      if (srcNode.kind === "Directory" && destNode !== undefined && destNode.kind !== "Directory") return fail("ERR_FS_CP_DIR_TO_NON_DIR", "cp")
      if (srcNode.kind !== "Directory" && destNode?.kind === "Directory") return fail("ERR_FS_CP_NON_DIR_TO_DIR", "cp")
      if (srcNode.kind === "Directory" && isSubdir(src, dest)) return fail("ERR_FS_CP_EINVAL", "cp")
      if (top && isErrno(d)) {
        // cp makes the destination's missing parents first.
        const made = makeDirectories(posix.dirname(resolvePath(dest)), 0o777, now)
        if (isErrno(made)) return made
      }
      if (srcNode.kind === "Directory") {
        if (destNode === undefined) {
          const made = step("copy.mkdir", dest, src, (): void | Failure => {
            const at = lookup(dest, false)
            if (isErrno(at)) return fail(at.errno, "mkdir")
            if (at.node !== undefined) return fail("EEXIST", "mkdir")
            const dir = makeOneDirectory(at, 0o777, now)
            dir.mode = srcNode.mode
          })
          if (isErrno(made)) return made
        }
        for (const name of [...srcNode.entries.keys()].sort()) {
          const copied = one(joinPath(src, name), joinPath(dest, name), false)
          if (isErrno(copied)) return copied
        }
        return undefined
      }
      if (srcNode.kind === "SymbolicLink") {
        const target = srcNode.target.startsWith("/") ? srcNode.target : posix.resolve(posix.dirname(resolvePath(src)), srcNode.target)
        if (destNode !== undefined && destNode.kind === "SymbolicLink") {
          const removed = step("copy.unlink", dest, undefined, (): void | Failure => {
            unlink(destAt!.dir, destAt!.name, destNode)
            touchDir(destAt!.dir, now)
            world.mutated(ctx)
          })
          if (isErrno(removed)) return removed
        } else if (destNode !== undefined) {
          return fail("EEXIST", "symlink")
        }
        return step("copy.symlink", dest, target, (): void | Failure => {
          const at = lookup(dest, false)
          if (isErrno(at)) return fail(at.errno, "symlink")
          if (at.node !== undefined) return fail("EEXIST", "symlink")
          attach(at.dir, at.name, own(world.newLink(at.dir, target, ctx.uid, now)))
          touchDir(at.dir, now)
          world.mutated(ctx)
        })
      }
      if (destNode !== undefined) {
        if (!overwrite) return undefined
        const removed = step("copy.unlink", dest, undefined, (): void | Failure => {
          unlink(destAt!.dir, destAt!.name, destNode)
          touchDir(destAt!.dir, now)
          world.mutated(ctx)
        })
        if (isErrno(removed)) return removed
      }
      return step("copy.copyFile", src, dest, () => copyFileBody(src, dest, now, preserveTimestamps))
    }
    return one(from, to, true)
  }

  /** readdir, recursive as Node 20 does it: each entry is stat'ed (links followed) and descended when a directory. */
  const listDirectory = (path: string, recursive: boolean): Array<string> | Failure => {
    const at = lookup(path, true)
    if (isErrno(at)) return at
    const dir = at.node
    if (dir === undefined) return fail("ENOENT")
    if (dir.kind !== "Directory") return fail("ENOTDIR")
    const names = (d: DirNode) => [...d.entries.keys()].sort()
    if (!recursive) return names(dir)
    const out: Array<string> = []
    const queue: Array<readonly [string, ReadonlyArray<string>]> = [["", names(dir)]]
    while (queue.length > 0) {
      const [prefix, entries] = queue.pop()!
      for (const name of entries) {
        const rel = prefix === "" ? name : `${prefix}/${name}`
        out.push(rel)
        const found = lookup(joinPath(path, rel), true)
        if (!isErrno(found) && found.node?.kind === "Directory") queue.push([rel, names(found.node)])
      }
    }
    return out
  }

  const drawTempName = (length: number, alphabet: string): string => {
    let x = (counter.n++ * 0x9e3779b1 + 0x7f4a7c15) >>> 0
    let out = ""
    for (let i = 0; i < length; i++) {
      x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) >>> 0
      x = (x ^ (x >>> 12)) >>> 0
      out += alphabet[x % alphabet.length]
    }
    return out
  }

  // ------------------------------------------------------------------------------------------ temp files

  const makeTempDirectoryAs = (method: string, options?: PlatformFileSystem.MakeTempDirectoryOptions) =>
    Effect.suspend(() => {
      const directory = typeof options?.directory === "string" ? posix.join(options.directory, ".") : tmpdir
      const prefix = options?.prefix ?? ""
      const template = prefix ? posix.join(directory, prefix) : directory + "/"
      // Journaled (and failing) under the template, as Node's error names mkdtemp's argument.
      return call({ op: method, method, syscall: "mkdtemp", path: template }, (now): string | Failure => {
        // mkdtemp draws again while the name is taken.
        for (let tries = 0; tries < 100; tries++) {
          const candidate = template + drawTempName(6, TEMP_CHARS)
          const at = lookup(candidate, false)
          if (isErrno(at)) return at
          if (at.node !== undefined) continue
          makeOneDirectory(at, 0o700, now)
          return candidate
        }
        return fail("EEXIST")
      })
    })

  const removeAs = (method: RemoveMethod, path: string, options?: PlatformFileSystem.RemoveOptions) =>
    call({ op: method, method, syscall: "rm", path }, (now) => removePath(method, path, options?.recursive ?? false, options?.force ?? false, now))

  // ------------------------------------------------------------------------------------------ handles

  const openAs = (method: string, path: string, options?: PlatformFileSystem.OpenFileOptions) => {
    const flag = FLAGS[options?.flag ?? "r"]
    return Effect.map(
      Effect.acquireRelease(
        Effect.map(
          call({ op: method, method, syscall: "open", path }, (now) => openNode(path, flag, options?.mode ?? 0o666, now)),
          (node) => makeFile(node, path, flag, nextFd++)
        ),
        // Closing drops the simulated descriptor (later calls fail EBADF); nothing in the world changes.
        (handle) => Effect.sync(handle.close)
      ),
      (handle) => handle.file
    )
  }

  const makeFile = (node: FileNode | DirNode, path: string, flag: Flags, fd: number) => {
    const semaphore = Effect.unsafeMakeSemaphore(1)
    let position = 0n
    let closed = false
    const descriptor = PlatformFileSystem.FileDescriptor(fd)
    const handleCall = <A>(op: string, method: string, syscall: string, body: (now: number) => A | Failure) =>
      call({ op, method, syscall, path, subject: fd }, (now) => (closed ? fail("EBADF") : body(now)))
    const readAt = (method: string, length: number) =>
      handleCall(method, method, "read", (): Uint8Array | Failure => {
        if (!flag.read) return fail("EBADF")
        if (node.kind === "Directory") return fail("EISDIR")
        const at = Number(position)
        if (at < 0) return fail("EINVAL")
        return copyOut(node.data, Math.min(at, node.data.length), Math.min(at + length, node.data.length))
      })
    const writeAt = (method: string, data: Uint8Array) =>
      handleCall(method, method, "write", (now): number | Failure => {
        if (!flag.write || node.kind === "Directory") return fail("EBADF")
        return writeInto(node, data, flag.append ? "end" : Number(position), now)
      })
    const file: PlatformFileSystem.File = {
      [PlatformFileSystem.FileTypeId]: PlatformFileSystem.FileTypeId,
      fd: descriptor,
      stat: handleCall("fstat", "stat", "fstat", () => infoOf(node)),
      sync: handleCall("fsync", "sync", "fsync", () => undefined),
      seek: (offset, from) =>
        semaphore.withPermits(1)(Effect.sync(() => {
          const size = PlatformFileSystem.Size(offset)
          position = from === "start" ? size : position + size
        })),
      read: (buffer) =>
        semaphore.withPermits(1)(Effect.map(readAt("read", buffer.length), (bytes) => {
          buffer.set(bytes)
          position += BigInt(bytes.length)
          return PlatformFileSystem.Size(bytes.length)
        })),
      readAlloc: (size) =>
        semaphore.withPermits(1)(Effect.map(readAt("readAlloc", Number(size)), (bytes) => {
          if (bytes.length === 0) return Option.none()
          position += BigInt(bytes.length)
          return Option.some(bytes)
        })),
      truncate: (length) =>
        semaphore.withPermits(1)(Effect.map(
          handleCall("ftruncate", "truncate", "ftruncate", (now): void | Failure => {
            if (!flag.write || node.kind === "Directory") return fail("EINVAL")
            truncateNode(node, length === undefined ? 0 : Number(length), now)
          }),
          () => {
            if (!flag.append) {
              const len = BigInt(length ?? 0)
              if (position > len) position = len
            }
          }
        )),
      write: (buffer) =>
        semaphore.withPermits(1)(Effect.map(writeAt("write", buffer), (written) => {
          if (!flag.append) position += BigInt(written)
          return PlatformFileSystem.Size(written)
        })),
      writeAll: (buffer) =>
        semaphore.withPermits(1)(Effect.asVoid(Effect.map(writeAt("writeAll", buffer), (written) => {
          if (!flag.append) position += BigInt(written)
        })))
    }
    return { file, close: () => { closed = true } }
  }

  // ------------------------------------------------------------------------------------------ the interface

  const simple = <A>(method: string, syscall: string, path: string, body: (now: number) => A | Failure) =>
    call({ op: method, method, syscall, path }, body)

  const makeTempFileAs = (method: string, options?: PlatformFileSystem.MakeTempFileOptions) =>
    Effect.flatMap(makeTempDirectoryAs(method, options), (directory) => {
      const file = posix.join(directory, drawTempName(12, "0123456789abcdef") + (options?.suffix ?? ""))
      return Effect.as(Effect.scoped(openAs(method, file, { flag: "w+" })), file)
    })

  const fileSystem = PlatformFileSystem.make({
    access: (path) =>
      simple("access", "access", path, (): void | Failure => {
        // Permission bits are not enforced (the world's rule): an existing entry is accessible.
        const node = statNode(path)
        return isErrno(node) ? node : undefined
      }),

    copy: (fromPath, toPath, options) =>
      call({ op: "copy", method: "copy", syscall: "cp", path: fromPath, path2: toPath }, (now) =>
        copyBody(fromPath, toPath, options?.overwrite ?? false, options?.preserveTimestamps ?? false, now)),

    copyFile: (fromPath, toPath) =>
      call({ op: "copyFile", method: "copyFile", syscall: "copyfile", path: fromPath, path2: toPath }, (now) => copyFileBody(fromPath, toPath, now)),

    chmod: (path, mode) =>
      simple("chmod", "chmod", path, (): void | Failure => {
        const node = statNode(path)
        if (isErrno(node)) return node
        node.mode = mode & 0o7777
        world.mutated(ctx)
      }),

    chown: (path, newUid, newGid) =>
      simple("chown", "chown", path, (): void | Failure => {
        const node = statNode(path)
        if (isErrno(node)) return node
        if (newUid !== -1) node.uid = newUid
        if (newGid !== -1) extraOf(node).gid = newGid
        world.mutated(ctx)
      }),

    link: (fromPath, toPath) =>
      call({ op: "link", method: "link", syscall: "link", path: fromPath, path2: toPath }, (now): void | Failure => {
        const a = lookup(fromPath, false)
        if (isErrno(a)) return a
        const node = a.node
        if (node === undefined) return fail("ENOENT")
        const b = lookup(toPath, false)
        if (isErrno(b)) return b
        if (b.node !== undefined) return fail("EEXIST")
        if (node.kind === "Directory") return fail("EPERM")
        if (node.dev !== b.dir.dev) return fail("EXDEV")
        attach(b.dir, b.name, node)
        touchDir(b.dir, now)
        world.mutated(ctx)
      }),

    makeDirectory: (path, options) =>
      simple("makeDirectory", "mkdir", path, (now): void | Failure => {
        const mode = options?.mode ?? 0o777
        if (path === "") return fail("ENOENT")
        if (options?.recursive === true) return makeDirectories(path, mode, now)
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node !== undefined) return fail("EEXIST")
        makeOneDirectory(at, mode, now)
      }),

    makeTempDirectory: (options) => makeTempDirectoryAs("makeTempDirectory", options),

    makeTempDirectoryScoped: (options) =>
      Effect.acquireRelease(
        makeTempDirectoryAs("makeTempDirectoryScoped", options),
        (directory) => Effect.orDie(removeAs("makeTempDirectoryScoped", directory, { recursive: true }))
      ),

    makeTempFile: (options) => makeTempFileAs("makeTempFile", options),

    makeTempFileScoped: (options) =>
      Effect.acquireRelease(
        makeTempFileAs("makeTempFileScoped", options),
        (file) => Effect.orDie(removeAs("makeTempFileScoped", posix.dirname(file), { recursive: true }))
      ),

    open: (path, options) => openAs("open", path, options),

    readDirectory: (path, options) => simple("readDirectory", "scandir", path, () => listDirectory(path, options?.recursive ?? false)),

    readFile: (path) =>
      simple("readFile", "open", path, (): Uint8Array | Failure => {
        const node = statNode(path)
        if (isErrno(node)) return node
        if (node.kind === "Directory") return fail("EISDIR", "read")
        return copyOut((node as FileNode).data)
      }),

    readLink: (path) =>
      simple("readLink", "readlink", path, (): string | Failure => {
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node === undefined) return fail("ENOENT")
        return at.node.kind === "SymbolicLink" ? at.node.target : fail("EINVAL")
      }),

    realPath: (path) =>
      simple("realPath", "lstat", path, (): string | Failure => {
        // Node's JS realpath resolves the path lexically first ("a/link/.." is "a"), then follows links.
        const at = lookup(resolvePath(path), true)
        if (isErrno(at)) return at
        const node = at.node
        if (node === undefined) return fail("ENOENT")
        return node.kind === "Directory" ? pathOfDir(node) : joinPath(pathOfDir(at.dir), at.name)
      }),

    remove: (path, options) => removeAs("remove", path, options),

    rename: (oldPath, newPath) =>
      call({ op: "rename", method: "rename", syscall: "rename", path: oldPath, path2: newPath }, (now) => renameEntry(oldPath, newPath, now)),

    stat: (path) => simple("stat", "stat", path, () => {
      const node = statNode(path)
      return isErrno(node) ? node : infoOf(node)
    }),

    symlink: (target, path) =>
      call({ op: "symlink", method: "symlink", syscall: "symlink", path, path2: target, subject: target }, (now): void | Failure => {
        if (target === "") return fail("ENOENT")
        const at = lookup(path, false)
        if (isErrno(at)) return at
        if (at.node !== undefined) return fail("EEXIST")
        attach(at.dir, at.name, own(world.newLink(at.dir, target, ctx.uid, now)))
        touchDir(at.dir, now)
        world.mutated(ctx)
      }),

    truncate: (path, length) =>
      simple("truncate", "open", path, (now): void | Failure => {
        const node = statNode(path)
        if (isErrno(node)) return node
        if (node.kind === "Directory") return fail("EISDIR")
        truncateNode(node as FileNode, length === undefined ? 0 : Number(length), now)
      }),

    utimes: (path, atime, mtime) =>
      call({ op: "utimes", method: "utime", syscall: "utime", path }, (): void | Failure => {
        const node = statNode(path)
        if (isErrno(node)) return node
        // Node reads a number as seconds since the epoch.
        const ms = (t: Date | number) => (typeof t === "number" ? t * 1000 : t.getTime())
        node.mtimeMs = ms(mtime)
        extraOf(node).atimeMs = ms(atime)
        world.mutated(ctx)
      }),

    watch: (path) =>
      Stream.unwrap(Effect.map(
        simple("stat", "stat", path, () => {
          const node = statNode(path)
          return isErrno(node) ? node : undefined
        }),
        () =>
          Stream.fail(new PlatformError.SystemError({
            reason: "Unknown",
            module: "FileSystem",
            method: "watch",
            pathOrDescriptor: path,
            description: "the simulated world has no change notifications"
          }))
      )),

    writeFile: (path, data, options) => {
      const flag = FLAGS[options?.flag ?? "w"]
      // open(2) then write(2), each a step: a crash between them leaves the file created (or truncated) and empty.
      return callWith({ op: "writeFile", method: "writeFile", syscall: "open", path }, (now) =>
        Effect.gen(function*() {
          const opened = step("writeFile.open", path, undefined, () => openNode(path, flag, options?.mode ?? 0o666, now))
          if (isErrno(opened)) return opened
          if (opened.kind === "Directory") return fail("EISDIR")
          if (!flag.write) return fail("EBADF", "write")
          if (data.length === 0) return undefined
          yield* yieldBeforeCall()
          const later = yield* Clock.currentTimeMillis
          const written = step("writeFile.write", path, undefined, () => writeInto(opened, data, flag.append ? "end" : 0, later))
          return isErrno(written) ? fail(written.errno, "write") : undefined
        }))
    }
  })

  const path: PlatformPath.Path = {
    ...posix,
    resolve: resolvePath,
    relative: (from, to) => posix.relative(resolvePath(from), resolvePath(to)),
    toFileUrl: (p) => posix.toFileUrl(resolvePath(p))
  }

  return { fileSystem, path, process: { hostname: host.hostname, pid: host.pid, uid } }
}

/**
 * `@effect/platform`'s `FileSystem` and `Path` as one simulated process of `world` (docs/testing.md "Testing your code
 * against the simulated world"). Give it the `{ hostname, pid }` given to `MemoryWorld.layer` to make the
 * harness's calls and the library's those of one process (a crash point scoped to it stops both).
 */
export const layer = (world: MemoryWorld, options?: PlatformProcessOptions): Layer.Layer<PlatformFileSystem.FileSystem | PlatformPath.Path> =>
  Layer.effectContext(Effect.map(PlatformPath.Path, (basePath) => {
    const services = make(world, basePath, options)
    return Context.make(PlatformFileSystem.FileSystem, services.fileSystem).pipe(Context.add(PlatformPath.Path, services.path))
  })).pipe(Layer.provide(PlatformPath.layer))
