/**
 * Leased work runs (docs/work-runs.md "Work runs"): acquire (scoped), release, the process run, prune, and the child env.
 *
 * Protocol (docs/safety.md "How runs stay safe"): a run appears atomically — it is built in `<tenant>/.staging/` with its manifest
 * and the creator's lease, then renamed into place — so no one ever meets a run without a manifest. An
 * acquirer writes its lease first and checks for a cleanup marker second; a pruner takes the marker first
 * and re-reads the leases second: whichever comes second sees the other.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as RcMap from "effect/RcMap"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleInterval from "effect/ScheduleInterval"
import * as Scope from "effect/Scope"
import { type AgentPaths, EXTENSIONS_WORK_CATEGORY, LEASES_DIR, runLeasePath, runLeasesDir, runManifestPath, TENANT_PRUNE_STAMP, TENANT_STAGING_DIR } from "../domain/AgentPaths.js"
import {
  type FileSystemError,
  type FileSystemErrorReason,
  type InvalidPolicy,
  InvalidSegment,
  ManifestMismatch,
  RunBusy,
  UnownedRun,
  type UnsafeRoot
} from "../domain/Errors.js"
import {
  decodeJsonBytes,
  encodeJsonBytes,
  encodeManifest,
  encodeManifestPadded,
  LEASE_MAX_BYTES,
  LeaseV2,
  type Manifest,
  type ManifestV2,
  type RunKind
} from "../domain/Formats.js"
import { type KeptTag, PROCESS_RUN_KEPT, type PruneReport } from "../domain/PruneReport.js"
import {
  clamp,
  decodeRetentionInput,
  OPPORTUNISTIC_PRUNE_INTERVAL_MS,
  type RetentionInput,
  type RetentionPolicy
} from "../domain/Retention.js"
import { generateRunId } from "../domain/RunId.js"
import { decodeSegment } from "../domain/Segment.js"
import { AgentDir } from "./AgentDir.js"
import { FileSystem, YieldsToEventLoop } from "./FileSystem.js"
import { HeartbeatClock } from "./HeartbeatClock.js"
import { Host } from "./Host.js"
import { StorageConfig } from "./StorageConfig.js"
import { UsageRecorder } from "./UsageHistory.js"
import { type Deps, nonce, safeHostName, selfIdentity } from "./internal/deps.js"
import { makeFsClock } from "./internal/fsClock.js"
import { liveMarkerExists } from "./internal/markers.js"
import { notDeleted, pruneTenant } from "./internal/prune.js"
import { warn } from "./internal/warn.js"
import { cleanupMarkerPath, prepareRemoval, removeOwnedRun } from "./internal/removeRun.js"
import { checkSafeDirectory } from "./internal/rootSafety.js"
import { serialRcMapGet } from "./internal/serialGet.js"
import { type Holder, holderText, isActive, liveHolders, readLeases, readManifest } from "./internal/runFacts.js"
import { type ManifestCheck, recordRunIdentity, type RunIdentity, verifyRunIdentity } from "./internal/runIdentity.js"
import { aFileType } from "../domain/FileTypeWords.js"

export type AcquireError = InvalidSegment | InvalidPolicy | UnownedRun | ManifestMismatch | RunBusy | FileSystemError
export type PruneFailure = InvalidSegment | InvalidPolicy | UnsafeRoot | FileSystemError
/** Every error the WorkRuns service fails with. */
export type WorkRunsError = AcquireError | PruneFailure

/**
 * Which run to hold. `category`, `tenant` and `runId` are segments (docs/work-runs.md "Work runs"); a `Segment` decoded
 * once is taken as it is, never checked by the rule again.
 */
export interface AcquireOptions {
  readonly category: string
  readonly tenant: string
  /** A named run shared by several holders; omit for a fresh generated run. */
  readonly runId?: string | undefined
  /** Retention for the opportunistic background prune of this tenant; `false` disables it. */
  readonly retention?: RetentionInput | false | undefined
  /**
   * When the scope closes, release with `{ delete: true }`: the run is removed at once unless another live
   * lease holds it (then it stays, and the outcome says why). A `release()` called by hand uses its own options.
   */
  readonly deleteOnClose?: boolean | undefined
  /**
   * Receives the outcome of the release that let the lease go, once: the scope's closing, or a `release()`
   * called by hand before it. So a run kept by a `deleteOnClose` (`keptBecause`, `keptTag`) is never lost
   * with the scope. It runs after the release is done; a defect in it is the caller's own and fails the
   * release (or the scope's closing) after the lease is gone.
   */
  readonly onRelease?: ((outcome: ReleaseOutcome) => Effect.Effect<void>) | undefined
}

export interface ReleaseOutcome {
  /**
   * False when this lease had already been released (release is idempotent), or when the run is no longer
   * what was acquired (its directory or `.leases/` swapped, its manifest a link): then nothing was touched.
   */
  readonly released: boolean
  readonly deleted: boolean
  /** Why a `delete: true` release kept the run. */
  readonly keptBecause?: string
  /** The same, as a tag for code (`KeptTag` in domain/PruneReport.ts). */
  readonly keptTag?: KeptTag
  /** Why `released` is false. */
  readonly reason?: string
}

export interface WorkRun {
  readonly path: string
  readonly category: string
  readonly tenant: string
  readonly runId: string
  readonly kind: RunKind
  readonly leasePath: string
  /** Drop this holder's lease; with `delete`, remove the run now unless another live lease holds it. */
  readonly release: (options?: { readonly delete?: boolean }) => Effect.Effect<ReleaseOutcome>
}

/** What names a run: enough for a child process to join it (`workRootEnv`). */
export interface WorkRunAddress {
  readonly path: string
  readonly category: string
  readonly tenant: string
  readonly runId: string
}

export interface PruneOptions {
  readonly category: string
  readonly tenant: string
  readonly policy?: RetentionInput | undefined
  readonly dryRun?: boolean | undefined
  readonly onProgress?: (p: { readonly phase: "scan" | "remove"; readonly done: number; readonly total: number }) => void
}

