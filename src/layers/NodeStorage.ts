/**
 * Production: the Node world with every service, migration first, `StorageConfig` filled from the
 * environment (`StorageConfig.layerFromEnv`) under `options.config`. The Promise facade and the CLI use it.
 * Build it once and keep it in a constant (docs/work-runs.md "Effect callers"): each build is a stack of its own.
 */
import * as Layer from "effect/Layer"
import { StorageConfig } from "../services/StorageConfig.js"
import * as NodeWorld from "./NodeWorld.js"
import * as Storage from "./Storage.js"

export const layerWith = (options: Storage.StorageOptions): Layer.Layer<Storage.StorageServices> =>
  Storage.layer(NodeWorld.layer, { ...options, usageHistory: options.usageHistory ?? {} }).pipe(Layer.provide(StorageConfig.layerFromEnv))

/** The default agent dir (`$PI_ADAPTATIVE_CODING_AGENT_DIR`, else `~/.pi/agent`), migration first. */
export const layer: Layer.Layer<Storage.StorageServices> = layerWith({})
