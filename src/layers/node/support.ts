/**
 * What every part of the Node layer shares: errno → port error mapping, synchronous/asynchronous attempts,
 * the event loop's turn (`paced`: synchronous work in slices of `SLICE_MS`, then a yield), and the driver
 * that runs a synchronous tree walk in such slices.
 */
import * as Effect from "effect/Effect"
import { FileSystemError, reasonOfErrno } from "../../domain/Errors.js"
import { YieldsToEventLoop } from "../../services/FileSystem.js"
import { reportedPath } from "./osPath.js"
import type { SyncWalk } from "./syncWalk.js"

const errnoOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : ""

/**
 * A port error built without capturing a JavaScript stack. Failures here are answers (a missing `.leases`
 * is the usual case: a prune met two per run), not defects: the stack would only name this layer's own
 * frames, the Node error kept as `cause` has the syscall's, and Effect's Cause keeps its own trace.
 * Capturing it cost 8–9 µs of an error's 13 µs (BENCHMARKS.md "Prune: deletion in C, batched, and cheaper errors"). Built from trusted values: no schema validation.
 */
const portError = (fields: ConstructorParameters<typeof FileSystemError>[0]): FileSystemError => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return new FileSystemError(fields, { disableValidation: true })
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** Map anything a `node:fs` call threw or rejected with to the port's error, keeping the raw errno. */
export const toFileSystemError = (method: string, path: string, cause: unknown): FileSystemError => {
  if (cause instanceof FileSystemError) return cause
  const errno = errnoOf(cause)
  const named = typeof cause === "object" && cause !== null && "path" in cause && typeof cause.path === "string"
    ? cause.path
    : undefined
  // Node names a path it was given as bytes (osPath.ts) lossily: the report keeps the escaped name.
  const failedPath = named === undefined ? path : reportedPath(named, path)
  const message = cause instanceof Error ? cause.message : String(cause)
  const detail = named === undefined || failedPath === named ? message : message.split(named).join(failedPath)
  return portError({ reason: reasonOfErrno(errno), errno, method, path: failedPath, detail, cause })
}

export const failWith = (method: string, path: string, errno: string, detail: string): FileSystemError =>
  portError({ reason: reasonOfErrno(errno), errno, method, path, detail })

export const attempt = <A>(method: string, path: string, run: () => Promise<A>): Effect.Effect<A, FileSystemError> =>
  Effect.tryPromise({ try: run, catch: (cause) => toFileSystemError(method, path, cause) })

export const attemptSync = <A>(method: string, path: string, run: () => A): Effect.Effect<A, FileSystemError> =>
  Effect.try({ try: run, catch: (cause) => toFileSystemError(method, path, cause) })

/**
 * Longest stretch of synchronous work before a real macrotask yield, so timers and I/O callbacks still run.
 * By time, not by count: an unlink waits on the journal (ms each while ext4 discards), so 2048 entries could
 * hold the event loop for 180 ms and stall every acquire in the process (BENCHMARKS.md).
 */
export const SLICE_MS = 4

/**
 * The current stretch of synchronous work: when the first call of this layer since the event loop last turned
 * began (`performance.now()`), or `undefined` between turns. Process-wide, like the event loop: a chain of
 * synchronous port calls from any fiber counts as one stretch, however Effect schedules them (its fibers hand
 * over through microtasks, which never let the event loop turn).
 */
let stretchStart: number | undefined
const loopTurned = () => {
  stretchStart = undefined
}

/**
 * When the current stretch must yield: `SLICE_MS` after its start. The first call of a stretch starts it and
 * queues an immediate that ends it once the event loop reaches its check phase, i.e. once it has turned.
 */
export const sliceDeadline = (): number => {
  if (stretchStart === undefined) {
    stretchStart = performance.now()
    setImmediate(loopTurned)
  }
  return stretchStart + SLICE_MS
}

/** A macrotask yield (interruptible): the event loop turns, timers and I/O callbacks run, then this fiber goes on. */
export const yieldToEventLoop: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * `call`, after a yield to the event loop when the current stretch has used its slice: every port call of the
 * Node layer goes through this, so a program that chains thousands of synchronous calls (a prune) holds the
 * event loop for about a slice at a time, and an interrupt reaches it at the yield. A fiber that does not yield
 * (`YieldsToEventLoop` false: an acquire, a release) makes its calls at once, its time still counted in the stretch.
 */
export const paced = <A, E>(call: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.withFiberRuntime((fiber) =>
    performance.now() < sliceDeadline() || !fiber.getFiberRef(YieldsToEventLoop) ? call : Effect.zipRight(yieldToEventLoop, call)
  )

/**
 * Run a synchronous `step` (one directory's worth of work, cut short when `until` passes) again and again
 * until it reports done, in slices that end at the stretch's deadline; between slices the walk yields to the
 * event loop, so timers, I/O callbacks and other fibers run. Nothing yields inside a slice: an Effect round
 * trip per directory cost more CPU than the syscalls of a small run (BENCHMARKS.md).
 */
/** Steps until done or until the stretch's slice has passed (at least one step); true when done. */
const runSlice = (step: (until: number) => boolean): boolean => {
  const until = sliceDeadline()
  let done = step(until)
  while (!done && performance.now() < until) done = step(until)
  return done
}

export const drive = (method: string, root: string, step: (until: number) => boolean): Effect.Effect<void, FileSystemError> => {
  const loop: Effect.Effect<void, FileSystemError> = Effect.suspend(() =>
    attemptSync(method, root, () => runSlice(step)).pipe(
      Effect.flatMap((done) => (done ? Effect.void : Effect.zipRight(yieldToEventLoop, loop)))
    )
  )
  return loop
}

/**
 * Start a synchronous walk and drive it to the end in slices, closing it however it ends. The first slice
 * runs in the same synchronous step as the start: most runs are measured within it, and the Effect round
 * trips of a sliced walk cost as much as the syscalls of a small run (BENCHMARKS.md).
 */
export const runWalk = <A>(method: string, root: string, start: () => SyncWalk<A>): Effect.Effect<A, FileSystemError> =>
  Effect.suspend(() => {
    let walk: SyncWalk<A> | undefined
    try {
      walk = start()
      if (runSlice(walk.step)) {
        const result = walk.result()
        walk.close()
        return Effect.succeed(result)
      }
    } catch (cause) {
      walk?.close()
      return Effect.fail(toFileSystemError(method, root, cause))
    }
    const started = walk
    // Its answer may be a failure (a mount point met): typed, as in the first slice, never a defect.
    return Effect.flatMap(drive(method, root, started.step), () => attemptSync(method, root, started.result)).pipe(
      Effect.ensuring(Effect.sync(() => started.close()))
    )
  })
