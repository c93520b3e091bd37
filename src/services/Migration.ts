/**
 * Migrations (docs/migrations.md "Migrations"): the agent-dir layout migration and the per-entry migration toolkit.
 *
 * One planner decides, one executor does. `plan` reads the tree and returns the unit decisions (the rules are
 * pure, in src/domain/LayoutMigration.ts): for each legacy entry, from the files themselves and never from
 * "does the target directory exist",
 * - destination absent: `move` (one `rename`, a whole tree at once; on EXDEV, a verified copy across, below);
 * - both directories: `merge-directory`, each child decided the same way, then the emptied source removed;
 * - same content (byte-equal files, equal link targets): `remove-duplicate` (the legacy copy goes);
 * - otherwise `preserve-conflict` under the conflict path (`<base>`, `<base>.1`, …), never overwriting;
 * - `trust.json` at both places: `merge-json` (canonical values win; the legacy copy is kept if a value lost).
 * `run` takes the migration marker, plans again (the tree may have changed since a dry run) with the same
 * function, and executes exactly those decisions; each execution step is atomic (a rename, an exclusive
 * create, a file removal) and checks that what the decision was based on still holds, else it fails that
 * entry and leaves it as it is. Cross-device: a file is copied to `.<name>.pi-migrate-partial` beside the
 * target (fsync), compared with the source, renamed into place, and only then is the source removed; a
 * symlink is recreated (never followed); a directory is made and its children moved. A crash between any two
 * steps leaves every byte either at the source or at its destination (or both, identical, which the rerun's
 * plan resolves by `remove-duplicate`).
 *
 * The toolkit (`runPlan`, `previewPlan`) runs per-entry plans with the same planner and executor: each entry's
 * paths are decoded relative to the root it names (src/domain/PlanPath.ts), links on the way below the agent
 * dir or the web data root are never gone through (src/domain/PathChain.ts), and each entry is planned when its
 * turn comes, after the entries before it ran; the dry run plans them in the same order over a read-only view
 * with the earlier entries' effects laid over the tree (internal/planOverlay.ts).
 *
 * All migrations of one agent dir are serialised by the marker `<agentDir>/.pi-migration.lock`, created only
 * when there is something to do; a dead owner's marker is reclaimed, a live one makes the call wait briefly
 * and then report "another migration is running".
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { FileSystemError, InvalidMigrationPlan, type MigrationStep, MigrationStepFailed } from "../domain/Errors.js"
import { aFileType, fileTypeWord } from "../domain/FileTypeWords.js"
import {
  type DecisionOutcome,
  emptyLayoutReport,
  type ExecutedDecision,
  type LayoutDecision,
  type LayoutPlan,
  type LayoutReport,
  layoutReportOf,
  MIGRATION_CONFLICTS,
  migrationConflictsDir,
  placeRule,
  preserveRule,
  why
} from "../domain/LayoutMigration.js"
import {
  conflictCandidate,
  conflictOwner,
  copiesRecorded,
  copyTempName,
  displayPath,
  encodeJournalLine,
  encodeJsonObject,
  entryRoot,
  type EntryReport,
  type JournalRecord,
  type LayoutUnit,
  keylessRow,
  layoutUnits,
  ledgerParse,
  ledgerSerialize,
  ledgerWhy,
  type MergeLedgerEntry,
  mergeJsonObjects,
  mergeLedgerRows,
  MIGRATION_MARKER,
  MIGRATION_MARKER_PURPOSE,
  MIGRATIONS_JOURNAL_DIR,
  type MigrationPlan,
  parseJournal,
  type PlanEntry,
  type PlanPreview,
  planProblem,
  type PlanReport,
  type StepDecision,
  type StepPreview
} from "../domain/MigrationPlan.js"
import { chainComponentViolation, dirsBelowRoot } from "../domain/PathChain.js"
import { tierPaths } from "../domain/WebPaths.js"
import { agentPaths } from "../domain/AgentPaths.js"
import { makeOverlay, type OverlayEffect } from "./internal/planOverlay.js"
import { AgentDir } from "./AgentDir.js"
import { type FileInfo, FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"
import { type Deps, depsFromContext } from "./internal/deps.js"
import { sameBytes } from "../domain/Bytes.js"
import { acquireMarkerWaiting } from "./internal/markers.js"
import { warn } from "./internal/warn.js"
import { webDataRootOf } from "./internal/webDataRoot.js"

type Fs = FileSystem["Type"]

export interface LayoutOptions {
  /** Top-level entries handled per call (default 10,000); the rest waits for the next call (`partial`). */
  readonly maxEntries?: number
  /** Attempts to take the migration marker while another live migration holds it (default 20). */
  readonly lockAttempts?: number
  /** Pause between those attempts (default 100 ms). */
  readonly lockRetryDelay?: Duration.DurationInput
}

export const DEFAULT_MAX_ENTRIES = 10_000
const DEFAULT_LOCK_ATTEMPTS = 20
const DEFAULT_LOCK_DELAY = Duration.millis(100)
/** Legacy JSON files and ledgers are small; a larger one is preserved as a conflict rather than parsed. */
const MERGE_MAX_BYTES = 64 * 1024 * 1024

const isNotFound = (e: FileSystemError) => e.reason === "NotFound"
const isCrossDevice = (e: FileSystemError) => e.reason === "CrossDevice" || e.errno === "EXDEV"

/** A step the engine refuses (a program error, not a port error: every file-system call succeeded). */
const stepFailure = (step: MigrationStep, path: string, detail: string) => new MigrationStepFailed({ step, path, detail })

/** What the move engine fails with: the port's errors and its own refusals. */
type EngineError = FileSystemError | MigrationStepFailed

/** A file and the bytes read from it. */
interface ReadFile {
  readonly info: FileInfo
  readonly bytes: Uint8Array
}

const writtenMeanwhile = (path: string) =>
  changed(path, "the ledger was written after the merge read it (stop the extension first); a rerun merges it")

/** What a decision was based on no longer holds (a foreign writer changed the tree): fail, touch nothing. */
const changed = (path: string, detail: string) => stepFailure("changed-since-planned", path, `changed since planned: ${detail}`)

const isPrefix = (prefix: Uint8Array, of: Uint8Array) =>
  prefix.length <= of.length && prefix.every((x, i) => x === of[i])

// ---------------------------------------------------------------------------------------------------------
// I/O helpers shared by the planner and the executor

