/**
 * Config history in a real git repository (docs/config-history.md "Config history"): snapshot, log, diff, rollback, and the crash sentinel
 * of `change()`. The repository is `state/backups/config/history/` with its own work tree, into which the
 * tracked files are mirrored (laid out by source: `agent/…`, `web/<extId>/config/…`): live files are never
 * checked out in place, and no `.git` ever sits at the agent root or above a work run.
 *
 * Writers are serialised by our own lock (a marker with the markers' liveness rules); git runs through the one
 * isolated runner (internal/git.ts); paths are always passed explicitly (never `add -A`). What is versioned,
 * the denylist, the red lines and the redaction of credentials are pure rules (src/domain/ConfigHistory.ts,
 * src/domain/ConfigRedLines.ts).
 */
import { aFileType } from "../domain/FileTypeWords.js"
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import {
  AGENT_CONFIG_FILES,
  AGENT_MIRROR,
  DEFAULT_DENYLIST,
  deniedBy,
  displayOfRepoPath,
  displayPatch,
  newFilesPatch,
  historyExcludeBytes,
  NEVER_VERSIONED,
  HISTORY_LOCK,
  historyContent,
  type LogEntry,
  PENDING_MARKER,
  REDACTION_RULE,
  revisionViolation,
  RACY_MARGIN_MS,
  STAT_CACHE,
  STAT_CACHE_MAX_BYTES,
  statCacheFits,
  statCacheScope,
  rollbackContent,
  unstoredLiveCover,
  WEB_MIRROR,
  WEB_ROOT_RECORD,
  WEB_ROOT_RECORD_MAX_BYTES,
  webMirrorOf,
  decodeWebRootRecord,
  writeWebRootRecordFix
} from "../domain/ConfigHistory.js"
import { DIRECTORY_PROFILE_SETTINGS, DIRECTORY_PROFILES_DIR } from "../domain/AgentPaths.js"
import { configEntryViolation, DEFAULT_CONFIG_BUDGET_BYTES } from "../domain/ConfigRedLines.js"
import {
  ConfigHistoryBusy,
  ConfigHistoryCorrupt,
  type FileSystemError,
  GitFailed,
  InvalidArgument,
  UnknownRevision
} from "../domain/Errors.js"
import { decodeJsonBytes, encodeJsonBytes } from "../domain/Formats.js"
import { chainComponentViolation, dirsBelowRoot } from "../domain/PathChain.js"
import { decodeSegment } from "../domain/Segment.js"
import { isTierWorkFile, resolveStateDir } from "../domain/Tiers.js"
import { tierPaths, type WebDataRootResolution } from "../domain/WebPaths.js"
import { AgentDir, rootLinkHops } from "./AgentDir.js"
import { countOf } from "../domain/Count.js"
import { isWithin } from "../domain/StateSnapshot.js"
import { type DirEntry, FileSystem, WHOLE_TREE } from "./FileSystem.js"
import { Host } from "./Host.js"
import { type InterruptedChange, historyDirOf, readChangeSentinel, sentinelPathOf } from "./internal/configSentinel.js"
import { depsFromContext, nonce, selfIdentity } from "./internal/deps.js"
import { sameBytes } from "../domain/Bytes.js"
import { ProcessRunner } from "./ProcessRunner.js"
import { UsageRecorder } from "./UsageHistory.js"
import { type Git, type GitCall, HISTORY_ATTRIBUTES, makeGit, NO_DIFF_PROGRAMS } from "./internal/git.js"
import {
  findPackedRef,
  gitRefusesPath,
  LOG_FORMAT,
  nulPathsInput,
  objectIdsInput,
  type Parsed,
  parseCatFileBatch,
  parseHeadFile,
  parseLog,
  parseLooseRef,
  parseLsTree,
  parseNulPaths,
  parseObjectIdLine
} from "../domain/GitFormats.js"
import { byteOrder, nameOfBytes } from "../domain/NameBytes.js"
import { acquireMarkerWaiting, DEFAULT_LOCK_WAIT_MS, waitingAtMost } from "./internal/markers.js"
import { warn } from "./internal/warn.js"
import { webDataRootOf } from "./internal/webDataRoot.js"
import { classifyWebDataEntry } from "../domain/WebDataEntries.js"
import { type ConfigSkip, configSkip, type ConfigSkipTag, type UnresolvedSecret, unresolvedSecret } from "../domain/ReportProblems.js"
import { isChanged } from "../domain/FileChange.js"
import { type CleanScan, decodeCleanScan, type Identity, identityOf, recordableScan, sameCleanScan } from "../domain/ConfigCleanScan.js"

export type { InterruptedChange } from "./internal/configSentinel.js"
export type { LogEntry } from "../domain/ConfigHistory.js"

export interface ConfigHistoryOptions {
  /**
   * The web host's extension data root (`data/`), whose every extension's `config/` is versioned: else
   * `$PI_WEB_DATA_DIR`, else `~/.pi/web/data` (TD1, `resolveWebDataRoot`: the root the tiers write under).
   */
  readonly webDataRoot?: string | undefined
  /** Glob patterns never committed (replaces the default: auth.json, *.pem, *.key, id_*, .env*, *secret*, *token*, *credential*, .netrc, _netrc, .pgpass). */
  readonly denylist?: ReadonlyArray<string> | undefined
  /** Files above this are skipped (default: the config budget, 1 MiB). */
  readonly configBudgetBytes?: number | undefined
  /** How long a writer waits for another one's lock before `ConfigHistoryBusy` (default 30 s). */
  readonly lockWaitMs?: number | undefined
}

/**
 * A file history left out (snapshot) or a live path a rollback left alone: a tagged problem (`Denylisted`,
 * `Symlink`, `PathBlocked` …, see `domain/ReportProblems.ts`) with the `reason` words and a `message`.
 */
export type Skipped = ConfigSkip

/** What a config snapshot covered: the agent dir's config and every extension's `config/` under the web data root. */
export interface ConfigRoots {
  readonly agentDir: string
  readonly webDataRoot: string
}

export interface SnapshotResult {
  /** The new revision, `null` when nothing changed. */
  readonly revision: string | null
  /** The roots whose config files were looked at. */
  readonly roots: ConfigRoots
  readonly changed: ReadonlyArray<string>
  readonly skipped: ReadonlyArray<Skipped>
}

export interface DiffResult {
  readonly files: ReadonlyArray<string>
  readonly patch: string
}

export interface RollbackResult {
  /** The revision recording the rollback (the current head when the files already matched). */
  readonly revision: string | null
  readonly restored: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  /** Redacted credentials with no live value to keep: their keys were left out (`SecretLeftOut`: file and JSON pointer). */
  readonly unresolvedSecrets: ReadonlyArray<UnresolvedSecret>
  /** Live paths left alone: a symlink or a file on the way from the managed root, or at the path itself. */
  readonly skipped: ReadonlyArray<Skipped>
}

export interface HistoryStatus {
  readonly head: string | null
  /** Live files differ from the newest revision. */
  readonly dirty: boolean
  readonly interrupted: InterruptedChange | null
}

export type ConfigHistoryError = GitFailed | UnknownRevision | ConfigHistoryBusy | ConfigHistoryCorrupt | FileSystemError | InvalidArgument

export { DEFAULT_LOCK_WAIT_MS }
const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
const MAX_CONFIG_DEPTH = 16
/** Mirrored copies are config-sized; a bounded read also keeps it one synchronous syscall in the Node layer. */
const MIRROR_READ_MAX = 1 << 20
/** Limits on what git answers about the history (hostile input, docs/config-history.md "Config history"). */
const HISTORY_PATHS_MAX = 100_000
const REVISION_BYTES_MAX = 256 << 20
const BLOB_MAX = 16 << 20
const REF_MAX_BYTES = 4096
const PACKED_REFS_MAX = 1 << 20
/** A removed mirror directory (the live tree turned it into a file) is at most a config tree. */
const MIRROR_TREE_BUDGET = { maxEntries: HISTORY_PATHS_MAX, maxDepth: MAX_CONFIG_DEPTH + 8 }
/**
 * A name a FileSystem layer decoded lossily (bytes that are not UTF-8 became U+FFFD; the Node layer carries
 * them losslessly: docs/safety.md "Names are bytes"): when no entry answers to it, the file cannot be read back under that name.
 */
const REPLACEMENT_CHARACTER = "\uFFFD"

/** A live file that history tracks, with the bytes history stores for it. */
interface LiveFile {
  readonly repoPath: string
  readonly display: string
  readonly livePath: string
  /** `undefined`: not read, because the stat cache proves it equal to its mirrored copy. */
  readonly stored: Uint8Array | undefined
}

/**
 * The stat cache (git's index idea, for the live files): after a snapshot, each tracked file's size, mtime and
 * inode, the HEAD they match and the mirror's file list. A file whose stat matches, and whose mtime is older
 * than the cache by a margin (coarse file-system clocks: a later write may carry an earlier-looking mtime), is
 * equal to its mirrored copy without reading either. Kept in the git dir, so it is never content.
 */
const StatCache = Schema.Struct({
  version: Schema.Literal(1),
  head: Schema.String,
  scope: Schema.String,
  recordedAt: Schema.Number,
  entries: Schema.Record({ key: Schema.String, value: Schema.Tuple(Schema.Number, Schema.Number, Schema.Number) }),
  mirror: Schema.Array(Schema.String),
  /** The redaction rule the mirrored copies were made with: under another rule every file is read again. */
  rule: Schema.Number,
  /** The last scan that found nothing to commit, when it may be recorded (domain/ConfigCleanScan.ts; decoded there). */
  clean: Schema.optional(Schema.Unknown)
})
type StatCache = typeof StatCache.Type
const STAT_CACHE_MAX = STAT_CACHE_MAX_BYTES

interface ScanState {
  readonly files: Array<LiveFile>
  readonly skipped: Array<Skipped>
  readonly present: Set<string>
  /** Repo path prefixes of directories skipped whole (a linked extension or config dir): their history stays as it was. */
  readonly presentUnder: Set<string>
  readonly cache: StatCache | undefined
  readonly stats: Map<string, readonly [number, number, number]>
  /** Files read although cached (racy or changed stat): a fresh cache would trust the unchanged ones. */
  racyRead: number
  /** Every path the scan looked at and what lstat answered (`undefined`: an answer a clean scan cannot record). */
  readonly observed: Array<readonly [string, Identity | null | undefined]>
}

interface LiveScan {
  readonly files: ReadonlyArray<LiveFile>
  readonly skipped: ReadonlyArray<Skipped>
  /** Repo paths of live files that exist but are skipped: their history is left as it was, never "removed". */
  readonly skippedRepoPaths: ReadonlySet<string>
  /** Repo path prefixes (`web/<id>/config`) of directories skipped whole: what history holds below them stays. */
  readonly skippedRepoPrefixes: ReadonlySet<string>
  readonly stats: ReadonlyMap<string, readonly [number, number, number]>
  readonly scannedAt: number
  readonly cache: StatCache | undefined
  readonly racyRead: number
  /** This scan as a clean scan, when it may be recorded (it is only true once nothing is found to commit). */
  readonly clean: CleanScan | null
}

const short = (revision: string) => revision.slice(0, 12)

