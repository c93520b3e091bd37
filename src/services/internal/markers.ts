/**
 * Exclusive owner markers (tenant prune marker, per-run cleanup markers, the migration marker): created with
 * O_EXCL|O_NOFOLLOW, recording who holds them, reclaimed only when the liveness verdict proves the holder
 * dead — or, for a marker that cannot be read (empty, garbage, a directory or a symlink where the file
 * belongs), once it is older than the stale bound (`unreadableVerdict`, docs/safety.md "Stale unreadable markers and leases").
 */
import { sameBytes } from "../../domain/Bytes.js"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleInterval from "effect/ScheduleInterval"
import type { FileSystemError } from "../../domain/Errors.js"
import { aFileType } from "../../domain/FileTypeWords.js"
import { decodeJsonBytes, encodeJsonBytes, leaseFacts, Marker, MARKER_MAX_BYTES } from "../../domain/Formats.js"
import { readFailureIsContent } from "../../domain/Liveness.js"
import { reclaimLockPath } from "../../domain/MarkerFiles.js"
import { sameFile } from "../../domain/TierIdentity.js"
import type { FileInfo, FileType } from "../FileSystem.js"
import { type Deps, fsClockOf, judge, selfIdentity } from "./deps.js"
import { markerProbes } from "./fsClock.js"
import { lstatEach, removeFileEach, writeFileExclusiveEach } from "./each.js"
import { warn } from "./warn.js"

/** An unreadable marker the caller should report: where, what it is, and what was done with it. */
export interface UnreadableMarker {
  readonly path: string
  readonly what: string
  readonly action: "held" | "reclaimed" | "left"
}

export type MarkerAttempt =
  | {
    readonly _tag: "Acquired"
    readonly release: Effect.Effect<void>
    /** Stale unreadable markers removed on the way (to report). */
    readonly reclaimed: ReadonlyArray<UnreadableMarker>
  }
  | {
    readonly _tag: "Held"
    readonly holder: string
    /** The marker cannot be read (empty, torn by a crash mid-write, a directory, a symlink, …). */
    readonly unreadable: boolean
    /**
     * The marker path holds a directory or a symlink: nobody holds the marker, it is squatted (report it as
     * what it is, never as "another prune is running").
     */
    readonly squatted: FileType | null
    /** Judged dead (a stale unreadable marker) but could not be removed: a non-empty directory. */
    readonly stale: boolean
    /** One sentence for reports: who holds it or what is there, and why the verdict. */
    readonly detail: string
  }

/** Who holds a decoded marker, for reports. */
const holderOf = (marker: Marker): string => `${marker.purpose} by pid ${marker.pid} on ${marker.host}`

export interface MarkerJudgement {
  /** Proven dead holders and stale unreadable markers only: a fresh unreadable marker counts as held. */
  readonly alive: boolean
  readonly unreadable: boolean
  /** What is at the path (never followed). */
  readonly type: FileType
  /** Who holds it, for reports. */
  readonly holder: string
  /** Who holds it and why the verdict, for reports. */
  readonly detail: string
  /** The bytes judged (`null` when they could not be read, or for a directory or symlink). */
  readonly bytes: Uint8Array | null
  /** The lstat of the judged entry (`null` when it could not be observed). */
  readonly info: FileInfo | null
}

/**
 * Read and judge the marker at `path` (never following a link); `undefined` when there is none. The read comes
 * first (one call for the common, readable case); the marker is lstat'ed only when its mtime matters.
 */
