/**
 * Migrations (SPEC MG1, MG2): the agent-dir layout migration and the per-entry migration toolkit.
 *
 * Every move goes through one engine, `place(src, dst, conflictBase)`, whose steps are each atomic (a rename,
 * an exclusive create, a file removal) and which decides from the files themselves, never from "does the
 * target directory exist":
 * - target absent: one `rename` (a whole tree at once); on EXDEV, copy across (below);
 * - both directories: place every child, then remove the emptied source directory;
 * - same content (byte-equal files, equal link targets): the source is a duplicate and is removed;
 * - otherwise the source is preserved under its conflict path (`<base>`, `<base>.1`, …), never overwriting.
 * Cross-device: a file is copied to `.<name>.pi-migrate-partial` beside the target (fsync), compared with the
 * source, renamed into place, and only then is the source removed; a symlink is recreated (never followed);
 * a directory is made and its children placed. A crash between any two steps leaves every byte either at the
 * source or at its destination (or both, identical, which the rerun resolves by removing the source).
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
import { type FileSystemError, InvalidArgument, MigrationStepFailed, type MigrationStep } from "../domain/Errors.js"
import {
  conflictCandidate,
  copyTempName,
  displayPath,
  emptyLayoutReport,
  encodeJournalLine,
  encodeJsonObject,
  type EntryReport,
  type JournalRecord,
  type LayoutProblem,
  type LayoutReport,
  type LayoutUnit,
  layoutUnits,
  ledgerParse,
  ledgerSerialize,
  type MergeLedgerEntry,
  mergeJsonObjects,
  mergeLedgerRows,
  MIGRATION_CONFLICTS,
  MIGRATION_MARKER,
  MIGRATION_MARKER_PURPOSE,
  MIGRATIONS_JOURNAL_DIR,
  type MigrationPlan,
  type MoveEntry,
  parseJournal,
  type PlanReport
} from "../domain/MigrationPlan.js"
import { segmentViolation } from "../domain/Segment.js"
import { type FileInfo, FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"
import { type Deps, depsFromContext } from "./internal/deps.js"
import { sameBytes, tryAcquireMarker } from "./internal/markers.js"
import { aFileType } from "../domain/FileTypeWords.js"
import { warn } from "./internal/warn.js"

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

const isPrefix = (prefix: Uint8Array, of: Uint8Array) =>
  prefix.length <= of.length && prefix.every((x, i) => x === of[i])

/** What happened to one placed entry, for the report. */
type Placed = "moved" | "merged" | "duplicate" | "conflict"

interface Collector {
  readonly conflicts: Array<{ readonly from: string; readonly to: string }>
}

