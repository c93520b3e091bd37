/**
 * Which tree walks the Node layer uses, decided when its layer is built (`StorageConfig.walker`). Native
 * when the `fsat` addon loads: measuring in C (nativeMeasure.ts: small trees on the calling thread, big ones
 * on the thread pool), removing in C on the thread pool (nativeRemove.ts). Portable otherwise (or with `walker: "portable"`, `PI_STORAGE_NATIVE=0`):
 * pathWalk.ts, measuring sliced on the event loop and removing on a remover thread (remover.ts), which
 * falls back to the event loop. Both walk one file system and never through a swapped link (the portable
 * one through /proc/self/fd; without /proc it refuses to remove): pathWalk.ts, domain/OneFileSystem.ts; and
 * both walk any depth holding a window of descriptors (domain/WalkDepth.ts).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { FileSystemError } from "../../domain/Errors.js"
import { warn } from "../../services/internal/warn.js"
import type { FileSystem, TreeMeasure, TreeRemoval, WalkBudget } from "../../services/FileSystem.js"
import type { WalkerChoice } from "../../services/StorageConfig.js"
import { type Fsat, type FsatPath, fsatAddon } from "./fsat.js"
import { makeNativeMeasure, MEASURE_VERSION } from "./nativeMeasure.js"
import { makeNativeRemover, REMOVE_VERSION } from "./nativeRemove.js"
import { pathWalker } from "./pathWalk.js"
import { scopedRemover } from "./remover.js"
import { runWalk } from "./support.js"
import { nativeSnapshotCalls, type SnapshotCalls } from "./snapshotCalls.js"
import { makeNativeSync, portableSync } from "./syncFileSystem.js"

export type WalkerKind = "native" | "portable"

export interface Walks {
  readonly measureTree: (root: string, budget: WalkBudget) => Effect.Effect<TreeMeasure, FileSystemError>
  readonly removeTree: (root: string, budget: WalkBudget) => Effect.Effect<TreeRemoval, FileSystemError>
  /** The native remover's batched form (FileSystem `removeTreeEach`); absent for the portable walks. */
  readonly removeTreeEach?: NonNullable<FileSystem["Type"]["removeTreeEach"]>
  /** syncfs(2) with the addon, else an fsync of every file and directory below (syncFileSystem.ts). */
  readonly syncFileSystem: (path: string) => Effect.Effect<void, FileSystemError>
  /** A snapshot's per-directory calls in C (snapshotCalls.ts); absent: the portable ones of NodeFileSystem.ts. */
  readonly snapshot?: SnapshotCalls | undefined
  /** renameat2's exchange for the conditional replace (NodeFileSystem.ts); absent: check-then-rename. */
  readonly exchange?: ((a: FsatPath, b: FsatPath) => number) | undefined
  /** The addon, for the views' run reads in C (runReads.ts); absent for the portable walks. */
  readonly runReads?: Fsat | undefined
}

/** The walker `auto` means on this installation: native when the addon is built. */
export const availableWalkerKind = (): WalkerKind => ("fsat" in fsatAddon() ? "native" : "portable")

/** Which walker a choice means here, and why it is not the native one when it is not (`pi-storage status`). */
export const walkerInUse = (choice: WalkerChoice): { readonly kind: WalkerKind; readonly why?: string } => {
  if (choice === "portable") return { kind: "portable", why: "chosen (walker \"portable\", or PI_STORAGE_NATIVE=0)" }
  const loaded = fsatAddon()
  return "fsat" in loaded ? { kind: "native" } : { kind: "portable", why: `the native addon is ${loaded.why}` }
}

/** The walker a choice means here; `native` where the addon is not built is a defect. */
export const walkerKindOf = (choice: WalkerChoice): WalkerKind => {
  if (choice === "auto") return availableWalkerKind()
  if (choice === "portable") return "portable"
  const loaded = fsatAddon()
  if ("why" in loaded) {
    throw new Error(`pi-agent-storage: the native walker is ${loaded.why}; run \`npm install\` with a C compiler`)
  }
  return "native"
}

const measureOnEventLoop = (root: string, budget: WalkBudget) => runWalk("measureTree", root, () => pathWalker.startMeasure(root, budget))

