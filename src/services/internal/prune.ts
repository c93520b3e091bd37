/**
 * The tenant pruner (WR8): serialise with the tenant prune marker, finish a crashed prune's leftovers, scan
 * a bounded number of entries, measure the owned runs whose fate depends on their size under one
 * tenant-wide budget (the pure `planMeasuring` says which), plan, then remove each victim under the cleanup
 * protocol. A run removed by age or count is never walked twice: its removal walk counts its bytes (issue
 * 18: measuring every run first cost a prune twice the CPU of `rm -rf`). One bad run never fails the prune.
 * Once the entry budget is spent no run is walked: those are "not measured" (never over budget), and the run
 * whose walk the budget ran out in is the one named as cut short (docs/work-runs.md "Retention"). Sizes are disk usage
 * beside apparent size (FileSystem `TreeMeasure`), and every bound that stopped the prune early is in
 * `stoppedBy` with how much it left.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import { runManifestPath, TENANT_CLEANUP_DIR, TENANT_PRUNE_MARKER, TENANT_PRUNE_STAMP, TENANT_STAGING_DIR, TENANT_TRASH_DIR } from "../../domain/AgentPaths.js"
import type { FileSystemError, UnsafeRoot } from "../../domain/Errors.js"
import { isPastMaxAge, NOT_MEASURED, type PlanDecision, planMeasuringSteps, type RunFacts, type RunSize } from "../../domain/PrunePlan.js"
import { type CutShortRun, emptyPruneReport, type PruneError, type PruneReport, type UnreadableRecord } from "../../domain/PruneReport.js"
import type { RetentionPolicy } from "../../domain/Retention.js"
import { pruneDepthStopped, pruneEntriesStopped, pruneScanStopped } from "../../domain/StoppedBy.js"
import type { TreeSizes } from "../FileSystem.js"
import { type Deps, fsClockOf } from "./deps.js"
import { lstatEach } from "./each.js"
import { tenantProbe } from "./fsClock.js"
import { pace, PACE_ITEMS, paceDue, runPaced } from "./pace.js"
import { isReclaimLockName, type ReclaimOutcome, reclaimLockPath, removeDeadMarker, removeDeadReclaimLock, withMarker } from "./markers.js"
import { cleanupMarkerPath, deleteQuarantinedEach, ensureLibraryDir, prepareRemoval, quarantineOwnedRuns, type RemoveOutcome } from "./removeRun.js"
import { checkSafeDirectory } from "./rootSafety.js"
import { type TenantItem, tenantItems } from "./readModel.js"
import { expectedIdentity, isActive, type LeaseEntry, newestHeartbeat, type OwnedManifest, readLeases, readManifest } from "./runFacts.js"
import { isAbandonedStaging, isTenantLibraryEntry } from "../../domain/TenantEntries.js"
import { warn } from "./warn.js"

export interface PruneInput {
  readonly workRoot: string
  readonly category: string
  readonly tenant: string
  readonly policy: RetentionPolicy
  readonly dryRun: boolean
  /**
   * The bounds the caller asked for, before the harness ceiling capped them into `policy`: a report that stopped
   * at a capped bound says the ceiling, not the caller's own option, is what raises it.
   */
  readonly asked?: { readonly maxScannedRuns?: number | undefined; readonly maxEntries?: number | undefined; readonly maxDepth?: number | undefined }
  /** The harness ceiling `policy` was clamped to (a bound at it is raised only by raising the ceiling). */
  readonly ceiling?: RetentionPolicy
  /** Progress callback for long prunes (the CLI draws a line from it). */
  readonly onProgress?: (p: { readonly phase: "scan" | "remove"; readonly done: number; readonly total: number }) => void
}

/**
 * Finishing `.trash/` is deletion of trees already proven ours: no depth bound (the measuring `maxDepth` left
 * deep trees there forever: docs/safety.md "Trash is finished whatever its depth"), bounded by time instead. Removals go in slices of this many entries,
 * and no new slice starts once the prune has spent `TRASH_TIME_BUDGET_MS` on them (Clock time); the next
 * prune resumes where this one stopped.
 */
export const TRASH_SLICE_ENTRIES = 10_000
export const TRASH_TIME_BUDGET_MS = 5_000
const UNBOUNDED_DEPTH = Number.MAX_SAFE_INTEGER

/**
 * Victims taken through the cleanup protocol at once: each step is one port call over the batch (BENCHMARKS.md
 * "Prune: the protocol in batches"), and a batch's deletions start once it is quarantined, while the next
 * batch goes through.
 */
export const QUARANTINE_BATCH = 32