const makeIo = (fs: Fs) => {
  const lstatOption = (path: string): Effect.Effect<FileInfo | undefined, FileSystemError> =>
    fs.lstat(path).pipe(Effect.catchIf(isNotFound, () => Effect.succeed(undefined)))

  const sameContent = (a: string, ai: FileInfo, b: string, bi: FileInfo): Effect.Effect<boolean, FileSystemError> => {
    if (ai.type === "File" && bi.type === "File") {
      if (ai.size !== bi.size) return Effect.succeed(false)
      return Effect.zipWith(fs.readFile(a), fs.readFile(b), sameBytes)
    }
    if (ai.type === "SymbolicLink" && bi.type === "SymbolicLink") {
      return Effect.zipWith(fs.readLink(a), fs.readLink(b), (x, y) => x === y)
    }
    return Effect.succeed(false)
  }

  /** Children in name order, so plans (and partial calls) are deterministic. */
  const childNames = (dir: string) => Effect.map(fs.readDirectory(dir), (entries) => entries.map((e) => e.name).sort())

  /** A leftover partial copy of ours is a prefix of the source; anything else at the temp name is not ours. */
  const clearPartialCopy = (src: string, temp: string) =>
    Effect.gen(function*() {
      const info = yield* lstatOption(temp)
      if (info === undefined) return
      const ours = info.type === "File" && isPrefix(yield* fs.readFile(temp), yield* fs.readFile(src))
      if (!ours) return yield* Effect.fail(stepFailure("temp-path-taken", temp, "temp path of a cross-device copy is taken"))
      yield* fs.removeFile(temp)
    })

  /**
   * Replace `path` durably through a temp name of our own (`.<name>.pi-migrate-partial`): a crash leaves at
   * most that temp file, holding derived bytes (a merge result), which the rerun overwrites.
   */
  const writeDurably = (path: string, data: Uint8Array, mode: number, expected?: ReadFile) =>
    Effect.gen(function*() {
      const temp = NodePath.join(NodePath.dirname(path), copyTempName(NodePath.basename(path)))
      const leftover = yield* lstatOption(temp)
      if (leftover !== undefined && leftover.type !== "File") {
        return yield* Effect.fail(stepFailure("temp-path-taken", temp, "temp path of a merge is taken"))
      }
      if (leftover !== undefined) yield* fs.removeFile(temp)
      yield* fs.writeFileExclusive(temp, data, { sync: true, mode })
      if (expected !== undefined && !(yield* stillAsRead(path, expected))) {
        yield* fs.removeFile(temp)
        return yield* Effect.fail(writtenMeanwhile(path))
      }
      yield* fs.rename(temp, path)
    })

  /**
   * Is `path` still the file a merge read (same inode, same bytes)? Checked right before it is replaced or
   * removed: a row a still-running writer appended meanwhile fails the entry instead of being lost.
   */
  const stillAsRead = (path: string, read: ReadFile): Effect.Effect<boolean, FileSystemError> =>
    Effect.gen(function*() {
      const info = yield* lstatOption(path)
      if (info === undefined || info.type !== "File" || info.dev !== read.info.dev || info.ino !== read.info.ino || info.size !== read.bytes.length) return false
      return sameBytes(yield* fs.readFile(path), read.bytes)
    })

  /**
   * Make the destination's parent. A symlink already there (say state/ kept on another disk) is the user's
   * choice of where a canonical directory lives: the OS resolves it like any intermediate component.
   */
  const ensureParent = (dir: string) =>
    fs.makeDirectory(dir, { recursive: true }).pipe(
      Effect.catchIf((e) => e.reason === "AlreadyExists", (e) =>
        Effect.flatMap(fs.lstat(dir), (info) => (info.type === "SymbolicLink" ? Effect.void : Effect.fail(e))))
    )

  /** Copy `src` to the absent `dst` on another device, verify, then remove the source. */
  const copyAcross = (src: string, info: FileInfo, dst: string): Effect.Effect<void, EngineError> =>
    Effect.gen(function*() {
      if (info.type === "File") {
        const temp = NodePath.join(NodePath.dirname(dst), copyTempName(NodePath.basename(dst)))
        yield* clearPartialCopy(src, temp)
        yield* fs.copyFile(src, temp, { sync: true })
        const same = yield* Effect.zipWith(fs.readFile(src), fs.readFile(temp), sameBytes)
        if (!same) {
          yield* fs.removeFile(temp)
          return yield* Effect.fail(stepFailure("copy-not-verified", src, "cross-device copy did not verify"))
        }
        yield* fs.rename(temp, dst)
        yield* fs.removeFile(src)
      } else if (info.type === "SymbolicLink") {
        yield* fs.symlink(yield* fs.readLink(src), dst)
        yield* fs.removeFile(src)
      } else if (info.type === "Directory") {
        // A fresh directory (makeDirectory refuses an existing one): every child moves into absence. A crash
        // midway leaves two directories, which the rerun's plan merges.
        yield* fs.makeDirectory(dst, { mode: info.mode })
        for (const name of yield* childNames(src)) {
          const child = NodePath.join(src, name)
          yield* transfer(child, yield* fs.lstat(child), NodePath.join(dst, name))
        }
        yield* fs.removeDirectory(src)
      } else {
        return yield* Effect.fail(stepFailure("special-file", src, "special files are not copied across devices"))
      }
    })

  /** Move `src` to the absent `dst`: one rename, or a verified copy across devices. */
  const transfer = (src: string, info: FileInfo, dst: string): Effect.Effect<void, EngineError> =>
    ensureParent(NodePath.dirname(dst)).pipe(
      Effect.zipRight(fs.rename(src, dst)),
      Effect.catchIf(isCrossDevice, () => copyAcross(src, info, dst))
    )

  return { lstatOption, sameContent, childNames, writeDurably, stillAsRead, ensureParent, transfer }
}

type Io = ReturnType<typeof makeIo>

// ---------------------------------------------------------------------------------------------------------
// The planner: facts in, decisions out (the rules are pure, in src/domain/LayoutMigration.ts)

/** A decision with the absolute paths the executor needs; a directory merge holds its entries' steps. */
interface Step {
  readonly decision: LayoutDecision
  readonly from: string
  readonly to: string
  readonly children: ReadonlyArray<Step>
  /** merge-directory: remove the emptied source after the children (not when the budget cut them or one was refused). */
  readonly removeSource: boolean
}

/** The decisions of a step tree, in plan order (a directory merge before its entries). */
const flatten = (steps: ReadonlyArray<Step>): ReadonlyArray<Step> => steps.flatMap((s) => [s, ...flatten(s.children)])

/** Will executing this step leave its source gone? */
const completes = (step: Step): boolean =>
  step.decision.action === "refuse" ? false : step.decision.action === "merge-directory" ? step.removeSource : true

/** What one plan shares: the I/O it reads through, how it names paths, and the paths its decisions fill. */
interface PlanContext {
  readonly io: Io
  readonly fs: Fs
  readonly display: (path: string) => string
  /** Paths earlier decisions of this plan will fill: a later decision treats them as taken. */
  readonly claimed: Set<string>
}

const planContext = (io: Io, fs: Fs, display: (path: string) => string): PlanContext => ({ io, fs, display, claimed: new Set() })

/** One decision of the plan, its paths named for the report. */
const stepOf = (
  ctx: PlanContext,
  action: LayoutDecision["action"],
  from: string,
  to: string,
  reason: string,
  children: ReadonlyArray<Step> = [],
  removeSource = true
): Step => ({ decision: { action, from: ctx.display(from), to: ctx.display(to), why: reason }, from, to, children, removeSource })

/** Read-only planning: what cannot be read becomes a reported `refuse` decision (its source stays), never a failed plan. */
const refusal = (ctx: PlanContext, from: string, to: string) => (e: FileSystemError) => Effect.succeed(stepOf(ctx, "refuse", from, to, e.message))

/**
 * The nearest existing ancestor of `path`, when it is not a directory (a file where a directory belongs):
 * nothing can be created below it, so a decision to put something there would only fail. A symlink is the
 * user's choice of where a directory lives (the OS resolves it), so it does not block.
 */
const blocker = (ctx: PlanContext, path: string): Effect.Effect<string | undefined, FileSystemError> =>
  Effect.gen(function*() {
    for (let p = NodePath.dirname(path); p !== NodePath.dirname(p); p = NodePath.dirname(p)) {
      const info = yield* ctx.io.lstatOption(p)
      if (info === undefined) continue
      return info.type === "Directory" || info.type === "SymbolicLink" ? undefined : why.blocked(ctx.display(p), aFileType(info.type))
    }
    return undefined
  })

/** Keep `src` at the first free conflict candidate of `base` (`destination`: what it collided with, for the why). */
const planPreserve = (
  ctx: PlanContext,
  src: string,
  srcInfo: FileInfo,
  base: string,
  destination: string,
  reason?: string
): Effect.Effect<Step> =>
  Effect.gen(function*() {
    const blocked = yield* blocker(ctx, base)
    if (blocked !== undefined) return stepOf(ctx, "refuse", src, base, blocked)
    for (let k = 0;; k++) {
      const candidate = conflictCandidate(base, k)
      const taken = ctx.claimed.has(candidate)
      const info = taken ? undefined : yield* ctx.io.lstatOption(candidate)
      const identical = info !== undefined && (yield* ctx.io.sameContent(src, srcInfo, candidate, info))
      switch (preserveRule(srcInfo.type, info?.type, identical, taken)) {
        case "take":
          ctx.claimed.add(candidate)
          return stepOf(ctx, "preserve-conflict", src, candidate, reason ?? why.conflict(ctx.display(destination), k))
        case "already-kept":
          return stepOf(ctx, "remove-duplicate", src, candidate, why.alreadyKept(ctx.display(destination)))
        case "continue-directory": {
          const children: Array<Step> = []
          for (const name of yield* ctx.io.childNames(src)) {
            const child = NodePath.join(src, name)
            const childInfo = yield* ctx.fs.lstat(child).pipe(Effect.either)
            children.push(
              childInfo._tag === "Left"
                ? stepOf(ctx, "refuse", child, NodePath.join(candidate, name), childInfo.left.message)
                : yield* planPreserve(ctx, child, childInfo.right, NodePath.join(candidate, name), NodePath.join(destination, name))
            )
          }
          return stepOf(ctx, "merge-directory", src, candidate, why.continuePreservation, children, children.every(completes))
        }
        case "next":
          continue
      }
    }
  }).pipe(Effect.catchAll(refusal(ctx, src, base)))

