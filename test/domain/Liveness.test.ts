import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { type LeaseFacts, leaseFacts } from "../../src/domain/Formats.js"
import {
  DEFAULT_STALE_UNREADABLE_MS,
  type LeaseVerdictInput,
  type LeaseVerdictReason,
  leaseVerdict,
  needsFileClock,
  needsObservation,
  needsUptime,
  type PidObservation,
  REMOTE_MARGIN_MS,
  relationOf,
  type SelfFacts
} from "../../src/domain/Liveness.js"

const TTL = 15 * 60 * 1000
/** Now on the file system's clock. */
const FS_NOW = 1_800_000_000_000
const MACHINE = "0123456789abcdef0123456789abcdef"
const OTHER_MACHINE = "fedcba9876543210fedcba9876543210"
const self: SelfFacts = { hostname: "box", bootId: "boot-a", machineId: MACHINE }

const v2 = (over: Partial<LeaseFacts> = {}): LeaseFacts => ({
  host: "box",
  machineId: MACHINE,
  bootId: "boot-a",
  pid: 4242,
  processStartedAt: 1000,
  heartbeatAt: FS_NOW - 1000,
  ...over
})
/** A v1 lease as written by earlier Pi builds: no boot id, no start time, no machine id. */
const v1 = leaseFacts({ version: 1, hostname: "box", pid: 4242, createdAt: FS_NOW - 10 * TTL })

const running = (startTime: number | null = 1000): PidObservation => ({ exists: true, startTime })
const gone: PidObservation = { exists: false, startTime: null }

interface Row {
  readonly name: string
  readonly lease: LeaseFacts | { readonly unreadable: string }
  readonly self?: SelfFacts
  readonly observation: PidObservation | null
  /** The lease file's age on the file system's clock (absent: mtime unknown). */
  readonly ageMs?: number
  readonly uptimeMs?: number
  readonly alive: boolean
  readonly reason: LeaseVerdictReason
  readonly unreadable?: boolean
  /** The record's stamp is the row's own (a skewed clock); otherwise it is the file's write time. */
  readonly stamped?: true
}

