/**
 * The read model of the agent dir: one bounded, read-only scan that turns the tree into typed facts, which
 * the observers only interpret (the doctor's `findingsOf`, the inventory's `summarize` / `runListing`, the
 * pruner's plan over one tenant's items). Every reader therefore sees the same root (AgentDir resolved its
 * link), the same root-entry classes (`classifyRootEntry`), the same WR10 verdicts (`rootSafetyProblems`)
 * and the same run ownership and liveness (runFacts).
 *
 * It only calls `lstat`, `readDirectory` and `readFile`, a view's batched `readDirectoryPartsEach` (those
 * two and `measureTree` of a run directory, in one call) and, for `status`, `measureTree` of each tenant (plus
 * the Host's pid probes for lease and marker verdicts), never follows a link below the root, never writes, and
 * stops descending once its entry budget is spent.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Either from "effect/Either"
import { agentPaths, LEASES_DIR, runLeasesDir, runManifestPath, TENANT_CLEANUP_DIR, TENANT_PRUNE_MARKER, TENANT_PRUNE_STAMP, TENANT_STAGING_DIR, TENANT_TRASH_DIR, WORK_RUN_MANIFEST } from "../../domain/AgentPaths.js"
import { type ConfigViolation, configEntryViolation } from "../../domain/ConfigRedLines.js"
import type { FileSystemError } from "../../domain/Errors.js"
import { aFileType } from "../../domain/FileTypeWords.js"
import { type Manifest, MANIFEST_MAX_BYTES } from "../../domain/Formats.js"
import type { BoundedManifestTimes } from "../../domain/PrunePlan.js"
import { classifyRootEntry, type RootClassification } from "../../domain/RootEntries.js"
import { isDescendable, type RootSafetyProblem, rootSafetyProblems } from "../../domain/RootSafety.js"
import { isTenantLibraryEntry } from "../../domain/TenantEntries.js"
import { migrationConflictsDir } from "../../domain/LayoutMigration.js"
import { resolveStateDir } from "../../domain/Tiers.js"
import { TIER_NAMES, tierPaths } from "../../domain/WebPaths.js"
import type { DirectoryPartsRead, DirEntry, FileInfo, FileType, TreeMeasure, WalkBudget } from "../FileSystem.js"
import type { Deps } from "./deps.js"
import { judgeMarker, type MarkerJudgement, reclaimLockPath } from "./markers.js"
import { readDirectoryEach, readDirectoryPartsEach, readFileEach } from "./each.js"
import { pace, paceDue } from "./pace.js"
import {
  expectedIdentity,
  judgeLeaseListing,
  type LeaseScan,
  type ManifestRead,
  leasesWithoutReads,
  manifestTimesAt,
  manifestTimesWithoutLstat,
  manifestVerdict,
  type OwnedManifest,
  readLeases,
  runIsNoteworthy,
  runUse,
  type RunUseFacts
} from "./runFacts.js"

// ---------------------------------------------------------------------------------------------------------
// The budget

/** The default entry budget of one scan (the doctor's `maxEntries`). */
export const DEFAULT_SCAN_MAX_ENTRIES = 100_000

/** One entry budget for a whole scan: every listed entry and every lease counts. */
export class ScanBudget {
  scanned = 0
  truncated = false
  /** Entries the scan saw but did not take (a lower bound of what it left unread: what they hold is unknown). */
  unread = 0
  constructor(readonly maxEntries: number) {}

  /** Count `n` examined entries; false once the budget is spent (the scan then stops descending). */
  take(n = 1): boolean {
    if (this.truncated) {
      this.unread += n
      return false
    }
    if (this.scanned + n > this.maxEntries) {
      this.truncated = true
      this.unread += n
      return false
    }
    this.scanned += n
    return true
  }

  /** The first entries that fit (counted); `truncated` is set when some did not. */
  fit<A>(entries: ReadonlyArray<A>): ReadonlyArray<A> {
    const room = Math.max(0, this.maxEntries - this.scanned)
    const kept = entries.slice(0, room)
    this.take(kept.length)
    if (kept.length < entries.length) {
      this.truncated = true
      this.unread += entries.length - kept.length
    }
    return kept
  }
}

/** Something the scan could not read; it went on without it. */
export interface ScanProblem {
  readonly path: string
  readonly error: FileSystemError
}

/** The budget and the problem list of one scan, with the two reads every level uses. */
class Reader {
  readonly problems: Array<ScanProblem> = []
  constructor(readonly deps: Deps, readonly budget: ScanBudget) {}

  /** `undefined` when absent (silent) or unreadable (a problem). */
  lstat(path: string): Effect.Effect<FileInfo | undefined> {
    return this.deps.fs.lstat(path).pipe(
      Effect.catchAll((error) =>
        Effect.sync(() => {
          if (error.reason !== "NotFound") this.problems.push({ path, error })
          return undefined
        })
      )
    )
  }

  /** A listing within the budget (name order); absent → empty, unreadable → empty and a problem. */
  list(path: string): Effect.Effect<ReadonlyArray<DirEntry>> {
    return Effect.map(this.listWithin(path), (listed) => listed.entries)
  }

  /** `list`, and how many of the listing's entries the budget left out (`cut`). */
  listWithin(path: string): Effect.Effect<{ readonly entries: ReadonlyArray<DirEntry>; readonly cut: number }> {
    return this.deps.fs.readDirectory(path).pipe(
      Effect.map((all) => {
        const entries = this.budget.fit(all)
        return { entries, cut: all.length - entries.length }
      }),
      Effect.catchAll((error) =>
        Effect.sync(() => {
          if (error.reason !== "NotFound") this.problems.push({ path, error })
          return { entries: [], cut: 0 }
        })
      )
    )
  }
}

