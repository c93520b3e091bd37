/**
 * The liveness verdict (docs/safety.md "How runs stay safe": leases and liveness), pure: given what a lease (or
 * marker) says, who we are, what the program observed about the lease's pid, and the lease file's age on its
 * file system's own clock, decide whether its holder may still be alive.
 *
 * The rule of thumb (systemd-tmpfiles, py-filelock): prove death before reclaiming; unknown means held.
 * The verdict is never given this reader's wall clock: a holder on another host is judged by how long ago
 * its lease file was last written, both ends read on the clock of the file system that holds it (the
 * file's mtime against a probe written there now), so a host whose clock is off by a day judges and is
 * judged like any other.
 */
import type { LeaseFacts } from "./Formats.js"

export type LeaseVerdictReason =
  | "same-boot-alive"
  | "same-boot-pid-gone"
  | "pid-reused"
  | "other-boot"
  | "remote-fresh"
  | "remote-stale"
  | "remote-unjudged"
  | "unreadable"
  | "unreadable-stale"
  | "same-host-unknown-boot-alive"
  | "same-host-unknown-boot-pid-gone"

export interface LeaseVerdict {
  readonly alive: boolean
  readonly reason: LeaseVerdictReason
  /** One human sentence, for reports and the doctor. */
  readonly detail: string
  /**
   * The record could not be trusted (empty, garbage, not valid for its schema, a directory or a symlink where a
   * file belongs): judged by the stale bound on its mtime, and reported. Also set on a readable record whose
   * timestamp is beyond its own file's mtime + TTL (judged by its file's age like any, and reported).
   */
  readonly unreadable?: true
}

/**
 * How long an unreadable marker or lease is held before it counts as dead (docs/safety.md "Stale unreadable markers and leases"). A real holder
 * writes its content microseconds after the exclusive create, so a file that is still empty, torn or garbage
 * after this long was left by a process killed in between. Ten minutes: far above any pause between create
 * and write, below the remote TTL so a crashed pruner never stops retention for long.
 */
export const DEFAULT_STALE_UNREADABLE_MS = 10 * 60 * 1000

/**
 * Slack added to the remote TTL before a silent holder counts as dead. File systems keep mtimes at their own
 * granularity (2 s on FAT/exFAT, 1 s on some NFS/SMB servers and ext3) taken from the kernel's coarse clock,
 * so a file written now may look up to that much older than it is. A dead holder on another host is
 * reclaimed once its lease file has not been written for `remoteLeaseTtlMs + REMOTE_MARGIN_MS`.
 */
export const REMOTE_MARGIN_MS = 2_000

export interface UnreadableFacts {
  /** What the record is, for reports ("empty", "not valid JSON", "a directory", …). */
  readonly why: string
  /** The file's own mtime (lstat, never followed); `null` when it could not be observed. */
  readonly mtimeMs: number | null
  /** Now on the same file system's clock; `null` when it could not be observed. */
  readonly fsNowMs: number | null
  readonly staleUnreadableMs: number
}

/**
 * The one rule for an unreadable marker or lease, every reader's (pruner, acquirer, doctor, inventory,
 * migration lock): held while its mtime is within the stale bound (or unknown: unknown means held), dead once
 * older, both read on the file system's clock. A future mtime counts as fresh (never older than the bound).
 */
export const unreadableVerdict = (facts: UnreadableFacts): LeaseVerdict => {
  const age = facts.mtimeMs === null || facts.fsNowMs === null ? null : facts.fsNowMs - facts.mtimeMs
  if (age !== null && age > facts.staleUnreadableMs) {
    return {
      alive: false,
      reason: "unreadable-stale",
      detail: `${facts.why}, untouched for ${Math.round(age)} ms (stale bound ${facts.staleUnreadableMs} ms); its writer is gone`,
      unreadable: true
    }
  }
  const since = age === null
    ? facts.mtimeMs === null ? "mtime unknown" : "the file system's clock not observed"
    : `modified ${Math.max(0, Math.round(age))} ms ago (stale bound ${facts.staleUnreadableMs} ms)`
  return { alive: true, reason: "unreadable", detail: `${facts.why}, ${since}; treated as held`, unreadable: true }
}

