/**
 * State snapshots (docs/snapshots.md "State snapshots"): hard-link increments, a verifiable manifest, retention, restore that moves live
 * data aside. The pure rules (scope, ids, manifest, link decision, errors) are `domain/StateSnapshot.ts`;
 * retention is `domain/ForgetPlan.ts`. This module is the I/O around them, with these invariants:
 *
 * - Live data and snapshots never share an inode: live → snapshot is always a copy (streamed through
 *   SHA-256), snapshot → snapshot may be a hard link, snapshot → live (restore) is always a copy.
 * - A snapshot is built in `.incomplete-<id>/` (owner marker inside) and renamed to `<id>/` after its manifest
 *   is durable; readers only look at `<id>/` names. Forget renames `<id>/` to `.removing-<id>/` first.
 * - One writer (create, forget, restore) per root at a time: the `.lock` marker, waited for (bounded).
 *   Each writer first clears what dead writers left (`.incomplete-*` of dead owners, `.removing-*`).
 * - A manifest is untrusted input (whoever can write to the root can recompute its hash): every read of one
 *   decodes its paths and tree (domain/SnapshotPath.ts). A restore checks everything it will copy before it
 *   moves or writes anything, writes links last (nothing below a link it made) and writes only under this
 *   process's agent dir and web data root; verify reads nothing below a non-directory of the snapshot.
 * - Files are not fsynced one by one while a snapshot is built (as `cp -a`): once they and the manifest are
 *   all written, one `syncFileSystem` (syncfs) makes them durable, then the rename lists the snapshot. So a
 *   listed snapshot's files and manifest are on disk before anything lists it; `verify` catches later damage.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { type FileSystemError, InvalidArgument, type InvalidSegment, type TierUnresolvable, type UnsafeRoot } from "../domain/Errors.js"
import { decodeSegment } from "../domain/Segment.js"
import { agentDirFlag, shellWord } from "../domain/FixCommands.js"
import { withArticle } from "../domain/Article.js"
import { classifyWebDataEntry } from "../domain/WebDataEntries.js"
import { decodeSnapshotPath, directoryOnlyWhy, inRestoreScope, isAgentExtensionDir, isKeptInPlace, type SnapshotPath } from "../domain/SnapshotPath.js"
import { decodeJsonBytes, encodeJsonBytes, MARKER_MAX_BYTES } from "../domain/Formats.js"
import { type ForgetPlan, type ForgetPolicy, planForgetResult } from "../domain/ForgetPlan.js"
import {
  agentScopeRoots,
  BackupBusy,
  decodeSnapshotManifest,
  encodeSnapshotManifest,
  extensionDests,
  INCOMPLETE_PREFIX,
  isSnapshotId,
  isWithin,
  MANIFEST_FILE,
  type ManifestEntry,
  OWNER_MARKER,
  REMOVING_PREFIX,
  resolveBackupRoot,
  restoreAsideName,
  restoredMode,
  WEB_RESTORE_ASIDE_DIR,
  type ScopeRoot,
  shouldLink,
  ExtensionNotInSnapshot,
  UnsafeRestoreTarget,
  SnapshotCorrupt,
  snapshotId,
  type SnapshotManifest,
  SnapshotNotFound,
  sqliteGroups,
  TOOL,
  UnsafeBackupRoot,
  LAST_VERIFY,
  VERIFY_CURSOR,
  webScopeRoot,
  WRITER_LOCK
} from "../domain/StateSnapshot.js"
import { agentPaths } from "../domain/AgentPaths.js"
import { aFileType } from "../domain/FileTypeWords.js"
import type { FindingDraft } from "../domain/FindingDraft.js"
import { resolvedWithin } from "../domain/TierIdentity.js"
import { rootSafetyProblems } from "../domain/RootSafety.js"
import type { WebDataRootResolution } from "../domain/WebPaths.js"
import { AgentDir } from "./AgentDir.js"
import { UsageRecorder } from "./UsageHistory.js"
import { type FileInfo, FileSystem, WHOLE_TREE } from "./FileSystem.js"
import { Host } from "./Host.js"
import type { Deps } from "./internal/deps.js"
import { depsFromContext, selfIdentity } from "./internal/deps.js"
import { readerFsClock } from "./internal/fsClock.js"
import { locate } from "./internal/locate.js"
import { acquireMarkerWaiting, DEFAULT_LOCK_WAIT_MS, judgeMarker, waitingAtMost } from "./internal/markers.js"
import { checkSafeDirectory } from "./internal/rootSafety.js"
import {
  changedDuringBackup as changedProblem,
  isMissingProblem,
  type SnapshotCreateProblem,
  type SnapshotSkip,
  snapshotSkip,
  type VerifyProblem,
  verifyProblem
} from "../domain/ReportProblems.js"
import { warn } from "./internal/warn.js"
import { webDataRootOf } from "./internal/webDataRoot.js"

export interface StateBackupsOptions {
  /** The backup root (else `$PI_STATE_BACKUP_DIR`, else `<parent of agent dir>/backups/<name of agent dir>`). */
  readonly root?: string | undefined
  /**
   * The web host's extension data root, whose every `data/<extId>/state/` is snapshotted: else
   * `$PI_WEB_DATA_DIR`, else `~/.pi/web/data` (TD1, `resolveWebDataRoot`: the root the tiers write under).
   */
  readonly webDataRoot?: string | undefined
  /** How long a writer waits for another one to finish (default 30 s), then `BackupBusy`. */
  readonly lockWaitMs?: number | undefined
}

export interface SnapshotProgress {
  readonly files: number
  readonly bytes: number
  readonly path: string
}

/** What a snapshot covered: the agent dir, the web data root and the snapshot-relative roots looked at (as its manifest records). */
export interface SnapshotScope {
  readonly agentDir: string
  readonly webDataRoot: string
  /** `agent/state`, `agent/MEMORY.md` …, `web/<extId>/state` for every extension under the web data root. */
  readonly roots: ReadonlyArray<string>
}

export interface CreateResult {
  readonly id: string
  readonly createdAt: number
  /** The roots this snapshot covered. */
  readonly scope: SnapshotScope
  /** Regular files in the snapshot and their bytes. */
  readonly files: number
  readonly bytes: number
  readonly copiedFiles: number
  readonly copiedBytes: number
  readonly linkedFiles: number
  /** Files copied because `link()` failed (EMLINK at the per-inode limit, EXDEV, EPERM …). */
  readonly linkFallbacks: number
  /** Changed during both copy attempts: the copy may mix two versions (the paths of the `ChangedDuringBackup` problems). */
  readonly changedDuringBackup: ReadonlyArray<string>
  /** Not in the snapshot: `SpecialFile`, `Vanished`, `Unreadable` (with the `reason` words and a `message`). */
  readonly skipped: ReadonlyArray<SnapshotSkip>
  /** Every skipped and changed entry as a tagged problem with a message, in the order met. */
  readonly problems: ReadonlyArray<SnapshotCreateProblem>
  /** SQLite databases with a live `-wal`/`-shm`, copied as a group (a file copy of a live WAL database can be inconsistent). */
  readonly sqliteLive: ReadonlyArray<string>
  /** Incomplete snapshots of dead writers removed first. */
  readonly removedLeftovers: ReadonlyArray<string>
}

export interface SnapshotSummary {
  readonly id: string
  readonly createdAt: number
  readonly label?: string
  readonly path: string
  readonly files: number
  /**
   * Disk usage of the snapshot's directory as `du -s -B1` counts it (docs/work-runs.md "Retention": one byte count;
   * files it shares with other snapshots count here too, as du of it counts them).
   */
  readonly bytes: number
  /** Apparent size of the same (`du -sb`). */
  readonly apparentBytes: number
  /** Disk usage of its files whose inode no other snapshot shares: what forgetting it frees. */
  readonly uniqueBytes: number
  /** Apparent size of the same. */
  readonly uniqueApparentBytes: number
  /** What it covered, as its manifest records (`webDataRoot` is `null` in a snapshot taken without one). */
  readonly scope: SnapshotManifest["scope"]
}

export interface VerifyResult {
  readonly ok: boolean
  /** Entries checked (files re-hashed, links read, directories looked at). */
  readonly checked: number
  readonly checkedBytes: number
  /** `<id>/<path>` of entries whose content, type or target differs from the manifest (or an unusable manifest). */
  readonly corrupt: ReadonlyArray<string>
  readonly missing: ReadonlyArray<string>
  /** Why each of `corrupt` and `missing` is there: tagged problems with a message (`ContentMismatch`, `Missing` …). */
  readonly problems: ReadonlyArray<VerifyProblem>
  /** False when `maxBytes`/`sample` cut this run to a slice; the next run goes on from there. */
  readonly complete: boolean
}

/** What the last `verify` of this root found (docs/dashboard.md "Dashboard"): written when a verify ends. */
export const LastVerify = Schema.Struct({
  version: Schema.Literal(1),
  /** Epoch ms the verify ended. */
  at: Schema.Number,
  /** The snapshot verified, `null` for all of them. */
  id: Schema.NullOr(Schema.String),
  ok: Schema.Boolean,
  checked: Schema.Number,
  checkedBytes: Schema.Number,
  corrupt: Schema.Number,
  missing: Schema.Number,
  /** False for a slice (`maxBytes` / `sample`). */
  complete: Schema.Boolean
})
export type LastVerify = typeof LastVerify.Type

export interface LastVerifyRead {
  /** `null`: never verified (or the record is unreadable: `problem` says why). */
  readonly last: LastVerify | null
  readonly problem: string | null
}

export interface ForgetResult {
  readonly kept: ForgetPlan["keep"]
  readonly removed: ReadonlyArray<string>
  readonly dryRun: boolean
}