/** What `removeRuns` did with one chosen run. */
export type RemoveRunOutcome =
  | { readonly runId: string; readonly _tag: "Removed" }
  /** A live lease holds it (or its leases cannot be trusted): left alone. */
  | { readonly runId: string; readonly _tag: "Held"; readonly holders: ReadonlyArray<Holder>; readonly why: string }
  /** No entry of that name (its `lstat` answered `NotFound`). */
  | { readonly runId: string; readonly _tag: "Missing" }
  /**
   * Its `lstat` failed otherwise (`reason`: the `FileSystemError`'s, `PermissionDenied`, `Unknown` for EIO …): it
   * may well be there, so it is left alone and never called missing.
   */
  | { readonly runId: string; readonly _tag: "Unreadable"; readonly reason: FileSystemErrorReason; readonly why: string }
  /** Not the library's (no or a foreign manifest, a symlink …): never deleted. */
  | { readonly runId: string; readonly _tag: "Unowned"; readonly why: string }
  /** Left alone for another reason (a cleanup already running, a rename that failed). */
  | { readonly runId: string; readonly _tag: "Skipped"; readonly why: string }

/**
 * What is WorkRuns' own. The tunables it shares with every other program (`remoteLeaseTtlMs`,
 * `staleUnreadableMs`, `retentionCeiling`, `busyAttempts`, `busyDelayMs`) come from `StorageConfig` only, so
 * the doctor and the inventory judge with the same values (`Storage.layer(world, { config })` or
 * `StorageConfig.layerWith(…)`).
 */
export interface WorkRunsOptions {
  /** Start a background prune of a tenant on acquire (at most once an hour per tenant). Default true. */
  readonly opportunisticRetention?: boolean
}

export class WorkRuns extends Context.Tag("pi-agent-storage/WorkRuns")<WorkRuns, {
  readonly workRoot: string
  /**
   * Scoped: closing the scope (success, failure, interruption) releases the lease, deleting the run with
   * `deleteOnClose`; `onRelease` receives that release's outcome.
   */
  readonly acquire: (options: AcquireOptions) => Effect.Effect<WorkRun, AcquireError, Scope.Scope>
  /** One generated run per (category, tenant) for this runtime, held until the runtime closes. */
  readonly getProcessWorkRun: (options: { readonly category: string; readonly tenant: string }) => Effect.Effect<WorkRun, AcquireError>
  readonly prune: (options: PruneOptions) => Effect.Effect<PruneReport, PruneFailure>
  /**
   * `{ PI_WORK_ROOT }`, and for a run `PI_WORK_RUN_DIR`, `PI_WORK_RUN_ID`, `PI_WORK_CATEGORY`, `PI_WORK_TENANT`,
   * to merge into a child's environment (WR1). A child joins the same run with its own lease by acquiring
   * `{ category, tenant, runId }` from these (generated runs can be joined by id too).
   */
  readonly workRootEnv: (run?: WorkRunAddress) => Record<string, string>
  /** Wait for background prunes started so far. */
  readonly awaitBackground: Effect.Effect<void>
  /**
   * Delete chosen runs of one tenant now, under the cleanup protocol (`pi-storage work rm`): never a run
   * with a live lease, never one the library does not own. Refuses an unsafe root like a prune.
   */
  readonly removeRuns: (options: { readonly category: string; readonly tenant: string; readonly runIds: ReadonlyArray<string> }) =>
    Effect.Effect<ReadonlyArray<RemoveRunOutcome>, PruneFailure>
}>() {
  /** The service, built in the caller's scope (background prunes are interrupted when it closes). */
  static readonly make = (options: WorkRunsOptions = {}) => makeWorkRuns(options)

  static readonly layerWith = (options: WorkRunsOptions = {}): Layer.Layer<WorkRuns, never, FileSystem | Host | AgentDir> =>
    Layer.scoped(WorkRuns, makeWorkRuns(options))

  // Suspended: `makeWorkRuns` is defined below the class, after its static fields run.
  static readonly layer: Layer.Layer<WorkRuns, never, FileSystem | Host | AgentDir> = Layer.scoped(WorkRuns, Effect.suspend(() => makeWorkRuns()))
}


/**
 * A run just acquired, with the manifest it had then (only `releasedAt` ever changes afterwards) and the
 * manifest file's length (stamps are written in place at that length).
 */
type HeldRun = Omit<WorkRun, "release"> & {
  readonly manifest: Manifest
  readonly manifestLength: number
  /** What release verifies before touching anything (docs/safety.md "How runs stay safe": release verifies what it touches). */
  readonly identity: RunIdentity
}

type Attempt =
  | { readonly _tag: "Done"; readonly run: HeldRun }
  | Retry

type AttemptError = FileSystemError | UnownedRun | ManifestMismatch

/** A held lease as the heartbeat sees it: its beat, whether it was released, whether a beat is running. */
interface Beating {
  readonly beat: Effect.Effect<void>
  readonly leasePath: string
  released: boolean
  inFlight: boolean
}

/** A try that must be made again: a live cleanup marker holds the run (`Busy`), or it moved under us (`Again`). */
type Retry = { readonly _tag: "Busy" } | { readonly _tag: "Again" }

/**
 * When an acquire tries again: after the n-th `Busy` it waits `busyDelay × n` (a yield when that is zero),
 * and gives up at the `busyAttempts`-th; an `Again` is tried at once, and the 66th try in all gives up.
 * Output: the tries so far, and the count `RunBusy.attempts` reports if this step gave up.
 */
/** The process run as its callers see it: releasing it is a no-op that says why (it is shared). */
const asProcessRun = (run: WorkRun): WorkRun => ({
  ...run,
  release: () => Effect.succeed({ released: false, deleted: false, keptTag: "ProcessRun", keptBecause: PROCESS_RUN_KEPT })
})

