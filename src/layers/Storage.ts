/**
 * The whole service stack over any FileSystem + Host world, built once at an edge. Resolving the agent dir
 * runs the layout migration first (MG1: before any store is read) unless `migrate: false`.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AgentDir } from "../services/AgentDir.js"
import { Doctor } from "../services/Doctor.js"
import { ExtensionStorage } from "../services/ExtensionStorage.js"
import type { FileSystem } from "../services/FileSystem.js"
import type { Host } from "../services/Host.js"
import { Migration } from "../services/Migration.js"
import { StorageConfig, type StorageConfigInput } from "../services/StorageConfig.js"
import { TierStorage } from "../services/TierStorage.js"
import { UsageHistory, type UsageHistoryOptions, UsageRecorder } from "../services/UsageHistory.js"
import { WorkRuns, type WorkRunsOptions } from "../services/WorkRuns.js"
import * as NodeFileSystem from "./NodeFileSystem.js"
import * as NodeHost from "./NodeHost.js"

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
   * The usage history the dashboard's growth chart reads (README "Dashboard"): given, the stack's writers
   * (prune, background prune, state snapshot, config snapshot) append to it; absent, it is only read.
   * `NodeStorageLive` gives `{}` unless this is `false`.
   */
  readonly usageHistory?: UsageHistoryOptions | false | undefined
}

export type StorageServices =
  | StorageConfig | FileSystem | Host | AgentDir | Migration | Doctor | WorkRuns | TierStorage | ExtensionStorage | UsageHistory | UsageRecorder
/** Start-up migration passes: each call handles a bounded number of root entries and says when it was cut. */
const MAX_STARTUP_MIGRATION_PASSES = 16

export const storageLayer = <E>(
  world: Layer.Layer<FileSystem | Host, E>,
  options: StorageOptions = {}
): Layer.Layer<StorageServices, E> => {
  // One StorageConfig for every layer below, the world's included (its walker and remover threads).
  const config = StorageConfig.layer(options.config)
  const migration = Layer.merge(Migration.layer, Doctor.layer).pipe(
    Layer.provideMerge(AgentDir.layer(options.agentDir)),
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
  const usage = UsageHistory.layer(options.usageHistory === undefined || options.usageHistory === false ? { recording: false } : options.usageHistory)
  const workRuns = WorkRuns.layer(options.workRuns).pipe(Layer.provideMerge(usage), Layer.provideMerge(agentDir))
  // The tier service of the web host's extensions serves the agent's extensions too (one tier API).
  const tiers = TierStorage.layer.pipe(Layer.provideMerge(workRuns))
  return ExtensionStorage.layer.pipe(Layer.provideMerge(tiers), Layer.provideMerge(config))
}

/** The Node FileSystem and Host; the FileSystem reads its walker and remover threads from `StorageConfig`. */
export const NodeWorld: Layer.Layer<FileSystem | Host> = Layer.merge(NodeFileSystem.layer, NodeHost.layer)

/**
 * Production: the Node world with every service, migration first, `StorageConfig` filled from the
 * environment (`StorageConfig.layerFromEnv`) under `options.config`. The Promise facade and the CLI use it.
 */
export const NodeStorageLive = (options: StorageOptions = {}): Layer.Layer<StorageServices> =>
  storageLayer(NodeWorld, { ...options, usageHistory: options.usageHistory ?? {} }).pipe(Layer.provide(StorageConfig.layerFromEnv))