/** Place `src` at `dst` (collisions kept under `base`); `budget` limits a top-level merge's entries. */
const planPlace = (ctx: PlanContext, src: string, dst: string, base: string, budget?: Budget): Effect.Effect<Step> =>
  Effect.gen(function*() {
    const srcInfo = yield* ctx.io.lstatOption(src)
    if (srcInfo === undefined) return stepOf(ctx, "already-done", src, dst, why.vanished)
    if (ctx.claimed.has(dst)) return yield* planPreserve(ctx, src, srcInfo, base, dst)
    const dstInfo = yield* ctx.io.lstatOption(dst)
    const identical = dstInfo !== undefined && (yield* ctx.io.sameContent(src, srcInfo, dst, dstInfo))
    switch (placeRule(srcInfo.type, dstInfo?.type, identical)) {
      case "move": {
        const blocked = yield* blocker(ctx, dst)
        if (blocked !== undefined) return stepOf(ctx, "refuse", src, dst, blocked)
        ctx.claimed.add(dst)
        return stepOf(ctx, "move", src, dst, why.move)
      }
      case "remove-duplicate":
        return stepOf(ctx, "remove-duplicate", src, dst, why.duplicate)
      case "preserve":
        return yield* planPreserve(ctx, src, srcInfo, base, dst)
      case "merge-directory": {
        const children: Array<Step> = []
        let cut = false
        for (const name of yield* ctx.io.childNames(src)) {
          if (budget !== undefined) {
            // Entry by entry, each top-level child costing one unit of the budget.
            if (budget.remaining <= 0) {
              budget.partial = true
              cut = true
              break
            }
            budget.remaining--
          }
          children.push(yield* planPlace(ctx, NodePath.join(src, name), NodePath.join(dst, name), NodePath.join(base, name)))
        }
        return stepOf(ctx, "merge-directory", src, dst, cut ? why.mergeDirectory + why.budget : why.mergeDirectory, children, !cut && children.every(completes))
      }
    }
  }).pipe(Effect.catchAll(refusal(ctx, src, dst)))

/** trust.json at both places: decide the JSON merge now, from both copies' bytes. */
const planJson = (ctx: PlanContext, src: string, srcInfo: FileInfo, dst: string, base: string): Effect.Effect<Step> =>
  Effect.gen(function*() {
    // Read-only: a copy that cannot be read counts as unparsable, so it is preserved as a reported conflict.
    const read = (p: string) => ctx.fs.readFile(p, { maxBytes: MERGE_MAX_BYTES }).pipe(Effect.option)
    const legacy = yield* read(src)
    const canonical = yield* read(dst)
    const merge = legacy._tag === "None"
      ? { _tag: "Unparsable" as const, which: "legacy" as const }
      : canonical._tag === "None"
      ? { _tag: "Unparsable" as const, which: "canonical" as const }
      : mergeJsonObjects(legacy.value, canonical.value)
    if (merge._tag === "Unparsable") {
      return yield* planPreserve(ctx, src, srcInfo, base, dst, why.unparsableJson(merge.which, ctx.display(dst)))
    }
    // A legacy value the canonical one overrode is still someone's decision: keep that copy for review.
    const kept = merge.overridden.length > 0 ? [yield* planPreserve(ctx, src, srcInfo, base, dst, why.jsonKept(ctx.display(dst)))] : []
    return stepOf(ctx, "merge-json", src, dst, why.mergeJson(merge.overridden, kept[0]?.decision.to), kept)
  }).pipe(Effect.catchAll(refusal(ctx, src, dst)))

/** Whether any decision of a step tree puts data below `dir`. */
const putsBelow = (step: Step, dir: string): boolean =>
  step.to.startsWith(dir + NodePath.sep) || step.children.some((child) => putsBelow(child, dir))

/**
 * One legacy root entry; refused whole when its plan would keep a copy below `state/migration-conflicts/` and that
 * directory, or one below it on the way, is a link or a file. It is the library's own (made 0700 by it), so a link
 * there is nobody's choice of layout, and the one other copy of colliding data is never put through it (the
 * per-entry plans refuse the same, by the same `linkOnTheWay`).
 */
const planUnit = (ctx: PlanContext, root: string, unit: LayoutUnit, budget: Budget): Effect.Effect<Step | undefined> =>
  Effect.gen(function*() {
    const step = yield* planUnitSteps(ctx, root, unit, budget)
    const conflicts = NodePath.join(root, ...MIGRATION_CONFLICTS)
    if (step === undefined || !putsBelow(step, conflicts)) return step
    const blocked = yield* linkOnTheWay(ctx.io, { anchor: NodePath.dirname(conflicts), display: ctx.display }, [NodePath.join(root, ...unit.conflictBase)])
    return blocked === undefined ? step : stepOf(ctx, "refuse", step.from, step.to, blocked)
  }).pipe(Effect.catchAll((e) => Effect.succeed(stepOf(ctx, "refuse", NodePath.join(root, unit.name), NodePath.join(root, ...unit.destination), e.message))))

const planUnitSteps = (ctx: PlanContext, root: string, unit: LayoutUnit, budget: Budget): Effect.Effect<Step | undefined> =>
  Effect.gen(function*() {
    const src = NodePath.join(root, unit.name)
    const dst = NodePath.join(root, ...unit.destination)
    const base = NodePath.join(root, ...unit.conflictBase)
    const srcInfo = yield* ctx.io.lstatOption(src)
    if (srcInfo === undefined) return stepOf(ctx, "already-done", src, dst, why.vanished)
    const dstInfo = yield* ctx.io.lstatOption(dst)
    if (srcInfo.type === "Directory" && dstInfo?.type === "Directory") return yield* planPlace(ctx, src, dst, base, budget)
    if (budget.remaining <= 0) {
      budget.partial = true
      return undefined
    }
    budget.remaining--
    if (unit.mergeJson && srcInfo.type === "File" && dstInfo?.type === "File") return yield* planJson(ctx, src, srcInfo, dst, base)
    return yield* planPlace(ctx, src, dst, base)
    // Read-only planning, as `refusal`: a unit that cannot be read is a reported `refuse` decision.
  }).pipe(Effect.catchAll((e) => Effect.succeed(stepOf(ctx, "refuse", NodePath.join(root, unit.name), NodePath.join(root, ...unit.destination), e.message))))

interface Budget {
  remaining: number
  partial: boolean
}

// ---------------------------------------------------------------------------------------------------------
// The executor: does exactly what a step says, after checking what it was based on still holds