const acquireRetries = (busyAttempts: number, busyDelay: Duration.Duration) =>
  Schedule.makeWithState(
    { busy: 0, tries: 0 },
    (now, retry: Retry, state) => {
      const busy = retry._tag === "Busy" ? state.busy + 1 : state.busy
      const tries = state.tries + 1
      const stop = retry._tag === "Busy" ? busy >= busyAttempts : tries > 65
      const pause = retry._tag === "Busy" ? Duration.toMillis(busyDelay) * busy : 0
      const next = { busy, tries }
      return Effect.succeed([
        next,
        { ...next, stoppedAt: retry._tag === "Busy" ? busy : tries - 1 },
        stop ? ScheduleDecision.done : ScheduleDecision.continueWith(ScheduleInterval.after(now + pause))
      ] as const)
    }
  ).pipe(
    // A zero pause would retry without yielding: let the pruner that holds the marker run.
    Schedule.tapOutput(() => Effect.yieldNow())
  )

/**
 * What every operation of one store shares: its dependencies and policies, the runtime's scope and background
 * prunes, the tenants made and pruned, and the heartbeat's state (`generation` and `beaterRunning` change).
 */
const workRunsContext = (options: WorkRunsOptions) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    const host = yield* Host
    const agentDir = yield* AgentDir
    const paths: AgentPaths = agentDir.paths
    // WR8a: the ceiling is a policy too, checked where the StorageConfig was built (a malformed one is a defect).
    const config = yield* StorageConfig
    const { remoteLeaseTtlMs } = config
    const deps: Deps = { fs, host, remoteLeaseTtlMs, staleUnreadableMs: config.staleUnreadableMs, fsClock: makeFsClock(fs, host) }
    const ceiling = config.retentionCeiling
    const busyAttempts = config.busyAttempts
    const busyDelay = Duration.millis(config.busyDelayMs)
    // What the heartbeat waits on (live by default; unref'd timers in the Promise facade): see HeartbeatClock.
    const heartbeatClock = yield* HeartbeatClock
    // A prune that ran (not a dry run) adds a usage record (docs/dashboard.md "Dashboard"), outside the tenant's turn.
    const usage = yield* UsageRecorder
    // WR4: holders refresh at a third of the remote TTL.
    const heartbeatEvery = Duration.millis(Math.max(1, Math.floor(remoteLeaseTtlMs / 3)))
    const runtimeScope = yield* Effect.scope
    // Closing the runtime interrupts a background prune at its next yield (below), and waits only for its
    // finalizers to drop its markers: the cleanup protocol is crash-safe, and the next prune finishes what it
    // left (docs/work-runs.md "Retention").
    const background = yield* FiberSet.make<void, never>()
    const madeTenants = yield* Ref.make(new Set<string>())
    const lastPruneStart = yield* Ref.make(new Map<string, number>())
    const sequence = yield* Ref.make(0)
    // A store never reports itself busy: its prunes of one tenant (background and explicit) take turns, so an
    // explicit prune waits for the background prune an acquire started, then runs.
    const tenantLocks = new Map<string, Effect.Semaphore>()
    /**
     * WR4: one heartbeat fiber refreshes every lease this service holds. It starts with the first held lease,
     * wakes every `heartbeatEvery`, beats each lease still held, and ends at a wake-up that finds none (so an
     * idle service has no timer, and a `TestClock` adjust does not step through beats). A lease held since any
     * time is beaten at most `heartbeatEvery` later. One fiber instead of one per lease: forking a sleeping
     * fiber at acquire and interrupting it at release cost ~45 µs of an acquire + release pair (BENCHMARKS.md).
     * A release waits for its lease's beat in flight (`beatTurn`), so a beat never rewrites a released lease.
     */
    const beating = new Set<Beating>()
    const beatTurn = Effect.unsafeMakeSemaphore(1)
    return {
      options,
      fs,
      host,
      paths,
      remoteLeaseTtlMs,
      deps,
      ceiling,
      busyAttempts,
      busyDelay,
      heartbeatClock,
      usage,
      heartbeatEvery,
      runtimeScope,
      background,
      madeTenants,
      lastPruneStart,
      sequence,
      tenantLocks,
      beating,
      // The generation of the beater that runs (0: none). Only that beater may say it stopped, so an old one
      // ending after a new one started cannot leave a second beater unaccounted for.
      generation: 0,
      beaterRunning: 0,
      beatTurn
    }
  })

type WorkRunsContext = Effect.Effect.Success<ReturnType<typeof workRunsContext>>

/** The process runs of one store: one per (category, tenant), held until the runtime closes. */
interface ProcessRuns {
  readonly map: RcMap.RcMap<string, WorkRun, AcquireError>
  readonly get: (key: string) => Effect.Effect<WorkRun, AcquireError, Scope.Scope>
}

const ownTurn = (ctx: WorkRunsContext, category: string, tenant: string) => {
  const key = `${category}\u0000${tenant}`
  let lock = ctx.tenantLocks.get(key)
  if (lock === undefined) {
    lock = Effect.unsafeMakeSemaphore(1)
    ctx.tenantLocks.set(key, lock)
  }
  return lock.withPermits(1)
}

/** Tenant (and staging) directories, 0700, made once per runtime. */
const ensureTenant = (ctx: WorkRunsContext, tenantDir: string) =>
  Effect.gen(function*() {
    if ((yield* Ref.get(ctx.madeTenants)).has(tenantDir)) return
    yield* ctx.fs.makeDirectory(NodePath.join(tenantDir, TENANT_STAGING_DIR), { recursive: true, mode: 0o700 })
    yield* Ref.update(ctx.madeTenants, (s) => new Set(s).add(tenantDir))
  })

const leaseBody = (ctx: WorkRunsContext, now: number) => encodeJsonBytes({ version: 2, ...selfIdentity(ctx.deps), acquiredAt: now, heartbeatAt: now })

