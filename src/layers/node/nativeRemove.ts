/**
 * `removeTree` for the native walker: the whole walk in C (fsat.c `removeTree`) on the libuv thread pool.
 * Deleting waits on the disk, so it must not hold the event loop; in C it also costs what `rm -rf` costs,
 * with no JavaScript per entry, no worker thread to start and no JIT to warm per prune (BENCHMARKS.md: the worker
 * thread spent 0.8–1.1 s of CPU where `rm -rf` spends 0.5 s). At most `StorageConfig.removerThreads` removals
 * run at once (default 1: more overlap more disk waits but cost CPU, BENCHMARKS.md), so a prune's deletions queue
 * here while it quarantines its next victim, and the pool keeps threads free for the rest of Node.
 *
 * Removals that waited go to C together (fsat.c `removeTrees`, up to `BATCH_MAX`): a prune queues a victim
 * every few hundred µs while one run takes milliseconds of disk, so most of its deletions travel in batches,
 * one async work, thread wake-up and event-loop return each instead of one per run (BENCHMARKS.md "Prune: deletion in C, batched, and cheaper errors"). A batch holds
 * one slot; its walks run one after the other, each answered as if alone.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { FileSystemError } from "../../domain/Errors.js"
import type { TreeRemoval, WalkBudget } from "../../services/FileSystem.js"
import { CROSSED_MOUNT_SYSCALL } from "../../domain/OneFileSystem.js"
import { type Fsat, fsatError } from "./fsat.js"
import { DEFAULT_REMOVER_THREADS } from "../../services/StorageConfig.js"
import { osPath } from "./osPath.js"
import { toFileSystemError } from "./support.js"
import { crossedMount } from "./syncWalk.js"

/**
 * Most removals handed to C at once. Small on purpose: a walk in a batch can no longer leave the queue when
 * its fiber is interrupted, and the process stays alive until the batch ends (a stress worker stopping on a
 * loaded disk waited for 64 runs' deletions); 8 keeps most of the saving (one round trip per 8 runs).
 */
export const BATCH_MAX = 8

/** The removal calls' answers this module reads (fsat.c REMOVE_VERSION: 2 answers disk usage beside apparent size). */
export const REMOVE_VERSION = 2

/** The answer of one walk: `(0, removedEntries, complete, removedBytes, removedApparentBytes)` or `(-errno, syscall, path, …)`. */
const outcome = (
  root: string,
  answer: number,
  a: number | string,
  b: boolean | string,
  removedBytes: number,
  removedApparentBytes: number
): Either.Either<TreeRemoval, FileSystemError> =>
  answer === 0
    ? Either.right({ removedEntries: a as number, complete: b as boolean, removedBytes, removedApparentBytes })
    : a === CROSSED_MOUNT_SYSCALL
    ? Either.left(toFileSystemError("removeTree", root, crossedMount(String(b))))
    : Either.left(toFileSystemError("removeTree", root, fsatError(String(a), String(b), answer)))

interface Waiting {
  readonly root: string
  readonly budget: WalkBudget
  readonly resume: (answer: Either.Either<TreeRemoval, FileSystemError>) => void
}

export const makeNativeRemover = (fsat: Fsat, size = DEFAULT_REMOVER_THREADS, batchMax = BATCH_MAX) => {
  // A FIFO of removals waiting for a slot. (Effect's semaphore wakes every waiter on each release: with a
  // prune's 500 deletions queued that was 125,000 wake-ups and more CPU than the deletions themselves.)
  let running = 0
  const waiting: Array<Waiting> = []
  /** Batches started and removals they carried (tests see the batching). */
  const counts = { batches: 0, removals: 0 }
  const batched = typeof fsat.removeTrees === "function" ? fsat.removeTrees.bind(fsat) : undefined

  const finished = () => {
    running--
    startNext()
  }

  const startOne = (w: Waiting) => {
    const queued = fsat.removeTree(osPath(w.root), w.budget.maxEntries, w.budget.maxDepth, (answer, a, b, removedBytes, removedApparentBytes) => {
      finished()
      w.resume(outcome(w.root, answer, a, b, removedBytes, removedApparentBytes))
    })
    if (queued !== 0) {
      finished()
      w.resume(Either.left(toFileSystemError("removeTree", w.root, fsatError("removeTree", w.root, queued))))
    }
  }

  const startBatch = (batch: ReadonlyArray<Waiting>) => {
    const queued = batched!(
      batch.map((w) => osPath(w.root)),
      batch.map((w) => w.budget.maxEntries),
      batch.map((w) => w.budget.maxDepth),
      (index, answer, a, b, removedBytes, removedApparentBytes) => {
        const w = batch[index]!
        // Every walk of the batch has ended before the first answer is called (one completion for the whole
        // batch): free the slot then, so an answer that throws cannot keep it taken.
        if (index === 0) finished()
        w.resume(outcome(w.root, answer, a, b, removedBytes, removedApparentBytes))
      }
    )
    if (queued !== 0) {
      finished()
      for (const w of batch) w.resume(Either.left(toFileSystemError("removeTree", w.root, fsatError("removeTrees", w.root, queued))))
    }
  }

  const startNext = () => {
    while (running < size && waiting.length > 0) {
      running++
      const batch = batched === undefined ? waiting.splice(0, 1) : waiting.splice(0, batchMax)
      counts.batches++
      counts.removals += batch.length
      if (batch.length === 1) startOne(batch[0]!)
      else startBatch(batch)
    }
  }

  /** Interrupted while waiting: leave the queue. Once started, a walk finishes (the tree is being deleted anyway) and nobody waits for its answer. */
  const leave = (ws: ReadonlyArray<Waiting>) =>
    Effect.sync(() => {
      for (const w of ws) {
        const index = waiting.indexOf(w)
        if (index >= 0) waiting.splice(index, 1)
      }
    })

  const removeTree = (root: string, budget: WalkBudget): Effect.Effect<TreeRemoval, FileSystemError> =>
    Effect.async<TreeRemoval, FileSystemError>((resume) => {
      const w: Waiting = { root, budget, resume: (answer) => resume(answer) }
      waiting.push(w)
      startNext()
      return leave([w])
    })

  /**
   * `removeTree` of each root, all queued at once (so they travel to C in batches as waiting removals do),
   * answered together in one Effect: a prune's batch of victims costs one runtime round trip, not one fiber
   * and one resumption per run.
   */
  const removeTreeEach = (roots: ReadonlyArray<string>, budget: WalkBudget): Effect.Effect<ReadonlyArray<Either.Either<TreeRemoval, FileSystemError>>> =>
    roots.length === 0 ? Effect.succeed([]) : Effect.async((resume) => {
      const answers = new Array<Either.Either<TreeRemoval, FileSystemError>>(roots.length)
      let left = roots.length
      const ws = roots.map((root, i): Waiting => ({
        root,
        budget,
        resume: (answer) => {
          answers[i] = answer
          if (--left === 0) resume(Effect.succeed(answers))
        }
      }))
      waiting.push(...ws)
      startNext()
      return leave(ws)
    })

  return Object.assign(removeTree, { counts, removeTreeEach })
}
