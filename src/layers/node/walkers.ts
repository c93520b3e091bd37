/**
 * Which tree walks the Node layer uses, decided once per process. Native when the `fsat` addon loads:
 * measuring with fdWalk.ts (sliced on the event loop), removing in C on the thread pool (nativeRemove.ts).
 * Portable otherwise (or with `PI_STORAGE_NATIVE=0`): pathWalk.ts, measuring sliced on the event loop and
 * removing on a remover thread (remover.ts), which falls back to the event loop. Both walk one file system
 * and never through a swapped link (the portable one through /proc/self/fd; without /proc it refuses to
 * remove): pathWalk.ts, domain/OneFileSystem.ts.
 */
import type * as Effect from "effect/Effect"
import type { FileSystemError } from "../../domain/Errors.js"
import type { TreeMeasure, TreeRemoval, WalkBudget } from "../../services/FileSystem.js"
import { makeFdMeasure } from "./fdWalk.js"
import { loadFsat } from "./fsat.js"
import { makeNativeRemover } from "./nativeRemove.js"
import { pathWalker } from "./pathWalk.js"
import { sharedRemover } from "./remover.js"
import { runWalk } from "./support.js"
import { makeNativeSync, portableSync } from "./syncFileSystem.js"

export type WalkerKind = "native" | "portable"

export interface Walks {
  readonly measureTree: (root: string, budget: WalkBudget) => Effect.Effect<TreeMeasure, FileSystemError>
  readonly removeTree: (root: string, budget: WalkBudget) => Effect.Effect<TreeRemoval, FileSystemError>
  /** syncfs(2) with the addon, else an fsync of every file and directory below (syncFileSystem.ts). */
  readonly syncFileSystem: (path: string) => Effect.Effect<void, FileSystemError>
}

const loaded = loadFsat()

const nativeWalks: Walks | undefined = "fsat" in loaded
  ? ((fsat) => {
    const startMeasure = makeFdMeasure(fsat)
    return {
      measureTree: (root, budget) => runWalk("measureTree", root, () => startMeasure(root, budget)),
      removeTree: makeNativeRemover(fsat),
      // An addon built before syncFs existed (a stale build/) still walks natively, and syncs portably.
      syncFileSystem: typeof fsat.syncFs === "function" ? makeNativeSync(fsat) : portableSync
    }
  })(loaded.fsat)
  : undefined

const removeOnEventLoop = (root: string, budget: WalkBudget) => runWalk("removeTree", root, () => pathWalker.startRemoval(root, budget))

const portableWalks: Walks = {
  measureTree: (root, budget) => runWalk("measureTree", root, () => pathWalker.startMeasure(root, budget)),
  removeTree: (root, budget) => sharedRemover().remove(removeOnEventLoop)(root, budget),
  syncFileSystem: portableSync
}

/** The walks this installation uses by default. */
export const defaultWalkerKind: WalkerKind = nativeWalks === undefined ? "portable" : "native"

/** The walks of a kind; asking for the native ones where the addon is not built is a defect. */
export const walksOf = (kind: WalkerKind): Walks => {
  if (kind === "portable") return portableWalks
  if (nativeWalks === undefined) {
    throw new Error(`pi-agent-storage: the native walker is ${"why" in loaded ? loaded.why : "unavailable"}; run \`npm install\` with a C compiler`)
  }
  return nativeWalks
}