/** The move engine over the FileSystem port. */
const makeEngine = (fs: Fs, collector: Collector, display: (path: string) => string) => {
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

  const childNames = (dir: string) => Effect.map(fs.readDirectory(dir), (entries) => entries.map((e) => e.name))

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
  const writeDurably = (path: string, data: Uint8Array, mode: number) =>
    Effect.gen(function*() {
      const temp = NodePath.join(NodePath.dirname(path), copyTempName(NodePath.basename(path)))
      const leftover = yield* lstatOption(temp)
      if (leftover !== undefined && leftover.type !== "File") {
        return yield* Effect.fail(stepFailure("temp-path-taken", temp, "temp path of a merge is taken"))
      }
      if (leftover !== undefined) yield* fs.removeFile(temp)
      yield* fs.writeFileExclusive(temp, data, { sync: true, mode })
      yield* fs.rename(temp, path)
    })

  /** Copy `src` to the absent `dst` on another device, verify, then remove the source. */
  const copyAcross = (
    src: string,
    info: FileInfo,
    dst: string,
    placeChild: (src: string, dst: string) => Effect.Effect<Placed, EngineError>
  ): Effect.Effect<void, EngineError> =>
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
        yield* fs.makeDirectory(dst, { mode: info.mode })
        for (const name of yield* childNames(src)) yield* placeChild(NodePath.join(src, name), NodePath.join(dst, name))
        yield* fs.removeDirectory(src)
      } else {
        return yield* Effect.fail(stepFailure("special-file", src, "special files are not copied across devices"))
      }
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

  /** Move `src` to the absent `dst`: one rename, or a verified copy across devices. */
  const transfer = (
    src: string,
    info: FileInfo,
    dst: string,
    placeChild: (src: string, dst: string) => Effect.Effect<Placed, EngineError>
  ): Effect.Effect<void, EngineError> =>
    ensureParent(NodePath.dirname(dst)).pipe(
      Effect.zipRight(fs.rename(src, dst)),
      Effect.catchIf(isCrossDevice, () => copyAcross(src, info, dst, placeChild))
    )

  /** Preserve `src` at the first free (or identical, or mergeable directory) conflict candidate of `base`. */
  const preserve = (src: string, srcInfo: FileInfo, base: string): Effect.Effect<Placed, EngineError> =>
    Effect.gen(function*() {
      for (let k = 0;; k++) {
        const candidate = conflictCandidate(base, k)
        const info = yield* lstatOption(candidate)
        const record = () => collector.conflicts.push({ from: display(src), to: display(candidate) })
        if (info === undefined) {
          yield* transfer(src, srcInfo, candidate, (s, d) => preserveChild(s, d))
          record()
          return "conflict" as const
        }
        if (srcInfo.type === "Directory" && info.type === "Directory") {
          // An earlier (interrupted) preservation of this same directory: finish it in place.
          for (const name of yield* childNames(src)) yield* preserveChild(NodePath.join(src, name), NodePath.join(candidate, name))
          yield* fs.removeDirectory(src)
          record()
          return "conflict" as const
        }
        if (yield* sameContent(src, srcInfo, candidate, info)) {
          yield* fs.removeFile(src)
          record()
          return "conflict" as const
        }
      }
    })

  const preserveChild = (src: string, dst: string): Effect.Effect<Placed, EngineError> =>
    Effect.flatMap(fs.lstat(src), (info) => preserve(src, info, dst))

  /** The engine: move or merge `src` into `dst`; collisions go under `conflictBase`. */
  const place = (src: string, dst: string, conflictBase: string): Effect.Effect<Placed, EngineError> =>
    Effect.gen(function*() {
      const srcInfo = yield* fs.lstat(src)
      const dstInfo = yield* lstatOption(dst)
      const child = (s: string, d: string) => place(s, d, NodePath.join(conflictBase, NodePath.basename(s)))
      if (dstInfo === undefined) {
        yield* transfer(src, srcInfo, dst, child)
        return "moved"
      }
      if (srcInfo.type === "Directory" && dstInfo.type === "Directory") {
        for (const name of yield* childNames(src)) yield* child(NodePath.join(src, name), NodePath.join(dst, name))
        yield* fs.removeDirectory(src)
        return "merged"
      }
      if (yield* sameContent(src, srcInfo, dst, dstInfo)) {
        yield* fs.removeFile(src)
        return "duplicate"
      }
      return yield* preserve(src, srcInfo, conflictBase)
    })

  return {
    lstatOption,
    ensureParent,
    writeDurably,
    place,
    preserve,
    childNames,
    conflictsSoFar: () => collector.conflicts.length,
    conflictsSince: (n: number) => collector.conflicts.slice(n).map((c) => c.to)
  }
}

type Engine = ReturnType<typeof makeEngine>

// ---------------------------------------------------------------------------------------------------------
// the migration marker

type Lock = { readonly _tag: "Acquired"; readonly release: Effect.Effect<void> } | { readonly _tag: "Busy"; readonly holder: string }