const makeExecutor = (io: Io, fs: Fs, record: (step: Step, outcome: DecisionOutcome, error?: string) => void) => {
  /** A failure is the failing step's, not also every enclosing directory merge's. */
  const attributed = new WeakSet<object>()
  const execute = (s: Step): Effect.Effect<void, EngineError> =>
    Effect.gen(function*() {
      switch (s.decision.action) {
        case "move":
        case "preserve-conflict": {
          const info = yield* io.lstatOption(s.from)
          if (info === undefined) return yield* Effect.fail(changed(s.from, "the legacy entry is gone"))
          if ((yield* io.lstatOption(s.to)) !== undefined) return yield* Effect.fail(changed(s.to, "something is there now"))
          yield* io.transfer(s.from, info, s.to)
          break
        }
        case "remove-duplicate": {
          const [a, b] = [yield* io.lstatOption(s.from), yield* io.lstatOption(s.to)]
          if (a === undefined || b === undefined || !(yield* io.sameContent(s.from, a, s.to, b))) {
            return yield* Effect.fail(changed(s.from, `no longer identical to ${s.decision.to}`))
          }
          yield* fs.removeFile(s.from)
          break
        }
        case "merge-directory": {
          for (const child of s.children) yield* execute(child)
          if (s.removeSource) yield* fs.removeDirectory(s.from)
          break
        }
        case "merge-json": {
          const legacy = yield* fs.readFile(s.from, { maxBytes: MERGE_MAX_BYTES })
          const canonical = yield* fs.readFile(s.to, { maxBytes: MERGE_MAX_BYTES })
          const merge = mergeJsonObjects(legacy, canonical)
          if (merge._tag === "Unparsable" || (merge.overridden.length > 0) !== (s.children.length > 0)) {
            return yield* Effect.fail(changed(s.from, "the JSON copies are not the ones planned"))
          }
          // Durable merged result first; the legacy copy is retired (or kept) only after it.
          if (!merge.canonicalUnchanged) yield* io.writeDurably(s.to, encodeJsonObject(merge.merged), (yield* fs.lstat(s.to)).mode)
          for (const child of s.children) yield* execute(child)
          if (s.children.length === 0) yield* fs.removeFile(s.from)
          break
        }
        case "already-done":
        case "refuse":
          break
      }
      record(s, "done")
    }).pipe(Effect.tapError((e) =>
      Effect.sync(() => {
        if (attributed.has(e)) return
        attributed.add(e)
        record(s, "failed", e.message)
      })
    ))
  return execute
}

/** The executed decisions in plan order: steps the executor never reached are `skipped`. */
const executedIn = (
  steps: ReadonlyArray<Step>,
  outcomes: ReadonlyMap<Step, { readonly outcome: DecisionOutcome; readonly error?: string | undefined }>
): ReadonlyArray<ExecutedDecision> =>
  flatten(steps).map((s) => {
    const o = outcomes.get(s)
    if (o === undefined) return { ...s.decision, outcome: "skipped" }
    return o.error === undefined ? { ...s.decision, outcome: o.outcome } : { ...s.decision, outcome: o.outcome, error: o.error }
  })

// ---------------------------------------------------------------------------------------------------------
// the migration marker

type MarkerBusy = { readonly _tag: "Busy"; readonly holder: string }
type Lock = { readonly _tag: "Acquired"; readonly release: Effect.Effect<void> } | MarkerBusy

const takeMigrationMarker = (
  deps: Deps,
  agentDir: string,
  attempts: number,
  delay: Duration.DurationInput
): Effect.Effect<Lock, FileSystemError> =>
  // A marker torn by a crash mid-write never decodes: each try reclaims it once older than the stale bound
  // (the one unreadable rule, src/domain/Liveness.ts), instead of freezing every migration.
  acquireMarkerWaiting(deps, NodePath.join(agentDir, MIGRATION_MARKER), MIGRATION_MARKER_PURPOSE, {
    // `attempts` tries in all, `delay` apart.
    schedule: Schedule.spaced(delay).pipe(Schedule.intersect(Schedule.recurs(Math.max(1, attempts) - 1))),
    busy: (held): MarkerBusy => ({ _tag: "Busy", holder: held.unreadable ? held.detail : held.holder })
  }).pipe(
    Effect.map((release): Lock => ({ _tag: "Acquired", release })),
    Effect.catchIf((e): e is MarkerBusy => e._tag === "Busy", (busy) => Effect.succeed<Lock>(busy))
  )

const withMarker = <A>(
  deps: Deps,
  agentDir: string,
  options: LayoutOptions | undefined,
  onBusy: (message: string) => A,
  body: Effect.Effect<A>
): Effect.Effect<A> =>
  takeMigrationMarker(
    deps,
    agentDir,
    options?.lockAttempts ?? DEFAULT_LOCK_ATTEMPTS,
    options?.lockRetryDelay ?? DEFAULT_LOCK_DELAY
  ).pipe(
    Effect.matchEffect({
      onFailure: (e) => Effect.succeed(onBusy(`cannot take the migration marker: ${e.message}`)),
      onSuccess: (lock) =>
        lock._tag === "Busy"
          ? Effect.succeed(
            onBusy(`another migration is running (${lock.holder}); nothing was moved — retry later or run the doctor`)
          )
          : Effect.ensuring(body, lock.release)
    })
  )

/**
 * Nothing to migrate, but something of ours is left over (a marker whose owner crashed after its last move,
 * a journal temp file): take the marker through the normal reclaim (no waiting; a live owner is left alone),
 * tidy, and release, so a finished migration leaves nothing behind.
 */
const tidyLeftovers = (deps: Deps, agentDir: string, leftovers: ReadonlyArray<string>, tidy: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const marker = NodePath.join(agentDir, MIGRATION_MARKER)
    // Read-only check: what cannot be examined counts as absent, so nothing is tidied (never removed unseen).
    const present = yield* Effect.forEach([marker, ...leftovers], (p) => deps.fs.lstat(p).pipe(Effect.option))
    if (present.every((p) => p._tag === "None")) return
    yield* withMarker(deps, agentDir, { lockAttempts: 1 }, () => undefined, tidy)
  })

// ---------------------------------------------------------------------------------------------------------
// MG1: the layout migration

const readRootNames = (fs: Fs, agentDir: string) =>
  fs.readDirectory(agentDir).pipe(
    Effect.map((entries) => entries.map((e) => e.name)),
    Effect.catchIf((e) => e.reason === "NotFound" || e.reason === "NotADirectory", () => Effect.succeed([]))
  )

/** The plan of the layout migration over the (resolved) agent dir `root`: one step per legacy root entry. */
const planLayout = (
  fs: Fs,
  agentDir: string,
  root: string,
  options?: LayoutOptions
): Effect.Effect<LayoutPlan & { readonly steps: ReadonlyArray<Step> }> =>
  Effect.gen(function*() {
    const io = makeIo(fs)
    const display = (p: string) => displayPath(root, p)
    const ctx = planContext(io, fs, display)
    const base = { agentDir, exists: true, notADirectory: null, partial: false }
    const info = yield* fs.lstat(root).pipe(Effect.either)
    if (info._tag === "Left" && isNotFound(info.left)) return { ...base, exists: false, decisions: [], steps: [] }
    const refuseRoot = (message: string) => {
      const steps = [{ decision: { action: "refuse" as const, from: ".", to: ".", why: message }, from: root, to: root, children: [], removeSource: false }]
      return { ...base, decisions: steps.map((s) => s.decision), steps }
    }
    if (info._tag === "Left") return refuseRoot(info.left.message)
    if (info.right.type !== "Directory") {
      return { ...base, exists: false, notADirectory: fileTypeWord(info.right.type), decisions: [], steps: [] }
    }
    const names = yield* fs.readDirectory(root).pipe(Effect.map((entries) => entries.map((e) => e.name)), Effect.either)
    if (names._tag === "Left") return refuseRoot(names.left.message)
    const budget: Budget = { remaining: Math.max(1, options?.maxEntries ?? DEFAULT_MAX_ENTRIES), partial: false }
    const steps: Array<Step> = []
    for (const unit of layoutUnits(names.right)) {
      const planned = yield* planUnit(ctx, root, unit, budget)
      if (planned !== undefined) steps.push(planned)
      if (budget.partial) break
    }
    return { ...base, partial: budget.partial, decisions: flatten(steps).map((s) => s.decision), steps }
  })

/** Execute a plan's steps, entry by entry: a failure stops its own entry only. */
const executeLayout = (fs: Fs, steps: ReadonlyArray<Step>, partial: boolean): Effect.Effect<LayoutReport> =>
  Effect.gen(function*() {
    const outcomes = new Map<Step, { readonly outcome: DecisionOutcome; readonly error?: string | undefined }>()
    const execute = makeExecutor(makeIo(fs), fs, (s, outcome, error) => void outcomes.set(s, { outcome, error }))
    // A failed entry's error is already in `outcomes` (the report's `errors`); the next entry goes on.
    for (const unit of steps) yield* execute(unit).pipe(Effect.catchAll(() => Effect.void))
    return layoutReportOf(executedIn(steps, outcomes), partial)
  })

// ---------------------------------------------------------------------------------------------------------
// MG2: the per-entry toolkit