export interface RestoreResult {
  /** Live paths written from the snapshot (or, in a dry run, that would be). */
  readonly restored: ReadonlyArray<string>
  /**
   * Where the replaced live data went: the first of `asideDirs` (`state/restore-aside/<time>/` when anything went
   * there), `null` when nothing was there.
   */
  readonly movedAside: string | null
  /**
   * Every directory the replaced live data went to: `state/restore-aside/<time>/`, and `<web data root>/.restore-aside/<time>/`
   * for web data on another file system (a rename cannot cross); empty when nothing was there (and in a dry run).
   */
  readonly asideDirs: ReadonlyArray<string>
  /** Live paths moved aside (or, in a dry run, that would be). */
  readonly movedAsidePaths: ReadonlyArray<string>
  /**
   * What a whole-scope restore did not put back: a web extension whose `<web data root>/<id>` is a symlink (kept
   * on another disk: a restore never writes through one, and leaves it as it is; `--extension <id>` refuses,
   * naming the link), or an extension's state the snapshot records as a link (an older build's record).
   */
  readonly notRestored: ReadonlyArray<NotRestored>
  readonly dryRun: boolean
}

/** What a whole-scope restore did not put back, and why (and whether the live one was left as it is). */
export interface NotRestored {
  readonly path: string
  readonly why: string
}

/** What every writing method of the StateBackups service can fail with. */
export type BackupError = UnsafeBackupRoot | BackupBusy | TierUnresolvable | FileSystemError
/** Every error the StateBackups service fails with. */
export type StateBackupsError =
  | BackupError | SnapshotNotFound | SnapshotCorrupt | ExtensionNotInSnapshot | UnsafeRestoreTarget | InvalidSegment | InvalidArgument

export class StateBackups extends Context.Tag("pi-agent-storage/StateBackups")<StateBackups, {
  /** The backup root in use. */
  readonly root: string
  /** The web data root whose extensions' `state/` it covers (TD1), and where that came from. */
  readonly webDataRoot: WebDataRootResolution
  readonly create: (o?: {
    readonly label?: string
    readonly onProgress?: (p: SnapshotProgress) => void
  }) => Effect.Effect<CreateResult, BackupError>
  readonly list: () => Effect.Effect<ReadonlyArray<SnapshotSummary>, UnsafeBackupRoot | TierUnresolvable | FileSystemError>
  readonly verify: (
    id?: string,
    o?: { readonly maxBytes?: number; readonly sample?: number }
  ) => Effect.Effect<VerifyResult, UnsafeBackupRoot | TierUnresolvable | SnapshotNotFound | InvalidArgument | FileSystemError>
  readonly forget: (
    o: ForgetPolicy & { readonly dryRun?: boolean; readonly timeZone?: string }
  ) => Effect.Effect<ForgetResult, BackupError | InvalidArgument>
  readonly restore: (
    id: string,
    o?: { readonly extension?: string; readonly dryRun?: boolean }
  ) => Effect.Effect<
    RestoreResult,
    BackupError | SnapshotNotFound | SnapshotCorrupt | ExtensionNotInSnapshot | UnsafeRestoreTarget | InvalidSegment | InvalidArgument
  >
  /** The last verify's outcome, read from the root (read-only, never fails). */
  readonly lastVerify: Effect.Effect<LastVerifyRead>
  /**
   * The doctor's look (read-only, never fails): an unsafe backup root, incomplete snapshots whose writer is
   * dead, restore-aside directories waiting for a person.
   */
  readonly findings: Effect.Effect<ReadonlyArray<FindingDraft>>
}>() {
  static readonly make = (options: StateBackupsOptions = {}) =>
    Effect.gen(function*() {
      const deps = yield* depsFromContext
      const agent = yield* AgentDir
      const service = makeStateBackups(deps, agent.path, options)
      // A snapshot made adds a usage record (docs/dashboard.md "Dashboard"), once the writer lock is released.
      const usage = yield* UsageRecorder
      return { ...service, create: (o) => Effect.tap(service.create(o), () => usage.record("snapshot")) } satisfies StateBackups["Type"]
    })

  static readonly layerWith = (options: StateBackupsOptions = {}): Layer.Layer<StateBackups, never, FileSystem | Host | AgentDir> =>
    Layer.effect(StateBackups, StateBackups.make(options))

  static readonly layer: Layer.Layer<StateBackups, never, FileSystem | Host | AgentDir> = StateBackups.layerWith()
}

/** Where the last sliced verify stopped (`<root>/.verify-cursor`). */
const CursorSchema = Schema.Struct({ id: Schema.String, path: Schema.String })

const MANIFEST_MAX_BYTES = 1 << 30
/** The writer lock's wait: 25 ms doubling to 500 ms between tries, `lockWaitMs` (default 30 s) in all. */
const writerLockWait = (lockWaitMs: number) =>
  Schedule.exponential(Duration.millis(25), 2).pipe(Schedule.union(Schedule.spaced(Duration.millis(500))), waitingAtMost(lockWaitMs))
/**
 * errnos after which a hard link is replaced by a copy (the link limit, another device, a refusing fs; the
 * previous copy gone, or its directory replaced by a link or file: never linked through, the live file is copied).
 */
const LINK_FALLBACK = new Set(["EMLINK", "EXDEV", "EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOENT", "ENOTDIR", "ELOOP"])

const entryType = (info: FileInfo): ManifestEntry["type"] | undefined =>
  info.type === "File" ? "file" : info.type === "Directory" ? "directory" : info.type === "SymbolicLink" ? "symlink" : undefined

const optionalLstat = (deps: Deps, path: string): Effect.Effect<FileInfo | undefined, FileSystemError> =>
  deps.fs.lstat(path).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(undefined)))

/** A verify problem's words for an entry the manifest records that is not there. */
const MISSING = "gone (the manifest records it)"

/** Remove a whole tree (a rerun continues one cut short). */
const removeWholeTree = (deps: Deps, path: string): Effect.Effect<void, FileSystemError> =>
  Effect.asVoid(deps.fs.removeTree(path, WHOLE_TREE))

/**
 * The mode a snapshot directory is created with: its live mode when that lets us fill it (owner rwx; the
 * building directory sits in the private root, so nobody else reaches it meanwhile), else 0700 and a chmod
 * to the live mode once it is full (one call fewer per directory in the common case).
 */
const buildMode = (mode: number): number => ((mode & 0o700) === 0o700 ? mode : 0o700)

const NO_NAMES: ReadonlySet<string> = new Set()

/** A live file of a directory whose record in the previous snapshot says it is unchanged. */
interface LinkCandidate {
  readonly name: string
  readonly rel: string
  readonly info: FileInfo
  readonly prior: ManifestEntry
}

/** An entry a restore writes: its record, its decoded path and where it goes. */
interface RestoreItem {
  readonly entry: ManifestEntry
  readonly path: SnapshotPath
  readonly live: string
}

/** Join a snapshot-relative POSIX path onto a directory. */
const under = (dir: string, rel: string): string => NodePath.join(dir, ...rel.split("/"))

/** What every operation over one backup root shares: the dependencies, the roots, the lock wait, the root's own files. */
const backupsContext = (deps: Deps, agentDir: string, options: StateBackupsOptions) => {
  const { fs, host } = deps
  const root = resolveBackupRoot({ explicit: options.root, env: host.env, agentDir, cwd: host.cwd })
  const webRoot = webDataRootOf(host, options.webDataRoot)
  const webDataRoot = webRoot.path
  const lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS
  const cursorPath = NodePath.join(root, VERIFY_CURSOR)
  const lastVerifyPath = NodePath.join(root, LAST_VERIFY)
  return { deps, agentDir, fs, host, root, webRoot, webDataRoot, lockWaitMs, cursorPath, lastVerifyPath }
}

type BackupsContext = ReturnType<typeof backupsContext>

// ------------------------------------------------------------------------------------------ scope

const scopeRoots = (ctx: BackupsContext, web: string): Effect.Effect<ReadonlyArray<ScopeRoot>, FileSystemError> =>
  Effect.gen(function*() {
    const roots = [...agentScopeRoots(ctx.agentDir)]
    const exts = yield* ctx.fs.readDirectory(web).pipe(
      Effect.catchIf((e) => e.reason === "NotFound" || e.reason === "NotADirectory", () => Effect.succeed([]))
    )
    // Only extension ids (WR2) name an extension's data: anything else there is not a tier (nor a manifest path).
    for (const ext of exts) {
      const entry = classifyWebDataEntry(ext.name, ext.type)
      // An extension directory linked elsewhere (another disk) is where its tiers write (they follow links), so
      // its state is snapshotted there too when the link leads to a directory; a restore never writes through it.
      const leads = entry._tag === "LinkedExtension" && (yield* optionalLstat(ctx.deps, `${NodePath.join(web, ext.name)}/`).pipe(Effect.orElseSucceed(() => undefined)))?.type === "Directory"
      if (entry._tag === "Extension" || leads) roots.push(webScopeRoot(web, ext.name))
    }
    return roots
  })

const unsafe = (ctx: BackupsContext, reason: UnsafeBackupRoot["reason"], detail: string) => new UnsafeBackupRoot({ path: ctx.root, reason, detail })

/**
 * The root must lie outside every snapshotted tree (by path and, for what exists, by identity: the
 * containment rule of `domain/TierIdentity.ts`, which the tiers use too), and be a private directory of
 * ours. `create`: make it (0700) when missing. Returns whether the root exists.
 */
