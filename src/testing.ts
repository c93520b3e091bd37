/**
 * `pi-agent-storage/testing`: a simulated `@effect/platform` FileSystem, with fault injection and crash
 * points, over the library's simulated world (docs/testing.md "Testing your code against the simulated world").
 *
 * A subpath of its own because it imports `@effect/platform` (an optional peer dependency): the root entry
 * must load with nothing but `effect` installed.
 *
 *   const world = MemoryWorld.make()
 *   const proc = { hostname: "ci", pid: 4242 }
 *   const layer = Layer.mergeAll(
 *     Storage.layer(MemoryWorld.layer(world, proc), { agentDir: "/home/user/.pi/agent" }),
 *     platformLayer(world, proc)   // FileSystem.FileSystem + Path.Path of the same process
 *   )
 */
import type * as PlatformFileSystem from "@effect/platform/FileSystem"
import type * as PlatformPath from "@effect/platform/Path"
import type * as Layer from "effect/Layer"
import * as MemoryPlatform from "./layers/MemoryPlatformFileSystem.js"
import type { MemoryWorld } from "./layers/MemoryTesting.js"
import { MemoryWorld as World } from "./layers/MemoryWorld.js"

export { FAULT_STEPS, isSimulatedCrash, MemoryWorld } from "./layers/MemoryTesting.js"
export type { MemoryProcessOptions } from "./layers/MemoryTesting.js"
export type { CrashScope, FaultHandle, FaultSpec, FaultStep, JournalEntry, TreeEntry } from "./layers/MemoryWorld.js"
export { PLATFORM_OP_PREFIX, platformReasonOfErrno } from "./layers/MemoryPlatformFileSystem.js"
export type { PlatformProcessOptions } from "./layers/MemoryPlatformFileSystem.js"

/**
 * `@effect/platform`'s `FileSystem.FileSystem` and `Path.Path` as one simulated process of `world` (a world
 * from `MemoryWorld.make()`): Node's platform semantics, the world's faults (ops `platform:<method>`), crash
 * points and journal. Pass the `{ hostname, pid }` given to `MemoryWorld.layer` to be the same process.
 */
export const platformLayer = (
  world: MemoryWorld,
  options?: MemoryPlatform.PlatformProcessOptions
): Layer.Layer<PlatformFileSystem.FileSystem | PlatformPath.Path> => {
  if (!(world instanceof World)) throw new TypeError("platformLayer: pass a world from MemoryWorld.make()")
  return MemoryPlatform.layer(world, options)
}