/** `runPlan` / `previewPlan` options. */
export interface PlanOptions extends Pick<LayoutOptions, "lockAttempts" | "lockRetryDelay"> {
  /**
   * The web host's data root for `{ web: <extId> }` entries: given, else `$PI_WEB_DATA_DIR` (through `Host.env`),
   * else `~/.pi/web/data` (docs/tiers.md "Extension data tiers (web host)").
   */
  readonly webDataRoot?: string | undefined
}

/** One entry with its absolute paths: everything it touches lies inside `root`. */
interface Placed {
  readonly entry: PlanEntry
  readonly root: string
  /** Links are never gone through below this directory (the agent dir, or the web data root): PathChain.ts. */
  readonly anchor: string
  readonly from: string
  readonly to: string
  /** `<the root's state tier>/migration-conflicts/<plan>/<entry>`: where colliding data is kept. */
  readonly conflictBase: string
  readonly conflictsDir: string
  /** Relative to the root (`/`-separated), or absolute when outside it (a link on the way above the root). */
  readonly display: (path: string) => string
}

const relativeOrAbsolute = (root: string) => (path: string): string => {
  const rel = NodePath.relative(root, path)
  // The root itself and anything outside it (a link on the way above it) by their absolute paths.
  if (rel === "" || rel === ".." || rel.startsWith(`..${NodePath.sep}`) || NodePath.isAbsolute(rel)) return path
  return rel.split(NodePath.sep).join("/")
}

/** Where each entry's root is: the agent dir, `<web data root>/<extId>`, or `state/extensions/<ns>`. */
const placeEntries = (plan: MigrationPlan, agentRoot: string, webDataRoot: () => string): ReadonlyArray<Placed> =>
  plan.entries.map((entry) => {
    const planRoot = entryRoot(plan, entry)
    const agent = agentPaths(agentRoot)
    const [root, anchor, stateTier] = planRoot === "agent"
      ? [agentRoot, agentRoot, agent.stateDir()]
      : "web" in planRoot
      ? [tierPaths(webDataRoot(), planRoot.web).extensionDir, webDataRoot(), tierPaths(webDataRoot(), planRoot.web).stateDir]
      : [agent.extensionStateDir(planRoot.agentExtension), agentRoot, agent.extensionStateDir(planRoot.agentExtension)]
    const conflictsDir = migrationConflictsDir(stateTier)
    // Decoded by `planProblem` before this runs: relative, normalised, no `..`.
    const inside = (path: string) => NodePath.join(root, ...path.split("/"))
    return {
      entry,
      root,
      anchor,
      from: inside(entry.from),
      to: inside(entry.to),
      conflictBase: NodePath.join(conflictsDir, plan.id, entry.id),
      conflictsDir,
      display: relativeOrAbsolute(root)
    }
  })

const validatePlan = (plan: MigrationPlan): Effect.Effect<void, InvalidMigrationPlan> => {
  const problem = planProblem(plan)
  if (problem === undefined) return Effect.void
  const at = problem.index === undefined
    ? problem.field
    : `entries[${problem.index}]${problem.id === undefined ? "" : ` (${JSON.stringify(problem.id)})`}.${problem.field}`
  return Effect.fail(new InvalidMigrationPlan({ source: "plan", at, detail: problem.detail }))
}

const journalPath = (agentDir: string, planId: string) => NodePath.join(agentDir, ...MIGRATIONS_JOURNAL_DIR, `${planId}.jsonl`)

const journalTemp = (journal: string) => NodePath.join(NodePath.dirname(journal), copyTempName(NodePath.basename(journal)))

/**
 * A journal temp file left by a crash mid-append: when it is the old journal plus whole records, the append
 * completed its write and only the rename is missing, so finish it; otherwise drop the torn temp.
 */
const settleJournal = (fs: Fs, journal: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const temp = journalTemp(journal)
    // Absent: nothing to settle; any other failure goes to the JournalNotSettled warning below.
    const info = yield* fs.lstat(temp).pipe(Effect.map((i) => i as typeof i | undefined), Effect.catchIf(isNotFound, () => Effect.succeed(undefined)))
    if (info === undefined || info.type !== "File") return
    const pending = yield* fs.readFile(temp)
    const current = yield* fs.readFile(journal).pipe(Effect.catchIf(isNotFound, () => Effect.succeed(new Uint8Array())))
    const whole = parseJournal(pending).bad === 0 && isPrefix(current, pending) && pending.length > current.length
    yield* whole ? fs.rename(temp, journal) : fs.removeFile(temp)
  }).pipe(
    // Left for the next run to settle (the journal itself is untouched); said, not swallowed.
    Effect.catchAll((e) =>
      warn({ _tag: "JournalNotSettled", path: journalTemp(journal), reason: e.message, message: `could not settle the migration journal's temp file (${e.message}); the next migration retries` })
    )
  )

const readJournal = (fs: Fs, path: string) =>
  fs.readFile(path).pipe(
    Effect.map(parseJournal),
    Effect.catchIf(isNotFound, () => Effect.succeed({ records: [], bad: 0 }))
  )

/** Append = read + durable rewrite (journals are small; this keeps every line whole after a crash). */
const appendJournal = (fs: Fs, io: Io, path: string, record: JournalRecord) =>
  Effect.gen(function*() {
    yield* io.ensureParent(NodePath.dirname(path))
    const current = yield* fs.readFile(path).pipe(
      Effect.catchIf(isNotFound, () => Effect.succeed(new Uint8Array()))
    )
    const line = new TextEncoder().encode(encodeJournalLine(record))
    const next = new Uint8Array(current.length + line.length)
    next.set(current)
    next.set(line, current.length)
    yield* io.writeDurably(path, next, 0o600)
  })

/** A ledger merge, decided: what is written where, and what happens to `from`. */
interface LedgerDecision {
  readonly fromInfo: FileInfo
  readonly fromBytes: Uint8Array
  readonly toInfo: FileInfo
  readonly toBytes: Uint8Array
  readonly merged: Uint8Array
  readonly rewriteTo: boolean
  /** Where `to`'s previous bytes are kept before it is rewritten (some of its rows were replaced or repeated). */
  readonly keepTo: { readonly path: string; readonly already: boolean } | undefined
  /** How `from` is kept when some of its rows did not survive; otherwise it is removed. */
  readonly keepFrom: Step | undefined
  readonly rows: number
  readonly mergedRows: number
  readonly decision: StepDecision
}

/** One entry, planned: the same function for the dry run (over the overlay) and the run (under the marker). */
type PlannedEntry =
  | { readonly _tag: "Absent"; readonly why: string }
  | { readonly _tag: "Refused"; readonly why: string }
  | { readonly _tag: "Move"; readonly step: Step }
  | { readonly _tag: "Ledger"; readonly ledger: LedgerDecision }

const ledgerRefusal = (why: string): PlannedEntry => ({ _tag: "Refused", why })
const plannedMove = (step: Step): PlannedEntry => ({ _tag: "Move", step })

/** The first directory on the way to any of `paths` that is not one (a link, a file): never gone through. */
const linkOnTheWay = (
  io: Io,
  placed: { readonly anchor: string; readonly display: (path: string) => string },
  paths: ReadonlyArray<string>
): Effect.Effect<string | undefined, FileSystemError> =>
  Effect.gen(function*() {
    for (const path of paths) {
      for (const dir of dirsBelowRoot(placed.anchor, path) ?? []) {
        const info = yield* io.lstatOption(dir)
        if (info === undefined) break
        const v = chainComponentViolation(info.type)
        if (v !== null) return `${placed.display(dir)} is ${v}: the entry is left as it is`
      }
    }
    return undefined
  })

/**
 * The next free place to keep a copy of `bytes` (`<base>`, `<base>.1`, …), or the one that already holds them
 * (a rerun after a crash finds its own copy and makes no second one).
 */
const keepCopyAt = (io: Io, fs: Fs, base: string, bytes: Uint8Array) =>
  Effect.gen(function*() {
    for (let k = 0;; k++) {
      const candidate = conflictCandidate(base, k)
      const info = yield* io.lstatOption(candidate)
      if (info === undefined) return { path: candidate, already: false }
      if (info.type === "File" && info.size === bytes.length && sameBytes(yield* fs.readFile(candidate), bytes)) return { path: candidate, already: true }
    }
  })

