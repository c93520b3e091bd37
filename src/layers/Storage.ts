/**
 * The whole service stack over any world (FileSystem + Host + ProcessRunner), built once at an edge and kept in
 * a constant (docs/work-runs.md "Effect callers"). Resolving the agent dir runs the layout migration first (MG1: before
 * any store is read) unless `migrate: false`. The services a program may never use (tiers, inventory, the
 * profile, config history, state backups) are built on their first use, so they cost no start-up.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AgentDir } from "../services/AgentDir.js"
import { ConfigHistory } from "../services/ConfigHistory.js"
import { Doctor } from "../services/Doctor.js"
import { ExtensionStorage } from "../services/ExtensionStorage.js"
import type { FileSystem } from "../services/FileSystem.js"
import type { Host } from "../services/Host.js"
import { Inventory } from "../services/Inventory.js"
import { Migration } from "../services/Migration.js"
import type { ProcessRunner } from "../services/ProcessRunner.js"
import { StateBackups } from "../services/StateBackups.js"
import { StorageConfig, type StorageConfigInput } from "../services/StorageConfig.js"
import { TierStorage } from "../services/TierStorage.js"
import { Status } from "../services/Status.js"
import { UsageHistory, type UsageHistoryOptions, UsageRecorder } from "../services/UsageHistory.js"
import { UserProfile } from "../services/UserProfile.js"
import { WorkRuns, type WorkRunsOptions } from "../services/WorkRuns.js"
import { lazyService } from "./lazyService.js"

export interface StorageOptions {
  /** Wins over `$PI_ADAPTATIVE_CODING_AGENT_DIR` and `~/.pi/agent`. */
  readonly agentDir?: string | undefined
  /** Run the layout migration (`Migration.run`) before anything reads the agent dir (default true). */
  readonly migrate?: boolean | undefined
  /**
   * Tunables for the whole stack, on top of the `StorageConfig` in the context (its defaults, or the
   * environment's at the Node edge).
   */
  readonly config?: StorageConfigInput | undefined
  readonly workRuns?: WorkRunsOptions | undefined
  /**
   * The usage history the dashboard's growth chart reads (docs/dashboard.md "Dashboard"): given, the stack's writers
   * (prune, background prune, state snapshot, config snapshot) append to it; absent, it is only read.
   * `NodeStorage.layer` gives `{}` unless this is `false`.
   */
  readonly usageHistory?: UsageHistoryOptions | false | undefined
}

/** What a world gives the stack: `NodeWorld.layer`, or one simulated process, `MemoryWorld.layer(world)`. */
export type StorageWorld = FileSystem | Host | ProcessRunner

/** Every service of the library: what `Storage.layer(world)` and `NodeStorage.layer` provide. */
export type StorageServices =
  | StorageWorld
  | StorageConfig
  | AgentDir
  | Migration
  | Doctor
  | WorkRuns
  | ExtensionStorage
  | TierStorage
  | Inventory
  | UserProfile
  | ConfigHistory
  | StateBackups
  | Status
  | UsageHistory
  | UsageRecorder

/**
 * The services with their default options, each built on its first use (their `make`s build closures, no
 * I/O). Other options: `X.layerWith(options)` provided over the stack (`Layer.provideMerge(stack)`). One
 * layer for the five: each layer of a stack costs its build a little, used or not.
 */
const optionalServices = Layer.effectContext(
  Effect.map(Effect.runtime<FileSystem | Host | ProcessRunner | AgentDir>(), (runtime) =>
    Context.make(TierStorage, lazyService(runtime, TierStorage.make)).pipe(
      Context.add(Inventory, lazyService(runtime, Inventory.make)),
      // The default budgets are valid: this cannot fail.
      Context.add(UserProfile, lazyService(runtime, Effect.orDie(UserProfile.make()))),
      Context.add(ConfigHistory, lazyService(runtime, ConfigHistory.make())),
      Context.add(StateBackups, lazyService(runtime, StateBackups.make()))
    ))
)

/** Start-up migration passes: each call handles a bounded number of root entries and says when it was cut. */
const MAX_STARTUP_MIGRATION_PASSES = 16

export const layer = <E>(
  world: Layer.Layer<StorageWorld, E>,
  options: StorageOptions = {}
): Layer.Layer<StorageServices, E> => {
  // One StorageConfig for every layer below, the world's included (its walker and remover threads).
  const config = StorageConfig.layerWith(options.config)
  const migration = Layer.merge(Migration.layer, Doctor.layer).pipe(
    Layer.provideMerge(AgentDir.layerWith(options.agentDir)),
    Layer.provideMerge(world)
  )
  // Everything built on this AgentDir (WorkRuns, ExtensionStorage) comes after the start-up migration.
  const agentDir = Layer.effect(
    AgentDir,
    Effect.gen(function*() {
      const resolved = yield* AgentDir
      if (options.migrate !== false) {
        const { run } = yield* Migration
        for (let pass = 0; pass < MAX_STARTUP_MIGRATION_PASSES; pass++) {
          const report = yield* run()
          if (!report.partial) break
        }
      }
      return resolved
    })
  ).pipe(Layer.provideMerge(migration))
  // The tunables are the stack's StorageConfig above; WorkRuns' options are only its own, so it never judges
  // leases with another TTL than the doctor and the inventory.
  const usage = UsageHistory.layerWith(
    options.usageHistory === undefined || options.usageHistory === false ? { recording: false } : options.usageHistory
  )
  const workRuns = WorkRuns.layerWith(options.workRuns).pipe(Layer.provideMerge(usage), Layer.provideMerge(agentDir))
  // The tier service of the web host's extensions serves the agent's extensions too (one tier API); status is
  // the inventory and the doctor in one call (its make only gathers them).
  const services = Layer.mergeAll(ExtensionStorage.layer, Status.layer).pipe(Layer.provideMerge(optionalServices))
  return services.pipe(Layer.provideMerge(workRuns), Layer.provideMerge(config))
}
