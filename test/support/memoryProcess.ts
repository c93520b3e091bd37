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
import { StorageConfig, type StorageConfigInput } from "../../src/services/StorageConfig.js"
import { TierStorage } from "../../src/services/TierStorage.js"
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
    /** The world machine it runs on (default: its host name): two machines may share a host name. */
    readonly machine?: string
    /** How far its wall clock is off the world's (ms, + ahead): see `spawnProcess`'s `run`. */
    readonly clockSkewMs?: number
    readonly pid?: number
    readonly uid?: number
    readonly workRuns?: WorkRunsOptions
    /** The process's tunables (`busyAttempts`, `remoteLeaseTtlMs` …); `busyDelayMs` is 0 unless given. */
    readonly config?: StorageConfigInput
    /** `false`: held runs never heartbeat (a host that stopped beating while its leases stay on disk). */
    readonly heartbeats?: boolean
    /** Wrap the process's FileSystem (to act at an exact point of a protocol, say). */
    readonly wrapFs?: (fs: FileSystem["Type"]) => FileSystem["Type"]
  } = {}
) => {
  const host = MemoryHost.make(world, {
    hostname: options.hostname ?? "h1",
    ...(options.machine === undefined ? {} : { machine: options.machine }),
    ...(options.clockSkewMs === undefined ? {} : { clockSkewMs: options.clockSkewMs }),
    ...(options.pid === undefined ? {} : { pid: options.pid }),
    ...(options.uid === undefined ? {} : { uid: options.uid })
  })
  const memoryFs = MemoryFs.make(world, {
    uid: host.uid ?? 1000,
    hostname: options.machine ?? host.hostname,
    pid: host.pid,
    ...(options.clockSkewMs === undefined ? {} : { clockSkewMs: options.clockSkewMs })
  })
  const fs = options.wrapFs === undefined ? memoryFs : options.wrapFs(memoryFs)
  const base = Layer.merge(Layer.succeed(FileSystem, fs), Layer.succeed(Host, host))
  const agentDir = AgentDir.layerWith(AGENT_DIR).pipe(Layer.provide(base))
  const config = StorageConfig.layerWith({ busyDelayMs: 0, ...options.config })
  const workRuns = WorkRuns.layerWith(options.workRuns).pipe(
    Layer.provide(Layer.mergeAll(base, agentDir, config, options.heartbeats === false ? silentHeartbeats : HeartbeatClock.layerCurrentClock))
  )
  const extensions = ExtensionStorage.layer.pipe(Layer.provide(Layer.mergeAll(agentDir, workRuns, TierStorage.layer.pipe(Layer.provide(base)))))
  return Layer.mergeAll(base, agentDir, workRuns, extensions)
}

/**
 * Build a simulated process in the current scope; returns its services, and `run`, which runs an effect on
 * the process's own wall clock (the caller's clock shifted by `clockSkewMs`; what it forks, a held run's
 * heartbeat say, keeps that clock). Its files are stamped on the world's clock whatever its skew.
 */
export const spawnProcess = (world: MemoryWorld, options: Parameters<typeof processLayer>[1] = {}) =>
  Effect.gen(function*() {
    const ctx = yield* Layer.build(processLayer(world, options))
    const clock = MemoryHost.skewedClock(yield* Effect.clock, options.clockSkewMs ?? 0)
    return {
      workRuns: Context.get(ctx, WorkRuns),
      fs: Context.get(ctx, FileSystem),
      host: Context.get(ctx, Host),
      paths: Context.get(ctx, AgentDir).paths,
      extensions: Context.get(ctx, ExtensionStorage),
      run: <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => Effect.withClock(effect, clock)
    }
  })
