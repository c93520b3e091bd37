/**
 * The portable tree walks: synchronous `node:fs` calls, one directory per step, where the native `fsat`
 * walker (fsat.c: nativeMeasure.ts, nativeRemove.ts) is not built or is turned off (`PI_STORAGE_NATIVE=0`).
 *
 * The native walker's guarantee without `openat` (README "Walkers"): every directory is opened with
 * `O_DIRECTORY|O_NOFOLLOW`, and its entries are listed, lstat'ed, opened and unlinked through
 * `/proc/self/fd/<fd>/<name>`, which Linux resolves against the directory that descriptor holds, never
 * against a path a racing tool could change. A directory swapped for a symlink after its parent was listed
 * is refused by the open (ELOOP) and unlinked as an entry, never descended; a directory moved elsewhere
 * keeps nothing of ours reachable through it. Each opened directory is identified by its descriptor
 * (fstat, and the mount id in `/proc/self/fdinfo/<fd>`), never by a separate lstat of its path, so there is
 * no lstat-then-open window either. A mount point (another device or another mount) is never descended
 * (domain/OneFileSystem.ts). The measuring walk descends the same way but lstats file sizes by absolute
 * path: half the CPU of a lookup through /proc per entry, and only a read.
 *
 * Where `/proc/self/fd` does not work (not Linux, /proc not mounted), measuring goes by absolute path (reads
 * only: a swap can at worst make it count an outside tree; mount points are found by device only) and a
 * removal refuses with a typed error (`ENOTSUP`): a tree is never deleted by a walk that could be
 * redirected, and a quarantined run stays in `.trash/`.
 */
import * as fs from "node:fs"
import type { TreeMeasure, TreeRemoval, WalkBudget } from "../../services/FileSystem.js"
import { crossedMount, finished, type SyncWalk, unlessMissing, type Walker } from "./syncWalk.js"

const DIR_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW

const codeOf = (cause: unknown): unknown => (cause as { code?: unknown } | null)?.code

/**
 * `fn` on a `/proc/self/fd/…` path; a failure is re-thrown naming `path`, the entry's real path (the one a
 * report must show), with the errno kept.
 */
const at = <A>(syscall: string, path: string, fn: () => A): A => {
  try {
    return fn()
  } catch (cause) {
    const code = codeOf(cause)
    if (typeof code !== "string") throw cause
    throw Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, path, syscall })
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
  /** List a directory (tests wrap it to race the walk); `node:fs` by default. */
  readonly list?: (path: string) => Array<fs.Dirent>
}

/** An open directory of the walk. */
interface Dir {
  readonly fd: number
  /** Its real path, for reports. */
  readonly path: string
  /** Where its entries are reached: `/proc/self/fd/<fd>`, or `path` without /proc. */
  readonly base: string
  readonly dev: number
  readonly mountId: number | undefined
}

interface Frame extends Dir {
  /** Its name in the parent (the root: its path). */
  readonly name: string
  readonly depth: number
  readonly entries: ReadonlyArray<fs.Dirent>
  index: number
  /** A child was left in place (depth budget, mount point), so this directory cannot be removed. */
  blocked: boolean
}