/** A timestamp beyond `reference` + TTL cannot be a real heartbeat (a clock far off, or a forged record). */
export const isFarFuture = (at: number, reference: number, remoteLeaseTtlMs: number): boolean => at > reference + remoteLeaseTtlMs

export interface SelfFacts {
  readonly hostname: string
  /** This boot's id, or `null` where the OS does not expose one. */
  readonly bootId: string | null
  /** This machine's identity (`/etc/machine-id`), or `null`/absent where there is none. */
  readonly machineId?: string | null
}

/** What the program observed about the lease's pid ON THIS HOST (asked only when `needsObservation`). */
export interface PidObservation {
  readonly exists: boolean
  /** The process start time in the same unit the lease records (`processStartedAt`); `null` when unknown. */
  readonly startTime: number | null
}

export interface LeaseVerdictInput {
  readonly lease: LeaseFacts | { readonly unreadable: string }
  readonly self: SelfFacts
  /** `null` when not observed (other host, or the program could not look). */
  readonly observation: PidObservation | null
  readonly remoteLeaseTtlMs: number
  /**
   * Start times closer than this are the same process (default 0: exact match). A Host port that derives
   * start times from coarse clocks can widen it; it must stay far below the time a pid takes to be reused.
   */
  readonly startTimeToleranceMs?: number
  /**
   * The lease or marker file's mtime: when it was last written, on its file system's clock. `null`/absent
   * when unknown (then a holder that needs it is held).
   */
  readonly fileMtimeMs?: number | null
  /**
   * Now on the clock of the same file system (the mtime of a probe this reader wrote there just now, carried
   * forward on its monotonic clock). `null`/absent when not observed (then a holder that needs it is held).
   */
  readonly fsNowMs?: number | null
  /** `fsNowMs` is this reader's own clock (a reader that writes nothing), not a probe: said in the detail. */
  readonly fsNowEstimated?: boolean
  /** How long this host has been up, on its own boot clock; `null`/absent when unknown (no boot shortcut). */
  readonly uptimeMs?: number | null
  /** The stale bound of the unreadable rule; default `DEFAULT_STALE_UNREADABLE_MS`. */
  readonly staleUnreadableMs?: number
}

const isUnreadable = (lease: LeaseVerdictInput["lease"]): lease is { readonly unreadable: string } =>
  "unreadable" in lease

/**
 * Who wrote a lease, seen from this reader:
 * - `same-kernel`: same host name, no other machine identity, and the same boot id (a boot id is random per
 *   boot, so the pid table is ours: its pid is proof);
 * - `other-boot`: same host name, no other machine identity, another boot id;
 * - `unknown-boot`: same host name, a boot id missing on either side (v1 leases, systems without one);
 * - `other-machine`: another host name, or another known machine id.
 */
export type Relation = "same-kernel" | "other-boot" | "unknown-boot" | "other-machine"

export const relationOf = (lease: LeaseFacts, self: SelfFacts): Relation => {
  if (lease.host !== self.hostname) return "other-machine"
  const ours = self.machineId ?? null
  if (lease.machineId !== undefined && ours !== null && lease.machineId !== ours) return "other-machine"
  if (lease.bootId === undefined || self.bootId === null) return "unknown-boot"
  return lease.bootId === self.bootId ? "same-kernel" : "other-boot"
}

/** The same machine, proven: same host name and the same machine id, both known. */
const sameMachine = (lease: LeaseFacts, self: SelfFacts): boolean =>
  lease.host === self.hostname && lease.machineId !== undefined && (self.machineId ?? null) !== null && lease.machineId === self.machineId

/** Whether the program must look at the lease's pid on this host before asking for a verdict. */
export const needsObservation = (lease: LeaseFacts, self: SelfFacts): boolean => {
  const relation = relationOf(lease, self)
  return relation === "same-kernel" || relation === "unknown-boot"
}

/**
 * Whether the verdict needs the lease file's age on its file system's clock (its mtime and a probe of now),
 * given the pid observation (`needsObservation`) where one was asked for.
 */