const checkRoot = (ctx: BackupsContext, create: boolean): Effect.Effect<boolean, UnsafeBackupRoot | TierUnresolvable | FileSystemError> =>
  Effect.gen(function*() {
    const trees = yield* scopeRoots(ctx, ctx.webDataRoot)
    for (const tree of trees) {
      if (isWithin(ctx.root, tree.source)) return yield* unsafe(ctx, "inside-snapshotted-tree", `it lies inside ${tree.source}, which every snapshot copies`)
    }
    // By identity (links followed, physical ancestors): the root lies in a tree that exists when one of the
    // directories it resolves through is that tree (another name for it, or a link into it, included).
    const rootAt = yield* locate(ctx.fs, ctx.root)
    for (const tree of trees) {
      const treeAt = yield* locate(ctx.fs, tree.source)
      if (treeAt.missing.length === 0 && resolvedWithin(rootAt, treeAt)) {
        return yield* unsafe(ctx, "inside-snapshotted-tree", `it resolves to a directory inside ${tree.source}, which every snapshot copies`)
      }
    }
    const safe = checkSafeDirectory(ctx.deps, ctx.root).pipe(
      Effect.catchTag("UnsafeRoot", (e: UnsafeRoot) => Effect.fail(unsafe(ctx, e.reason, e.detail)))
    )
    const exists = yield* safe
    if (Option.isSome(exists)) return true
    if (!create) return false
    yield* ctx.fs.makeDirectory(ctx.root, { mode: 0o700, recursive: true })
    yield* safe
    return true
  })

// ------------------------------------------------------------------------------------------ the writer lock

const withWriter = <A, E>(ctx: BackupsContext, body: Effect.Effect<A, E>): Effect.Effect<A, E | BackupBusy | FileSystemError> =>
  Effect.gen(function*() {
    const release = yield* acquireMarkerWaiting(ctx.deps, NodePath.join(ctx.root, WRITER_LOCK), "state-backup", {
      schedule: writerLockWait(ctx.lockWaitMs),
      busy: (held, waitedMs) => new BackupBusy({ root: ctx.root, holder: held.holder, waitedMs })
    })
    return yield* Effect.ensuring(body, release)
  })

/** Under the lock: remove what dead writers left. A live owner's incomplete snapshot is left alone. */
const clearLeftovers = (ctx: BackupsContext) =>
  Effect.gen(function*() {
    const removed: Array<string> = []
    for (const entry of yield* ctx.fs.readDirectory(ctx.root)) {
      const path = NodePath.join(ctx.root, entry.name)
      if (entry.name.startsWith(REMOVING_PREFIX)) {
        yield* removeWholeTree(ctx.deps, path)
      } else if (entry.name.startsWith(INCOMPLETE_PREFIX)) {
        // Without a marker (torn before it was written, or after it was removed) nobody can be building it:
        // every builder holds the lock we hold now.
        const judged = yield* judgeMarker(ctx.deps, NodePath.join(path, OWNER_MARKER))
        if (judged !== undefined && judged.alive) {
          yield* warn({ _tag: "SnapshotOwnerAlive", path, holder: judged.detail, message: "state backup: leaving an incomplete snapshot whose owner looks alive" })
          continue
        }
        yield* removeWholeTree(ctx.deps, path)
        removed.push(entry.name)
      }
    }
    return removed
  })

// ------------------------------------------------------------------------------------------ reading snapshots

const readManifest = (ctx: BackupsContext, id: string) =>
  Effect.gen(function*() {
    const path = NodePath.join(ctx.root, id, MANIFEST_FILE)
    const bytes = yield* ctx.fs.readFile(path, { maxBytes: MANIFEST_MAX_BYTES })
    const decoded = decodeSnapshotManifest(bytes)
    if (!decoded.ok) return yield* new SnapshotCorrupt({ path, detail: decoded.why })
    if (decoded.manifest.id !== id) return yield* new SnapshotCorrupt({ path, detail: `it names snapshot ${decoded.manifest.id}` })
    return decoded.manifest
  })

/** Complete snapshot ids, oldest first (ids sort by time). */
const snapshotIds = (ctx: BackupsContext) =>
  Effect.map(
    ctx.fs.readDirectory(ctx.root),
    (entries) => entries.filter((e) => e.type === "Directory" && isSnapshotId(e.name)).map((e) => e.name).sort()
  )

/** Manifests of the complete snapshots that decode, newest first; an unusable one is logged (verify reports it). */
const manifests = (ctx: BackupsContext) =>
  Effect.gen(function*() {
    const out: Array<SnapshotManifest> = []
    for (const id of (yield* snapshotIds(ctx)).reverse()) {
      const read = yield* readManifest(ctx, id).pipe(Effect.either)
      if (read._tag === "Right") out.push(read.right)
      else {
        yield* warn({
          _tag: "SnapshotManifestUnusable",
          id,
          detail: read.left.message,
          message: "state backup: skipping a snapshot whose manifest is unusable (verify reports it)"
        })
      }
    }
    return out.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
  })

const list = (ctx: BackupsContext) =>
  Effect.gen(function*() {
    if (!(yield* checkRoot(ctx, false))) return []
    const out: Array<SnapshotSummary> = []
    for (const m of yield* manifests(ctx)) {
      let files = 0
      let uniqueBytes = 0
      let uniqueApparentBytes = 0
      for (const e of m.entries) {
        if (e.type !== "file") continue
        files++
        const info = yield* optionalLstat(ctx.deps, under(NodePath.join(ctx.root, m.id), e.path))
        if (info !== undefined && info.nlink <= 1) {
          uniqueBytes += (info.blocks ?? 0) * 512
          uniqueApparentBytes += info.size
        }
      }
      // The snapshot's directory walked whole (it holds what its manifest lists, and the manifest).
      const sizes = yield* ctx.deps.fs.measureTree(NodePath.join(ctx.root, m.id), WHOLE_TREE)
      out.push({
        id: m.id,
        createdAt: m.createdAt,
        ...(m.label !== undefined ? { label: m.label } : {}),
        path: NodePath.join(ctx.root, m.id),
        files,
        bytes: sizes.bytes,
        apparentBytes: sizes.apparentBytes,
        uniqueBytes,
        uniqueApparentBytes,
        scope: m.scope
      })
    }
    return out
  })

// ------------------------------------------------------------------------------------------ create

/** The options of one `create`. */
type CreateOptions = { readonly label?: string; readonly onProgress?: (p: SnapshotProgress) => void }

/**
 * What the helpers of one `create` share: the store, the caller's options, the previous snapshot's records
 * (the link source), and what was recorded so far (entries, directories, problems, counts).
 */
interface SnapshotBuild {
  readonly ctx: BackupsContext
  readonly o: CreateOptions | undefined
  readonly previousEntries: ReadonlyMap<string, ManifestEntry>
  readonly entries: Array<ManifestEntry>
  readonly directories: Array<ManifestEntry>
  readonly skipped: Array<SnapshotSkip>
  readonly changedDuringBackup: Array<string>
  readonly problems: Array<SnapshotCreateProblem>
  readonly sqliteLive: Array<string>
  readonly counts: { files: number; bytes: number; copiedFiles: number; copiedBytes: number; linkedFiles: number; linkFallbacks: number }
  /** The snapshotted trees (read once per snapshot): what a followed link may not lead into (`followProblem`). */
  readonly trees: ReadonlyArray<ScopeRoot>
}

const skip = (b: SnapshotBuild, tag: SnapshotSkip["_tag"], rel: string, reason: string) =>
  Effect.sync(() => {
    const problem = snapshotSkip(tag, rel, reason)
    b.skipped.push(problem)
    b.problems.push(problem)
  })

/** A live entry that failed to be read while copied: reported, never a failed snapshot. */
const skipUnread = (b: SnapshotBuild, rel: string, e: FileSystemError) =>
  e.reason === "NotFound" ? skip(b, "Vanished", rel, "vanished during the backup") : skip(b, "Unreadable", rel, `unreadable: ${e.message}`)


// The hot loop (one turn per live file) is plain combinators over one port call per file (a copy that
// hashes, stamps and describes its source, or a link) and one per directory (its entries with their
// lstat): per-file Effect.gen steps and path lookups were most of a snapshot's CPU (BENCHMARKS.md).

/** Copy a live file through SHA-256; once more if it moved meanwhile, then record it as changed. */
const copyLive = (b: SnapshotBuild, source: string, target: string, rel: string, first: FileInfo, sqliteGroup: boolean) => {
  const attempt = (before: FileInfo, retried: boolean): Effect.Effect<ManifestEntry, FileSystemError> =>
    Effect.flatMap(b.ctx.fs.copyFileStamped(source, target), (copy) => {
      // The source as its descriptor saw it after the last byte, against the walk's look (or the first try's).
      const after = copy.source
      const stable = after.size === before.size && after.mtimeMs === before.mtimeMs && copy.bytes === after.size
      if (!stable && !retried) return Effect.zipRight(b.ctx.fs.removeFile(target), attempt(after, true))
      b.counts.copiedFiles++
      b.counts.copiedBytes += copy.bytes
      if (!stable) {
        b.changedDuringBackup.push(rel)
        b.problems.push(changedProblem(rel))
      }
      return Effect.succeed({
        path: rel,
        type: "file",
        size: copy.bytes,
        mode: after.mode,
        mtimeMs: after.mtimeMs,
        sha256: copy.sha256,
        ...(stable ? {} : { changedDuringBackup: true }),
        ...(sqliteGroup ? { sqliteGroup: true } : {})
      } satisfies ManifestEntry)
    })
  return attempt(first, false)
}


const recordFile = (b: SnapshotBuild, entry: ManifestEntry) => {
  b.counts.files++
  b.counts.bytes += entry.size
  b.entries.push(entry)
  b.o?.onProgress?.({ files: b.counts.files, bytes: b.counts.bytes, path: entry.path })
}


/** A live file copied into the snapshot and recorded; one that vanished or cannot be read is skipped. */
const copyLiveRecorded = (b: SnapshotBuild, source: string, target: string, rel: string, info: FileInfo, sqliteGroup: boolean) =>
  Effect.map(copyLive(b, source, target, rel, info, sqliteGroup), (entry) => recordFile(b, entry)).pipe(
    Effect.catchIf((e) => e._tag === "FileSystemError" && e.path === source, (e) => skipUnread(b, rel, e))
  )