/** Build a complete run in staging, then rename it into place. `false` when the name was taken meanwhile. */
const createRun = (ctx: WorkRunsContext, tenantDir: string, manifest: ManifestV2, manifestBytes: Uint8Array, leaseName: string) =>
  Effect.gen(function*() {
    const staging = NodePath.join(tenantDir, TENANT_STAGING_DIR, `${manifest.runId}.${yield* nonce}`)
    const runDir = NodePath.join(tenantDir, manifest.runId)
    const madeStaging = yield* ctx.fs.makeDirectory(staging, { mode: 0o700 }).pipe(
      Effect.as(true),
      // The tenant was removed behind our back (rm -rf work/): forget it and make it again.
      Effect.catchIf((e) => e.reason === "NotFound", () => Effect.as(Ref.update(ctx.madeTenants, (m) => { const n = new Set(m); n.delete(tenantDir); return n }), false))
    )
    if (!madeStaging) return false
    const built = yield* Effect.gen(function*() {
      // The staging directory is private until the rename, so an exclusive write is as good as an atomic one.
      // The one fsync of an acquire + release (the lease, the rename and the `releasedAt` stamp need none).
      // It protects against a power cut after the rename reached the journal but before the manifest's
      // bytes reached the disk (ext4 allocates them up to ~30 s later): the run would be in place with an
      // empty manifest, unowned, so never pruned — the run and all its files leaked, reported forever.
      yield* ctx.fs.writeFileExclusive(runManifestPath(staging), manifestBytes, { sync: true })
      yield* ctx.fs.makeDirectory(runLeasesDir(staging), { mode: 0o700 })
      yield* ctx.fs.writeFileExclusive(runLeasePath(staging, leaseName), leaseBody(ctx, manifest.createdAt))
      const taken = yield* ctx.fs.lstat(runDir).pipe(Effect.as(true), Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false)))
      if (taken) return false
      // No directory fsync: after a power cut the run is back in staging, with its holder gone too.
      return yield* ctx.fs.rename(staging, runDir, { sync: false }).pipe(
        Effect.as(true),
        Effect.catchIf((e) => e.reason === "NotEmpty" || e.reason === "AlreadyExists", () => Effect.succeed(false))
      )
    }).pipe(Effect.onExit((exit) => Exit.isSuccess(exit) && exit.value ? Effect.void : removeStaging(ctx, staging)))
    return built
  })

/** A failed create's private staging directory goes; if it cannot, it is abandoned staging a later prune removes. */
const removeStaging = (ctx: WorkRunsContext, staging: string) =>
  ctx.fs.removeTree(staging, { maxEntries: 64, maxDepth: 4 }).pipe(
    Effect.catchAll((e) =>
      warn({ _tag: "StagingNotRemoved", path: staging, reason: e.message, message: `could not remove the staging directory ${staging} of a failed acquire (${e.message}); a later prune removes it` })
    )
  )

/**
 * The acquirer steps back (Busy/Again) and removes the lease it just wrote; if that fails the run counts as
 * held by this process until the lease is judged dead, so say so.
 */
const withdrawLease = (ctx: WorkRunsContext, leasePath: string) =>
  ctx.fs.removeFile(leasePath).pipe(
    Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void),
    Effect.catchAll((e) =>
      warn({
        _tag: "LeaseNotRemoved",
        leasePath,
        message: `could not remove the lease ${leasePath} while stepping back from an acquire (${e.message}); the run counts as held until the lease is judged dead`
      })
    )
  )

/** Join an existing named run with a new lease; `Missing` when there is no run of that name to join. */
const joinRun = (ctx: WorkRunsContext, tenantDir: string, address: { category: string; tenant: string; runId: string }, leaseName: string) =>
  Effect.gen(function*() {
    const runDir = NodePath.join(tenantDir, address.runId)
    const info = yield* ctx.fs.lstat(runDir).pipe(Effect.either)
    if (info._tag === "Left") {
      if (info.left.reason === "NotFound") return { _tag: "Missing" } as const
      return yield* info.left
    }
    if (info.right.type !== "Directory") {
      return yield* new UnownedRun({ path: runDir, why: `it is ${aFileType(info.right.type)}` })
    }
    let manifest = yield* readManifest(ctx.deps, runDir, address)
    if (manifest._tag !== "Owned") {
      // A pruner may have quarantined the run (and someone recreated it) while we read: look again.
      const now = yield* ctx.fs.lstat(runDir).pipe(Effect.option)
      if (now._tag === "None" || now.value.ino !== info.right.ino) return { _tag: "Again" } as const
      // Or we read while another holder stamped it in place (a torn read): read once more.
      manifest = yield* readManifest(ctx.deps, runDir, address)
    }
    if (manifest._tag === "Unowned") return yield* new UnownedRun({ path: runDir, why: manifest.why })
    if (manifest._tag === "Mismatch") {
      return yield* new ManifestMismatch({ path: runDir, expected: `${address.category}/${address.tenant}/${address.runId}`, found: manifest.found })
    }
    const leasesDir = runLeasesDir(runDir)
    const made = yield* ctx.fs.makeDirectory(leasesDir, { mode: 0o700 }).pipe(
      Effect.as(true),
      Effect.catchIf((e) => e.reason === "AlreadyExists", () => Effect.succeed(true)),
      // Quarantined meanwhile: start over.
      Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false))
    )
    const leasesInfo = made ? yield* ctx.fs.lstat(leasesDir).pipe(Effect.option) : Option.none()
    if (Option.isNone(leasesInfo)) return { _tag: "Again" } as const
    if (leasesInfo.value.type !== "Directory") return yield* new UnownedRun({ path: runDir, why: `${LEASES_DIR} is not a directory` })
    const now = yield* Clock.currentTimeMillis
    const written = yield* ctx.fs.writeFileExclusive(NodePath.join(leasesDir, leaseName), leaseBody(ctx, now)).pipe(
      Effect.as(true),
      // The run was quarantined between our checks: start over (a fresh run of that name).
      Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false))
    )
    if (!written) return { _tag: "Again" } as const
    return { _tag: "Joined", manifest: manifest.manifest, length: manifest.length, dir: info.right, leases: leasesInfo.value } as const
  })

