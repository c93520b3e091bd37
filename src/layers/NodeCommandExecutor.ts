/**
 * `@effect/platform`'s CommandExecutor on Node, for the config history's git runner. Its only use of the
 * platform FileSystem is checking a command's working directory exists; our own FileSystem port stays the one
 * every program uses for data. Subpath imports keep start-up quick.
 */
import type * as CommandExecutor from "@effect/platform/CommandExecutor"
import * as NodeCommandExecutor from "@effect/platform-node/NodeCommandExecutor"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Layer from "effect/Layer"

export const NodeCommandExecutorLive: Layer.Layer<CommandExecutor.CommandExecutor> = NodeCommandExecutor.layer.pipe(
  Layer.provide(NodeFileSystem.layer)
)