/** A live file: a link to the previous snapshot's copy when every recorded attribute matches, else a copy. */
const addFile = (
  b: SnapshotBuild,
  source: string,
  target: string,
  previousPath: string | undefined,
  rel: string,
  info: FileInfo,
  sqliteGroup: boolean
): Effect.Effect<void, FileSystemError> => {
  const copy = copyLiveRecorded(b, source, target, rel, info, sqliteGroup)
  const prior = b.previousEntries.get(rel)
  if (sqliteGroup || previousPath === undefined || !shouldLink({ type: "file", size: info.size, mode: info.mode, mtimeMs: info.mtimeMs }, prior)) {
    return copy
  }
  // Snapshot → snapshot only: the live file is never the link's source.
  return Effect.matchEffect(b.ctx.fs.link(previousPath, target), {
    onSuccess: () =>
      Effect.sync(() => {
        b.counts.linkedFiles++
        recordFile(b, prior)
      }),
    onFailure: (e) =>
      LINK_FALLBACK.has(e.errno)
        ? Effect.suspend(() => {
          b.counts.linkFallbacks++
          return copy
        })
        : Effect.fail(e)
  })
}


const addEntry = (b: SnapshotBuild, source: string, target: string, previousPath: string | undefined, rel: string, info: FileInfo): Effect.Effect<void, FileSystemError> => {
  const type = entryType(info)
  if (type === undefined) return skip(b, "SpecialFile", rel, "special file (FIFO, socket or device)")
  if (type === "file") return addFile(b, source, target, previousPath, rel, info, false)
  return Effect.gen(function*() {
    if (type === "symlink") {
      // An agent extension's state directory kept elsewhere (`state/extensions/<ns> -> /mnt/big/ns`) is where its
      // tiers write: its state is snapshotted through the link, as a web extension's is; one that leads to no
      // directory is said, never recorded as a link a restore would put back for the tiers to write through.
      if (isAgentExtensionDir(rel)) {
        const through = yield* optionalLstat(b.ctx.deps, `${source}/`).pipe(Effect.orElseSucceed(() => undefined))
        if (through?.type === "Directory") {
          const refused = yield* followProblem(b.ctx, source, othersThan(b.ctx, b.trees, undefined))
          if (refused !== undefined) return yield* skip(b, "Unreadable", rel, refused)
          return yield* addDirectory(b, `${source}/`, target, previousPath, rel, through)
        }
        return yield* skip(b, "Unreadable", rel, "a symlink that leads to no directory: an extension's state is snapshotted only as a directory")
      }
      const linkTarget = yield* b.ctx.fs.readLink(source)
      yield* b.ctx.fs.symlink(linkTarget, target)
      b.entries.push({ path: rel, type, size: info.size, mode: info.mode, mtimeMs: info.mtimeMs, target: linkTarget })
      return
    }
    yield* addDirectory(b, source, target, previousPath, rel, info)
  }).pipe(
    Effect.catchIf((e) => e.path === source && (e.reason === "NotFound" || e.reason === "PermissionDenied"), (e) => skipUnread(b, rel, e))
  )
}


/** Why the directory behind a link is not the person's own tree to go through (`linkTargetProblem`). */
type LinkTargetProblem =
  | { readonly _tag: "NotYours"; readonly detail: string }
  | { readonly _tag: "Overlaps"; readonly other: string; readonly inside: boolean }

/**
 * The one rule for a directory the library goes through a link to (`<agent dir>/state` on another disk for a
 * restore, an extension's directory kept elsewhere for a snapshot): it must be provably the person's own
 * (`rootSafetyProblems`: a link to `/` or to another user's directory is not their data), and none of `others`
 * (the backup root, the other snapshotted trees) may be it, hold it or lie in it, by identity (walking it
 * would copy snapshots into the snapshot, or the same data twice; restoring into it would replace another tree).
 */
const linkTargetProblem = (
  ctx: BackupsContext,
  link: string,
  through: FileInfo,
  others: ReadonlyArray<string>
): Effect.Effect<LinkTargetProblem | undefined, FileSystemError | TierUnresolvable> =>
  Effect.gen(function*() {
    const [problem] = rootSafetyProblems(through, ctx.host.uid)
    if (problem !== undefined) return { _tag: "NotYours", detail: problem.detail } as const
    const at = yield* locate(ctx.fs, link)
    for (const other of others) {
      const otherAt = yield* locate(ctx.fs, other)
      const inside = resolvedWithin(at, otherAt)
      if (inside || resolvedWithin(otherAt, at)) return { _tag: "Overlaps", other, inside } as const
    }
    return undefined
  })

/** The trees a followed link may not lead into or around: the backup root and every snapshotted tree but `own`. */
const othersThan = (ctx: BackupsContext, trees: ReadonlyArray<ScopeRoot>, own: string | undefined): ReadonlyArray<string> =>
  [ctx.root, ...trees.map((t) => t.source).filter((source) => source !== own)]

/**
 * Why a snapshot does not walk the directory an extension's linked directory leads to (`linkTargetProblem`), in
 * the words of its `skipped`; `undefined` when it walks it.
 */
const followProblem = (ctx: BackupsContext, link: string, others: ReadonlyArray<string>): Effect.Effect<string | undefined> =>
  Effect.gen(function*() {
    const problem = yield* linkTargetProblem(ctx, link, yield* ctx.fs.lstat(`${link}/`), others)
    if (problem === undefined) return undefined
    if (problem._tag === "NotYours") return `a symlink to a directory not provably yours (${problem.detail}): not walked`
    return problem.other === ctx.root
      ? "a symlink into or around the backup root: walking it would copy snapshots into the snapshot"
      : `a symlink into or around ${problem.other}, which the snapshot holds already: not walked twice`
  }).pipe(Effect.orElseSucceed(() => "a symlink whose directory cannot be examined: not walked"))

/** A live directory (`source`, which may end in `/` to go through a link) recorded, then its entries. */
const addDirectory = (b: SnapshotBuild, source: string, target: string, previousPath: string | undefined, rel: string, info: FileInfo) =>
  Effect.gen(function*() {
    yield* b.ctx.fs.makeDirectory(target, { mode: buildMode(info.mode) })
    const record: ManifestEntry = { path: rel, type: "directory", size: 0, mode: info.mode, mtimeMs: info.mtimeMs }
    b.entries.push(record)
    b.directories.push(record)
    yield* addChildren(b, source, target, previousPath, rel, [])
  })

const addChildren = (
  b: SnapshotBuild,
  dir: string,
  targetDir: string,
  previousDir: string | undefined,
  rel: string,
  exclude: ReadonlyArray<string>
): Effect.Effect<void, FileSystemError> =>
  Effect.flatMap(b.ctx.fs.readDirectoryInfo(dir), (listed) => {
    const children = exclude.length === 0 ? listed : listed.filter((c) => !exclude.includes(c.name))
    const fileNames: Array<string> = []
    for (const c of children) if (c.info.type === "File") fileNames.push(c.name)
    const groups = sqliteGroups(fileNames)
    const inGroup: ReadonlySet<string> = groups.size === 0 ? NO_NAMES : new Set([...groups.values()].flat())
    // Only a group's sidecars are looked up by name (rare): no map of every file per directory.
    const fileInfo = (name: string) => children.find((c) => c.name === name)!.info
    const sourceDir = dir.endsWith("/") ? dir : `${dir}/`
    // Runs of files that link (every recorded attribute equal) become one `linkEach` call; anything
    // else is a step of its own. Steps run in listing order, so the manifest's order is the walk's.
    const steps: Array<() => Effect.Effect<void, FileSystemError>> = []
    let run: Array<LinkCandidate> = []
    const endRun = () => {
      if (run.length === 0) return
      const batch = run
      run = []
      steps.push(() => linkRun(b, sourceDir, targetDir, previousDir!, batch))
    }
    for (const { info, name } of children) {
      const childRel = `${rel}/${name}`
      if (info.type === "File" && previousDir !== undefined && !groups.has(name) && !inGroup.has(name)) {
        const prior = b.previousEntries.get(childRel)
        if (shouldLink({ type: "file", size: info.size, mode: info.mode, mtimeMs: info.mtimeMs }, prior)) {
          run.push({ name, rel: childRel, info, prior })
          continue
        }
      }
      endRun()
      steps.push(() => {
        const source = sourceDir + name
        const target = `${targetDir}/${name}`
        const previousPath = previousDir === undefined ? undefined : `${previousDir}/${name}`
        if (info.type !== "File") return addEntry(b, source, target, previousPath, childRel, info)
        const sidecars = groups.get(name)
        if (sidecars === undefined) {
          if (inGroup.has(name)) return Effect.void // copied with its database
          return addFile(b, source, target, previousPath, childRel, info, false)
        }
        // The database and its -wal/-shm one after another, never linked: as close to one moment as a file copy gets.
        b.sqliteLive.push(childRel)
        return Effect.zipRight(
          addFile(b, source, target, previousPath, childRel, info, true),
          Effect.forEach(sidecars, (sidecar) =>
            addFile(b, sourceDir + sidecar, `${targetDir}/${sidecar}`, undefined, `${rel}/${sidecar}`, fileInfo(sidecar), true), { discard: true })
        )
      })
    }
    endRun()
    return Effect.forEach(steps, (step) => step(), { discard: true })
  })


/**
 * Link a run of unchanged files to the previous snapshot's copies in one call (snapshot → snapshot: the
 * live file is never a link's source). A link that fails with a fallback errno is a copy from the live
 * file instead, in its place in the manifest's order; any other failure fails the create.
 */
const linkRun = (
  b: SnapshotBuild,
  sourceDir: string,
  targetDir: string,
  previousDir: string,
  run: ReadonlyArray<LinkCandidate>
): Effect.Effect<void, FileSystemError> =>
  Effect.flatMap(b.ctx.fs.linkEach(previousDir, targetDir, run.map((c) => c.name)), (answers) => {
    for (let i = 0; i < run.length; i++) {
      const failed = answers[i]
      if (failed !== undefined) return linkRunTail(b, sourceDir, targetDir, run, answers, i)
      b.counts.linkedFiles++
      recordFile(b, run[i]!.prior)
    }
    return Effect.void
  })