export const makePathWalker = (options?: PathWalkerOptions): Walker => {
  const procFd = options?.procFd ?? procFdWorks()
  const list = options?.list ?? ((path: string) => fs.readdirSync(path, { withFileTypes: true }))

  /** An opened directory; "gone" when it vanished, "notDirectory" when it is a link or file now. */
  const openDirectory = (open: string, path: string): number | "gone" | "notDirectory" => {
    try {
      return fs.openSync(open, DIR_FLAGS)
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
  const dirOf = (fd: number, path: string): Dir => {
    try {
      const dev = fs.fstatSync(fd).dev
      return { fd, path, base: procFd ? `/proc/self/fd/${fd}` : path, dev, mountId: procFd ? mountIdOf(fd) : undefined }
    } catch (cause) {
      fs.closeSync(fd)
      return at("fstat", path, () => {
        throw cause
      })
    }
  }

  /** Another file system's directory: another device, or (with /proc) another mount. */
  const crosses = (parent: Dir, child: Dir): boolean =>
    child.dev !== parent.dev || (child.mountId !== undefined && parent.mountId !== undefined && child.mountId !== parent.mountId)

  /** A child directory, opened relative to its parent; "mount" (closed again) when it is a mount point. */
  const openChild = (parent: Dir, name: string): Dir | "gone" | "notDirectory" | "mount" => {
    const path = `${parent.path}/${name}`
    const fd = openDirectory(`${parent.base}/${name}`, path)
    if (typeof fd !== "number") return fd
    const child = dirOf(fd, path)
    if (!crosses(parent, child)) return child
    fs.closeSync(fd)
    return "mount"
  }

  /** The entries of an opened directory; "gone" when it was removed meanwhile. Closes it on failure. */
  const entriesOf = (dir: Dir): ReadonlyArray<fs.Dirent> | "gone" => {
    try {
      return list(dir.base)
    } catch (cause) {
      fs.closeSync(dir.fd)
      if (codeOf(cause) === "ENOENT") return "gone"
      return at("readdir", dir.path, () => {
        throw cause
      })
    }
  }

  const closeAll = (stack: Array<Frame>) => () => {
    for (const frame of stack.splice(0)) fs.closeSync(frame.fd)
  }

  const startMeasure = (root: string, budget: WalkBudget): SyncWalk<TreeMeasure> => {
    const opened = openDirectory(root, root)
    if (typeof opened !== "number") {
      const stats = fs.lstatSync(root) // a link or file measures itself; a missing root fails
      return finished({ bytes: stats.isFile() ? stats.size : 0, entries: 0, complete: true })
    }
    const rootDir = dirOf(opened, root)
    const rootEntries = entriesOf(rootDir)
    if (rootEntries === "gone") return finished({ bytes: 0, entries: 0, complete: true })
    let bytes = 0
    let entries = 0
    let complete = true
    const stack: Array<Frame> = [{ ...rootDir, name: root, depth: 0, entries: rootEntries, index: 0, blocked: false }]
    if (budget.maxDepth < 1) {
      complete = rootEntries.length === 0
      closeAll(stack)()
    }
    const step = (until: number): boolean => {
      const top = stack[stack.length - 1]
      if (top === undefined) return true
      while (top.index < top.entries.length) {
        if (performance.now() > until) return false // resume this directory after a yield
        if (entries >= budget.maxEntries) {
          complete = false
          return true
        }
        const entry = top.entries[top.index++]!
        // The directory entry's type saves an lstat for everything but regular files (whose size we need)
        // and entries whose type the filesystem does not report.
        let isFile = entry.isFile()
        let isDirectory = entry.isDirectory()
        if (isFile || (!isDirectory && !entry.isSymbolicLink() && !entry.isFIFO() && !entry.isSocket() &&
          !entry.isBlockDevice() && !entry.isCharacterDevice())) {
          // By absolute path: half the CPU of a lookup through /proc per entry, and a read only (a racing swap
          // can change a number, never what is descended or deleted).
          const stats = fs.lstatSync(`${top.path}/${entry.name}`, { throwIfNoEntry: false })
          if (stats === undefined) continue // removed while we walked
          isFile = stats.isFile()
          isDirectory = stats.isDirectory()
          if (isFile) bytes += stats.size
        }
        entries++
        if (!isDirectory) continue
        const child = openChild(top, entry.name)
        if (child === "gone" || child === "notDirectory") continue
        if (child === "mount") {
          complete = false // its contents are not counted: the measure is a lower bound
          continue
        }
        const children = entriesOf(child)
        if (children === "gone") continue
        const depth = top.depth + 1
        if (children.length === 0 || depth + 1 > budget.maxDepth) {
          // Only a non-empty directory left unopened makes the measure a lower bound.
          if (children.length > 0) complete = false
          fs.closeSync(child.fd)
          continue
        }
        stack.push({ ...child, name: entry.name, depth, entries: children, index: 0, blocked: false })
        return false // continue with the child
      }
      stack.pop()
      fs.closeSync(top.fd)
      return stack.length === 0
    }
    return { step, result: () => ({ bytes, entries, complete }), close: closeAll(stack) }
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
    const opened = openDirectory(root, root)
    if (opened === "gone") return finished({ removedEntries: 0, complete: true, removedBytes: 0 })
    if (opened === "notDirectory") {
      // A link or file root: unlink the entry itself (never a link's target). The root is not counted as an
      // entry; a regular file's bytes are, as its measure counts them.
      const stats = fs.lstatSync(root, { throwIfNoEntry: false })
      const unlinked = at("unlink", root, () => unlessMissing(() => fs.unlinkSync(root)))
      return finished({ removedEntries: 0, complete: true, removedBytes: unlinked && stats?.isFile() === true ? stats.size : 0 })
    }
    const rootDir = dirOf(opened, root)
    const rootEntries = entriesOf(rootDir)
    if (rootEntries === "gone") return finished({ removedEntries: 0, complete: true, removedBytes: 0 })
    const stack: Array<Frame> = [{ ...rootDir, name: root, depth: 0, entries: rootEntries, index: 0, blocked: false }]
    if (budget.maxDepth < 1 && rootEntries.length > 0) {
      closeAll(stack)()
      return finished({ removedEntries: 0, complete: false, removedBytes: 0 })
    }
    let removed = 0
    let removedBytes = 0
    let complete = true
    /** The first mount point met: never crossed, reported when the walk ends. */
    let mountPoint: string | undefined

    /** Unlink (or rmdir) `name` in `dir`; true when this call removed it. */
    const removeEntry = (dir: Dir, name: string, directory: boolean): boolean =>
      at(directory ? "rmdir" : "unlink", `${dir.path}/${name}`, () =>
        unlessMissing(() => (directory ? fs.rmdirSync : fs.unlinkSync)(`${dir.base}/${name}`)))

    const step = (until: number): boolean => {
      const top = stack[stack.length - 1]
      if (top === undefined) return true
      while (top.index < top.entries.length) {
        if (performance.now() > until) return false // resume this directory after a yield
        if (removed >= budget.maxEntries) {
          complete = false
          return true
        }
        const dirent = top.entries[top.index++]!
        if (!dirent.isDirectory()) {
          // Files, symlinks and anything else: unlink the entry itself. A regular file's size is read first
          // (through the opened directory, never a link) and counts once it is unlinked.
          const size = dirent.isFile() ? fs.lstatSync(`${top.base}/${dirent.name}`, { throwIfNoEntry: false }) : undefined
          if (removeEntry(top, dirent.name, false)) {
            removed++
            if (size?.isFile() === true) removedBytes += size.size
          }
          continue
        }
        const child = openChild(top, dirent.name)
        if (child === "gone") continue
        if (child === "notDirectory") {
          // Swapped for a link or a file since the listing: remove the entry itself, never its target.
          if (removeEntry(top, dirent.name, false)) removed++
          continue
        }
        if (child === "mount") {
          top.blocked = true
          complete = false
          mountPoint ??= `${top.path}/${dirent.name}`
          continue
        }
        const children = entriesOf(child)
        if (children === "gone") continue
        if (children.length === 0) {
          fs.closeSync(child.fd)
          if (removeEntry(top, dirent.name, true)) removed++
          continue
        }
        const depth = top.depth + 1
        if (depth + 1 > budget.maxDepth) {
          fs.closeSync(child.fd)
          top.blocked = true
          complete = false
          continue
        }
        stack.push({ ...child, name: dirent.name, depth, entries: children, index: 0, blocked: false })
        return false // continue with the child
      }
      stack.pop()
      fs.closeSync(top.fd)
      const parent = stack[stack.length - 1]
      if (top.blocked) {
        if (parent !== undefined) parent.blocked = true
      } else if (parent === undefined) {
        at("rmdir", root, () => unlessMissing(() => fs.rmdirSync(root))) // the root is not counted against the budget
      } else if (removed >= budget.maxEntries) {
        complete = false
        return true
      } else if (removeEntry(parent, top.name, true)) {
        removed++
      }
      return stack.length === 0
    }
    const result = (): TreeRemoval => {
      if (mountPoint !== undefined) throw crossedMount(mountPoint)
      return { removedEntries: removed, complete, removedBytes }
    }
    return { step, result, close: closeAll(stack) }
  }

  return { startMeasure, startRemoval }
}

/** The portable walker of this process (through /proc/self/fd wherever that works). */
export const pathWalker: Walker = makePathWalker()