const attempt = (ctx: WorkRunsContext, address: { category: string; tenant: string; runId: string | undefined }) =>
  Effect.gen(function*() {
    const tenantDir = ctx.paths.workTenantDir(address.category, address.tenant)
    yield* ensureTenant(ctx, tenantDir)
    const leaseName = `${safeHostName(ctx.host.hostname)}-${ctx.host.pid}-${yield* nonce}.json`
    const now = yield* Clock.currentTimeMillis
    const kind: RunKind = address.runId === undefined ? "generated" : "named"
    const runId = address.runId ?? generateRunId(now, yield* Random.nextIntBetween(0, 0x7fffffff), yield* Ref.getAndUpdate(ctx.sequence, (n) => n + 1))
    const runDir = NodePath.join(tenantDir, runId)
    // A fresh generated id is free by construction (createRun still checks before placing the run); a
    // named run is joined when it exists.
    const joined = kind === "generated" ? { _tag: "Missing" as const } : yield* joinRun(ctx, tenantDir, { ...address, runId }, leaseName)
    if (joined._tag === "Again") return joined as Attempt
    let manifest: Manifest
    let manifestLength: number
    if (joined._tag === "Joined") {
      manifest = joined.manifest
      manifestLength = joined.length
    } else {
      const fresh: ManifestV2 = {
        version: 2, category: address.category, tenant: address.tenant, runId, kind, createdAt: now,
        createdBy: { host: ctx.host.hostname, pid: ctx.host.pid }
      }
      const bytes = encodeManifest(fresh)
      const created = yield* createRun(ctx, tenantDir, fresh, bytes, leaseName)
      if (!created) return { _tag: "Again" } as Attempt
      manifest = fresh
      manifestLength = bytes.length
    }
    const runKind: RunKind = "kind" in manifest ? manifest.kind : "named"
    const leasePath = runLeasePath(runDir, leaseName)
    // A generated run needs neither check below (two lstats of every acquire, BENCHMARKS.md): its name is new,
    // and it appeared, renamed from staging, with our lease already inside. So a pruner can only name it
    // after our lease landed, reads that lease under its marker and keeps the run (I1), and nobody can
    // have moved it aside before our lease was there. A named run may have been there before our lease.
    if (kind === "named") {
      // Second half of the handshake: a pruner that marked the run first wins; we step back.
      if (yield* liveMarkerExists(ctx.deps, cleanupMarkerPath(tenantDir, runId))) {
        yield* withdrawLease(ctx, leasePath)
        return { _tag: "Busy" } as Attempt
      }
      // No live marker does not prove the run is still in place: a pruner that read the leases before ours
      // landed may have renamed the run into .trash and then released its marker, or died holding it. Our
      // lease is still at its path only if the run is (I1); otherwise start over.
      const inPlace = yield* ctx.fs.lstat(leasePath).pipe(Effect.as(true), Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false)))
      if (!inPlace) return { _tag: "Again" } as Attempt
    }
    const identity = yield* recordRunIdentity(ctx.deps, runDir, joined._tag === "Joined" ? { dir: joined.dir, leases: joined.leases } : {})
    if (identity === undefined) {
      yield* withdrawLease(ctx, leasePath)
      return { _tag: "Again" } as Attempt
    }
    return { _tag: "Done", run: { path: runDir, category: address.category, tenant: address.tenant, runId, kind: runKind, leasePath, manifest, manifestLength, identity } } as Attempt
  })

const acquireLease = (ctx: WorkRunsContext, opts: AcquireOptions) =>
  Effect.gen(function*() {
    const category = yield* decodeSegment("category", opts.category)
    const tenant = yield* decodeSegment("tenant", opts.tenant)
    const runId = opts.runId === undefined ? undefined : yield* decodeSegment("runId", opts.runId)
    const tenantDir = ctx.paths.workTenantDir(category, tenant)
    // Only a `Retry` is retried; a port or ownership error ends the acquire at once.
    const once = attempt(ctx, { category, tenant, runId }).pipe(
      Effect.either,
      Effect.flatMap((r): Effect.Effect<Either.Either<HeldRun, AttemptError>, Retry> =>
        Either.isLeft(r) ? Effect.succeed(Either.left(r.left)) : r.right._tag === "Done" ? Effect.succeed(Either.right(r.right.run)) : Effect.fail(r.right)
      )
    )
    // The schedule is driven only once a try must be made again (most acquires succeed at the first), the
    // first retry replayed into it: the same tries and pauses, without a schedule driver per acquire.
    const outcome = yield* once.pipe(Effect.catchAll((first) => {
      let replay: Retry | undefined = first
      return Effect.suspend(() => {
        if (replay === undefined) return once
        const retry = replay
        replay = undefined
        return Effect.fail(retry)
      }).pipe(
        Effect.retryOrElse(
          acquireRetries(ctx.busyAttempts, ctx.busyDelay),
          (_, tries) => new RunBusy({ path: NodePath.join(tenantDir, runId ?? "(generated)"), attempts: tries.stoppedAt })
        )
      )
    }))
    return yield* outcome
  })

/**
 * Stamp `releasedAt` on the manifest read at acquisition: while we held a lease nobody could replace the
 * run (I1), and other holders only ever change `releasedAt`. v1 manifests are never rewritten.
 */
const stampReleased = (ctx: WorkRunsContext, run: HeldRun, check: ManifestCheck) =>
  Effect.gen(function*() {
    if (run.manifest.version !== 2) return
    let base: Manifest = run.manifest
    let length = run.manifestLength
    if (check === "replaced") {
      // Another holder replaced an older manifest whole: stamp what is there now, if it is still ours.
      const now = yield* readManifest(ctx.deps, run.path, run)
      if (now._tag !== "Owned" || now.manifest.version !== 2) return
      base = now.manifest
      length = now.length
    }
    const stamped: Manifest = { ...base, releasedAt: yield* Clock.currentTimeMillis }
    const path = runManifestPath(run.path)
    // No fsync: a lost stamp only makes age fall back to the heartbeat or createdAt. In place when the
    // manifest has room: one same-length write, so a racing reader sees the old manifest, the new one, or
    // bytes that are not JSON (read as unowned: skipped, or read again by a joiner); re-stamping can at
    // worst show a releasedAt mixing both stamps, never earlier than the old one (test/domain/Formats).
    // A manifest without room (from an older build) is replaced whole, with room from then on.
    const inPlace = encodeManifestPadded(stamped, length)
    const written = inPlace === undefined ? false : yield* ctx.fs.writeFileInPlace(path, inPlace).pipe(Effect.as(true), Effect.orElseSucceed(() => false))
    if (!written) yield* ctx.fs.writeFileAtomic(path, encodeManifest(stamped), { sync: false })
  }).pipe(
    // The run is gone (a pruner or another holder removed it once our lease was): nothing to stamp.
    Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void),
    // Carried on through: a missing stamp only makes age fall back to the heartbeat or createdAt; an in-place
    // write that failed part-way can leave the manifest unreadable (the run is then kept as unowned).
    Effect.catchAll((e) =>
      warn({
        _tag: "ReleaseStampFailed",
        runDir: run.path,
        reason: e.message,
        message: `could not stamp releasedAt on ${runManifestPath(run.path)} (${e.message}); the run's age falls back to its heartbeat or creation time`
      })
    )
  )