export const judgeMarker = (deps: Deps, path: string): Effect.Effect<MarkerJudgement | undefined> =>
  Effect.gen(function*() {
    const read = yield* deps.fs.readFile(path, { maxBytes: MARKER_MAX_BYTES }).pipe(Effect.either)
    if (read._tag === "Left" && read.left.reason === "NotFound") return undefined
    const decoded = read._tag === "Right" && read.right.length > 0 ? decodeJsonBytes(Marker, read.right) : undefined
    const probes = markerProbes(path)
    if (decoded?.ok === true) {
      // A holder elsewhere is judged by the marker file's age on its file system's clock (lstat'ed by `judge`).
      const verdict = yield* judge(deps, leaseFacts(decoded.value), { path, probes })
      const holder = holderOf(decoded.value)
      return {
        alive: verdict.alive,
        unreadable: verdict.unreadable === true,
        type: "File",
        holder,
        detail: `${holder}: ${verdict.detail}`,
        bytes: read._tag === "Right" ? read.right : null,
        info: null
      }
    }
    const stat = yield* deps.fs.lstat(path).pipe(Effect.either)
    if (stat._tag === "Left" && stat.left.reason === "NotFound") return undefined
    const info = stat._tag === "Right" ? stat.right : null
    const type: FileType = info?.type ?? "Other"
    const why = info === null
      ? `marker cannot be examined (${stat._tag === "Left" ? stat.left.errno || stat.left.reason : ""})`
      : type !== "File"
      ? `${aFileType(type)} where a marker file belongs`
      : read._tag === "Left"
      ? `marker unreadable (${read.left.errno || read.left.reason})`
      : read.right.length === 0
      ? "empty marker (its writer died between create and write)"
      : `marker ${decoded !== undefined && !decoded.ok ? decoded.why : "invalid"}`
    // Unknown mtime (lstat failed), or a read error of ours rather than of the marker's content: held.
    const ourReadError = type === "File" && read._tag === "Left" && !readFailureIsContent(read.left.reason)
    const verdict = yield* judge(deps, { unreadable: why }, ourReadError ? null : { path, info, probes })
    return {
      alive: verdict.alive,
      unreadable: true,
      type,
      holder: "unreadable marker",
      detail: verdict.detail,
      bytes: type === "File" && read._tag === "Right" ? read.right : null,
      info
    }
  })

/**
 * The entry at `path` is still the one judged dead: same inode, same mtime, same type, same bytes (an empty
 * file looks like any other, and a fresh one may reuse a freed inode, never an old mtime). A readable marker
 * judged without an lstat is told apart by its bytes (pid, start time, creation time of a dead holder).
 */
const isJudgedEntry = (deps: Deps, path: string, judged: MarkerJudgement) =>
  Effect.gen(function*() {
    const info = yield* deps.fs.lstat(path).pipe(Effect.option)
    if (info._tag === "None" || info.value.type !== judged.type) return false
    if (judged.info !== null) {
      const was = judged.info
      if (!sameFile(info.value, was) || info.value.mtimeMs !== was.mtimeMs) return false
    }
    if (judged.type !== "File") return judged.info !== null
    const bytes = yield* deps.fs.readFile(path, { maxBytes: MARKER_MAX_BYTES }).pipe(Effect.option)
    return bytes._tag === "Some" && judged.bytes !== null && sameBytes(bytes.value, judged.bytes)
  })

/**
 * Create `path` exclusively with `body`; the release unlinks it only while the entry there is still the one we
 * created (same inode): a marker is never removed by path alone. `undefined` when the path exists.
 */
const createOwned = (deps: Deps, path: string, body: Uint8Array) =>
  Effect.gen(function*() {
    const created = yield* deps.fs.writeFileExclusive(path, body).pipe(
      Effect.as(true),
      Effect.catchIf((e) => e.reason === "AlreadyExists", () => Effect.succeed(false))
    )
    if (!created) return undefined
    const ours = yield* deps.fs.lstat(path).pipe(Effect.option)
    // Just written: its mtime is now on its file system's clock (judging holders elsewhere needs no probe).
    if (ours._tag === "Some") yield* fsClockOf(deps).observe(ours.value)
    return removeIfSameInode(deps, path, ours._tag === "Some" ? ours.value : null)
  })

/** Unlink `path` only if it is still the entry `was` (inode and device); otherwise warn and leave it. */
const removeIfSameInode = (deps: Deps, path: string, was: FileInfo | null): Effect.Effect<void> =>
  Effect.flatMap(Effect.either(deps.fs.lstat(path)), (now) => {
    const verdict = releaseVerdict(was, now)
    if (verdict === "gone") return Effect.void
    if (verdict !== "unlink") return leftInPlace(path, verdict.leave)
    return deps.fs.removeFile(path).pipe(Effect.catchAll((e) => leftInPlace(path, `cannot be removed (${e.reason})`)))
  })

/**
 * Whether the entry now at a marker's path (`now`, its lstat) is still the one we created (`was`): unlink
 * it; it is gone already; or leave it, and why (someone else's now, or it cannot be examined).
 */
