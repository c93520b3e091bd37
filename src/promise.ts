/**
 * `pi-agent-storage/promise`: the Promise facade for callers that do not use Effect (docs/work-runs.md "Promise callers").
 * One ManagedRuntime per opened store, built once; rejections are the typed errors (`_tag`), never wrappers.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as RcMap from "effect/RcMap"
import * as Scope from "effect/Scope"
import { resolveAgentDir } from "./domain/AgentPaths.js"
import { StorageClosed } from "./domain/Errors.js"
import { decodeSegment } from "./domain/Segment.js"
import type { DoctorReport } from "./domain/Findings.js"
import type { LayoutPlan, LayoutReport } from "./domain/LayoutMigration.js"
import type { PruneReport } from "./domain/PruneReport.js"
import { decodeRetentionInput, type RetentionInput } from "./domain/Retention.js"
import type { PromiseConfigHistory } from "./facade/configHistory.js"
import { type PromiseTierSet, promiseTierSet } from "./facade/tierSet.js"
import type { StorageWarning } from "./domain/Warnings.js"
import { runTyped, squashTyped, unrefClock } from "./facade/runtime.js"
import type { PromiseUserProfile } from "./facade/userProfile.js"
import { emitProcessWarning, warningLoggerLayer } from "./facade/warnings.js"
import { serialRcMapGet } from "./services/internal/serialGet.js"
import { nodeEnv } from "./layers/NodeHost.js"
import type * as Store from "./facade/store.js"
import type { ConfigHistoryOptions } from "./services/ConfigHistory.js"
import type { DoctorOptions } from "./services/Doctor.js"
import type { StateBackups } from "./services/StateBackups.js"
import type { AcquireOptions, ReleaseOutcome, WorkRun } from "./services/WorkRuns.js"
import type * as Errors from "./domain/Errors.js"

export * from "./domain/Errors.js"
export { BackupBusy, ExtensionNotInSnapshot, SnapshotCorrupt, SnapshotNotFound, UnsafeBackupRoot, UnsafeRestoreTarget } from "./domain/StateSnapshot.js"
export * from "./domain/UserProfileErrors.js"
/** Every error a facade call rejects with (each an `Error` with `_tag`), and their tags. */
export type { StorageError, StorageErrorTag } from "./domain/StorageErrors.js"
export { isStorageError } from "./domain/StorageErrors.js"
export type { StorageWarning, StorageWarningTag } from "./domain/Warnings.js"
export type { ReleaseOutcome } from "./services/WorkRuns.js"
export type { DoctorReport, Finding } from "./domain/Findings.js"
export type { LayoutDecision, LayoutPlan, LayoutReport } from "./domain/LayoutMigration.js"
export type { DiffResult, HistoryStatus, LogEntry, PromiseConfigHistory, RollbackResult, SnapshotResult } from "./facade/configHistory.js"
export type { ConfigHistoryOptions } from "./services/ConfigHistory.js"
export type { PruneReport } from "./domain/PruneReport.js"
export type { RetentionInput } from "./domain/Retention.js"
export type { CreateResult, ForgetResult, NotRestored, RestoreResult, SnapshotSummary, VerifyResult } from "./services/StateBackups.js"
export { planForget } from "./domain/ForgetPlan.js"

export interface OpenOptions {
  /** Wins over `$PI_ADAPTATIVE_CODING_AGENT_DIR` and `~/.pi/agent`. */
  readonly agentDir?: string
  /** Run the agent-dir layout migration before anything else (default true). */
  readonly migrate?: boolean
  /** How long an unreadable (e.g. empty) marker or lease is held before it counts as dead; default 10 minutes. */
  readonly staleUnreadableMs?: number
  /**
   * How long a lease or marker of another host lives without being written (held runs refresh theirs at a
   * third of it); default 15 minutes. Every process sharing the agent dir must use the same value.
   */
  readonly remoteLeaseTtlMs?: number
  /**
   * The harness ceiling every retention policy of this store is clamped to, field by field (docs/work-runs.md
   * "Retention"; a field left out is WR9's default). The fields given are also the store's defaults: raise
   * `maxScannedRuns`, `maxEntries` or `maxDepth` here and a prune (`pruneWorkTenant({ policy })`, the
   * background prune, an extension's `pruneWork`) may scan that far. An invalid one rejects with `InvalidPolicy`.
   */
  readonly retentionCeiling?: RetentionInput
  /**
   * What the library carried on through (a failing heartbeat, a refused background prune, a lease it could not
   * remove). Default: `process.emitWarning` (type `PiAgentStorageWarning`, code = the warning's `_tag`).
   */
  readonly onWarning?: (warning: StorageWarning) => void
}