export class ConfigHistory extends Context.Tag("pi-agent-storage/ConfigHistory")<ConfigHistory, {
  /** The history directory (the repository's work tree; its git dir is `.git` inside). */
  readonly dir: string
  /** The web data root whose extensions' `config/` it versions (TD1), and where that came from. */
  readonly webDataRoot: WebDataRootResolution
  readonly snapshot: (o?: { readonly message?: string | undefined }) => Effect.Effect<SnapshotResult, ConfigHistoryError>
  /** Newest first. */
  readonly log: (o?: { readonly limit?: number | undefined }) => Effect.Effect<ReadonlyArray<LogEntry>, ConfigHistoryError>
  /**
   * Without `to`: against the live files, as the next snapshot would record them (a read: no lock, nothing written
   * in the history; a scratch index under `$TMPDIR`); without `from`: from the newest revision.
   */
  readonly diff: (o?: { readonly from?: string | undefined; readonly to?: string | undefined }) => Effect.Effect<DiffResult, ConfigHistoryError>
  /** Restore a revision's files as a new revision (history is never rewritten). */
  readonly rollback: (revision: string) => Effect.Effect<RollbackResult, ConfigHistoryError>
  /**
   * Apply a config change under the crash sentinel: snapshot if dirty, write the sentinel, run `apply`,
   * snapshot, remove the sentinel. If `apply` fails, the tracked files go back to the last good revision and
   * its error is rethrown. `apply` must not call this history itself (the writer lock is held).
   */
  readonly change: <A, E>(message: string, apply: Effect.Effect<A, E>) => Effect.Effect<A, E | ConfigHistoryError>
  readonly status: () => Effect.Effect<HistoryStatus, ConfigHistoryError>
}>() {
  static readonly make = (options: ConfigHistoryOptions = {}): Effect.Effect<ConfigHistory["Type"], never, FileSystem | Host | AgentDir | ProcessRunner> =>
    make(options)

  static readonly layerWith = (options: ConfigHistoryOptions = {}): Layer.Layer<ConfigHistory, never, FileSystem | Host | AgentDir | ProcessRunner> =>
    Layer.effect(ConfigHistory, make(options))

  // Suspended: `make` is defined below the class, after its static fields run.
  static readonly layer: Layer.Layer<ConfigHistory, never, FileSystem | Host | AgentDir | ProcessRunner> = Layer.effect(ConfigHistory, Effect.suspend(() => make()))
}

/**
 * What every operation of one history shares: its dependencies, its options resolved, and the paths it works in
 * (the history directory, its git dir, the mirror roots).
 */
const historyContext = (options: ConfigHistoryOptions) =>
  Effect.gen(function*() {
    const deps = yield* depsFromContext
    const { fs, host } = deps
    const agent = yield* AgentDir
    const runner = yield* ProcessRunner
    // A snapshot that commits adds a usage record (docs/dashboard.md "Dashboard"); none in the stack: nothing is recorded.
    const usage = yield* UsageRecorder
    const agentDir = agent.path
    const webDataRoot = webDataRootOf(host, options.webDataRoot)
    const webRoot = webDataRoot.path
    const roots: ConfigRoots = { agentDir, webDataRoot: webRoot }
    const denylist = options.denylist ?? DEFAULT_DENYLIST
    const budget = options.configBudgetBytes ?? DEFAULT_CONFIG_BUDGET_BYTES
    const lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS
    const dir = historyDirOf(agent.paths.configBackupsDir)
    const gitDir = NodePath.join(dir, ".git")
    // PATH is the only thing passed on to git, read here at the edge of the program.
    const runGit: Git = makeGit({ runner, gitDir, workTree: dir, pathVar: host.env("PATH") })
    const webRootRecordPath = NodePath.join(gitDir, WEB_ROOT_RECORD)
    const statCachePath = NodePath.join(gitDir, STAT_CACHE)
    const pendingPath = NodePath.join(dir, PENDING_MARKER)
    const attributesPath = NodePath.join(gitDir, "info", "attributes")
    const attributesBytes = new TextEncoder().encode(HISTORY_ATTRIBUTES)
    const excludePath = NodePath.join(gitDir, "info", "exclude")
    const excludeBytes = historyExcludeBytes()
    const lockPath = NodePath.join(dir, HISTORY_LOCK)
    // A live diff's scratch directory (`withScratch`), as every Unix program finds one.
    const tmpFromEnv = host.env("TMPDIR")
    const tmpDir = tmpFromEnv !== undefined && NodePath.isAbsolute(tmpFromEnv) ? tmpFromEnv : "/tmp"
    /** Only a history with the defaults the CLI runs with records a clean scan the CLI may trust. */
    const defaults = options.denylist === undefined && options.configBudgetBytes === undefined
    return {
      defaults,
      deps,
      fs,
      agent,
      usage,
      agentDir,
      webDataRoot,
      webRoot,
      roots,
      webRootRecordPath,
      denylist,
      budget,
      lockWaitMs,
      dir,
      gitDir,
      runGit,
      statCachePath,
      pendingPath,
      attributesPath,
      attributesBytes,
      excludePath,
      excludeBytes,
      lockPath,
      tmpDir
    }
  })

/** What `historyContext` resolves without I/O (`make` must not read: lazyService.ts). */
type HistoryBase = Effect.Effect.Success<ReturnType<typeof historyContext>>

/** A history's context for one operation: the base, and the mirror roots it manages, from the web root record. */
type HistoryContext = HistoryBase & {
  readonly webRootRecord: WebRootRecordRead
  /** Where this web data root's extension config is mirrored (`webMirrorOf`). */
  readonly webMirror: string
  /**
   * Where its files are read and written: the root with a symlink at its own path followed (the data may live on
   * another disk, as the doctor and `status` read it). The root as named stays its identity (record, mirror, sentinel).
   */
  readonly liveWebRoot: string
  /** The root as named, each link on the way, and `liveWebRoot`: what a clean scan watches. */
  readonly webRootHops: ReadonlyArray<string>
  /** The mirror roots this operation manages: the agent's and this web data root's. */
  readonly scopes: ReadonlyArray<string>
  /** The stat cache's scope for this root and its mirror (`statCacheScope`). */
  readonly scopeKey: string
}

/** Read at the start of each operation: which web data root `web/` holds, so this root's mirror. */
const withWebMirror = (base: HistoryBase): Effect.Effect<HistoryContext, ConfigHistoryCorrupt | GitFailed | FileSystemError | InvalidArgument> =>
  Effect.gen(function*() {
    // The history's own directories are never followed through a link nor written under a file.
    for (const dir of [base.dir, base.gitDir]) {
      const own = yield* lstatOption(base, dir)
      if (own !== undefined && own.type !== "Directory") {
        return yield* corrupt(base, `${dir} is ${aFileType(own.type)}, where the config history keeps its repository; move it away by hand (the history is never read or written through it)`)
      }
      if (own === undefined) break
    }
    const webRootRecord = yield* readWebRootRecord(base)
    const webMirror = webMirrorOf(base.webRoot, webRootRecord.root ?? base.webRoot)
    const webRootHops = yield* rootLinkHops(base.fs, base.webRoot)
    const liveWebRoot = webRootHops[webRootHops.length - 1]!
    // A root holding the history where it walks (`<root>/<extId>/config/…`) would mirror the history into itself,
    // one level deeper each snapshot.
    for (const root of new Set([base.webRoot, liveWebRoot])) {
      if ((isWithin(base.dir, root) && NodePath.relative(root, base.dir).split(NodePath.sep)[1] === "config") || isWithin(root, base.dir)) {
        return yield* Effect.fail(new InvalidArgument({
          field: "webDataRoot",
          detail: `the web data root ${root} and the config history (${base.dir}) overlap: its snapshots would copy the history into itself; name the web host's data root (--web-data-root)`
        }))
      }
    }
    return { ...base, webRootRecord, webMirror, liveWebRoot, webRootHops, scopes: [AGENT_MIRROR, webMirror], scopeKey: statCacheScope(base.webRoot, webMirror) }
  })

interface Plan {
  readonly live: LiveScan
  readonly writes: ReadonlyArray<LiveFile>
  readonly removals: ReadonlyArray<string>
}

/** Every call of ours: the repository's attributes are ours first, so no driver its config defines is run. */
const git = (ctx: HistoryContext, ...call: Parameters<Git>) => Effect.zipRight(guardAttributes(ctx), ctx.runGit(...call))

const inDir = (ctx: HistoryContext, ...parts: ReadonlyArray<string>) => NodePath.join(ctx.dir, ...parts)

const livePathOf = (ctx: HistoryContext, repoPath: string): string | undefined => {
  const [root, ...rest] = repoPath.split("/")
  if (root === AGENT_MIRROR) return NodePath.join(ctx.agentDir, ...rest)
  if (root === ctx.webMirror) return NodePath.join(ctx.liveWebRoot, ...rest)
  return undefined
}

/** The managed root a repo path's live file sits under (the anchor of the parent-chain check). */
const liveRootOf = (ctx: HistoryContext, repoPath: string): string | undefined =>
  repoPath.startsWith(`${AGENT_MIRROR}/`) ? ctx.agentDir : repoPath.startsWith(`${ctx.webMirror}/`) ? ctx.liveWebRoot : undefined

// ------------------------------------------------------------------------------------------ live files

const lstatOption = (ctx: HistoryBase, path: string) =>
  ctx.fs.lstat(path).pipe(Effect.map((i) => i as typeof i | undefined), Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(undefined)))

const listOption = (ctx: HistoryContext, path: string) =>
  ctx.fs.readDirectory(path).pipe(Effect.catchIf((e) => e.reason === "NotFound" || e.reason === "NotADirectory", () => Effect.succeed([])))

/** `listOption`, with what lstat answers for the directory observed first (its mtime and ctime change with its entries). */
const listObserved = (ctx: HistoryContext, path: string, out: ScanState) =>
  Effect.gen(function*() {
    yield* observe(ctx, path, out)
    return yield* listOption(ctx, path)
  })

/** Record what lstat answers for `path` (absent also when a component on the way is not a directory, as `listOption` reads it). */
const observe = (ctx: HistoryContext, path: string, out: ScanState) =>
  ctx.fs.lstat(path).pipe(
    Effect.map((i) => i as typeof i | undefined),
    Effect.catchIf((e) => e.reason === "NotFound" || e.reason === "NotADirectory", () => Effect.succeed(undefined)),
    Effect.map((info) => void out.observed.push([path, identityOf(info)]))
  )