/** The rest of a run from its first failed link on, one step per file. */
const linkRunTail = (
  b: SnapshotBuild,
  sourceDir: string,
  targetDir: string,
  run: ReadonlyArray<LinkCandidate>,
  answers: ReadonlyArray<FileSystemError | undefined>,
  from: number
): Effect.Effect<void, FileSystemError> =>
  Effect.forEach(run.slice(from), (c, k) => {
    const failed = answers[from + k]
    if (failed === undefined) {
      return Effect.sync(() => {
        b.counts.linkedFiles++
        recordFile(b, c.prior)
      })
    }
    if (!LINK_FALLBACK.has(failed.errno)) return Effect.fail(failed)
    b.counts.linkFallbacks++
    return copyLiveRecorded(b, sourceDir + c.name, `${targetDir}/${c.name}`, c.rel, c.info, false)
  }, { discard: true })

const create = (ctx: BackupsContext, o?: CreateOptions) =>
  Effect.gen(function*() {
    yield* checkRoot(ctx, true)
    return yield* withWriter(ctx, Effect.gen(function*() {
      const removedLeftovers = yield* clearLeftovers(ctx)
      const createdAt = yield* Clock.currentTimeMillis
      const id = snapshotId(createdAt, yield* Random.nextIntBetween(0, 0xffffff))
      const building = NodePath.join(ctx.root, `${INCOMPLETE_PREFIX}${id}`)
      yield* ctx.fs.makeDirectory(building, { mode: 0o700 })
      yield* ctx.fs.writeFileExclusive(
        NodePath.join(building, OWNER_MARKER),
        encodeJsonBytes({ version: 1, purpose: "state-snapshot", ...selfIdentity(ctx.deps), createdAt })
      )
      // The newest complete snapshot whose manifest is usable (ids sort by time): the link source.
      let previous: SnapshotManifest | undefined
      for (const candidate of (yield* snapshotIds(ctx)).reverse()) {
        // Read-only: an unusable manifest is only not a link base (the files are copied); verify reports it.
        const read = yield* readManifest(ctx, candidate).pipe(Effect.option)
        if (Option.isSome(read)) {
          previous = read.value
          break
        }
      }
      const previousDir = previous === undefined ? undefined : NodePath.join(ctx.root, previous.id)
      const previousEntries = new Map((previous?.entries ?? []).map((e) => [e.path, e]))

      const entries: Array<ManifestEntry> = []
      const directories: Array<ManifestEntry> = []
      const skipped: Array<SnapshotSkip> = []
      const changedDuringBackup: Array<string> = []
      const problems: Array<SnapshotCreateProblem> = []
      const sqliteLive: Array<string> = []
      const counts = { files: 0, bytes: 0, copiedFiles: 0, copiedBytes: 0, linkedFiles: 0, linkFallbacks: 0 }
      const roots = yield* scopeRoots(ctx, ctx.webDataRoot)
      const b: SnapshotBuild = { ctx, o, previousEntries, entries, directories, skipped, changedDuringBackup, problems, sqliteLive, counts, trees: roots }

      for (const tree of roots) {
        let info = yield* optionalLstat(ctx.deps, tree.source)
        if (info === undefined) continue
        let source = tree.source
        const sourceIsLink = info.type === "SymbolicLink"
        if (sourceIsLink) {
          // A top-level entry linked to another disk is the user's choice of disk (as the doctor says):
          // snapshot the directory behind it (a trailing slash resolves the link), not the link.
          // Read-only: a link whose target cannot be examined is recorded as the link itself (nothing followed).
          const through = yield* optionalLstat(ctx.deps, `${tree.source}/`).pipe(Effect.orElseSucceed(() => undefined))
          if (through?.type === "Directory") {
            info = through
            source = `${tree.source}/`
          }
        }
        // An extension's state tier that leads to no directory (a dangling link, a file) holds no state of its
        // tiers: said, never recorded as what a restore would put back (`directoryOnlyWhy`).
        if (tree.extId !== undefined && info.type !== "Directory") {
          yield* skip(b, "Unreadable", tree.dest, `${aFileType(info.type)} that leads to no directory: an extension's state tier is snapshotted only as a directory`)
          continue
        }
        // A web extension's directory or state tier followed through a link (scopeRoots): only into the user's own
        // directory, and never into the backup root or a tree the snapshot holds already.
        if (tree.extId !== undefined) {
          const extensionDir = NodePath.dirname(tree.source)
          const others = othersThan(ctx, roots, tree.source)
          let refused: string | undefined
          if ((yield* optionalLstat(ctx.deps, extensionDir).pipe(Effect.orElseSucceed(() => undefined)))?.type === "SymbolicLink") {
            refused = yield* followProblem(ctx, extensionDir, others)
          }
          if (refused === undefined && sourceIsLink) refused = yield* followProblem(ctx, tree.source, others)
          if (refused !== undefined) {
            yield* skip(b, "Unreadable", tree.dest, refused)
            continue
          }
        }
        const parent = tree.dest.split("/").slice(0, -1).join("/")
        yield* ctx.fs.makeDirectory(under(building, parent), { mode: 0o700, recursive: true })
        const target = under(building, tree.dest)
        const previousPath = previousDir === undefined ? undefined : under(previousDir, tree.dest)
        if (info.type === "Directory" && tree.exclude.length > 0) {
          yield* ctx.fs.makeDirectory(target, { mode: buildMode(info.mode) })
          const record: ManifestEntry = { path: tree.dest, type: "directory", size: 0, mode: info.mode, mtimeMs: info.mtimeMs }
          entries.push(record)
          directories.push(record)
          yield* addChildren(b, source, target, previousPath, tree.dest, tree.exclude)
        } else {
          yield* addEntry(b, source, target, previousPath, tree.dest, info)
        }
      }
      // Directories get their live mode and mtime last, deepest first (filling them changed their mtime).
      // Under a setgid directory (one of ours recorded so, or the building dir inheriting it from above the
      // root) Linux's mkdir adds the bit to every new directory: then every mode is set, not only 0700 ones.
      const setgid = (mode: number) => (mode & 0o2000) !== 0
      const inherits = directories.some((d) => setgid(d.mode)) || setgid((yield* ctx.fs.lstat(building)).mode)
      for (const d of [...directories].reverse()) {
        const path = under(building, d.path)
        if (inherits || buildMode(d.mode) !== d.mode) yield* ctx.fs.chmod(path, d.mode)
        yield* ctx.fs.utimes(path, d.mtimeMs, d.mtimeMs)
      }
      const scope: SnapshotScope = { agentDir: ctx.agentDir, webDataRoot: ctx.webDataRoot, roots: roots.map((r) => r.dest) }
      const manifest = encodeSnapshotManifest({
        format: "pi-state-snapshot",
        version: 1,
        id,
        createdAt,
        ...(o?.label !== undefined ? { label: o.label } : {}),
        tool: { name: TOOL.name, version: TOOL.version },
        scope,
        entries
      })
      yield* ctx.fs.writeFileExclusive(NodePath.join(building, MANIFEST_FILE), manifest, { sync: false, mode: 0o600 })
      // Every file, link and directory of the snapshot, and its manifest, durable before the rename that
      // lists it: one syncfs instead of an fsync per file (and of the manifest). Without it a power cut could
      // leave a listed snapshot with empty copies (ext4 allocates blocks at writeback), and the next create
      // would link them onward.
      yield* ctx.fs.syncFileSystem(building)
      yield* ctx.fs.removeFile(NodePath.join(building, OWNER_MARKER))
      yield* ctx.fs.rename(building, NodePath.join(ctx.root, id))
      return { id, createdAt, scope, ...counts, changedDuringBackup, skipped, problems, sqliteLive, removedLeftovers } satisfies CreateResult
    }))
  })

// ------------------------------------------------------------------------------------------ verify