/**
 * Batches whose deletions may be under way or queued while the next batch is quarantined: enough to keep the
 * remover busy while the protocol works, few enough that a prune stopped midway leaves little in `.trash/`.
 */
export const DELETIONS_AHEAD = 2

/** Delete what `.trash/` holds within the time budget; every entry still there afterwards is an error. */
const finishTrash = (deps: Deps, trashDir: string, report: PruneReport) =>
  Effect.gen(function*() {
    const trashListing = yield* deps.fs.readDirectory(trashDir).pipe(Effect.either)
    if (trashListing._tag === "Left") {
      // No .trash is the usual case; one that cannot be listed (a symlink or file there, EACCES) hides
      // unfinished deletions, so it is reported, never taken for empty.
      if (trashListing.left.reason !== "NotFound") report.errors.push({ _tag: "ListingFailed", path: trashDir, message: `cannot list ${TENANT_TRASH_DIR}: ${trashListing.left.message}` })
      return
    }
    const trash = trashListing.right
    if (trash.length === 0) return
    const deadline = (yield* Clock.currentTimeMillis) + TRASH_TIME_BUDGET_MS
    const failed = new Set<string>()
    let outOfTime = false
    for (const entry of trash) {
      const path = NodePath.join(trashDir, entry.name)
      for (;;) {
        if ((yield* Clock.currentTimeMillis) >= deadline) {
          outOfTime = true
          break
        }
        const removal = yield* deps.fs.removeTree(path, { maxEntries: TRASH_SLICE_ENTRIES, maxDepth: UNBOUNDED_DEPTH }).pipe(Effect.either)
        if (removal._tag === "Left") {
          failed.add(entry.name)
          report.errors.push({ _tag: "RemovalFailed", path: removal.left.path, message: `${removal.left.message}; left in .trash, the next prune retries` })
          break
        }
        if (removal.right.complete) break
        if (removal.right.removedEntries === 0) {
          failed.add(entry.name)
          report.errors.push({ _tag: "RemovalFailed", path, message: "deleting the quarantined tree made no progress; left in .trash, the next prune retries" })
          break
        }
      }
    }
    // Whatever is left (time budget spent) is reported, so a prune never looks clean while .trash grows.
    if (!outOfTime) return
    // (Only entries of the first listing: a release may be quarantining its own run meanwhile.)
    const listed = new Set(trash.map((e) => e.name))
    const left = yield* listLibraryDir(deps, trashDir)
    for (const entry of left) {
      if (!listed.has(entry.name) || failed.has(entry.name)) continue
      report.errors.push({
        _tag: "TrashPending",
        path: NodePath.join(trashDir, entry.name),
        message: `quarantined tree not deleted yet (this prune's ${TRASH_TIME_BUDGET_MS} ms for .trash is spent); the next prune continues`
      })
    }
  })

/**
 * The entries of a library directory (`.staging/`, `.cleanup/`, `.trash/`) for the leftovers pass: missing is
 * empty; any other failure is a warning and empty too (nothing is removed through a directory we cannot
 * read, and its leftovers wait for the next prune).
 */
const listLibraryDir = (deps: Deps, path: string) =>
  deps.fs.readDirectory(path).pipe(
    Effect.catchAll((e) =>
      e.reason === "NotFound"
        ? Effect.succeed([])
        : Effect.as(
          warn({ _tag: "DirectoryNotListed", path, reason: e.message, message: `cannot list ${path} (${e.message}); its leftovers wait for the next prune` }),
          []
        )
    )
  )