/** Judge one candidate file and read what history stores for it. */
const candidate = (ctx: HistoryContext, repoPath: string, livePath: string, out: ScanState) =>
  Effect.gen(function*() {
    const display = displayOfRepoPath(repoPath)
    const info = yield* lstatOption(ctx, livePath)
    out.observed.push([livePath, identityOf(info)])
    if (info === undefined) return
    const skip = (tag: ConfigSkipTag, reason: string) => {
      out.skipped.push(configSkip(tag, display, reason))
      out.present.add(repoPath)
    }
    if (info.type === "SymbolicLink") return skip("Symlink", "a symlink (history never follows links)")
    if (info.type !== "File") return skip("NotARegularFile", `${aFileType(info.type)}, not a regular file`)
    // Git would leave it out of its index without a word: it is reported here instead.
    const refused = gitRefusesPath(repoPath)
    if (refused !== null) return skip("UnversionableName", refused)
    if (NEVER_VERSIONED.includes(display)) return skip("Credentials", "credentials: never versioned")
    const pattern = deniedBy(display, ctx.denylist)
    if (pattern !== null) return skip("Denylisted", `denylisted (${pattern}): never committed`)
    const red = configEntryViolation({ name: NodePath.basename(livePath), type: "File", size: info.size }, ctx.budget)
    if (red !== null) return skip("RedLine", `config red line (${red.rule}): ${red.detail}`)
    const stat = [info.size, info.mtimeMs, info.ino] as const
    out.stats.set(repoPath, stat)
    const cached = out.cache?.entries[repoPath]
    if (cached !== undefined && cached[0] === stat[0] && cached[1] === stat[1] && cached[2] === stat[2] && stat[1] < out.cache!.recordedAt - RACY_MARGIN_MS) {
      out.files.push({ repoPath, display, livePath, stored: undefined })
      return
    }
    if (cached !== undefined) out.racyRead++
    const bytes = yield* ctx.fs.readFile(livePath, { maxBytes: ctx.budget })
    const content = historyContent(NodePath.basename(livePath), bytes)
    if (content._tag === "Skip") return skip("Unredactable", content.reason)
    out.files.push({ repoPath, display, livePath, stored: content.bytes })
  })

/**
 * Entries of a listing whose name cannot be read back: decoded lossily (no entry answers to it), or the same
 * name twice. Each is reported (never silently left out); the rest are the entries to look at.
 */
const readableEntries = (ctx: HistoryContext, here: string, entries: ReadonlyArray<DirEntry>, displayOf: (e: DirEntry) => string, out: ScanState) =>
  Effect.gen(function*() {
    const kept: Array<DirEntry> = []
    const seen = new Set<string>()
    for (const entry of entries) {
      // A name decoded lossily: its lstat may answer for another entry, so such a scan is never recorded.
      if (entry.name.includes(REPLACEMENT_CHARACTER)) out.observed.push([NodePath.join(here, entry.name), undefined])
      if (entry.name.includes(REPLACEMENT_CHARACTER) && (seen.has(entry.name) || (yield* lstatOption(ctx, NodePath.join(here, entry.name))) === undefined)) {
        out.skipped.push(configSkip("UnversionableName", displayOf(entry), "its name is not valid UTF-8 and could not be read back as it is"))
        continue
      }
      seen.add(entry.name)
      kept.push(entry)
    }
    return kept
  })

const TIER_WORK_FILE_WHY = "the tier's own file (its settings lock, or the temp of a write a crash cut short), not config"

/**
 * An extension's config tier, mirrored under `repoPrefix` (`web/<extId>/config`, `agent/config/extensions/<ns>`):
 * files, with environments left out, and a web-host extension's old-host state fallback (`config/state`).
 */

const walkConfig = (
  ctx: HistoryContext,
  repoPrefix: ReadonlyArray<string>,
  configDir: string,
  rel: ReadonlyArray<string>,
  depth: number,
  out: ScanState,
  oldHostState: boolean
): Effect.Effect<void, FileSystemError> =>
  Effect.gen(function*() {
    const here = NodePath.join(configDir, ...rel)
    const repoPathOf = (name: string) => [...repoPrefix, ...rel, name].join("/")
    const entries = yield* readableEntries(ctx, here, yield* listObserved(ctx, here, out), (e) => displayOfRepoPath(repoPathOf(e.name)) + (e.type === "Directory" ? "/" : ""), out)
    for (const entry of entries) {
      const relPath = [...rel, entry.name]
      const repoPath = repoPathOf(entry.name)
      const display = displayOfRepoPath(repoPath)
      if (entry.type === "Directory") {
        const refused = gitRefusesPath(repoPath)
        if (refused !== null) {
          out.skipped.push(configSkip("UnversionableName", `${display}/`, refused))
          continue
        }
        const livePath = NodePath.join(here, entry.name)
        if (oldHostState && depth === 1 && livePath === resolveStateDir({ configDir })) {
          out.skipped.push(configSkip("OldStateTier", `${display}/`, "the state tier of an old host (config/state), not config"))
          continue
        }
        const red = configEntryViolation({ name: entry.name, type: "Directory" }, ctx.budget)
        if (red !== null) {
          out.skipped.push(configSkip("RedLine", `${display}/`, `config red line (${red.rule}): ${red.detail}`))
          continue
        }
        if (depth >= MAX_CONFIG_DEPTH) {
          out.skipped.push(configSkip("TooDeep", `${display}/`, `deeper than ${MAX_CONFIG_DEPTH} levels`))
          continue
        }
        yield* walkConfig(ctx, repoPrefix, configDir, relPath, depth + 1, out, oldHostState)
        continue
      }
      // The settings lock and a torn write's temp are the tier's machinery, not config (isTierWorkFile): said,
      // and not kept in the mirror either (an older build's copy of one is recorded as gone).
      if (isTierWorkFile(entry.name)) {
        out.skipped.push(configSkip("TierWorkFile", display, TIER_WORK_FILE_WHY))
        continue
      }
      yield* candidate(ctx, repoPath, NodePath.join(here, entry.name), out)
    }
  })

const scanLive = (ctx: HistoryContext, cache: StatCache | undefined): Effect.Effect<LiveScan, FileSystemError> => Effect.gen(function*() {
  const scannedAt = yield* Clock.currentTimeMillis
  const out: ScanState = { files: [], skipped: [], present: new Set(), presentUnder: new Set(), cache, stats: new Map(), racyRead: 0, observed: [] }
  /**
   * An extension's (or its config tier's) directory that is a symlink: history never follows links, so it is
   * said (`Symlink`, never left out without a word) and what history holds of it stays as it was, never recorded
   * as deleted while the files are there behind the link.
   */
  const linkedDirectory = (repoPrefix: string) => {
    out.skipped.push(configSkip("Symlink", `${displayOfRepoPath(repoPrefix)}/`, "a symlink (history never follows links): its config is not versioned"))
    out.presentUnder.add(repoPrefix)
  }
  // The web data root as named, each link on the way (one re-pointed changes it) and the directory it leads to.
  for (const root of new Set([ctx.agentDir, ...ctx.webRootHops])) yield* observe(ctx, root, out)
  for (const name of AGENT_CONFIG_FILES) yield* candidate(ctx, `${AGENT_MIRROR}/${name}`, NodePath.join(ctx.agentDir, name), out)
  const overlays = ctx.agent.paths.directoryProfilesDir
  const overlayRepoPath = (id: string) => [AGENT_MIRROR, ...DIRECTORY_PROFILES_DIR, id, DIRECTORY_PROFILE_SETTINGS].join("/")
  const profiles = (yield* listObserved(ctx, overlays, out)).filter((e) => e.type === "Directory")
  for (const entry of yield* readableEntries(ctx, overlays, profiles, (e) => displayOfRepoPath(overlayRepoPath(e.name)), out)) {
    const repoPath = overlayRepoPath(entry.name)
    yield* candidate(ctx, repoPath, ctx.agent.paths.directoryProfileSettings(entry.name), out)
  }
  // Agent extensions' config tiers (`config/extensions/<ns>/`, docs/tiers.md "Extension storage (agent side)").
  const agentExtensions = NodePath.dirname(ctx.agent.paths.extensionConfigDir("x"))
  for (const ext of yield* listObserved(ctx, agentExtensions, out)) {
    if (decodeSegment("namespace", ext.name)._tag === "Left") continue
    const configDir = ctx.agent.paths.extensionConfigDir(ext.name)
    const repoPrefix = [AGENT_MIRROR, ...NodePath.relative(ctx.agentDir, configDir).split(NodePath.sep)]
    if (ext.type === "SymbolicLink") linkedDirectory(repoPrefix.join("/"))
    if (ext.type !== "Directory") continue
    yield* walkConfig(ctx, repoPrefix, configDir, [], 1, out, false)
  }
  // Web-host extensions' config tiers (`data/<extId>/config/`).
  for (const ext of yield* listObserved(ctx, ctx.liveWebRoot, out)) {
    const entry = classifyWebDataEntry(ext.name, ext.type)
    // Named by the config tier behind the link (`bm/config/`): the extension's own name alone (`config/` for an
    // extension called config) would read as an agent path, and cover it.
    if (entry._tag === "LinkedExtension") linkedDirectory([ctx.webMirror, ext.name, "config"].join("/"))
    if (entry._tag !== "Extension") continue
    const { configDir } = tierPaths(ctx.liveWebRoot, ext.name)
    const info = yield* lstatOption(ctx, configDir)
    out.observed.push([configDir, identityOf(info)])
    if (info?.type === "SymbolicLink") linkedDirectory([ctx.webMirror, ext.name, "config"].join("/"))
    if (info?.type !== "Directory") continue
    yield* walkConfig(ctx, [ctx.webMirror, ext.name, "config"], configDir, [], 1, out, true)
  }
  const observed = out.observed
  const clean = recordableScan(observed, scannedAt)
    ? { defaults: ctx.defaults, agentDir: ctx.agentDir, webRoot: ctx.webRoot, observed, skipped: out.skipped }
    : null
  return { files: out.files, skipped: out.skipped, skippedRepoPaths: out.present, skippedRepoPrefixes: out.presentUnder, stats: out.stats, scannedAt, cache, racyRead: out.racyRead, clean }
})

// ------------------------------------------------------------------------------------------ the mirror

/** Every file of the mirror under the managed roots, as repo paths. */
const mirrorFiles = (ctx: HistoryContext): Effect.Effect<ReadonlyArray<string>, FileSystemError> =>
  Effect.gen(function*() {
    const found: Array<string> = []
    const walk = (rel: ReadonlyArray<string>): Effect.Effect<void, FileSystemError> =>
      Effect.gen(function*() {
        for (const entry of yield* listOption(ctx, inDir(ctx, ...rel))) {
          const next = [...rel, entry.name]
          if (entry.type === "Directory") yield* walk(next)
          else found.push(next.join("/"))
        }
      })
    for (const scope of ctx.scopes) yield* walk([scope])
    return found
  })

/** A mirrored copy's bytes; `undefined` when missing or too large to be a current copy (then it is rewritten). */
const readMirror = (ctx: HistoryContext, repoPath: string) =>
  ctx.fs.readFile(inDir(ctx, ...repoPath.split("/")), { maxBytes: MIRROR_READ_MAX }).pipe(
    Effect.map((b) => b as Uint8Array | undefined),
    // A directory there is a live directory turned into a file since: the copy is rewritten.
    Effect.catchIf((e) => e.reason === "NotFound" || e.reason === "NotADirectory" || e.reason === "IsADirectory" || e.reason === "TooLarge", () =>
      Effect.succeed(undefined))
  )

/** What the mirror needs to equal the live files (read-only). */
const plan = (ctx: HistoryContext): Effect.Effect<Plan, FileSystemError> =>
  Effect.gen(function*() {
    const cache = yield* readStatCache(ctx)
    const live = yield* scanLive(ctx, cache)
    const writes: Array<LiveFile> = []
    for (const file of live.files) {
      if (file.stored === undefined) continue
      const mirrored = yield* readMirror(ctx, file.repoPath)
      if (mirrored === undefined || !sameBytes(mirrored, file.stored)) writes.push(file)
    }
    const tracked = new Set(live.files.map((f) => f.repoPath))
    const mirror = cache !== undefined ? cache.mirror : yield* mirrorFiles(ctx)
    const under = [...live.skippedRepoPrefixes].map((prefix) => `${prefix}/`)
    const removals = mirror.filter((p) => !tracked.has(p) && !live.skippedRepoPaths.has(p) && !under.some((prefix) => p.startsWith(prefix)))
    return { live, writes, removals }
  })