// ---------------------------------------------------------------------------------------------------------
// Tenants: the items of `work/<category>/<tenant>/` (shared with the pruner)

export interface TenantAddress {
  readonly category: string
  readonly tenant: string
}

/** What the library keeps in a tenant besides runs, as the doctor reads it. */
export type LibraryFacts =
  | { readonly kind: "stamp" }
  | { readonly kind: "marker"; readonly marker: MarkerFact }
  | { readonly kind: "cleanup"; readonly markers: ReadonlyArray<MarkerFact> }
  | { readonly kind: "trash"; readonly entries: number }
  | { readonly kind: "staging"; readonly staged: ReadonlyArray<{ readonly path: string; readonly leases: LeaseScan | null }> }
  /** A library name holding the wrong kind of entry (a file where `.trash/` belongs …). */
  | { readonly kind: "misplaced" }

export interface MarkerFact {
  readonly path: string
  readonly what: "prune marker" | "cleanup marker"
  /** `undefined`: it vanished while being read. */
  readonly judged: MarkerJudgement | undefined
  /** A squatting directory that holds entries. */
  readonly nonEmpty: boolean
}

/** One entry of a tenant directory: an owned run, something the library does not own, or its own bookkeeping. */
export type TenantItem =
  | {
    readonly _tag: "Run"
    readonly name: string
    readonly path: string
    readonly manifest: Manifest
    /**
     * The manifest as read (its bytes too): the pruner's re-check under the cleanup marker compares with it.
     * `null` for a view's read (`TenantItemOptions.view`), which never re-checks: 40,000 manifests' bytes
     * are most of what a view would keep alive.
     */
    readonly owned: OwnedManifest | null
    readonly leases: LeaseScan
    /** The manifest's times for last use, far-future stamps set aside. */
    readonly times: BoundedManifestTimes
    /** Its size as read with the manifest (`TenantItemOptions.view.measure`), when it was. */
    readonly measured?: RunMeasure | undefined
  }
  | {
    readonly _tag: "Unowned"
    readonly name: string
    readonly path: string
    readonly type: FileType
    /** Why it is not ours, as the prune report's tag. */
    readonly kind: "Symlink" | "NotADirectory" | "ManifestMismatch" | "NoManifest"
    /** Why it is not ours, in the words every report uses. */
    readonly why: string
    /** The leases of an unowned directory, when the reader asked for them (the doctor reports dead ones). */
    readonly leases: LeaseScan | null
  }
  | {
    readonly _tag: "LibraryEntry"
    readonly name: string
    readonly path: string
    readonly type: FileType
    /** Read only when the reader asked (the doctor). */
    readonly facts: LibraryFacts | null
  }

/** A view's count of a tenant's owned runs, every one of them, whether or not its item was kept. */
export interface RunTally {
  readonly runs: number
  /** Held (`runUse`): a live lease, or a lease directory it cannot trust. */
  readonly active: number
  /** The oldest last use among them (`runUse`), `null` without runs. */
  readonly oldestLastUsedAt: number | null
}

/** Count one owned run into a tally (`runUse`'s judgement). */
export const tallyRun = (tally: { runs: number; active: number; oldestLastUsedAt: number | null }, run: RunUseFacts): void => {
  const use = runUse(run)
  tally.runs++
  if (use.active) tally.active++
  if (tally.oldestLastUsedAt === null || use.lastUsedAt < tally.oldestLastUsedAt) tally.oldestLastUsedAt = use.lastUsedAt
}

/** The tally of the owned runs among `items` (a reader that kept them all). Pure. */
export const tallyOf = (items: ReadonlyArray<TenantItem>): RunTally => {
  const tally = { runs: 0, active: 0, oldestLastUsedAt: null as number | null }
  for (const item of items) if (item._tag === "Run") tallyRun(tally, item)
  return tally
}

export interface TenantItems {
  /**
   * In name order; run candidates beyond `maxRuns` are not examined. A view asking only for noteworthy runs
   * (`TenantItemOptions.view.runs`) keeps an owned run's item only when `runIsNoteworthy`; `tally` counts them all.
   */
  readonly items: ReadonlyArray<TenantItem>
  /** A view's count of every owned run examined (`null` for the pruner's read, which counts nothing). */
  readonly tally: RunTally | null
  /** Entries that are not library entries (run candidates), examined or not. */
  readonly candidates: number
  /** More candidates than `maxRuns`. */
  readonly truncated: boolean
  /** Candidates listed but never examined: the scan's entry budget (`ScanOptions.maxEntries`) ran out first. */
  readonly unread: number
}

/**
 * A run's size read in the view's one pass (`measureTree` within `cap` entries): what a measure within a
 * budget of `given` entries would answer, whenever `reusableMeasure` says so.
 */
export interface RunMeasure {
  readonly measure: TreeMeasure
  readonly cap: number
}

/**
 * The measure within a budget of `given` entries that `known` stands for, or `undefined` when that walk could
 * answer otherwise. A walk that stopped below its cap, or complete, visited every entry it could (the rest
 * lie beyond its depth or a mount point): a walk with a budget of at least as many entries visits the same
 * ones, in the same order, and answers the same. Pure.
 */
export const reusableMeasure = (known: RunMeasure | undefined, given: number): TreeMeasure | undefined =>
  known !== undefined && (known.measure.entries < known.cap || known.measure.complete) && given >= known.measure.entries ? known.measure : undefined