/** Leftovers of a crashed prune: quarantined trees and markers of dead pruners. */
const finishLeftovers = (deps: Deps, tenantDir: string, budget: { maxEntries: number; maxDepth: number }, report: PruneReport) =>
  Effect.gen(function*() {
    yield* finishTrash(deps, NodePath.join(tenantDir, TENANT_TRASH_DIR), report)
    let remaining = budget.maxEntries
    // Runs whose creator crashed before renaming them into place: removable once their creator's lease is
    // provably dead, or once they are older than any acquire could take.
    const stagingDir = NodePath.join(tenantDir, TENANT_STAGING_DIR)
    const staged = yield* listLibraryDir(deps, stagingDir)
    let clockUnread = false
    for (const entry of staged) {
      if (remaining <= 0) break
      const path = NodePath.join(stagingDir, entry.name)
      // Gone or unexaminable: left for the next prune (nothing is removed unseen).
      const info = yield* deps.fs.lstat(path).pipe(Effect.option)
      if (info._tag === "None") continue
      const leases = entry.type === "Directory" ? yield* readLeases(deps, path) : { leases: [], problem: null }
      // An empty lease (its creator killed between create and write) is held while fresh, dead once stale.
      const unreadable = leases.leases.filter((l) => l.verdict.unreadable === true)
      // Its age on its file system's clock (a run another host is creating stays, whatever our clock says).
      const fsNow = leases.leases.length === 0 ? yield* fsClockOf(deps).now(info.value.dev, [tenantProbe(tenantDir)]) : null
      if (leases.leases.length === 0 && fsNow === null) clockUnread = true
      if (isActive(leases) || (leases.leases.length === 0 && !isAbandonedStaging({ mtimeMs: info.value.mtimeMs, fsNowMs: fsNow?.ms ?? null }))) {
        for (const l of unreadable) report.unreadable.push({ path: l.path, what: l.verdict.detail, action: l.verdict.alive ? "held" : "reclaimable" })
        continue
      }
      const removal = yield* deps.fs.removeTree(path, { maxEntries: remaining, maxDepth: budget.maxDepth }).pipe(Effect.either)
      if (removal._tag === "Left") report.errors.push({ _tag: "RemovalFailed", path: removal.left.path, message: removal.left.message })
      else remaining -= removal.right.removedEntries
      const gone = removal._tag === "Right" && removal.right.complete
      for (const l of unreadable) report.unreadable.push({ path: l.path, what: l.verdict.detail, action: gone ? "reclaimed" : "reclaimable" })
    }
    if (clockUnread) {
      report.errors.push({ _tag: "ClockUnread", path: stagingDir, message: "the file system's clock could not be read (no probe could be made in .cleanup/): runs left in .staging/ without a lease were kept" })
    }
    // Cleanup markers of dead pruners, and unreadable ones once stale (any kind: a squatting directory or
    // symlink is reported as what it is).
    const cleanupDir = NodePath.join(tenantDir, TENANT_CLEANUP_DIR)
    const markers = yield* listLibraryDir(deps, cleanupDir)
    // Reclaim locks (`<run>.reclaim`, and the tenant's `.prune.reclaim`) of dead reclaimers go like markers.
    const paths = markers.map((entry) => NodePath.join(cleanupDir, entry.name))
    paths.push(NodePath.join(tenantDir, reclaimLockPath(TENANT_PRUNE_MARKER)))
    for (const path of paths) {
      const { judged, outcome } = isReclaimLockName(path) ? yield* removeDeadReclaimLock(deps, path) : yield* removeDeadMarker(deps, path)
      if (judged?.unreadable) report.unreadable.push({ path, what: judged.detail, action: markerAction(judged.alive, outcome) })
    }
  })

const markerAction = (alive: boolean, outcome: ReclaimOutcome): UnreadableRecord["action"] =>
  alive ? "held" : outcome === "reclaimed" ? "reclaimed" : outcome === "left" ? "left" : "reclaimable"

export const pruneTenant = (
  deps: Deps,
  input: PruneInput
): Effect.Effect<PruneReport, UnsafeRoot | FileSystemError> =>
  Effect.gen(function*() {
    const categoryDir = NodePath.join(input.workRoot, input.category)
    const tenantDir = NodePath.join(categoryDir, input.tenant)
    for (const dir of [input.workRoot, categoryDir, tenantDir]) {
      const present = yield* checkSafeDirectory(deps, dir)
      if (Option.isNone(present)) return { ...emptyPruneReport(input.dryRun), tenantMissing: true }
    }
    if (input.dryRun) return yield* scanAndPlan(deps, input, tenantDir)
    const markerPath = NodePath.join(tenantDir, TENANT_PRUNE_MARKER)
    // Taken and released as one resource: an interrupt (a store closing during its background prune) drops it.
    return yield* withMarker(deps, markerPath, "prune", (marker) => Effect.gen(function*() {
      if (marker._tag === "Held") {
        // A directory or symlink squatting on the marker is nobody's prune: reported as what it is, not busy.
        const report = marker.squatted === null
          ? { ...emptyPruneReport(false, true), busyHolder: marker.unreadable ? marker.detail : marker.holder }
          : emptyPruneReport(false)
        if (marker.unreadable) {
          report.unreadable.push({ path: markerPath, what: marker.detail, action: marker.stale ? "left" : "held" })
        }
        if (marker.squatted !== null) {
          report.errors.push({ _tag: "MarkerSquatted", path: markerPath, message: `nothing was pruned: ${marker.detail}` })
        }
        return report
      }
      const now = yield* Clock.currentTimeMillis
      // The stamp's mtime is the last prune start: create once, then touch (no temp file a crash could strand).
      // Ignored when it fails: a hint for the background prune's pacing, not a safety boundary (no data hangs on it).
      const stamp = NodePath.join(tenantDir, TENANT_PRUNE_STAMP)
      yield* deps.fs.writeFileExclusive(stamp, new Uint8Array()).pipe(Effect.ignore)
      yield* deps.fs.utimes(stamp, now, now).pipe(Effect.ignore)
      const leftovers = emptyPruneReport(false)
      for (const r of marker.reclaimed) leftovers.unreadable.push(r)
      yield* finishLeftovers(deps, tenantDir, input.policy, leftovers)
      const report = yield* scanAndPlan(deps, input, tenantDir)
      report.errors.unshift(...leftovers.errors)
      report.unreadable.unshift(...leftovers.unreadable)
      return report
    }))
  })