const releaseVerdict = (was: FileInfo | null, now: Either.Either<FileInfo, FileSystemError>): "gone" | "unlink" | { readonly leave: string } => {
  if (now._tag === "Left" && now.left.reason === "NotFound") return "gone"
  if (was === null || now._tag === "Left" || !sameFile(now.right, was)) {
    return { leave: now._tag === "Left" ? `cannot be examined (${now.left.reason})` : "is no longer the marker we created" }
  }
  return "unlink"
}

const leftInPlace = (path: string, why: string) =>
  warn({ _tag: "MarkerLeftInPlace", path, reason: why, message: `marker left in place: it ${why}` })

export { isReclaimLockName, reclaimLockPath } from "../../domain/MarkerFiles.js"

/**
 * Remove a reclaim lock whose holder is proven dead (or that is unreadable and stale): lstat, judge, lstat
 * again and unlink only if the inode and mtime did not change. The window between that last lstat and the
 * unlink is narrow and only among reclaimers (a lock freed and re-created there by another reclaimer would be
 * removed); markers themselves are never removed this way.
 */
export const removeDeadReclaimLock = (
  deps: Deps,
  path: string
): Effect.Effect<{ readonly judged: MarkerJudgement | undefined; readonly outcome: ReclaimOutcome }> =>
  Effect.gen(function*() {
    const before = yield* deps.fs.lstat(path).pipe(Effect.option)
    if (before._tag === "None") return { judged: undefined, outcome: "changed" as const }
    const judged = yield* judgeMarker(deps, path)
    if (judged === undefined) return { judged, outcome: "changed" as const }
    if (judged.alive) return { judged, outcome: "left" as const }
    if (judged.type === "Directory") {
      const removed = yield* deps.fs.removeDirectory(path).pipe(Effect.either)
      return { judged, outcome: removed._tag === "Right" ? "reclaimed" as const : removed.left.reason === "NotEmpty" ? "left" as const : "changed" as const }
    }
    if (judged.type !== "File" && judged.type !== "SymbolicLink") return { judged, outcome: "left" as const }
    const after = yield* deps.fs.lstat(path).pipe(Effect.option)
    const b = before.value
    if (after._tag === "None" || !sameFile(after.value, b) || after.value.mtimeMs !== b.mtimeMs) {
      return { judged, outcome: "changed" as const }
    }
    const removed = yield* deps.fs.removeFile(path).pipe(Effect.either)
    return { judged, outcome: removed._tag === "Right" ? "reclaimed" as const : "changed" as const }
  })

export type ReclaimOutcome = "reclaimed" | "changed" | "left"

/**
 * Remove a marker judged dead. A live marker is never moved: reclaimers of one path are serialised by the
 * exclusive `<path>.reclaim` lock; under it the entry is checked to still be the one judged (inode, mtime,
 * bytes) and only then unlinked. Sound because a dead marker is removed only by a lock holder (its owner's
 * release unlinks only its own inode, and its owner is dead) and a new marker can only be created once the
 * path is empty — so what is there under the lock with the judged identity is still the dead one. A directory
 * is only ever `rmdir`ed: it goes when empty (nothing can be lost) and is left, reported, when it holds
 * anything — it cannot be proven ours. `changed`: someone else's marker (or reclaimer) was there by then.
 */
export const reclaimDeadMarker = (deps: Deps, path: string, judged: MarkerJudgement): Effect.Effect<ReclaimOutcome> =>
  Effect.gen(function*() {
    if (judged.alive) return "left"
    if (judged.type === "Directory") {
      const removed = yield* deps.fs.removeDirectory(path).pipe(Effect.either)
      if (removed._tag === "Right") return "reclaimed"
      return removed.left.reason === "NotEmpty" ? "left" : "changed"
    }
    if (judged.type !== "File" && judged.type !== "SymbolicLink") return "left"
    const lockPath = reclaimLockPath(path)
    const body = yield* markerBody(deps, "reclaim")
    // A reclaim lock that cannot be made (not merely taken) leaves the dead marker: said, never silent.
    const takeLock = createOwned(deps, lockPath, body).pipe(
      Effect.catchAll((e) => Effect.as(leftInPlace(path, `was not reclaimed: its reclaim lock cannot be made (${e.reason})`), undefined))
    )
    let unlock = yield* takeLock
    if (unlock === undefined) {
      // Another reclaimer's lock: wait for nobody; a dead one's lock is removed and taken once more.
      const stale = yield* removeDeadReclaimLock(deps, lockPath)
      if (stale.outcome !== "reclaimed") return "changed"
      unlock = yield* takeLock
      if (unlock === undefined) return "changed"
    }
    return yield* Effect.gen(function*() {
      if (!(yield* isJudgedEntry(deps, path, judged))) return "changed" as const
      const removed = yield* deps.fs.removeFile(path).pipe(Effect.either)
      if (removed._tag === "Right") return "reclaimed" as const
      // Gone meanwhile is another reclaimer's doing; any other failure leaves the dead marker, and says so.
      if (removed.left.reason !== "NotFound") yield* leftInPlace(path, `was not reclaimed: it cannot be removed (${removed.left.reason})`)
      return "changed" as const
    }).pipe(Effect.ensuring(unlock))
    // A few syscalls, never cut short: an interrupt between taking the reclaim lock and dropping it would leave
    // a live process's lock behind.
  }).pipe(Effect.uninterruptible)