export interface TenantItemOptions {
  /** Run candidates examined at most (the prune's `maxScannedRuns`, the inventory's `maxRunsPerTenant`). */
  readonly maxRuns: number
  /** Read the leases of unowned directories too. */
  readonly unownedLeases?: boolean
  /** Read the library's own entries (markers, `.trash`, `.staging`) under this reader's budget. */
  readonly library?: Reader
  /** Count leases against a scan budget; once it is spent, the remaining runs are not examined. */
  readonly budget?: ScanBudget
  readonly onProgress?: (done: number, total: number) => void
  /**
   * The now manifest stamps are bounded by (`boundManifestTimes`): the pruner's is the file system's clock, which
   * it judges ages on. Absent: this reader's own clock, read per batch.
   */
  readonly now?: number
  /**
   * A view's read (status, `work ls`, the doctor; never the pruner's, whose batches and order stay its own):
   * each run directory's manifest and lease listing in one port call (`readDirectoryPartsEach`), the next
   * batches read while this one is judged, and no manifest bytes kept (`owned` is `null`). With `measure`,
   * each run's size too (at most `RUN_MEASURE_CAP` entries each, and no more than `measure.maxEntries` over
   * the tenant), for `work ls`.
   */
  readonly view?: {
    readonly measure?: WalkBudget | undefined
    /**
     * `"noteworthy"`: an owned run's item is kept only when `runIsNoteworthy` (status and the doctor, which need
     * the others only counted, in `tally`: 40,000 kept items were most of a view's memory). `"none"`: no owned
     * run's item is kept; `visit` sees each one as it is judged (`work ls` makes its row of it there). Default `"all"`.
     */
    readonly runs?: "all" | "noteworthy" | "none" | undefined
    /** Called with every owned run examined, in name order, whether its item is kept or not. */
    readonly visit?: ((run: RunItem) => void) | undefined
  }
}

/** An owned run's item. */
export type RunItem = Extract<TenantItem, { readonly _tag: "Run" }>

/** Most entries a view's pass measures of one run (a bigger run is measured on its own, in `work ls`' order). */
export const RUN_MEASURE_CAP = 512

/** Batches a view's pass reads ahead of the one being judged: the thread pool reads while JavaScript judges. */
const VIEW_BATCHES_AHEAD = 2

/** Run directories whose manifests and lease listings a scan reads in one batched call each. */
const SCAN_BATCH = 64

/**
 * The same for a view that does not measure each run (`status`, the doctor): each call is a queue operation on
 * the thread pool's lock, which on two cores its four readers often hold while descheduled, and a quarter of
 * the calls took the doctor's wall time at 20,000 runs 6–8 % lower. A view measuring each run (`work ls`)
 * keeps SCAN_BATCH: a batch of walks takes long enough that a bigger one keeps the judging waiting (7–12 %
 * slower at 256). BENCHMARKS.md "Views: later optimisation, larger batches".
 */
const VIEW_BATCH_UNMEASURED = 256

/** Runs judged between two paces (pace.ts): decoding a manifest costs about 0.1 ms, a batch of them 6. */
const RUNS_PER_PACE = 8

/** A run directory's manifest, and its lease listing when the scan needs its leases, read ahead. */
interface ReadAhead {
  readonly name: string
  readonly manifest: ManifestRead
  readonly listing: Either.Either<ReadonlyArray<DirEntry>, FileSystemError> | undefined
  readonly measured?: RunMeasure | undefined
}

/**
 * `NodePath.join(dir, name)` for the names of dir's own listing (never "", "." or "..", never holding a
 * separator), normalizing `dir` once rather than per name (a tenant may list 50,000).
 */
const childPathOf = (dir: string): ((name: string) => string) => {
  const prefix = NodePath.join(dir, "_").slice(0, -1)
  return (name) => prefix + name
}

/** Why a tenant entry that is not a directory is not a run. */
const notADirectoryWhy = (type: FileType): string =>
  type === "SymbolicLink" ? "symlink (never followed)" : `not a directory (${aFileType(type)})`

/**
 * WR3/WR4 over a tenant's listing: each candidate's ownership (its manifest), liveness (its leases) and last
 * use. The pruner, the inventory and the doctor all read a tenant through this.
 */
