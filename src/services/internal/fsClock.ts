/**
 * "Now" on a file system's own clock (docs/safety.md "How runs stay safe": leases and liveness). A file's mtime is
 * stamped by whoever stores it (the kernel of a local disk, the server of an NFS mount), never by the client
 * that wrote it, so the age of a lease is its mtime against the mtime of a file this reader wrote there just
 * now: two hosts' wall clocks are never compared.
 *
 * A reading is kept per device and carried forward on this process's monotonic clock for `REPROBE_MS`; it
 * comes from any file this process has just created there (`observe`: the markers it takes) or, when none
 * is recent, from a probe: a file created exclusively at a path the caller names (a reclaim lock beside a
 * marker, the tenant's prune reclaim lock: names every reader of those directories already knows), lstat'ed,
 * and unlinked while it is still the file created.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import { TENANT_CLEANUP_DIR, TENANT_PRUNE_MARKER, TENANT_STAGING_DIR } from "../../domain/AgentPaths.js"
import { encodeJsonBytes } from "../../domain/Formats.js"
import { isReclaimLockName, reclaimLockPath } from "../../domain/MarkerFiles.js"
import { sameFile } from "../../domain/TierIdentity.js"
import type { FileInfo, FileSystem } from "../FileSystem.js"
import type { Host } from "../Host.js"
import { warn } from "./warn.js"

/**
 * A reading older than this (on the reader's monotonic clock) is taken again before it is used: carried
 * forward, it is exact unless the file system's clock is stepped meanwhile, so it is kept only briefly.
 */
export const REPROBE_MS = 5_000

/** The `purpose` of a probe file (a valid marker body, so a reader meeting one judges it as its holder's). */
export const CLOCK_PROBE_PURPOSE = "clock-probe"

/**
 * Where a probe may be created: an exact path (a marker's reclaim lock), or a directory in which a unique
 * `.clock-<pid>-<nonce>.reclaim` is made (a tenant's `.cleanup/`, where a dead reclaimer's lock is reclaimed by the
 * next prune and a run id never starts with a dot).
 */
export type ProbeSpot = string | { readonly dir: string }

/** The probe spot of a tenant: a unique reclaim-lock name in its `.cleanup/`. */
export const tenantProbe = (tenantDir: string): ProbeSpot => ({ dir: NodePath.join(tenantDir, TENANT_CLEANUP_DIR) })

/** The tenant holding a run (or a staged run) directory. */
const tenantOfRun = (runDir: string): string => {
  const parent = NodePath.dirname(runDir)
  return NodePath.basename(parent) === TENANT_STAGING_DIR ? NodePath.dirname(parent) : parent
}

/** Probe spots for the leases of the run at `runDir` (`<tenant>/<run>` or `<tenant>/.staging/<x>`). */
export const leaseProbes = (runDir: string): ReadonlyArray<ProbeSpot> => [tenantProbe(tenantOfRun(runDir))]

/**
 * Probe spots for a marker: in a tenant (its `.prune`, `.cleanup/<run>` and their reclaim locks), the
 * tenant's spot; elsewhere the marker's own reclaim lock (its directory already expects one).
 */
export const markerProbes = (path: string): ReadonlyArray<ProbeSpot> => {
  const dir = NodePath.dirname(path)
  const name = NodePath.basename(path)
  if (NodePath.basename(dir) === TENANT_CLEANUP_DIR) return [tenantProbe(NodePath.dirname(dir))]
  if (name === TENANT_PRUNE_MARKER || name === reclaimLockPath(TENANT_PRUNE_MARKER)) return [tenantProbe(dir)]
  return isReclaimLockName(name) ? [] : [reclaimLockPath(path)]
}

export interface FsNow {
  readonly ms: number
  /** `reader-clock`: this reader's own clock, from a reader that writes nothing (the doctor, the inventory). */
  readonly source: "probe" | "reader-clock"
}

export interface FsClock {
  /**
   * Now on the clock of device `dev`: a recent reading carried forward, else a probe at the first of `probes`
   * that can be created. `null` when none could (a reader then holds whatever needs it).
   */
  readonly now: (dev: number, probes: ReadonlyArray<ProbeSpot>) => Effect.Effect<FsNow | null>
  /** `info` is the lstat of a file this process has just created or written: its mtime is now on its device. */
  readonly observe: (info: FileInfo) => Effect.Effect<void>
}

interface Reading {
  readonly fsMs: number
  readonly monoNs: bigint
}

const elapsedMs = (from: bigint, to: bigint): number => Number(to - from) / 1e6