/** Release refuses to touch a run that is no longer what was acquired: say so in the log and the outcome. */
const refuse = (ctx: WorkRunsContext, run: HeldRun, reason: string): Effect.Effect<ReleaseOutcome> =>
  warn({
    _tag: "ReleaseRefused",
    runDir: run.path,
    leasePath: run.leasePath,
    reason,
    message: "release touched nothing: the run is not what was acquired"
  }).pipe(Effect.as({ released: false, deleted: false, reason }))

/** The warning of a lease not refreshed: what happened (`lead`), then what it means for other hosts. */
const heartbeatFailed = (ctx: WorkRunsContext, leasePath: string, lead: string) =>
  warn({
    _tag: "HeartbeatFailed",
    leasePath,
    message: `${lead} other hosts judge it stale ${Math.round(ctx.remoteLeaseTtlMs / 60000)} minutes after its last heartbeat`
  })

// One lease's beat failing by a defect (a bug, a port that throws) must not end the loop for every other
// lease this service holds: it is a HeartbeatFailed warning and the others are beaten on.
const beatOne = (ctx: WorkRunsContext, lease: Beating) =>
  ctx.beatTurn.withPermits(1)(Effect.suspend(() => {
    if (lease.released) return Effect.void
    lease.inFlight = true
    return Effect.ensuring(lease.beat, Effect.sync(() => { lease.inFlight = false }))
  })).pipe(Effect.catchAllDefect((defect) =>
    heartbeatFailed(ctx, lease.leasePath, `could not refresh the lease ${lease.leasePath} (${defect instanceof Error ? defect.message : String(defect)});`)
  ))

const beater = (ctx: WorkRunsContext, mine: number): Effect.Effect<void> => ctx.heartbeatClock.sleep(ctx.heartbeatEvery).pipe(
  Effect.zipRight(Effect.suspend(() => {
    if (ctx.beating.size === 0) {
      if (ctx.beaterRunning === mine) ctx.beaterRunning = 0
      return Effect.succeed(false)
    }
    return Effect.as(Effect.forEach([...ctx.beating], (lease) => beatOne(ctx, lease), { discard: true }), true)
  })),
  Effect.flatMap((again) => again ? beater(ctx, mine) : Effect.void)
)

const startBeating = (ctx: WorkRunsContext, lease: Beating) =>
  Effect.suspend(() => {
    ctx.beating.add(lease)
    if (ctx.beaterRunning !== 0) return Effect.void
    const mine = ++ctx.generation
    ctx.beaterRunning = mine
    return beater(ctx, mine).pipe(
      Effect.onExit(() => Effect.sync(() => { if (ctx.beaterRunning === mine) ctx.beaterRunning = 0 })),
      // Forked from acquireRelease's uninterruptible acquire: make the loop itself interruptible.
      Effect.interruptible,
      Effect.forkIn(ctx.runtimeScope),
      Effect.asVoid
    )
  })

const stopBeating = (ctx: WorkRunsContext, lease: Beating) =>
  Effect.suspend(() => {
    lease.released = true
    ctx.beating.delete(lease)
    // A beat of this lease in flight finishes first (it holds the turn); later ones see `released`.
    return lease.inFlight ? ctx.beatTurn.withPermits(1)(Effect.void) : Effect.void
  })

