/**
 * The CLI's one layer stack: the library's `NodeStorage` stack (every service, the Inventory among them). Loaded lazily by the command handlers, so `--help` and usage errors never pay for
 * it. Building it does no I/O: `status` on a missing agent dir creates nothing.
 */
import * as Layer from "effect/Layer"
import type { RetentionPolicy } from "../domain/Retention.js"
import { warningLoggerLayer } from "../facade/warnings.js"
import { warningLine } from "./problem.js"
import { writeErr } from "./streams.js"
import * as NodeStorage from "../layers/NodeStorage.js"
import { AgentDir } from "../services/AgentDir.js"
import { Doctor } from "../services/Doctor.js"
import { FileSystem } from "../services/FileSystem.js"
import { Inventory } from "../services/Inventory.js"
import { Migration } from "../services/Migration.js"
import { Status } from "../services/Status.js"
import { StorageConfig } from "../services/StorageConfig.js"
import { UserProfile } from "../services/UserProfile.js"
import { WorkRuns } from "../services/WorkRuns.js"

export interface StackOptions {
  readonly agentDir: string | undefined
  /** `--json` was given: warnings are JSON lines on stderr too (problem.ts). */
  readonly json?: boolean | undefined
  /** Ceiling for prune policies given on the command line (see `prunePolicy`). */
  readonly retentionCeiling?: RetentionPolicy
}

/**
 * The library's own stack, without the start-up migration: `status`, `doctor` and `migrate --dry-run`
 * must not move anything; `pi-storage migrate` is the explicit way to run it.
 */
export const cliLayer = (options: StackOptions) =>
  NodeStorage.layerWith({
    agentDir: options.agentDir,
    migrate: false,
    config: { retentionCeiling: options.retentionCeiling }
  }).pipe(
    // Provided, not only merged: what the stack logs while it is built (a malformed PI_STORAGE_* variable)
    // goes to stderr too, never to stdout where `--json` output goes.
    Layer.provideMerge(stderrWarnings(options.json === true))
  )

/**
 * Warnings the library logs (a failing heartbeat, a refused background prune …) as lines on stderr:
 * `pi-storage: warning: …`, or with `--json` one JSON object each (`{ "_tag", "message", "level": "warning" }`).
 */
export const stderrWarnings = (json: boolean) =>
  warningLoggerLayer(
    (w) => void writeErr(warningLine(json, w._tag, w.message)),
    (message) => void writeErr(warningLine(json, "Warning", message))
  )

export type CliServices = Layer.Layer.Success<ReturnType<typeof cliLayer>>

export { AgentDir, Doctor, FileSystem, Inventory, Migration, Status, StorageConfig, UserProfile, WorkRuns }