const takeMigrationMarker = (
  deps: Deps,
  agentDir: string,
  attempts: number,
  delay: Duration.DurationInput
): Effect.Effect<Lock, FileSystemError> =>
  Effect.gen(function*() {
    const path = NodePath.join(agentDir, MIGRATION_MARKER)
    let holder = "unknown holder"
    for (let attempt = 0; attempt < Math.max(1, attempts); attempt++) {
      if (attempt > 0) yield* Effect.sleep(delay)
      const taken = yield* tryAcquireMarker(deps, path, MIGRATION_MARKER_PURPOSE)
      if (taken._tag === "Acquired") return { _tag: "Acquired", release: taken.release } as const
      // A marker torn by a crash mid-write never decodes: tryAcquireMarker reclaims it once older than the
      // stale bound (the one unreadable rule, src/domain/Liveness.ts), instead of freezing every migration.
      holder = taken.unreadable ? taken.detail : taken.holder
    }
    return { _tag: "Busy", holder } as const
  })

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
    const present = yield* Effect.forEach([marker, ...leftovers], (p) => deps.fs.lstat(p).pipe(Effect.option))
    if (present.every((p) => p._tag === "None")) return
    yield* withMarker(deps, agentDir, { lockAttempts: 1 }, () => undefined, tidy)
  })

// ---------------------------------------------------------------------------------------------------------
// MG1: the layout migration

/**
 * The agent dir itself may be a symlink (the user keeps ~/.pi/agent on another disk): that one link is the
 * user's choice and is resolved (up to 8 hops); nothing below it is ever followed.
 */
export const resolveRootLink = (fs: Fs, path: string): Effect.Effect<string> =>
  Effect.gen(function*() {
    let current = path
    for (let hop = 0; hop < 8; hop++) {
      const info = yield* fs.lstat(current).pipe(Effect.option)
      if (info._tag === "None" || info.value.type !== "SymbolicLink") return current
      const target = yield* fs.readLink(current).pipe(Effect.option)
      if (target._tag === "None") return current
      current = NodePath.resolve(NodePath.dirname(current), target.value)
    }
    return current
  })

const readRootNames = (fs: Fs, agentDir: string) =>
  fs.readDirectory(agentDir).pipe(
    Effect.map((entries) => entries.map((e) => e.name)),
    Effect.catchIf((e) => e.reason === "NotFound" || e.reason === "NotADirectory", () => Effect.succeed([]))
  )

interface LayoutState {
  readonly moved: Array<string>
  readonly merged: Array<string>
  readonly collector: Collector
  readonly errors: Array<LayoutProblem>
  budget: number
  partial: boolean
}

/** trust.json present at both places: merge the objects (canonical wins), durable before the legacy copy goes. */
const mergeJsonUnit = (fs: Fs, engine: Engine, src: string, dst: string, dstInfo: FileInfo, conflictBase: string) =>
  Effect.gen(function*() {
    const read = (p: string) => fs.readFile(p, { maxBytes: MERGE_MAX_BYTES }).pipe(Effect.option)
    const legacy = yield* read(src)
    const canonical = yield* read(dst)
    const srcInfo = yield* fs.lstat(src)
    if (legacy._tag === "None" || canonical._tag === "None") return yield* engine.preserve(src, srcInfo, conflictBase)
    const merge = mergeJsonObjects(legacy.value, canonical.value)
    if (merge._tag === "Unparsable") return yield* engine.preserve(src, srcInfo, conflictBase)
    if (!merge.canonicalUnchanged) {
      yield* engine.writeDurably(dst, encodeJsonObject(merge.merged), dstInfo.mode)
    }
    // A legacy value the canonical one overrode is still someone's decision: keep that copy for review.
    if (merge.overridden.length > 0) {
      yield* engine.preserve(src, srcInfo, conflictBase)
      return "merged" as const
    }
    yield* fs.removeFile(src)
    return "merged" as const
  })