/** Wrap a lease in its release logic and its heartbeat (stopped on release); `onRelease` hears the release that let it go. */
const bindRelease = (ctx: WorkRunsContext, held: HeldRun, onRelease?: (outcome: ReleaseOutcome) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const run: Omit<WorkRun, "release"> = {
      path: held.path, category: held.category, tenant: held.tenant, runId: held.runId, kind: held.kind, leasePath: held.leasePath
    }
    let releasing = false
    const heartbeat = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      // Never refresh through a run directory the tool swapped for a link (the same check as release).
      const verified = yield* Effect.either(verifyRunIdentity(ctx.deps, held.path, held.identity, { manifest: false }))
      if (verified._tag === "Left") {
        return yield* warn({
          _tag: "HeartbeatSkipped",
          runDir: held.path,
          reason: verified.left.message,
          message: "heartbeat skipped: the run is not what was acquired"
        })
      }
      // A lease removed behind our back (a pruner proved us dead) is not recreated; any other read failure
      // is a HeartbeatFailed warning (below), and a lease that no longer decodes is left alone, said too.
      const body = yield* ctx.fs.readFile(run.leasePath, { maxBytes: LEASE_MAX_BYTES }).pipe(
        Effect.map(Option.some),
        Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(Option.none()))
      )
      if (body._tag === "None") return
      const current = decodeJsonBytes(LeaseV2, body.value)
      if (!current.ok) {
        return yield* heartbeatFailed(ctx, run.leasePath, `the lease ${run.leasePath} no longer decodes (${current.why}); it is not refreshed, and`)
      }
      yield* ctx.fs.writeFileAtomic(run.leasePath, encodeJsonBytes({ ...current.value, heartbeatAt: now }), { sync: false })
    }).pipe(Effect.catchAll((e) =>
      heartbeatFailed(ctx, run.leasePath, `could not refresh the lease ${run.leasePath} (${e.message});`)
    ))
    const lease: Beating = { beat: heartbeat, leasePath: run.leasePath, released: false, inFlight: false }
    yield* startBeating(ctx, lease)
    const releaseOnce = (o?: { readonly delete?: boolean }): Effect.Effect<ReleaseOutcome> =>
      Effect.gen(function*() {
        yield* stopBeating(ctx, lease)
        // The run's tool may have swapped the directory for a link or hard-linked the manifest outside:
        // verify before unlinking, reading or writing anything through the run's path (release verifies what it touches).
        const verified = yield* Effect.either(verifyRunIdentity(ctx.deps, held.path, held.identity))
        if (verified._tag === "Left") return yield* refuse(ctx, held, verified.left.message)
        yield* ctx.fs.removeFile(run.leasePath).pipe(
          // Gone already: a pruner proved this holder dead and took it (nothing to warn about).
          Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void),
          Effect.catchAll((e) =>
            warn({
              _tag: "LeaseNotRemoved",
              leasePath: run.leasePath,
              message: `could not remove the lease ${run.leasePath} on release (${e.message}); the run counts as held until the lease is judged dead`
            })
          )
        )
        const others = yield* readLeases(ctx.deps, run.path)
        if (isActive(others)) {
          return o?.delete
            ? { released: true, deleted: false, keptTag: "LeaseHeld" as const, keptBecause: others.problem ?? "another live lease holds it" }
            : { released: true, deleted: false }
        }
        if (o?.delete) {
          const tenantDir = ctx.paths.workTenantDir(run.category, run.tenant)
          const prepared = yield* Effect.either(prepareRemoval(ctx.deps, tenantDir))
          if (prepared._tag === "Left") return { released: true, deleted: false, keptTag: "RemovalUnprepared" as const, keptBecause: prepared.left.message }
          const outcome = yield* removeOwnedRun(ctx.deps, { tenantDir, category: run.category, tenant: run.tenant, runId: run.runId })
          if (outcome._tag === "Skipped") return { released: true, deleted: false, keptTag: outcome.skip, keptBecause: outcome.why }
          // Not wholly deleted (a mount point inside it, say): it stays quarantined and the next prune retries.
          return outcome.complete ? { released: true, deleted: true } : { released: true, deleted: false, keptTag: "RemovalFailed" as const, keptBecause: notDeleted(run.path, outcome).message }
        }
        yield* stampReleased(ctx, held, verified.right)
        return { released: true, deleted: false }
      })
    const release = (o?: { readonly delete?: boolean }): Effect.Effect<ReleaseOutcome> =>
      Effect.suspend(() => {
        if (releasing) return Effect.succeed<ReleaseOutcome>({ released: false, deleted: false, reason: "already released" })
        releasing = true
        const released = releaseOnce(o)
        return onRelease === undefined ? released : Effect.tap(released, onRelease)
      }).pipe(Effect.uninterruptible, Effect.locally(YieldsToEventLoop, false))
    return { ...run, release } satisfies WorkRun
  })

const maybePruneInBackground = (ctx: WorkRunsContext, category: string, tenant: string, retention: RetentionInput | undefined) =>
  Effect.gen(function*() {
    const key = `${category}/${tenant}`
    const now = yield* Clock.currentTimeMillis
    const last = (yield* Ref.get(ctx.lastPruneStart)).get(key)
    if (last !== undefined && now - last < OPPORTUNISTIC_PRUNE_INTERVAL_MS) return
    yield* Ref.update(ctx.lastPruneStart, (m) => new Map(m).set(key, now))
    // A pacing hint only: a stamp that cannot be read means the background prune runs (it has its own checks).
    const stamp = yield* ctx.fs.lstat(NodePath.join(ctx.paths.workTenantDir(category, tenant), TENANT_PRUNE_STAMP)).pipe(Effect.option)
    if (stamp._tag === "Some" && now - stamp.value.mtimeMs < OPPORTUNISTIC_PRUNE_INTERVAL_MS) return
    const policy = clamp(retention ?? {}, ctx.ceiling)
    const backgroundPrune = pruneTenant(ctx.deps, { workRoot: ctx.paths.workRoot, category, tenant, policy, dryRun: false }).pipe(
      Effect.catchAll((e) =>
        warn({
          _tag: "BackgroundPruneFailed",
          category,
          tenant,
          reason: e._tag,
          message: `the background prune of ${category}/${tenant} did not run: ${e.message}`
        })
      ),
      Effect.asVoid
    )
    // Interruptible whatever the acquirer's region (a process run is acquired uninterruptibly), so that
    // closing the runtime stops it.
    // It gives way to the event loop even when forked from an acquire (which does not: YieldsToEventLoop).
    yield* FiberSet.run(
      ctx.background,
      Effect.interruptible(Effect.zipRight(ownTurn(ctx, category, tenant)(backgroundPrune), ctx.usage.record("background-prune"))).pipe(
        Effect.locally(YieldsToEventLoop, true)
      )
    )
  })

const acquire = (ctx: WorkRunsContext, opts: AcquireOptions): Effect.Effect<WorkRun, AcquireError, Scope.Scope> =>
  // WR8a: the retention is decoded before any lease exists, so a bad one leaves nothing behind.
  Effect.flatMap(
    opts.retention === false ? Effect.succeed<RetentionInput | false>(false) : Effect.map(decodeRetentionInput(opts.retention), (r): RetentionInput | false => r),
    (retention) =>
    Effect.acquireRelease(
      Effect.flatMap(acquireLease(ctx, opts), (held) => bindRelease(ctx, held, opts.onRelease)),
      (run) => run.release(opts.deleteOnClose === true ? { delete: true } : undefined)
    ).pipe(
      Effect.tap((run) => retention === false || ctx.options.opportunisticRetention === false
        ? Effect.void
        : maybePruneInBackground(ctx, run.category, run.tenant, retention))
    )).pipe(
      // A few calls the caller waits for: never queued behind a background prune's slices.
      Effect.locally(YieldsToEventLoop, false)
    )

const getProcessWorkRun = (processRuns: ProcessRuns, opts: { readonly category: string; readonly tenant: string }) =>
  Effect.gen(function*() {
    // Decoded before they key the map: a symbol or object must be InvalidSegment, not a TypeError.
    yield* decodeSegment("category", opts.category)
    yield* decodeSegment("tenant", opts.tenant)
    const key = `${opts.category}\u0000${opts.tenant}`
    return yield* Effect.scoped(processRuns.get(key)).pipe(Effect.tapError(() => RcMap.invalidate(processRuns.map, key)))
  }).pipe(Effect.uninterruptible)