const table: ReadonlyArray<Row> = [
  { name: "same host, same boot, pid alive", lease: v2(), observation: running(), alive: true, reason: "same-boot-alive" },
  { name: "same host, same boot, pid gone", lease: v2(), observation: gone, alive: false, reason: "same-boot-pid-gone" },
  { name: "same host, same boot, pid reused", lease: v2(), observation: running(2000), alive: false, reason: "pid-reused" },
  {
    name: "same boot, lease has no start time: existence decides",
    lease: v2({ processStartedAt: undefined }),
    observation: running(2000),
    alive: true,
    reason: "same-boot-alive"
  },
  { name: "same boot, OS gives no start time: existence decides", lease: v2(), observation: running(null), alive: true, reason: "same-boot-alive" },
  { name: "same boot, not observed: fail closed", lease: v2(), observation: null, alive: true, reason: "same-boot-alive" },
  {
    name: "same boot, a lease without a machine id (older record): the boot id alone proves the kernel",
    lease: v2({ machineId: undefined }),
    observation: gone,
    alive: false,
    reason: "same-boot-pid-gone"
  },
  {
    name: "same machine, other boot, written before this boot and older than the ttl: dead at once (no margin)",
    lease: v2({ bootId: "boot-old" }),
    observation: null,
    ageMs: TTL + 1,
    uptimeMs: 60_000,
    alive: false,
    reason: "other-boot"
  },
  {
    name: "same machine, other boot, written before this boot but within the ttl: a fresh lease is alive",
    lease: v2({ bootId: "boot-old" }),
    observation: null,
    ageMs: TTL,
    uptimeMs: 60_000,
    alive: true,
    reason: "remote-fresh"
  },
  {
    name: "same machine, other boot, written after this boot began: another live kernel (a clone), judged by its age",
    lease: v2({ bootId: "boot-old" }),
    observation: null,
    ageMs: 5_000,
    uptimeMs: 60 * 60 * 1000,
    alive: true,
    reason: "remote-fresh"
  },
  {
    name: "same machine, other boot, uptime unknown: no shortcut, the margin applies",
    lease: v2({ bootId: "boot-old" }),
    observation: null,
    ageMs: TTL + REMOTE_MARGIN_MS,
    alive: true,
    reason: "remote-fresh"
  },
  {
    name: "same host name, other boot, no machine id on the lease (v2): no shortcut, judged by age",
    lease: v2({ bootId: "boot-old", machineId: undefined }),
    observation: null,
    ageMs: 1_000,
    uptimeMs: 10,
    alive: true,
    reason: "remote-fresh"
  },
  {
    name: "same host name, another machine id: another machine, whatever the boot ids say",
    lease: v2({ machineId: OTHER_MACHINE }),
    observation: gone,
    ageMs: 1_000,
    alive: true,
    reason: "remote-fresh"
  },
  {
    name: "same host name, another machine id, silent beyond the ttl + margin: dead",
    lease: v2({ machineId: OTHER_MACHINE, bootId: "boot-x" }),
    observation: null,
    ageMs: TTL + REMOTE_MARGIN_MS + 1,
    uptimeMs: 10 * TTL,
    alive: false,
    reason: "remote-stale"
  },
  { name: "other host, written just now", lease: v2({ host: "far" }), observation: null, ageMs: 0, alive: true, reason: "remote-fresh" },
  { name: "other host, at the ttl + margin", lease: v2({ host: "far" }), observation: null, ageMs: TTL + REMOTE_MARGIN_MS, alive: true, reason: "remote-fresh" },
  { name: "other host, beyond the ttl + margin", lease: v2({ host: "far" }), observation: null, ageMs: TTL + REMOTE_MARGIN_MS + 1, alive: false, reason: "remote-stale" },
  {
    name: "other host, its heartbeat stamp a day behind: the file's age decides",
    lease: v2({ host: "far", heartbeatAt: FS_NOW - 24 * 60 * 60 * 1000 }),
    stamped: true,
    observation: null,
    ageMs: 1_000,
    alive: true,
    reason: "remote-fresh"
  },
  {
    name: "other host, its stamp beyond its file's mtime + ttl: flagged, judged by the file's age (fresh)",
    lease: v2({ host: "far", heartbeatAt: FS_NOW + TTL }),
    stamped: true,
    observation: null,
    ageMs: 1,
    alive: true,
    reason: "remote-fresh",
    unreadable: true
  },
  {
    name: "other host, its stamp beyond its file's mtime + ttl: flagged, judged by the file's age (silent)",
    lease: v2({ host: "far", heartbeatAt: FS_NOW + 10 * TTL }),
    stamped: true,
    observation: null,
    ageMs: TTL + REMOTE_MARGIN_MS + 1,
    alive: false,
    reason: "remote-stale",
    unreadable: true
  },
  { name: "other host, file age unknown: held", lease: v2({ host: "far" }), observation: null, alive: true, reason: "remote-unjudged" },
  {
    name: "other host ignores a (misplaced) local observation",
    lease: v2({ host: "far" }),
    observation: running(),
    ageMs: 2 * TTL,
    alive: false,
    reason: "remote-stale"
  },
  { name: "v1 lease, pid alive", lease: v1, observation: running(), alive: true, reason: "same-host-unknown-boot-alive" },
  {
    name: "v1 lease, pid gone, file old: dead",
    lease: v1,
    observation: gone,
    ageMs: 10 * TTL,
    alive: false,
    reason: "same-host-unknown-boot-pid-gone"
  },
  {
    name: "v1 lease, pid gone here but the file was written just now: maybe another machine of that name, held",
    lease: v1,
    observation: gone,
    ageMs: 1_000,
    alive: true,
    reason: "remote-fresh"
  },
  {
    name: "no boot id on this host, pid alive",
    lease: v2(),
    self: { hostname: "box", bootId: null, machineId: MACHINE },
    observation: running(),
    alive: true,
    reason: "same-host-unknown-boot-alive"
  },
  {
    name: "no boot id on this host, same machine proven, pid reused",
    lease: v2(),
    self: { hostname: "box", bootId: null, machineId: MACHINE },
    observation: running(7),
    alive: false,
    reason: "pid-reused"
  },
  {
    name: "no boot id on this host, same machine proven, pid gone (whatever the file's age)",
    lease: v2(),
    self: { hostname: "box", bootId: null, machineId: MACHINE },
    observation: gone,
    ageMs: 0,
    alive: false,
    reason: "same-host-unknown-boot-pid-gone"
  },
  {
    name: "no boot id and no machine id here, pid gone, file fresh: held",
    lease: v2(),
    self: { hostname: "box", bootId: null },
    observation: gone,
    ageMs: 0,
    alive: true,
    reason: "remote-fresh"
  },
  { name: "unreadable, age unknown", lease: { unreadable: "not valid JSON" }, observation: null, alive: true, reason: "unreadable" },
  { name: "unreadable, even when the pid looks gone", lease: { unreadable: "EACCES" }, observation: gone, alive: true, reason: "unreadable" },
  {
    name: "unreadable, file exactly at the stale bound: held",
    lease: { unreadable: "empty" },
    observation: null,
    ageMs: DEFAULT_STALE_UNREADABLE_MS,
    alive: true,
    reason: "unreadable"
  },
  {
    name: "unreadable, file older than the stale bound: dead",
    lease: { unreadable: "empty" },
    observation: null,
    ageMs: DEFAULT_STALE_UNREADABLE_MS + 1,
    alive: false,
    reason: "unreadable-stale"
  }
]

