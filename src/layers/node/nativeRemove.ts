/**
 * `removeTree` for the native walker: the whole walk in C (fsat.c `removeTree`) on the libuv thread pool.
 * Deleting waits on the disk, so it must not hold the event loop; in C it also costs what `rm -rf` costs,
 * with no JavaScript per entry, no worker thread to start and no JIT to warm per prune (BENCHMARKS.md: the worker
 * thread spent 0.8–1.1 s of CPU where `rm -rf` spends 0.5 s). At most `StorageConfig.removerThreads` removals
 * run at once (default 1: more overlap more disk waits but cost CPU, BENCHMARKS.md), so a prune's deletions queue
 * here while it quarantines its next victim, and the pool keeps threads free for the rest of Node.
 */
import * as Effect from "effect/Effect"
import type { FileSystemError } from "../../domain/Errors.js"
import type { TreeRemoval, WalkBudget } from "../../services/FileSystem.js"
import { CROSSED_MOUNT_SYSCALL } from "../../domain/OneFileSystem.js"
import { type Fsat, fsatError } from "./fsat.js"
import { DEFAULT_REMOVER_THREADS } from "../../services/StorageConfig.js"
import { toFileSystemError } from "./support.js"
import { crossedMount } from "./syncWalk.js"

export const makeNativeRemover = (fsat: Fsat, size = DEFAULT_REMOVER_THREADS) => {
  // A FIFO of removals waiting for a slot. (Effect's semaphore wakes every waiter on each release: with a
  // prune's 500 deletions queued that was 125,000 wake-ups and more CPU than the deletions themselves.)
  let running = 0
  const waiting: Array<() => void> = []
  const startNext = () => {
    while (running < size && waiting.length > 0) {
      running++
      waiting.shift()!()
    }
  }

  return (root: string, budget: WalkBudget): Effect.Effect<TreeRemoval, FileSystemError> =>
    Effect.async<TreeRemoval, FileSystemError>((resume) => {
      const start = () => {
        const queued = fsat.removeTree(root, budget.maxEntries, budget.maxDepth, (answer, a, b, removedBytes) => {
          running--
          startNext()
          if (answer === 0) resume(Effect.succeed({ removedEntries: a as number, complete: b as boolean, removedBytes }))
          else if (a === CROSSED_MOUNT_SYSCALL) resume(Effect.fail(toFileSystemError("removeTree", root, crossedMount(String(b)))))
          else resume(Effect.fail(toFileSystemError("removeTree", root, fsatError(String(a), String(b), answer))))
        })
        if (queued !== 0) {
          running--
          startNext()
          resume(Effect.fail(toFileSystemError("removeTree", root, fsatError("removeTree", root, queued))))
        }
      }
      waiting.push(start)
      startNext()
      // Interrupted while waiting: leave the queue. Once started, the walk finishes (the tree is being
      // deleted anyway) and nobody waits for its answer.
      return Effect.sync(() => {
        const index = waiting.indexOf(start)
        if (index >= 0) waiting.splice(index, 1)
      })
    })
}