const markerBody = (deps: Deps, purpose: string) =>
  Effect.map(Clock.currentTimeMillis, (createdAt) => encodeJsonBytes({ version: 1, purpose, ...selfIdentity(deps), createdAt }))

const held = (judged: MarkerJudgement | undefined, fallback: string): MarkerAttempt => ({
  _tag: "Held",
  holder: judged?.holder ?? fallback,
  unreadable: judged?.unreadable ?? false,
  squatted: judged !== undefined && (judged.type === "Directory" || judged.type === "SymbolicLink") ? judged.type : null,
  stale: judged !== undefined && !judged.alive,
  detail: judged?.detail ?? fallback
})

/**
 * Try once to take the marker at `path`. A dead holder's marker (or a stale unreadable one) is reclaimed by
 * `reclaimDeadMarker` first.
 */
export const tryAcquireMarker = (
  deps: Deps,
  path: string,
  purpose: string
): Effect.Effect<MarkerAttempt, FileSystemError> =>
  Effect.gen(function*() {
    const body = yield* markerBody(deps, purpose)
    const reclaimed: Array<UnreadableMarker> = []
    let last: MarkerJudgement | undefined
    for (let attempt = 0; attempt < 3; attempt++) {
      // The release unlinks only the marker we created (its inode), never whatever is at the path by then.
      const release = yield* createOwned(deps, path, body)
      if (release !== undefined) return { _tag: "Acquired", release, reclaimed } as const
      const judged = yield* judgeMarker(deps, path)
      if (judged === undefined) continue // released between our create and our read: try again
      last = judged
      // (A marker we could not even examine is judged alive.)
      if (judged.alive) return held(judged, "unknown holder")
      const outcome = yield* reclaimDeadMarker(deps, path, judged)
      if (outcome === "left") return held(judged, "unknown holder")
      if (outcome === "reclaimed" && judged.unreadable) reclaimed.push({ path, what: judged.detail, action: "reclaimed" })
    }
    return held(last, "contended marker")
  })

/** One path's outcome in `tryAcquireMarkers`: taken (released with the batch), held by someone, or failed. */
export type MarkerTake =
  | { readonly _tag: "Acquired"; readonly reclaimed: ReadonlyArray<UnreadableMarker> }
  | Extract<MarkerAttempt, { readonly _tag: "Held" }>
  | { readonly _tag: "Failed"; readonly error: FileSystemError }

/**
 * `tryAcquireMarker` for many paths and one purpose at once (a prune's batch of victims): every marker is
 * created exclusively in one batched call (`each.ts`) with the same body; a path already taken goes through
 * `tryAcquireMarker` alone (judged, reclaimed when dead, tried again). `release` drops every marker taken
 * here, each only while it is still the inode we created, as `tryAcquireMarker`'s release does. Run it
 * uninterruptibly with its release guaranteed (`Effect.acquireUseRelease`).
 */