describe("leaseVerdict", () => {
  for (const row of table) {
    it(row.name, () => {
      const lease = "unreadable" in row.lease || row.ageMs === undefined || row.stamped ? row.lease : { ...row.lease, heartbeatAt: FS_NOW - row.ageMs }
      const verdict = leaseVerdict({
        lease,
        self: row.self ?? self,
        observation: row.observation,
        remoteLeaseTtlMs: TTL,
        fsNowMs: FS_NOW,
        ...(row.ageMs === undefined ? {} : { fileMtimeMs: FS_NOW - row.ageMs }),
        ...(row.uptimeMs === undefined ? {} : { uptimeMs: row.uptimeMs })
      })
      assert.strictEqual(verdict.reason, row.reason)
      assert.strictEqual(verdict.alive, row.alive)
      assert.strictEqual(verdict.unreadable === true, row.unreadable ?? row.reason.startsWith("unreadable"))
      assert.isAbove(verdict.detail.length, 0)
    })
  }

  it("markers get the same verdict through leaseFacts", () => {
    const marker = leaseFacts({ version: 1, purpose: "cleanup", host: "box", machineId: MACHINE, bootId: "boot-a", pid: 9, processStartedAt: 5, createdAt: 0 })
    assert.strictEqual(marker.machineId, MACHINE)
    const ask = (observation: PidObservation) => leaseVerdict({ lease: marker, self, observation, remoteLeaseTtlMs: TTL })
    assert.strictEqual(ask(running(5)).reason, "same-boot-alive")
    assert.strictEqual(ask(running(6)).reason, "pid-reused")
    assert.strictEqual(ask(gone).reason, "same-boot-pid-gone")
  })

  it("a start-time tolerance absorbs clock jitter but not reuse", () => {
    const ask = (startTime: number) =>
      leaseVerdict({ lease: v2(), self, observation: running(startTime), remoteLeaseTtlMs: TTL, startTimeToleranceMs: 10 })
    assert.isTrue(ask(1010).alive)
    assert.isFalse(ask(1011).alive)
  })

  it("what the program must observe: the pid only on this kernel (or boot unknown), the file's clock elsewhere", () => {
    assert.isTrue(needsObservation(v2(), self))
    assert.isTrue(needsObservation(v1, self))
    assert.isTrue(needsObservation(v2(), { hostname: "box", bootId: null }))
    assert.isFalse(needsObservation(v2({ bootId: "boot-old" }), self))
    assert.isFalse(needsObservation(v2({ host: "far" }), self))
    assert.isFalse(needsObservation(v2({ machineId: OTHER_MACHINE }), self))
    assert.isFalse(needsFileClock(v2(), self, gone))
    assert.isTrue(needsFileClock(v2({ host: "far" }), self, null))
    assert.isTrue(needsFileClock({ unreadable: "empty" }, self, null))
    assert.isFalse(needsFileClock(v1, self, running()))
    assert.isTrue(needsFileClock(v1, self, gone))
    assert.isTrue(needsUptime(v2({ bootId: "boot-old" }), self))
    assert.isFalse(needsUptime(v2({ bootId: "boot-old", machineId: undefined }), self))
    assert.isFalse(needsUptime(v2({ host: "far", bootId: "boot-old" }), self))
  })

  // ---------------------------------------------------------------------------------------------------------
  // Properties: hosts with random clock skews and boot times, one shared file system clock.

  const HOURS = 60 * 60 * 1000
  const hostArb = fc.constantFrom("box", "far", "other")
  const machineArb = fc.option(fc.constantFrom(MACHINE, OTHER_MACHINE), { nil: undefined })
  const bootArb = fc.option(fc.constantFrom("boot-a", "boot-b"), { nil: undefined })
  const selfArb: fc.Arbitrary<SelfFacts> = fc.record({
    hostname: fc.constantFrom("box", "far"),
    bootId: fc.option(fc.constantFrom("boot-a", "boot-b"), { nil: null }),
    machineId: fc.option(fc.constantFrom(MACHINE, OTHER_MACHINE), { nil: null })
  })
  const observationArb = fc.option(
    fc.record({ exists: fc.boolean(), startTime: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }) }),
    { nil: null }
  )
  /**
   * A holder whose clock is skewed against the file system's, and a reader with its own boot time: the holder
   * last wrote its lease `ageMs` ago on the file system's clock (the file's mtime), stamping its own skewed
   * time in the record; the reader probes the file system's clock now. (The reader's own wall clock is no
   * input of the verdict at all; the Memory and Node tests skew it end to end.)
   */
  const scenarioArb = fc.record({
    host: hostArb,
    machineId: machineArb,
    bootId: bootArb,
    pid: fc.integer({ min: 1, max: 100 }),
    processStartedAt: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    holderSkewMs: fc.integer({ min: -48 * HOURS, max: 48 * HOURS }),
    readerUptimeMs: fc.option(fc.integer({ min: 0, max: 48 * HOURS }), { nil: null }),
    ttl: fc.integer({ min: 1, max: 2 * HOURS }),
    stale: fc.integer({ min: 0, max: 2 * HOURS })
  })
  const inputOf = (
    s: {
      readonly host: string
      readonly machineId: string | undefined
      readonly bootId: string | undefined
      readonly pid: number
      readonly processStartedAt: number | undefined
      readonly holderSkewMs: number
      readonly readerUptimeMs: number | null
      readonly ttl: number
      readonly stale: number
    },
    me: SelfFacts,
    observation: PidObservation | null,
    ageMs: number
  ): LeaseVerdictInput => {
    const writtenAt = FS_NOW - ageMs
    return {
      lease: {
        host: s.host,
        machineId: s.machineId,
        bootId: s.bootId,
        pid: s.pid,
        processStartedAt: s.processStartedAt,
        heartbeatAt: Math.max(0, writtenAt + s.holderSkewMs)
      },
      self: me,
      observation,
      remoteLeaseTtlMs: s.ttl,
      staleUnreadableMs: s.stale,
      fileMtimeMs: writtenAt,
      fsNowMs: FS_NOW,
      uptimeMs: s.readerUptimeMs
    }
  }

  it.prop(
    "a holder not on this kernel whose lease file was written within the ttl is never dead, whatever the skews, boot times and identities",
    [scenarioArb, selfArb, observationArb, fc.double({ min: 0, max: 1, noNaN: true })],
    ([s, me, observation, at]) => {
      const input = inputOf(s, me, observation, Math.floor(at * s.ttl))
      const relation = relationOf(input.lease as LeaseFacts, me)
      fc.pre(relation === "other-machine" || relation === "other-boot")
      assert.isTrue(leaseVerdict(input).alive, leaseVerdict(input).detail)
    }
  )

  it.prop(
    "a holder not on this kernel silent for the ttl + margin is dead, whatever its clock stamped and whatever the boot times",
    [scenarioArb, selfArb, observationArb, fc.integer({ min: 1, max: 48 * HOURS })],
    ([s, me, observation, beyond]) => {
      const input = inputOf(s, me, observation, s.ttl + REMOTE_MARGIN_MS + beyond)
      const relation = relationOf(input.lease as LeaseFacts, me)
      fc.pre(relation === "other-machine" || relation === "other-boot")
      const verdict = leaseVerdict(input)
      assert.isFalse(verdict.alive, verdict.detail)
    }
  )

  it.prop(
    "the verdict on a holder elsewhere depends only on its file's age: the same age on any shared clock, any stamp skew, gives the same answer",
    [scenarioArb, selfArb, fc.integer({ min: 0, max: 4 * HOURS }), fc.integer({ min: -1e12, max: 1e12 }), fc.integer({ min: -48 * HOURS, max: 48 * HOURS })],
    ([s, me, age, shift, otherSkew]) => {
      const input = inputOf(s, me, null, age)
      fc.pre(relationOf(input.lease as LeaseFacts, me) === "other-machine")
      const moved = inputOf({ ...s, holderSkewMs: otherSkew }, me, null, age)
      const shifted: LeaseVerdictInput = { ...moved, fileMtimeMs: moved.fileMtimeMs! + shift, fsNowMs: moved.fsNowMs! + shift, lease: { ...(moved.lease as LeaseFacts), heartbeatAt: (moved.lease as LeaseFacts).heartbeatAt + shift } }
      assert.strictEqual(leaseVerdict(shifted).alive, leaseVerdict(input).alive)
      assert.strictEqual(leaseVerdict(input).alive, age <= s.ttl + REMOTE_MARGIN_MS)
    }
  )

  it.prop(
    "the boot shortcut needs the same machine proven and a lease older than both the ttl and this boot",
    [scenarioArb, selfArb, fc.integer({ min: 0, max: 48 * HOURS })],
    ([s, me, age]) => {
      const input = inputOf(s, me, null, age)
      const lease = input.lease as LeaseFacts
      fc.pre(relationOf(lease, me) === "other-boot")
      const verdict = leaseVerdict(input)
      if (verdict.reason === "other-boot") {
        assert.isFalse(verdict.alive)
        assert.isDefined(lease.machineId)
        assert.strictEqual(lease.machineId, me.machineId)
        assert.isAbove(age, s.ttl)
        assert.isNotNull(s.readerUptimeMs)
        assert.isAbove(age, s.readerUptimeMs! + REMOTE_MARGIN_MS)
      } else {
        assert.strictEqual(verdict.alive, age <= s.ttl + REMOTE_MARGIN_MS)
      }
    }
  )

  it.prop(
    "monotone in the file system's time: once dead, dead at every later probe",
    [scenarioArb, selfArb, observationArb, fc.integer({ min: 0, max: 4 * HOURS }), fc.integer({ min: 0, max: 4 * HOURS })],
    ([s, me, observation, age, later]) => {
      const input = inputOf(s, me, observation, age)
      const after: LeaseVerdictInput = { ...input, fsNowMs: FS_NOW + later, uptimeMs: s.readerUptimeMs === null ? null : s.readerUptimeMs + later }
      if (!leaseVerdict(input).alive) assert.isFalse(leaseVerdict(after).alive)
    }
  )

  it.prop(
    "unreadable with an unknown mtime or an unobserved file system clock is always alive",
    [fc.string(), selfArb, observationArb, fc.option(fc.integer(), { nil: null }), fc.option(fc.integer(), { nil: null }), fc.nat(), fc.nat()],
    ([why, me, observation, mtime, fsNow, ttl, stale]) => {
      fc.pre(mtime === null || fsNow === null)
      const verdict = leaseVerdict({ lease: { unreadable: why }, self: me, observation, remoteLeaseTtlMs: ttl, fileMtimeMs: mtime, fsNowMs: fsNow, staleUnreadableMs: stale })
      assert.isTrue(verdict.alive)
      assert.strictEqual(verdict.reason, "unreadable")
      assert.isTrue(verdict.unreadable)
    }
  )

  it.prop(
    "unreadable: held exactly while the file is within the stale bound on the file system's clock, whatever the observation; once stale, stale forever after",
    [fc.string(), selfArb, observationArb, fc.integer({ min: -1e6, max: 1e6 }), fc.integer({ min: -1e6, max: 1e6 }), fc.nat({ max: 1e6 }), fc.nat({ max: 1e6 })],
    ([why, me, observation, now, mtime, stale, later]) => {
      const at = (t: number) =>
        leaseVerdict({ lease: { unreadable: why }, self: me, observation, remoteLeaseTtlMs: 0, fileMtimeMs: mtime, fsNowMs: t, staleUnreadableMs: stale })
      const verdict = at(now)
      assert.strictEqual(verdict.alive, now - mtime <= stale)
      assert.strictEqual(verdict.reason, verdict.alive ? "unreadable" : "unreadable-stale")
      if (!verdict.alive) assert.isFalse(at(now + later).alive)
    }
  )

  it.prop(
    "a dead verdict on this kernel is always backed by a proof: pid gone or differing start times",
    [scenarioArb, selfArb, observationArb],
    ([s, me, observation]) => {
      const input = inputOf(s, me, observation, 0)
      const lease = input.lease as LeaseFacts
      fc.pre(relationOf(lease, me) === "same-kernel")
      const verdict = leaseVerdict({ ...input, fileMtimeMs: null, fsNowMs: null })
      const gone = observation !== null && !observation.exists
      const reused = observation !== null && observation.exists && observation.startTime !== null &&
        lease.processStartedAt !== undefined && observation.startTime !== lease.processStartedAt
      assert.strictEqual(verdict.alive, !(gone || reused))
      assert.isTrue(needsObservation(lease, me))
      assert.isFalse(needsFileClock(lease, me, observation))
    }
  )
})
