/**
 * What a run directory says about itself: its manifest (ownership, WR3) and its leases (WR4).
 * Everything here reads without following symlinks and never writes.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import { runLeasesDir, runManifestPath } from "../../domain/AgentPaths.js"
import {
  decodeJsonBytes,
  decodeManifestBytes,
  Lease,
  LEASE_MAX_BYTES,
  type LeaseFacts,
  leaseFacts,
  Manifest,
  MANIFEST_MAX_BYTES
} from "../../domain/Formats.js"
import type { FileSystemError } from "../../domain/Errors.js"
import type { DirEntry } from "../FileSystem.js"
import { type LeaseVerdict, readFailureIsContent } from "../../domain/Liveness.js"
import { boundManifestTimes, type BoundedManifestTimes, lastUsedAt } from "../../domain/PrunePlan.js"
import { type Deps, judge } from "./deps.js"
import { leaseProbes } from "./fsClock.js"
import { sameBytes } from "../../domain/Bytes.js"
import { aFileType } from "../../domain/FileTypeWords.js"

const unreadableManifest = (e: FileSystemError): string => {
  switch (e.reason) {
    case "NotFound":
      return "no manifest"
    case "IsSymlink":
      return "manifest is a symlink"
    case "TooLarge":
      return `manifest is oversized (> ${MANIFEST_MAX_BYTES} bytes)`
    case "IsADirectory":
      return "manifest is not a regular file"
    default:
      return e.errno === "" ? `manifest unreadable (${e.detail ?? e.reason})` : `manifest unreadable (${e.errno})`
  }
}

export type ManifestRead =
  | {
    readonly _tag: "Owned"
    readonly manifest: Manifest
    /** The file's length in bytes (the `releasedAt` stamp is written in place at this length). */
    readonly length: number
    /** The bytes decoded (a re-check under a cleanup marker compares its fresh read with them). */
    readonly bytes: Uint8Array
  }
  | { readonly _tag: "Unowned"; readonly why: string }
  | { readonly _tag: "Mismatch"; readonly found: string }

export type OwnedManifest = Extract<ManifestRead, { readonly _tag: "Owned" }>

/**
 * The category, tenant and run id a run's manifest must name, written field by field: V8 (Node 20) gives
 * every object a spread makes with one more property (`{ ...address, runId }`) a hidden class of its own,
 * one per run read, and making them was a measurable part of a view's time.
 */
export const expectedIdentity = (address: { readonly category: string; readonly tenant: string }, runId: string) => ({
  category: address.category,
  tenant: address.tenant,
  runId
})

/**
 * WR3: a manifest that is missing, oversized, unreadable, invalid, a symlink or naming another path is unowned.
 * `known`: this run's manifest as an earlier read of the same `expected` address found it Owned (the prune's
 * scan, before its re-check under the cleanup marker). The file is always read again; when its bytes are
 * the same bytes, the verdict is the same (decoding is a pure function of the bytes), so it is not decoded
 * twice (BENCHMARKS.md "Prune: deletion in C, batched, and cheaper errors").
 */
export const readManifest = (
  deps: Deps,
  runDir: string,
  expected: { readonly category: string; readonly tenant: string; readonly runId: string },
  known?: OwnedManifest
): Effect.Effect<ManifestRead> =>
  // One call: the port's readFile never follows a link, refuses non-files and stops at the size cap.
  Effect.map(
    Effect.either(deps.fs.readFile(runManifestPath(runDir), { maxBytes: MANIFEST_MAX_BYTES })),
    (read) => manifestVerdict(read, expected, known)
  )

/** WR3's verdict on what reading a run's manifest answered (`readManifest`; a batch reads many at once). Pure. */
export const manifestVerdict = (
  read: Either.Either<Uint8Array, FileSystemError>,
  expected: { readonly category: string; readonly tenant: string; readonly runId: string },
  known?: OwnedManifest
): ManifestRead => {
  if (read._tag === "Left") return { _tag: "Unowned", why: unreadableManifest(read.left) }
  const bytes = read.right
  if (known !== undefined && sameBytes(bytes, known.bytes)) return known
  const decoded = decodeManifestBytes(bytes)
  if (!decoded.ok) return { _tag: "Unowned", why: `manifest ${decoded.why}` }
  const m = decoded.value
  if (m.category !== expected.category || m.tenant !== expected.tenant || m.runId !== expected.runId) {
    return { _tag: "Mismatch", found: `${m.category}/${m.tenant}/${m.runId}` }
  }
  return { _tag: "Owned", manifest: m, length: bytes.length, bytes }
}

