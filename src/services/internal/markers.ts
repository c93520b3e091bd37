/**
 * Exclusive owner markers (tenant prune marker, per-run cleanup markers): created with O_EXCL|O_NOFOLLOW,
 * recording who holds them, reclaimed only when the liveness verdict proves the holder dead.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { FileSystemError } from "../../domain/Errors.js"
import { decodeJsonBytes, encodeJsonBytes, leaseFacts, Marker, MARKER_MAX_BYTES } from "../../domain/Formats.js"
import { type Deps, judge, nonce, selfIdentity } from "./deps.js"

export type MarkerAttempt =
  | { readonly _tag: "Acquired"; readonly release: Effect.Effect<void> }
  | {
    readonly _tag: "Held"
    readonly holder: string
    /** The marker's bytes do not decode (e.g. torn by a crash mid-write). */
    readonly unreadable: boolean
  }

/** Who holds a decoded marker, for reports. */
const holderOf = (marker: Marker): string => `${marker.purpose} by pid ${marker.pid} on ${marker.host}`

/** Who holds a marker, from its bytes. */
const describeHolder = (bytes: Uint8Array | null): { readonly holder: string; readonly unreadable: boolean } => {
  if (bytes === null) return { holder: "unknown holder", unreadable: false }
  const decoded = decodeJsonBytes(Marker, bytes)
  return decoded.ok ? { holder: holderOf(decoded.value), unreadable: false } : { holder: "unreadable marker", unreadable: true }
}

export interface MarkerJudgement {
  /** Proven dead holders only: an unreadable marker counts as held. */
  readonly alive: boolean
  readonly unreadable: boolean
  /** Who holds it, for reports. */
  readonly holder: string
  /** Who holds it and why the verdict, for reports. */
  readonly detail: string
  /** The bytes judged (`null` when they could not be read). */
  readonly bytes: Uint8Array | null
}

/** Read and judge the marker at `path` (never following a link); `undefined` when there is none. */
export const judgeMarker = (deps: Deps, path: string): Effect.Effect<MarkerJudgement | undefined> =>
  Effect.gen(function*() {
    const read = yield* deps.fs.readFile(path, { maxBytes: MARKER_MAX_BYTES }).pipe(Effect.either)
    if (read._tag === "Left") {
      if (read.left.reason === "NotFound") return undefined
      const detail = `unreadable (${read.left.errno || read.left.reason}); treated as held`
      return { alive: true, unreadable: true, holder: "unknown holder", detail, bytes: null }
    }
    const decoded = decodeJsonBytes(Marker, read.right)
    const verdict = yield* judge(deps, decoded.ok ? leaseFacts(decoded.value) : { unreadable: decoded.why })
    if (!decoded.ok) return { alive: verdict.alive, unreadable: true, holder: "unreadable marker", detail: verdict.detail, bytes: read.right }
    const holder = holderOf(decoded.value)
    return { alive: verdict.alive, unreadable: false, holder, detail: `${holder}: ${verdict.detail}`, bytes: read.right }
  })

/** Byte-for-byte equality. */
export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i])

/**
 * Try once to take the marker at `path`. A dead holder's marker is reclaimed by renaming it aside first and
 * checking that the renamed file is the one judged dead, so two reclaimers never both win.
 */
export const tryAcquireMarker = (
  deps: Deps,
  path: string,
  purpose: string
): Effect.Effect<MarkerAttempt, FileSystemError> =>
  Effect.gen(function*() {
    const createdAt = yield* Clock.currentTimeMillis
    const body = encodeJsonBytes({ version: 1, purpose, ...selfIdentity(deps), createdAt })
    const release = deps.fs.removeFile(path).pipe(Effect.ignore)
    for (let attempt = 0; attempt < 2; attempt++) {
      const created = yield* deps.fs.writeFileExclusive(path, body).pipe(
        Effect.as(true),
        Effect.catchIf((e) => e.reason === "AlreadyExists", () => Effect.succeed(false))
      )
      if (created) return { _tag: "Acquired", release } as const
      const judged = yield* judgeMarker(deps, path)
      if (judged === undefined) continue // released between our create and our read: try again
      // `unreadable` only for bytes that do not decode: a marker we cannot even read is just held.
      if (judged.alive || judged.bytes === null) {
        return { _tag: "Held", holder: judged.holder, unreadable: judged.unreadable && judged.bytes !== null } as const
      }
      const aside = `${path}.reclaim-${yield* nonce}`
      const moved = yield* deps.fs.rename(path, aside).pipe(Effect.as(true), Effect.orElseSucceed(() => false))
      if (!moved) continue
      const movedBytes = yield* deps.fs.readFile(aside, { maxBytes: MARKER_MAX_BYTES }).pipe(Effect.option)
      if (movedBytes._tag === "Some" && sameBytes(movedBytes.value, judged.bytes)) {
        yield* deps.fs.removeFile(aside).pipe(Effect.ignore)
        continue
      }
      // We took somebody's fresh marker: put it back (link fails if yet another one appeared) and yield.
      yield* deps.fs.link(aside, path).pipe(Effect.ignore)
      yield* deps.fs.removeFile(aside).pipe(Effect.ignore)
      return { _tag: "Held", ...describeHolder(movedBytes._tag === "Some" ? movedBytes.value : null) } as const
    }
    return { _tag: "Held", holder: "contended marker", unreadable: false } as const
  })

/** Whether a live (or unreadable, so presumed live) marker exists at `path`. */
export const liveMarkerExists = (deps: Deps, path: string): Effect.Effect<boolean> =>
  deps.fs.lstat(path).pipe(
    Effect.matchEffect({
      onFailure: (e) => Effect.succeed(e.reason !== "NotFound"),
      // Gone between the lstat and the read still counts as live: a pruner held it after our lease was
      // written and may have acted on the run before releasing it (I1), so the acquirer backs off.
      onSuccess: () => Effect.map(judgeMarker(deps, path), (j) => j === undefined || j.alive)
    })
  )

/** Remove a marker only if its holder is proven dead. */
export const removeDeadMarker = (deps: Deps, path: string): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const judged = yield* judgeMarker(deps, path)
    if (judged === undefined || judged.alive) return false
    return yield* deps.fs.removeFile(path).pipe(Effect.as(true), Effect.orElseSucceed(() => false))
  })