const scanAndPlan = (deps: Deps, input: PruneInput, tenantDir: string) =>
  Effect.gen(function*() {
    const report = emptyPruneReport(input.dryRun)
    const { policy } = input
    const entries = yield* deps.fs.readDirectory(tenantDir)
    // Ages are judged on the tenant's file system's clock, read once before the scan (docs/work-runs.md "Retention"); a
    // tenant holding no run needs no reading (a dry run of an empty tenant writes no probe).
    const tenant = yield* deps.fs.lstat(tenantDir)
    const now = entries.some((e) => !isTenantLibraryEntry(e.name)) ? (yield* fsClockOf(deps).now(tenant.dev, [tenantProbe(tenantDir)]))?.ms ?? null : null
    // The read model's tenant items: the same ownership and liveness facts the doctor and the inventory read.
    const scan = yield* tenantItems(deps, { category: input.category, tenant: input.tenant }, tenantDir, entries, {
      maxRuns: policy.maxScannedRuns,
      onProgress: (done, total) => input.onProgress?.({ phase: "scan", done, total }),
      ...(now !== null ? { now } : {})
    })
    report.truncated = scan.truncated
    report.scannedRuns = Math.min(scan.candidates, policy.maxScannedRuns)
    const runs: Array<RunFacts> = []
    /** Runs with a lease proven dead; the leases are re-judged under the run's marker before removal. */
    const deadLeases = new Set<string>()
    /** Each owned run's manifest as the scan read it, for the re-checks under cleanup markers. */
    const owned = new Map<string, OwnedManifest>()
    /** Unreadable leases per run, reported once the run's fate is known. */
    const unreadableLeases = new Map<string, ReadonlyArray<LeaseEntry>>()
    const reportLeases = (runId: string, gone: boolean) => {
      for (const l of unreadableLeases.get(runId) ?? []) {
        report.unreadable.push({ path: l.path, what: l.verdict.detail, action: l.verdict.alive ? "held" : gone ? "reclaimed" : "reclaimable" })
      }
      unreadableLeases.delete(runId)
    }
    // Loops over up to 10,000 runs let the event loop turn now and then (pace.ts): this may be a background prune.
    for (let index = 0; index < scan.items.length; index++) {
      if (paceDue(index)) yield* pace(deps.fs)
      const item = scan.items[index]!
      if (item._tag === "LibraryEntry") continue
      if (item._tag === "Unowned") {
        report.unowned.push({ _tag: item.kind, name: item.name, path: item.path, why: item.why })
        continue
      }
      const { leases, times } = item
      // (Always read: the pruner's scan is never a view's.)
      if (item.owned !== null) owned.set(item.name, item.owned)
      if (leases.leases.some((l) => !l.verdict.alive)) deadLeases.add(item.name)
      const unreadable = leases.leases.filter((l) => l.verdict.unreadable === true)
      if (unreadable.length > 0) unreadableLeases.set(item.name, unreadable)
      for (const what of times.farFuture) report.unreadable.push({ path: runManifestPath(item.path), what, action: "ignored" })
      runs.push({
        runId: item.name,
        path: item.path,
        createdAt: times.createdAt,
        releasedAt: times.releasedAt,
        newestHeartbeatAt: newestHeartbeat(leases),
        active: isActive(leases)
      })
    }
    if (now === null && runs.some((r) => !r.active)) {
      report.errors.push({ _tag: "ClockUnread", path: tenantDir, message: "the file system's clock could not be read (no probe could be made in .cleanup/): no run was removed by age" })
    }
    yield* lastWritten(deps, tenant.dev, runs, scan.items, now)
    // Only the runs whose fate depends on their size are walked before the plan, sharing the entry budget.
    const planning = yield* runPaced(deps.fs, planMeasuringSteps({ runs, policy, now }))
    const budget: Budget = { remaining: policy.maxEntries, byEntries: new Set(), byDepth: new Set() }
    /** Why each cut-short walk stopped; and the runs not walked because the budget was spent first. */
    const cuts = new Map<string, Cut>()
    const notWalked = new Set<string>()
    for (let run = planning.next(); run !== undefined; run = planning.next()) {
      const measured = yield* measureRun(deps, run.path, policy, budget, report)
      if (measured.cut !== undefined) cuts.set(run.runId, measured.cut)
      if (measured.size.walked === false) notWalked.add(run.runId)
      planning.measured(measured.size)
    }
    const plan = yield* runPaced(deps.fs, planning.finishSteps())
    report.activeOverBudget = plan.activeOverBudget
    for (let index = 0; index < plan.decisions.length; index++) {
      if (paceDue(index)) yield* pace(deps.fs)
      const d = plan.decisions[index]!
      if (d.action === "active") report.active.push(d.runId)
      else if (d.action === "keep") report.kept.push(d.runId)
      if (notWalked.has(d.runId)) report.notMeasured.push(d.runId)
      const cut = cuts.get(d.runId)
      if (d.cutShort && cut !== undefined) {
        report.cutShort.push({
          _tag: cut._tag,
          runId: d.runId,
          path: d.path,
          active: d.action === "active",
          bytesAtLeast: d.bytesAtLeast,
          apparentBytesAtLeast: d.apparentBytesAtLeast,
          why: cut.why
        })
      }
    }
    /** A victim's sizes for the report, when no removal walk will count them (dry run, skipped); `null` when not exact. */
    const sizeOf = (d: PlanDecision): Effect.Effect<TreeSizes | null> =>
      d.measured
        ? Effect.succeed(d.bytes === null || d.apparentBytes === null ? null : { bytes: d.bytes, apparentBytes: d.apparentBytes })
        : Effect.map(measureRun(deps, d.path, policy, budget, report), ({ size }) => (size.complete && size.walked !== false ? size : null))
    const removedRun = (d: PlanDecision, sizes: TreeSizes | null) => ({
      runId: d.runId,
      path: d.path,
      reason: d.reason!,
      bytes: sizes?.bytes ?? null,
      apparentBytes: sizes?.apparentBytes ?? null
    })
    /** The report's totals and its word on what stopped it early (`incomplete`, `stoppedBy`). */
    const finish = (stayed: Stayed) => {
      report.bytesAfter = plan.bytesAfter === null || stayed === null ? null : plan.bytesAfter + stayed.bytes
      report.apparentBytesAfter = plan.apparentBytesAfter === null || stayed === null ? null : plan.apparentBytesAfter + stayed.apparentBytes
      report.bytesBefore = totalOf(report.bytesAfter, report.removed.map((r) => r.bytes))
      report.apparentBytesBefore = totalOf(report.apparentBytesAfter, report.removed.map((r) => r.apparentBytes))
      // Whether pruning again gets further: the next prune's window moves only past runs this one takes.
      const bound = (field: "maxScannedRuns" | "maxEntries" | "maxDepth") => ({ asked: input.asked?.[field], ceiling: input.ceiling?.[field] })
      if (scan.truncated) report.stoppedBy.push(pruneScanStopped(policy.maxScannedRuns, scan.candidates, report.removed.length > 0, bound("maxScannedRuns")))
      if (budget.byEntries.size > 0) report.stoppedBy.push(pruneEntriesStopped(policy.maxEntries, budget.byEntries.size, bound("maxEntries")))
      if (budget.byDepth.size > 0) report.stoppedBy.push(pruneDepthStopped(policy.maxDepth, budget.byDepth.size, bound("maxDepth")))
      report.incomplete = report.cutShort.length > 0 || report.notMeasured.length > 0 || report.bytesBefore === null
      return report
    }
    if (input.dryRun) {
      for (const runId of [...unreadableLeases.keys()]) reportLeases(runId, false)
      for (let index = 0; index < plan.remove.length; index++) {
        if (paceDue(index)) yield* pace(deps.fs)
        const d = plan.remove[index]!
        report.removed.push(removedRun(d, yield* sizeOf(d)))
      }
      return finish(NOTHING_STAYED)
    }
    /** The sizes of victims the protocol skipped (they stay); `null` once one is not exact. */
    let skippedSizes: Stayed = NOTHING_STAYED
    const stays = (sizes: TreeSizes | null) => {
      skippedSizes = skippedSizes === null || sizes === null ? null : { bytes: skippedSizes.bytes + sizes.bytes, apparentBytes: skippedSizes.apparentBytes + sizes.apparentBytes }
    }
    const prepared = plan.remove.length === 0 ? undefined : yield* Effect.either(prepareRemoval(deps, tenantDir))
    if (prepared?._tag === "Left") {
      // Nothing can be removed: every victim stays, so it is kept and its bytes stay in the total (never
      // undercounted), as for a victim the protocol skips below.
      report.errors.push({ _tag: "RemovalUnprepared", path: tenantDir, message: prepared.left.message })
      for (let index = 0; index < plan.remove.length; index++) {
        if (paceDue(index)) yield* pace(deps.fs)
        const victim = plan.remove[index]!
        report.skipped.push({ _tag: "RemovalUnprepared", runId: victim.runId, path: victim.path, why: prepared.left.message })
        report.kept.push(victim.runId)
        stays(yield* sizeOf(victim))
      }
      for (const runId of [...unreadableLeases.keys()]) reportLeases(runId, false)
      return finish(skippedSizes)
    }
    // Deletions run while the next batch of victims goes through the protocol: the Node layer deletes off the event loop
    // (in C on the thread pool, or on a remover thread), so quarantining batch n+1 overlaps deleting batch n,
    // which waits on the disk (BENCHMARKS.md).
    /** Each batch's deletions, one fiber and one batched port call per batch. */
    const deletions: Array<{ readonly victims: ReadonlyArray<PlanDecision>; readonly deletion: Fiber.RuntimeFiber<ReadonlyArray<RemoveOutcome>> }> = []
    // Victims go through the protocol a batch at a time, each step one port call over the batch.
    for (let start = 0; start < plan.remove.length; start += QUARANTINE_BATCH) {
      input.onProgress?.({ phase: "remove", done: start, total: plan.remove.length })
      const batch = plan.remove.slice(start, start + QUARANTINE_BATCH)
      const outcomes = yield* quarantineOwnedRuns(deps, batch.map((victim) => ({
        run: { tenantDir, category: input.category, tenant: input.tenant, runId: victim.runId },
        known: owned.get(victim.runId)
      })))
      const moved: Array<PlanDecision> = []
      const targets: Array<string> = []
      for (const [k, victim] of batch.entries()) {
        const quarantined = outcomes[k]!
        if (quarantined._tag === "Skipped") {
          report.skipped.push({ _tag: quarantined.skip, runId: victim.runId, path: victim.path, why: quarantined.why })
          report.kept.push(victim.runId)
          stays(yield* sizeOf(victim))
          continue
        }
        deadLeases.delete(victim.runId)
        reportLeases(victim.runId, true)
        moved.push(victim)
        targets.push(quarantined.target)
      }
      if (moved.length > 0) deletions.push({ victims: moved, deletion: yield* Effect.fork(deleteQuarantinedEach(deps, targets)) })
      // Quarantining never runs far ahead of the disk: an interrupted prune (a store closing during its background
      // prune) leaves at most this many batches in .trash for the next one.
      if (deletions.length > DELETIONS_AHEAD) yield* Fiber.await(deletions[deletions.length - 1 - DELETIONS_AHEAD]!.deletion)
      input.onProgress?.({ phase: "remove", done: start + batch.length, total: plan.remove.length })
    }
    for (const { victims, deletion } of deletions) {
      yield* pace(deps.fs)
      const outcomes = yield* Fiber.join(deletion)
      for (const [k, victim] of victims.entries()) {
        const outcome = outcomes[k]!
        const complete = outcome._tag === "Removed" && outcome.complete
        // A victim not measured exactly (not walked, or its walk cut short) has the sizes its removal walk
        // counted; unknown when that walk was cut short too.
        const counted = complete && outcome._tag === "Removed" ? { bytes: outcome.removedBytes, apparentBytes: outcome.removedApparentBytes } : null
        const measured = victim.bytes !== null && victim.apparentBytes !== null ? { bytes: victim.bytes, apparentBytes: victim.apparentBytes } : null
        report.removed.push(removedRun(victim, measured ?? counted))
        if (outcome._tag === "Removed" && !outcome.complete) report.errors.push(notDeleted(victim.path, outcome))
      }
    }
    finish(skippedSizes)
    const removedLeases = yield* removeDeadLeases(deps, input, tenantDir, deadLeases, owned, report)
    for (const [runId, leases] of unreadableLeases) {
      for (const l of leases) {
        report.unreadable.push({ path: l.path, what: l.verdict.detail, action: l.verdict.alive ? "held" : removedLeases.has(l.path) ? "reclaimed" : "reclaimable" })
      }
      unreadableLeases.delete(runId)
    }
    return report
  })