/**
 * The manifest's timestamps for last use, far-future ones set aside (`boundManifestTimes`); the manifest's
 * mtime is looked at only then.
 */
export const manifestTimes = (deps: Deps, runDir: string, manifest: Manifest): Effect.Effect<BoundedManifestTimes> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => manifestTimesAt(deps, runDir, manifest, now))

/** `manifestTimes` judged at `now` (a scan reads the clock once per batch); no runtime step unless it must lstat. */
export const manifestTimesAt = (deps: Deps, runDir: string, manifest: Manifest, now: number): Effect.Effect<BoundedManifestTimes> => {
  const known = manifestTimesWithoutLstat(deps, manifest, now)
  if (known !== undefined) return Effect.succeed(known)
  const bound = (manifestMtimeMs: number | null) =>
    boundManifestTimes({ createdAt: manifest.createdAt, releasedAt: releasedAtOf(manifest), manifestMtimeMs, now, remoteLeaseTtlMs: deps.remoteLeaseTtlMs })
  return Effect.map(Effect.option(deps.fs.lstat(runManifestPath(runDir))), (info) => bound(info._tag === "Some" ? info.value.mtimeMs : null))
}

const releasedAtOf = (manifest: Manifest): number | undefined => ("releasedAt" in manifest ? manifest.releasedAt : undefined)

/**
 * `manifestTimesAt`'s answer when it needs no lstat (no far-future stamp), else `undefined`: a scan of
 * 20,000 runs takes no runtime step per run for it. Pure.
 */
export const manifestTimesWithoutLstat = (deps: Pick<Deps, "remoteLeaseTtlMs">, manifest: Manifest, now: number): BoundedManifestTimes | undefined => {
  // A far-future stamp is bounded by the manifest's mtime, which only an lstat tells.
  const times = boundManifestTimes({ createdAt: manifest.createdAt, releasedAt: releasedAtOf(manifest), manifestMtimeMs: null, now, remoteLeaseTtlMs: deps.remoteLeaseTtlMs })
  return times.farFuture.length === 0 ? times : undefined
}

export interface LeaseEntry {
  readonly name: string
  readonly path: string
  readonly facts: LeaseFacts | { readonly unreadable: string }
  readonly verdict: LeaseVerdict
}

export interface LeaseScan {
  readonly leases: ReadonlyArray<LeaseEntry>
  /** Something under `.leases` could not be trusted (a symlink, unreadable): treated as a live holder. */
  readonly problem: string | null
}

/** Read and judge every lease of a run. Names starting with "." are in-flight temp files, not leases. */
export const readLeases = (deps: Deps, runDir: string): Effect.Effect<LeaseScan> => {
  const dir = runLeasesDir(runDir)
  // One call: the port refuses to list through a symlink (ENOTDIR), so no lstat first.
  return Effect.flatMap(Effect.either(deps.fs.readDirectory(dir)), (listing) => judgeLeaseListing(deps, dir, listing))
}

const NO_LEASES: LeaseScan = { leases: [], problem: null }

/**
 * `judgeLeaseListing`'s answer when it reads no lease (no lease directory, one that cannot be listed, or one
 * holding only in-flight temp files), else `undefined`: most runs of a scan, answered without a runtime step. Pure.
 */
export const leasesWithoutReads = (listing: Either.Either<ReadonlyArray<DirEntry>, FileSystemError>): LeaseScan | undefined =>
  listing._tag === "Left" ? unlistedLeases(listing.left) : onlyInFlight(listing.right) ? NO_LEASES : undefined

/** A lease directory that could not be listed: none (absent), or one the scan cannot trust. */
const unlistedLeases = (e: FileSystemError): LeaseScan =>
  e.reason === "NotFound"
    ? NO_LEASES
    : { leases: [], problem: e.reason === "NotADirectory" ? ".leases is not a directory (or is a symlink)" : `.leases unreadable (${e.errno})` }

/** Nothing but in-flight temp files (dot names). */
const onlyInFlight = (entries: ReadonlyArray<DirEntry>): boolean => entries.every((entry) => entry.name.startsWith("."))

/**
 * The leases of a run from what listing its lease directory (`dir`) answered: each lease read and judged
 * (`readLeases`; a batch lists many directories at once). None is answered without a runtime step.
 */
