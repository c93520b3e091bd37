/**
 * `removeTree` off the event loop for the portable walker: each request goes to a shared remover thread
 * (removerThread.ts), which runs pathWalk.ts straight through. Deleting waits on the disk (an unlink costs
 * 0.1–1 ms on a discard-mounted ext4), so on the event loop it both stalled other work and serialised a
 * prune's deletions behind its protocol work. If a thread cannot start or dies, its requests are
 * re-run on the event loop with the sliced walk: removal is idempotent, a rerun continues where it stopped.
 * (The native walker removes in C on the thread pool instead: nativeRemove.ts.)
 */
import { pathToFileURL } from "node:url"
import type { Worker } from "node:worker_threads"
import * as Effect from "effect/Effect"
import type { FileSystemError } from "../../domain/Errors.js"
import type { TreeRemoval, WalkBudget } from "../../services/FileSystem.js"
import { packageFile } from "./packageRoot.js"
import type * as Scope from "effect/Scope"
import { DEFAULT_REMOVER_THREADS } from "../../services/StorageConfig.js"
import { toFileSystemError } from "./support.js"

export interface RemovalRequest {
  readonly id: number
  readonly root: string
  readonly budget: WalkBudget
}

export type RemovalReply =
  | { readonly id: number; readonly removal: TreeRemoval }
  | { readonly id: number; readonly error: { readonly code: string; readonly path: string; readonly message: string } }

/** An idle thread is stopped after this long; the next removal starts a new one (≈ 30 ms). */
const IDLE_MS = 10_000

type Fallback = (root: string, budget: WalkBudget) => Effect.Effect<TreeRemoval, FileSystemError>

/**
 * The thread's module: the tsc build of removerThread.ts, found from the package root, so the plain ESM
 * build, the bundles (docs/install.md "Installing") and the tests (from source: `npm test` builds first; Node 20 gives worker
 * threads no TypeScript loader) all start the same file. It imports node:fs and its siblings only, no
 * Effect, so a Promise caller without an Effect install can run it.
 */
const threadUrl = (): URL => pathToFileURL(packageFile("dist", "layers", "node", "removerThread.js"))

interface Thread {
  readonly worker: Worker
  readonly pending: Map<number, (reply: RemovalReply | "lost") => void>
  idle: ReturnType<typeof setTimeout> | undefined
}


/**
 * A remover with its own threads, started on demand up to `size` (tests pass a `url` that cannot load, to
 * see the fallback). `shutdown` stops its threads; requests after it run on the event loop.
 */
export const makeRemover = (url: URL = threadUrl(), size = DEFAULT_REMOVER_THREADS) => {
  /** How many requests the threads answered, how many ran on the event loop instead, most threads at once. */
  const counts = { onThread: 0, onEventLoop: 0, threads: 0 }
  const threads: Array<Thread> = []
  let unavailable = false
  let nextId = 0

  /** An idle thread, a new one while below `size`, else the least loaded. */
  const pickThread = (): Thread | undefined => {
    if (unavailable) return undefined
    const idle = threads.find((t) => t.pending.size === 0)
    if (idle !== undefined) return idle
    if (threads.length < size) return startThread()
    return threads.reduce((least, t) => (t.pending.size < least.pending.size ? t : least))
  }

  const startThread = (): Thread | undefined => {
    let worker: Worker
    try {
      // `node:worker_threads` when the first thread starts, not at import (≈ 4 ms of every import of the library).
      worker = new (process.getBuiltinModule("node:worker_threads").Worker)(url)
    } catch {
      unavailable = true
      return undefined
    }
    const started: Thread = { worker, pending: new Map(), idle: undefined }
    const lose = () => {
      const index = threads.indexOf(started)
      if (index >= 0) threads.splice(index, 1)
      for (const resume of started.pending.values()) resume("lost")
      started.pending.clear()
    }
    worker.on("message", (reply: RemovalReply) => {
      const resume = started.pending.get(reply.id)
      started.pending.delete(reply.id)
      settleIdle(started)
      resume?.(reply)
    })
    worker.on("error", () => {
      // A thread that fails (e.g. cannot load its module) is not tried again in this process.
      unavailable = true
      lose()
    })
    worker.on("exit", lose)
    worker.unref()
    threads.push(started)
    counts.threads = Math.max(counts.threads, threads.length)
    return started
  }

  /** Keep the process alive while requests are out; stop the thread once idle for `IDLE_MS`. */
  const settleIdle = (t: Thread) => {
    if (t.idle !== undefined) clearTimeout(t.idle)
    t.idle = undefined
    if (t.pending.size > 0) {
      t.worker.ref()
      return
    }
    t.worker.unref()
    t.idle = setTimeout(() => void t.worker.terminate(), IDLE_MS)
    t.idle.unref()
  }

  const onEventLoop = (fallback: Fallback, root: string, budget: WalkBudget) =>
    Effect.suspend(() => {
      counts.onEventLoop++
      return fallback(root, budget)
    })

  const remove = (fallback: Fallback) => (root: string, budget: WalkBudget): Effect.Effect<TreeRemoval, FileSystemError> =>
    Effect.suspend(() => {
      const t = pickThread()
      if (t === undefined) return onEventLoop(fallback, root, budget)
      const id = nextId++
      const ask = Effect.async<RemovalReply | "lost">((resume) => {
        t.pending.set(id, (reply) => resume(Effect.succeed(reply)))
        settleIdle(t)
        t.worker.postMessage({ id, root, budget } satisfies RemovalRequest)
        return Effect.sync(() => {
          // Interrupted: the thread finishes this tree (it is being deleted anyway); nobody waits for it.
          t.pending.delete(id)
          settleIdle(t)
        })
      })
      return Effect.flatMap(ask, (reply) => {
        if (reply === "lost") return onEventLoop(fallback, root, budget)
        counts.onThread++
        if ("removal" in reply) return Effect.succeed(reply.removal)
        const { code, path, message } = reply.error
        return Effect.fail(toFileSystemError("removeTree", root, Object.assign(new Error(message), { code, path })))
      })
    })

  /**
   * Stop every thread (a request still out is answered "lost" and re-run on the event loop by its caller)
   * and start no more: the owner's scope is closing.
   */
  const shutdown: Effect.Effect<void> = Effect.promise(() => {
    unavailable = true
    const stopping = threads.splice(0).map((t) => {
      if (t.idle !== undefined) clearTimeout(t.idle)
      for (const resume of t.pending.values()) resume("lost")
      t.pending.clear()
      return t.worker.terminate()
    })
    // A referenced timer holds the event loop until every thread has stopped: `terminate()`'s promise alone
    // does not (nor a `ref()` of the worker), so a script whose last step awaited a store's close() saw the
    // loop run empty and exited with code 13, the close never settled (test/facade/closeSettles.test.ts).
    const holdLoop = setInterval(() => {}, 60_000)
    // A thread that already exited has nothing left to stop.
    return Promise.allSettled(stopping).finally(() => clearInterval(holdLoop))
  })

  /** Threads running now (tests: none after `shutdown`). */
  const liveThreads = (): number => threads.length

  return { remove, counts, shutdown, liveThreads }
}

export type Remover = ReturnType<typeof makeRemover>

/** A remover pool owned by the current scope: its finalizer stops the threads (no pool outlives its layer). */
export const scopedRemover = (size: number, url: URL = threadUrl()): Effect.Effect<Remover, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(() => makeRemover(url, size)), (remover) => remover.shutdown)