export const tenantItems = (
  deps: Deps,
  address: TenantAddress,
  tenantDir: string,
  entries: ReadonlyArray<DirEntry>,
  options: TenantItemOptions
): Effect.Effect<TenantItems> =>
  Effect.gen(function*() {
    // One pass over the listing (up to 50,000 names), pacing: the candidates, the first `maxRuns` of them examined.
    let candidates = 0
    const runDirs: Array<string> = []
    for (let index = 0; index < entries.length; index++) {
      if (paceDue(index)) yield* pace(deps.fs)
      const entry = entries[index]!
      if (isTenantLibraryEntry(entry.name) || candidates++ >= options.maxRuns) continue
      if (entry.type === "Directory") runDirs.push(entry.name)
    }
    const examined = Math.min(candidates, options.maxRuns)
    const items: Array<TenantItem> = []
    let done = 0
    const pathOf = childPathOf(tenantDir)
    // The run directories' manifests and lease listings are read ahead, a batch at a time, each one batched
    // port call (each.ts); the judgement below stays per run, in name order: the batch's answers are taken in
    // the order `runDirs` lists them (the run directories among the examined entries, in listing order).
    let ahead: Array<ReadAhead> = []
    let aheadAt = 0
    let readUpTo = 0
    let now = 0
    const pruneReadAhead = Effect.gen(function*() {
      const names = runDirs.slice(readUpTo, readUpTo + SCAN_BATCH)
      readUpTo += names.length
      now = options.now ?? (yield* Clock.currentTimeMillis)
      const paths = names.map((name) => NodePath.join(tenantDir, name))
      const reads = yield* readFileEach(deps.fs, paths.map(runManifestPath), { maxBytes: MANIFEST_MAX_BYTES })
      const manifests: Array<ManifestRead> = []
      for (const [k, runId] of names.entries()) {
        if (paceDue(k, RUNS_PER_PACE)) yield* pace(deps.fs)
        manifests.push(manifestVerdict(reads[k]!, expectedIdentity(address, runId)))
      }
      // Every owned run's leases are read; an unowned directory's only when the reader asked.
      const listed = names.flatMap((_, k) => (manifests[k]!._tag === "Owned" || options.unownedLeases === true ? [k] : []))
      const listings = yield* readDirectoryEach(deps.fs, listed.map((k) => runLeasesDir(paths[k]!)))
      const listingOf = new Map(listed.map((k, j) => [k, listings[j]!]))
      ahead = names.map((name, k) => ({ name, manifest: manifests[k]!, listing: listingOf.get(k) }))
      aheadAt = 0
    })
    // A view's pass: one port call per batch for each run's manifest, lease listing and (for `work ls`) size,
    // up to VIEW_BATCHES_AHEAD batches in flight while the one before is judged. The same verdicts, from the
    // same pure functions, on the same answers (each part is what the single call answers: FileSystem.ts).
    const view = options.view
    const measure = view?.measure
    const tally = view === undefined ? null : { runs: 0, active: 0, oldestLastUsedAt: null as number | null }
    const keepRuns = view?.runs ?? "all"
    /** Entries the pass may still measure in this tenant (reserved per batch in flight: never more in all). */
    let measureLeft = measure?.maxEntries ?? 0
    const inFlight: Array<{ readonly names: ReadonlyArray<string>; readonly cap: number; readonly fiber: Fiber.RuntimeFiber<ReadonlyArray<DirectoryPartsRead>> }> = []
    const viewBatch = measure === undefined ? VIEW_BATCH_UNMEASURED : SCAN_BATCH
    const startViewRead = Effect.gen(function*() {
      const names = runDirs.slice(readUpTo, readUpTo + viewBatch)
      readUpTo += names.length
      const cap = measure === undefined ? 0 : Math.min(RUN_MEASURE_CAP, Math.floor(measureLeft / names.length))
      measureLeft -= cap * names.length
      const parts = {
        file: WORK_RUN_MANIFEST,
        maxBytes: MANIFEST_MAX_BYTES,
        listing: LEASES_DIR,
        measure: cap >= 1 ? { maxEntries: cap, maxDepth: measure!.maxDepth } : undefined
      }
      const fiber = yield* Effect.fork(readDirectoryPartsEach(deps.fs, names.map(pathOf), parts))
      inFlight.push({ names, cap: cap >= 1 ? cap : 0, fiber })
    })
    const viewReadAhead = Effect.gen(function*() {
      while (inFlight.length <= VIEW_BATCHES_AHEAD && readUpTo < runDirs.length) yield* startViewRead
      const batch = inFlight.shift()!
      // Awaited, not joined: a join merges the reader's fiber refs into this fiber, and each merge lengthens the
      // stacks every later fork copies (313 batches of a 20,000-run tenant cost 200 ms of forks and joins).
      const reads = yield* Effect.flatten(Fiber.await(batch.fiber))
      now = options.now ?? (yield* Clock.currentTimeMillis)
      ahead = new Array<ReadAhead>(batch.names.length)
      aheadAt = 0
      for (const [k, runId] of batch.names.entries()) {
        if (paceDue(k, RUNS_PER_PACE)) yield* pace(deps.fs)
        const read = reads[k]!
        const manifest = manifestVerdict(read.file, expectedIdentity(address, runId))
        // Every owned run's leases are judged; an unowned directory's only when the reader asked.
        const listing = manifest._tag === "Owned" || options.unownedLeases === true ? read.listing : undefined
        const sized = read.measure?._tag === "Right" ? read.measure.right : undefined
        if (batch.cap > 0) measureLeft += batch.cap - (sized?.entries ?? 0)
        ahead[k] = { name: runId, manifest, listing, measured: sized === undefined ? undefined : { measure: sized, cap: batch.cap } }
      }
    })
    const readAhead = view === undefined ? pruneReadAhead : viewReadAhead
    let candidate = 0
    let unread = 0
    for (let index = 0; index < entries.length; index++) {
      // A tenant may list 50,000 entries, most beyond `maxRuns`: those cost a test each (no path), and the loop
      // lets the event loop turn now and then (pace.ts).
      if (paceDue(index, 4 * RUNS_PER_PACE)) yield* pace(deps.fs)
      const entry = entries[index]!
      const library = isTenantLibraryEntry(entry.name)
      // The first `maxRuns` candidates are examined, as the pass above counted them.
      if (!library && candidate++ >= options.maxRuns) continue
      const path = pathOf(entry.name)
      if (library) {
        const facts = options.library === undefined ? null : yield* libraryFacts(options.library, entry, path)
        items.push({ _tag: "LibraryEntry", name: entry.name, path, type: entry.type, facts })
        continue
      }
      options.onProgress?.(done++, examined)
      if (options.budget?.truncated === true) {
        options.budget.unread++ // listed, never examined
        unread++
        continue
      }
      if (entry.type !== "Directory") {
        items.push({
          _tag: "Unowned",
          name: entry.name,
          path,
          type: entry.type,
          kind: entry.type === "SymbolicLink" ? "Symlink" : "NotADirectory",
          why: notADirectoryWhy(entry.type),
          leases: null
        })
        continue
      }
      if (aheadAt === ahead.length) yield* readAhead
      const ahead0 = ahead[aheadAt]!
      ahead[aheadAt++] = undefined!
      // (A defect, never a file system answer: the batches are read in the order this loop takes them.)
      if (ahead0.name !== entry.name) return yield* Effect.dieMessage(`read ahead out of order: ${ahead0.name} for ${entry.name}`)
      const { manifest, listing } = ahead0
      if (manifest._tag !== "Owned") {
        const why = manifest._tag === "Mismatch" ? `manifest names ${manifest.found}` : manifest.why
        const leases = listing === undefined ? null : yield* judgeLeaseListing(deps, runLeasesDir(path), listing)
        if (leases !== null) options.budget?.take(leases.leases.length)
        items.push({ _tag: "Unowned", name: entry.name, path, type: entry.type, kind: manifest._tag === "Mismatch" ? "ManifestMismatch" : "NoManifest", why, leases })
        continue
      }
      // (An owned run's listing is always read ahead: `listed`.)
      // Most runs need no lease read and no lstat: answered without a runtime step (the same rules, runFacts.ts).
      const leases = leasesWithoutReads(listing!) ?? (yield* judgeLeaseListing(deps, runLeasesDir(path), listing!))
      options.budget?.take(leases.leases.length)
      const times = manifestTimesWithoutLstat(deps, manifest.manifest, now) ?? (yield* manifestTimesAt(deps, path, manifest.manifest, now))
      if (view === undefined) {
        items.push({ _tag: "Run", name: entry.name, path, manifest: manifest.manifest, owned: manifest, leases, times })
        continue
      }
      const run = { _tag: "Run" as const, name: entry.name, path, manifest: manifest.manifest, owned: null, leases, times, measured: ahead0.measured }
      tallyRun(tally!, run)
      view.visit?.(run)
      if (keepRuns === "all" || (keepRuns === "noteworthy" && runIsNoteworthy(run))) items.push(run)
    }
    // Reads ahead nobody will judge (the scan's budget ran out): their answers go nowhere.
    if (inFlight.length > 0) yield* Fiber.interruptAll(inFlight.map((b) => b.fiber))
    return { items, tally, candidates, truncated: candidates > options.maxRuns, unread }
  })