const planLedger = (
  ctx: PlanContext,
  placed: Placed,
  entry: MergeLedgerEntry,
  fromInfo: FileInfo
): Effect.Effect<PlannedEntry, FileSystemError> =>
  Effect.gen(function*() {
    const { io, fs } = ctx
    const { from, to, display } = placed
    if (fromInfo.type !== "File") return ledgerRefusal(`${display(from)} is ${aFileType(fromInfo.type)}, not a ledger file`)
    const toInfo = yield* io.lstatOption(to)
    // Nothing to merge with: the ledger moves as it is (one rename, its bytes untouched).
    if (toInfo === undefined) return plannedMove(yield* planPlace(ctx, from, to, placed.conflictBase))
    if (toInfo.type !== "File") return ledgerRefusal(`${display(to)} is ${aFileType(toInfo.type)}, not a ledger file`)
    const fromBytes = yield* fs.readFile(from, { maxBytes: MERGE_MAX_BYTES })
    const toBytes = yield* fs.readFile(to, { maxBytes: MERGE_MAX_BYTES })
    const fromRows = ledgerParse(entry.format, fromBytes)
    if (!fromRows.ok) return ledgerRefusal(`cannot parse ${display(from)}: ${fromRows.why}`)
    const toRows = ledgerParse(entry.format, toBytes)
    if (!toRows.ok) return ledgerRefusal(`cannot parse ${display(to)}: ${toRows.why}`)
    for (const [which, rows] of [[from, fromRows.rows], [to, toRows.rows]] as const) {
      const keyless = keylessRow(rows, entry.key)
      if (keyless !== undefined) return ledgerRefusal(`row ${keyless} of ${display(which)} has no key, so it cannot be merged by key`)
    }
    const merge = mergeLedgerRows({ to: toRows.rows, from: fromRows.rows, key: entry.key, winner: entry.winner })
    const merged = ledgerSerialize(entry.format, merge.rows)
    const rewriteTo = !sameBytes(merged, toBytes)
    const keepTo = !merge.toFullyKept && rewriteTo ? yield* keepCopyAt(io, fs, `${placed.conflictBase}.replaced`, toBytes) : undefined
    const keepFrom = merge.fromFullyKept
      ? undefined
      : yield* planPreserve(ctx, from, fromInfo, placed.conflictBase, to, `some of its rows lost to ${display(to)} (the winner) or repeat a key: kept here whole, for review`)
    const refused = keepFrom === undefined ? undefined : flatten([keepFrom]).find((s) => s.decision.action === "refuse")
    if (refused !== undefined) return ledgerRefusal(refused.decision.why)
    const decision: StepDecision = {
      action: "merge-ledger",
      from: display(from),
      to: display(to),
      why: ledgerWhy({
        toRows: toRows.rows.length,
        fromRows: fromRows.rows.length,
        merge,
        winner: entry.winner,
        fromKeptAt: keepFrom?.decision.to,
        toKeptAt: keepTo === undefined ? undefined : display(keepTo.path)
      })
    }
    const ledger: LedgerDecision = {
      fromInfo,
      fromBytes,
      toInfo,
      toBytes,
      merged,
      rewriteTo,
      keepTo,
      keepFrom,
      rows: merge.rows.length,
      mergedRows: merge.added + merge.replaced,
      decision
    }
    return { _tag: "Ledger", ledger } as PlannedEntry
  })

/** Plan one entry over `fs` (the real port under the marker, or the dry run's overlay); never fails: what cannot be read is a refusal. */
const planEntry = (fs: Fs, placed: Placed): Effect.Effect<PlannedEntry> =>
  Effect.gen(function*() {
    const io = makeIo(fs)
    const ctx = planContext(io, fs, placed.display)
    // A file where a directory of the source's path belongs: named, not an error about some inner path.
    const notADirectory = (e: FileSystemError) => e.reason === "NotADirectory"
    const fromLookup = yield* io.lstatOption(placed.from).pipe(
      Effect.map((info) => ({ info, blocked: undefined as string | undefined })),
      Effect.catchIf(notADirectory, (e) => Effect.map(linkOnTheWay(io, placed, [placed.from]), (why) => ({ info: undefined, blocked: why ?? e.message })))
    )
    if (fromLookup.blocked !== undefined) return { _tag: "Refused", why: fromLookup.blocked } as const
    const fromInfo = fromLookup.info
    if (fromInfo === undefined) {
      const rootThere = (yield* io.lstatOption(placed.root)) !== undefined
      return { _tag: "Absent", why: rootThere ? "the source is absent" : `the source is absent (its root ${placed.root} does not exist)` } as const
    }
    const link = yield* linkOnTheWay(io, placed, [placed.from, placed.to, placed.conflictBase])
    if (link !== undefined) return { _tag: "Refused", why: link } as const
    const entry = placed.entry
    if (entry.kind === "move") return { _tag: "Move", step: yield* planPlace(ctx, placed.from, placed.to, placed.conflictBase) } as const
    return yield* planLedger(ctx, placed, entry, fromInfo)
  }).pipe(Effect.catchAll((e: FileSystemError) => Effect.succeed<PlannedEntry>({ _tag: "Refused", why: e.message })))

/** The decisions of a planned entry, its own first (what the dry run prints, and a run reports). */
const decisionsOf = (placed: Placed, planned: PlannedEntry): ReadonlyArray<StepDecision> => {
  const own = (action: StepDecision["action"], why: string): StepDecision => ({ action, from: placed.display(placed.from), to: placed.display(placed.to), why })
  switch (planned._tag) {
    case "Absent":
      return [own("already-done", planned.why)]
    case "Refused":
      return [own("refuse", planned.why)]
    case "Move":
      return flatten([planned.step]).map((s) => s.decision)
    case "Ledger":
      return [planned.ledger.decision, ...(planned.ledger.keepFrom === undefined ? [] : flatten([planned.ledger.keepFrom]).map((s) => s.decision))]
  }
}

/** What a planned entry does to the tree, for the next entry's dry-run view. */
const effectsOf = (placed: Placed, planned: PlannedEntry): ReadonlyArray<OverlayEffect> => {
  const ofStep = (s: Step): ReadonlyArray<OverlayEffect> => {
    switch (s.decision.action) {
      case "move":
      case "preserve-conflict":
        return [{ _tag: "Placed", path: s.to, source: s.from }, { _tag: "Removed", path: s.from }]
      case "remove-duplicate":
        return [{ _tag: "Removed", path: s.from }]
      case "merge-directory":
        return [...s.children.flatMap(ofStep), ...(s.removeSource ? [{ _tag: "Removed" as const, path: s.from }] : [])]
      default:
        return []
    }
  }
  switch (planned._tag) {
    case "Absent":
    case "Refused":
      return []
    case "Move":
      return flatten([planned.step]).some((s) => s.decision.action === "refuse") ? [] : ofStep(planned.step)
    case "Ledger": {
      const l = planned.ledger
      const written = (path: string, bytes: Uint8Array): OverlayEffect => ({ _tag: "Written", path, bytes, info: { ...l.toInfo, size: bytes.length } })
      return [
        ...(l.keepTo !== undefined && !l.keepTo.already ? [written(l.keepTo.path, l.toBytes)] : []),
        ...(l.rewriteTo ? [written(placed.to, l.merged)] : []),
        ...(l.keepFrom === undefined ? [{ _tag: "Removed" as const, path: placed.from }] : ofStep(l.keepFrom))
      ]
    }
  }
}

/** Preserve-family decisions of a step tree that put data under the entry's conflict directory. */
const keptUnder = (step: Step, conflictsDir: string, display: (p: string) => string): ReadonlyArray<string> =>
  flatten([step])
    .filter((s) => (s.decision.action === "preserve-conflict" || s.decision.action === "remove-duplicate") && s.to.startsWith(conflictsDir + NodePath.sep))
    .map((s) => display(s.to))

type EntryResult = {
  readonly outcome: EntryReport["outcome"]
  readonly rows?: number
  readonly mergedRows?: number
  readonly conflicts?: ReadonlyArray<string>
  readonly reason?: string
}

