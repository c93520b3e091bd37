/**
 * The portable tree walks: synchronous `node:fs` calls, one directory per step, where the native `fsat`
 * walker (fsat.c: nativeMeasure.ts, nativeRemove.ts) is not built or is turned off (`PI_STORAGE_NATIVE=0`).
 *
 * The native walker's guarantee without `openat` (docs/architecture.md "Walkers"): every directory is opened with
 * `O_DIRECTORY|O_NOFOLLOW`, and its entries are listed, lstat'ed, opened and unlinked through
 * `/proc/self/fd/<fd>/<name>`, which Linux resolves against the directory that descriptor holds, never
 * against a path a racing tool could change. A directory swapped for a symlink after its parent was listed
 * is refused by the open (ELOOP) and unlinked as an entry, never descended; a directory moved elsewhere
 * keeps nothing of ours reachable through it. Each opened directory is identified by its descriptor
 * (fstat, and the mount id in `/proc/self/fdinfo/<fd>`), never by a separate lstat of its path, so there is
 * no lstat-then-open window either. A mount point (another device or another mount) is never descended
 * (domain/OneFileSystem.ts). The measuring walk descends the same way but lstats file sizes by absolute
 * path (while that path is short): half the CPU of a lookup through /proc per entry, and only a read.
 *
 * Depth: the native walks' rule (fsat.c "Depth", domain/WalkDepth.ts). Only the `WALK_WINDOW` deepest
 * directories of the walk's path are held open and listed; one above them keeps its identity, its name and
 * the name its listing goes on after (listings come sorted by name: libuv sorts them as strcmp does). Coming
 * back to it re-opens `/proc/self/fd/<child>/..`, checked against that identity (device, inode, mount id):
 * anything else fails with ESTALE, nothing done through it. A level keeps its real path only while short
 * (`KEPT_PATH`); a report past that builds the path from the names.
 *
 * Where `/proc/self/fd` does not work (not Linux, /proc not mounted), measuring goes by absolute path (reads
 * only: a swap can at worst make it count an outside tree; mount points are found by device only; paths
 * longer than the system allows fail typed, ENAMETOOLONG) and a removal refuses with a typed error
 * (`ENOTSUP`): a tree is never deleted by a walk that could be redirected, and a quarantined run stays in
 * `.trash/`.
 */
import * as fs from "node:fs"
import { byteOrder } from "../../domain/NameBytes.js"
import { WALK_WINDOW } from "../../domain/WalkDepth.js"
import type { TreeMeasure, TreeRemoval, WalkBudget } from "../../services/FileSystem.js"
import { listDirectory, osPath } from "./osPath.js"
import { crossedMount, finished, makeTally, movedDirectory, type OwnSizes, ownSizes, type SyncWalk, treeMeasure, unlessMissing, type Walker } from "./syncWalk.js"

const DIR_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW

/** Longest real path a level keeps (reports, the measure's lstat by path); deeper, a report builds it from the names. */
const KEPT_PATH = 1024

const codeOf = (cause: unknown): unknown => (cause as { code?: unknown } | null)?.code

/**
 * `fn` on a `/proc/self/fd/…` path; a failure is re-thrown naming `path`, the entry's real path (the one a
 * report must show; built only then), with the errno kept.
 */
const at = <A>(syscall: string, path: string | (() => string), fn: () => A): A => {
  try {
    return fn()
  } catch (cause) {
    const code = codeOf(cause)
    if (typeof code !== "string") throw cause
    const real = typeof path === "string" ? path : path()
    throw Object.assign(new Error(`${code}: ${syscall} '${real}'`), { code, path: real, syscall })
  }
}

/** The mount id of an open descriptor (`/proc/self/fdinfo`), or undefined where the kernel does not say. */
const mountIdOf = (fd: number): number | undefined => {
  const info = fs.readFileSync(`/proc/self/fdinfo/${fd}`, "latin1")
  const found = /^mnt_id:\s*(\d+)/m.exec(info)
  return found === null ? undefined : Number(found[1])
}