/** HEAD read from the ref files (no git process); `undefined` when it cannot be read (then the stat cache is not trusted). */
const headFromRefs = (ctx: HistoryBase): Effect.Effect<string | null | undefined> =>
  Effect.suspend(() => headRef(ctx)).pipe(Effect.orElseSucceed(() => undefined))

/** The stat cache, only when it describes the current HEAD, this scope and no interrupted staging. */
const readStatCache = (ctx: HistoryContext): Effect.Effect<StatCache | undefined> =>
  Effect.gen(function*() {
    // Read-only speed-up: no readable cache means every file is read; a pending marker we cannot see counts as present.
    const bytes = yield* ctx.fs.readFile(ctx.statCachePath, { maxBytes: STAT_CACHE_MAX }).pipe(Effect.option)
    if (bytes._tag === "None") return undefined
    const decoded = decodeJsonBytes(StatCache, bytes.value)
    if (!decoded.ok) {
      // Garbage, truncated or another program's: no cache (every file is read), said once; the next snapshot replaces it.
      yield* warn({ _tag: "ConfigStatCacheIgnored", path: ctx.statCachePath, message: `config history: ignoring an unreadable stat cache (${decoded.why}); every file is read` })
      return undefined
    }
    if (!statCacheFits(decoded.value, ctx.scopeKey)) return undefined
    if ((yield* exists(ctx, ctx.pendingPath).pipe(Effect.orElseSucceed(() => true)))) return undefined
    return decoded.value.head === (yield* headFromRefs(ctx)) ? decoded.value : undefined
  })

/**
 * Record the stat cache for `head` (the mirror then equals the live files as scanned); `clean`: nothing was
 * found to commit, so the scan is recorded as a clean scan too (when it may be).
 */
const writeStatCache = (ctx: HistoryContext, live: LiveScan, headRevision: string | null, clean = false) =>
  Effect.gen(function*() {
    if (headRevision === null) return
    const entries: Record<string, readonly [number, number, number]> = {}
    for (const f of live.files) {
      const stat = live.stats.get(f.repoPath)
      if (stat !== undefined) entries[f.repoPath] = stat
    }
    const mirror = yield* mirrorFiles(ctx)
    const cache = { version: 1, head: headRevision, scope: ctx.scopeKey, recordedAt: live.scannedAt, entries, mirror, rule: REDACTION_RULE, clean: clean ? live.clean : null }
    yield* ctx.fs.writeFileAtomic(ctx.statCachePath, encodeJsonBytes(cache), { sync: false })
  }).pipe(
    // Only a speed-up: a cache that cannot be written means the next snapshot reads the files.
    Effect.catchAll((e) =>
      warn({ _tag: "ConfigStatCacheNotWritten", reason: e.message, message: `could not write the config history's stat cache: ${e.message}` })
    )
  )

const exists = (ctx: HistoryBase, path: string) => Effect.map(lstatOption(ctx, path), (i) => i !== undefined)

// ------------------------------------------------------------------------------------------ git

const repoExists = (ctx: HistoryBase) =>
  exists(ctx, NodePath.join(ctx.gitDir, "HEAD"))

const corrupt = (ctx: HistoryBase, detail: string, cause?: FileSystemError | GitFailed) =>
  Effect.fail(new ConfigHistoryCorrupt(cause === undefined ? { path: ctx.gitDir, detail } : { path: ctx.gitDir, detail, cause }))

/**
 * Git's exit 128 on a read of revisions already resolved (an object missing, a tree that cannot be read): the
 * repository is damaged, `ConfigHistoryCorrupt` naming `what` was being read.
 */
const damagedOn128 = (ctx: HistoryBase, what: string) => <A, E, R>(self: Effect.Effect<A, E | GitFailed, R>): Effect.Effect<A, E | GitFailed | ConfigHistoryCorrupt, R> =>
  Effect.catchIf(self, (e): e is GitFailed => e instanceof GitFailed && e.exitCode === 128, (e) => corrupt(ctx, `${what} cannot be read: ${e.message}`, e))

/** A parsed answer of git, or the repository is damaged (`what` says which answer). */
const parsed = <A>(ctx: HistoryBase, what: string, p: Parsed<A>): Effect.Effect<A, ConfigHistoryCorrupt> => p.ok ? Effect.succeed(p.value) : corrupt(ctx, `${what}: ${p.why}`)

/**
 * Before every git call on an existing repository: its `info/attributes` is ours, byte for byte, so no
 * attribute can pick a filter or diff driver the repository's config defines (docs/config-history.md "Config history").
 */
const guardAttributes = (ctx: HistoryContext) =>
  Effect.gen(function*() {
    const current = yield* ctx.fs.readFile(ctx.attributesPath, { maxBytes: 4096 }).pipe(Effect.option)
    if (current._tag === "Some" && sameBytes(current.value, ctx.attributesBytes)) return
    if (!(yield* exists(ctx, ctx.gitDir))) return
    const info = NodePath.dirname(ctx.attributesPath)
    const infoType = (yield* lstatOption(ctx, info))?.type
    if (infoType !== "Directory") {
      if (infoType !== undefined) yield* ctx.fs.removeFile(info)
      yield* ctx.fs.makeDirectory(info, { mode: 0o700 })
    }
    const there = yield* lstatOption(ctx, ctx.attributesPath)
    if (there !== undefined) {
      yield* warn({
        _tag: "ConfigGitAttributesReset",
        path: ctx.attributesPath,
        message: `config history: ${ctx.attributesPath} held other attributes (a filter or diff driver could run); it is reset`
      })
      if (there.type === "Directory") yield* ctx.fs.removeTree(ctx.attributesPath, MIRROR_TREE_BUDGET)
    }
    yield* ctx.fs.writeFileAtomic(ctx.attributesPath, ctx.attributesBytes, { sync: false })
  })

const ensureRepo = (ctx: HistoryContext) =>
  Effect.gen(function*() {
    if (!(yield* repoExists(ctx))) yield* git(ctx, ["init", "-q"])
    // (Also makes `.git/info` again when it is gone.)
    yield* guardAttributes(ctx)
    // Our own files in the work tree are never content, even for a person running `git status` or `git add -A`
    // there; an exclusion written by an older build (which missed the lock's reclaim lock) is brought up to date.
    const current = yield* ctx.fs.readFile(ctx.excludePath, { maxBytes: 4096 }).pipe(Effect.option)
    if (current._tag === "None" || !sameBytes(current.value, ctx.excludeBytes)) yield* ctx.fs.writeFileAtomic(ctx.excludePath, ctx.excludeBytes)
    if (!ctx.webRootRecord.recorded) {
      // The first root that exists takes `web/`; until then the record says "none yet", so no later operation
      // asks git whether a revision touched `web/` (a history of an agent with no web host, every snapshot).
      if ((yield* lstatOption(ctx, ctx.liveWebRoot)) !== undefined) yield* recordWebRoot(ctx, ctx.webRootRecord.root ?? ctx.webRoot)
      else if (ctx.webRootRecord.none !== true) yield* recordWebRoot(ctx, null)
    }
  })

/**
 * A web data root that is not there (unmounted, renamed, a typo) while the history holds config files of it:
 * a snapshot would record every one of them as deleted and a rollback would write into nothing. Refused,
 * naming the root and how many files the history keeps of it.
 */
const requireWebRoot = (ctx: HistoryContext, current: string | null, wanted: Iterable<string> = []) =>
  Effect.gen(function*() {
    if ((yield* lstatOption(ctx, ctx.liveWebRoot)) !== undefined) return
    // A rollback's target may keep files of the root the head no longer does: writing them needs the root too.
    let kept = [...wanted].filter((path) => path.startsWith(`${ctx.webMirror}/`)).length
    if (current !== null) {
      const tracked = yield* git(ctx, ["ls-tree", "-r", "--name-only", "-z", current, "--", ctx.webMirror], { read: true }).pipe(damagedOn128(ctx, `revision ${short(current)}`))
      kept = Math.max(kept, (yield* nulPaths(ctx, "ls-tree", tracked.stdout)).length)
    }
    if (kept === 0) return
    return yield* Effect.fail(new InvalidArgument({
      field: "webDataRoot",
      detail: `the web data root ${ctx.webRoot} does not exist, and the history keeps ${countOf(kept, "config file")} of it: ` +
        `a snapshot would record ${kept === 1 ? "it" : "them"} as deleted, a rollback could not write ${kept === 1 ? "it" : "them"}. Mount or restore it, or name the root it lives at (--web-data-root); nothing was changed`
    }))
  })

interface WebRootRecordRead {
  /** The web data root `web/` holds; `undefined` before any revision touched `web/` (this root takes it). */
  readonly root: string | undefined
  /** False until a root is in the record: the next write under the lock records it (`recordWebRoot`). */
  readonly recorded: boolean
  /** The record says no root yet (`"webRoot":null`), so no revision touched `web/` (checked when it was written). */
  readonly none?: true
}

/** The fix every "which root" refusal names: the record written by hand, naming the root `web/` came from. */

/**
 * The history's `WEB_ROOT_RECORD`, read back as hostile input (`webRootRecordOf`). This build records it before
 * the first revision that touches `web/`, so a history without one is new (no revision touched `web/`: this
 * root takes it) or was made before the record, or lost it: then nobody can say whose files `web/` holds in
 * which revision, and every operation is refused before it reads or writes under the wrong mirror, as it is
 * for a record that does not parse.
 */
const readWebRootRecord = (base: HistoryBase): Effect.Effect<WebRootRecordRead, ConfigHistoryCorrupt | GitFailed | FileSystemError> =>
  Effect.gen(function*() {
    const path = base.webRootRecordPath
    const refused = (detail: string) => new ConfigHistoryCorrupt({ path: base.gitDir, detail: `${detail}; ${writeWebRootRecordFix(path)}` })
    const bytes = yield* Effect.either(base.fs.readFile(path, { maxBytes: WEB_ROOT_RECORD_MAX_BYTES }))
    if (bytes._tag === "Right") {
      const parsed = decodeWebRootRecord(bytes.right)
      if (!parsed.ok) return yield* Effect.fail(refused(`${WEB_ROOT_RECORD} does not say which web data root web/ holds (${parsed.why})`))
      // `null`: no root yet (none that existed had been snapshotted), no revision touched `web/`: checked once.
      return parsed.webRoot === undefined ? { root: undefined, recorded: false, none: true } : { root: parsed.webRoot, recorded: true }
    }
    if (bytes.left.reason !== "NotFound") return yield* Effect.fail(refused(`${WEB_ROOT_RECORD} cannot be read (${bytes.left.message})`))
    // No head (no repository, or no commit yet): nothing was ever mirrored.
    const head = yield* headFromRefs(base)
    if (head === null || head === undefined) return { root: undefined, recorded: false }
    const touched = yield* base.runGit(["rev-list", "-1", head, "--", WEB_MIRROR], { read: true }).pipe(damagedOn128(base, `the revisions of ${short(head)}`))
    if (touched.stdout.length === 0) return { root: undefined, recorded: false }
    return yield* Effect.fail(refused("revisions hold extension config under web/, and the history does not say which web data root it came from"))
  })