/**
 * `run` with its last write on the file system's clock, field by field: V8 (Node 20) gives every object a
 * spread makes with one more field a hidden class of its own, one per run pruned. Every field is named
 * (`Required`), so a field added to `RunFacts` cannot be dropped here.
 */
const withLastWrite = (run: RunFacts, fsLastWrittenAt: number): RunFacts => ({
  runId: run.runId,
  path: run.path,
  createdAt: run.createdAt,
  releasedAt: run.releasedAt,
  newestHeartbeatAt: run.newestHeartbeatAt,
  fsLastWrittenAt,
  active: run.active
}) satisfies Required<RunFacts>

/**
 * Every inactive run's last write on the file system's clock (`fsLastWrittenAt`: the newest mtime of its
 * manifest and lease files, one batched lstat), its last use for the plan (docs/work-runs.md "Retention"). A file that
 * cannot be examined, or that lies on another device than the tenant (another clock), makes the run count as
 * written now: kept by age (unknown is young).
 */
const lastWritten = (
  deps: Deps,
  tenantDev: number,
  runs: Array<RunFacts>,
  items: ReadonlyArray<TenantItem>,
  now: number | null
) =>
  Effect.gen(function*() {
    if (now === null) return
    const leasesOf = new Map<string, ReadonlyArray<string>>()
    for (const item of items) {
      if (item._tag === "Run" && item.leases.leases.length > 0) leasesOf.set(item.name, item.leases.leases.map((l) => l.path))
    }
    // A chunk of runs per batched lstat: each call may let the event loop turn (pace.ts), and no loop over
    // 10,000 runs holds it in one piece.
    for (let start = 0; start < runs.length; start += PACE_ITEMS) {
      const inactive: Array<number> = []
      const files: Array<string> = []
      for (let index = start; index < Math.min(runs.length, start + PACE_ITEMS); index++) {
        const run = runs[index]!
        if (run.active) continue
        inactive.push(index)
        files.push(runManifestPath(run.path), ...(leasesOf.get(run.runId) ?? []))
      }
      if (inactive.length === 0) continue
      const infos = yield* lstatEach(deps.fs, files)
      let at = 0
      for (const index of inactive) {
        const leases = leasesOf.get(runs[index]!.runId)?.length ?? 0
        let newest = -Infinity
        for (let j = 0; j <= leases; j++) {
          const info = infos[at++]!
          if (info._tag === "Left" && info.left.reason === "NotFound" && j > 0) continue // a lease removed meanwhile
          newest = Math.max(newest, info._tag === "Right" && info.right.dev === tenantDev ? info.right.mtimeMs : now)
        }
        runs[index] = withLastWrite(runs[index]!, newest)
      }
    }
  })

