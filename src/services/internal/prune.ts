/**
 * The tenant pruner (WR8): serialise with the tenant prune marker, finish a crashed prune's leftovers, scan
 * a bounded number of entries, measure owned runs under one tenant-wide budget, plan with the pure
 * `planPrune`, then remove each victim under the cleanup protocol. One bad run never fails the prune.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import {
  TENANT_CLEANUP_DIR,
  TENANT_PRUNE_MARKER,
  TENANT_PRUNE_STAMP,
  TENANT_STAGING_DIR,
  TENANT_TRASH_DIR
} from "../../domain/AgentPaths.js"
import type { FileSystemError, UnsafeRoot } from "../../domain/Errors.js"
import { type PlanDecision, planPrune, type ScannedRun } from "../../domain/PrunePlan.js"
import { emptyPruneReport, type PruneReport } from "../../domain/PruneReport.js"
import type { RetentionPolicy } from "../../domain/Retention.js"
import { type Deps } from "./deps.js"
import { removeDeadMarker, tryAcquireMarker } from "./markers.js"
import { cleanupMarkerPath, deleteQuarantined, ensureLibraryDir, prepareRemoval, quarantineOwnedRun, type RemoveOutcome } from "./removeRun.js"
import { checkSafeDirectory } from "./rootSafety.js"
import { isActive, newestHeartbeat, readLeases, readManifest } from "./runFacts.js"
import { aFileType } from "../../domain/FileTypeWords.js"

/** Entries of a tenant directory that belong to the library itself, never runs. */
export const TENANT_LIBRARY_ENTRIES: ReadonlySet<string> = new Set([
  TENANT_CLEANUP_DIR,
  TENANT_TRASH_DIR,
  TENANT_PRUNE_MARKER,
  TENANT_PRUNE_STAMP,
  TENANT_STAGING_DIR
])

/** A staged run older than this without a lease was abandoned by a crashed acquirer. */
export const STALE_STAGING_MS = 60 * 60 * 1000

export interface PruneInput {
  readonly workRoot: string
  readonly category: string
  readonly tenant: string
  readonly policy: RetentionPolicy
  readonly dryRun: boolean
  /** Progress callback for long prunes (the CLI draws a line from it). */
  readonly onProgress?: (p: { readonly phase: "scan" | "remove"; readonly done: number; readonly total: number }) => void
}

/**
 * Finishing `.trash/` is deletion of trees already proven ours: no depth bound (the measuring `maxDepth` left
 * deep trees there forever, issue 12), bounded by time instead. Removals go in slices of this many entries,
 * and no new slice starts once the prune has spent `TRASH_TIME_BUDGET_MS` on them (Clock time); the next
 * prune resumes where this one stopped.
 */
export const TRASH_SLICE_ENTRIES = 10_000
export const TRASH_TIME_BUDGET_MS = 5_000
const UNBOUNDED_DEPTH = Number.MAX_SAFE_INTEGER

/** Delete what `.trash/` holds within the time budget; every entry still there afterwards is an error. */
const finishTrash = (deps: Deps, trashDir: string, report: PruneReport) =>
  Effect.gen(function*() {
    const trash = yield* deps.fs.readDirectory(trashDir).pipe(Effect.orElseSucceed(() => []))
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
          report.errors.push({ path: removal.left.path, message: `${removal.left.message}; left in .trash, the next prune retries` })
          break
        }
        if (removal.right.complete) break
        if (removal.right.removedEntries === 0) {
          failed.add(entry.name)
          report.errors.push({ path, message: "deleting the quarantined tree made no progress; left in .trash, the next prune retries" })
          break
        }
      }
    }
    // Whatever is left (time budget spent) is reported, so a prune never looks clean while .trash grows.
    if (!outOfTime) return
    // (Only entries of the first listing: a release may be quarantining its own run meanwhile.)
    const listed = new Set(trash.map((e) => e.name))
    const left = yield* deps.fs.readDirectory(trashDir).pipe(Effect.orElseSucceed(() => []))
    for (const entry of left) {
      if (!listed.has(entry.name) || failed.has(entry.name)) continue
      report.errors.push({
        path: NodePath.join(trashDir, entry.name),
        message: `quarantined tree not deleted yet (this prune's ${TRASH_TIME_BUDGET_MS} ms for .trash is spent); the next prune continues`
      })
    }
  })

