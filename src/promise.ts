/**
 * `pi-agent-storage/promise`: the Promise facade for callers that do not use Effect (SPEC API2).
 * One ManagedRuntime per opened store, built once; rejections are the typed errors (`_tag`), never wrappers.
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scope from "effect/Scope"
import { resolveAgentDir } from "./domain/AgentPaths.js"
import { StorageClosed } from "./domain/Errors.js"
import { decodeSegment } from "./domain/Segment.js"
import type { DoctorReport, LayoutReport } from "./domain/MigrationPlan.js"
import type { PruneReport } from "./domain/PruneReport.js"
import type { RetentionInput } from "./domain/Retention.js"
import { makePromiseConfigHistory, type PromiseConfigHistory } from "./facade/configHistory.js"
import type { StorageWarning } from "./domain/Warnings.js"
import { runTyped, unrefSleep } from "./facade/runtime.js"
import { type PromiseUserProfile, promiseUserProfile } from "./facade/userProfile.js"
import { emitProcessWarning, warningLoggerLayer } from "./facade/warnings.js"
import { NodeWorld, storageLayer } from "./layers/Storage.js"
import { AgentDir } from "./services/AgentDir.js"
import type { ConfigHistoryOptions } from "./services/ConfigHistory.js"
import { Doctor, type DoctorOptions } from "./services/Doctor.js"
import { ExtensionStorage as ExtensionStorageService } from "./services/ExtensionStorage.js"
import { Migration } from "./services/Migration.js"
import { StateBackups } from "./services/StateBackups.js"
import { type ReleaseOutcome, type WorkRun, WorkRuns } from "./services/WorkRuns.js"
import type * as Errors from "./domain/Errors.js"

export * from "./domain/Errors.js"
export { BackupBusy, SnapshotCorrupt, SnapshotNotFound, UnsafeBackupRoot } from "./domain/StateSnapshot.js"
export * from "./domain/UserProfileErrors.js"
/** Every error a facade call rejects with (each an `Error` with `_tag`), and their tags. */
export type { StorageError, StorageErrorTag } from "./domain/StorageErrors.js"
export type { StorageWarning, StorageWarningTag } from "./domain/Warnings.js"
export type { ReleaseOutcome } from "./services/WorkRuns.js"
export type { DoctorReport, Finding, LayoutReport } from "./domain/MigrationPlan.js"
export type { DiffResult, HistoryStatus, LogEntry, PromiseConfigHistory, RollbackResult, SnapshotResult } from "./facade/configHistory.js"
export type { ConfigHistoryOptions } from "./services/ConfigHistory.js"
export type { PruneReport } from "./domain/PruneReport.js"
export type { RetentionInput } from "./domain/Retention.js"
export type { CreateResult, ForgetResult, RestoreResult, SnapshotSummary, VerifyResult } from "./services/StateBackups.js"
export { planForget } from "./domain/ForgetPlan.js"