/**
 * Under the history's lock, before the first commit of a history without a root in its record: the root `web/`
 * holds is recorded (this snapshot's own when `web/` held nothing), or `null` (no root yet) when this one does
 * not exist. Another process that recorded another root since this one read the record fails this call (busy:
 * run again, and this root gets a mirror of its own).
 */
const recordWebRoot = (ctx: HistoryContext, root: string | null) =>
  Effect.gen(function*() {
    // Read again under the lock: another process may have recorded a root since this one read the record.
    const now = yield* readWebRootRecord(ctx)
    if (now.root !== undefined) {
      if (now.root === root) return
      return yield* Effect.fail(new ConfigHistoryBusy({ holder: `a snapshot that recorded the web data root ${now.root} meanwhile`, waitedMs: 0 }))
    }
    if (root === null && now.none === true) return
    // Published whole (a temp file renamed into place, under the lock every writer of it holds): a reader outside
    // the lock sees the old record or the new one, never half of one.
    const temp = `${ctx.webRootRecordPath}.${yield* nonce}`
    yield* ctx.fs.writeFileExclusive(temp, encodeJsonBytes({ version: 1, webRoot: root }), { sync: true })
    yield* ctx.fs.rename(temp, ctx.webRootRecordPath).pipe(Effect.tapError(() => Effect.ignore(ctx.fs.removeFile(temp))))
  })

/** A ref file git keeps, `undefined` when there is none; anything but a small regular file is damage. */
const readRefFile = (ctx: HistoryBase, path: string, maxBytes: number) =>
  ctx.fs.readFile(path, { maxBytes }).pipe(
    Effect.map((b) => b as Uint8Array | undefined),
    Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(undefined)),
    Effect.catchAll((e) => corrupt(ctx, `${NodePath.relative(ctx.gitDir, path)} cannot be read as a ref: ${e.message}`, e))
  )

/**
 * HEAD from the files git keeps, strictly (no git process): the commit id, `null` before the first commit (a
 * branch no ref file or packed ref names yet) or before the repository exists. HEAD or a ref holding anything
 * else is damage, never "no history".
 */
const headRef = (ctx: HistoryBase): Effect.Effect<string | null, ConfigHistoryCorrupt | FileSystemError> =>
  Effect.gen(function*() {
    if (!(yield* repoExists(ctx))) return null
    const headFile = yield* readRefFile(ctx, NodePath.join(ctx.gitDir, "HEAD"), REF_MAX_BYTES)
    if (headFile === undefined) return null
    const h = yield* parsed(ctx, "HEAD", parseHeadFile(headFile))
    if (h._tag === "Detached") return h.oid
    const loose = yield* readRefFile(ctx, NodePath.join(ctx.gitDir, ...h.ref.split("/")), REF_MAX_BYTES)
    if (loose !== undefined) return yield* parsed(ctx, h.ref, parseLooseRef(loose))
    const packed = yield* readRefFile(ctx, NodePath.join(ctx.gitDir, "packed-refs"), PACKED_REFS_MAX)
    if (packed === undefined) return null
    return (yield* parsed(ctx, "packed-refs", findPackedRef(packed, h.ref))) ?? null
  })

/** `headRef`, with git's word that it names a commit the repository holds. */
const head = (ctx: HistoryContext) =>
  Effect.gen(function*() {
    const oid = yield* headRef(ctx)
    if (oid === null) return null
    const r = yield* git(ctx, ["rev-parse", "-q", "--verify", "--end-of-options", `${oid}^{commit}`], { read: true, okExitCodes: [0, 1, 128] })
    const answer = parseObjectIdLine(r.stdout)
    if (r.exitCode !== 0 || !answer.ok || answer.value !== oid) return yield* corrupt(ctx, `HEAD names ${oid}, which is not a commit the repository holds`)
    return oid
  })

/** Resolve a revision the caller named, or fail `UnknownRevision` (a damaged HEAD first fails as such). */
const resolve = (ctx: HistoryContext, revision: string) =>
  Effect.gen(function*() {
    const bad = revisionViolation(revision)
    if (bad !== null) return yield* Effect.fail(new InvalidArgument({ field: "revision", detail: bad }))
    if (!(yield* repoExists(ctx))) return yield* Effect.fail(new UnknownRevision({ revision }))
    yield* headRef(ctx)
    const r = yield* git(ctx, ["rev-parse", "-q", "--verify", "--end-of-options", `${revision}^{commit}`], { read: true, okExitCodes: [0, 1, 128] })
    if (r.exitCode !== 0) return yield* Effect.fail(new UnknownRevision({ revision }))
    return yield* parsed(ctx, `rev-parse ${revision}`, parseObjectIdLine(r.stdout))
  })

/** Paths git printed NUL-separated (`-z`), decoded losslessly. */
const nulPaths = (ctx: HistoryContext, what: string, stdout: Uint8Array) => parsed(ctx, what, parseNulPaths(stdout, HISTORY_PATHS_MAX))

// ------------------------------------------------------------------------------------------ the lock

/** Git's own lock files: under our lock no git of ours runs, so one left over is a dead git's. */
const clearStaleGitLocks = (ctx: HistoryContext) =>
  Effect.gen(function*() {
    // A commit's own index (`commitOwn`) a dead writer left: under the lock, nobody else is using one.
    for (const entry of yield* listOption(ctx, ctx.gitDir)) {
      if (entry.name.startsWith(COMMIT_INDEX_PREFIX)) yield* ctx.fs.removeFile(NodePath.join(ctx.gitDir, entry.name)).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void))
    }
    for (const rel of ["index.lock", "HEAD.lock", "refs/heads/main.lock"]) {
      const path = NodePath.join(ctx.gitDir, ...rel.split("/"))
      if (yield* exists(ctx, path)) {
        yield* warn({ _tag: "StaleGitLockRemoved", path, message: `config history: removing a stale git lock left by a dead writer: ${path}` })
        yield* ctx.fs.removeFile(path).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void))
      }
    }
  })

const withLock = <A, E>(ctx: HistoryContext, body: Effect.Effect<A, E>): Effect.Effect<A, E | ConfigHistoryBusy | ConfigHistoryCorrupt | FileSystemError> =>
  Effect.gen(function*() {
    yield* ctx.fs.makeDirectory(ctx.dir, { recursive: true, mode: 0o700 })
    // A directory where the change sentinel belongs could never be cleared: refused before anything is written.
    if ((yield* lstatOption(ctx, sentinelPathOf(ctx.dir)))?.type === "Directory") {
      return yield* corrupt(ctx, `${sentinelPathOf(ctx.dir)} is a directory where the change sentinel belongs; move it away by hand (nothing of the library's is in it)`)
    }
    const release = yield* acquireMarkerWaiting(ctx.deps, ctx.lockPath, "config-history", {
      // 5–40 ms between tries (jittered, so racing writers spread out), `lockWaitMs` in all.
      schedule: Schedule.spaced(Duration.millis(20)).pipe(Schedule.jitteredWith({ min: 0.25, max: 2 }), waitingAtMost(ctx.lockWaitMs)),
      busy: (held, waitedMs) => new ConfigHistoryBusy({ holder: held.holder, waitedMs })
    })
    return yield* Effect.ensuring(Effect.zipRight(clearStaleGitLocks(ctx), body), release)
  })

// ------------------------------------------------------------------------------------------ programs

/**
 * Bring the mirror and the index to the live state (pending marker first: the mirror may now differ from
 * HEAD). `none`: nothing to do; `exact`: the writes and removals are exactly the change from HEAD (the mirror
 * equalled HEAD, the invariant while no marker is pending); `recovered`: an interrupted run was pending, so
 * the change must be asked of git.
 */
const stageLocked = (ctx: HistoryContext, p: Plan) =>
  Effect.gen(function*() {
    yield* ensureRepo(ctx)
    const wasPending = yield* exists(ctx, ctx.pendingPath)
    const refused: Array<Skipped> = []
    if (p.writes.length === 0 && p.removals.length === 0 && !wasPending) return { staged: "none" as const, refused }
    if (!wasPending) yield* ctx.fs.writeFileAtomic(ctx.pendingPath, new Uint8Array(0))
    // Removals first: a directory the live tree turned into a file (or the reverse) is emptied before its replacement.
    for (const repoPath of p.removals) {
      const path = inDir(ctx, ...repoPath.split("/"))
      yield* ctx.fs.removeFile(path).pipe(
        Effect.catchIf((e) => e.reason === "NotFound" || e.reason === "NotADirectory", () => Effect.void),
        // A directory where the mirror had the file (made by hand since): the mirror is ours, it goes too.
        Effect.catchIf((e) => e.reason === "IsADirectory", () => Effect.asVoid(ctx.fs.removeTree(path, MIRROR_TREE_BUDGET)))
      )
    }
    for (const file of p.writes) {
      if (file.stored === undefined) continue
      yield* clearMirrorWay(ctx, file.repoPath)
      yield* ctx.fs.writeFileAtomic(inDir(ctx, ...file.repoPath.split("/")), file.stored, { sync: false })
    }
    // Explicit paths only. After an interrupted run the index may lag the mirror anywhere: list it all then.
    const paths = new Set([...p.removals, ...p.writes.map((f) => f.repoPath)])
    if (wasPending) {
      for (const f of p.live.files) paths.add(f.repoPath)
      const indexed = yield* git(ctx, ["ls-files", "-z", "--", ...ctx.scopes], { read: true })
      for (const path of yield* nulPaths(ctx, "ls-files", indexed.stdout)) paths.add(path)
    }
    if (paths.size > 0) {
      // As bytes on stdin, never arguments; --replace: a file where the index had a directory (or the reverse).
      const r = yield* git(ctx, ["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], { stdin: nulPathsInput(paths) })
      // Git answers a name it refuses with a line on stderr and exit 0: each such file is found and reported.
      if (r.stderr.length > 0) refused.push(...yield* refusedByGit(ctx, p.writes))
    }
    return { staged: wasPending ? "recovered" as const : "exact" as const, refused }
  })

/**
 * The written files git left out of its index (a name `gitRefusesPath` did not foresee): reported as skipped,
 * their mirrored copies removed so the next snapshot offers (and reports) them again.
 */
const refusedByGit = (ctx: HistoryContext, writes: ReadonlyArray<LiveFile>) =>
  Effect.gen(function*() {
    const indexed = new Set(yield* nulPaths(ctx, "ls-files", (yield* git(ctx, ["ls-files", "-z", "--", ...ctx.scopes], { read: true })).stdout))
    const refused: Array<Skipped> = []
    for (const file of writes) {
      if (indexed.has(file.repoPath)) continue
      refused.push(configSkip("UnversionableName", file.display, "git refused its name"))
      yield* ctx.fs.removeFile(inDir(ctx, ...file.repoPath.split("/"))).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void))
    }
    return refused
  })

/**
 * The way to a mirrored copy, as the live tree is now: each directory from the scope down a real directory
 * (a file or link the mirror held there is replaced: the live tree turned it into a directory), and a
 * directory at the copy's own path removed (the reverse). Only inside the history's own work tree.
 */