/** Execute a planned entry (the executor checks each move's premises; a refused decision is not started). */
const executeEntry = (fs: Fs, placed: Placed, planned: PlannedEntry): Effect.Effect<EntryResult, EngineError> =>
  Effect.gen(function*() {
    const io = makeIo(fs)
    const execute = makeExecutor(io, fs, () => undefined)
    const runStep = (step: Step) =>
      Effect.gen(function*() {
        const refused = flatten([step]).find((s) => s.decision.action === "refuse")
        if (refused !== undefined) return yield* Effect.fail(stepFailure("refused", refused.from, refused.decision.why))
        yield* execute(step)
      })
    switch (planned._tag) {
      case "Absent":
        return { outcome: "already-done", reason: planned.why }
      case "Refused":
        return { outcome: "failed", reason: planned.why }
      case "Move": {
        yield* runStep(planned.step)
        const conflicts = keptUnder(planned.step, placed.conflictsDir, placed.display)
        return conflicts.length > 0 ? { outcome: "conflict-preserved", conflicts } : { outcome: "moved" }
      }
      case "Ledger": {
        const l = planned.ledger
        // `to`'s previous bytes first (when rows of it are replaced), then the durable merged result; the source
        // is retired only after both.
        if (l.keepTo !== undefined && !l.keepTo.already) {
          yield* io.ensureParent(NodePath.dirname(l.keepTo.path))
          yield* io.writeDurably(l.keepTo.path, l.toBytes, l.toInfo.mode)
        }
        // Replaced, and `from` removed, only if still the bytes the merge read: a row an extension still running
        // appended meanwhile fails the entry instead of being lost (a rerun merges it).
        if (l.rewriteTo) yield* io.writeDurably(placed.to, l.merged, l.toInfo.mode, { info: l.toInfo, bytes: l.toBytes })
        const kept = [
          ...(l.keepTo === undefined ? [] : [placed.display(l.keepTo.path)])
        ]
        if (l.keepFrom === undefined) {
          if (!(yield* io.stillAsRead(placed.from, { info: l.fromInfo, bytes: l.fromBytes }))) return yield* Effect.fail(writtenMeanwhile(placed.from))
          yield* fs.removeFile(placed.from)
        } else {
          yield* runStep(l.keepFrom)
          kept.unshift(...keptUnder(l.keepFrom, placed.conflictsDir, placed.display))
        }
        return kept.length === 0
          ? { outcome: "merged", rows: l.rows, mergedRows: l.mergedRows }
          : { outcome: "conflict-preserved", rows: l.rows, mergedRows: l.mergedRows, conflicts: kept }
      }
    }
  })

/** TD1's one resolution, as the backups, the config history and the doctor resolve it. */
const webRootOf = (deps: Deps, options: PlanOptions | undefined) => () => webDataRootOf(deps.host, options?.webDataRoot).path

/** The dry run: every entry planned in order, each over the tree as the entries before it will have left it. */
const previewProgram = (deps: Deps, agentRoot: string, plan: MigrationPlan, options?: PlanOptions) =>
  Effect.gen(function*() {
    yield* validatePlan(plan)
    const overlay = makeOverlay(deps.fs)
    const entries: Array<StepPreview> = []
    for (const placed of placeEntries(plan, agentRoot, webRootOf(deps, options))) {
      const planned = yield* planEntry(overlay.fs, placed)
      overlay.record(effectsOf(placed, planned))
      entries.push({
        id: placed.entry.id,
        kind: placed.entry.kind,
        root: placed.root,
        from: placed.display(placed.from),
        to: placed.display(placed.to),
        decisions: decisionsOf(placed, planned)
      })
    }
    const preview: PlanPreview = {
      planId: plan.id,
      journal: displayPath(agentRoot, journalPath(agentRoot, plan.id)),
      entries,
      refused: entries.some((e) => e.decisions.some((d) => d.action === "refuse"))
    }
    return preview
  })

const toolkitProgram = (deps: Deps, agentDir: string, plan: MigrationPlan, options?: PlanOptions) =>
  Effect.gen(function*() {
    yield* validatePlan(plan)
    const fs = deps.fs
    const journal = journalPath(agentDir, plan.id)
    const placed = placeEntries(plan, agentDir, webRootOf(deps, options))
    const reportOf = (entries: ReadonlyArray<EntryReport>): PlanReport => ({
      planId: plan.id,
      journal: displayPath(agentDir, journal),
      entries,
      failed: entries.some((e) => e.outcome === "failed")
    })
    // Read-only: a source that cannot be examined counts as pending, so the run goes on and reports its entry failed.
    const pending = yield* Effect.forEach(placed, ({ from }) =>
      fs.lstat(from).pipe(Effect.as(true), Effect.catchAll((e) => Effect.succeed(!isNotFound(e)))))
    if (!pending.some((p) => p)) {
      // Nothing to move: report from the journal, create nothing.
      yield* tidyLeftovers(deps, agentDir, [journalTemp(journal)], settleJournal(fs, journal))
      // Not a safety boundary: the journal only feeds the report's history (nothing is moved or removed by it).
      const { records } = yield* readJournal(fs, journal).pipe(Effect.orElseSucceed(() => ({ records: [], bad: 0 })))
      const kept = yield* Effect.forEach(placed, (p) => keptAlready(fs, p))
      // Unless a run kept copies and stopped before its journal line: then the run below, under the marker, writes it.
      if (placed.every((p, i) => copiesRecorded(records, p.entry.id, kept[i]!))) {
        const reports: Array<EntryReport> = []
        for (const [i, p] of placed.entries()) reports.push(withEarlierReport(alreadyDone(p, yield* planEntry(fs, p), records), kept[i]!))
        return reportOf(reports)
      }
    }
    const busy = (message: string): PlanReport =>
      reportOf(placed.map((p) => ({
        id: p.entry.id,
        kind: p.entry.kind,
        outcome: "failed",
        root: p.root,
        from: p.display(p.from),
        to: p.display(p.to),
        reason: message
      })))
    // The marker and the journal live in the agent dir, which a web-only host may not have yet.
    const made = yield* fs.makeDirectory(agentDir, { recursive: true }).pipe(
      Effect.catchIf((e) => e.reason === "AlreadyExists", () => Effect.void),
      Effect.either
    )
    if (made._tag === "Left") return busy(`cannot make the agent dir for the migration marker and journal: ${made.left.message}`)
    return yield* withMarker(deps, agentDir, options, busy, runPlan(fs, plan, journal, placed, reportOf))
  })

/** An already-done entry's report naming the copies kept for it (they are still there for review). */
const withEarlierReport = (report: EntryReport, earlier: ReadonlyArray<string>): EntryReport =>
  earlier.length === 0 ? report : { ...report, conflicts: earlier }

const alreadyDone = (placed: Placed, planned: PlannedEntry, records: ReadonlyArray<JournalRecord>): EntryReport => {
  const last = records.filter((r) => r.entryId === placed.entry.id && r.outcome !== "failed").at(-1)
  const why = planned._tag === "Absent" ? planned.why : "the source is absent"
  return {
    id: placed.entry.id,
    kind: placed.entry.kind,
    outcome: "already-done",
    root: placed.root,
    from: placed.display(placed.from),
    to: placed.display(placed.to),
    reason: last === undefined ? why : `${why}; journal: ${last.outcome} at ${new Date(last.at).toISOString()}`,
    decisions: decisionsOf(placed, planned)
  }
}

/**
 * The conflict copies of an entry already on disk (an earlier run's: one a crash stopped before its journal line, or
 * one finished before), as display paths: read before the entry runs, so its report and journal line name every
 * copy kept for it, not only this run's. Never through a link on the way (the executor refuses to keep copies
 * through one, so none there are the plan's); a listing that fails is said (a warning) and names none.
 */
const keptAlready = (fs: Fs, p: Placed): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function*() {
    const dir = NodePath.dirname(p.conflictBase)
    const blocked = yield* linkOnTheWay(makeIo(fs), p, [p.conflictBase]).pipe(Effect.either)
    if (blocked._tag === "Right" && blocked.right !== undefined) return []
    const listed = blocked._tag === "Left" ? blocked : yield* fs.readDirectory(dir).pipe(Effect.either)
    if (listed._tag === "Left") {
      if (!isNotFound(listed.left)) {
        yield* warn({
          _tag: "DirectoryNotListed",
          path: dir,
          reason: listed.left.reason,
          message: `cannot list ${p.display(dir)} for the copies kept for entry ${p.entry.id} earlier: ${listed.left.message}`
        })
      }
      return []
    }
    // The plan check refuses ids that extend one another as copy names do: a copy is the entry's by its own id.
    return listed.right
      .filter((e) => conflictOwner(e.name, [p.entry.id]) === p.entry.id)
      .map((e) => p.display(NodePath.join(dir, e.name)))
      .sort()
  })