const prune = (ctx: WorkRunsContext, opts: PruneOptions): Effect.Effect<PruneReport, PruneFailure> =>
  Effect.gen(function*() {
    const category = yield* decodeSegment("category", opts.category)
    const tenant = yield* decodeSegment("tenant", opts.tenant)
    const asked = yield* decodeRetentionInput(opts.policy)
    const policy = clamp(asked, ctx.ceiling)
    const report = yield* ownTurn(ctx, category, tenant)(pruneTenant(ctx.deps, {
      workRoot: ctx.paths.workRoot, category, tenant, policy, dryRun: opts.dryRun ?? false, asked, ceiling: ctx.ceiling,
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {})
    }))
    if (!report.dryRun && !report.busy) yield* ctx.usage.record("prune")
    return report
  })

const workRootEnv = (ctx: WorkRunsContext, run?: WorkRunAddress): Record<string, string> =>
  run === undefined ? { PI_WORK_ROOT: ctx.paths.workRoot } : {
    PI_WORK_ROOT: ctx.paths.workRoot,
    PI_WORK_RUN_DIR: run.path,
    PI_WORK_RUN_ID: run.runId,
    PI_WORK_CATEGORY: run.category,
    PI_WORK_TENANT: run.tenant
  }

const removeRuns = (ctx: WorkRunsContext, opts: { readonly category: string; readonly tenant: string; readonly runIds: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const category = yield* decodeSegment("category", opts.category)
    const tenant = yield* decodeSegment("tenant", opts.tenant)
    const runIds: Array<string> = []
    for (const id of opts.runIds) runIds.push(yield* decodeSegment("runId", id))
    const tenantDir = ctx.paths.workTenantDir(category, tenant)
    let present = true
    for (const dir of [ctx.paths.workRoot, ctx.paths.workCategoryDir(category), tenantDir]) {
      if (present && Option.isNone(yield* checkSafeDirectory(ctx.deps, dir))) present = false
    }
    const outcomes: Array<RemoveRunOutcome> = []
    let prepared = false
    for (const runId of runIds) {
      const runDir = NodePath.join(tenantDir, runId)
      const info = present ? yield* ctx.fs.lstat(runDir).pipe(Effect.either) : undefined
      if (info === undefined || (info._tag === "Left" && info.left.reason === "NotFound")) {
        outcomes.push({ runId, _tag: "Missing" })
        continue
      }
      if (info._tag === "Left") {
        // It may well be there: left alone and said why, never reported as absent.
        outcomes.push({ runId, _tag: "Unreadable", reason: info.left.reason, why: `it cannot be examined: ${info.left.message}` })
        continue
      }
      if (info.right.type !== "Directory") {
        outcomes.push({ runId, _tag: "Unowned", why: `it is ${aFileType(info.right.type)}` })
        continue
      }
      const manifest = yield* readManifest(ctx.deps, runDir, { category, tenant, runId })
      if (manifest._tag !== "Owned") {
        outcomes.push({ runId, _tag: "Unowned", why: manifest._tag === "Mismatch" ? `its manifest names ${manifest.found}` : manifest.why })
        continue
      }
      const leases = yield* readLeases(ctx.deps, runDir)
      if (isActive(leases)) {
        outcomes.push({ runId, _tag: "Held", holders: liveHolders(leases), why: holderText(leases) })
        continue
      }
      if (!prepared) {
        const ready = yield* Effect.either(prepareRemoval(ctx.deps, tenantDir))
        if (ready._tag === "Left") {
          outcomes.push({ runId, _tag: "Skipped", why: ready.left.message })
          continue
        }
        prepared = true
      }
      // The protocol re-checks under the run's cleanup marker: a lease that appeared meanwhile wins.
      const removed = yield* removeOwnedRun(ctx.deps, { tenantDir, category, tenant, runId })
      if (removed._tag === "Removed" && removed.complete) {
        outcomes.push({ runId, _tag: "Removed" })
      } else if (removed._tag === "Removed") {
        // Quarantined but not deleted (a mount point inside, a walk that failed): say so, never "removed".
        outcomes.push({ runId, _tag: "Skipped", why: notDeleted(runDir, removed).message })
      } else {
        const now = yield* readLeases(ctx.deps, runDir)
        outcomes.push(isActive(now)
          ? { runId, _tag: "Held", holders: liveHolders(now), why: holderText(now) }
          : { runId, _tag: "Skipped", why: removed.why })
      }
    }
    return outcomes
  })

const makeWorkRuns = (options: WorkRunsOptions = {}) =>
  Effect.gen(function*() {
    const ctx = yield* workRunsContext(options)
    // One process run per (category, tenant): acquired once (concurrent callers share the acquisition, however
    // their fibers start: `serialRcMapGet`), held in its entry's scope until the runtime closes (never
    // idle-released); a failed acquisition is not kept.
    const map = yield* RcMap.make({
      lookup: (key: string) => {
        const [category = "", tenant = ""] = key.split("\u0000")
        return Effect.map(acquire(ctx, { category, tenant }), asProcessRun)
      },
      idleTimeToLive: Duration.infinity
    })
    const processRuns: ProcessRuns = { map, get: serialRcMapGet(map) }
    // The first thing closing the runtime does (finalizers run last-added first): stop the background prunes.
    yield* Effect.addFinalizer(() => FiberSet.clear(ctx.background))

    return WorkRuns.of({
      workRoot: ctx.paths.workRoot,
      acquire: (opts) => acquire(ctx, opts),
      getProcessWorkRun: (opts) => getProcessWorkRun(processRuns, opts),
      prune: (opts) => prune(ctx, opts),
      workRootEnv: (run) => workRootEnv(ctx, run),
      awaitBackground: FiberSet.awaitEmpty(ctx.background),
      removeRuns: (opts) => removeRuns(ctx, opts)
    })
  })

export { EXTENSIONS_WORK_CATEGORY, HeartbeatClock }