/** The report of a run quarantined but not (yet) deleted: the walk's failure, e.g. a mount point it never crosses. */
export const notDeleted = (runPath: string, outcome: { readonly error?: FileSystemError; readonly why?: string }): PruneError =>
  outcome.error === undefined
    ? { _tag: "RemovalFailed", path: runPath, message: `quarantined in .trash; deletion finishes on the next prune (${outcome.why ?? "incomplete"})` }
    : { _tag: "RemovalFailed", path: outcome.error.path, message: `${runPath} quarantined in .trash, not deleted (every prune tries again): ${outcome.error.message}` }

/** Why a measuring walk stopped before its end, in the report's terms. */
interface Cut {
  readonly _tag: CutShortRun["_tag"]
  readonly why: string
}

/**
 * What is left of the tenant's entry budget, and the runs (by path) the bounds stopped: the entry budget before or
 * during their walk, `maxDepth` (or a mount point) during it. `stoppedBy` counts them.
 */
interface Budget {
  remaining: number
  readonly byEntries: Set<string>
  readonly byDepth: Set<string>
}

/** The sizes of victims that stayed after all (skipped), added to the plan's kept total; `null` when one is not exact. */
type Stayed = TreeSizes | null
const NOTHING_STAYED: Stayed = { bytes: 0, apparentBytes: 0 }

