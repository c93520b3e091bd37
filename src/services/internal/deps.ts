/**
 * The ports a program captured when its layer was built, passed explicitly to internal helpers so that every
 * public method keeps `R = never`.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import type { LeaseFacts } from "../../domain/Formats.js"
import { type LeaseVerdict, leaseVerdict, needsFileClock, needsObservation, needsUptime } from "../../domain/Liveness.js"
import { type FileInfo, FileSystem } from "../FileSystem.js"
import { Host } from "../Host.js"
import { StorageConfig } from "../StorageConfig.js"
import { type FsClock, makeFsClock, type ProbeSpot, readerFsClock } from "./fsClock.js"

export interface Deps {
  readonly fs: FileSystem["Type"]
  readonly host: Host["Type"]
  /** From `StorageConfig`: every program of a stack judges leases and markers with the same bounds. */
  readonly remoteLeaseTtlMs: number
  /** How long an unreadable marker or lease is held (`StorageConfig.staleUnreadableMs`). */
  readonly staleUnreadableMs: number
  /**
   * "Now" on a file system's own clock, for judging holders on other hosts (`fsClock.ts`). Absent: a probing
   * clock made for these ports on first use.
   */
  readonly fsClock?: FsClock
}

const madeClocks = new WeakMap<Deps, FsClock>()

/** The deps' file-system clock (a probing one, made once per deps object when none was given). */
export const fsClockOf = (deps: Deps): FsClock => {
  if (deps.fsClock !== undefined) return deps.fsClock
  let clock = madeClocks.get(deps)
  if (clock === undefined) {
    clock = makeFsClock(deps.fs, deps.host)
    madeClocks.set(deps, clock)
  }
  return clock
}

/** The ports and the liveness bounds of `StorageConfig` (its defaults when none is provided), from the context. */
export const depsFromContext: Effect.Effect<Deps, never, FileSystem | Host> = Effect.map(
  Effect.all([FileSystem, Host, StorageConfig]),
  ([fs, host, config]): Deps => ({
    fs,
    host,
    remoteLeaseTtlMs: config.remoteLeaseTtlMs,
    staleUnreadableMs: config.staleUnreadableMs,
    fsClock: makeFsClock(fs, host)
  })
)

/**
 * `depsFromContext` for a reader that writes nothing (DR1: the doctor, the inventory): it probes no file
 * system's clock and reads its own instead, so what it says of another host's holder is advisory.
 */
export const readOnlyDepsFromContext: Effect.Effect<Deps, never, FileSystem | Host> = Effect.map(
  depsFromContext,
  (deps): Deps => ({ ...deps, fsClock: readerFsClock })
)

/** The record judged: its path, its lstat when the caller has one, and where a clock probe may be made. */
export interface JudgedFile {
  readonly path: string
  /** `undefined`: lstat'ed here when the verdict needs its mtime; `null`: unknown (an unreadable record is then held). */
  readonly info?: FileInfo | null
  /** Paths a probe of the file system's clock may be created at (exclusively, then removed), in order. */
  readonly probes?: ReadonlyArray<ProbeSpot>
}

/**
 * WR4: observe what the pure verdict needs (pid facts on this host; the record's mtime and now on its file
 * system's clock for holders elsewhere; this host's uptime for the boot shortcut), then decide. `file`
 * `null`: the record's mtime is unknown (an unreadable record is then held whatever its age).
 */
export const judge = (
  deps: Deps,
  lease: LeaseFacts | { readonly unreadable: string },
  file: JudgedFile | null
): Effect.Effect<LeaseVerdict> =>
  Effect.gen(function*() {
    const self = { hostname: deps.host.hostname, bootId: deps.host.bootId, machineId: deps.host.machineId ?? null }
    let observation: { exists: boolean; startTime: number | null } | null = null
    if (!("unreadable" in lease) && needsObservation(lease, self)) {
      const exists = yield* deps.host.pidExists(lease.pid)
      const startTime = exists ? yield* deps.host.processStartTime(lease.pid) : null
      observation = { exists, startTime }
    }
    let fileMtimeMs: number | null = null
    let fsNowMs: number | null = null
    let fsNowEstimated = false
    let uptimeMs: number | null = null
    if (file !== null && needsFileClock(lease, self, observation)) {
      const info = file.info !== undefined ? file.info : Option.getOrNull(yield* Effect.option(deps.fs.lstat(file.path)))
      if (info !== null) {
        fileMtimeMs = info.mtimeMs
        const now = yield* fsClockOf(deps).now(info.dev, file.probes ?? [])
        fsNowMs = now?.ms ?? null
        fsNowEstimated = now?.source === "reader-clock"
        if (needsUptime(lease, self) && deps.host.uptimeMs !== undefined) uptimeMs = yield* deps.host.uptimeMs
      }
    }
    return leaseVerdict({
      lease,
      self,
      observation,
      remoteLeaseTtlMs: deps.remoteLeaseTtlMs,
      fileMtimeMs,
      fsNowMs,
      fsNowEstimated,
      uptimeMs,
      staleUnreadableMs: deps.staleUnreadableMs
    })
  })

/** Host-derived identity for a lease or marker written by this process. */
export const selfIdentity = (deps: Pick<Deps, "host">) => ({
  host: deps.host.hostname,
  ...(deps.host.machineId != null ? { machineId: deps.host.machineId } : {}),
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
