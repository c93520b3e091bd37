/**
 * What a holder recorded about its run at acquire (docs/safety.md "How runs stay safe": release verifies what it touches), so that `release()` only touches what it
 * created or joined: the run directory and its `.leases/` (device + inode), and the manifest (inode, a regular
 * file with one link). The run's own tool may do anything inside the run — swap the directory for a symlink,
 * hard-link the manifest to an outside file —; release then touches nothing and says why.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import { runLeasesDir, runManifestPath } from "../../domain/AgentPaths.js"
import { type FileIdentity, identityOf, sameFile } from "../../domain/TierIdentity.js"
import { RunChanged } from "../../domain/Errors.js"
import { aFileType } from "../../domain/FileTypeWords.js"
import type { FileInfo } from "../FileSystem.js"
import type { Deps } from "./deps.js"

export interface RunIdentity {
  readonly runDir: FileIdentity
  readonly leasesDir: FileIdentity
  readonly manifestIno: number
}

/**
 * Record the identities right after acquire; `undefined` when the run is no longer whole (start over). `known`:
 * lstats the caller already made of the run directory and `.leases/` (a join), not repeated.
 */
export const recordRunIdentity = (
  deps: Deps,
  runDir: string,
  known: { readonly dir?: FileInfo; readonly leases?: FileInfo } = {}
): Effect.Effect<RunIdentity | undefined> =>
  Effect.gen(function*() {
    const dir = known.dir ?? (yield* deps.fs.lstat(runDir))
    const leases = known.leases ?? (yield* deps.fs.lstat(runLeasesDir(runDir)))
    const manifest = yield* deps.fs.lstat(runManifestPath(runDir))
    if (dir.type !== "Directory" || leases.type !== "Directory" || manifest.type !== "File") return undefined
    return { runDir: identityOf(dir), leasesDir: identityOf(leases), manifestIno: manifest.ino }
  }).pipe(Effect.orElseSucceed(() => undefined))

export type ManifestCheck =
  /** The manifest is the file recorded at acquire. */
  | "same"
  /** A regular file with one link, but another inode: another holder replaced it whole (an older manifest without room). */
  | "replaced"

/**
 * Whether release may touch the run: `Right` with the manifest check, or `Left` with the reason it must not.
 * `manifest: false` checks the directories only (the heartbeat, which writes the lease and nothing else).
 * (Path-based: a swap between this check and the unlink is not excluded; the check stops what a tool leaves
 * in place, which is what a swapped run dir would do.)
 */
export const verifyRunIdentity = (
  deps: Deps,
  runDir: string,
  recorded: RunIdentity,
  options: { readonly manifest: boolean } = { manifest: true }
): Effect.Effect<ManifestCheck, RunChanged> =>
  Effect.gen(function*() {
    const changed = (detail: string) => Effect.fail(new RunChanged({ path: runDir, detail }))
    const look = (path: string) =>
      deps.fs.lstat(path).pipe(Effect.mapError((e) => new RunChanged({ path: runDir, detail: `${path} cannot be examined (${e.errno || e.reason})`, cause: e })))
    const dir = yield* look(runDir)
    if (dir.type !== "Directory") return yield* changed(`the run directory ${runDir} is now ${aFileType(dir.type)}, not the directory acquired`)
    if (!sameFile(dir, recorded.runDir)) return yield* changed(`the run directory ${runDir} was replaced by another directory since acquire`)
    const leasesPath = runLeasesDir(runDir)
    const leases = yield* look(leasesPath)
    if (leases.type !== "Directory" || !sameFile(leases, recorded.leasesDir)) {
      return yield* changed(`${leasesPath} is now ${leases.type === "Directory" ? "another directory" : aFileType(leases.type)}, not the one acquired`)
    }
    if (!options.manifest) return "same"
    const manifestPath = runManifestPath(runDir)
    const manifest = yield* look(manifestPath)
    if (manifest.type !== "File") return yield* changed(`the manifest ${manifestPath} is now ${aFileType(manifest.type)}`)
    if (manifest.nlink !== 1) return yield* changed(`the manifest ${manifestPath} has ${manifest.nlink} links (a hard link to a file elsewhere?)`)
    return manifest.ino === recorded.manifestIno ? "same" : "replaced"
  })