const clearMirrorWay = (ctx: HistoryContext, repoPath: string) =>
  Effect.gen(function*() {
    const parts = repoPath.split("/")
    for (let i = 1; i < parts.length; i++) {
      const d = inDir(ctx, ...parts.slice(0, i))
      const info = yield* lstatOption(ctx, d)
      if (info?.type === "Directory") continue
      if (info !== undefined) yield* ctx.fs.removeFile(d)
      yield* ctx.fs.makeDirectory(d, { mode: 0o700 })
    }
    const target = inDir(ctx, ...parts)
    if ((yield* lstatOption(ctx, target))?.type === "Directory") yield* ctx.fs.removeTree(target, MIRROR_TREE_BUDGET)
  })

const snapshotLocked = (ctx: HistoryContext, message: string) =>
  Effect.gen(function*() {
    const p = yield* plan(ctx)
    // A damaged HEAD (or one naming a commit the repository lacks) is refused before anything is staged.
    const before = yield* head(ctx)
    yield* requireWebRoot(ctx, before)
    const { refused, staged } = yield* stageLocked(ctx, p)
    let revision: string | null = null
    let changedPaths: ReadonlyArray<string> = []
    // What git will commit, asked of git: the mirror is ours, but a person may have edited it or committed by hand.
    // This root's scopes only: another root's staged change (its interrupted snapshot, or an earlier version's
    // interrupted live diff) is its own.
    let othersStaged = false
    if (staged !== "none") {
      const diff = yield* git(ctx, ["diff", "--cached", "--name-only", "--no-renames", ...NO_DIFF_PROGRAMS, "-z", ...(before === null ? [] : [before]), "--"])
      const all = yield* nulPaths(ctx, "diff --cached --name-only", diff.stdout)
      changedPaths = all.filter((path) => ctx.scopes.includes(path.split("/")[0]!))
      othersStaged = changedPaths.length < all.length
    }
    if (changedPaths.length > 0) {
      yield* commitOwn(ctx, message, before, othersStaged)
      revision = yield* headRef(ctx)
    }
    // The pending marker says the mirror may differ from HEAD: it stays while another root's change is staged,
    // or its mirror was written and not yet staged (a crash between the two).
    if (staged !== "none" && !othersStaged && !(staged === "recovered" && (yield* othersMirrorDirty(ctx)))) {
      yield* ctx.fs.removeFile(ctx.pendingPath).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void))
    }
    const changed = changedPaths.map(displayOfRepoPath)
    if (staged !== "none" || p.live.cache === undefined || p.live.racyRead > 0) yield* writeStatCache(ctx, p.live, revision ?? before)
    return { revision, roots: ctx.roots, changed, skipped: [...p.live.skipped, ...refused] } satisfies SnapshotResult
  })

/** A commit's own index in the git dir (`commitOwn`), and its lock. */
const COMMIT_INDEX_PREFIX = "pi-commit-index."

/**
 * The repo paths of the mirror that differ from the head or the index (`git status`: staged, written and not
 * staged, or new), within `scopes` when given: what a snapshot that died half-way left.
 */
const mirrorChanges = (ctx: HistoryContext, scopes?: ReadonlyArray<string>) =>
  Effect.map(
    git(ctx, ["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all", ...(scopes === undefined ? [] : ["--", ...scopes])], { read: true }),
    (r) => nameOfBytes(r.stdout).split("\0").filter((record) => record.length > 3).map((record) => record.slice(3))
  )

/** Whether the history's work tree differs from its index outside this root's scopes. */
const othersMirrorDirty = (ctx: HistoryContext) =>
  Effect.map(mirrorChanges(ctx), (paths) => paths.some((path) => !ctx.scopes.includes(path.split("/")[0]!)))

/**
 * Commit this root's staged change. With nothing else staged (the usual case) that is the index; else a
 * temporary index of `before` with this root's scopes as the index stages them, so another root's staged
 * change (its interrupted snapshot, or an earlier version's interrupted live diff) stays staged for that root,
 * out of this revision.
 */
const commitOwn = (ctx: HistoryContext, message: string, before: string | null, othersStaged: boolean) =>
  Effect.gen(function*() {
    const nowMs = yield* Clock.currentTimeMillis
    const commit = ["commit", "-q", "--no-verify", "--allow-empty-message", "-m", message]
    if (!othersStaged) return yield* git(ctx, commit, { nowMs })
    const indexFile = NodePath.join(ctx.gitDir, `${COMMIT_INDEX_PREFIX}${yield* nonce}`)
    return yield* Effect.ensuring(
      Effect.gen(function*() {
        yield* git(ctx, before === null ? ["read-tree", "--empty"] : ["read-tree", before], { indexFile })
        yield* git(ctx, ["rm", "--cached", "-r", "-q", "--ignore-unmatch", "--", ...ctx.scopes], { indexFile })
        const own = yield* git(ctx, ["ls-files", "-s", "-z", "--", ...ctx.scopes], { read: true })
        if (own.stdout.length > 0) yield* git(ctx, ["update-index", "-z", "--index-info"], { indexFile, stdin: own.stdout })
        return yield* git(ctx, commit, { nowMs, indexFile })
      }),
      ctx.fs.removeFile(indexFile).pipe(
        Effect.catchAll((e) => e.reason === "NotFound" ? Effect.void : Effect.logWarning(`config history: could not remove ${indexFile}: ${e.message}`))
      )
    )
  })

/** The web data root another root's change sentinel names (only its own operations may clear it), else `undefined`. */
const othersSentinel = (ctx: HistoryContext) =>
  Effect.map(readChangeSentinel(ctx.deps, ctx.dir), (state) => {
    const root = state._tag === "Interrupted" ? state.change.webRoot : state._tag === "Running" ? state.sentinel.webRoot : undefined
    return root !== undefined && root !== ctx.webRoot ? { root, message: state._tag === "Interrupted" ? state.change.message : "" } : undefined
  })

/**
 * Remove the change sentinel, unless it names another web data root: that change is its root's to roll back or
 * keep (a sentinel written before it named its root is anybody's).
 */
const clearSentinel = (ctx: HistoryContext) =>
  Effect.flatMap(othersSentinel(ctx), (others) => (others !== undefined ? Effect.void : removeSentinel(ctx)))

/** Remove the change sentinel (a `change()` that proved, under the lock, it is no other root's). */
const removeSentinel = (ctx: HistoryContext) =>
  ctx.fs.removeFile(sentinelPathOf(ctx.dir)).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void))

/**
 * The files of `revision` under the managed roots, with their bytes (one `ls-tree`, one `cat-file --batch`
 * by object id), read whole and checked before anything is written: a revision that cannot be read whole
 * (an object missing, an answer cut short) is `ConfigHistoryCorrupt`.
 */
const revisionFiles = (ctx: HistoryContext, revision: string | null) =>
  Effect.gen(function*() {
    const files = new Map<string, Uint8Array>()
    if (revision === null) return files
    const listing = yield* git(ctx, ["ls-tree", "-r", "-z", "--full-tree", revision, "--", ...ctx.scopes], { read: true }).pipe(
      Effect.catchTag("GitFailed", (e): Effect.Effect<never, GitFailed | ConfigHistoryCorrupt> =>
        e.exitCode === 128 ? corrupt(ctx, `revision ${short(revision)} cannot be listed: ${e.message}`, e) : Effect.fail(e))
    )
    const listed = yield* parsed(ctx, `the files of revision ${short(revision)}`, parseLsTree(listing.stdout, { scopes: ctx.scopes, max: HISTORY_PATHS_MAX }))
    if (listed.length === 0) return files
    const oids = [...new Set(listed.map((f) => f.oid))]
    const out = yield* git(ctx, ["cat-file", "--batch"], { read: true, stdin: objectIdsInput(oids), maxOutputBytes: REVISION_BYTES_MAX })
    const blobs = yield* parsed(ctx, `the contents of revision ${short(revision)}`, parseCatFileBatch(out.stdout, oids, Math.max(ctx.budget, BLOB_MAX)))
    const byId = new Map(oids.map((oid, i) => [oid, blobs[i]!]))
    for (const f of listed) files.set(f.path, byId.get(f.oid)!)
    return files
  })

/**
 * A revision's files a rollback may write: not the tier's machinery an older build recorded (a settings lock
 * written back would stall the next `config.set`), which is named instead.
 */
const writableFiles = (files: ReadonlyMap<string, Uint8Array>) => {
  const wanted = new Map<string, Uint8Array>()
  const workFiles: Array<string> = []
  for (const [path, bytes] of files) {
    if (isTierWorkFile(path.slice(path.lastIndexOf("/") + 1))) workFiles.push(path)
    else wanted.set(path, bytes)
  }
  return { wanted, workFiles }
}

/**
 * Every directory from the file's managed root down to its parent must be a real directory: the reason when
 * an existing one is not (a symlink, a file), `null` when all are (missing ones are fine: created later).
 */
const parentChainViolation = (ctx: HistoryContext, root: string, livePath: string) =>
  Effect.gen(function*() {
    const dirs = dirsBelowRoot(root, livePath)
    if (dirs === undefined) return "not below its managed root"
    for (const d of dirs) {
      const info = yield* lstatOption(ctx, d)
      if (info === undefined) return null
      const bad = chainComponentViolation(info.type)
      if (bad !== null) return `${NodePath.relative(root, d)} is ${bad}`
    }
    return null
  })

/**
 * Create the missing parents one level at a time, each exclusively (never a recursive mkdir, which would go
 * through a link): one that appeared meanwhile must be a real directory. The reason when it is not.
 */
const makeParents = (ctx: HistoryContext, root: string, livePath: string) =>
  Effect.gen(function*() {
    for (const d of dirsBelowRoot(root, livePath) ?? []) {
      let info = yield* lstatOption(ctx, d)
      if (info === undefined) {
        const made = yield* ctx.fs.makeDirectory(d, { mode: 0o700 }).pipe(
          Effect.as(true),
          Effect.catchIf((e) => e.reason === "AlreadyExists", () => Effect.succeed(false))
        )
        if (made) continue
        info = yield* lstatOption(ctx, d)
        if (info === undefined) return `${NodePath.relative(root, d)} vanished while being created`
      }
      const bad = chainComponentViolation(info.type)
      if (bad !== null) return `${NodePath.relative(root, d)} is ${bad}`
    }
    return null
  })

/** Whether `path` holds nothing but directories that hold nothing (read only; links are not directories). */
const onlyEmptyDirectories = (ctx: HistoryContext, path: string, depth: number): Effect.Effect<boolean, FileSystemError> =>
  Effect.gen(function*() {
    if (depth < 0) return false
    for (const entry of yield* ctx.fs.readDirectory(path)) {
      if (entry.type !== "Directory" || !(yield* onlyEmptyDirectories(ctx, NodePath.join(path, entry.name), depth - 1))) return false
    }
    return true
  })

/** Remove a tree of empty directories bottom-up (rmdir: something that appeared meanwhile stops it). */
const removeEmptyDirectories = (ctx: HistoryContext, path: string): Effect.Effect<void, FileSystemError> =>
  Effect.gen(function*() {
    for (const entry of yield* ctx.fs.readDirectory(path)) {
      if (entry.type === "Directory") yield* removeEmptyDirectories(ctx, NodePath.join(path, entry.name))
    }
    yield* ctx.fs.removeDirectory(path)
  })

