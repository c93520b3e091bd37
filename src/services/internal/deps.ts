/**
 * The ports a program captured when its layer was built, passed explicitly to internal helpers so that every
 * public method keeps `R = never`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import type { LeaseFacts } from "../../domain/Formats.js"
import { type LeaseVerdict, leaseVerdict, needsObservation } from "../../domain/Liveness.js"
import { FileSystem } from "../FileSystem.js"
import { Host } from "../Host.js"
import { StorageConfig } from "../StorageConfig.js"

export interface Deps {
  readonly fs: FileSystem["Type"]
  readonly host: Host["Type"]
  /** From `StorageConfig`: every program of a stack judges leases and markers with the same bounds. */
  readonly remoteLeaseTtlMs: number
  /** How long an unreadable marker or lease is held (`StorageConfig.staleUnreadableMs`). */
  readonly staleUnreadableMs: number
}

/** The ports and the liveness bounds of `StorageConfig` (its defaults when none is provided), from the context. */
export const depsFromContext: Effect.Effect<Deps, never, FileSystem | Host> = Effect.map(
  Effect.all([FileSystem, Host, StorageConfig]),
  ([fs, host, config]): Deps => ({
    fs,
    host,
    remoteLeaseTtlMs: config.remoteLeaseTtlMs,
    staleUnreadableMs: config.staleUnreadableMs
  })
)

/**
 * WR4: observe what the pure verdict needs (pid facts on this host only), then decide. `fileMtimeMs` is the
 * record's own mtime, for the unreadable rule (`null` when unknown: an unreadable record is then held).
 */
export const judge = (
  deps: Deps,
  lease: LeaseFacts | { readonly unreadable: string },
  fileMtimeMs: number | null
): Effect.Effect<LeaseVerdict> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const self = { hostname: deps.host.hostname, bootId: deps.host.bootId }
    let observation: { exists: boolean; startTime: number | null } | null = null
    if (!("unreadable" in lease) && needsObservation(lease, self)) {
      const exists = yield* deps.host.pidExists(lease.pid)
      const startTime = exists ? yield* deps.host.processStartTime(lease.pid) : null
      observation = { exists, startTime }
    }
    return leaseVerdict({
      lease,
      self,
      observation,
      now,
      remoteLeaseTtlMs: deps.remoteLeaseTtlMs,
      fileMtimeMs,
      staleUnreadableMs: deps.staleUnreadableMs
    })
  })

/** Host-derived identity for a lease or marker written by this process. */
export const selfIdentity = (deps: Deps) => ({
  host: deps.host.hostname,
  ...(deps.host.bootId !== null ? { bootId: deps.host.bootId } : {}),
  pid: deps.host.pid,
  ...(deps.host.selfStartTime !== null ? { processStartedAt: deps.host.selfStartTime } : {})
})

/** A file-name-safe rendering of a host name (lease file names embed it). */
export const safeHostName = (hostname: string): string =>
  hostname.toLowerCase().replace(/[^a-z0-9.-]/g, "-").slice(0, 64) || "host"

/** Lowercase hex nonce from Effect's Random (deterministic under test seeds). */
export const nonce: Effect.Effect<string> = Effect.map(
  Random.nextIntBetween(0, 0x7fffffff),
  (n) => n.toString(16).padStart(8, "0")
)