/** Which run to hold, and what closing it does (docs/work-runs.md "Work runs"). */
export interface AcquireWorkRunOptions {
  category: string
  tenant: string
  /** A named run shared by several holders; omit for a fresh generated run. */
  runId?: string
  /** Retention for the opportunistic background prune of this tenant; `false` disables it. */
  retention?: RetentionInput | false
  /**
   * Releasing by `await using` (`Symbol.asyncDispose`) or `store.close()` deletes the run at once, unless
   * another live lease holds it. A `release()` called by hand uses its own options; a process that exits
   * without closing only drops its lease (the run stays for retention).
   */
  deleteOnClose?: boolean
  /**
   * Called once with the outcome of the release that let the lease go (`release()`, `await using` or
   * `close()`), so a run kept by `deleteOnClose` (`keptBecause`) is not lost with the lease. What it throws
   * rejects that release (after the lease is gone).
   */
  onRelease?: (outcome: ReleaseOutcome) => void
}

export interface WorkRunLease {
  readonly path: string
  readonly category: string
  readonly tenant: string
  readonly runId: string
  readonly kind: "generated" | "named"
  /** `{ released, deleted, keptBecause? }`: `keptBecause` says why a `delete: true` release kept the run. */
  release(o?: { delete?: boolean }): Promise<ReleaseOutcome>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * An agent extension's view of agent storage (WR11): its three tiers under the agent dir through the same
 * tier API a web-host extension gets from `openTiers` (opened on the first call), and its work runs.
 * `getStorage()` does no I/O and creates no directory.
 */
export interface ExtensionStorage extends PromiseTierSet {
  readonly namespace: string
  /** `config/extensions/<ns>/`: small settings the user set, versioned by config history. */
  readonly configDir: string
  /** `state/extensions/<ns>/`: durable, never auto-cleaned, in every state snapshot. */
  readonly stateDir: string
  /** `cache/extensions/<ns>/`: rebuildable, safe to delete. */
  readonly cacheDir: string
  /** A leased run under `work/extensions/<ns>/`; released on `unload()` or store `close()` at the latest. */
  acquireWorkRun(o?: { runId?: string; retention?: RetentionInput | false }): Promise<WorkRunLease>
  /** Prune this extension's runs; the policy is clamped to the harness ceiling. */
  pruneWork(o?: { policy?: RetentionInput; dryRun?: boolean }): Promise<PruneReport>
  /** Release every lease taken through this view; later acquisitions reject with `StorageUnloaded`. */
  unload(): Promise<void>
}

/** The `StateBackups` service as Promises (same methods, same results, typed rejections). */
export type StateBackupsApi = {
  readonly [K in "create" | "list" | "verify" | "forget" | "restore"]: (
    ...args: Parameters<StateBackups["Type"][K]>
  ) => Promise<Effect.Effect.Success<ReturnType<StateBackups["Type"][K]>>>
} & { readonly root: string }

export interface AgentStorage {
  readonly agentDir: string
  readonly workRoot: string
  acquireWorkRun(o: AcquireWorkRunOptions): Promise<WorkRunLease>
  getProcessWorkRun(o: { category: string; tenant: string }): Promise<WorkRunLease>
  pruneWorkTenant(o: { category: string; tenant: string; policy?: RetentionInput; dryRun?: boolean }): Promise<PruneReport>
  workRootEnv(run?: WorkRunLease): Record<string, string>
  /**
   * MG1, the layout migration: `plan()` is the dry run (the decisions, with why; read-only), `run()` executes
   * that plan (also run by `openAgentStorage` unless `migrate: false`).
   */
  readonly migration: {
    plan(o?: { maxEntries?: number }): Promise<LayoutPlan>
    run(o?: { maxEntries?: number }): Promise<LayoutReport>
  }
  /**
   * DR1/DR2: a bounded, read-only scan of the agent dir and of the extension data dirs under the web data root
   * (`webDataRoot`, else `$PI_WEB_DATA_DIR`, else `~/.pi/web/data`).
   */
  doctor(o?: { maxEntries?: number; webDataRoot?: string }): Promise<DoctorReport>
  /**
   * BK1: config history in git (the agent's config, agent extensions' `config/extensions/<ns>/`, and every
   * extension's `config/` under the web data root: `webDataRoot`, else `$PI_WEB_DATA_DIR`, else `~/.pi/web/data`);
   * no I/O until a method is called.
   */
  configHistory(o?: ConfigHistoryOptions): PromiseConfigHistory
  /**
   * BK2: state snapshots under a backup root (`root` else `$PI_STATE_BACKUP_DIR`, else beside the agent dir) of
   * the agent dir's state and of every extension's `state/` under the web data root (`webDataRoot`, else
   * `$PI_WEB_DATA_DIR`, else `~/.pi/web/data`); no I/O until a method is called.
   */
  stateBackups(o?: { root?: string; webDataRoot?: string }): StateBackupsApi
  /** Throws `InvalidSegment` for a bad namespace. */
  getStorage(namespace: string): ExtensionStorage
  /** MEM1: the bounded USER.md profile (default budget 8 KiB); no I/O until a method is called. */
  userProfile(o?: { budgetBytes?: number }): PromiseUserProfile
  /** Releases every lease it handed out; a background prune under way stops at its next yield (the next prune finishes it). */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** Lease files of every open store, unlinked synchronously if the process exits without closing. */
const liveLeaseFiles = new Set<string>()
let exitHookInstalled = false
const installExitHook = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once("exit", () => {
    for (const file of liveLeaseFiles) {
      try {
        NodeFs.unlinkSync(file)
      } catch {
        // Best effort: a lease left behind by a dead process is judged dead by WR4 anyway.
      }
    }
  })
}

/** The store's logger: typed warnings to `onWarning` (else a process warning), never Effect's stdout logger. */
const storeWarnings = (options: OpenOptions) =>
  warningLoggerLayer(options.onWarning ?? emitProcessWarning, (message) => process.emitWarning(message, { type: "PiAgentStorageWarning" }))

const storeLayer = ({ NodeStorage, HeartbeatClock }: typeof Store, options: OpenOptions) =>
  // Provided, not only merged: warnings logged while the stack is built (a malformed PI_STORAGE_* variable)
  // reach `onWarning` as well.
  Layer.provideMerge(
    NodeStorage.layerWith({
      agentDir: options.agentDir,
      migrate: options.migrate,
      config: { staleUnreadableMs: options.staleUnreadableMs, remoteLeaseTtlMs: options.remoteLeaseTtlMs, retentionCeiling: options.retentionCeiling }
    }).pipe(Layer.provide(Layer.succeed(HeartbeatClock, unrefClock))),
    storeWarnings(options)
  )

const asLease = (
  run: WorkRun,
  release: (o?: { delete?: boolean }) => Promise<ReleaseOutcome>,
  deleteOnClose = false
): WorkRunLease => ({
  path: run.path,
  category: run.category,
  tenant: run.tenant,
  runId: run.runId,
  kind: run.kind,
  release,
  [Symbol.asyncDispose]: () => release(deleteOnClose ? { delete: true } : undefined).then(() => undefined)
})

/** The facade's options as the Effect API's: `onRelease` a plain callback, run as an Effect. */
const acquireOptions = (o: AcquireWorkRunOptions): AcquireOptions => {
  const { onRelease, ...rest } = o
  return onRelease === undefined ? rest : { ...rest, onRelease: (outcome) => Effect.sync(() => onRelease(outcome)) }
}

type StoreServices = Layer.Layer.Success<ReturnType<typeof storeLayer>>

/** Lease files: in the exit hook's set while `scope` is open (it unlinks them if the process exits first). */
const trackLeaseFile = (scope: Scope.Scope, leasePath: string) =>
  Effect.zipRight(
    Effect.sync(() => void liveLeaseFiles.add(leasePath)),
    Scope.addFinalizer(scope, Effect.sync(() => void liveLeaseFiles.delete(leasePath)))
  )

export const openAgentStorage = async (options: OpenOptions = {}): Promise<AgentStorage> => {
  // A ceiling is a policy (WR8a): refused with InvalidPolicy before anything is opened.
  const ceiling = decodeRetentionInput(options.retentionCeiling)
  if (ceiling._tag === "Left") throw ceiling.left
  installExitHook()
  // The stack loads on the first open, not at import (docs/install.md "Installing"; facade/store.ts).
  const store = await import("./facade/store.js")
  const { AgentDir, Doctor, ExtensionStorage: ExtensionStorageService, Migration, StateBackups, StorageConfig, WorkRuns } = store
  const { makePromiseConfigHistory, promiseUserProfile } = store
  const runtime = ManagedRuntime.make(storeLayer(store, options))
  /**
   * The store's lifetime. Every lease is a child scope of it (an extension view's leases, of the view's scope,
   * itself a child), the config history's runtime a finalizer, the calls in flight a FiberSet in it, and the
   * runtime its first finalizer (so it goes last, releasing the process runs). Closing it releases and
   * disposes everything by construction.
   */
  const storeScope = Effect.runSync(Scope.make())
  Effect.runSync(Scope.addFinalizer(storeScope, Effect.promise(() => runtime.dispose())))
  const calls = Effect.runSync(Scope.extend(FiberSet.make<unknown, unknown>(), storeScope))
  // The services, resolved once: every method below is one call forked into `calls` on this runtime.
  const resolved = await runTyped(
    runtime,
    Effect.all({
      agentDirPath: Effect.map(AgentDir, (d) => d.path),
      paths: Effect.map(AgentDir, (d) => d.paths),
      config: StorageConfig,
      workRuns: WorkRuns,
      migration: Migration,
      doctor: Doctor,
      extensions: ExtensionStorageService,
      runFork: FiberSet.runtime(calls)<StoreServices>()
    })
  ).catch(async (e: unknown) => {
    await Effect.runPromise(Scope.close(storeScope, Exit.void))
    throw e
  })
  const { agentDirPath, paths, config, workRuns, migration, doctor, extensions, runFork } = resolved
  const { agentDir, workRoot } = paths
  /** Set once `close()` begins: later calls reject with `StorageClosed` (the runtime is going away). */
  let closed: Promise<void> | undefined

  /** Run a call on the store's runtime, in `calls` (so `close()` waits for it); typed rejections. */
  const call = <A, E>(effect: Effect.Effect<A, E, StoreServices>): Promise<A> => {
    if (closed !== undefined) return Promise.reject(new StorageClosed({ agentDir }))
    return new Promise<A>((resolve, reject) =>
      runFork(effect).addObserver((exit) => Exit.isSuccess(exit) ? resolve(exit.value) : reject(squashTyped(exit.cause)))
    )
  }
  /** A Promise-returning call (the config history's runtime), tracked the same way. */
  const whileOpen = <A>(run: () => Promise<A>): Promise<A> => call(Effect.tryPromise({ try: run, catch: (e) => e }))
  /** Run after `close()` began too (a lease's own release), still logging to the store's `onWarning`. */
  const callAnyway = <A>(effect: Effect.Effect<A>): Promise<A> =>
    closed === undefined ? call(effect) : Effect.runPromise(Effect.provide(effect, storeWarnings(options)))

  /** Acquire in a lease scope of its own under `parent`: `release()` releases it and closes the scope, once. */
  const acquireIn = <E>(parent: Scope.Scope, acquire: Effect.Effect<WorkRun, E, Scope.Scope>, deleteOnClose?: boolean): Promise<WorkRunLease> =>
    call(Effect.gen(function*() {
      const leaseScope = yield* Scope.fork(parent, ExecutionStrategy.sequential)
      const run = yield* Scope.extend(acquire, leaseScope).pipe(Effect.onError(() => Scope.close(leaseScope, Exit.void)))
      yield* trackLeaseFile(leaseScope, run.leasePath)
      let done: Promise<ReleaseOutcome> | undefined
      const release = (o?: { delete?: boolean }): Promise<ReleaseOutcome> =>
        done ??= callAnyway(Effect.zipLeft(run.release(o?.delete ? { delete: true } : undefined), Scope.close(leaseScope, Exit.void)))
      return asLease(run, release, deleteOnClose)
    }))

  const storage: AgentStorage = {
    agentDir,
    workRoot,
    acquireWorkRun: (o) => acquireIn(storeScope, workRuns.acquire(acquireOptions(o)), o.deleteOnClose),
    getProcessWorkRun: (o) =>
      call(Effect.gen(function*() {
        const run = yield* workRuns.getProcessWorkRun(o)
        // Held until the store closes (the runtime releases it); its own release is a no-op that says why.
        yield* trackLeaseFile(storeScope, run.leasePath)
        return asLease(run, () => callAnyway(run.release()))
      })),
    pruneWorkTenant: (o) => call(workRuns.prune(o)),
    workRootEnv: (run) => workRuns.workRootEnv(run),
    close: () => {
      closed ??= (async () => {
        // Calls in flight finish first (an acquisition then holds a lease in the scope), then the scope closes.
        await runTyped(runtime, FiberSet.awaitEmpty(calls))
        await runTyped(runtime, Scope.close(storeScope, Exit.void))
      })()
      return closed
    },
    migration: {
      plan: (o = {}) => call(migration.plan(o)),
      run: (o = {}) => call(migration.run(o))
    },
    doctor: (o = {}) => call(doctor.doctor(o as DoctorOptions)),
    configHistory: (o = {}) =>
      makePromiseConfigHistory(
        { path: agentDirPath, paths, config },
        o,
        whileOpen,
        (dispose) => void Effect.runFork(Scope.addFinalizer(storeScope, Effect.promise(dispose))),
        storeWarnings(options)
      ),
    stateBackups: (o = {}) => {
      if (closed !== undefined) throw new StorageClosed({ agentDir })
      const backups = runtime.runSync(StateBackups.make(o)) // pure: resolves the root, touches nothing
      return {
        root: backups.root,
        create: (x) => call(backups.create(x)),
        list: () => call(backups.list()),
        verify: (id, x) => call(backups.verify(id, x)),
        forget: (x) => call(backups.forget(x)),
        restore: (id, x) => call(backups.restore(id, x))
      }
    },
    getStorage: (namespace) => {
      const parsed = decodeSegment("namespace", namespace)
      if (parsed._tag === "Left") throw parsed.left
      // The Effect view, in a child scope of the store's (building it does no I/O): its gate makes unload wait
      // for acquisitions in flight and refuse later ones; its leases are child scopes of the view's scope.
      const viewScope = Effect.runSync(Scope.fork(storeScope, ExecutionStrategy.sequential))
      const view = Effect.runSync(Scope.extend(extensions.getStorage(parsed.right), viewScope))
      return {
        namespace: view.namespace,
        configDir: view.configDir,
        stateDir: view.stateDir,
        cacheDir: view.cacheDir,
        // The tiers open on their first call, on the store's runtime (rejecting with `StorageClosed` once closed).
        ...promiseTierSet(view, (effect) => call(Effect.suspend(effect))),
        acquireWorkRun: (o = {}) => acquireIn(viewScope, view.acquireWorkRun(o)),
        pruneWork: (o = {}) => call(view.pruneWork(o)),
        // The view needs no service of the runtime: unloading works after `close()` too.
        unload: () => Effect.runPromise(Effect.zipRight(view.unload, Scope.close(viewScope, Exit.void)))
      }
    },
    userProfile: (o = {}) => promiseUserProfile(call, o),
    [Symbol.asyncDispose]: () => storage.close()
  }
  return storage
}

/** How long a module-level helper's store stays open once nothing uses it. */
const SHARED_STORE_IDLE = Duration.seconds(30)

/**
 * The module-level helpers' stores, one per agent dir: opened at the first use and shared while in use (a
 * lease from `acquireWorkRun` until its release, a prune for its duration, a process run for good), closed
 * once unused for `SHARED_STORE_IDLE`. Their fibers run on the unref'd clock, so that idle timer never keeps
 * the process alive (a process that exits first leaves nothing held: its leases were released, and the exit
 * hook unlinks the process runs' leases).
 */
let sharedStoresMap: { readonly map: RcMap.RcMap<string, AgentStorage, unknown>; readonly get: (key: string) => Effect.Effect<AgentStorage, unknown, Scope.Scope> } | undefined
/** Made on first use, not at import (docs/install.md "Installing"). Gets are serialised: concurrent first calls share one store. */
const sharedStores = () => sharedStoresMap ??= Effect.runSync(Effect.flatMap(Scope.make(), (scope) =>
  Scope.extend(
    RcMap.make({
      lookup: (agentDir: string) =>
        Effect.acquireRelease(
          Effect.tryPromise({ try: () => openAgentStorage({ agentDir }), catch: (e) => e }),
          (store) => Effect.promise(() => store.close())
        ),
      idleTimeToLive: SHARED_STORE_IDLE
    }),
    scope
  ).pipe(Effect.map((map) => ({ map, get: serialRcMapGet(map) })))))

const onUnrefClock = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(Effect.withClock(effect, unrefClock)).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw squashTyped(exit.cause)
  })