/**
 * Write a revision's files (`wanted`, read whole before: `revisionFiles`) into place and remove tracked live
 * files it does not have, those first: a file where the revision has a directory (or the reverse) makes way.
 * A path whose way from its managed root holds a symlink or a file, or that is itself not a regular file, is
 * left alone and reported (`skipped` and a `ConfigPathSkipped` warning): nothing is ever written or removed
 * through a link. A directory where the revision has a file goes only when nothing but empty directories is
 * left in it.
 */
const restoreLocked = (ctx: HistoryContext, wanted: ReadonlyMap<string, Uint8Array>) =>
  Effect.gen(function*() {
    const live = yield* scanLive(ctx, undefined)
    const restored: Array<string> = []
    const removed: Array<string> = []
    const unresolvedSecrets: Array<UnresolvedSecret> = []
    const skipped: Array<Skipped> = []
    // `PathBlocked` also covers "not below a managed root", a guard no scanned path reaches.
    const skip = (path: string, reason: string, tag: ConfigSkipTag = "PathBlocked") =>
      Effect.sync(() => skipped.push(configSkip(tag, path, reason))).pipe(
        Effect.zipRight(warn({ _tag: "ConfigPathSkipped", path, reason, message: `config history left ${path} alone: ${reason}` }))
      )
    for (const file of live.files) {
      if (wanted.has(file.repoPath)) continue
      const root = liveRootOf(ctx, file.repoPath)
      const onTheWay = root === undefined ? "not below a managed root" : yield* parentChainViolation(ctx, root, file.livePath)
      if (onTheWay !== null) {
        yield* skip(file.display, onTheWay)
        continue
      }
      // Only the version read just now goes (a person's save since is kept and reported, never deleted).
      const info = yield* lstatOption(ctx, file.livePath)
      if (info !== undefined && info.type !== "File") {
        yield* skip(file.display, `${aFileType(info.type)} at the path now, not a regular file (never removed)`, "NotARegularFile")
        continue
      }
      const current = info === undefined ? undefined : yield* ctx.fs.readFile(file.livePath, { maxBytes: Math.max(ctx.budget, info.size) }).pipe(
        Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(undefined))
      )
      const gone = info === undefined || current === undefined
        ? true
        : yield* ctx.fs.replaceFileIfUnchanged(file.livePath, { dev: info.dev, ino: info.ino, bytes: current }, null).pipe(
          Effect.as(true),
          Effect.catchIf((e) => isChanged(e), (e) =>
            Effect.as(skip(file.display, `it changed while the rollback ran (${e.detail ?? "changed"}); left as it is`, "ChangedMeanwhile"), false))
        )
      if (gone) removed.push(file.display)
    }
    for (const [repoPath, bytes] of wanted) {
      const livePath = livePathOf(ctx, repoPath)
      const root = liveRootOf(ctx, repoPath)
      const display = displayOfRepoPath(repoPath)
      // Never write over something history does not track now (a denylisted name), nor outside the roots managed now.
      if (livePath === undefined || root === undefined || NEVER_VERSIONED.includes(display) || deniedBy(display, ctx.denylist) !== null) continue
      // The way there first: not even the current file is read through a link.
      const onTheWay = yield* parentChainViolation(ctx, root, livePath)
      if (onTheWay !== null) {
        yield* skip(display, onTheWay)
        continue
      }
      let info = yield* lstatOption(ctx, livePath)
      if (info?.type === "Directory" && (yield* onlyEmptyDirectories(ctx, livePath, MAX_CONFIG_DEPTH))) {
        yield* removeEmptyDirectories(ctx, livePath)
        info = undefined
      }
      if (info !== undefined && info.type !== "File") {
        yield* skip(display, `${aFileType(info.type)} at the path, not a regular file (never written over)`, "NotARegularFile")
        continue
      }
      // A live file history could not store (over the budget, unredactable …): writing over it would lose it.
      const notStored = unstoredLiveCover(live.skipped, display)
      if (notStored !== undefined) {
        yield* skip(display, `not in history (${notStored.reason}), so a rollback would lose it`, notStored._tag)
        continue
      }
      const current = info === undefined ? undefined : yield* ctx.fs.readFile(livePath, { maxBytes: Math.max(ctx.budget, info.size) })
      const next = rollbackContent(NodePath.basename(livePath), bytes, current)
      if (next._tag === "KeepLive") {
        yield* skip(display, next.reason, "SecretsNotRestored")
        continue
      }
      for (const at of next.unresolved) unresolvedSecrets.push(unresolvedSecret(display, at))
      if (current !== undefined && sameBytes(current, next.bytes)) continue
      const made = yield* makeParents(ctx, root, livePath)
      if (made !== null) {
        yield* skip(display, made)
        continue
      }
      // Only over the live file as read above: a person's save since then is kept and reported, never overwritten.
      const expected = info === undefined || current === undefined ? null : { dev: info.dev, ino: info.ino, bytes: current }
      const written = yield* ctx.fs.replaceFileIfUnchanged(livePath, expected, next.bytes, { mode: info?.mode ?? 0o600 }).pipe(
        Effect.as(true),
        Effect.catchIf((e) => isChanged(e), (e) =>
          Effect.as(skip(display, `it changed while the rollback ran (${e.detail ?? "changed"}); left as it is`, "ChangedMeanwhile"), false))
      )
      if (written) restored.push(display)
    }
    return { restored, removed, unresolvedSecrets, skipped }
  })

const snapshot = (ctx: HistoryContext, o: { readonly message?: string | undefined } = {}) =>
  Effect.gen(function*() {
    // HEAD before the scan: a cache recorded without one is recorded only when no commit came in between.
    const headBefore = yield* headFromRefs(ctx)
    // Read-only first: nothing changed and nothing pending means no lock, no git, no write.
    const p = yield* plan(ctx)
    if (p.writes.length === 0 && p.removals.length === 0 && !(yield* exists(ctx, ctx.pendingPath)) && (p.live.files.length === 0 || (yield* repoExists(ctx)))) {
      if ((yield* readChangeSentinel(ctx.deps, ctx.dir))._tag !== "Interrupted") {
        // Files read only because they were racy are now proven unchanged: a fresh cache trusts them next time;
        // a cache that was missing, or whose clean scan no longer matches this one, is recorded again.
        const cachedClean = p.live.cache === undefined ? undefined : decodeCleanScan(p.live.cache.clean)
        const stale = p.live.clean !== null && !sameCleanScan(cachedClean, p.live.clean)
        if (p.live.cache !== undefined && (p.live.racyRead > 0 || stale)) yield* writeStatCache(ctx, p.live, p.live.cache.head, true)
        else if (p.live.cache === undefined && p.live.files.length > 0) {
          const current = yield* headFromRefs(ctx)
          if (typeof current === "string" && current === headBefore) yield* writeStatCache(ctx, p.live, current, true)
        }
        return { revision: null, roots: ctx.roots, changed: [], skipped: p.live.skipped }
      }
    }
    return yield* withLock(ctx, Effect.tap(snapshotLocked(ctx, o.message ?? "snapshot"), () => clearSentinel(ctx))).pipe(Effect.tap(() => ctx.usage.record("config-snapshot")))
  })

const log = (ctx: HistoryContext, o: { readonly limit?: number | undefined } = {}) =>
  Effect.gen(function*() {
    const limit = o.limit ?? 20
    if (!Number.isSafeInteger(limit) || limit < 1) return yield* Effect.fail(new InvalidArgument({ field: "limit", detail: `must be a positive integer (got ${limit})` }))
    const current = yield* head(ctx)
    if (current === null) return []
    // This root's revisions (and the agent's): another web data root's are its own log (webMirrorOf).
    const r = yield* git(ctx, ["log", "-z", "--name-only", "--no-renames", ...NO_DIFF_PROGRAMS, `-n${limit}`, LOG_FORMAT, current, "--", ...ctx.scopes], { read: true })
    const records = yield* parsed(ctx, "log", parseLog(r.stdout, { limit, maxPaths: HISTORY_PATHS_MAX }))
    return records.map((e): LogEntry => ({
      revision: e.revision,
      date: new Date(e.seconds * 1000).toISOString(),
      message: e.subject,
      changed: e.paths.map(displayOfRepoPath)
    }))
  })

const diff = (ctx: HistoryContext, o: { readonly from?: string | undefined; readonly to?: string | undefined } = {}) =>
  Effect.gen(function*() {
    // The head, read once: the default `from`, and what a live diff starts from.
    const current = o.from === undefined || o.to === undefined ? yield* head(ctx) : null
    const from = o.from !== undefined ? yield* resolve(ctx, o.from) : current ?? EMPTY_TREE
    const to = o.to !== undefined ? yield* resolve(ctx, o.to) : undefined
    const compare = (range: ReadonlyArray<string>, scratch: ScratchCall = {}) =>
      Effect.gen(function*() {
        const names = yield* git(ctx, ["diff", "--name-only", "--no-renames", ...NO_DIFF_PROGRAMS, "-z", ...range, "--", ...ctx.scopes], { ...scratch, read: true })
          .pipe(damagedOn128(ctx, "the revisions compared"))
        const patch = yield* git(ctx, ["diff", "--no-color", "--no-renames", ...NO_DIFF_PROGRAMS, ...range, "--", ...ctx.scopes], { ...scratch, read: true })
          .pipe(damagedOn128(ctx, "the revisions compared"))
        // The patch is text for a person; a byte that is not UTF-8 is kept (escaped), never replaced.
        return { files: (yield* nulPaths(ctx, "diff --name-only", names.stdout)).map(displayOfRepoPath), patch: displayPatch(nameOfBytes(patch.stdout)) }
      })
    if (to !== undefined) return yield* compare([from, to])
    // Before the first snapshot made the repository, a read does not make it: every file the snapshot would
    // record is new, and the patch is the one git would show (no lock either: nothing in the history is read).
    if (o.from === undefined && !(yield* repoExists(ctx))) {
      const files = (yield* plan(ctx)).live.files
        .flatMap((f) => (f.stored === undefined ? [] : [{ repoPath: f.repoPath, display: displayOfRepoPath(f.repoPath), bytes: f.stored }]))
        .sort((a, b) => byteOrder(a.repoPath, b.repoPath))
      return { files: files.map((f) => f.display), patch: newFilesPatch(files) }
    }
    // Against the live files: what the next snapshot would record, worked out as it does (`stageLocked`), in
    // an index, work tree and object store of its own outside the history (the history's objects as its
    // alternate). The history is only read: no lock, nothing staged or pending, whatever happens to this process.
    yield* requireWebRoot(ctx, current)
    const p = yield* plan(ctx)
    const wasPending = yield* exists(ctx, ctx.pendingPath)
    // Nothing the snapshot would stage: it records nothing, and the live files are the head.
    if (p.writes.length === 0 && p.removals.length === 0 && !wasPending) return yield* compare([from, current ?? EMPTY_TREE])
    return yield* withScratch(ctx, (dir) =>
      Effect.gen(function*() {
        const workTree = NodePath.join(dir, "tree")
        const indexFile = NodePath.join(dir, "index")
        const scratch = { workTree, objectDir: NodePath.join(dir, "objects") }
        const call = { indexFile, scratch }
        yield* ctx.fs.makeDirectory(workTree, { mode: 0o700 })
        yield* ctx.fs.makeDirectory(scratch.objectDir, { mode: 0o700 })
        // The history's index as it is (the head's, unless an interrupted snapshot staged more), as the snapshot starts from.
        // (A link there is read as git reads it, through it; none there is an empty index for git too.)
        const realIndex = NodePath.join(ctx.gitDir, "index")
        const indexType = (yield* lstatOption(ctx, realIndex))?.type
        const indexAt = indexType === "SymbolicLink" ? NodePath.resolve(ctx.gitDir, yield* ctx.fs.readLink(realIndex)) : realIndex
        if (indexType === "File" || indexType === "SymbolicLink") yield* ctx.fs.copyFile(indexAt, indexFile, { sync: false })
        // The paths the snapshot gives `update-index`, each as the mirror would hold it after the snapshot's writes.
        const written = new Map(p.writes.map((f) => [f.repoPath, f.stored!] as const))
        const paths = new Set([...p.removals, ...written.keys()])
        if (wasPending) {
          for (const f of p.live.files) paths.add(f.repoPath)
          const indexed = yield* git(ctx, ["ls-files", "-z", "--", ...ctx.scopes], { ...call, read: true })
          for (const path of yield* nulPaths(ctx, "ls-files", indexed.stdout)) paths.add(path)
        }
        const absent: Array<string> = []
        const present: Array<string> = []
        const removed = new Set(p.removals)
        for (const path of paths) {
          const at = NodePath.join(workTree, ...path.split("/"))
          const bytes = written.get(path)
          const mirrored = bytes !== undefined || removed.has(path) ? undefined : yield* mirrorCopy(ctx, path)
          if (bytes === undefined && mirrored === undefined) {
            absent.push(path)
            continue
          }
          yield* ctx.fs.makeDirectory(NodePath.dirname(at), { recursive: true })
          if (bytes !== undefined) yield* ctx.fs.writeFileExclusive(at, bytes)
          else yield* ctx.fs.copyFile(mirrored!, at, { sync: false })
          present.push(path)
        }
        // Removals before writes: a file turned into a directory (or the reverse) leaves the index before what
        // replaces it goes in. The objects are written to the scratch store alone (`writing`: none of the
        // history's touched, as git would freshen one it finds stored).
        if (paths.size > 0) {
          yield* git(ctx, ["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], {
            indexFile,
            scratch: { ...scratch, writing: true },
            stdin: nulPathsInput([...absent, ...present])
          })
        }
        return yield* compare(["--cached", from], call)
      }))
  })