/**
 * One measuring walk within what is left of the tenant's entry budget (docs/work-runs.md "Retention"). Once the budget is
 * spent a run is not walked at all: `NOT_MEASURED`, which is not over budget. A walk that stops early is cut
 * short (a failed walk too): its bytes are a lower bound, and `cut` says why — the budget running out during
 * it (`EntryBudget`: this run made the scan incomplete), or `maxDepth` / a mount point (`WalkStopped`).
 */
const measureRun = (
  deps: Deps,
  path: string,
  policy: RetentionPolicy,
  budget: Budget,
  report: PruneReport
): Effect.Effect<{ readonly size: RunSize; readonly cut: Cut | undefined }> =>
  Effect.gen(function*() {
    const given = budget.remaining
    if (given <= 0) {
      budget.byEntries.add(path)
      return { size: NOT_MEASURED, cut: undefined }
    }
    const measured = yield* deps.fs.measureTree(path, { maxEntries: given, maxDepth: policy.maxDepth }).pipe(Effect.either)
    if (measured._tag === "Left") {
      report.errors.push({ _tag: "MeasureFailed", path, message: measured.left.message })
      return {
        size: { bytes: 0, apparentBytes: 0, complete: false },
        cut: { _tag: "WalkFailed", why: `its size walk failed (${measured.left.message}): its size is unknown, counted as over the byte budget` }
      }
    }
    const { bytes, apparentBytes, entries, complete } = measured.right
    budget.remaining -= entries
    const size = { bytes, apparentBytes, complete }
    if (complete) return { size, cut: undefined }
    const atLeast = `at least ${bytes} bytes on disk (${apparentBytes} apparent)`
    if (entries >= given) {
      budget.byEntries.add(path)
      return {
        size,
        cut: { _tag: "EntryBudget", why: `the tenant's entry budget (maxEntries ${policy.maxEntries}) ran out ${entries} entries into its walk: it holds ${atLeast}, and what was left unmeasured is counted as its own` }
      }
    }
    budget.byDepth.add(path)
    return { size, cut: { _tag: "WalkStopped", why: `its walk stopped at maxDepth ${policy.maxDepth} or at a mount point after ${entries} entries: it holds ${atLeast}` } }
  })