const verify = (ctx: BackupsContext, id?: string, o?: { readonly maxBytes?: number; readonly sample?: number }) =>
  Effect.gen(function*() {
    for (const [field, n] of [["maxBytes", o?.maxBytes], ["sample", o?.sample]] as const) {
      if (n !== undefined && !(Number.isSafeInteger(n) && n > 0)) {
        return yield* new InvalidArgument({ field, detail: `${String(n)} is not a whole number above 0` })
      }
    }
    if (!(yield* checkRoot(ctx, false))) {
      if (id !== undefined) return yield* new SnapshotNotFound({ root: ctx.root, id })
      return { ok: true, checked: 0, checkedBytes: 0, corrupt: [], missing: [], problems: [], complete: true }
    }
    const ids = yield* snapshotIds(ctx)
    if (id !== undefined && !ids.includes(id)) return yield* new SnapshotNotFound({ root: ctx.root, id })
    const problems: Array<VerifyProblem> = []
    const found = (tag: VerifyProblem["_tag"], path: string, detail: string) => void problems.push(verifyProblem(tag, path, detail))
    /**
     * A hash or readlink that failed: gone is `Missing`; a path that is now another type (a FIFO where a file
     * was, a file where a link was: the read's errno does not say so) `TypeMismatch`; else `Unreadable`.
     * Reported, never a failed verify.
     */
    const unread = (name: string, path: string, entry: ManifestEntry, e: FileSystemError) =>
      e.reason === "NotFound" ? Effect.sync(() => found("Missing", name, MISSING)) : Effect.map(Effect.either(optionalLstat(ctx.deps, path)), (looked) => {
        // Read-only: an lstat that fails too leaves the read's own failure as the report.
        if (looked._tag === "Left") return found("Unreadable", name, `cannot be read: ${e.message}`)
        const info = looked.right
        if (info === undefined) return found("Missing", name, MISSING)
        const recorded = entry.type === "file" ? "File" : entry.type === "symlink" ? "SymbolicLink" : "Directory"
        if (info.type !== recorded) return found("TypeMismatch", name, `is ${aFileType(info.type)}, the manifest records ${aFileType(recorded)}`)
        return found("Unreadable", name, `cannot be read: ${e.message}`)
      })
    const items: Array<{ readonly id: string; readonly entry: ManifestEntry }> = []
    for (const sid of id === undefined ? ids : [id]) {
      const m = yield* readManifest(ctx, sid).pipe(Effect.either)
      if (m._tag === "Left") {
        const name = `${sid}/${MANIFEST_FILE}`
        if (m.left._tag === "FileSystemError" && m.left.reason === "NotFound") found("ManifestMissing", name, "the snapshot's manifest is missing")
        else found("ManifestUnusable", name, `the snapshot's manifest is unusable: ${m.left._tag === "SnapshotCorrupt" ? m.left.detail : m.left.message}`)
        continue
      }
      for (const entry of m.right.entries) items.push({ id: sid, entry })
    }
    // A slice (borg's --max-duration, here by bytes or entries) starts after the last run's cursor and wraps.
    const sliced = o?.maxBytes !== undefined || o?.sample !== undefined
    let start = 0
    if (sliced) {
      // Read-only: no readable cursor means the slice starts from the beginning (it is rewritten below).
      const cursor = yield* ctx.fs.readFile(ctx.cursorPath, { maxBytes: MARKER_MAX_BYTES }).pipe(Effect.option)
      if (Option.isSome(cursor)) {
        const c = decodeJsonBytes(CursorSchema, cursor.value)
        if (c.ok) {
          const at = items.findIndex((i) => `${i.id}/${i.entry.path}` > `${c.value.id}/${c.value.path}`)
          start = at < 0 ? 0 : at
        }
      }
    }
    let checked = 0
    let checkedBytes = 0
    let last: { id: string; path: string } | undefined
    /**
     * `<id>/<dir>` → whether it is a directory in the snapshot (or what it is instead). An entry is read only
     * when every directory above it is one: through a link there, a read would leave the snapshot.
     */
    const directories = new Map<string, true | FileInfo["type"] | "missing">()
    type Above = { readonly dir: string; readonly is: FileInfo["type"] | "missing" } | undefined
    /** What is known of the directories above `rel`, without a call; "look" when one was not looked at yet. */
    const knownAbove = (sid: string, rel: string): Above | "look" => {
      let at = rel.indexOf("/")
      while (at >= 0) {
        const known = directories.get(`${sid}/${rel.slice(0, at)}`)
        if (known === undefined) return "look"
        if (known !== true) return { dir: rel.slice(0, at), is: known }
        at = rel.indexOf("/", at + 1)
      }
      return undefined
    }
    const lookAbove = (sid: string, rel: string): Effect.Effect<Above, FileSystemError> =>
      Effect.gen(function*() {
        let at = rel.indexOf("/")
        while (at >= 0) {
          const dir = rel.slice(0, at)
          let known = directories.get(`${sid}/${dir}`)
          if (known === undefined) {
            const info = yield* optionalLstat(ctx.deps, under(NodePath.join(ctx.root, sid), dir))
            known = info === undefined ? "missing" : info.type === "Directory" ? true : info.type
            directories.set(`${sid}/${dir}`, known)
          }
          if (known !== true) return { dir, is: known }
          at = rel.indexOf("/", at + 1)
        }
        return undefined
      })
    for (let n = 0; n < items.length; n++) {
      if (sliced && checked > 0 && ((o?.sample !== undefined && checked >= o.sample) || (o?.maxBytes !== undefined && checkedBytes >= o.maxBytes))) break
      const { id: sid, entry } = items[(start + n) % items.length]!
      const path = under(NodePath.join(ctx.root, sid), entry.path)
      const name = `${sid}/${entry.path}`
      checked++
      last = { id: sid, path: entry.path }
      const known = knownAbove(sid, entry.path)
      const above = known === "look" ? yield* lookAbove(sid, entry.path) : known
      if (above !== undefined) {
        if (above.is === "missing") found("Missing", name, `gone (${above.dir} is missing from the snapshot)`)
        else found("Unreadable", name, `not read: ${above.dir} is ${aFileType(above.is)} in the snapshot, where the manifest records a directory`)
      } else if (entry.type === "file") {
        const digest = yield* ctx.fs.hashFile(path).pipe(Effect.either)
        if (digest._tag === "Left") yield* unread(name, path, entry, digest.left)
        else {
          checkedBytes += digest.right.bytes
          if (digest.right.sha256 !== entry.sha256 || digest.right.bytes !== entry.size) {
            found("ContentMismatch", name, digest.right.bytes !== entry.size
              ? `${digest.right.bytes} bytes, the manifest records ${entry.size}`
              : "its SHA-256 differs from the manifest's")
          }
        }
      } else if (entry.type === "symlink") {
        const target = yield* ctx.fs.readLink(path).pipe(Effect.either)
        if (target._tag === "Left") yield* unread(name, path, entry, target.left)
        else if (target.right !== entry.target) found("TargetMismatch", name, `the link points to ${target.right}, not ${entry.target ?? ""}`)
      } else {
        const info = yield* optionalLstat(ctx.deps, path)
        if (info === undefined) found("Missing", name, MISSING)
        else if (info.type !== "Directory") found("TypeMismatch", name, `is ${aFileType(info.type)}, the manifest records a directory`)
      }
    }
    const complete = checked >= items.length
    if (sliced && last !== undefined) {
      // Wrapped around or finished: the next slice starts from the beginning.
      yield* ctx.fs.writeFileAtomic(ctx.cursorPath, encodeJsonBytes(complete ? { id: "", path: "" } : last), { sync: false })
    }
    const missing = problems.filter(isMissingProblem).map((p) => p.path)
    const corrupt = problems.filter((p) => !isMissingProblem(p)).map((p) => p.path)
    const at = yield* Clock.currentTimeMillis
    const record: LastVerify = {
      version: 1, at, id: id ?? null, ok: problems.length === 0, checked, checkedBytes, corrupt: corrupt.length, missing: missing.length, complete
    }
    yield* ctx.fs.writeFileAtomic(ctx.lastVerifyPath, encodeJsonBytes(record), { sync: false })
    return { ok: problems.length === 0, checked, checkedBytes, corrupt, missing, problems, complete }
  })

const lastVerify = (ctx: BackupsContext): Effect.Effect<LastVerifyRead> =>
  ctx.fs.readFile(ctx.lastVerifyPath, { maxBytes: MARKER_MAX_BYTES }).pipe(
    Effect.map((bytes): LastVerifyRead => {
      const decoded = decodeJsonBytes(LastVerify, bytes)
      return decoded.ok ? { last: decoded.value, problem: null } : { last: null, problem: `${ctx.lastVerifyPath}: ${decoded.why}` }
    }),
    Effect.catchAll((e) => Effect.succeed<LastVerifyRead>({ last: null, problem: e.reason === "NotFound" ? null : e.message }))
  )

// ------------------------------------------------------------------------------------------ forget

const forget = (ctx: BackupsContext, o: ForgetPolicy & { readonly dryRun?: boolean; readonly timeZone?: string }) =>
  Effect.gen(function*() {
    const check = planForgetResult([], o, { timeZone: o.timeZone })
    if (!check.ok) return yield* check.error
    const run = Effect.gen(function*() {
      if (o.dryRun !== true) yield* clearLeftovers(ctx)
      const all = yield* manifests(ctx)
      const planned = planForgetResult(all.map((m) => ({ id: m.id, createdAt: m.createdAt })), o, { timeZone: o.timeZone })
      if (!planned.ok) return yield* planned.error
      if (o.dryRun !== true) {
        for (const id of planned.plan.remove) {
          // Out of the readers' sight first, then deleted (a crash leaves `.removing-*`, cleared next time).
          const removing = NodePath.join(ctx.root, `${REMOVING_PREFIX}${id}`)
          yield* ctx.fs.rename(NodePath.join(ctx.root, id), removing)
          yield* removeWholeTree(ctx.deps, removing)
        }
      }
      return { kept: planned.plan.keep, removed: planned.plan.remove, dryRun: o.dryRun === true }
    })
    if (!(yield* checkRoot(ctx, false))) return { kept: [], removed: [], dryRun: o.dryRun === true }
    return yield* (o.dryRun === true ? run : withWriter(ctx, run))
  })

// ------------------------------------------------------------------------------------------ restore

/**
 * Read what a restore will copy, before anything live is moved or written (SPEC BK2 "restore verifies
 * before it writes"): each directory on the way to a selected entry is a directory in the snapshot (a link
 * there would lead the reads outside it), each selected directory is one, each link has its recorded
 * target and each file re-hashes to its record. The first difference is `SnapshotCorrupt`.
 */
