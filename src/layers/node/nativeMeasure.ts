/**
 * `measureTree` for the native walker: the whole walk in C (fsat.c `measureTree`), with the budgets and
 * answers of the portable walk (pathWalk.ts; the conformance suite checks both), in readdir order (the
 * portable walk sorts by name, so an entry budget may cut other entries). Every entry is reached
 * relative to its parent's open descriptor with O_NOFOLLOW, so a directory swapped for a symlink mid-walk is
 * counted as the link it became, never descended; a mount point is never descended (the measure is then
 * incomplete: domain/OneFileSystem.ts). The C walk closes every descriptor it opened before it answers.
 *
 * Small trees are measured on the calling thread (`measureTreeSync`): a prune measures hundreds of runs of a
 * few dozen entries, and a thread-pool round trip each would cost more than their syscalls. That pass stops
 * at `SYNC_ENTRIES` entries, at a directory of more names than that, and after `SYNC_MS` (a cold cache, a
 * slow disk): about one slice of the portable walk. A root whose size says it holds more names than that
 * (over 64 bytes a name) is not listed there at all: a tenant of thousands of runs went to the thread pool
 * anyway, after its first getdents had cost the event loop milliseconds. A tree it does not finish is
 * measured again from the start on the thread pool (`measureTree`), so the event loop keeps turning however
 * big the tree or slow the disk; what the first pass did is the most that is wasted. A measure on the
 * thread pool whose fiber is interrupted stops at its next entry (a flag it reads), so it does not keep a
 * pool thread walking a huge run nobody waits for; it frees what it holds either way.
 * (Before: fdWalk.ts drove these syscalls from JavaScript, one native call per entry: BENCHMARKS.md "Scan: the measuring walk in C".)
 */
import * as Effect from "effect/Effect"
import type { FileSystemError } from "../../domain/Errors.js"
import type { TreeMeasure, WalkBudget } from "../../services/FileSystem.js"
import { type Fsat, fsatError } from "./fsat.js"
import { osPath } from "./osPath.js"
import { toFileSystemError } from "./support.js"

/** Most entries a measure visits (and names a directory may hold) on the calling thread before it moves to the thread pool. */
export const SYNC_ENTRIES = 1024

/** Longest a measure walks on the calling thread before it moves to the thread pool. */
export const SYNC_MS = 2

type NativeMeasure = Required<Pick<Fsat, "measureTree" | "measureTreeSync">>

/** The measure calls' version this module calls them by (fsat.c MEASURE_VERSION: 3 answers disk usage beside apparent size). */
export const MEASURE_VERSION = 3

/**
 * The native measure, or undefined for an addon built from other sources (a stale build/: without the
 * measure calls, or with other signatures), which must not be called with these arguments.
 */
export const makeNativeMeasure = (fsat: Fsat, syncEntries = SYNC_ENTRIES, syncMs = SYNC_MS) => {
  if (fsat.measureVersion !== MEASURE_VERSION || typeof fsat.measureTree !== "function" || typeof fsat.measureTreeSync !== "function") return undefined
  const native = fsat as Fsat & NativeMeasure
  const out = new Float64Array(5)
  const failure = (root: string, errno: number, syscall: string, path: string): FileSystemError =>
    toFileSystemError("measureTree", root, fsatError(syscall, path, errno))

  const onThreadPool = (root: string, budget: WalkBudget): Effect.Effect<TreeMeasure, FileSystemError> =>
    Effect.async<TreeMeasure, FileSystemError>((resume) => {
      const cancel = new Int32Array(1)
      const queued = native.measureTree(osPath(root), budget.maxEntries, budget.maxDepth, (answer, a, b, bytes, apparentBytes, fileBytes) => {
        resume(
          answer === 0
            ? Effect.succeed({ bytes, apparentBytes, fileBytes, entries: a as number, complete: b as boolean })
            : Effect.fail(failure(root, answer, String(a), String(b)))
        )
      }, cancel)
      if (queued !== 0) {
        resume(Effect.fail(failure(root, queued, "measureTree", root)))
        return
      }
      // Interrupted: the walk stops at its next entry; its answer (ECANCELED) goes nowhere.
      return Effect.sync(() => void Atomics.store(cancel, 0, 1))
    })

  return (root: string, budget: WalkBudget): Effect.Effect<TreeMeasure, FileSystemError> =>
    Effect.suspend(() => {
      const answer = native.measureTreeSync(osPath(root), budget.maxEntries, budget.maxDepth, syncEntries, syncMs, out)
      if (answer === 0) return Effect.succeed({ bytes: out[1]!, apparentBytes: out[3]!, fileBytes: out[4]!, entries: out[0]!, complete: out[2] === 1 })
      if (answer === 1) return onThreadPool(root, budget)
      if (typeof answer === "number") return Effect.fail(failure(root, answer, "measureTree", root))
      return Effect.fail(failure(root, answer[0], answer[1], answer[2]))
    })
}
