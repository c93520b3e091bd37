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
  | { readonly _tag: "Held"; readonly holder: string }

const describeHolder = (bytes: Uint8Array | null): string => {
  if (bytes === null) return "unknown holder"
  const decoded = decodeJsonBytes(Marker, bytes)
  return decoded.ok ? `${decoded.value.purpose} by pid ${decoded.value.pid} on ${decoded.value.host}` : "unreadable marker"
}

export interface MarkerJudgement {
  /** Proven dead holders only: an unreadable marker counts as held. */
  readonly alive: boolean
  readonly unreadable: boolean
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
      return { alive: true, unreadable: true, detail: `unreadable (${read.left.errno || read.left.reason}); treated as held`, bytes: null }
    }
    const decoded = decodeJsonBytes(Marker, read.right)
    const verdict = yield* judge(deps, decoded.ok ? leaseFacts(decoded.value) : { unreadable: decoded.why })
    const owner = decoded.ok ? `${describeHolder(read.right)}: ` : ""
    return { alive: verdict.alive, unreadable: !decoded.ok, detail: owner + verdict.detail, bytes: read.right }
  })

/** `dead` only when proven dead. */
const markerIsDead = (deps: Deps, path: string) =>
  Effect.map(judgeMarker(deps, path), (j) => ({ dead: j !== undefined && !j.alive, bytes: j?.bytes ?? null }))

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i])

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
      const judged = yield* markerIsDead(deps, path)
      if (!judged.dead || judged.bytes === null) return { _tag: "Held", holder: describeHolder(judged.bytes) } as const
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
      return { _tag: "Held", holder: describeHolder(movedBytes._tag === "Some" ? movedBytes.value : null) } as const
    }
    return { _tag: "Held", holder: "contended marker" } as const
  })

/** Whether a live (or unreadable, so presumed live) marker exists at `path`. */
export const liveMarkerExists = (deps: Deps, path: string): Effect.Effect<boolean> =>
  deps.fs.lstat(path).pipe(
    Effect.matchEffect({
      onFailure: (e) => Effect.succeed(e.reason !== "NotFound"),
      onSuccess: () => Effect.map(markerIsDead(deps, path), (j) => !j.dead)
    })
  )

/** Remove a marker only if its holder is proven dead. */
export const removeDeadMarker = (deps: Deps, path: string): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const judged = yield* markerIsDead(deps, path)
    if (!judged.dead) return false
    return yield* deps.fs.removeFile(path).pipe(Effect.as(true), Effect.orElseSucceed(() => false))
  })
