/**
 * The config history for Promise callers (`storage.configHistory()`): the same methods as the Effect service,
 * on a runtime of its own built at the first call (creating the handle does no I/O), disposed with the store.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { AgentPaths } from "../domain/AgentPaths.js"
import * as NodeWorld from "../layers/NodeWorld.js"
import { StorageConfig, type StorageSettings } from "../services/StorageConfig.js"
import { AgentDir } from "../services/AgentDir.js"
import {
  ConfigHistory,
  type ConfigHistoryOptions,
  type DiffResult,
  type HistoryStatus,
  type LogEntry,
  type RollbackResult,
  type SnapshotResult
} from "../services/ConfigHistory.js"
import { runTyped } from "./runtime.js"

export type { DiffResult, HistoryStatus, LogEntry, RollbackResult, SnapshotResult } from "../services/ConfigHistory.js"

export interface PromiseConfigHistory {
  snapshot(o?: { message?: string }): Promise<SnapshotResult>
  log(o?: { limit?: number }): Promise<ReadonlyArray<LogEntry>>
  diff(o?: { from?: string; to?: string }): Promise<DiffResult>
  rollback(revision: string): Promise<RollbackResult>
  /** Run `apply` under the crash sentinel; its own rejection is rethrown after the files are restored. */
  change<A>(message: string, apply: () => Promise<A>): Promise<A>
  status(): Promise<HistoryStatus>
}

export const makePromiseConfigHistory = (
  /** The store's agent dir and its `StorageConfig` (this runtime judges markers as the store does). */
  agent: { readonly path: string; readonly paths: AgentPaths; readonly config: StorageSettings },
  options: ConfigHistoryOptions,
  whileOpen: <A>(run: () => Promise<A>) => Promise<A>,
  onDispose: (dispose: () => Promise<void>) => void,
  /** The store's warning logger (`onWarning`), so this runtime's warnings reach the caller as the store's do. */
  warnings: Layer.Layer<never>
): PromiseConfigHistory => {
  let runtime: ManagedRuntime.ManagedRuntime<ConfigHistory, never> | undefined
  const get = () => {
    if (runtime === undefined) {
      const agentDir = Layer.succeed(AgentDir, { path: agent.path, given: agent.path, source: "option", paths: agent.paths })
      runtime = ManagedRuntime.make(ConfigHistory.layerWith(options).pipe(
        Layer.provide(Layer.merge(NodeWorld.layer, agentDir)),
        Layer.provide(Layer.succeed(StorageConfig, agent.config)),
        Layer.merge(warnings)
      ))
      const built = runtime
      onDispose(() => built.dispose())
    }
    return runtime
  }
  const call = <A, E>(use: (h: ConfigHistory["Type"]) => Effect.Effect<A, E>): Promise<A> =>
    whileOpen(() => runTyped(get(), Effect.flatMap(ConfigHistory, use)))
  return {
    snapshot: (o = {}) => call((h) => h.snapshot(o)),
    log: (o = {}) => call((h) => h.log(o)),
    diff: (o = {}) => call((h) => h.diff(o)),
    rollback: (revision) => call((h) => h.rollback(revision)),
    change: (message, apply) => call((h) => h.change(message, Effect.tryPromise({ try: apply, catch: (e) => e }))),
    status: () => call((h) => h.status())
  }
}
