/**
 * The consumers' test entry (docs/testing.md "Testing your code against the simulated world"): the simulated world with only its driver API in the public type, and
 * `MemoryWorld.layer(world)`, one simulated process (FileSystem + Host + ProcessRunner) to put under `Storage.layer`:
 *
 *   const world = MemoryWorld.make()
 *   const StorageTest = Storage.layer(MemoryWorld.layer(world), { agentDir: "/home/user/.pi/agent" })
 *
 * The world's internal mutators (inode allocation, path resolution, crash bookkeeping the Memory layers
 * use) stay out of this type. Held runs heartbeat on the live clock by default, so `TestClock.adjust` over a
 * month with a run held is one step, not one per 5-minute beat; `Layer.provide(HeartbeatClock.layerCurrentClock)`
 * makes them beat on the TestClock instead (see `HeartbeatClock`).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ProcessFailed } from "../domain/Errors.js"
import type { FileSystem } from "../services/FileSystem.js"
import type { Host } from "../services/Host.js"
import { ProcessRunner } from "../services/ProcessRunner.js"
import { layerMemory } from "./MemoryFileSystem.js"
import { MemoryWorld as World, type MemoryWorldOptions } from "./MemoryWorld.js"

/** Tells the error of a crashed process's calls from any other, for a test that lets one process crash and goes on. */
export { FAULT_STEPS, isSimulatedCrash } from "./MemoryWorld.js"
export type { CrashScope, FaultHandle, FaultSpec, FaultStep, FixtureOptions, JournalEntry, MemoryWorldOptions, TreeEntry } from "./MemoryWorld.js"

/** The driver API of the simulated world (documented at the top of `MemoryWorld.ts`). */
export type MemoryWorld = Pick<
  World,
  | "mount"
  | "injectFault"
  | "clearFaults"
  | "crashAfter"
  | "recover"
  | "crashed"
  | "mutationCount"
  | "journal"
  | "clearJournal"
  | "chown"
  | "tree"
  | "readFixture"
  | "readFixtureText"
  | "writeFixture"
  | "mkdirFixture"
  | "symlinkFixture"
  | "addHost"
  | "spawn"
  | "kill"
  | "reboot"
  | "bootId"
  | "machineId"
  | "bootedAt"
  | "startTimeOf"
  | "processes"
>

/** One simulated process of a world. */
export interface MemoryProcessOptions {
  /** Default `memory-host`. */
  readonly hostname?: string
  /** The world machine it runs on (pid table, boot, machine id); default `hostname`. */
  readonly machine?: string
  /** Adopted when alive on its host, spawned otherwise; a fresh pid when absent. */
  readonly pid?: number
  /** Default 1000. */
  readonly uid?: number
  readonly home?: string
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
}

const worlds = new WeakSet<MemoryWorld>()

/** A simulated process runs no real program: one would see the real disk, not the world. */
const noPrograms = Layer.succeed(ProcessRunner, {
  run: (call) => Effect.fail(new ProcessFailed({ command: call.command, reason: "Spawn", detail: "the simulated world starts no programs" }))
})

export const MemoryWorld = {
  /** A fresh world: one root directory, no hosts yet. */
  make: (options?: MemoryWorldOptions): MemoryWorld => {
    const world = World.make(options)
    worlds.add(world)
    return world
  },
  /**
   * One simulated process over `world` (several calls: several processes sharing it), for `Storage.layer`.
   * It starts no programs: the config history's git calls fail with `ProcessFailed` (reason `Spawn`).
   */
  layer: (world: MemoryWorld, process: MemoryProcessOptions = {}): Layer.Layer<FileSystem | Host | ProcessRunner> => {
    // Only worlds from `make` (the type is a view of the full world the layers need).
    if (!worlds.has(world) && !(world instanceof World)) throw new TypeError("MemoryWorld.layer: pass a world from MemoryWorld.make()")
    return Layer.merge(layerMemory({ world: world as World, ...process }), noPrograms)
  }
}
