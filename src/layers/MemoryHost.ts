/**
 * The Host port of one simulated process in a `MemoryWorld`. Building it starts the process on its host (or
 * adopts the pid when it is already alive there). Pid questions are answered from the process's own host
 * table only: the same pid number on another host is a different, unrelated process.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Context from "effect/Context"
import { Host } from "../services/Host.js"
import type { MemoryWorld } from "./MemoryWorld.js"

export interface MemoryHostOptions {
  readonly hostname: string
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
  world.addHost(hostname)
  const pid = options.pid !== undefined && world.startTimeOf(hostname, options.pid) !== null
    ? options.pid
    : world.spawn(hostname, options.pid === undefined ? undefined : { pid: options.pid })
  const env = options.env ?? {}
  return {
    hostname,
    bootId: world.bootId(hostname),
    pid,
    selfStartTime: world.startTimeOf(hostname, pid),
    uid: options.uid ?? 1000,
    homeDir: options.home ?? "/home/user",
    cwd: options.cwd ?? "/",
    env: (name) => (Object.prototype.hasOwnProperty.call(env, name) ? env[name] : undefined),
    processStartTime: (other) => Effect.sync(() => world.startTimeOf(hostname, other)),
    pidExists: (other) => Effect.sync(() => world.startTimeOf(hostname, other) !== null)
  }
}

export const layer = (world: MemoryWorld, options: MemoryHostOptions): Layer.Layer<Host> =>
  Layer.sync(Host, () => make(world, options))
