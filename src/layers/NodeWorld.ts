/**
 * The Node world: the FileSystem, Host and ProcessRunner ports on `node:fs`, the process and
 * `node:child_process`, for `Storage.layer(NodeWorld.layer)`; the simulated one is `MemoryWorld.layer(world)`.
 * The FileSystem reads its walker and remover threads from `StorageConfig`.
 */
import * as Layer from "effect/Layer"
import type { StorageWorld } from "./Storage.js"
import * as NodeFileSystem from "./NodeFileSystem.js"
import * as NodeHost from "./NodeHost.js"
import * as NodeProcessRunner from "./NodeProcessRunner.js"

export const layer: Layer.Layer<StorageWorld> = Layer.mergeAll(NodeFileSystem.layer, NodeHost.layer, NodeProcessRunner.layer)