const markerFact = (reader: Reader, path: string, what: MarkerFact["what"]): Effect.Effect<MarkerFact> =>
  Effect.gen(function*() {
    const judged = yield* judgeMarker(reader.deps, path)
    const nonEmpty = judged?.type === "Directory" && (yield* reader.list(path)).length > 0
    return { path, what, judged, nonEmpty }
  })

const libraryFacts = (reader: Reader, entry: DirEntry, path: string): Effect.Effect<LibraryFacts> =>
  Effect.gen(function*() {
    if (entry.name === TENANT_PRUNE_STAMP) return { kind: "stamp" } as const
    if (entry.name === TENANT_PRUNE_MARKER || entry.name === reclaimLockPath(TENANT_PRUNE_MARKER)) {
      return { kind: "marker", marker: yield* markerFact(reader, path, "prune marker") } as const
    }
    if (entry.type !== "Directory") return { kind: "misplaced" } as const
    if (entry.name === TENANT_CLEANUP_DIR) {
      const markers: Array<MarkerFact> = []
      for (const marker of yield* reader.list(path)) markers.push(yield* markerFact(reader, NodePath.join(path, marker.name), "cleanup marker"))
      return { kind: "cleanup", markers } as const
    }
    if (entry.name === TENANT_TRASH_DIR) return { kind: "trash", entries: (yield* reader.list(path)).length } as const
    if (entry.name === TENANT_STAGING_DIR) {
      const staged: Array<{ readonly path: string; readonly leases: LeaseScan | null }> = []
      for (const s of yield* reader.list(path)) {
        const stagedPath = NodePath.join(path, s.name)
        staged.push({ path: stagedPath, leases: s.type === "Directory" ? yield* readLeases(reader.deps, stagedPath) : null })
      }
      return { kind: "staging", staged } as const
    }
    return { kind: "misplaced" } as const
  })

// ---------------------------------------------------------------------------------------------------------
// The whole agent dir

/** A work root, category or tenant directory and its WR10 verdict. */
export interface SafetyFact {
  readonly path: string
  readonly info: FileInfo
  readonly problems: ReadonlyArray<RootSafetyProblem>
}

export interface TenantFacts extends TenantAddress {
  readonly path: string
  readonly safety: SafetyFact
  /** `null` when it is not a real directory (never descended), or the reader asked for no items. */
  readonly items: TenantItems | null
  /** Its size, measured while its runs were read, when the reader asked (`ScanOptions.tenantSizes`). */
  readonly size?: TenantMeasure | undefined
}

/** What `measureTree(path, budget)` answered for a tenant, measured beside the scan of its runs. */
export interface TenantMeasure {
  readonly budget: WalkBudget
  readonly answer: Either.Either<TreeMeasure, FileSystemError>
}

export interface CategoryFacts {
  readonly name: string
  readonly path: string
  readonly safety: SafetyFact
  readonly tenants: ReadonlyArray<TenantFacts>
}

/** A file or symlink where only category (in `work/`) or tenant (in a category) directories belong. */
export interface WorkStray {
  readonly path: string
  readonly type: FileType
  /** `work/` or `work/<category>/`. */
  readonly where: string
}

export interface WorkFacts {
  readonly root: SafetyFact
  readonly categories: ReadonlyArray<CategoryFacts>
  readonly strays: ReadonlyArray<WorkStray>
}