const migrateUnit = (fs: Fs, engine: Engine, agentDir: string, unit: LayoutUnit, state: LayoutState) =>
  Effect.gen(function*() {
    const src = NodePath.join(agentDir, unit.name)
    const dst = NodePath.join(agentDir, ...unit.destination)
    const conflictBase = NodePath.join(agentDir, ...unit.conflictBase)
    const srcInfo = yield* engine.lstatOption(src)
    if (srcInfo === undefined) return
    const dstInfo = yield* engine.lstatOption(dst)
    if (unit.mergeJson && srcInfo.type === "File" && dstInfo?.type === "File") {
      state.budget--
      yield* mergeJsonUnit(fs, engine, src, dst, dstInfo, conflictBase)
      state.merged.push(unit.name)
      return
    }
    if (srcInfo.type === "Directory" && dstInfo?.type === "Directory") {
      // Entry by entry, each top-level child costing one unit of the budget.
      for (const name of yield* engine.childNames(src)) {
        if (state.budget <= 0) {
          state.partial = true
          return
        }
        state.budget--
        const placed = yield* engine.place(NodePath.join(src, name), NodePath.join(dst, name), NodePath.join(conflictBase, name))
        if (placed === "moved" || placed === "duplicate") state.moved.push(`${unit.name}/${name}`)
      }
      yield* fs.removeDirectory(src)
      state.merged.push(unit.name)
      return
    }
    state.budget--
    const placed = yield* engine.place(src, dst, conflictBase)
    if (placed === "moved" || placed === "duplicate") state.moved.push(unit.name)
    else if (placed === "merged") state.merged.push(unit.name)
  })

const layoutProgram = (deps: Deps, agentDirInput: string, options?: LayoutOptions): Effect.Effect<LayoutReport> =>
  Effect.gen(function*() {
    const fs = deps.fs
    const agentDir = yield* resolveRootLink(fs, agentDirInput)
    const before = yield* readRootNames(fs, agentDir).pipe(Effect.either)
    if (before._tag === "Left") {
      return { ...emptyLayoutReport, errors: [{ _tag: "AgentDirUnreadable", path: ".", message: before.left.message }] }
    }
    // A fresh or already-migrated agent dir: nothing to do, nothing created (not even the marker).
    if (layoutUnits(before.right).length === 0) {
      yield* tidyLeftovers(deps, agentDir, [], Effect.void)
      return emptyLayoutReport
    }
    const busy = (message: string): LayoutReport => ({ ...emptyLayoutReport, errors: [{ _tag: "MigrationBusy", path: MIGRATION_MARKER, message }] })
    return yield* withMarker(deps, agentDir, options, busy, runLayout(deps.fs, agentDir, options))
  })

const runLayout = (fs: Fs, agentDir: string, options?: LayoutOptions): Effect.Effect<LayoutReport> =>
  Effect.gen(function*() {
    const display = (p: string) => displayPath(agentDir, p)
    const state: LayoutState = {
      moved: [],
      merged: [],
      collector: { conflicts: [] },
      errors: [],
      budget: Math.max(1, options?.maxEntries ?? DEFAULT_MAX_ENTRIES),
      partial: false
    }
    const engine = makeEngine(fs, state.collector, display)
    // Re-read under the marker: another process may have finished the work meanwhile.
    // Unlistable now: nothing is moved, and the report says why (never a silent "nothing to do").
    const names = yield* readRootNames(fs, agentDir).pipe(
      Effect.catchAll((e) => Effect.as(Effect.sync(() => state.errors.push({ _tag: "AgentDirUnreadable", path: ".", message: e.message })), []))
    )
    for (const unit of layoutUnits(names)) {
      if (state.budget <= 0) {
        state.partial = true
        break
      }
      yield* migrateUnit(fs, engine, agentDir, unit, state).pipe(
        Effect.catchAll((e) => Effect.sync(() => state.errors.push({ _tag: "UnitFailed", path: unit.name, message: e.message })))
      )
      if (state.partial) break
    }
    return {
      moved: state.moved,
      merged: state.merged,
      conflicts: state.collector.conflicts,
      partial: state.partial,
      errors: state.errors
    }
  })

// ---------------------------------------------------------------------------------------------------------
// MG2: the per-entry toolkit