export const judgeLeaseListing = (
  deps: Deps,
  dir: string,
  listing: Either.Either<ReadonlyArray<DirEntry>, FileSystemError>
): Effect.Effect<LeaseScan> => {
  if (listing._tag === "Left") return Effect.succeed(unlistedLeases(listing.left))
  if (onlyInFlight(listing.right)) return Effect.succeed(NO_LEASES)
  const probes = leaseProbes(NodePath.dirname(dir))
  return Effect.gen(function*() {
    const leases: Array<LeaseEntry> = []
    for (const entry of listing.right) {
      if (entry.name.startsWith(".")) continue
      const path = NodePath.join(dir, entry.name)
      let facts: LeaseFacts | { readonly unreadable: string }
      /** A read error of ours, not of the lease's content: held whatever its age. */
      let readError = false
      if (entry.type !== "File") {
        facts = { unreadable: `lease is ${aFileType(entry.type)}` }
      } else {
        const bytes = yield* deps.fs.readFile(path, { maxBytes: LEASE_MAX_BYTES }).pipe(Effect.either)
        if (bytes._tag === "Left") {
          // Vanished between listing and reading: its holder released it.
          if (bytes.left.reason === "NotFound") continue
          facts = { unreadable: `lease unreadable (${bytes.left.errno || bytes.left.reason})` }
          readError = !readFailureIsContent(bytes.left.reason)
        } else if (bytes.right.length === 0) {
          facts = { unreadable: "empty lease (its writer died between create and write)" }
        } else {
          const decoded = decodeJsonBytes(Lease, bytes.right)
          facts = decoded.ok ? leaseFacts(decoded.value) : { unreadable: `lease ${decoded.why}` }
        }
      }
      // A holder elsewhere is judged by the lease file's age on its file system's clock (lstat'ed by `judge`
      // only then); a read error of ours leaves the record's age unknown: held.
      const verdict = yield* judge(deps, facts, readError ? null : { path, probes })
      leases.push({ name: entry.name, path, facts, verdict })
    }
    return { leases, problem: null }
  })
}

/** Who holds a run: its live leases' holders (host, pid, since when), for people (`work ls`, `work rm`). */
export interface Holder {
  readonly host: string
  readonly pid: number
  /** Epoch ms the lease was taken; `null` when it does not say. */
  readonly since: number | null
}

export const liveHolders = (scan: LeaseScan): Array<Holder> =>
  scan.leases.flatMap((l) =>
    l.verdict.alive && !("unreadable" in l.facts) ? [{ host: l.facts.host, pid: l.facts.pid, since: l.facts.acquiredAt ?? null }] : []
  )

/** `host:pid` of each live holder, or why the run counts as held when no holder can be named. */
export const holderText = (scan: LeaseScan): string => {
  const named = liveHolders(scan).map((h) => `${h.host}:${h.pid}`)
  if (named.length > 0) return `held by ${named.join(", ")}`
  return scan.problem ?? scan.leases.find((l) => l.verdict.alive)?.verdict.detail ?? "held"
}

/** A run is active when any lease is alive or the lease directory cannot be trusted (fail closed). */
export const isActive = (scan: LeaseScan): boolean => scan.problem !== null || scan.leases.some((l) => l.verdict.alive)

export const newestHeartbeat = (scan: LeaseScan): number | undefined => {
  let newest: number | undefined
  for (const l of scan.leases) {
    if (!("unreadable" in l.facts) && l.verdict.unreadable !== true && (newest === undefined || l.facts.heartbeatAt > newest)) newest = l.facts.heartbeatAt
  }
  return newest
}

/** What a run's use is judged on: its name and directory, its leases, its manifest's times (far-future stamps set aside). */
export interface RunUseFacts {
  readonly name: string
  readonly path: string
  readonly leases: LeaseScan
  readonly times: BoundedManifestTimes
}

/** Whether an owned run is held, and its last use: what `status` counts and `work ls` shows of it. Pure. */
export const runUse = (run: RunUseFacts): { readonly active: boolean; readonly lastUsedAt: number } => {
  const active = isActive(run.leases)
  // Far-future manifest stamps do not count for last use (the prune's rule).
  const used = lastUsedAt({
    runId: run.name,
    path: run.path,
    createdAt: run.times.createdAt,
    releasedAt: run.times.releasedAt,
    newestHeartbeatAt: newestHeartbeat(run.leases),
    active
  })
  return { active, lastUsedAt: used }
}

/**
 * Whether an owned run has anything the doctor reports: a lease (each is judged), a lease directory it cannot
 * trust, or a far-future manifest stamp. A view that needs only the others' counts keeps no item for a run
 * without any (`ScanOptions.runItems`); test/services/NoteworthyRuns.test.ts holds the doctor's findings of
 * such a read to those of a read that keeps every run. Pure.
 */
export const runIsNoteworthy = (run: Pick<RunUseFacts, "leases" | "times">): boolean =>
  run.leases.leases.length > 0 || run.leases.problem !== null || run.times.farFuture.length > 0