/** Leftovers of a crashed prune: quarantined trees and markers of dead pruners. */
const finishLeftovers = (deps: Deps, tenantDir: string, budget: { maxEntries: number; maxDepth: number }, report: PruneReport) =>
  Effect.gen(function*() {
    yield* finishTrash(deps, NodePath.join(tenantDir, TENANT_TRASH_DIR), report)
    let remaining = budget.maxEntries
    // Runs whose creator crashed before renaming them into place: removable once their creator's lease is
    // provably dead, or once they are older than any acquire could take.
    const stagingDir = NodePath.join(tenantDir, TENANT_STAGING_DIR)
    const staged = yield* deps.fs.readDirectory(stagingDir).pipe(Effect.orElseSucceed(() => []))
    const now = yield* Clock.currentTimeMillis
    for (const entry of staged) {
      if (remaining <= 0) break
      const path = NodePath.join(stagingDir, entry.name)
      const info = yield* deps.fs.lstat(path).pipe(Effect.option)
      if (info._tag === "None") continue
      const leases = entry.type === "Directory" ? yield* readLeases(deps, path) : { leases: [], problem: null }
      if (isActive(leases)) continue
      if (leases.leases.length === 0 && now - info.value.mtimeMs < STALE_STAGING_MS) continue
      const removal = yield* deps.fs.removeTree(path, { maxEntries: remaining, maxDepth: budget.maxDepth }).pipe(Effect.either)
      if (removal._tag === "Left") report.errors.push({ path: removal.left.path, message: removal.left.message })
      else remaining -= removal.right.removedEntries
    }
    const cleanupDir = NodePath.join(tenantDir, TENANT_CLEANUP_DIR)
    const markers = yield* deps.fs.readDirectory(cleanupDir).pipe(Effect.orElseSucceed(() => []))
    for (const entry of markers) {
      if (entry.type === "File") yield* removeDeadMarker(deps, NodePath.join(cleanupDir, entry.name))
    }
  })

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
    const marker = yield* tryAcquireMarker(deps, NodePath.join(tenantDir, TENANT_PRUNE_MARKER), "prune")
    if (marker._tag === "Held") return { ...emptyPruneReport(false, true), busyHolder: marker.holder }
    return yield* Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      // The stamp's mtime is the last prune start: create once, then touch (no temp file a crash could strand).
      const stamp = NodePath.join(tenantDir, TENANT_PRUNE_STAMP)
      yield* deps.fs.writeFileExclusive(stamp, new Uint8Array()).pipe(Effect.ignore)
      yield* deps.fs.utimes(stamp, now, now).pipe(Effect.ignore)
      const leftovers = emptyPruneReport(false)
      yield* finishLeftovers(deps, tenantDir, input.policy, leftovers)
      const report = yield* scanAndPlan(deps, input, tenantDir)
      report.errors.unshift(...leftovers.errors)
      return report
    }).pipe(Effect.ensuring(marker.release))
  })