const resolveIn = (agentDir: string, path: string) => NodePath.resolve(agentDir, path)

const validatePlan = (plan: MigrationPlan): Effect.Effect<void, InvalidArgument> => {
  const bad = segmentViolation(plan.id)
  if (bad !== null) return Effect.fail(new InvalidArgument({ field: "plan.id", detail: `${JSON.stringify(plan.id)} ${bad.message}` }))
  const seen = new Set<string>()
  for (const entry of plan.entries) {
    const v = segmentViolation(entry.id)
    if (v !== null) {
      return Effect.fail(new InvalidArgument({ field: "plan.entries[].id", detail: `${JSON.stringify(entry.id)} ${v.message}` }))
    }
    if (seen.has(entry.id)) {
      return Effect.fail(new InvalidArgument({ field: "plan.entries[].id", detail: `duplicate entry id ${JSON.stringify(entry.id)}` }))
    }
    seen.add(entry.id)
  }
  return Effect.void
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
    const info = yield* fs.lstat(temp).pipe(Effect.option)
    if (info._tag === "None" || info.value.type !== "File") return
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
const appendJournal = (fs: Fs, engine: Engine, path: string, record: JournalRecord) =>
  Effect.gen(function*() {
    yield* engine.ensureParent(NodePath.dirname(path))
    const current = yield* fs.readFile(path).pipe(
      Effect.catchIf(isNotFound, () => Effect.succeed(new Uint8Array()))
    )
    const line = new TextEncoder().encode(encodeJournalLine(record))
    const next = new Uint8Array(current.length + line.length)
    next.set(current)
    next.set(line, current.length)
    yield* engine.writeDurably(path, next, 0o600)
  })

const runMoveEntry = (engine: Engine, from: string, to: string, conflictBase: string) =>
  Effect.gen(function*() {
    const before = engine.conflictsSoFar()
    const placed = yield* engine.place(from, to, conflictBase)
    const conflicts = engine.conflictsSince(before)
    return placed === "conflict" || conflicts.length > 0
      ? { outcome: "conflict-preserved" as const, conflicts }
      : { outcome: "moved" as const }
  })

const runLedgerEntry = (
  fs: Fs,
  engine: Engine,
  entry: MergeLedgerEntry,
  from: string,
  to: string,
  conflictBase: string
) =>
  Effect.gen(function*() {
    const fromInfo = yield* fs.lstat(from)
    if (fromInfo.type !== "File") return { outcome: "failed" as const, reason: `${from} is ${aFileType(fromInfo.type)}, not a ledger file` }
    const toInfo = yield* engine.lstatOption(to)
    if (toInfo !== undefined && toInfo.type !== "File") {
      return { outcome: "failed" as const, reason: `${to} is ${aFileType(toInfo.type)}, not a ledger file` }
    }
    const fromRows = ledgerParse(entry.format, yield* fs.readFile(from, { maxBytes: MERGE_MAX_BYTES }))
    if (!fromRows.ok) return { outcome: "failed" as const, reason: `cannot parse ${from}: ${fromRows.why}` }
    const toBytes = toInfo === undefined ? undefined : yield* fs.readFile(to, { maxBytes: MERGE_MAX_BYTES })
    const toRows = toBytes === undefined ? { ok: true as const, rows: [] } : ledgerParse(entry.format, toBytes)
    if (!toRows.ok) return { outcome: "failed" as const, reason: `cannot parse ${to}: ${toRows.why}` }
    const merge = mergeLedgerRows({ to: toRows.rows, from: fromRows.rows, key: entry.key, winner: entry.winner })
    const bytes = ledgerSerialize(entry.format, merge.rows)
    // Durable merged result first; the source is retired only after it.
    if (toBytes === undefined || !sameBytes(bytes, toBytes)) {
      yield* engine.ensureParent(NodePath.dirname(to))
      yield* engine.writeDurably(to, bytes, toInfo?.mode ?? fromInfo.mode)
    }
    const mergedRows = merge.added + merge.replaced
    if (merge.fromFullyKept) {
      yield* fs.removeFile(from)
      return { outcome: "merged" as const, rows: merge.rows.length, mergedRows }
    }
    // Some `from` rows lost to the declared winner (or were in-file duplicates): keep that file for review.
    const before = engine.conflictsSoFar()
    yield* engine.preserve(from, fromInfo, conflictBase)
    return {
      outcome: "conflict-preserved" as const,
      rows: merge.rows.length,
      mergedRows,
      conflicts: engine.conflictsSince(before)
    }
  })

type EntryResult = {
  readonly outcome: EntryReport["outcome"]
  readonly rows?: number
  readonly mergedRows?: number
  readonly conflicts?: ReadonlyArray<string>
  readonly reason?: string
}

const planProgram = (deps: Deps, agentDirInput: string, plan: MigrationPlan, options?: LayoutOptions) =>
  Effect.gen(function*() {
    yield* validatePlan(plan)
    const fs = deps.fs
    const agentDir = yield* resolveRootLink(fs, agentDirInput)
    const journal = journalPath(agentDir, plan.id)
    const resolved = plan.entries.map((entry) => ({
      entry,
      from: resolveIn(agentDir, entry.from),
      to: resolveIn(agentDir, entry.to)
    }))
    const display = (p: string) => displayPath(agentDir, p)
    const reportOf = (entries: ReadonlyArray<EntryReport>): PlanReport => ({
      planId: plan.id,
      journal: display(journal),
      entries,
      failed: entries.some((e) => e.outcome === "failed")
    })
    const pending = yield* Effect.forEach(resolved, ({ from }) =>
      fs.lstat(from).pipe(Effect.as(true), Effect.catchAll((e) => Effect.succeed(!isNotFound(e)))))
    if (!pending.some((p) => p)) {
      // Nothing to move: report from the journal, create nothing.
      yield* tidyLeftovers(deps, agentDir, [journalTemp(journal)], settleJournal(fs, journal))
      // Not a safety boundary: the journal only feeds the report's history (nothing is moved or removed by it).
      const { records } = yield* readJournal(fs, journal).pipe(Effect.orElseSucceed(() => ({ records: [], bad: 0 })))
      return reportOf(resolved.map(({ entry, from, to }) => alreadyDone(entry, display(from), display(to), records)))
    }
    const busy = (message: string): PlanReport =>
      reportOf(resolved.map(({ entry, from, to }) => ({
        id: entry.id,
        kind: entry.kind,
        outcome: "failed",
        from: display(from),
        to: display(to),
        reason: message
      })))
    return yield* withMarker(deps, agentDir, options, busy, runPlan(fs, agentDir, plan, journal, resolved, reportOf))
  })

const alreadyDone = (
  entry: MoveEntry | MergeLedgerEntry,
  from: string,
  to: string,
  records: ReadonlyArray<JournalRecord>
): EntryReport => {
  const last = records.filter((r) => r.entryId === entry.id && r.outcome !== "failed").at(-1)
  return {
    id: entry.id,
    kind: entry.kind,
    outcome: "already-done",
    from,
    to,
    reason: last === undefined ? "source absent" : `source absent; journal: ${last.outcome} at ${last.at}`
  }
}

const runPlan = (
  fs: Fs,
  agentDir: string,
  plan: MigrationPlan,
  journal: string,
  resolved: ReadonlyArray<{ readonly entry: MoveEntry | MergeLedgerEntry; readonly from: string; readonly to: string }>,
  reportOf: (entries: ReadonlyArray<EntryReport>) => PlanReport
): Effect.Effect<PlanReport> =>
  Effect.gen(function*() {
    const display = (p: string) => displayPath(agentDir, p)
    const collector: Collector = { conflicts: [] }
    const engine = makeEngine(fs, collector, display)
    yield* settleJournal(fs, journal)
    const { records } = yield* readJournal(fs, journal).pipe(Effect.orElseSucceed(() => ({ records: [], bad: 0 })))
    const reports: Array<EntryReport> = []
    for (const { entry, from, to } of resolved) {
      const conflictBase = NodePath.join(agentDir, ...MIGRATION_CONFLICTS, plan.id, entry.id)
      const exists = yield* engine.lstatOption(from).pipe(Effect.either)
      if (exists._tag === "Right" && exists.right === undefined) {
        reports.push(alreadyDone(entry, display(from), display(to), records))
        continue
      }
      const attempt: Effect.Effect<EntryResult, EngineError> = exists._tag === "Left"
        ? Effect.fail(exists.left)
        : entry.kind === "move"
        ? runMoveEntry(engine, from, to, conflictBase)
        : runLedgerEntry(fs, engine, entry, from, to, conflictBase)
      const result = yield* attempt.pipe(
        Effect.catchAll((e) => Effect.succeed<EntryResult>({ outcome: "failed", reason: e.message }))
      )
      const report: EntryReport = { id: entry.id, kind: entry.kind, from: display(from), to: display(to), ...result }
      const at = yield* Clock.currentTimeMillis
      const record: JournalRecord = {
        version: 1,
        planId: plan.id,
        entryId: entry.id,
        kind: entry.kind,
        outcome: report.outcome,
        from: report.from,
        to: report.to,
        ...(result.rows !== undefined ? { rows: result.rows } : {}),
        ...(result.mergedRows !== undefined ? { mergedRows: result.mergedRows } : {}),
        ...(result.conflicts !== undefined ? { conflicts: result.conflicts } : {}),
        ...(result.reason !== undefined ? { reason: result.reason } : {}),
        at
      }
      const journaled = yield* appendJournal(fs, engine, journal, record).pipe(Effect.either)
      reports.push(
        journaled._tag === "Left"
          ? { ...report, outcome: "failed", reason: `${report.reason ?? report.outcome}; journal not written: ${journaled.left.message}` }
          : report
      )
    }
    return reportOf(reports)
  })

// ---------------------------------------------------------------------------------------------------------
// public API


/**
 * MG1: move the legacy root entries of `agentDir` to their canonical places. Never fails: per-entry
 * problems are in `errors`, and a live concurrent migration is reported there too (nothing moved).
 */
export const migrateAgentDirLayout = (
  agentDir: string,
  options?: LayoutOptions
): Effect.Effect<LayoutReport, never, FileSystem | Host> =>
  Effect.flatMap(depsFromContext, (deps) => layoutProgram(deps, agentDir, options))

/**
 * MG2: run a per-entry migration plan, journaling each outcome in `state/migrations/<plan-id>.jsonl`.
 * Fails only for an invalid plan (bad or duplicate ids); entry failures are in the report (`failed: true`).
 */
export const runMigrationPlan = (
  agentDir: string,
  plan: MigrationPlan,
  options?: Pick<LayoutOptions, "lockAttempts" | "lockRetryDelay">
): Effect.Effect<PlanReport, InvalidArgument, FileSystem | Host> =>
  Effect.flatMap(depsFromContext, (deps) => planProgram(deps, agentDir, plan, options))

export class Migration extends Context.Tag("pi-agent-storage/Migration")<Migration, {
  readonly migrateAgentDirLayout: (agentDir: string, options?: LayoutOptions) => Effect.Effect<LayoutReport>
  readonly runMigrationPlan: (
    agentDir: string,
    plan: MigrationPlan,
    options?: Pick<LayoutOptions, "lockAttempts" | "lockRetryDelay">
  ) => Effect.Effect<PlanReport, InvalidArgument>
}>() {
  static readonly layer: Layer.Layer<Migration, never, FileSystem | Host> = Layer.effect(
    Migration,
    Effect.map(depsFromContext, (deps) => ({
      migrateAgentDirLayout: (agentDir, options) => layoutProgram(deps, agentDir, options),
      runMigrationPlan: (agentDir, plan, options) => planProgram(deps, agentDir, plan, options)
    }))
  )
}
