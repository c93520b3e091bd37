/**
 * Removing one owned run under the cleanup protocol (README "How runs stay safe": the handshake, removal):
 * take the per-run cleanup marker kept outside the run, re-read manifest and leases under it, rename the
 * run into `<tenant>/.trash/`, drop the marker, then delete the quarantined tree without following links.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import { TENANT_CLEANUP_DIR, TENANT_TRASH_DIR } from "../../domain/AgentPaths.js"
import { type FileSystemError, LibraryDirUnusable } from "../../domain/Errors.js"
import type { WalkBudget } from "../FileSystem.js"
import { type Deps, nonce } from "./deps.js"
import { tryAcquireMarker } from "./markers.js"
import { isActive, type OwnedManifest, readLeases, readManifest } from "./runFacts.js"
import { aFileType } from "../../domain/FileTypeWords.js"
import type { SkippedRun } from "../../domain/PruneReport.js"

export interface RunAddress {
  readonly tenantDir: string
  readonly category: string
  readonly tenant: string
  readonly runId: string
}

export type RemoveOutcome =
  /**
   * Quarantined; `complete: false` leaves it in `.trash/`, with the walk's `error` when it failed (a mount
   * point) or `why` it stopped otherwise. `removedBytes`: what the removal walk unlinked (all of the run when
   * `complete`).
   */
  | {
    readonly _tag: "Removed"
    readonly complete: boolean
    readonly removedBytes: number
    readonly error?: FileSystemError
    readonly why?: string
  }
  | Skipped

/** Left alone: `skip` is the report's tag for why (`SkippedRun`), `why` says it in words. */
type Skipped = { readonly _tag: "Skipped"; readonly skip: SkippedRun["_tag"]; readonly why: string }

export type QuarantineOutcome =
  | { readonly _tag: "Moved"; readonly target: string }
  | Skipped

export const ensureLibraryDir = (deps: Deps, path: string): Effect.Effect<void, LibraryDirUnusable> =>
  deps.fs.makeDirectory(path, { mode: 0o700 }).pipe(
    Effect.catchIf((e) => e.reason === "AlreadyExists", () => Effect.void),
    Effect.zipRight(deps.fs.lstat(path)),
    Effect.mapError((e) => new LibraryDirUnusable({ path, detail: e.message, cause: e })),
    Effect.flatMap((info) =>
      info.type === "Directory"
        ? Effect.void
        : Effect.fail(new LibraryDirUnusable({ path, detail: `${path} is not a directory (${aFileType(info.type)})` }))
    )
  )

export const cleanupMarkerPath = (tenantDir: string, runId: string) => NodePath.join(tenantDir, TENANT_CLEANUP_DIR, runId)

/** The tenant's `.cleanup/` and `.trash/` directories, made once before a batch of removals. */
export const prepareRemoval = (deps: Deps, tenantDir: string): Effect.Effect<void, LibraryDirUnusable> =>
  Effect.zipRight(
    ensureLibraryDir(deps, NodePath.join(tenantDir, TENANT_CLEANUP_DIR)),
    ensureLibraryDir(deps, NodePath.join(tenantDir, TENANT_TRASH_DIR))
  )

/**
 * The protocol part of a removal: under the run's cleanup marker, prove it still owned and lease-free, then
 * rename it into `.trash/`. From then on it is only ours; `prepareRemoval` must have succeeded. `known`: the
 * manifest as the caller's scan read it; the re-read under the marker reuses its verdict only when the bytes
 * are the same (`readManifest`).
 */
export const quarantineOwnedRun = (deps: Deps, run: RunAddress, known?: OwnedManifest): Effect.Effect<QuarantineOutcome> =>
  Effect.gen(function*() {
    const runDir = NodePath.join(run.tenantDir, run.runId)
    const trashDir = NodePath.join(run.tenantDir, TENANT_TRASH_DIR)
    const marker = yield* tryAcquireMarker(deps, cleanupMarkerPath(run.tenantDir, run.runId), "cleanup").pipe(Effect.either)
    if (marker._tag === "Left") return { _tag: "Skipped", skip: "MarkerHeld", why: `cleanup marker: ${marker.left.message}` } as const
    if (marker.right._tag === "Held") return { _tag: "Skipped", skip: "MarkerHeld", why: `cleanup marker held (${marker.right.holder})` } as const
    const release = marker.right.release
    // Under the marker: whoever acquires from now on sees the marker and backs off; whoever acquired before is
    // visible in .leases now.
    const quarantined = yield* Effect.gen(function*() {
      const dirInfo = yield* deps.fs.lstat(runDir).pipe(Effect.either)
      if (dirInfo._tag === "Left") return { _tag: "Skipped", skip: "RunChanged", why: `run vanished (${dirInfo.left.reason})` } as const
      if (dirInfo.right.type !== "Directory") return { _tag: "Skipped", skip: "RunChanged", why: "no longer a directory" } as const
      const manifest = yield* readManifest(deps, runDir, run, known)
      if (manifest._tag !== "Owned") {
        return { _tag: "Skipped", skip: "RunChanged", why: manifest._tag === "Mismatch" ? `manifest now names ${manifest.found}` : manifest.why } as const
      }
      const leases = yield* readLeases(deps, runDir)
      if (isActive(leases)) {
        return { _tag: "Skipped", skip: "LeaseAppeared", why: leases.problem ?? "a live lease holds it" } as const
      }
      const target = NodePath.join(trashDir, `${run.runId}.${yield* nonce}`)
      // No directory fsync: if a power cut undoes the rename, the run is still owned and the next prune retries.
      const moved = yield* deps.fs.rename(runDir, target, { sync: false }).pipe(Effect.either)
      if (moved._tag === "Left") return { _tag: "Skipped", skip: "QuarantineFailed", why: `rename into .trash failed: ${moved.left.message}` } as const
      return { _tag: "Moved", target } as const
    }).pipe(Effect.ensuring(release))
    return quarantined
  })

/**
 * A quarantined run is deleted whole, whatever its depth (it is already proven ours): a prune measured it
 * under its entry budget already, and a release with `delete: true` asked for exactly this run.
 */
const WHOLE_TREE: WalkBudget = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }

/**
 * Delete a quarantined tree; `complete: false` (with why) when it failed, which leaves it in `.trash/` for
 * the next prune to finish.
 */
export const deleteQuarantined = (deps: Deps, target: string): Effect.Effect<RemoveOutcome> =>
  deps.fs.removeTree(target, WHOLE_TREE).pipe(
    Effect.either,
    Effect.map((removal): RemoveOutcome =>
      removal._tag === "Left"
        ? { _tag: "Removed", complete: false, removedBytes: 0, error: removal.left }
        : removal.right.complete
        ? { _tag: "Removed", complete: true, removedBytes: removal.right.removedBytes }
        : {
          _tag: "Removed",
          complete: false,
          removedBytes: removal.right.removedBytes,
          why: `${removal.right.removedEntries} entries removed, the rest left`
        }
    )
  )

/** Remove one run: quarantine, then delete. `prepareRemoval` must have succeeded for its tenant. */
export const removeOwnedRun = (deps: Deps, run: RunAddress): Effect.Effect<RemoveOutcome> =>
  Effect.flatMap(quarantineOwnedRun(deps, run), (quarantined) =>
    quarantined._tag === "Skipped" ? Effect.succeed(quarantined) : deleteQuarantined(deps, quarantined.target))