/**
 * The C measure, or for an addon built from other sources (a stale build/) the portable one, with a
 * NativeAddonStale warning: measuring still works, more slowly, until the addon is rebuilt.
 */
export const nativeMeasureOrPortable = (fsat: Fsat): Effect.Effect<Walks["measureTree"]> =>
  Effect.suspend(() => {
    const native = makeNativeMeasure(fsat)
    if (native !== undefined) return Effect.succeed(native)
    const warning = {
      _tag: "NativeAddonStale",
      missing: `measureTree (version ${MEASURE_VERSION})`,
      message: `the native addon was built from other sources (no measureTree version ${MEASURE_VERSION}): trees are measured portably until it is rebuilt (\`npm rebuild pi-agent-storage\` where it is installed, \`npm run install\` in its checkout)`
    } as const
    return Effect.as(warn(warning), measureOnEventLoop)
  })

const nativeRemoval = (remover: ReturnType<typeof makeNativeRemover>) => ({ removeTree: remover, removeTreeEach: remover.removeTreeEach })

const removeOnEventLoop = (root: string, budget: WalkBudget) => runWalk("removeTree", root, () => pathWalker.startRemoval(root, budget))

/** The portable removal on remover threads of the scope (remover.ts). */
const portableRemoval = (removerThreads: number) =>
  Effect.map(scopedRemover(removerThreads), (remover) => ({ removeTree: remover.remove(removeOnEventLoop) }))

/**
 * The C removal, or for an addon built from other sources (a stale build/ whose removal answers file bytes
 * only) the portable one, with a NativeAddonStale warning: a removal's sizes are then still what
 * `measureTree` counts, until the addon is rebuilt.
 */
export const nativeRemovalOrPortable = (fsat: Fsat, removerThreads: number): Effect.Effect<Pick<Walks, "removeTree" | "removeTreeEach">, never, Scope.Scope> =>
  fsat.removeVersion === REMOVE_VERSION
    ? Effect.succeed(nativeRemoval(makeNativeRemover(fsat, removerThreads)))
    : Effect.zipRight(
      warn({
        _tag: "NativeAddonStale",
        missing: `removeTree (version ${REMOVE_VERSION})`,
        message: `the native addon was built from other sources (no removeTree version ${REMOVE_VERSION}): trees are removed portably until it is rebuilt (\`npm rebuild pi-agent-storage\` where it is installed, \`npm run install\` in its checkout)`
      }),
      portableRemoval(removerThreads)
    )

/**
 * The walks of a choice, with at most `removerThreads` removals at once. The portable walks' remover threads
 * belong to the scope: closing it stops them.
 */
export const makeWalks = (choice: WalkerChoice, removerThreads: number): Effect.Effect<Walks, never, Scope.Scope> =>
  Effect.gen(function*() {
    const kind = yield* Effect.try(() => walkerKindOf(choice)).pipe(Effect.orDie)
    const loaded = fsatAddon()
    if (kind === "native" && "fsat" in loaded) {
      if (typeof loaded.fsat.exchange !== "function") {
        yield* warn({
          _tag: "NativeAddonStale",
          missing: "exchange",
          message: "the native addon was built from other sources (no exchange): a conditional replace checks, then renames, leaving a window of microseconds, until it is rebuilt (`npm rebuild pi-agent-storage` where it is installed, `npm run install` in its checkout)"
        })
      }
      return {
        measureTree: yield* nativeMeasureOrPortable(loaded.fsat),
        ...(yield* nativeRemovalOrPortable(loaded.fsat, removerThreads)),
        // An addon built before syncFs existed (a stale build/) still walks natively, and syncs portably.
        syncFileSystem: typeof loaded.fsat.syncFs === "function" ? makeNativeSync(loaded.fsat) : portableSync,
        snapshot: nativeSnapshotCalls(loaded.fsat),
        // An addon built before the exchange existed: conditional replaces check, then rename.
        exchange: loaded.fsat.exchange,
        runReads: loaded.fsat
      } satisfies Walks
    }
    return {
      measureTree: measureOnEventLoop,
      ...(yield* portableRemoval(removerThreads)),
      syncFileSystem: portableSync
    } satisfies Walks
  })
