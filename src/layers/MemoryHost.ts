/**
 * The Host port of one simulated process in a `MemoryWorld`. Building it starts the process on its machine (or
 * adopts the pid when it is already alive there). Pid questions are answered from the process's own machine
 * table only: the same pid number on another machine is a different, unrelated process.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Context from "effect/Context"
import { Host } from "../services/Host.js"
import type { MemoryWorld } from "./MemoryWorld.js"

export interface MemoryHostOptions {
  readonly hostname: string
  /**
   * The world machine the process runs on (its pid table, boot, machine id); default `hostname`. Two
   * machines may report one host name.
   */
  readonly machine?: string
  /**
   * How far this process's clock is off the world's (ms, + ahead); default 0: its uptime is read against the
   * world's clock. Its effects run on `skewedClock(clock, skew)` (`Effect.withClock`), and its FileSystem is
   * made with the same `clockSkewMs`, so the files it writes are stamped on the world's clock.
   */
  readonly clockSkewMs?: number
  /** Adopted when alive on the host, spawned with this number otherwise; a fresh pid when absent. */
  readonly pid?: number
  /** Default 1000. */
  readonly uid?: number
  /** Default "/home/user". */
  readonly home?: string
  /** Default "/". */
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
}

export const make = (world: MemoryWorld, options: MemoryHostOptions): Context.Tag.Service<Host> => {
  const hostname = options.hostname
  const machine = options.machine ?? hostname
  const skew = options.clockSkewMs ?? 0
  world.addHost(machine)
  const pid = options.pid !== undefined && world.startTimeOf(machine, options.pid) !== null
    ? options.pid
    : world.spawn(machine, options.pid === undefined ? undefined : { pid: options.pid })
  const env = options.env ?? {}
  return {
    hostname,
    bootId: world.bootId(machine),
    machineId: world.machineId(machine),
    uptimeMs: Effect.map(Clock.currentTimeMillis, (now) => {
      const bootedAt = world.bootedAt(machine)
      return bootedAt === null ? null : now - skew - bootedAt
    }),
    pid,
    selfStartTime: world.startTimeOf(machine, pid),
    uid: options.uid ?? 1000,
    homeDir: options.home ?? "/home/user",
    cwd: options.cwd ?? "/",
    env: (name) => (Object.prototype.hasOwnProperty.call(env, name) ? env[name] : undefined),
    processStartTime: (other) => Effect.sync(() => world.startTimeOf(machine, other)),
    pidExists: (other) => Effect.sync(() => world.startTimeOf(machine, other) !== null)
  }
}

export const layer = (world: MemoryWorld, options: MemoryHostOptions): Layer.Layer<Host> =>
  Layer.sync(Host, () => make(world, options))

/** `base` running `skewMs` ms ahead (behind when negative); its sleeps are `base`'s. */
export const skewedClock = (base: Clock.Clock, skewMs: number): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + skewMs,
  unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + BigInt(Math.round(skewMs * 1e6)),
  currentTimeMillis: Effect.map(base.currentTimeMillis, (t) => t + skewMs),
  currentTimeNanos: Effect.map(base.currentTimeNanos, (t) => t + BigInt(Math.round(skewMs * 1e6))),
  sleep: (d) => base.sleep(d)
})
