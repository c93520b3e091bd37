/**
 * Test support: simulated processes sharing one MemoryWorld, each with its own Host, FileSystem view and
 * WorkRuns service built in the caller's scope. Held runs heartbeat on the caller's clock (the TestClock under
 * `it.effect`: `HeartbeatClock.layerCurrentClock`), so simulated remote hosts see beats as simulated time passes.
 */
import { Clock, Context, Effect, Layer } from "effect"
import * as MemoryFs from "../../src/layers/MemoryFileSystem.js"
import * as MemoryHost from "../../src/layers/MemoryHost.js"
import type { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { ExtensionStorage } from "../../src/services/ExtensionStorage.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { HeartbeatClock } from "../../src/services/HeartbeatClock.js"
import { Host } from "../../src/services/Host.js"
import { WorkRuns, type WorkRunsOptions } from "../../src/services/WorkRuns.js"

export const AGENT_DIR = "/home/user/.pi/agent"

/** The caller's clock, except that a heartbeat's sleep never ends. */
const silentHeartbeats = Layer.effect(
  HeartbeatClock,
  Effect.map(Effect.clock, (c): Clock.Clock => ({
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => c.unsafeCurrentTimeMillis(),
    unsafeCurrentTimeNanos: () => c.unsafeCurrentTimeNanos(),
    currentTimeMillis: c.currentTimeMillis,
    currentTimeNanos: c.currentTimeNanos,
    sleep: () => Effect.never
  }))
)

export const processLayer = (
  world: MemoryWorld,
  options: {
    readonly hostname?: string
    readonly pid?: number
    readonly uid?: number
    readonly workRuns?: WorkRunsOptions
    /** `false`: held runs never heartbeat (a host that stopped beating while its leases stay on disk). */
    readonly heartbeats?: boolean
    /** Wrap the process's FileSystem (to act at an exact point of a protocol, say). */
    readonly wrapFs?: (fs: FileSystem["Type"]) => FileSystem["Type"]
  } = {}
) => {
  const host = MemoryHost.make(world, {
    hostname: options.hostname ?? "h1",
    ...(options.pid === undefined ? {} : { pid: options.pid }),
    ...(options.uid === undefined ? {} : { uid: options.uid })
  })
  const memoryFs = MemoryFs.make(world, { uid: host.uid ?? 1000, hostname: host.hostname, pid: host.pid })
  const fs = options.wrapFs === undefined ? memoryFs : options.wrapFs(memoryFs)
  const base = Layer.merge(Layer.succeed(FileSystem, fs), Layer.succeed(Host, host))
  const agentDir = AgentDir.layer(AGENT_DIR).pipe(Layer.provide(base))
  const workRuns = WorkRuns.layer({ busyDelayMs: 0, ...options.workRuns }).pipe(
    Layer.provide(Layer.mergeAll(base, agentDir, options.heartbeats === false ? silentHeartbeats : HeartbeatClock.layerCurrentClock))
  )
  const extensions = ExtensionStorage.layer.pipe(Layer.provide(Layer.merge(agentDir, workRuns)))
  return Layer.mergeAll(base, agentDir, workRuns, extensions)
}

/** Build a simulated process in the current scope; returns its services. */
export const spawnProcess = (world: MemoryWorld, options: Parameters<typeof processLayer>[1] = {}) =>
  Effect.map(Layer.build(processLayer(world, options)), (ctx) => ({
    workRuns: Context.get(ctx, WorkRuns),
    fs: Context.get(ctx, FileSystem),
    host: Context.get(ctx, Host),
    paths: Context.get(ctx, AgentDir).paths,
    extensions: Context.get(ctx, ExtensionStorage)
  }))
