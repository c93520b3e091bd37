/**
 * A tree walk as resumable synchronous steps, so one implementation runs two ways: sliced on the event loop
 * (`runWalk` in support.ts) or straight through on the remover thread (`runToEnd`). Steps throw errors
 * shaped like `node:fs` ones (`code`, `path`). No Effect here: the remover thread loads this without it.
 */
import { CROSSED_MOUNT_DETAIL, CROSSED_MOUNT_ERRNO, CROSSED_MOUNT_SYSCALL } from "../../domain/OneFileSystem.js"
import { MOVED_DIRECTORY_DETAIL, MOVED_DIRECTORY_ERRNO, MOVED_DIRECTORY_SYSCALL } from "../../domain/WalkDepth.js"
import type { TreeMeasure, TreeRemoval, WalkBudget } from "../../services/FileSystem.js"

export interface SyncWalk<A> {
  /** Do work until done (true) or until `performance.now()` passes `until` (false). */
  readonly step: (until: number) => boolean
  readonly result: () => A
  /** Release what the walk holds (descriptors); safe to call at any point, more than once. */
  readonly close: () => void
}

/** The two walks a walker provides. Starting one may throw (a missing root, say). */
export interface Walker {
  readonly startMeasure: (root: string, budget: WalkBudget) => SyncWalk<TreeMeasure>
  readonly startRemoval: (root: string, budget: WalkBudget) => SyncWalk<TreeRemoval>
}

/** What `lstat`/`fstat` says of an entry that a walk's sizes need. */
export interface SizedStats {
  readonly dev: number
  readonly ino: number
  readonly nlink: number
  readonly size: number
  readonly blocks: number
  isFile(): boolean
}

/** An entry's own sizes (FileSystem `TreeSizes`) and, for a regular file, its `fileBytes`. */
export interface OwnSizes {
  readonly bytes: number
  readonly apparentBytes: number
  readonly fileBytes: number
}

/**
 * A walk's answer from its sizes, field by field: V8 (Node 20) gives every object a spread makes with more
 * fields (`{ ...sizes, entries, complete }`) a hidden class of its own, one per tree measured.
 */
export const treeMeasure = (sizes: OwnSizes, entries: number, complete: boolean): TreeMeasure => ({
  bytes: sizes.bytes,
  apparentBytes: sizes.apparentBytes,
  fileBytes: sizes.fileBytes,
  entries,
  complete
}) satisfies Required<TreeMeasure>

export const ownSizes = (st: SizedStats): OwnSizes => ({ bytes: st.blocks * 512, apparentBytes: st.size, fileBytes: st.isFile() ? st.size : 0 })

/**
 * The sizes a walk adds up, as `du` does (FileSystem `TreeMeasure`): an inode of more than one link once per
 * walk. The set of such inodes is made at the first one, so a tree without hard links pays one comparison per
 * file. A removal counts only what it unlinked, so an inode's other names, met later with one link fewer, are
 * found in the set too.
 */
export const makeTally = () => {
  let linked: Set<string> | undefined
  const total = { bytes: 0, apparentBytes: 0, fileBytes: 0 }
  const add = (own: OwnSizes) => {
    total.bytes += own.bytes
    total.apparentBytes += own.apparentBytes
    total.fileBytes += own.fileBytes
  }
  /** Count a non-directory unless this walk counted its inode already. */
  const addEntry = (st: SizedStats) => {
    if (st.nlink > 1 || linked !== undefined) {
      const key = `${st.dev}:${st.ino}`
      if (linked?.has(key) === true) return
      if (st.nlink > 1) (linked ??= new Set()).add(key)
    }
    add(ownSizes(st))
  }
  return { total, add, addEntry }
}

/** A walk whose answer was known before it started (a file root, a vanished one). */
export const finished = <A>(value: A): SyncWalk<A> => ({ step: () => true, result: () => value, close: () => {} })

export const runToEnd = <A>(walk: SyncWalk<A>): A => {
  try {
    while (!walk.step(Number.POSITIVE_INFINITY)) {
      // each step does one directory
    }
    return walk.result()
  } finally {
    walk.close()
  }
}

/** `fn`, treating ENOENT as "already gone" (false). */
export const unlessMissing = (fn: () => void): boolean => {
  try {
    fn()
    return true
  } catch (cause) {
    if ((cause as { code?: unknown } | null)?.code === "ENOENT") return false
    throw cause
  }
}

/** The failure of a removal that met a mount point at `path` (domain/OneFileSystem.ts), shaped like a `node:fs` error. */
export const crossedMount = (path: string): Error =>
  Object.assign(new Error(CROSSED_MOUNT_DETAIL), { code: CROSSED_MOUNT_ERRNO, path, syscall: CROSSED_MOUNT_SYSCALL })

/** The failure of a walk whose re-opened directory at `path` is not the one it left (domain/WalkDepth.ts), shaped like a `node:fs` error. */
export const movedDirectory = (path: string): Error =>
  Object.assign(new Error(MOVED_DIRECTORY_DETAIL), { code: MOVED_DIRECTORY_ERRNO, path, syscall: MOVED_DIRECTORY_SYSCALL })
