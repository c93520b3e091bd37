/**
 * The portable tree walks: synchronous `node:fs` calls by absolute path, one directory per step. Used where
 * the native `fsat` walker (fdWalk.ts) is not built. Known limit: without `openat` a directory swapped for a
 * symlink between listing its parent and opening it could be descended; the programs only walk trees they
 * own (runs, or runs already renamed into `.trash/` inside a 0700 tenant).
 */
import * as fs from "node:fs"
import type { TreeMeasure, TreeRemoval, WalkBudget } from "../../services/FileSystem.js"
import { finished, type SyncWalk, unlessMissing, type Walker } from "./syncWalk.js"

/** `readdirSync`, treating an entry that vanished or stopped being a directory as empty (a racing writer). */
const direntsOf = (path: string): Array<fs.Dirent> | undefined => {
  try {
    return fs.readdirSync(path, { withFileTypes: true })
  } catch (cause) {
    const code = (cause as { code?: unknown }).code
    if (code === "ENOENT" || code === "ENOTDIR") return undefined
    throw cause
  }
}

interface Frame {
  readonly path: string
  readonly depth: number
  readonly entries: ReadonlyArray<fs.Dirent>
  index: number
  /** A child was left in place (depth budget), so this directory cannot be removed. */
  blocked: boolean
}

const startMeasure = (root: string, budget: WalkBudget): SyncWalk<TreeMeasure> => {
  const rootStats = fs.lstatSync(root)
  if (!rootStats.isDirectory()) return finished({ bytes: rootStats.isFile() ? rootStats.size : 0, entries: 0, complete: true })
  let bytes = 0
  let entries = 0
  let complete = true
  const stack: Array<Frame> = []
  const rootEntries = direntsOf(root) ?? []
  if (budget.maxDepth >= 1) stack.push({ path: root, depth: 0, entries: rootEntries, index: 0, blocked: false })
  else complete = rootEntries.length === 0
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
      const path = `${top.path}/${entry.name}`
      // The directory entry's type saves an lstat for everything but regular files (whose size we need)
      // and entries whose type the filesystem does not report.
      let isFile = entry.isFile()
      let isDirectory = entry.isDirectory()
      if (isFile || (!isDirectory && !entry.isSymbolicLink() && !entry.isFIFO() && !entry.isSocket() &&
        !entry.isBlockDevice() && !entry.isCharacterDevice())) {
        const stats = fs.lstatSync(path, { throwIfNoEntry: false })
        if (stats === undefined) continue // removed while we walked
        isFile = stats.isFile()
        isDirectory = stats.isDirectory()
        if (isFile) bytes += stats.size
      }
      entries++
      if (isDirectory) {
        const depth = top.depth + 1
        const children = direntsOf(path)
        if (children === undefined || children.length === 0) continue
        // Only a non-empty directory left unopened makes the measure a lower bound.
        if (depth + 1 > budget.maxDepth) {
          complete = false
        } else {
          stack.push({ path, depth, entries: children, index: 0, blocked: false })
          return false // continue with the child
        }
      }
    }
    stack.pop()
    return stack.length === 0
  }
  return { step, result: () => ({ bytes, entries, complete }), close: () => {} }
}

const startRemoval = (root: string, budget: WalkBudget): SyncWalk<TreeRemoval> => {
  const rootStats = fs.lstatSync(root, { throwIfNoEntry: false })
  if (rootStats === undefined) return finished({ removedEntries: 0, complete: true, removedBytes: 0 })
  if (!rootStats.isDirectory()) {
    // A link or file root: unlink the entry itself (never a link's target). The root is not counted as an
    // entry; a regular file's bytes are, as its measure counts them.
    const unlinked = unlessMissing(() => fs.unlinkSync(root))
    return finished({ removedEntries: 0, complete: true, removedBytes: unlinked && rootStats.isFile() ? rootStats.size : 0 })
  }
  const rootEntries = direntsOf(root)
  if (rootEntries === undefined) return finished({ removedEntries: 0, complete: true, removedBytes: 0 })
  if (budget.maxDepth < 1 && rootEntries.length > 0) return finished({ removedEntries: 0, complete: false, removedBytes: 0 })
  let removed = 0
  let removedBytes = 0
  let complete = true
  const stack: Array<Frame> = [{ path: root, depth: 0, entries: rootEntries, index: 0, blocked: false }]

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
      const path = `${top.path}/${dirent.name}`
      if (dirent.isDirectory()) {
        const depth = top.depth + 1
        const children = direntsOf(path)
        if (children === undefined) continue
        if (children.length === 0) {
          if (unlessMissing(() => fs.rmdirSync(path))) removed++
          continue
        }
        if (depth + 1 > budget.maxDepth) {
          top.blocked = true
          complete = false
          continue
        }
        stack.push({ path, depth, entries: children, index: 0, blocked: false })
        return false // continue with the child
      }
      // Files, symlinks and anything else: unlink the entry itself. A regular file's size is read first
      // (never through a link) and counts once it is unlinked.
      const size = dirent.isFile() ? fs.lstatSync(path, { throwIfNoEntry: false }) : undefined
      if (unlessMissing(() => fs.unlinkSync(path))) {
        removed++
        if (size?.isFile()) removedBytes += size.size
      }
    }
    stack.pop()
    const parent = stack[stack.length - 1]
    if (top.blocked) {
      if (parent !== undefined) parent.blocked = true
    } else if (parent === undefined) {
      unlessMissing(() => fs.rmdirSync(top.path)) // the root is not counted against the budget
    } else if (removed >= budget.maxEntries) {
      complete = false
      return true
    } else if (unlessMissing(() => fs.rmdirSync(top.path))) {
      removed++
    }
    return stack.length === 0
  }
  return { step, result: () => ({ removedEntries: removed, complete, removedBytes }), close: () => {} }
}

export const pathWalker: Walker = { startMeasure, startRemoval }