/** Host identity for a probe's body (the same fields a marker records). */
const identity = (host: Host["Type"]) => ({
  host: host.hostname,
  ...(host.machineId != null ? { machineId: host.machineId } : {}),
  ...(host.bootId !== null ? { bootId: host.bootId } : {}),
  pid: host.pid,
  ...(host.selfStartTime !== null ? { processStartedAt: host.selfStartTime } : {})
})

/** The probing clock of a program that writes (the pruner, the acquirer, every lock taker). */
export const makeFsClock = (fs: FileSystem["Type"], host: Host["Type"]): FsClock => {
  const readings = new Map<number, Reading>()

  const remember = (info: FileInfo) =>
    Effect.map(Clock.currentTimeNanos, (monoNs) => {
      readings.set(info.dev, { fsMs: info.mtimeMs, monoNs })
    })

  const cached = (dev: number) =>
    Effect.map(Clock.currentTimeNanos, (mono): FsNow | null => {
      const r = readings.get(dev)
      if (r === undefined) return null
      const since = elapsedMs(r.monoNs, mono)
      return since >= 0 && since <= REPROBE_MS ? { ms: r.fsMs + since, source: "probe" } : null
    })

  /** Create `path` exclusively, lstat it, unlink it while it is still ours; its lstat, or `null`. */
  const probeAt = (path: string) =>
    Effect.gen(function*() {
      const body = encodeJsonBytes({ version: 1, purpose: CLOCK_PROBE_PURPOSE, ...identity(host), createdAt: yield* Clock.currentTimeMillis })
      const made = yield* Effect.either(fs.writeFileExclusive(path, body))
      if (made._tag === "Left") return null
      const info = yield* Effect.option(fs.lstat(path))
      // Unlinked only while it is still the file created (as a marker's release): never someone else's.
      const still = yield* Effect.option(fs.lstat(path))
      if (info._tag === "Some" && still._tag === "Some" && sameFile(still.value, info.value)) {
        yield* fs.removeFile(path).pipe(Effect.catchAll((e) =>
          e.reason === "NotFound" ? Effect.void : warn({ _tag: "MarkerLeftInPlace", path, reason: e.message, message: `clock probe left in place: it cannot be removed (${e.reason})` })
        ))
      } else if (still._tag === "Some") {
        yield* warn({ _tag: "MarkerLeftInPlace", path, reason: "no longer the probe created", message: "clock probe left in place: it is no longer the file created" })
      }
      return info._tag === "Some" && info.value.type === "File" ? info.value : null
      // A few syscalls, never cut short: an interrupt (a store closing during its background prune) between the
      // create and the unlink would leave a live process's probe behind.
    }).pipe(Effect.uninterruptible)

  const now = (dev: number, probes: ReadonlyArray<ProbeSpot>): Effect.Effect<FsNow | null> =>
    Effect.gen(function*() {
      const recent = yield* cached(dev)
      if (recent !== null) return recent
      for (const spot of probes) {
        let info: FileInfo | null
        if (typeof spot === "string") {
          info = yield* probeAt(spot)
        } else {
          // Never through a link: a `.cleanup` that is not a directory is no place for a probe. A tenant without
          // one yet gets it (0700, as a removal makes it). A failure is the probe's: the holder is held.
          const dir = yield* Effect.either(fs.lstat(spot.dir))
          if (dir._tag === "Left" && dir.left.reason === "NotFound") {
            const made = yield* Effect.either(fs.makeDirectory(spot.dir, { mode: 0o700 }))
            if (made._tag === "Left" && made.left.reason !== "AlreadyExists") continue
          } else if (dir._tag === "Left" || dir.right.type !== "Directory") continue
          const nonce = (yield* Random.nextIntBetween(0, 0x7fffffff)).toString(16).padStart(8, "0")
          info = yield* probeAt(NodePath.join(spot.dir, `.clock-${host.pid}-${nonce}.reclaim`))
        }
        // A probe on another device than the file judged says nothing about that file's clock.
        if (info === null || info.dev !== dev) continue
        yield* remember(info)
        return yield* cached(dev)
      }
      return null
    })

  return { now, observe: (info) => (info.type === "File" ? remember(info) : Effect.void) }
}

/**
 * The clock of a reader that writes nothing (DR1: the doctor, the inventory): its own clock stands for the
 * file system's. What it says of another host's holder is advisory; the pruner judges on a probe.
 */
export const readerFsClock: FsClock = {
  now: () => Effect.map(Clock.currentTimeMillis, (ms): FsNow => ({ ms, source: "reader-clock" })),
  observe: () => Effect.void
}