export const tryAcquireMarkers = (
  deps: Deps,
  paths: ReadonlyArray<string>,
  purpose: string
): Effect.Effect<{
  readonly takes: ReadonlyArray<MarkerTake>
  /** Drop the markers taken at these indices now (a run the caller is done with); each is dropped once. */
  readonly releaseSome: (indices: ReadonlyArray<number>) => Effect.Effect<void>
  /** Drop every marker taken here not dropped yet. */
  readonly release: Effect.Effect<void>
}> =>
  Effect.gen(function*() {
    const body = yield* markerBody(deps, purpose)
    const written = yield* writeFileExclusiveEach(deps.fs, paths, body)
    const created = paths.flatMap((_, i) => (written[i]!._tag === "Right" ? [i] : []))
    // The inode each release checks against (`createOwned`); one that cannot be examined is left in place.
    const infos = yield* lstatEach(deps.fs, created.map((i) => paths[i]!))
    const first = infos.find(Either.isRight)
    if (first !== undefined) yield* fsClockOf(deps).observe(first.right)
    const ours = new Map(created.map((i, k) => [i, { path: paths[i]!, was: Either.getOrNull(infos[k]!) }]))
    const alone = new Map<number, Effect.Effect<void>>()
    const takes: Array<MarkerTake> = []
    for (const [i, answer] of written.entries()) {
      if (answer._tag === "Right") {
        takes.push({ _tag: "Acquired", reclaimed: [] })
      } else if (answer.left.reason === "AlreadyExists") {
        const attempt = yield* Effect.either(tryAcquireMarker(deps, paths[i]!, purpose))
        if (attempt._tag === "Left") takes.push({ _tag: "Failed", error: attempt.left })
        else if (attempt.right._tag === "Held") takes.push(attempt.right)
        else {
          alone.set(i, attempt.right.release)
          takes.push({ _tag: "Acquired", reclaimed: attempt.right.reclaimed })
        }
      } else {
        takes.push({ _tag: "Failed", error: answer.left })
      }
    }
    const released = new Set<number>()
    const releaseSome = (indices: ReadonlyArray<number>): Effect.Effect<void> =>
      Effect.suspend(() => {
        const now = indices.filter((i) => !released.has(i) && (ours.has(i) || alone.has(i)))
        for (const i of now) released.add(i)
        return Effect.zipRight(
          releaseCreated(deps, now.flatMap((i) => (ours.has(i) ? [ours.get(i)!] : []))),
          Effect.all(now.flatMap((i) => (alone.has(i) ? [alone.get(i)!] : [])), { discard: true })
        )
      })
    return { takes, releaseSome, release: releaseSome(paths.map((_, i) => i)) }
  })

/** `removeIfSameInode` for many markers: one batched lstat, one batched unlink of those still ours. */
const releaseCreated = (deps: Deps, markers: ReadonlyArray<{ readonly path: string; readonly was: FileInfo | null }>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const now = yield* lstatEach(deps.fs, markers.map((m) => m.path))
    const unlink: Array<string> = []
    for (const [i, marker] of markers.entries()) {
      const verdict = releaseVerdict(marker.was, now[i]!)
      if (verdict === "unlink") unlink.push(marker.path)
      else if (verdict !== "gone") yield* leftInPlace(marker.path, verdict.leave)
    }
    const removed = yield* removeFileEach(deps.fs, unlink)
    for (const [i, answer] of removed.entries()) {
      if (answer._tag === "Left") yield* leftInPlace(unlink[i]!, `cannot be removed (${answer.left.reason})`)
    }
  })

/** Whether a live (or fresh unreadable, so presumed live) marker exists at `path`. */
export const liveMarkerExists = (deps: Deps, path: string): Effect.Effect<boolean> =>
  deps.fs.lstat(path).pipe(
    Effect.matchEffect({
      onFailure: (e) => Effect.succeed(e.reason !== "NotFound"),
      // Gone between the lstat and the read still counts as live: a pruner held it after our lease was
      // written and may have acted on the run before releasing it (I1), so the acquirer backs off.
      onSuccess: () => Effect.map(judgeMarker(deps, path), (j) => j === undefined || j.alive)
    })
  )

/** Remove a marker only if its holder is proven dead (or it is unreadable and stale); what was judged, to report. */
export const removeDeadMarker = (
  deps: Deps,
  path: string
): Effect.Effect<{ readonly judged: MarkerJudgement | undefined; readonly outcome: ReclaimOutcome }> =>
  Effect.gen(function*() {
    const judged = yield* judgeMarker(deps, path)
    if (judged === undefined) return { judged, outcome: "changed" as const }
    return { judged, outcome: yield* reclaimDeadMarker(deps, path, judged) }
  })