/**
 * A mirrored copy git would stage (a regular file, with only directories on the way from the history's
 * directory: git never stages through a link), or `undefined`: none, for `update-index` to remove.
 */
const mirrorCopy = (ctx: HistoryContext, repoPath: string) =>
  Effect.gen(function*() {
    const target = inDir(ctx, ...repoPath.split("/"))
    for (const dir of dirsBelowRoot(ctx.dir, target) ?? []) {
      if ((yield* lstatOption(ctx, dir))?.type !== "Directory") return undefined
    }
    return (yield* lstatOption(ctx, target))?.type === "File" ? target : undefined
  })

/** A git call's own index and scratch store (`GitCall`), for a live diff. */
type ScratchCall = Pick<GitCall, "indexFile" | "scratch">

/**
 * A directory of this call's own outside the history, under `$TMPDIR` (else /tmp) by a random name, made 0700
 * (never one that was there already), and removed afterwards however `use` ended; one that cannot be removed
 * is a warning naming it.
 */
const withScratch = <A, E>(ctx: HistoryContext, use: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.flatMap(nonce, (id) => {
      const dir = NodePath.join(ctx.tmpDir, `pi-storage-diff-${id}`)
      return Effect.as(ctx.fs.makeDirectory(dir, { mode: 0o700 }), dir)
    }),
    use,
    (dir) =>
      ctx.fs.removeTree(dir, WHOLE_TREE).pipe(
        Effect.flatMap((r) => r.complete ? Effect.void : Effect.fail(`${r.removedEntries} entries removed, the rest left`)),
        Effect.catchAll((e) => Effect.logWarning(`config history: could not remove the diff's scratch directory ${dir}: ${typeof e === "string" ? e : e.message}`))
      )
  )

/**
 * A web data root with a mirror of its own (`web-<id>`: not the one `web/` holds) was never looked at before
 * its first snapshot that held a file: a rollback of it to an older revision, or of a root with live config
 * and no such snapshot yet, would remove its config files for a time the history knows nothing of. Refused
 * (under the lock, before the rollback's own first snapshot), naming the first revision it may go back to.
 */
const coveredAt = (ctx: HistoryContext, target: string) =>
  Effect.gen(function*() {
    if (ctx.webMirror === WEB_MIRROR) return
    const refuse = (why: string) => Effect.fail(new InvalidArgument({ field: "revision", detail: why }))
    const touched = yield* git(ctx, ["rev-list", "--reverse", "HEAD", "--", ctx.webMirror], { read: true, okExitCodes: [0, 128] })
    const firstLine = touched.exitCode === 0 ? new TextDecoder().decode(touched.stdout).split("\n", 1)[0]! : ""
    if (firstLine === "") {
      const live = (yield* plan(ctx)).live.files.some((f) => f.repoPath.startsWith(`${ctx.webMirror}/`))
      if (!live) return
      return yield* refuse(
        `the web data root ${ctx.webRoot} has no snapshot yet: rolling back to ${short(target)} would remove its config files; ` +
          "snapshot it first (config snapshot), then roll back to that snapshot or a later one"
      )
    }
    // git's answer is read as hostile input: an object id, or the repository is damaged.
    const first = yield* parsed(ctx, `rev-list -- ${ctx.webMirror}`, parseObjectIdLine(new TextEncoder().encode(`${firstLine}\n`)))
    const ancestor = yield* git(ctx, ["merge-base", "--is-ancestor", first, target], { read: true, okExitCodes: [0, 1] })
    if (ancestor.exitCode === 0) return
    return yield* refuse(
      `${short(target)} is older than the first snapshot of the web data root ${ctx.webRoot} (${short(first)}): ` +
        `rolling back to it would remove that root's config files; choose ${short(first)} or a later revision`
    )
  })

const rollback = (ctx: HistoryContext, revision: string) =>
  Effect.gen(function*() {
    const target = yield* resolve(ctx, revision)
    return yield* withLock(ctx, Effect.gen(function*() {
      yield* coveredAt(ctx, target)
      // The revision is read whole first: one that cannot be is refused before anything is written.
      const { wanted, workFiles } = writableFiles(yield* revisionFiles(ctx, target))
      yield* requireWebRoot(ctx, yield* head(ctx), wanted.keys())
      // An unsaved live edit is recorded first, so the rollback itself can be undone.
      yield* snapshotLocked(ctx, `before rollback to ${short(target)}`)
      const done = yield* restoreLocked(ctx, wanted)
      const after = yield* snapshotLocked(ctx, `rollback to ${short(target)}`)
      yield* clearSentinel(ctx)
      const notWritten = workFiles.map((p) => configSkip("TierWorkFile", displayOfRepoPath(p), `${TIER_WORK_FILE_WHY}: in that revision, not written back`))
      return { revision: after.revision ?? (yield* headRef(ctx)), ...done, skipped: [...notWritten, ...done.skipped] } satisfies RollbackResult
    }))
  })

const change = <A, E>(ctx: HistoryContext, message: string, apply: Effect.Effect<A, E>): Effect.Effect<A, E | ConfigHistoryError> =>
  withLock(ctx, Effect.gen(function*() {
    // Another root's interrupted change stands until its root settles it: one sentinel per history.
    const others = yield* othersSentinel(ctx)
    if (others !== undefined) {
      return yield* Effect.fail(new ConfigHistoryBusy({ holder: `the interrupted change ${JSON.stringify(others.message)} of the web data root ${others.root} (roll it back or snapshot it with --web-data-root ${others.root} first)`, waitedMs: 0 }))
    }
    yield* snapshotLocked(ctx, `before: ${message}`)
    yield* removeSentinel(ctx)
    const lastGood = yield* headRef(ctx)
    const startedAt = yield* Clock.currentTimeMillis
    yield* ctx.fs.writeFileAtomic(sentinelPathOf(ctx.dir), encodeJsonBytes({ version: 1, message, startedAt, lastGoodRevision: lastGood, webRoot: ctx.webRoot, ...selfIdentity(ctx.deps) }))
    const exit = yield* Effect.exit(apply)
    if (Exit.isSuccess(exit)) {
      yield* snapshotLocked(ctx, message)
      yield* removeSentinel(ctx)
      return exit.value
    }
    const restored = yield* Effect.either(Effect.flatMap(revisionFiles(ctx, lastGood), (files) => restoreLocked(ctx, writableFiles(files).wanted)))
    if (restored._tag === "Left") {
      // The sentinel stays: status() and the doctor name the revision to roll back to.
      yield* warn({
        _tag: "ConfigChangeNotRestored",
        change: message,
        reason: restored.left.message,
        message: `could not restore the config after the failed change "${message}": ${restored.left.message}`
      })
    } else {
      yield* removeSentinel(ctx)
    }
    return yield* Effect.failCause(exit.cause)
  }))

const status = (ctx: HistoryContext) =>
  Effect.gen(function*() {
    const current = yield* head(ctx)
    const p = yield* plan(ctx)
    let dirty = p.writes.length > 0 || p.removals.length > 0
    // Staged but not committed (an interrupted snapshot): the index against the head, or against
    // nothing before the first commit.
    if (!dirty && (yield* exists(ctx, ctx.pendingPath))) {
      dirty = (yield* git(ctx, ["diff", "--cached", "--quiet", ...NO_DIFF_PROGRAMS, current ?? EMPTY_TREE, "--", ...ctx.scopes], { read: true, okExitCodes: [0, 1] }))
        .exitCode === 1
      // Or its mirror written and not yet staged (a snapshot that died between the two).
      if (!dirty) dirty = (yield* mirrorChanges(ctx, ctx.scopes)).length > 0
    }
    const sentinel = yield* readChangeSentinel(ctx.deps, ctx.dir)
    return { head: current, dirty, interrupted: sentinel._tag === "Interrupted" ? sentinel.change : null } satisfies HistoryStatus
  })

/** `ConfigHistory.make` (module-private: the service's static is the one public name). */
const make = (options: ConfigHistoryOptions = {}): Effect.Effect<ConfigHistory["Type"], never, FileSystem | Host | AgentDir | ProcessRunner> =>
  Effect.gen(function*() {
    const base = yield* historyContext(options)
    const ctx = withWebMirror(base)
    const service: ConfigHistory["Type"] = {
      dir: base.dir,
      webDataRoot: base.webDataRoot,
      snapshot: (o) => Effect.flatMap(ctx, (c) => snapshot(c, o)),
      log: (o) => Effect.flatMap(ctx, (c) => log(c, o)),
      diff: (o) => Effect.flatMap(ctx, (c) => diff(c, o)),
      rollback: (revision) => Effect.flatMap(ctx, (c) => rollback(c, revision)),
      change: (message, apply) => Effect.flatMap(ctx, (c) => change(c, message, apply)),
      status: () => Effect.flatMap(ctx, status)
    }
    return service
  })