/** Before = what stays (kept, active, skipped) + what was removed; unknown when any part is. */
const totalOf = (after: number | null, removed: ReadonlyArray<number | null>): number | null =>
  after === null || removed.some((r) => r === null) ? null : removed.reduce<number>((total, r) => total + r!, after)

/** Dead leases of kept runs are removed under that run's cleanup marker, re-judged there; the paths removed. */
const removeDeadLeases = (
  deps: Deps,
  address: { readonly category: string; readonly tenant: string },
  tenantDir: string,
  dead: ReadonlySet<string>,
  owned: ReadonlyMap<string, OwnedManifest>,
  report: PruneReport
) =>
  Effect.gen(function*() {
    const removed = new Set<string>()
    if (dead.size === 0) return removed
    // Dead leases kept because their cleanup marker cannot be made or taken are report errors, never silent.
    const prepared = yield* Effect.either(ensureLibraryDir(deps, NodePath.join(tenantDir, TENANT_CLEANUP_DIR)))
    if (prepared._tag === "Left") {
      report.errors.push({ _tag: "RemovalUnprepared", path: tenantDir, message: `dead leases kept: ${prepared.left.message}` })
      return removed
    }
    for (const runId of dead) {
      const runDir = NodePath.join(tenantDir, runId)
      const markerPath = cleanupMarkerPath(tenantDir, runId)
      yield* withMarker(deps, markerPath, "lease-cleanup", (marker) => marker._tag === "Held" ? Effect.void : Effect.gen(function*() {
        // Under the marker, the run must still be a real directory with our manifest: a run directory a tool
        // swapped for a link (or replaced) is not ours to unlink inside (review).
        const info = yield* deps.fs.lstat(runDir).pipe(Effect.option)
        if (info._tag === "None" || info.value.type !== "Directory") return
        const manifest = yield* readManifest(deps, runDir, expectedIdentity(address, runId), owned.get(runId))
        if (manifest._tag !== "Owned") return
        const leases = yield* readLeases(deps, runDir)
        for (const lease of leases.leases) {
          if (!lease.verdict.alive) {
            yield* deps.fs.removeFile(lease.path).pipe(
              Effect.tap(() => Effect.sync(() => removed.add(lease.path))),
              Effect.catchAll((e) => Effect.sync(() => report.errors.push({ _tag: "LeaseNotRemoved", path: lease.path, message: e.message })))
            )
          }
        }
      })).pipe(
        // Only taking the marker can fail (the work under it reports its own errors).
        Effect.catchAll((e) =>
          Effect.sync(() => {
            report.errors.push({ _tag: "LeaseNotRemoved", path: markerPath, message: `dead leases of ${runId} kept: its cleanup marker cannot be taken (${e.message})` })
          })
        )
      )
    }
    return removed
  })