export const needsFileClock = (
  lease: LeaseFacts | { readonly unreadable: string },
  self: SelfFacts,
  observation: PidObservation | null
): boolean => {
  if (isUnreadable(lease)) return true
  const relation = relationOf(lease, self)
  if (relation === "same-kernel") return false
  if (relation === "unknown-boot") {
    return observation !== null && !localVerdict(lease, observation, false, 0).alive && !sameMachine(lease, self)
  }
  return true
}

/** Whether the verdict needs this host's uptime (the boot shortcut: only for the same machine, proven). */
export const needsUptime = (lease: LeaseFacts | { readonly unreadable: string }, self: SelfFacts): boolean =>
  !isUnreadable(lease) && relationOf(lease, self) === "other-boot" && sameMachine(lease, self)

const verdict = (alive: boolean, reason: LeaseVerdictReason, detail: string): LeaseVerdict => ({
  alive,
  reason,
  detail
})

/** Same host, boot same or unknown: decide on the pid and, when both are known, its start time. */
const localVerdict = (
  lease: LeaseFacts,
  observation: PidObservation | null,
  sameBoot: boolean,
  toleranceMs: number
): LeaseVerdict => {
  const aliveReason = sameBoot ? "same-boot-alive" : "same-host-unknown-boot-alive"
  const goneReason = sameBoot ? "same-boot-pid-gone" : "same-host-unknown-boot-pid-gone"
  const where = sameBoot ? "on this boot" : "on this host (boot unknown)"
  if (observation === null) {
    // Not looked at: we cannot prove death, so the holder counts as alive.
    return verdict(true, aliveReason, `pid ${lease.pid} ${where} was not observed; assumed alive`)
  }
  if (!observation.exists) {
    return verdict(false, goneReason, `pid ${lease.pid} ${where} no longer exists`)
  }
  const recorded = lease.processStartedAt
  const actual = observation.startTime
  if (recorded !== undefined && actual !== null && Math.abs(recorded - actual) > toleranceMs) {
    return verdict(
      false,
      "pid-reused",
      `pid ${lease.pid} ${where} belongs to another process (started at ${actual}, lease records ${recorded})`
    )
  }
  const how = recorded !== undefined && actual !== null ? "with the recorded start time" : "(start time not comparable)"
  return verdict(true, aliveReason, `pid ${lease.pid} ${where} exists ${how}`)
}

/** The lease file's age on its file system's clock; `null` when either end is unknown. */
const fileAge = (input: LeaseVerdictInput): number | null => {
  const mtime = input.fileMtimeMs ?? null
  const now = input.fsNowMs ?? null
  return mtime === null || now === null ? null : now - mtime
}

const clockWords = (input: LeaseVerdictInput): string =>
  input.fsNowEstimated === true ? "on this reader's clock (it writes no probe)" : "on the file system's clock"

/**
 * Freshness of a holder that is not provably on this kernel: alive while its lease file was written within
 * the TTL (+ the margin), dead once silent longer, held when the age cannot be read (fail closed).
 */
const remoteVerdict = (input: LeaseVerdictInput, who: string): LeaseVerdict => {
  const age = fileAge(input)
  const ttl = input.remoteLeaseTtlMs
  if (age === null) {
    const missing = (input.fileMtimeMs ?? null) === null ? "its file's mtime is unknown" : "the file system's clock could not be read"
    return verdict(true, "remote-unjudged", `${who}: ${missing}; held`)
  }
  const words = `${who} last written ${Math.max(0, Math.round(age))} ms ago ${clockWords(input)} (ttl ${ttl} ms + ${REMOTE_MARGIN_MS} ms)`
  return age > ttl + REMOTE_MARGIN_MS ? verdict(false, "remote-stale", words) : verdict(true, "remote-fresh", words)
}

