/**
 * Removing one owned run under the cleanup protocol (docs/safety.md "How runs stay safe": the handshake, removal):
 * take the per-run cleanup marker kept outside the run, re-read manifest and leases under it, rename the
 * run into `<tenant>/.trash/`, drop the marker, then delete the quarantined tree without following links.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import { runLeasesDir, runManifestPath, TENANT_CLEANUP_DIR, TENANT_TRASH_DIR } from "../../domain/AgentPaths.js"
import { MANIFEST_MAX_BYTES } from "../../domain/Formats.js"
import { type FileSystemError, LibraryDirUnusable } from "../../domain/Errors.js"
import { type FileInfo, type TreeRemoval, WHOLE_TREE } from "../FileSystem.js"
import { sameFile } from "../../domain/TierIdentity.js"
import { type Deps, nonce } from "./deps.js"
import { lstatEach, readDirectoryEach, readFileEach, removeTreeEach, renameEach } from "./each.js"
import { tryAcquireMarkers } from "./markers.js"
import { isActive, judgeLeaseListing, manifestVerdict, type OwnedManifest } from "./runFacts.js"
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
   * point) or `why` it stopped otherwise. `removedBytes` / `removedApparentBytes`: the disk usage and apparent
   * size of what the removal walk unlinked (all of the run when `complete`).
   */
  | {
    readonly _tag: "Removed"
    readonly complete: boolean
    readonly removedBytes: number
    readonly removedApparentBytes: number
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
 * are the same (`manifestVerdict`). A batch of one `quarantineOwnedRuns`.
 */
export const quarantineOwnedRun = (deps: Deps, run: RunAddress, known?: OwnedManifest): Effect.Effect<QuarantineOutcome> =>
  Effect.map(quarantineOwnedRuns(deps, [{ run, known }]), (outcomes) => outcomes[0]!)

const skipped = (skip: Skipped["skip"], why: string): Skipped => ({ _tag: "Skipped", skip, why })

/**
 * `quarantineOwnedRun` for a batch of runs (a prune's victims), each through the same steps in the same
 * order — take its marker, lstat it, re-read its manifest and leases, lstat it again (still the directory
 * checked), rename it, drop the marker — with each
 * step one batched port call over the runs still in (`each.ts`: one runtime step on Node, one call per run
 * in the Memory world). Per run the order is the handshake's (I1): its marker exists before its leases are
 * read, and is dropped only after its rename.
 */
export const quarantineOwnedRuns = (
  deps: Deps,
  runs: ReadonlyArray<{ readonly run: RunAddress; readonly known?: OwnedManifest | undefined }>
): Effect.Effect<ReadonlyArray<QuarantineOutcome>> =>
  Effect.acquireUseRelease(
    tryAcquireMarkers(deps, runs.map(({ run }) => cleanupMarkerPath(run.tenantDir, run.runId)), "cleanup"),
    ({ releaseSome, takes }) =>
      Effect.gen(function*() {
        const outcomes: Array<QuarantineOutcome | undefined> = takes.map((take) =>
          take._tag === "Failed"
            ? skipped("MarkerHeld", `cleanup marker: ${take.error.message}`)
            : take._tag === "Held"
            ? skipped("MarkerHeld", `cleanup marker held (${take.holder})`)
            : undefined
        )
        // Under the markers: whoever acquires from now on sees its run's marker and backs off; whoever
        // acquired before is visible in .leases now.
        const runDir = (i: number) => NodePath.join(runs[i]!.run.tenantDir, runs[i]!.run.runId)
        /** The runs still in, narrowed by each step's verdict (a skipped run is read no further). */
        let open = outcomes.flatMap((outcome, i) => (outcome === undefined ? [i] : []))
        /**
         * Apply a step's verdicts; a run it skips has its marker dropped at once, as the single-run path did,
         * so an acquirer of that run does not wait for the rest of the batch.
         */
        const keep = <A>(answers: ReadonlyArray<A>, verdict: (i: number, answer: A) => Skipped | undefined) => {
          const dropped: Array<number> = []
          open = open.filter((i, k) => {
            outcomes[i] = verdict(i, answers[k]!)
            if (outcomes[i] !== undefined) dropped.push(i)
            return outcomes[i] === undefined
          })
          return releaseSome(dropped)
        }
        const dirs = new Map<number, FileInfo>()
        yield* keep(yield* lstatEach(deps.fs, open.map(runDir)), (i, dir) => {
          if (dir._tag === "Left") return skipped("RunChanged", `run vanished (${dir.left.reason})`)
          if (dir.right.type !== "Directory") return skipped("RunChanged", "no longer a directory")
          dirs.set(i, dir.right)
          return undefined
        })
        yield* keep(yield* readFileEach(deps.fs, open.map((i) => runManifestPath(runDir(i))), { maxBytes: MANIFEST_MAX_BYTES }), (i, read) => {
          const manifest = manifestVerdict(read, runs[i]!.run, runs[i]!.known)
          return manifest._tag === "Owned"
            ? undefined
            : skipped("RunChanged", manifest._tag === "Mismatch" ? `manifest now names ${manifest.found}` : manifest.why)
        })
        const listings = yield* readDirectoryEach(deps.fs, open.map((i) => runLeasesDir(runDir(i))))
        const leases = yield* Effect.forEach(open, (i, k) => judgeLeaseListing(deps, runLeasesDir(runDir(i)), listings[k]!))
        yield* keep(leases, (_, scan) => (isActive(scan) ? skipped("LeaseAppeared", scan.problem ?? "a live lease holds it") : undefined))
        // The batch's other runs were read since this run's checks: it is renamed only if the directory at its
        // path is still the one checked (a tool that swapped it meanwhile gets nothing of its own moved).
        yield* keep(yield* lstatEach(deps.fs, open.map(runDir)), (i, now) =>
          now._tag === "Right" && sameFile(now.right, dirs.get(i)!) ? undefined : skipped("RunChanged", "replaced while it was being checked"))
        const moves: Array<readonly [string, string]> = []
        for (const i of open) {
          const { tenantDir, runId } = runs[i]!.run
          moves.push([runDir(i), NodePath.join(tenantDir, TENANT_TRASH_DIR, `${runId}.${yield* nonce}`)])
        }
        // No directory fsync: if a power cut undoes a rename, the run is still owned and the next prune retries.
        const moved = yield* renameEach(deps.fs, moves)
        for (const [k, i] of open.entries()) {
          const answer = moved[k]!
          outcomes[i] = answer._tag === "Left"
            ? skipped("QuarantineFailed", `rename into .trash failed: ${answer.left.message}`)
            : { _tag: "Moved", target: moves[k]![1] }
        }
        return outcomes as ReadonlyArray<QuarantineOutcome>
      }),
    ({ release }) => release
  )


/**
 * Delete a quarantined tree; `complete: false` (with why) when it failed, which leaves it in `.trash/` for
 * the next prune to finish. It goes whole (`WHOLE_TREE`), whatever its depth: it is already proven ours, a prune
 * measured it under its entry budget already, and a release with `delete: true` asked for exactly this run.
 */
export const deleteQuarantined = (deps: Deps, target: string): Effect.Effect<RemoveOutcome> =>
  Effect.map(Effect.either(deps.fs.removeTree(target, WHOLE_TREE)), removalOutcome)

/** `deleteQuarantined` of each target, in one batched call (`each.ts`): a prune's batch of victims. */
export const deleteQuarantinedEach = (deps: Deps, targets: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<RemoveOutcome>> =>
  Effect.map(removeTreeEach(deps.fs, targets, WHOLE_TREE), (answers) => answers.map(removalOutcome))

/** What deleting a quarantined tree answered, as the removal's outcome. */
const removalOutcome = (removal: Either.Either<TreeRemoval, FileSystemError>): RemoveOutcome =>
  removal._tag === "Left"
    ? { _tag: "Removed", complete: false, removedBytes: 0, removedApparentBytes: 0, error: removal.left }
    : removal.right.complete
    ? { _tag: "Removed", complete: true, removedBytes: removal.right.removedBytes, removedApparentBytes: removal.right.removedApparentBytes }
    : {
      _tag: "Removed",
      complete: false,
      removedBytes: removal.right.removedBytes,
      removedApparentBytes: removal.right.removedApparentBytes,
      why: `${removal.right.removedEntries} entries removed, the rest left`
    }

/** Remove one run: quarantine, then delete. `prepareRemoval` must have succeeded for its tenant. */
export const removeOwnedRun = (deps: Deps, run: RunAddress): Effect.Effect<RemoveOutcome> =>
  Effect.flatMap(quarantineOwnedRun(deps, run), (quarantined) =>
    quarantined._tag === "Skipped" ? Effect.succeed(quarantined) : deleteQuarantined(deps, quarantined.target))