/** Whether `/proc/self/fd/<fd>/<name>` reaches names inside the directory `fd` holds, with mount ids. */
const procFdWorks = (): boolean => {
  let fd: number | undefined
  try {
    fd = fs.openSync("/", DIR_FLAGS)
    const held = fs.fstatSync(fd)
    const viaProc = fs.statSync(`/proc/self/fd/${fd}/.`)
    return held.ino === viaProc.ino && held.dev === viaProc.dev && mountIdOf(fd) !== undefined
  } catch {
    return false
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}


export interface PathWalkerOptions {
  /** Address entries through `/proc/self/fd` (default: whether it works here). False: the no-/proc mode. */
  readonly procFd?: boolean
  /** List a directory (tests wrap it to race the walk); `node:fs` by default, sorted by name. */
  readonly list?: (path: string) => Array<fs.Dirent>
}

/** An open directory of the walk. */
interface Dir {
  readonly fd: number
  /** Its real path while at most `KEPT_PATH` long (always without /proc: it is `base` then). */
  readonly path: string | undefined
  /** Where its entries are reached: `/proc/self/fd/<fd>`, or `path` without /proc. */
  readonly base: string
  readonly dev: number
  readonly ino: number
  readonly mountId: number | undefined
  /** Its own sizes as its descriptor says when opened (a removal counts them once it is removed). */
  readonly own: OwnSizes
}

/** A directory on the walk's path. Out of the window it holds no descriptor and no listing. */
interface Level {
  fd: number | undefined
  base: string
  readonly path: string | undefined
  /** Its name in the parent (the root: its path). */
  readonly name: string
  readonly dev: number
  readonly ino: number
  readonly mountId: number | undefined
  readonly own: OwnSizes
  readonly depth: number
  /** What it has left to visit. */
  entries: ReadonlyArray<fs.Dirent>
  index: number
  /** The last entry visited before it left the window: its listing goes on after this name. */
  after: string | undefined
  /** A child was left in place (depth budget, mount point), so this directory cannot be removed. */
  blocked: boolean
  /** Its listing went on after a re-open: a removal lists it whole once more before its rmdir. */
  resumed: boolean
}

export const makePathWalker = (options?: PathWalkerOptions): Walker => {
  const procFd = options?.procFd ?? procFdWorks()
  const list = options?.list ?? listDirectory

  /** An opened directory; "gone" when it vanished, "notDirectory" when it is a link or file now. */
  const openDirectory = (open: string, path: string | (() => string)): number | "gone" | "notDirectory" => {
    try {
      return fs.openSync(osPath(open), DIR_FLAGS)
    } catch (cause) {
      const code = codeOf(cause)
      if (code === "ENOENT") return "gone"
      if (code === "ELOOP" || code === "ENOTDIR") return "notDirectory"
      return at("open", path, () => {
        throw cause
      })
    }
  }

  /** Identify what `fd` holds; the descriptor is closed if that fails. */
  const dirOf = (fd: number, path: string | undefined, report: string | (() => string)): Dir => {
    try {
      const stats = fs.fstatSync(fd)
      const { dev, ino } = stats
      return { fd, path, base: procFd ? `/proc/self/fd/${fd}` : path!, dev, ino, mountId: procFd ? mountIdOf(fd) : undefined, own: ownSizes(stats) }
    } catch (cause) {
      fs.closeSync(fd)
      return at("fstat", report, () => {
        throw cause
      })
    }
  }

  /** Another file system's directory: another device, or (with /proc) another mount. */
  const crosses = (parent: Dir | Level, child: Dir): boolean =>
    child.dev !== parent.dev || (child.mountId !== undefined && parent.mountId !== undefined && child.mountId !== parent.mountId)

  /** The entries of an opened directory; "gone" when it was removed meanwhile. Failures name `report`. */
  const listOf = (base: string, report: string | (() => string)): ReadonlyArray<fs.Dirent> | "gone" => {
    try {
      return list(base)
    } catch (cause) {
      if (codeOf(cause) === "ENOENT") return "gone"
      return at("readdir", report, () => {
        throw cause
      })
    }
  }

  /** The directories a walk is inside, root first, and the window of them it holds open. */
  const makePath = (root: string, rootDir: Dir, rootEntries: ReadonlyArray<fs.Dirent>) => {
    const levels: Array<Level> = []
    /** The shallowest level holding a descriptor: levels[low..] is the window. */
    let low = 0

    const level = (dir: Dir, name: string, depth: number, entries: ReadonlyArray<fs.Dirent>): Level => ({
      fd: dir.fd,
      base: dir.base,
      path: dir.path,
      name,
      dev: dir.dev,
      ino: dir.ino,
      mountId: dir.mountId,
      own: dir.own,
      depth,
      entries,
      index: 0,
      after: undefined,
      blocked: false,
      resumed: false
    })
    levels.push(level(rootDir, root, 0, rootEntries))

    /** The real path of `name` in the level at `i` (the level itself without a name), for a report. */
    const pathOf = (i: number, name?: string): string => {
      let kept = i
      while (levels[kept]!.path === undefined) kept--
      const parts = [levels[kept]!.path!]
      for (let j = kept + 1; j <= i; j++) parts.push(levels[j]!.name)
      if (name !== undefined) parts.push(name)
      return parts.join("/")
    }

    /** The path a child `name` of the level at `i` keeps: its real path while short (always without /proc). */
    const childPath = (i: number, name: string): string | undefined => {
      const parent = levels[i]!.path
      if (parent === undefined) return undefined
      const path = `${parent}/${name}`
      return procFd && path.length > KEPT_PATH ? undefined : path
    }

    /** A level leaves the window: it keeps the name its listing goes on after, no descriptor, no listing. */
    const leave = (l: Level) => {
      l.after = l.index > 0 ? l.entries[l.index - 1]!.name : l.after
      l.entries = []
      l.index = 0
      fs.closeSync(l.fd!)
      l.fd = undefined
    }

    const push = (dir: Dir, name: string, entries: ReadonlyArray<fs.Dirent>) => {
      levels.push(level(dir, name, levels[levels.length - 1]!.depth + 1, entries))
      if (levels.length - low > WALK_WINDOW) leave(levels[low++]!)
    }

    /** List the rest of the level at `i` (open): everything after `after`, or all of it. */
    const relist = (i: number) => {
      const l = levels[i]!
      const listed = listOf(l.base, () => pathOf(i))
      const entries = listed === "gone" ? [] : listed
      const after = l.after
      let start = 0
      if (after !== undefined) while (start < entries.length && byteOrder(entries[start]!.name, after) <= 0) start++
      l.entries = start === 0 ? entries : entries.slice(start)
      l.index = 0
    }

    /**
     * Back up from `child` (its descriptor still open) to the level at `i`, which left the window: open the
     * child's "..", go on only if it is the directory left, list the rest of it.
     */
    const reenter = (i: number, child: Level) => {
      const l = levels[i]!
      const fd = at("open", () => pathOf(i), () => fs.openSync(osPath(`${child.base}/..`), DIR_FLAGS))
      const dir = dirOf(fd, l.path, () => pathOf(i))
      if (dir.dev !== l.dev || dir.ino !== l.ino || dir.mountId !== l.mountId) {
        fs.closeSync(fd)
        throw movedDirectory(pathOf(i))
      }
      l.fd = fd
      l.base = dir.base
      l.resumed = true
      low = i
      relist(i)
    }

    /** Take the finished top level off (its descriptor still open: the caller closes it); re-enter its parent if that left the window. */
    const pop = (): Level => {
      const done = levels.pop()!
      const i = levels.length - 1
      if (i >= 0 && levels[i]!.fd === undefined) {
        try {
          reenter(i, done)
        } catch (cause) {
          fs.closeSync(done.fd!)
          throw cause
        }
      }
      return done
    }

    /** A removal's level with every entry visited, listed again whole if its listing went on after a re-open; true when that found more. */
    const sweep = (i: number): boolean => {
      const l = levels[i]!
      if (!l.resumed || l.blocked) return false
      l.resumed = false
      l.after = undefined
      relist(i)
      return l.entries.length > 0
    }

    const close = () => {
      for (const l of levels.splice(0)) if (l.fd !== undefined) fs.closeSync(l.fd)
    }

    /** A child `name` of the level at `i`, opened relative to it; "mount" (closed again) when it is a mount point. */
    const openChild = (i: number, name: string): Dir | "gone" | "notDirectory" | "mount" => {
      const parent = levels[i]!
      const report = () => pathOf(i, name)
      const fd = openDirectory(`${parent.base}/${name}`, report)
      if (typeof fd !== "number") return fd
      const child = dirOf(fd, childPath(i, name), report)
      if (!crosses(parent, child)) return child
      fs.closeSync(fd)
      return "mount"
    }

    /** The entries of an opened child `name` of the level at `i`; "gone" when it was removed meanwhile. Closes it on failure. */
    const entriesOf = (i: number, name: string, child: Dir): ReadonlyArray<fs.Dirent> | "gone" => {
      try {
        return listOf(child.base, () => pathOf(i, name))
      } catch (cause) {
        fs.closeSync(child.fd)
        throw cause
      }
    }

    return { levels, pathOf, push, pop, sweep, close, openChild, entriesOf }
  }

  const startMeasure = (root: string, budget: WalkBudget): SyncWalk<TreeMeasure> => {
    const opened = openDirectory(root, root)
    if (typeof opened !== "number") {
      // A link or file measures itself (never a link's target), as du does; a missing root fails.
      return finished(treeMeasure(ownSizes(fs.lstatSync(osPath(root))), 0, true))
    }
    const rootDir = dirOf(opened, root, root)
    const rootEntries = listOrClose(rootDir, root)
    const tally = makeTally()
    tally.add(rootDir.own)
    if (rootEntries === "gone") return finished(treeMeasure(tally.total, 0, true))
    let entries = 0
    let complete = true
    const walk = makePath(root, rootDir, rootEntries)
    const { levels } = walk
    if (budget.maxDepth < 1) {
      complete = rootEntries.length === 0
      walk.close()
    }
    const step = (until: number): boolean => {
      const i = levels.length - 1
      const top = levels[i]
      if (top === undefined) return true
      while (top.index < top.entries.length) {
        if (performance.now() > until) return false // resume this directory after a yield
        if (entries >= budget.maxEntries) {
          complete = false
          return true
        }
        const entry = top.entries[top.index++]!
        // The directory entry's type saves an lstat for directories (their sizes come from the descriptor the
        // walk opens); everything else is lstat'ed for its sizes.
        let isDirectory = entry.isDirectory()
        if (!isDirectory) {
          // By absolute path while it is short: half the CPU of a lookup through /proc per entry, and a read
          // only (a racing swap can change a number, never what is descended or deleted).
          const stats = at("lstat", () => walk.pathOf(i, entry.name), () => fs.lstatSync(osPath(`${top.path ?? top.base}/${entry.name}`), { throwIfNoEntry: false }))
          if (stats === undefined) continue // removed while we walked
          isDirectory = stats.isDirectory()
          if (!isDirectory) tally.addEntry(stats)
        }
        entries++
        if (!isDirectory) continue
        const child = walk.openChild(i, entry.name)
        if (child === "gone" || child === "notDirectory") continue
        if (child === "mount") {
          complete = false // its contents (and its sizes: another file system's) are not counted: the measure is a lower bound
          continue
        }
        tally.add(child.own)
        const children = walk.entriesOf(i, entry.name, child)
        if (children === "gone") {
          fs.closeSync(child.fd)
          continue
        }
        if (children.length === 0 || top.depth + 2 > budget.maxDepth) {
          // Only a non-empty directory left unopened makes the measure a lower bound.
          if (children.length > 0) complete = false
          fs.closeSync(child.fd)
          continue
        }
        walk.push(child, entry.name, children)
        return false // continue with the child
      }
      fs.closeSync(walk.pop().fd!)
      return levels.length === 0
    }
    return { step, result: () => treeMeasure(tally.total, entries, complete), close: walk.close }
  }

  /** A root's listing; its descriptor is closed when that fails or it is gone. */
  const listOrClose = (dir: Dir, root: string): ReadonlyArray<fs.Dirent> | "gone" => {
    let listed: ReadonlyArray<fs.Dirent> | "gone" | undefined
    try {
      listed = listOf(dir.base, root)
      return listed
    } finally {
      if (listed === undefined || listed === "gone") fs.closeSync(dir.fd)
    }
  }

  const startRemoval = (root: string, budget: WalkBudget): SyncWalk<TreeRemoval> => {
    if (!procFd) {
      throw Object.assign(
        new Error(
          "no walker here can delete a tree safely: the native addon is not built and /proc/self/fd is unavailable, so a racing symlink swap could redirect the portable walk; the tree is left in place"
        ),
        { code: "ENOTSUP", path: root, syscall: "removeTree" }
      )
    }
    const nothing = (complete: boolean): TreeRemoval => ({ removedEntries: 0, complete, removedBytes: 0, removedApparentBytes: 0 })
    const opened = openDirectory(root, root)
    if (opened === "gone") return finished(nothing(true))
    if (opened === "notDirectory") {
      // A link or file root: unlink the entry itself (never a link's target). The root is not counted as an
      // entry; its sizes are, as its measure counts them.
      const stats = fs.lstatSync(osPath(root), { throwIfNoEntry: false })
      const unlinked = at("unlink", root, () => unlessMissing(() => fs.unlinkSync(osPath(root))))
      const own = unlinked && stats !== undefined ? ownSizes(stats) : { bytes: 0, apparentBytes: 0 }
      return finished({ removedEntries: 0, complete: true, removedBytes: own.bytes, removedApparentBytes: own.apparentBytes })
    }
    const rootDir = dirOf(opened, root, root)
    const rootEntries = listOrClose(rootDir, root)
    if (rootEntries === "gone") return finished(nothing(true))
    const walk = makePath(root, rootDir, rootEntries)
    const { levels } = walk
    if (budget.maxDepth < 1 && rootEntries.length > 0) {
      walk.close()
      return finished(nothing(false))
    }
    let removed = 0
    const tally = makeTally()
    let complete = true
    /** The first mount point met: never crossed, reported when the walk ends. */
    let mountPoint: string | undefined

    /** Unlink (or rmdir) `name` in the level at `i`; true when this call removed it. */
    const removeEntry = (i: number, name: string, directory: boolean): boolean =>
      at(directory ? "rmdir" : "unlink", () => walk.pathOf(i, name), () =>
        unlessMissing(() => (directory ? fs.rmdirSync : fs.unlinkSync)(osPath(`${levels[i]!.base}/${name}`))))

    const step = (until: number): boolean => {
      const i = levels.length - 1
      const top = levels[i]
      if (top === undefined) return true
      do {
        while (top.index < top.entries.length) {
          if (performance.now() > until) return false // resume this directory after a yield
          if (removed >= budget.maxEntries) {
            complete = false
            return true
          }
          const dirent = top.entries[top.index++]!
          if (!dirent.isDirectory()) {
            // Files, symlinks and anything else: unlink the entry itself. Its sizes are read first (through
            // the opened directory, never a link) and count once it is unlinked.
            const stats = at("lstat", () => walk.pathOf(i, dirent.name), () => fs.lstatSync(osPath(`${top.base}/${dirent.name}`), { throwIfNoEntry: false }))
            if (removeEntry(i, dirent.name, false)) {
              removed++
              if (stats !== undefined) tally.addEntry(stats)
            }
            continue
          }
          const child = walk.openChild(i, dirent.name)
          if (child === "gone") continue
          if (child === "notDirectory") {
            // Swapped for a link or a file since the listing: remove the entry itself, never its target.
            if (removeEntry(i, dirent.name, false)) removed++
            continue
          }
          if (child === "mount") {
            top.blocked = true
            complete = false
            mountPoint ??= walk.pathOf(i, dirent.name)
            continue
          }
          const children = walk.entriesOf(i, dirent.name, child)
          if (children === "gone") {
            fs.closeSync(child.fd)
            continue
          }
          if (children.length === 0) {
            fs.closeSync(child.fd)
            if (removeEntry(i, dirent.name, true)) {
              removed++
              tally.add(child.own)
            }
            continue
          }
          if (top.depth + 2 > budget.maxDepth) {
            fs.closeSync(child.fd)
            top.blocked = true
            complete = false
            continue
          }
          walk.push(child, dirent.name, children)
          return false // continue with the child
        }
      } while (walk.sweep(i))
      const done = walk.pop()
      fs.closeSync(done.fd!)
      const parent = levels[levels.length - 1]
      if (done.blocked) {
        if (parent !== undefined) parent.blocked = true
      } else if (parent === undefined) {
        // The root is not counted against the budget; its sizes are, as du counts them.
        if (at("rmdir", root, () => unlessMissing(() => fs.rmdirSync(osPath(root))))) tally.add(done.own)
      } else if (removed >= budget.maxEntries) {
        complete = false
        return true
      } else if (removeEntry(levels.length - 1, done.name, true)) {
        removed++
        tally.add(done.own)
      }
      return levels.length === 0
    }
    const result = (): TreeRemoval => {
      if (mountPoint !== undefined) throw crossedMount(mountPoint)
      return { removedEntries: removed, complete, removedBytes: tally.total.bytes, removedApparentBytes: tally.total.apparentBytes }
    }
    return { step, result, close: walk.close }
  }

  return { startMeasure, startRemoval }
}

/** The portable walker of this process (through /proc/self/fd wherever that works). */
export const pathWalker: Walker = makePathWalker()