const checkBeforeRestore = (ctx: BackupsContext, snapshotDir: string, selected: ReadonlyArray<RestoreItem>) =>
  Effect.gen(function*() {
    const damaged = (entry: string, detail: string) => new SnapshotCorrupt({ path: snapshotDir, entry, detail })
    /** A read that failed: say what is there instead, or pass on a failure that is not about the snapshot's shape. */
    const unread = (entry: string, recorded: FileInfo["type"], e: FileSystemError): Effect.Effect<never, SnapshotCorrupt | FileSystemError> =>
      Effect.flatMap(optionalLstat(ctx.deps, under(snapshotDir, entry)), (info): Effect.Effect<never, SnapshotCorrupt | FileSystemError> =>
        info === undefined
          ? Effect.fail(damaged(entry, "is missing from the snapshot"))
          : info.type !== recorded
          ? Effect.fail(damaged(entry, `is ${aFileType(info.type)} in the snapshot, the manifest records ${aFileType(recorded)}`))
          : Effect.fail(e))
    for (const item of selected) {
      const why = item.entry.type === "directory" ? undefined : directoryOnlyWhy(item.path)
      if (why !== undefined) return yield* damaged(item.entry.path, `is recorded as ${withArticle(item.entry.type)}: ${why}`)
    }
    const ancestors = new Set<string>()
    for (const item of selected) {
      for (let k = 1; k < item.path.segments.length; k++) ancestors.add(item.path.segments.slice(0, k).join("/"))
    }
    for (const dir of [...ancestors].sort()) {
      const info = yield* optionalLstat(ctx.deps, under(snapshotDir, dir))
      if (info === undefined) return yield* damaged(dir, "is missing from the snapshot")
      if (info.type !== "Directory") return yield* damaged(dir, `is ${aFileType(info.type)} in the snapshot, where the entries below it need a directory`)
    }
    for (const { entry } of selected) {
      const from = under(snapshotDir, entry.path)
      if (entry.type === "directory") {
        if (!ancestors.has(entry.path)) {
          const info = yield* optionalLstat(ctx.deps, from)
          if (info === undefined) return yield* damaged(entry.path, "is missing from the snapshot")
          if (info.type !== "Directory") return yield* damaged(entry.path, `is ${aFileType(info.type)} in the snapshot, the manifest records a directory`)
        }
      } else if (entry.type === "symlink") {
        const target = yield* ctx.fs.readLink(from).pipe(Effect.catchAll((e) => unread(entry.path, "SymbolicLink", e)))
        if (target !== entry.target) return yield* damaged(entry.path, "the link's target differs from the manifest's")
      } else {
        const digest = yield* ctx.fs.hashFile(from).pipe(Effect.catchAll((e) => unread(entry.path, "File", e)))
        if (digest.bytes !== entry.size) return yield* damaged(entry.path, `${digest.bytes} bytes, the manifest records ${entry.size}`)
        if (digest.sha256 !== entry.sha256) return yield* damaged(entry.path, "its SHA-256 differs from the manifest's")
      }
    }
  })

/**
 * `<agent dir>/state` may be a symlink to the person's own directory elsewhere (another disk): a snapshot
 * copies the directory behind it, and a restore writes into it only when that directory is provably theirs
 * and no other tree's: a directory (links followed) owned by this user and writable by nobody else
 * (`rootSafetyProblems`), neither inside nor around another snapshotted tree or the backup root (by
 * identity: `resolvedWithin`). Otherwise `UnsafeRestoreTarget`, naming the link, before anything moves.
 * The link's path when it is one and safe, else `undefined`.
 */
const checkStateLink = (ctx: BackupsContext, web: string) =>
  Effect.gen(function*() {
    const link = NodePath.join(ctx.agentDir, "state")
    const info = yield* optionalLstat(ctx.deps, link)
    if (info?.type !== "SymbolicLink") return undefined
    const target = Option.getOrUndefined(yield* Effect.option(ctx.fs.readLink(link)))
    const refuse = (detail: string) => new UnsafeRestoreTarget({ path: link, ...(target !== undefined ? { target } : {}), detail })
    const through = yield* optionalLstat(ctx.deps, `${link}/`).pipe(Effect.orElseSucceed(() => undefined))
    if (through?.type !== "Directory") return yield* refuse("it does not lead to a directory")
    const problem = yield* linkTargetProblem(ctx, link, through, othersThan(ctx, yield* scopeRoots(ctx, web), link))
    if (problem?._tag === "NotYours") return yield* refuse(`the directory it leads to is not provably yours: ${problem.detail}`)
    if (problem?._tag === "Overlaps") {
      return yield* refuse(`the directory it leads to ${problem.inside ? "lies inside" : "holds"} ${problem.other === ctx.root ? "the backup root" : problem.other}`)
    }
    return link
  })

/**
 * A restore writes an extension's state only into `<web data root>/<extId>/` in place: through a link there, it
 * would move aside and write into whatever directory the link names (another user's, another disk where the
 * aside rename cannot go). The extensions a restore touches whose directory is a link: a restore of that one
 * extension is refused before anything moves (`UnsafeRestoreTarget`, naming the link); a whole-scope restore
 * leaves them as they are and says so (`notRestored`). Their files in the snapshot are plain copies.
 */
const linkedExtensions = (ctx: BackupsContext, web: string, extensions: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const linked: Array<string> = []
    for (const ext of [...extensions].sort()) {
      if ((yield* optionalLstat(ctx.deps, NodePath.join(web, ext)))?.type === "SymbolicLink") linked.push(ext)
    }
    return linked
  })

const refuseExtensionLink = (ctx: BackupsContext, dir: string) =>
  Effect.gen(function*() {
    const target = Option.getOrUndefined(yield* Effect.option(ctx.fs.readLink(dir)))
    return yield* new UnsafeRestoreTarget({
      path: dir,
      ...(target !== undefined ? { target } : {}),
      detail: "an extension's state is restored only into its directory in place, never through a link: put the directory there, or copy its files back by hand from the snapshot"
    })
  })

/**
 * Where a restore moves the live data it replaces (`state/restore-aside/`, the web data root's `.restore-aside/`) is
 * the library's own directory: a symlink there would carry the one copy of that data wherever it points, outside
 * the agent dir and its snapshots. Refused before anything moves (`UnsafeRestoreTarget`, naming the link).
 */
const checkAsideDir = (ctx: BackupsContext, dir: string) =>
  Effect.gen(function*() {
    const info = yield* optionalLstat(ctx.deps, dir)
    if (info?.type !== "SymbolicLink") return
    const target = Option.getOrUndefined(yield* Effect.option(ctx.fs.readLink(dir)))
    return yield* new UnsafeRestoreTarget({
      path: dir,
      ...(target !== undefined ? { target } : {}),
      detail: "live data is moved aside only into a directory of the library's own, never through a link"
    })
  })