// ---------------------------------------------------------------------------------------------------------
// waiting for a marker

/** How long a writer waits for a lock marker a live holder has (config history, state backups). */
export const DEFAULT_LOCK_WAIT_MS = 30_000

/** A try that found the marker held: the input of a wait schedule (who holds it, whether it is readable). */
export type MarkerHeld = Extract<MarkerAttempt, { readonly _tag: "Held" }>

/** The retried failure inside `acquireMarkerWaiting` (never escapes it). */
class StillHeld {
  readonly _tag = "StillHeld"
  constructor(readonly held: MarkerHeld) {}
}

/**
 * Take the marker at `path`, trying again after each pause of `schedule` while a live holder has it (the
 * schedule sees every `Held` try, so it can count unreadable ones). When the schedule ends, fail with
 * `busy(lastHeld, waitedMs)`, the caller's own typed error. A port error ends the wait at once. Succeeds with
 * the release (which unlinks only the marker this call created).
 */
export const acquireMarkerWaiting = <E>(
  deps: Deps,
  path: string,
  purpose: string,
  options: {
    readonly schedule: Schedule.Schedule<unknown, MarkerHeld>
    readonly busy: (held: MarkerHeld, waitedMs: number) => E
    /** Run before every try (making the marker's directory, say). */
    readonly beforeEachTry?: Effect.Effect<void, FileSystemError>
  }
): Effect.Effect<Effect.Effect<void>, E | FileSystemError> =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeMillis
    const once = Effect.either(Effect.zipRight(options.beforeEachTry ?? Effect.void, tryAcquireMarker(deps, path, purpose))).pipe(
      Effect.flatMap((r) =>
        Either.isRight(r) && r.right._tag === "Held" ? Effect.fail(new StillHeld(r.right)) : Effect.succeed(r)
      )
    )
    const outcome = yield* once.pipe(
      Effect.retry(Schedule.mapInput(options.schedule, (e: StillHeld) => e.held)),
      Effect.catchAll((e) => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fail(options.busy(e.held, now - started))))
    )
    if (Either.isLeft(outcome)) return yield* Effect.fail(outcome.left)
    const attempt = outcome.right
    return attempt._tag === "Acquired" ? attempt.release : Effect.void // (Held never gets here)
  })

/**
 * `schedule`'s pauses for at most `maxMs` of waiting in all: the last pause is cut short so the final try
 * falls at the bound, never after it, and the schedule ends once the bound is reached.
 */
export const waitingAtMost = (maxMs: number) =>
<Out, In>(schedule: Schedule.Schedule<Out, In>): Schedule.Schedule<[Out, Duration.Duration], In> =>
  schedule.pipe(
    Schedule.intersect(Schedule.elapsed),
    Schedule.whileOutput(([, elapsed]) => Duration.toMillis(elapsed) < maxMs),
    Schedule.modifyDelay(([, elapsed], delay) => Duration.millis(Math.min(Duration.toMillis(delay), Math.max(1, maxMs - Duration.toMillis(elapsed)))))
  )

/**
 * Ends a wait at the `n`-th try that found the marker unreadable (a torn marker is waited for, since it may
 * be a writer between create and write, but not forever); live, readable holders do not count. Output: the
 * unreadable tries so far.
 */
export const unreadableAtMost = (n: number): Schedule.Schedule<number, MarkerHeld> =>
  Schedule.makeWithState(0, (now, held: MarkerHeld, count) => {
    const next = held.unreadable ? count + 1 : count
    return Effect.succeed([next, next, next >= n ? ScheduleDecision.done : ScheduleDecision.continueWith(ScheduleInterval.after(now))] as const)
  })

/**
 * `use` under the marker at `path` (`tryAcquireMarker`; `use` sees `Held` too and decides what that means).
 * Taking the marker is uninterruptible and its release guaranteed once taken, so an interrupt (a store
 * closing during its background prune) never leaves a live process's marker behind.
 */
export const withMarker = <A, E, R>(
  deps: Deps,
  path: string,
  purpose: string,
  use: (attempt: MarkerAttempt) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | FileSystemError, R> =>
  Effect.acquireUseRelease(tryAcquireMarker(deps, path, purpose), use, (attempt) => (attempt._tag === "Acquired" ? attempt.release : Effect.void))
