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
import { WorkRuns, type WorkRunsOptions } from "../services/WorkRuns.js"
import { NodeFileSystemLive } from "./NodeFileSystem.js"
import { NodeHostLive } from "./NodeHost.js"

export interface StorageOptions {
  /** Wins over `$PI_ADAPTATIVE_CODING_AGENT_DIR` and `~/.pi/agent`. */
  readonly agentDir?: string | undefined
  /** Run the layout migration (`Migration.run`) before anything reads the agent dir (default true). */
  readonly migrate?: boolean | undefined
  readonly workRuns?: WorkRunsOptions | undefined
}

export type StorageServices = FileSystem | Host | AgentDir | Migration | Doctor | WorkRuns | ExtensionStorage

/** Start-up migration passes: each call handles a bounded number of root entries and says when it was cut. */
const MAX_STARTUP_MIGRATION_PASSES = 16

export const storageLayer = <E>(
  world: Layer.Layer<FileSystem | Host, E>,
  options: StorageOptions = {}
): Layer.Layer<StorageServices, E> => {
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
  const workRuns = WorkRuns.layer(options.workRuns).pipe(Layer.provideMerge(agentDir))
  return ExtensionStorage.layer.pipe(Layer.provideMerge(workRuns))
}

export const NodeWorld: Layer.Layer<FileSystem | Host> = Layer.merge(NodeFileSystemLive, NodeHostLive)

/** Production: the Node world with every service, migration first. */
export const NodeStorageLive = (options: StorageOptions = {}): Layer.Layer<StorageServices> => storageLayer(NodeWorld, options)