export interface RootEntryFact {
  readonly name: string
  readonly path: string
  readonly type: FileType
  readonly classification: RootClassification
  /** A migration marker's verdict (`undefined` for other entries, or when it vanished). */
  readonly marker?: MarkerJudgement | undefined
}

export interface StateFacts {
  readonly path: string
  readonly info: FileInfo
  /** Names under `state/migration-conflicts/` (empty when absent). */
  readonly conflicts: ReadonlyArray<string>
}

/** An entry under an extension's config/ tier, with its red line (the one the config tier refuses with). */
export interface ConfigEntryFact {
  readonly path: string
  readonly name: string
  readonly type: "File" | "Directory"
  readonly violation: ConfigViolation | null
}

/** An agent extension's config tier, `config/extensions/<ns>/`, as the doctor reads it (DR2, agent side). */
export interface AgentExtensionConfigFacts {
  readonly namespace: string
  readonly dir: string
  readonly config: ReadonlyArray<ConfigEntryFact>
}

export interface ExtensionDataFacts {
  readonly id: string
  readonly dir: string
  readonly entries: ReadonlyArray<DirEntry>
  /** `data/<id>/config/state/`, when both it and `data/<id>/state/` are directories (split state writes). */
  readonly splitState: string | null
  readonly config: ReadonlyArray<ConfigEntryFact>
  /** `data/<id>/state/migration-conflicts/`, where a migration plan keeps what collided. */
  readonly conflictsDir: string
  /** The names under `conflictsDir` (empty when absent). */
  readonly conflicts: ReadonlyArray<string>
}

export interface WebDataFacts {
  readonly root: string
  readonly extensions: ReadonlyArray<ExtensionDataFacts>
  /** Entries of the root that are symlinks (an extension's directory kept on another disk): never read through. */
  readonly links: ReadonlyArray<{ readonly name: string; readonly path: string; readonly leadsToDirectory: boolean }>
}

export type RootStatus =
  | { readonly _tag: "Directory" }
  | { readonly _tag: "Missing" }
  | { readonly _tag: "NotADirectory"; readonly type: FileType }
  | { readonly _tag: "Unreadable"; readonly error: FileSystemError }

export interface AgentDirFacts {
  /** The directory scanned (AgentDir's `path`, its root link resolved). */
  readonly path: string
  readonly status: RootStatus
  readonly entries: ReadonlyArray<RootEntryFact>
  readonly state: StateFacts | null
  readonly work: WorkFacts | null
  /** Namespaces with a directory under `config/extensions/`, `state/extensions/` and `cache/extensions/`. */
  readonly extensions: { readonly config: ReadonlyArray<string>; readonly state: ReadonlyArray<string>; readonly cache: ReadonlyArray<string> }
  /** Each agent extension's config tier with its entries judged by the red lines (asked for by `extensionConfig`). */
  readonly extensionConfig: ReadonlyArray<AgentExtensionConfigFacts>
  readonly webData: WebDataFacts | null
  readonly problems: ReadonlyArray<ScanProblem>
  readonly scanned: number
  readonly truncated: boolean
  /** The scan's entry budget, and the entries it saw but left unread once that was spent (`truncated`). */
  readonly maxEntries: number
  readonly unread: number
}

/** What a reader needs from the scan; each part costs reads only when asked for. */
export interface ScanOptions {
  readonly maxEntries?: number
  /** Root entries classified (and migration markers judged). */
  readonly rootEntries?: boolean
  /** `state/` and its preserved migration conflicts. */
  readonly state?: boolean
  /** The work tree: `true` for every tenant, or a filter (a category, a tenant of it). */
  readonly work?: boolean | { readonly category?: string | undefined; readonly tenant?: string | undefined }
  /** `false`: find the tenants without reading what they hold (their `items` are then `null`). */
  readonly items?: boolean
  /** Run candidates examined per tenant (default: all the budget allows). */
  readonly maxRunsPerTenant?: number
  /**
   * `"noteworthy"`: keep an owned run's item only when `runIsNoteworthy`, the rest counted in `TenantItems.tally`
   * (status and the doctor); `"none"`: keep none (`work ls`, which makes its rows in `visitRun`). Default `"all"`.
   */
  readonly runItems?: "all" | "noteworthy" | "none"
  /** Called with each tenant's owned runs as they are judged (`TenantItemOptions.view.visit`), kept or not. */
  readonly visitRun?: ((tenant: TenantAddress, run: RunItem) => void) | undefined
  /**
   * Read each run's size with its manifest, within this budget per tenant (`work ls`: its rows' sizes,
   * `Run.measured`, used where `reusableMeasure` says they are what its own walks would answer).
   */
  readonly runSizes?: WalkBudget | undefined
  /**
   * Measure each tenant read (`measureTree` within this budget) while its runs are read (`status`: its
   * tenants' sizes, the walk on the thread pool while the scan judges; `TenantFacts.size`).
   */
  readonly tenantSizes?: WalkBudget | undefined
  /** Read leases of unowned directories and the library's own tenant entries (the doctor). */
  readonly details?: boolean
  /** Namespaces of the agent extensions' config/state/cache tiers. */
  readonly extensions?: boolean
  /** What each agent extension's `config/extensions/<ns>/` holds, judged by the config red lines (the doctor). */
  readonly extensionConfig?: boolean
  /** The web host's extension data root (DR2). */
  readonly webDataRoot?: string | undefined
}

/** How deep the scan looks inside an extension's config/ tier. */
const CONFIG_MAX_DEPTH = 16

const safetyFact = (deps: Deps, path: string, info: FileInfo): SafetyFact => ({ path, info, problems: rootSafetyProblems(info, deps.host.uid) })