const restore = (ctx: BackupsContext, id: string, o?: { readonly extension?: string; readonly dryRun?: boolean }) =>
  Effect.gen(function*() {
    // WR2 here, not only in the CLI: a namespace like `../../Documents` would name live data outside the scope.
    if (o?.extension !== undefined) yield* decodeSegment("extension", o.extension)
    if (!(yield* checkRoot(ctx, false))) return yield* new SnapshotNotFound({ root: ctx.root, id })
    const run = Effect.gen(function*() {
      if (!(yield* snapshotIds(ctx)).includes(id)) return yield* new SnapshotNotFound({ root: ctx.root, id })
      const manifestPath = NodePath.join(ctx.root, id, MANIFEST_FILE)
      // Decoded whole (every path, the tree's shape) by readManifest: an unsafe path refuses the snapshot.
      const manifest = yield* readManifest(ctx, id).pipe(
        Effect.catchIf((e): e is FileSystemError => e._tag === "FileSystemError" && e.reason === "NotFound", () =>
          Effect.fail(new SnapshotCorrupt({ path: manifestPath, detail: "it is missing" })))
      )
      const snapshotDir = NodePath.join(ctx.root, id)
      // Where a restore writes is this process's agent dir and web data root, never the manifest's record of
      // where the snapshot came from: that is as untrusted as its paths.
      const web = ctx.webDataRoot
      const selected: Array<RestoreItem> = []
      for (const entry of manifest.entries) {
        const decoded = decodeSnapshotPath(entry.path)
        if (!decoded.ok) return yield* new SnapshotCorrupt({ path: manifestPath, detail: `path ${JSON.stringify(entry.path)} ${decoded.why}` })
        const path = decoded.value
        if (!inRestoreScope(path, o?.extension)) continue
        const base = path.segments[0] === "agent" ? ctx.agentDir : web
        selected.push({ entry, path, live: NodePath.join(base, ...path.segments.slice(1)) })
      }
      // SPEC BK2 "refuses a scope the snapshot does not hold": one extension it has no state of is refused
      // before anything moves (restoring it would move the live state aside and put nothing back).
      if (o?.extension !== undefined && selected.length === 0) {
        const held = new Set<string>()
        for (const entry of manifest.entries) {
          const decoded = decodeSnapshotPath(entry.path)
          if (decoded.ok && decoded.value.extension !== undefined) held.add(decoded.value.extension)
        }
        return yield* new ExtensionNotInSnapshot({ root: ctx.root, id, extension: o.extension, held: [...held].sort() })
      }
      // The web extensions the snapshot holds state of, and the extension state directories (web `web/<id>/state`,
      // agent `agent/state/extensions/<ns>`) it records as something other than a directory (an older build
      // recorded a link so): one of those restored alone is corrupt (checkBeforeRestore names it); in a
      // whole-scope restore it is not put back (never a link for the tiers to write through), and the rest goes on.
      const webStateHeld = new Set<string>()
      const recordedAsLink = new Set<RestoreItem>()
      for (const item of selected) {
        const recordedLink = item.entry.type !== "directory" && directoryOnlyWhy(item.path) !== undefined && !isKeptInPlace(item.path)
        if (recordedLink) recordedAsLink.add(item)
        else if (item.path.segments[0] === "web") webStateHeld.add(item.path.segments[1]!)
      }
      const webRecordedAsLink = new Set([...recordedAsLink].filter((i) => i.path.segments[0] === "web").map((i) => i.path.segments[1]!))
      const webSideOf = (segments: ReadonlyArray<string>, exts: ReadonlySet<string>) => segments[0] === "web" && exts.has(segments[1]!)
      if (o?.extension === undefined) {
        for (let i = selected.length - 1; i >= 0; i--) {
          const item = selected[i]!
          if (recordedAsLink.has(item) || webSideOf(item.path.segments, webRecordedAsLink)) selected.splice(i, 1)
        }
      }
      yield* checkBeforeRestore(ctx, snapshotDir, selected)
      // `state/` kept elsewhere through a symlink (the person's own layout): restored into its target only
      // once that is proven safe; the path through the link (a trailing slash) stands for the directory.
      const stateLink = yield* checkStateLink(ctx, web)
      yield* checkAsideDir(ctx, agentPaths(ctx.agentDir).restoreAsideDir)
      yield* checkAsideDir(ctx, NodePath.join(web, WEB_RESTORE_ASIDE_DIR))
      const asDirectory = (live: string): string => (live === stateLink ? `${live}/` : live)
      /** Make a live directory (and its parents); the checked directory behind the state link is there already. */
      const ensureDirectory = (live: string) => (live === stateLink ? Effect.void : ctx.fs.makeDirectory(live, { mode: 0o700, recursive: true }))

      // The live units this restore replaces, moved aside whole: one extension's state, or the whole scope
      // (`state/` itself stays: its backups/ and restore-aside/ are not ours to move).
      const units: Array<string> = []
      if (o?.extension !== undefined) units.push(...extensionDests(o.extension))
      else {
        for (const tree of yield* scopeRoots(ctx, web)) {
          if (tree.exclude.length === 0) units.push(tree.dest)
          else {
            const children = yield* ctx.fs.readDirectory(asDirectory(tree.source)).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed([])))
            for (const c of children) if (!tree.exclude.includes(c.name)) units.push(`${tree.dest}/${c.name}`)
          }
        }
      }
      const extensions = new Set<string>()
      for (const item of selected) if (item.path.segments[0] === "web") extensions.add(item.path.segments[1]!)
      for (const rel of units) if (rel.startsWith("web/")) extensions.add(rel.split("/")[1]!)
      const linked = yield* linkedExtensions(ctx, web, extensions)
      if (o?.extension !== undefined && linked.includes(o.extension)) return yield* refuseExtensionLink(ctx, NodePath.join(web, o.extension))
      // Only the web side is left alone: an agent extension of the same name (state/extensions/<ns>) is the
      // agent's, restored with the rest.
      const notRestored: Array<NotRestored> = [
        ...linked.map((ext) => ({
          path: NodePath.join(web, ext),
          why: webStateHeld.has(ext)
            ? "a symlink, never restored through, left as it is: its state in the snapshot is to copy back by hand"
            : "a symlink, never restored through, left as it is (the snapshot holds no state of it)"
        })),
        ...[...webRecordedAsLink].filter((ext) => !linked.includes(ext)).map((ext) => ({
          path: NodePath.join(web, ext, "state"),
          why: "the snapshot records this state tier as a link, not a directory: nothing of it is restored, and the live one is left as it is"
        })),
        ...[...recordedAsLink].filter((i) => i.path.segments[0] === "agent").map((i) => ({
          path: i.live,
          why: "the snapshot records this extension's state as a link, not a directory: nothing of it is restored (the live one went aside with the rest)"
        }))
      ]
      const leave = new Set([...linked, ...webRecordedAsLink])
      for (let i = units.length - 1; i >= 0; i--) if (webSideOf(units[i]!.split("/"), leave)) units.splice(i, 1)
      for (let i = selected.length - 1; i >= 0; i--) if (webSideOf(selected[i]!.path.segments, leave)) selected.splice(i, 1)
      const liveOfUnit = (rel: string): string => {
        const [top, ...rest] = rel.split("/")
        return NodePath.join(top === "agent" ? ctx.agentDir : web, ...rest)
      }
      const present: Array<{ rel: string; live: string }> = []
      for (const rel of units) {
        const live = liveOfUnit(rel)
        if ((yield* optionalLstat(ctx.deps, live)) !== undefined) present.push({ rel, live })
      }
      const restored = selected.filter((s) => s.entry.type !== "directory").map((s) => s.live)
      if (o?.dryRun === true) return { restored, movedAside: null, asideDirs: [], movedAsidePaths: present.map((p) => p.live), notRestored, dryRun: true }

      const stamp = restoreAsideName(yield* Clock.currentTimeMillis, yield* Random.nextIntBetween(0, 0xffffff))
      const aside = NodePath.join(agentPaths(ctx.agentDir).restoreAsideDir, stamp)
      /** Every directory live data went to: the agent's, and the web data root's own when a rename cannot cross. */
      const asideDirs: Array<string> = []
      const used = (dir: string) => Effect.sync(() => void (asideDirs.includes(dir) || asideDirs.push(dir)))
      for (const unit of present) {
        const target = under(aside, unit.rel)
        yield* ctx.fs.makeDirectory(NodePath.dirname(target), { mode: 0o700, recursive: true })
        yield* ctx.fs.rename(unit.live, target).pipe(
          Effect.zipRight(used(aside)),
          // Web data on another filesystem: aside within its own filesystem, beside the data root.
          Effect.catchIf((e) => e.reason === "CrossDevice", () =>
            Effect.gen(function*() {
              const localAside = NodePath.join(web, WEB_RESTORE_ASIDE_DIR, stamp)
              const local = under(localAside, unit.rel)
              yield* ctx.fs.makeDirectory(NodePath.dirname(local), { mode: 0o700, recursive: true })
              yield* ctx.fs.rename(unit.live, local)
              yield* used(localAside)
            }))
        )
      }
      const movedAside = asideDirs[0] ?? null
      // Directories first (parents before children), then files, then links last: nothing is written below
      // a link this restore made (the manifest records nothing below a link: domain/SnapshotPath.ts).
      const dirs = selected.filter((s) => s.entry.type === "directory").sort((a, b) => a.path.segments.length - b.path.segments.length)
      for (const d of dirs) yield* ensureDirectory(d.live)
      for (const { entry, live } of selected) {
        if (entry.type !== "file") continue
        yield* ensureDirectory(NodePath.dirname(live))
        const copied = yield* ctx.fs.copyFileHashed(under(snapshotDir, entry.path), live, { sync: true })
        if (copied.sha256 !== entry.sha256 || copied.bytes !== entry.size) {
          // Checked a moment ago, different now: the snapshot is being changed under us. Stop, keep what was moved aside.
          yield* ctx.fs.removeFile(live)
          return yield* new SnapshotCorrupt({ path: snapshotDir, entry: entry.path, detail: "it changed while it was restored", stopped: { movedAside, asideDirs } })
        }
        yield* ctx.fs.chmod(live, restoredMode("file", entry.mode))
        yield* ctx.fs.utimes(live, entry.mtimeMs, entry.mtimeMs)
      }
      for (const { entry, live } of selected) {
        if (entry.type !== "symlink") continue
        yield* ensureDirectory(NodePath.dirname(live))
        yield* ctx.fs.symlink(entry.target!, live)
      }
      for (const d of dirs.reverse()) {
        yield* ctx.fs.chmod(asDirectory(d.live), restoredMode("directory", d.entry.mode))
        yield* ctx.fs.utimes(asDirectory(d.live), d.entry.mtimeMs, d.entry.mtimeMs)
      }
      return { restored, movedAside, asideDirs, movedAsidePaths: present.map((p) => p.live), notRestored, dryRun: false }
    })
    return yield* (o?.dryRun === true ? run : withWriter(ctx, run))
  })

const makeStateBackups = (deps: Deps, agentDir: string, options: StateBackupsOptions): StateBackups["Type"] => {
  const ctx = backupsContext(deps, agentDir, options)
  return {
    root: ctx.root,
    webDataRoot: ctx.webRoot,
    create: (o) => create(ctx, o),
    list: () => list(ctx),
    verify: (id, o) => verify(ctx, id, o),
    forget: (o) => forget(ctx, o),
    restore: (id, o) => restore(ctx, id, o),
    lastVerify: lastVerify(ctx),
    findings: findingsOf(ctx.deps, ctx.agentDir, (create) => checkRoot(ctx, create), ctx.root)
  }
}

/** `StateBackups.findings`: the doctor's look at state snapshots, with the root check the writers use. */
const findingsOf = (
  deps: Deps,
  agentDir: string,
  checkRoot: (create: false) => Effect.Effect<boolean, UnsafeBackupRoot | TierUnresolvable | FileSystemError>,
  root: string
): Effect.Effect<ReadonlyArray<FindingDraft>> =>
  Effect.gen(function*() {
    const findings: Array<FindingDraft> = []
    const exists = yield* checkRoot(false).pipe(
      Effect.catchAll((e) =>
        Effect.sync(() => {
          findings.push({
            code: "state-backup-root-unsafe",
            path: root,
            message: e.message,
            fix: "choose a private directory outside state/ with --root or $PI_STATE_BACKUP_DIR"
          })
          return false
        })
      )
    )
    if (exists) {
      // Doctor findings only (read, never written): an unlistable root is not a safety boundary here.
      const entries = yield* deps.fs.readDirectory(root).pipe(Effect.orElseSucceed(() => []))
      for (const entry of entries) {
        if (!entry.name.startsWith(INCOMPLETE_PREFIX) || entry.type !== "Directory") continue
        const path = NodePath.join(root, entry.name)
        // Read-only: its own clock stands for the file system's (no probe is written, DR1).
        const judged = yield* judgeMarker({ ...deps, fsClock: readerFsClock }, NodePath.join(path, OWNER_MARKER))
        if (judged !== undefined && judged.alive) continue
        findings.push({
          code: "state-backup-incomplete",
          path,
          message: `an incomplete snapshot left by ${judged === undefined ? "a writer that is gone (no owner marker)" : judged.detail}`,
          fix: `the next \`pi-storage ${agentDirFlag(agentDir)} backup create --root ${shellWord(root)}\` removes it`
        })
      }
    }
    const asideRoot = agentPaths(agentDir).restoreAsideDir
    // Doctor findings only, as above: an unlistable restore-aside directory is absent here (nothing is written).
    for (const entry of yield* deps.fs.readDirectory(asideRoot).pipe(Effect.orElseSucceed(() => []))) {
      findings.push({
        code: "state-backup-restore-aside",
        path: NodePath.join(asideRoot, entry.name),
        message: "live data a restore moved aside (never deleted by the library)",
        fix: "copy back what you need, then delete the directory"
      })
    }
    return findings
  })
