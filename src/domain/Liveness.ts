/**
 * The liveness verdict (README "Leases and liveness"), pure: given what a lease (or marker) says, who we are, and what the
 * program observed about the lease's pid, decide whether its holder may still be alive.
 *
 * The rule of thumb (systemd-tmpfiles, py-filelock): prove death before reclaiming; unknown means held.
 */
import type { LeaseFacts } from "./Formats.js"

export type LeaseVerdictReason =
  | "same-boot-alive"
  | "same-boot-pid-gone"
  | "pid-reused"
  | "other-boot"
  | "remote-fresh"
  | "remote-stale"
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
   * file belongs, a remote timestamp beyond now + TTL): judged by the stale bound on its mtime, and reported.
   */
  readonly unreadable?: true
}

/**
 * How long an unreadable marker or lease is held before it counts as dead (README "Stale unreadable markers and leases"). A real holder
 * writes its content microseconds after the exclusive create, so a file that is still empty, torn or garbage
 * after this long was left by a process killed in between. Ten minutes: far above any pause between create
 * and write, below the remote TTL so a crashed pruner never stops retention for long.
 */
export const DEFAULT_STALE_UNREADABLE_MS = 10 * 60 * 1000

export interface UnreadableFacts {
  /** What the record is, for reports ("empty", "not valid JSON", "a directory", …). */
  readonly why: string
  /** The file's own mtime (lstat, never followed); `null` when it could not be observed. */
  readonly mtimeMs: number | null
  readonly now: number
  readonly staleUnreadableMs: number
}

/**
 * The one rule for an unreadable marker or lease, every reader's (pruner, acquirer, doctor, inventory,
 * migration lock): held while its mtime is within the stale bound (or unknown: unknown means held), dead once
 * older. A future mtime counts as fresh (never older than the bound).
 */
export const unreadableVerdict = (facts: UnreadableFacts): LeaseVerdict => {
  const age = facts.mtimeMs === null ? null : facts.now - facts.mtimeMs
  if (age !== null && age > facts.staleUnreadableMs) {
    return {
      alive: false,
      reason: "unreadable-stale",
      detail: `${facts.why}, untouched for ${age} ms (stale bound ${facts.staleUnreadableMs} ms); its writer is gone`,
      unreadable: true
    }
  }
  const since = age === null ? "mtime unknown" : `modified ${Math.max(0, age)} ms ago (stale bound ${facts.staleUnreadableMs} ms)`
  return { alive: true, reason: "unreadable", detail: `${facts.why}, ${since}; treated as held`, unreadable: true }
}

/** A remote timestamp beyond now + TTL cannot be a real heartbeat (a clock far off, or a forged record). */
export const isFarFuture = (at: number, now: number, remoteLeaseTtlMs: number): boolean => at > now + remoteLeaseTtlMs

export interface SelfFacts {
  readonly hostname: string
  /** This boot's id, or `null` where the OS does not expose one. */
  readonly bootId: string | null
}

/** What the program observed about the lease's pid ON THIS HOST (only asked when lease.host === self.hostname). */
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
  readonly now: number
  readonly remoteLeaseTtlMs: number
  /**
   * Start times closer than this are the same process (default 0: exact match). A Host port that derives
   * start times from coarse clocks can widen it; it must stay far below the time a pid takes to be reused.
   */
  readonly startTimeToleranceMs?: number
  /** The lease or marker file's mtime, for the unreadable rule; `null`/absent when unknown (then held). */
  readonly fileMtimeMs?: number | null
  /** The stale bound of the unreadable rule; default `DEFAULT_STALE_UNREADABLE_MS`. */
  readonly staleUnreadableMs?: number
}

const isUnreadable = (lease: LeaseVerdictInput["lease"]): lease is { readonly unreadable: string } =>
  "unreadable" in lease

/** Both boot ids are known and differ: the holder died with the previous boot. */
const provablyOtherBoot = (lease: LeaseFacts, self: SelfFacts): boolean =>
  lease.bootId !== undefined && self.bootId !== null && lease.bootId !== self.bootId

const bootKnownSame = (lease: LeaseFacts, self: SelfFacts): boolean =>
  lease.bootId !== undefined && self.bootId !== null && lease.bootId === self.bootId

/** Whether the program must look at the lease's pid on this host before asking for a verdict. */
export const needsObservation = (lease: LeaseFacts, self: SelfFacts): boolean =>
  lease.host === self.hostname && !provablyOtherBoot(lease, self)

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

/**
 * README "Leases and liveness", in order: unreadable → `unreadableVerdict` (held while fresh, dead once stale); same host and same boot → alive iff the pid exists
 * with a matching start time; same host, other boot → dead; same host, boot unknown on either side → alive
 * iff the pid exists (start times compared when both known); other host → alive until the heartbeat is
 * older than `remoteLeaseTtlMs`; a heartbeat beyond now + TTL is unreadable (it would pin
 * the run forever). Markers use the same verdict.
 */
export const leaseVerdict = (input: LeaseVerdictInput): LeaseVerdict => {
  const { lease, self } = input
  const unreadable = (why: string) =>
    unreadableVerdict({
      why,
      mtimeMs: input.fileMtimeMs ?? null,
      now: input.now,
      staleUnreadableMs: input.staleUnreadableMs ?? DEFAULT_STALE_UNREADABLE_MS
    })
  if (isUnreadable(lease)) return unreadable(lease.unreadable)
  if (lease.host === self.hostname) {
    if (provablyOtherBoot(lease, self)) {
      return verdict(false, "other-boot", `lease from boot ${lease.bootId} of this host; current boot is ${self.bootId}`)
    }
    return localVerdict(lease, input.observation, bootKnownSame(lease, self), input.startTimeToleranceMs ?? 0)
  }
  if (isFarFuture(lease.heartbeatAt, input.now, input.remoteLeaseTtlMs)) {
    return unreadable(
      `heartbeat of host ${JSON.stringify(lease.host)} is ${lease.heartbeatAt - input.now} ms in the future (beyond the ttl ${input.remoteLeaseTtlMs} ms)`
    )
  }
  const ageMs = input.now - lease.heartbeatAt
  if (ageMs > input.remoteLeaseTtlMs) {
    return verdict(
      false,
      "remote-stale",
      `lease of host ${JSON.stringify(lease.host)} last heartbeat ${ageMs} ms ago (ttl ${input.remoteLeaseTtlMs} ms)`
    )
  }
  return verdict(
    true,
    "remote-fresh",
    `lease of host ${JSON.stringify(lease.host)} last heartbeat ${Math.max(0, ageMs)} ms ago (ttl ${input.remoteLeaseTtlMs} ms)`
  )
}

/**
 * Whether a failed read of a marker or lease says something about its *content* (too large, swapped for a
 * link), which the stale bound may judge, rather than about this reader (EACCES, EIO, EMFILE, …): a holder
 * whose file we merely cannot read now is held, whatever its age (a chmod inside a run, a transient EMFILE
 * must never make a live lease look dead).
 */
export const readFailureIsContent = (reason: string): boolean => reason === "TooLarge" || reason === "IsSymlink"