const scanTenant = (reader: Reader, options: ScanOptions, address: TenantAddress, path: string, safety: SafetyFact) =>
  Effect.gen(function*() {
    if (!isDescendable(safety.info) || options.items === false) return { ...address, path, safety, items: null }
    const budget = options.tenantSizes
    // The tenant's walk runs beside the reads of its runs (awaited, not joined: no fiber refs to merge).
    const sizing = budget === undefined ? undefined : yield* Effect.fork(Effect.either(reader.deps.fs.measureTree(path, budget)))
    const { entries, cut } = yield* reader.listWithin(path)
    const examined = yield* tenantItems(reader.deps, address, path, entries, {
      maxRuns: options.maxRunsPerTenant ?? Number.MAX_SAFE_INTEGER,
      budget: reader.budget,
      view: {
        measure: options.runSizes,
        runs: options.runItems,
        visit: options.visitRun === undefined ? undefined : (run) => options.visitRun!(address, run)
      },
      ...(options.details === true ? { unownedLeases: true, library: reader } : {})
    })
    // Entries the budget cut from the listing itself were never examined either.
    const items = cut === 0 ? examined : { ...examined, unread: examined.unread + cut }
    if (sizing === undefined || budget === undefined) return { ...address, path, safety, items }
    return { ...address, path, safety, items, size: { budget, answer: yield* Effect.flatten(Fiber.await(sizing)) } }
  })

const scanWork = (reader: Reader, workRoot: string, options: ScanOptions): Effect.Effect<WorkFacts | null> =>
  Effect.gen(function*() {
    const filter = typeof options.work === "object" ? options.work : {}
    const rootInfo = yield* reader.lstat(workRoot)
    if (rootInfo === undefined) return null
    const root = safetyFact(reader.deps, workRoot, rootInfo)
    const strays: Array<WorkStray> = []
    const categories: Array<CategoryFacts> = []
    if (!isDescendable(rootInfo)) return { root, categories, strays }
    // Names from a listing carry their type; a name from the filter is looked at by lstat alone.
    const categoryEntries = filter.category !== undefined
      ? [{ name: filter.category, type: "Directory" as const }]
      : yield* reader.list(workRoot)
    for (const category of categoryEntries) {
      const categoryDir = NodePath.join(workRoot, category.name)
      if (category.type !== "Directory" && category.type !== "SymbolicLink") {
        strays.push({ path: categoryDir, type: category.type, where: "work/" })
        continue
      }
      const categoryInfo = yield* reader.lstat(categoryDir)
      if (categoryInfo === undefined) continue
      const safety = safetyFact(reader.deps, categoryDir, categoryInfo)
      const tenants: Array<TenantFacts> = []
      if (isDescendable(categoryInfo)) {
        const tenantEntries = filter.tenant !== undefined
          ? [{ name: filter.tenant, type: "Directory" as const }]
          : yield* reader.list(categoryDir)
        for (const tenant of tenantEntries) {
          const tenantDir = NodePath.join(categoryDir, tenant.name)
          if (tenant.type !== "Directory" && tenant.type !== "SymbolicLink") {
            strays.push({ path: tenantDir, type: tenant.type, where: `work/${category.name}/` })
            continue
          }
          const tenantInfo = yield* reader.lstat(tenantDir)
          if (tenantInfo === undefined) continue
          const address = { category: category.name, tenant: tenant.name }
          tenants.push(yield* scanTenant(reader, options, address, tenantDir, safetyFact(reader.deps, tenantDir, tenantInfo)))
        }
      }
      categories.push({ name: category.name, path: categoryDir, safety, tenants })
    }
    return { root, categories, strays }
  })

const scanRootEntries = (reader: Reader, agentDir: string) =>
  Effect.gen(function*() {
    const out: Array<RootEntryFact> = []
    for (const entry of yield* reader.list(agentDir)) {
      const path = NodePath.join(agentDir, entry.name)
      const classification = classifyRootEntry(entry.name)
      const marker = classification._tag === "MigrationMarker" ? yield* judgeMarker(reader.deps, path) : undefined
      out.push({ name: entry.name, path, type: entry.type, classification, marker })
    }
    return out
  })

const scanState = (reader: Reader, agentDir: string): Effect.Effect<StateFacts | null> =>
  Effect.gen(function*() {
    const paths = agentPaths(agentDir)
    const info = yield* reader.lstat(paths.stateDir())
    if (info === undefined) return null
    if (info.type !== "Directory") return { path: paths.stateDir(), info, conflicts: [] }
    const conflictsInfo = yield* reader.lstat(paths.migrationConflictsDir)
    const conflicts = conflictsInfo?.type === "Directory" ? (yield* reader.list(paths.migrationConflictsDir)).map((e) => e.name) : []
    return { path: paths.stateDir(), info, conflicts }
  })

const subdirectories = (reader: Reader, path: string) =>
  Effect.map(reader.list(path), (entries) => entries.filter((e) => e.type === "Directory").map((e) => e.name))

const scanConfigTree = (reader: Reader, dir: string, depth: number, out: Array<ConfigEntryFact>): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (const entry of yield* reader.list(dir)) {
      const path = NodePath.join(dir, entry.name)
      if (entry.type !== "Directory" && entry.type !== "File") continue
      // A file's size only when its name passes (the red lines' own order).
      let violation = configEntryViolation({ name: entry.name, type: entry.type })
      if (violation === null && entry.type === "File") {
        const info = yield* reader.lstat(path)
        if (info !== undefined && info.type === "File") violation = configEntryViolation({ name: entry.name, type: "File", size: info.size })
      }
      out.push({ path, name: entry.name, type: entry.type, violation })
      if (violation === null && entry.type === "Directory" && depth < CONFIG_MAX_DEPTH) yield* scanConfigTree(reader, path, depth + 1, out)
    }
  })