/**
 * docs/safety.md "How runs stay safe": leases and liveness, in order:
 * - unreadable → `unreadableVerdict` (held while fresh, dead once stale, on the file system's clock);
 * - same host and same boot (the same kernel) → alive iff the pid exists with a matching start time;
 * - same host name, boot unknown → alive while the pid exists; a missing pid is proof only on the same
 *   machine (machine id known on both sides), otherwise the lease is judged like a remote one;
 * - same host name, other boot → a lease written within the TTL is alive whatever the identity says; one
 *   written before this boot began on the same machine (proven) is dead at once; else like a remote one;
 * - another host (or another machine id) → alive until its lease file has not been written for the TTL +
 *   `REMOTE_MARGIN_MS`, both read on the file system's clock; held when that cannot be read.
 * A record whose own stamp is beyond its file's mtime + TTL is flagged `unreadable` (reported, never a last
 * use) but judged by its file's age all the same. Markers use the same verdict (their creation is their one
 * heartbeat).
 */
export const leaseVerdict = (input: LeaseVerdictInput): LeaseVerdict => {
  const { lease, self } = input
  const unreadable = (why: string) =>
    unreadableVerdict({
      why,
      mtimeMs: input.fileMtimeMs ?? null,
      fsNowMs: input.fsNowMs ?? null,
      staleUnreadableMs: input.staleUnreadableMs ?? DEFAULT_STALE_UNREADABLE_MS
    })
  if (isUnreadable(lease)) return unreadable(lease.unreadable)
  const relation = relationOf(lease, self)
  const tolerance = input.startTimeToleranceMs ?? 0
  if (relation === "same-kernel") return localVerdict(lease, input.observation, true, tolerance)
  let local: LeaseVerdict | undefined
  if (relation === "unknown-boot") {
    local = localVerdict(lease, input.observation, false, tolerance)
    // A running pid holds (fail closed); a missing one proves death only on this very machine.
    if (local.alive || sameMachine(lease, self)) return local
  }
  const judged = judgeElsewhere(lease, input, relation, local)
  // A stamp beyond its own file's mtime + TTL (a clock far ahead, or a forged record) decides nothing (the
  // file's age did), but it is untrusted: reported, and never counted as a last use.
  const mtime = input.fileMtimeMs ?? null
  if (mtime === null || !isFarFuture(lease.heartbeatAt, mtime, input.remoteLeaseTtlMs)) return judged
  const ahead = Math.round(lease.heartbeatAt - mtime)
  return {
    ...judged,
    detail: `timestamp of host ${JSON.stringify(lease.host)} is ${ahead} ms after its own file was written (beyond the ttl ${input.remoteLeaseTtlMs} ms); ${judged.detail}`,
    unreadable: true
  }
}

/** A holder not provably on this kernel (and not a running pid of this host): judged by its file's age. */
const judgeElsewhere = (lease: LeaseFacts, input: LeaseVerdictInput, relation: Relation, local: LeaseVerdict | undefined): LeaseVerdict => {
  const { self } = input
  const host = JSON.stringify(lease.host)
  if (relation === "other-machine") return remoteVerdict(input, `lease of host ${host}`)
  if (relation === "unknown-boot") {
    const judged = remoteVerdict(input, `lease of ${host} whose pid ${lease.pid} is not running here (maybe another machine of that name)`)
    return judged.alive ? judged : { ...judged, reason: local!.reason, detail: `${local!.detail}; ${judged.detail}` }
  }
  // Same host name, other boot.
  const age = fileAge(input)
  const uptime = input.uptimeMs ?? null
  const fresh = age !== null && age <= input.remoteLeaseTtlMs
  if (!fresh && age !== null && uptime !== null && sameMachine(lease, self) && age > uptime + REMOTE_MARGIN_MS) {
    return verdict(
      false,
      "other-boot",
      `lease from boot ${lease.bootId} of this machine, last written ${Math.round(age)} ms ago, before this boot (${self.bootId}) began ${Math.round(uptime)} ms ago`
    )
  }
  return remoteVerdict(input, `lease of ${host} from boot ${lease.bootId} (this boot is ${self.bootId})`)
}

/**
 * Whether a failed read of a marker or lease says something about its *content* (too large, swapped for a
 * link), which the stale bound may judge, rather than about this reader (EACCES, EIO, EMFILE, …): a holder
 * whose file we merely cannot read now is held, whatever its age (a chmod inside a run, a transient EMFILE
 * must never make a live lease look dead).
 */
export const readFailureIsContent = (reason: string): boolean => reason === "TooLarge" || reason === "IsSymlink"