export interface OpenOptions {
  /** Wins over `$PI_ADAPTATIVE_CODING_AGENT_DIR` and `~/.pi/agent`. */
  readonly agentDir?: string
  /** Run the agent-dir layout migration before anything else (default true). */
  readonly migrate?: boolean
  /** How long an unreadable (e.g. empty) marker or lease is held before it counts as dead; default 10 minutes. */
  readonly staleUnreadableMs?: number
  /**
   * What the library carried on through (a failing heartbeat, a refused background prune, a lease it could not
   * remove). Default: `process.emitWarning` (type `PiAgentStorageWarning`, code = the warning's `_tag`).
   */
  readonly onWarning?: (warning: StorageWarning) => void
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

/** An extension's view of agent storage (WR11): `getStorage()` does no I/O and creates no directory. */
export interface ExtensionStorage {
  readonly namespace: string
  /** `state/extensions/<ns>/`: durable, never auto-cleaned. */
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
  acquireWorkRun(o: { category: string; tenant: string; runId?: string; retention?: RetentionInput | false }): Promise<WorkRunLease>
  getProcessWorkRun(o: { category: string; tenant: string }): Promise<WorkRunLease>
  pruneWorkTenant(o: { category: string; tenant: string; policy?: RetentionInput; dryRun?: boolean }): Promise<PruneReport>
  workRootEnv(run?: WorkRunLease): Record<string, string>
  /** MG1: move legacy root entries to their canonical places (also run by `openAgentStorage` unless `migrate: false`). */
  migrateAgentDirLayout(o?: { maxEntries?: number }): Promise<LayoutReport>
  /** DR1/DR2: a bounded, read-only scan of the agent dir (and, given `webDataRoot`, the extension data dirs). */
  doctor(o?: { maxEntries?: number; webDataRoot?: string }): Promise<DoctorReport>
  /** BK1: config history in git; no I/O until a method is called (`webDataRoot` else `$PI_WEB_DATA_DIR`). */
  configHistory(o?: ConfigHistoryOptions): PromiseConfigHistory
  /** BK2: state snapshots under a backup root (`root` else `$PI_STATE_BACKUP_DIR`, else beside the agent dir); no I/O until a method is called. */
  stateBackups(o?: { root?: string; webDataRoot?: string }): StateBackupsApi
  /** Throws `InvalidSegment` for a bad namespace. */
  getStorage(namespace: string): ExtensionStorage
  /** MEM1: the bounded USER.md profile (default budget 8 KiB); no I/O until a method is called. */
  userProfile(o?: { budgetBytes?: number }): PromiseUserProfile
  /** Releases every lease it handed out, waits for background prunes. */
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

const storeLayer = (options: OpenOptions) =>
  Layer.merge(
    storageLayer(NodeWorld, {
      agentDir: options.agentDir,
      migrate: options.migrate,
      workRuns: { heartbeatSleep: unrefSleep, ...(options.staleUnreadableMs === undefined ? {} : { staleUnreadableMs: options.staleUnreadableMs }) }
    }),
    storeWarnings(options)
  )

const asLease = (run: WorkRun, release: (o?: { delete?: boolean }) => Promise<ReleaseOutcome>): WorkRunLease => ({
  path: run.path,
  category: run.category,
  tenant: run.tenant,
  runId: run.runId,
  kind: run.kind,
  release,
  [Symbol.asyncDispose]: () => release().then(() => undefined)
})

export const openAgentStorage = async (options: OpenOptions = {}): Promise<AgentStorage> => {
  installExitHook()
  const runtime = ManagedRuntime.make(storeLayer(options))
  // The services, resolved once: every method below is one runtime call.
  const { agentDirPath, paths, workRuns, migration, doctor, extensions } = await runTyped(
    runtime,
    Effect.all({
      agentDirPath: Effect.map(AgentDir, (d) => d.path),
      paths: Effect.map(AgentDir, (d) => d.paths),
      workRuns: WorkRuns,
      migration: Migration,
      doctor: Doctor,
      extensions: ExtensionStorageService
    })
  )
  const { agentDir, workRoot } = paths
  const open = new Set<() => Promise<unknown>>()
  /** Runtimes built on demand (the config history's), disposed by `close()`. */
  const extraRuntimes = new Set<() => Promise<void>>()
  const processLeaseFiles = new Set<string>()
  /** Calls in flight: `close()` waits for them, then releases the leases they got. */
  const calls = new Set<Promise<unknown>>()
  let closed: Promise<void> | undefined
  /** Run a call on the runtime, tracked for `close()`; once `close()` has begun, reject: the runtime is going away. */
  const whileOpen = <A>(run: () => Promise<A>): Promise<A> => {
    if (closed !== undefined) return Promise.reject(new StorageClosed({ agentDir }))
    const call = run()
    calls.add(call)
    const done = () => void calls.delete(call)
    call.then(done, done)
    return call
  }

  /** A lease in its own scope: `release()` releases it and closes the scope, once. */
  const track = (run: WorkRun, scope: Scope.CloseableScope): WorkRunLease => {
    liveLeaseFiles.add(run.leasePath)
    let done: Promise<ReleaseOutcome> | undefined
    const release = (o?: { delete?: boolean }): Promise<ReleaseOutcome> => {
      done ??= runTyped(runtime, Effect.zipLeft(run.release(o?.delete ? { delete: true } : undefined), Scope.close(scope, Exit.void)))
        .finally(() => {
          liveLeaseFiles.delete(run.leasePath)
          open.delete(release)
        })
      return done
    }
    open.add(release)
    return asLease(run, release)
  }

  /** Acquire in a scope of the lease's own, tracked for `close()`. */
  const acquireTracked = <E>(acquire: Effect.Effect<WorkRun, E, Scope.Scope>): Promise<WorkRunLease> =>
    whileOpen(async () => {
      const { run, scope } = await runTyped(runtime, Effect.gen(function*() {
        const scope = yield* Scope.make()
        const run = yield* Scope.extend(acquire, scope).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
        return { run, scope }
      }))
      return track(run, scope)
    })

  const storage: AgentStorage = {
    agentDir,
    workRoot,
    acquireWorkRun: (o) => acquireTracked(workRuns.acquire(o)),
    getProcessWorkRun: (o) =>
      whileOpen(async () => {
        const run = await runTyped(runtime, workRuns.getProcessWorkRun(o))
        liveLeaseFiles.add(run.leasePath)
        processLeaseFiles.add(run.leasePath)
        // The process run is held until the store closes; releasing it early is a no-op.
        return asLease(run, async () => ({ released: false, deleted: false, keptTag: "ProcessRun", keptBecause: "the process run is held until the store closes" }))
      }),
    pruneWorkTenant: (o) => whileOpen(() => runTyped(runtime, workRuns.prune(o))),
    workRootEnv: (run) => workRuns.workRootEnv(run),
    close: () => {
      closed ??= (async () => {
        await Promise.allSettled([...calls])
        await Promise.allSettled([...open].map((release) => release()))
        // Disposing the runtime releases the process runs.
        await runtime.dispose()
        await Promise.allSettled([...extraRuntimes].map((dispose) => dispose()))
        for (const file of processLeaseFiles) liveLeaseFiles.delete(file)
      })()
      return closed
    },
    migrateAgentDirLayout: (o = {}) => whileOpen(() => runTyped(runtime, migration.migrateAgentDirLayout(agentDir, o))),
    doctor: (o = {}) => whileOpen(() => runTyped(runtime, doctor.doctor(agentDir, o as DoctorOptions))),
    configHistory: (o = {}) =>
      makePromiseConfigHistory({ path: agentDirPath, paths }, o, whileOpen, (dispose) => void extraRuntimes.add(dispose), storeWarnings(options)),
    stateBackups: (o = {}) => {
      if (closed !== undefined) throw new StorageClosed({ agentDir })
      const backups = runtime.runSync(StateBackups.make(o)) // pure: resolves the root, touches nothing
      const call = <A, E>(effect: Effect.Effect<A, E>) => whileOpen(() => runTyped(runtime, effect))
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
      // The Effect view, in a scope of its own (building it does no I/O): its gate makes unload wait for
      // acquisitions in flight and refuse later ones, and closing it releases every lease taken through it.
      const viewScope = Effect.runSync(Scope.make())
      const view = Effect.runSync(Scope.extend(extensions.getStorage(parsed.right), viewScope))
      const held = new Set<WorkRunLease>()
      return {
        namespace: view.namespace,
        stateDir: view.stateDir,
        cacheDir: view.cacheDir,
        acquireWorkRun: async (o = {}) => {
          const lease = await acquireTracked(view.acquireWorkRun(o))
          held.add(lease)
          const release = (r?: { delete?: boolean }) => lease.release(r).finally(() => held.delete(lease))
          return { ...lease, release, [Symbol.asyncDispose]: () => release().then(() => undefined) }
        },
        pruneWork: (o = {}) => whileOpen(() => runTyped(runtime, view.pruneWork(o))),
        unload: async () => {
          // The view needs no service of the runtime: unloading works after `close()` too.
          await Effect.runPromise(view.unload)
          // The leases are released; drop the store's bookkeeping of them too (release is idempotent).
          await Promise.allSettled([...held].map((lease) => lease.release()))
        }
      }
    },
    userProfile: (o = {}) => promiseUserProfile((effect) => whileOpen(() => runTyped(runtime, effect)), o),
    [Symbol.asyncDispose]: () => storage.close()
  }
  return storage
}

/** One shared store per agent dir for the module-level helpers, closed when the process exits. */
const sharedStores = new Map<string, Promise<AgentStorage>>()
const sharedStore = (agentDir: string | undefined): Promise<AgentStorage> => {
  const key = resolveAgentDir({ explicit: agentDir, env: (n) => process.env[n], home: NodeOs.homedir(), cwd: process.cwd() }).path
  let store = sharedStores.get(key)
  if (store === undefined) {
    store = openAgentStorage({ agentDir: key })
    store.catch(() => sharedStores.delete(key))
    sharedStores.set(key, store)
  }
  return store
}

export const acquireWorkRun = async (
  o: { category: string; tenant: string; runId?: string; retention?: RetentionInput | false; agentDir?: string }
): Promise<WorkRunLease> => {
  const { agentDir, ...rest } = o
  return (await sharedStore(agentDir)).acquireWorkRun(rest)
}

export const getProcessWorkRun = async (o: { category: string; tenant: string; agentDir?: string }): Promise<WorkRunLease> => {
  const { agentDir, ...rest } = o
  return (await sharedStore(agentDir)).getProcessWorkRun(rest)
}

export const pruneWorkTenant = async (
  o: { category: string; tenant: string; policy?: RetentionInput; dryRun?: boolean; agentDir?: string }
): Promise<PruneReport> => {
  const { agentDir, ...rest } = o
  return (await sharedStore(agentDir)).pruneWorkTenant(rest)
}

export type { ProfileChange, ProfileView, PromiseUserProfile } from "./facade/userProfile.js"
export { chooseTier, extensionContext, openTiers, resolveStateDir } from "./facade/tiers.js"
export type {
  ExtensionContext,
  ExtensionContextOptions,
  OpenTiersOptions,
  PromiseTiers,
  TierChoice,
  TierDirs,
  TierFacts,
  TierName,
  TierPurpose
} from "./facade/tiers.js"