const scanExtensionData = (reader: Reader, root: string, id: string): Effect.Effect<ExtensionDataFacts> =>
  Effect.gen(function*() {
    // The same path functions the tiers write with.
    const { extensionDir: dir, configDir, stateDir } = tierPaths(root, id)
    const entries = yield* reader.list(dir)
    const config: Array<ConfigEntryFact> = []
    let splitState: string | null = null
    if (entries.some((e) => e.name === "config" && e.type === "Directory")) {
      const legacyStateDir = resolveStateDir({ configDir })
      const hasState = entries.some((e) => e.name === "state" && e.type === "Directory")
      const legacyState = yield* reader.lstat(legacyStateDir)
      if (hasState && legacyState?.type === "Directory") splitState = legacyStateDir
      yield* scanConfigTree(reader, configDir, 1, config)
    }
    const conflictsDir = migrationConflictsDir(stateDir)
    const conflictsInfo = entries.some((e) => e.name === "state" && e.type === "Directory") ? yield* reader.lstat(conflictsDir) : undefined
    const conflicts = conflictsInfo?.type === "Directory" ? (yield* reader.list(conflictsDir)).map((e) => e.name) : []
    return { id, dir, entries, splitState, config, conflictsDir, conflicts }
  })

const scanWebData = (reader: Reader, root: string): Effect.Effect<WebDataFacts> =>
  Effect.gen(function*() {
    const info = yield* reader.lstat(root)
    const extensions: Array<ExtensionDataFacts> = []
    const links: Array<{ readonly name: string; readonly path: string; readonly leadsToDirectory: boolean }> = []
    if (info?.type === "Directory") {
      for (const ext of yield* reader.list(root)) {
        if (ext.type === "Directory") extensions.push(yield* scanExtensionData(reader, root, ext.name))
        else if (ext.type === "SymbolicLink") {
          const path = NodePath.join(root, ext.name)
          // Only whether it leads to a directory (a trailing slash resolves the link): nothing behind it is read.
          links.push({ name: ext.name, path, leadsToDirectory: (yield* reader.lstat(`${path}/`))?.type === "Directory" })
        }
      }
    }
    return { root, extensions, links }
  })

/** Tier names an extension's data directory may hold. */
export const isTierName = (name: string): boolean => (TIER_NAMES as ReadonlyArray<string>).includes(name)

/**
 * The one scan. `agentDir` is AgentDir's resolved `path`; `webDataRoot` is resolved by the caller the same way.
 * Never fails: what cannot be read is a `ScanProblem`.
 */
export const scanAgentDir = (deps: Deps, agentDir: string, options: ScanOptions): Effect.Effect<AgentDirFacts> =>
  Effect.gen(function*() {
    const reader = new Reader(deps, new ScanBudget(Math.max(1, options.maxEntries ?? DEFAULT_SCAN_MAX_ENTRIES)))
    const info = yield* deps.fs.lstat(agentDir).pipe(Effect.either)
    const status: RootStatus = info._tag === "Left"
      ? info.left.reason === "NotFound" ? { _tag: "Missing" } : { _tag: "Unreadable", error: info.left }
      : info.right.type === "Directory"
      ? { _tag: "Directory" }
      : { _tag: "NotADirectory", type: info.right.type }
    let entries: ReadonlyArray<RootEntryFact> = []
    let state: StateFacts | null = null
    let work: WorkFacts | null = null
    let extensions: AgentDirFacts["extensions"] = { config: [], state: [], cache: [] }
    const extensionConfig: Array<AgentExtensionConfigFacts> = []
    if (status._tag === "Directory") {
      const paths = agentPaths(agentDir)
      if (options.rootEntries === true) entries = yield* scanRootEntries(reader, agentDir)
      if (options.state === true) state = yield* scanState(reader, agentDir)
      if (options.work !== undefined && options.work !== false) work = yield* scanWork(reader, paths.workRoot, options)
      if (options.extensions === true) {
        extensions = {
          config: yield* subdirectories(reader, NodePath.dirname(paths.extensionConfigDir("x"))),
          state: yield* subdirectories(reader, NodePath.dirname(paths.extensionStateDir("x"))),
          cache: yield* subdirectories(reader, NodePath.dirname(paths.extensionCacheDir("x")))
        }
      }
      if (options.extensionConfig === true) {
        // The same walk and red lines as a web-host extension's config/ (one rule, domain/ConfigRedLines.ts).
        for (const namespace of yield* subdirectories(reader, NodePath.dirname(paths.extensionConfigDir("x")))) {
          const dir = paths.extensionConfigDir(namespace)
          const config: Array<ConfigEntryFact> = []
          yield* scanConfigTree(reader, dir, 1, config)
          extensionConfig.push({ namespace, dir, config })
        }
      }
    }
    const webData = options.webDataRoot !== undefined ? yield* scanWebData(reader, options.webDataRoot) : null
    return {
      path: agentDir,
      status,
      entries,
      state,
      work,
      extensions,
      extensionConfig,
      webData,
      problems: reader.problems,
      scanned: reader.budget.scanned,
      truncated: reader.budget.truncated,
      maxEntries: reader.budget.maxEntries,
      unread: reader.budget.unread
    }
  })

/** The tenants of a work scan, in name order. */
export const tenantsOf = (work: WorkFacts | null): ReadonlyArray<TenantFacts> => work?.categories.flatMap((c) => c.tenants) ?? []
