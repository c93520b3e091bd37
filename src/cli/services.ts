/**
 * The CLI's one layer stack, composed as `src/promise.ts` composes the store: Node ports, the resolved agent
 * dir, and the programs. Loaded lazily by the command handlers, so `--help` and usage errors never pay for
 * it. Building it does no I/O: `status` on a missing agent dir creates nothing.
 */
import * as Layer from "effect/Layer"
import type { RetentionPolicy } from "../domain/Retention.js"
import { NodeFileSystemLive } from "../layers/NodeFileSystem.js"
import { NodeHostLive } from "../layers/NodeHost.js"
import { AgentDir } from "../services/AgentDir.js"
import { Doctor } from "../services/Doctor.js"
import { Inventory } from "../services/Inventory.js"
import { Migration } from "../services/Migration.js"
import { WorkRuns } from "../services/WorkRuns.js"

export interface StackOptions {
  readonly agentDir: string | undefined
  /** Ceiling for prune policies given on the command line (see `prunePolicy`). */
  readonly retentionCeiling?: RetentionPolicy
}

export const cliLayer = (options: StackOptions) => {
  const base = Layer.mergeAll(NodeFileSystemLive, NodeHostLive)
  const agentDir = AgentDir.layer(options.agentDir).pipe(Layer.provide(NodeHostLive))
  const withDir = Layer.merge(base, agentDir)
  const workRuns = WorkRuns.layer(options.retentionCeiling ? { retentionCeiling: options.retentionCeiling } : {}).pipe(Layer.provide(withDir))
  return Layer.mergeAll(
    withDir,
    workRuns,
    Inventory.layer.pipe(Layer.provide(withDir)),
    Doctor.layer.pipe(Layer.provide(base)),
    Migration.layer.pipe(Layer.provide(base))
  )
}

export type CliServices = Layer.Layer.Success<ReturnType<typeof cliLayer>>

export { AgentDir, Doctor, Inventory, Migration, WorkRuns }
