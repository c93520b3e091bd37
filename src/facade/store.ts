/**
 * What an opened store runs on, loaded by `openAgentStorage` on its first call rather than at import
 * (docs/install.md "Installing"): the whole Node stack (every service, the walkers, yaml, the platform's command executor)
 * costs an importer that never opens a store most of the facade's start-up. Everything here is imported
 * by promise.ts as a type only; the bundle puts this module's graph in a chunk of its own.
 */
export * as NodeStorage from "../layers/NodeStorage.js"
export { AgentDir } from "../services/AgentDir.js"
export { Doctor } from "../services/Doctor.js"
export { ExtensionStorage } from "../services/ExtensionStorage.js"
export { HeartbeatClock } from "../services/HeartbeatClock.js"
export { Migration } from "../services/Migration.js"
export { StateBackups } from "../services/StateBackups.js"
export { StorageConfig } from "../services/StorageConfig.js"
export { WorkRuns } from "../services/WorkRuns.js"
export { makePromiseConfigHistory } from "./configHistory.js"
export { promiseUserProfile } from "./userProfile.js"
