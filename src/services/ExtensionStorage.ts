/**
 * Agent-side extension storage (docs/tiers.md "Extension storage (agent side)"): `getStorage(namespace)` is a view
 * with the extension's three tiers under the agent dir — `config/extensions/<ns>/`, `state/extensions/<ns>/`,
 * `cache/extensions/<ns>/` — through the same tier API the web host's extensions use (the `TierStorage`
 * service, opened on first use), and leased work runs under `work/extensions/<ns>/`. Building the view does
 * no I/O. Retention the extension asks for is clamped to the harness ceiling by `WorkRuns`. Every lease taken
 * through the view is released when the view's scope closes (unload, or the extension program failing) or
 * on `unload`; after that the view refuses new runs with `StorageUnloaded` (its tiers hold nothing to
 * release and keep working).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import { EXTENSIONS_WORK_CATEGORY } from "../domain/AgentPaths.js"
import { type InvalidSegment, StorageUnloaded } from "../domain/Errors.js"
import type { PruneReport } from "../domain/PruneReport.js"
import type { RetentionInput } from "../domain/Retention.js"
import { decodeSegment } from "../domain/Segment.js"
import { AgentDir } from "./AgentDir.js"
import { type CacheTier, type ConfigTier, type FirstUseError, type StateTier, TierStorage } from "./TierStorage.js"
import { type AcquireError, type PruneFailure, type WorkRun, WorkRuns } from "./WorkRuns.js"

/** More acquisitions than any view runs at once: each takes one permit, unload takes them all. */
const GATE_PERMITS = 1 << 20

export interface ExtensionStorageView {
  readonly namespace: string
  /** `config/extensions/<ns>/`: small settings the user set, versioned by config history. */
  readonly configDir: string
  /** `state/extensions/<ns>/`: durable, never auto-cleaned, in every state snapshot. */
  readonly stateDir: string
  /** `cache/extensions/<ns>/`: rebuildable, safe to delete. */
  readonly cacheDir: string
  /** The config tier (docs/tiers.md "Extension data tiers": key-values in settings.json, red lines), opened on first use. */
  readonly config: ConfigTier<FirstUseError>
  /** The state tier (strict reads, optionally with a Schema; atomic fsynced writes), opened on first use. */
  readonly state: StateTier<FirstUseError>
  /** The cache tier (`ensure` rebuilds what is missing or invalid, `clear`), opened on first use. */
  readonly cache: CacheTier<FirstUseError>
  /** A leased run under `work/extensions/<ns>/`, released with the caller's scope or the view's, whichever first. */
  readonly acquireWorkRun: (options?: {
    readonly runId?: string | undefined
    readonly retention?: RetentionInput | false | undefined
  }) => Effect.Effect<WorkRun, AcquireError | StorageUnloaded, Scope.Scope>
  readonly pruneWork: (options?: { readonly policy?: RetentionInput; readonly dryRun?: boolean }) => Effect.Effect<PruneReport, PruneFailure>
  /** Release every lease taken through this view and refuse new ones. Idempotent. */
  readonly unload: Effect.Effect<void>
}

export class ExtensionStorage extends Context.Tag("pi-agent-storage/ExtensionStorage")<ExtensionStorage, {
  /** Scoped: closing the scope unloads the view. No I/O, no directory created. */
  readonly getStorage: (namespace: string) => Effect.Effect<ExtensionStorageView, InvalidSegment, Scope.Scope>
}>() {
  static readonly make: Effect.Effect<ExtensionStorage["Type"], never, WorkRuns | AgentDir | TierStorage> = (
    Effect.gen(function*() {
      const workRuns = yield* WorkRuns
      const tierStorage = yield* TierStorage
      const { paths } = yield* AgentDir
      const getStorage = (namespace: string) =>
        Effect.gen(function*() {
          const ns = yield* decodeSegment("namespace", namespace)
          // Leases live in the view's own scope; each acquisition is also tied to its caller's scope.
          const viewScope = yield* Scope.make()
          const unloaded = yield* Ref.make(false)
          // Acquisitions share the gate; unload takes all of it, so it waits for the ones in flight (they then
          // hold leases it releases) and the ones after it see `unloaded`. Without it, an acquisition could
          // extend a scope unload had just closed: its lease released at once, its run handed out anyway.
          const gate = yield* Effect.makeSemaphore(GATE_PERMITS)
          const unload = gate.withPermits(GATE_PERMITS)(Effect.zipRight(Ref.set(unloaded, true), Scope.close(viewScope, Exit.void)))
          yield* Effect.addFinalizer(() => unload)
          const acquireWorkRun: ExtensionStorageView["acquireWorkRun"] = (options) =>
            // Waiting at the gate stays interruptible; an acquisition, once started, completes or fails whole.
            gate.withPermits(1)(Effect.uninterruptible(Effect.gen(function*() {
              if (yield* Ref.get(unloaded)) return yield* new StorageUnloaded({ namespace: ns })
              const runScope = yield* Scope.fork(viewScope, ExecutionStrategy.sequential)
              const run = yield* Scope.extend(
                workRuns.acquire({ category: EXTENSIONS_WORK_CATEGORY, tenant: ns, runId: options?.runId, retention: options?.retention }),
                runScope
              ).pipe(Effect.onError(() => Scope.close(runScope, Exit.void)))
              yield* Effect.addFinalizer(() => Scope.close(runScope, Exit.void))
              return run
            })))
          const dirs = { configDir: paths.extensionConfigDir(ns), stateDir: paths.extensionStateDir(ns), cacheDir: paths.extensionCacheDir(ns) }
          const tiers = tierStorage.onFirstUse(dirs)
          return {
            namespace: ns,
            ...dirs,
            config: tiers.config,
            state: tiers.state,
            cache: tiers.cache,
            acquireWorkRun,
            pruneWork: (options) =>
              workRuns.prune({ category: EXTENSIONS_WORK_CATEGORY, tenant: ns, policy: options?.policy, dryRun: options?.dryRun }),
            unload
          } satisfies ExtensionStorageView
        })
      return ExtensionStorage.of({ getStorage })
    })
  )

  static readonly layer: Layer.Layer<ExtensionStorage, never, WorkRuns | AgentDir | TierStorage> = Layer.effect(ExtensionStorage, ExtensionStorage.make)
}