const scanAndPlan = (deps: Deps, input: PruneInput, tenantDir: string) =>
  Effect.gen(function*() {
    const report = emptyPruneReport(input.dryRun)
    const { policy } = input
    const entries = yield* deps.fs.readDirectory(tenantDir)
    const candidates = entries.filter((e) => !TENANT_LIBRARY_ENTRIES.has(e.name))
    report.truncated = candidates.length > policy.maxScannedRuns
    const scanned = candidates.slice(0, policy.maxScannedRuns)
    report.scannedRuns = scanned.length
    let entryBudget = policy.maxEntries
    const runs: Array<ScannedRun> = []
    /** Runs with a lease proven dead; the leases are re-judged under the run's marker before removal. */
    const deadLeases = new Set<string>()
    for (const [index, entry] of scanned.entries()) {
      input.onProgress?.({ phase: "scan", done: index, total: scanned.length })
      const path = NodePath.join(tenantDir, entry.name)
      if (entry.type !== "Directory") {
        report.unowned.push({ name: entry.name, path, why: entry.type === "SymbolicLink" ? "symlink (never followed)" : `not a directory (${aFileType(entry.type)})` })
        continue
      }
      const manifest = yield* readManifest(deps, path, { category: input.category, tenant: input.tenant, runId: entry.name })
      if (manifest._tag !== "Owned") {
        report.unowned.push({ name: entry.name, path, why: manifest._tag === "Mismatch" ? `manifest names ${manifest.found}` : manifest.why })
        continue
      }
      const leases = yield* readLeases(deps, path)
      if (leases.leases.some((l) => !l.verdict.alive)) deadLeases.add(entry.name)
      const measured = yield* deps.fs.measureTree(path, { maxEntries: Math.max(0, entryBudget), maxDepth: policy.maxDepth }).pipe(Effect.either)
      const size = measured._tag === "Right" ? measured.right : { bytes: 0, entries: 0, complete: false }
      if (measured._tag === "Left") report.errors.push({ path, message: measured.left.message })
      entryBudget -= size.entries
      if (!size.complete) report.incomplete = true
      const m = manifest.manifest
      runs.push({
        runId: entry.name,
        path,
        createdAt: m.createdAt,
        releasedAt: "releasedAt" in m ? m.releasedAt : undefined,
        newestHeartbeatAt: newestHeartbeat(leases),
        active: isActive(leases),
        bytes: size.bytes,
        complete: size.complete
      })
    }
    const now = yield* Clock.currentTimeMillis
    const plan = planPrune({ runs, policy, now })
    report.bytesBefore = plan.bytesBefore
    report.bytesAfter = plan.bytesAfter
    for (const d of plan.decisions) {
      if (d.action === "active") report.active.push(d.runId)
      else if (d.action === "keep") report.kept.push(d.runId)
    }
    if (input.dryRun) {
      for (const d of plan.remove) report.removed.push({ runId: d.runId, path: d.path, reason: d.reason!, bytes: d.bytes })
      return report
    }
    let skippedBytes: number | null = 0
    const prepared = plan.remove.length === 0 ? undefined : yield* Effect.either(prepareRemoval(deps, tenantDir))
    if (prepared?._tag === "Left") {
      report.errors.push({ path: tenantDir, message: prepared.left })
      for (const victim of plan.remove) report.skipped.push({ runId: victim.runId, path: victim.path, why: prepared.left })
      return report
    }
    // Deletions run while the next victim goes through the protocol: the Node layer deletes off the event loop
    // (in C on the thread pool, or on a remover thread), so quarantining run n+1 overlaps deleting run n,
    // which waits on the disk (issue 7).
    const deletions: Array<{ readonly victim: PlanDecision; readonly deletion: Fiber.RuntimeFiber<RemoveOutcome> }> = []
    for (const [index, victim] of plan.remove.entries()) {
      input.onProgress?.({ phase: "remove", done: index, total: plan.remove.length })
      const quarantined = yield* quarantineOwnedRun(deps, { tenantDir, category: input.category, tenant: input.tenant, runId: victim.runId })
      if (quarantined._tag === "Skipped") {
        report.skipped.push({ runId: victim.runId, path: victim.path, why: quarantined.why })
        report.kept.push(victim.runId)
        skippedBytes = skippedBytes === null || victim.bytes === null ? null : skippedBytes + victim.bytes
        continue
      }
      deadLeases.delete(victim.runId)
      deletions.push({ victim, deletion: yield* Effect.fork(deleteQuarantined(deps, quarantined.target)) })
    }
    for (const { victim, deletion } of deletions) {
      const outcome = yield* Fiber.join(deletion)
      report.removed.push({ runId: victim.runId, path: victim.path, reason: victim.reason!, bytes: victim.bytes })
      if (outcome._tag === "Removed" && !outcome.complete) {
        report.errors.push({ path: victim.path, message: `quarantined in .trash; deletion finishes on the next prune (${outcome.why ?? "incomplete"})` })
      }
    }
    if (report.bytesAfter !== null) report.bytesAfter = skippedBytes === null ? null : report.bytesAfter + skippedBytes
    yield* removeDeadLeases(deps, tenantDir, deadLeases, report)
    return report
  })

/** Dead leases of kept runs are removed under that run's cleanup marker, re-judged there. */
const removeDeadLeases = (deps: Deps, tenantDir: string, dead: ReadonlySet<string>, report: PruneReport) =>
  Effect.gen(function*() {
    if (dead.size === 0) return
    if ((yield* Effect.either(ensureLibraryDir(deps, NodePath.join(tenantDir, TENANT_CLEANUP_DIR))))._tag === "Left") return
    for (const runId of dead) {
      const runDir = NodePath.join(tenantDir, runId)
      const marker = yield* tryAcquireMarker(deps, cleanupMarkerPath(tenantDir, runId), "lease-cleanup").pipe(
        Effect.orElseSucceed(() => ({ _tag: "Held" as const, holder: "" }))
      )
      if (marker._tag === "Held") continue
      yield* Effect.gen(function*() {
        const leases = yield* readLeases(deps, runDir)
        for (const lease of leases.leases) {
          if (!lease.verdict.alive) {
            yield* deps.fs.removeFile(lease.path).pipe(
              Effect.catchAll((e) => Effect.sync(() => report.errors.push({ path: lease.path, message: e.message })))
            )
          }
        }
      }).pipe(Effect.ensuring(marker.release))
    }
  })
