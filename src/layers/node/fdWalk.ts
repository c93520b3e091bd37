/**
 * The native measuring walk: the same budgets, order and answers as pathWalk.ts, but every entry is reached
 * relative to its parent's open descriptor (`openat`/`fstatat` through the `fsat` addon), so a directory
 * swapped for a symlink mid-walk is never descended: every open is O_NOFOLLOW relative to a descriptor we
 * already hold, and a mount point is never descended (the measure is then incomplete). Descriptors held: one per directory level on the walk's stack, closed when the level is
 * done and by `close` on a budget stop, failure or interruption. (The native removal is the same walk in C,
 * fsat.c `removeTree`, run on the thread pool: nativeRemove.ts.)
 */
import * as fs from "node:fs"
import type { TreeMeasure, WalkBudget } from "../../services/FileSystem.js"
import { errnoName, type Fsat, fsatError, FsatType } from "./fsat.js"
import { finished, type SyncWalk } from "./syncWalk.js"

interface Frame {
  readonly fd: number
  readonly path: string
  readonly depth: number
  readonly names: ReadonlyArray<string>
  readonly types: ReadonlyArray<number>
  index: number
}

/** Start a native measuring walk (may throw for a missing root, as `fs.lstatSync` does). */
export const makeFdMeasure = (fsat: Fsat): ((root: string, budget: WalkBudget) => SyncWalk<TreeMeasure>) => {
  /** A directory's names and types; on failure the descriptor is closed before the error propagates. */
  const listOrClose = (fd: number, path: string): { names: Array<string>; types: Array<number> } => {
    const types: Array<number> = []
    const names = fsat.list(fd, types)
    if (typeof names !== "number") return { names, types }
    fsat.close(fd)
    throw fsatError("readdir", path, names)
  }

  /** Open the walk's root; undefined when it vanished or became a link since its lstat. */
  const openRoot = (root: string): number | undefined => {
    const fd = fsat.openDir(root)
    if (fd >= 0) return fd
    const code = errnoName(fd)
    if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR") return undefined
    throw fsatError("open", root, fd)
  }

  const closeAll = (stack: Array<Frame>) => () => {
    for (const frame of stack.splice(0)) fsat.close(frame.fd)
  }

  const childPath = (frame: Frame, name: string) => `${frame.path}/${name}`

  const stat = new Float64Array(2)

  /** The entry's type (its size lands in `stat[1]`), or undefined when it vanished. */
  const statEntry = (frame: Frame, name: string): number | undefined => {
    const answer = fsat.statAt(frame.fd, name, stat)
    if (answer === 0) return stat[0]!
    if (errnoName(answer) === "ENOENT") return undefined
    throw fsatError("lstat", childPath(frame, name), answer)
  }

  /**
   * A child directory's descriptor; undefined when it vanished or is no longer a directory, "mount" for a
   * mount point (another file system: never descended, domain/OneFileSystem.ts).
   */
  const openChild = (frame: Frame, name: string): number | undefined | "mount" => {
    const fd = fsat.openDirAt(frame.fd, name)
    if (fd >= 0) return fd
    const code = errnoName(fd)
    if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR") return undefined
    if (code === "EXDEV") return "mount"
    throw fsatError("open", childPath(frame, name), fd)
  }

  const rootFrame = (fd: number, root: string): Frame => ({ fd, path: root, depth: 0, ...listOrClose(fd, root), index: 0 })

  const startMeasure = (root: string, budget: WalkBudget): SyncWalk<TreeMeasure> => {
    const rootStats = fs.lstatSync(root)
    if (!rootStats.isDirectory()) return finished({ bytes: rootStats.isFile() ? rootStats.size : 0, entries: 0, complete: true })
    const rootFd = openRoot(root)
    if (rootFd === undefined) return finished({ bytes: 0, entries: 0, complete: true })
    const stack = [rootFrame(rootFd, root)]
    if (budget.maxDepth < 1) {
      const complete = stack[0]!.names.length === 0
      closeAll(stack)()
      return finished({ bytes: 0, entries: 0, complete })
    }
    let bytes = 0
    let entries = 0
    let complete = true
    const step = (until: number): boolean => {
      const top = stack[stack.length - 1]
      if (top === undefined) return true
      while (top.index < top.names.length) {
        if (performance.now() > until) return false // resume this directory after a yield
        if (entries >= budget.maxEntries) {
          complete = false
          return true
        }
        const name = top.names[top.index]!
        let type = top.types[top.index++]!
        // Regular files need their size; unknown types need a look.
        if (type === FsatType.File || type === FsatType.Unknown) {
          const found = statEntry(top, name)
          if (found === undefined) continue // removed while we walked
          type = found
          if (type === FsatType.File) bytes += stat[1]!
        }
        entries++
        if (type !== FsatType.Directory) continue
        const fd = openChild(top, name)
        if (fd === undefined) continue
        if (fd === "mount") {
          complete = false // its contents are not counted: the measure is a lower bound
          continue
        }
        const path = childPath(top, name)
        const children = listOrClose(fd, path)
        const depth = top.depth + 1
        if (children.names.length === 0 || depth + 1 > budget.maxDepth) {
          // Only a non-empty directory left unopened makes the measure a lower bound.
          if (children.names.length > 0) complete = false
          fsat.close(fd)
          continue
        }
        stack.push({ fd, path, depth, ...children, index: 0 })
        return false // continue with the child
      }
      stack.pop()
      fsat.close(top.fd)
      return stack.length === 0
    }
    return { step, result: () => ({ bytes, entries, complete }), close: closeAll(stack) }
  }

  return startMeasure
}