/** The shared store of `agentDir`, and `done` to stop using it (once). A store that failed to open is not kept. */
const useSharedStore = async (agentDir: string | undefined): Promise<{ store: AgentStorage; done: () => Promise<void> }> => {
  const key = resolveAgentDir({ explicit: agentDir, env: nodeEnv, home: NodeOs.homedir(), cwd: process.cwd() }).path
  const use = Effect.runSync(Scope.make())
  let finished: Promise<void> | undefined
  const done = () => finished ??= onUnrefClock(Scope.close(use, Exit.void))
  try {
    return { store: await onUnrefClock(Scope.extend(sharedStores().get(key), use)), done }
  } catch (e) {
    await done()
    await onUnrefClock(RcMap.invalidate(sharedStores().map, key))
    throw e
  }
}

export const acquireWorkRun = async (o: AcquireWorkRunOptions & { agentDir?: string }): Promise<WorkRunLease> => {
  const { agentDir, ...rest } = o
  const { store, done } = await useSharedStore(agentDir)
  const lease = await store.acquireWorkRun(rest).catch(async (e: unknown) => {
    await done()
    throw e
  })
  // The lease uses the store until it is released.
  const release = (r?: { delete?: boolean }) => lease.release(r).finally(done)
  return { ...lease, release, [Symbol.asyncDispose]: () => lease[Symbol.asyncDispose]().finally(done) }
}

export const getProcessWorkRun = async (o: { category: string; tenant: string; agentDir?: string }): Promise<WorkRunLease> => {
  const { agentDir, ...rest } = o
  // A process run uses its store for good (`done` is never called).
  const { store } = await useSharedStore(agentDir)
  return store.getProcessWorkRun(rest)
}

export const pruneWorkTenant = async (
  o: { category: string; tenant: string; policy?: RetentionInput; dryRun?: boolean; agentDir?: string }
): Promise<PruneReport> => {
  const { agentDir, ...rest } = o
  const { store, done } = await useSharedStore(agentDir)
  return store.pruneWorkTenant(rest).finally(done)
}

export type { ProfileChange, ProfileView, PromiseUserProfile } from "./facade/userProfile.js"
export { chooseTier, extensionContext, openTiers, resolveStateDir } from "./facade/tiers.js"
export type {
  ExtensionContext,
  ExtensionContextOptions,
  OpenTiersOptions,
  PromiseTiers,
  PromiseTierSet,
  TierChoice,
  TierDirs,
  TierFacts,
  TierName,
  TierPurpose
} from "./facade/tiers.js"