/** An entry's result with the copies kept before this run named too (a moved or merged entry then reports them). */
const withEarlierCopies = (result: EntryResult, earlier: ReadonlyArray<string>): EntryResult => {
  const conflicts = [...earlier.filter((c) => !(result.conflicts ?? []).includes(c)), ...(result.conflicts ?? [])]
  if (conflicts.length === 0 || result.outcome === "failed") return result
  return { ...result, outcome: result.outcome === "already-done" ? "already-done" : "conflict-preserved", conflicts }
}

const runPlan = (
  fs: Fs,
  plan: MigrationPlan,
  journal: string,
  placed: ReadonlyArray<Placed>,
  reportOf: (entries: ReadonlyArray<EntryReport>) => PlanReport
): Effect.Effect<PlanReport> =>
  Effect.gen(function*() {
    const io = makeIo(fs)
    yield* settleJournal(fs, journal)
    // Not a safety boundary: the records only feed an already-done entry's report (appends below are checked).
    const { records } = yield* readJournal(fs, journal).pipe(Effect.orElseSucceed(() => ({ records: [], bad: 0 })))
    const reports: Array<EntryReport> = []
    for (const p of placed) {
      // Planned now, after the entries before it ran: the same function the dry run uses.
      const planned = yield* planEntry(fs, p)
      const earlier = yield* keptAlready(fs, p)
      if (planned._tag === "Absent") {
        const report = withEarlierReport(alreadyDone(p, planned, records), earlier)
        // Done by a run that kept copies and stopped before its line (a crash): the line is written now, so the
        // journal names every copy the plan kept.
        if (copiesRecorded(records, p.entry.id, earlier)) {
          reports.push(report)
          continue
        }
        const result: EntryResult = { outcome: "already-done", conflicts: earlier, reason: "done by an earlier run that stopped before recording it" }
        reports.push(yield* recordEntry(fs, io, plan, journal, p, report, result))
        continue
      }
      // A failed entry is reported (`failed` with its reason) and journaled; the next entry goes on.
      const result = withEarlierCopies(
        yield* executeEntry(fs, p, planned).pipe(
          Effect.catchAll((e) => Effect.succeed<EntryResult>({ outcome: "failed", reason: e.message }))
        ),
        earlier
      )
      const report: EntryReport = {
        id: p.entry.id,
        kind: p.entry.kind,
        root: p.root,
        from: p.display(p.from),
        to: p.display(p.to),
        ...result,
        decisions: decisionsOf(p, planned)
      }
      reports.push(yield* recordEntry(fs, io, plan, journal, p, report, result))
    }
    return reportOf(reports)
  })

/** Append an entry's journal line; the report says so when it could not be written. */
const recordEntry = (fs: Fs, io: Io, plan: MigrationPlan, journal: string, p: Placed, report: EntryReport, result: EntryResult) =>
  Effect.gen(function*() {
    const at = yield* Clock.currentTimeMillis
    const record: JournalRecord = {
      version: 1,
      planId: plan.id,
      entryId: p.entry.id,
      kind: p.entry.kind,
      outcome: report.outcome,
      root: p.root,
      from: report.from,
      to: report.to,
      ...(result.rows !== undefined ? { rows: result.rows } : {}),
      ...(result.mergedRows !== undefined ? { mergedRows: result.mergedRows } : {}),
      ...(result.conflicts !== undefined ? { conflicts: result.conflicts } : {}),
      ...(result.reason !== undefined ? { reason: result.reason } : {}),
      at
    }
    const journaled = yield* appendJournal(fs, io, journal, record).pipe(Effect.either)
    return journaled._tag === "Left"
      ? { ...report, outcome: "failed", reason: `${report.reason ?? report.outcome}; journal not written: ${journaled.left.message}` } satisfies EntryReport
      : report
  })

const layoutProgram = (deps: Deps, agentDir: string, root: string, options?: LayoutOptions): Effect.Effect<LayoutReport> =>
  Effect.gen(function*() {
    const before = yield* readRootNames(deps.fs, root).pipe(Effect.either)
    if (before._tag === "Left") {
      return { ...emptyLayoutReport, errors: [{ _tag: "AgentDirUnreadable", path: ".", message: before.left.message }] }
    }
    // A fresh or already-migrated agent dir: nothing to do, nothing created (not even the marker).
    if (layoutUnits(before.right).length === 0) {
      yield* tidyLeftovers(deps, root, [], Effect.void)
      return emptyLayoutReport
    }
    const busy = (message: string): LayoutReport => ({ ...emptyLayoutReport, errors: [{ _tag: "MigrationBusy", path: MIGRATION_MARKER, message }] })
    // Planned again under the marker (another process may have finished the work, or the tree changed since a
    // dry run), by the same function the dry run uses; then exactly those decisions are executed.
    const planAndRun = Effect.flatMap(planLayout(deps.fs, agentDir, root, options), (plan) => executeLayout(deps.fs, plan.steps, plan.partial))
    return yield* withMarker(deps, root, options, busy, planAndRun)
  })

/** The dry run's view of a plan (the executor's steps left out). */
const publicPlan = (plan: LayoutPlan): LayoutPlan => ({
  agentDir: plan.agentDir,
  exists: plan.exists,
  notADirectory: plan.notADirectory,
  decisions: plan.decisions,
  partial: plan.partial
})

// ---------------------------------------------------------------------------------------------------------
// The service

const makeMigration: Effect.Effect<Migration["Type"], never, FileSystem | Host | AgentDir> = Effect.gen(function*() {
  const deps = yield* depsFromContext
  const agentDir = yield* AgentDir
  // AgentDir resolved a symlink at the agent dir's own path once: `path` is the directory worked on, `given`
  // the path reports name.
  const root = agentDir.path
  return Migration.of({
    plan: (options) => Effect.map(planLayout(deps.fs, agentDir.given, root, options), publicPlan),
    run: (options) => layoutProgram(deps, agentDir.given, root, options),
    runPlan: (plan, options) => toolkitProgram(deps, root, plan, options),
    previewPlan: (plan, options) => previewProgram(deps, root, plan, options)
  })
})

/**
 * The agent dir's migrations, over the AgentDir, FileSystem and Host of the context:
 * - `plan` (MG1, read-only): the decisions the layout migration would execute now, with why (the dry run);
 * - `run` (MG1): take the migration marker, plan again, execute exactly that plan. Never fails: per-entry
 *   problems are in `errors`, and a live concurrent migration is reported there too (nothing moved);
 * - `runPlan` (MG2): run a per-entry toolkit plan, journaling each outcome in `state/migrations/<plan-id>.jsonl`.
 *   Fails only for an invalid plan (`InvalidMigrationPlan`: bad or duplicate ids, a path that is not inside its
 *   root …), before anything is read; entry failures are in the report (`failed: true`);
 * - `previewPlan` (MG2, read-only): each entry's decisions with why, planned in order over the tree as the
 *   entries before it will have left it (the dry run of `pi-storage migrate --plan`).
 */
export class Migration extends Context.Tag("pi-agent-storage/Migration")<Migration, {
  readonly plan: (options?: Pick<LayoutOptions, "maxEntries">) => Effect.Effect<LayoutPlan>
  readonly run: (options?: LayoutOptions) => Effect.Effect<LayoutReport>
  readonly runPlan: (plan: MigrationPlan, options?: PlanOptions) => Effect.Effect<PlanReport, InvalidMigrationPlan>
  readonly previewPlan: (plan: MigrationPlan, options?: Pick<PlanOptions, "webDataRoot">) => Effect.Effect<PlanPreview, InvalidMigrationPlan>
}>() {
  static readonly make = makeMigration
  static readonly layer: Layer.Layer<Migration, never, FileSystem | Host | AgentDir> = Layer.effect(Migration, makeMigration)
}
