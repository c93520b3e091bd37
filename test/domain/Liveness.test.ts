import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { type LeaseFacts, leaseFacts } from "../../src/domain/Formats.js"
import {
  DEFAULT_STALE_UNREADABLE_MS,
  isFarFuture,
  type LeaseVerdictReason,
  leaseVerdict,
  needsObservation,
  type PidObservation,
  type SelfFacts
} from "../../src/domain/Liveness.js"

const TTL = 15 * 60 * 1000
const NOW = 1_800_000_000_000
const self: SelfFacts = { hostname: "box", bootId: "boot-a" }

const v2 = (over: Partial<LeaseFacts> = {}): LeaseFacts => ({
  host: "box",
  bootId: "boot-a",
  pid: 4242,
  processStartedAt: 1000,
  heartbeatAt: NOW - 1000,
  ...over
})
/** A v1 lease as written by earlier Pi builds: no boot id, no start time. */
const v1 = leaseFacts({ version: 1, hostname: "box", pid: 4242, createdAt: NOW - 10 * TTL })

const running = (startTime: number | null = 1000): PidObservation => ({ exists: true, startTime })
const gone: PidObservation = { exists: false, startTime: null }

interface Row {
  readonly name: string
  readonly lease: LeaseFacts | { readonly unreadable: string }
  readonly self?: SelfFacts
  readonly observation: PidObservation | null
  readonly now?: number
  readonly fileMtimeMs?: number
  readonly alive: boolean
  readonly reason: LeaseVerdictReason
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
  {
    name: "same boot, OS gives no start time: existence decides",
    lease: v2(),
    observation: running(null),
    alive: true,
    reason: "same-boot-alive"
  },
  {
    name: "same boot, not observed: fail closed",
    lease: v2(),
    observation: null,
    alive: true,
    reason: "same-boot-alive"
  },
  {
    name: "same host, other boot (pid exists but that is a coincidence)",
    lease: v2({ bootId: "boot-old" }),
    observation: running(),
    alive: false,
    reason: "other-boot"
  },
  {
    name: "same host, other boot, even with a fresh heartbeat",
    lease: v2({ bootId: "boot-old", heartbeatAt: NOW }),
    observation: null,
    alive: false,
    reason: "other-boot"
  },
  { name: "other host, fresh heartbeat", lease: v2({ host: "far", heartbeatAt: NOW - TTL }), observation: null, alive: true, reason: "remote-fresh" },
  { name: "other host, stale heartbeat", lease: v2({ host: "far", heartbeatAt: NOW - TTL - 1 }), observation: null, alive: false, reason: "remote-stale" },
  {
    name: "other host, heartbeat in the future within the ttl counts as fresh",
    lease: v2({ host: "far", heartbeatAt: NOW + TTL }),
    observation: null,
    alive: true,
    reason: "remote-fresh"
  },
  {
    name: "other host, heartbeat beyond now + ttl is unreadable: held while the file is fresh",
    lease: v2({ host: "far", heartbeatAt: NOW + TTL + 1 }),
    observation: null,
    fileMtimeMs: NOW - 1000,
    alive: true,
    reason: "unreadable"
  },
  {
    name: "other host, heartbeat beyond now + ttl is unreadable: dead once the file is stale",
    lease: v2({ host: "far", heartbeatAt: NOW + 10 * TTL }),
    observation: null,
    fileMtimeMs: NOW - DEFAULT_STALE_UNREADABLE_MS - 1,
    alive: false,
    reason: "unreadable-stale"
  },
  {
    name: "other host ignores a (misplaced) local observation",
    lease: v2({ host: "far", heartbeatAt: NOW - 2 * TTL }),
    observation: running(),
    alive: false,
    reason: "remote-stale"
  },
  { name: "v1 lease, pid alive", lease: v1, observation: running(), alive: true, reason: "same-host-unknown-boot-alive" },
  { name: "v1 lease, pid gone", lease: v1, observation: gone, alive: false, reason: "same-host-unknown-boot-pid-gone" },
  {
    name: "no boot id on this host, pid alive",
    lease: v2(),
    self: { hostname: "box", bootId: null },
    observation: running(),
    alive: true,
    reason: "same-host-unknown-boot-alive"
  },
  {
    name: "no boot id on this host, pid reused (both start times known)",
    lease: v2(),
    self: { hostname: "box", bootId: null },
    observation: running(7),
    alive: false,
    reason: "pid-reused"
  },
  {
    name: "no boot id on this host, pid gone",
    lease: v2(),
    self: { hostname: "box", bootId: null },
    observation: gone,
    alive: false,
    reason: "same-host-unknown-boot-pid-gone"
  },
  { name: "unreadable", lease: { unreadable: "not valid JSON" }, observation: null, alive: true, reason: "unreadable" },
  { name: "unreadable, even when the pid looks gone", lease: { unreadable: "EACCES" }, observation: gone, alive: true, reason: "unreadable" },
  {
    name: "unreadable, file exactly at the stale bound: held",
    lease: { unreadable: "empty" },
    observation: null,
    fileMtimeMs: NOW - DEFAULT_STALE_UNREADABLE_MS,
    alive: true,
    reason: "unreadable"
  },
  {
    name: "unreadable, file older than the stale bound: dead",
    lease: { unreadable: "empty" },
    observation: null,
    fileMtimeMs: NOW - DEFAULT_STALE_UNREADABLE_MS - 1,
    alive: false,
    reason: "unreadable-stale"
  }
]

describe("leaseVerdict", () => {
  for (const row of table) {
    it(row.name, () => {
      const verdict = leaseVerdict({
        lease: row.lease,
        self: row.self ?? self,
        observation: row.observation,
        now: row.now ?? NOW,
        remoteLeaseTtlMs: TTL,
        ...(row.fileMtimeMs === undefined ? {} : { fileMtimeMs: row.fileMtimeMs })
      })
      assert.strictEqual(verdict.reason, row.reason)
      assert.strictEqual(verdict.alive, row.alive)
      assert.isAbove(verdict.detail.length, 0)
    })
  }

  it("markers get the same verdict through leaseFacts", () => {
    const marker = leaseFacts({
      version: 1,
      purpose: "cleanup",
      host: "box",
      bootId: "boot-a",
      pid: 9,
      processStartedAt: 5,
      createdAt: NOW
    })
    const ask = (observation: PidObservation) =>
      leaseVerdict({ lease: marker, self, observation, now: NOW, remoteLeaseTtlMs: TTL })
    assert.strictEqual(ask(running(5)).reason, "same-boot-alive")
    assert.strictEqual(ask(running(6)).reason, "pid-reused")
    assert.strictEqual(ask(gone).reason, "same-boot-pid-gone")
  })

  it("a start-time tolerance absorbs clock jitter but not reuse", () => {
    const ask = (startTime: number) =>
      leaseVerdict({ lease: v2(), self, observation: running(startTime), now: NOW, remoteLeaseTtlMs: TTL, startTimeToleranceMs: 10 })
    assert.isTrue(ask(1010).alive)
    assert.isFalse(ask(1011).alive)
  })

  it("needsObservation: same host unless provably another boot", () => {
    assert.isTrue(needsObservation(v2(), self))
    assert.isTrue(needsObservation(v1, self))
    assert.isTrue(needsObservation(v2(), { hostname: "box", bootId: null }))
    assert.isFalse(needsObservation(v2({ bootId: "boot-old" }), self))
    assert.isFalse(needsObservation(v2({ host: "far" }), self))
  })

  const factsArb: fc.Arbitrary<LeaseFacts> = fc.record({
    host: fc.constantFrom("box", "far", "other"),
    bootId: fc.option(fc.constantFrom("boot-a", "boot-b"), { nil: undefined }),
    pid: fc.integer({ min: 1, max: 100 }),
    processStartedAt: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    heartbeatAt: fc.integer({ min: 0, max: 10_000 })
  })
  const selfArb: fc.Arbitrary<SelfFacts> = fc.record({
    hostname: fc.constantFrom("box", "far"),
    bootId: fc.option(fc.constantFrom("boot-a", "boot-b"), { nil: null })
  })
  const observationArb = fc.option(
    fc.record({ exists: fc.boolean(), startTime: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }) }),
    { nil: null }
  )

  it.prop(
    "unreadable with an unknown mtime is always alive",
    [fc.string(), selfArb, observationArb, fc.integer(), fc.nat(), fc.nat()],
    ([why, me, observation, now, ttl, stale]) => {
      const verdict = leaseVerdict({ lease: { unreadable: why }, self: me, observation, now, remoteLeaseTtlMs: ttl, fileMtimeMs: null, staleUnreadableMs: stale })
      assert.isTrue(verdict.alive)
      assert.strictEqual(verdict.reason, "unreadable")
      assert.isTrue(verdict.unreadable)
    }
  )

  it.prop(
    "unreadable: held exactly while the file is within the stale bound, whatever the observation; once stale, stale forever after",
    [fc.string(), selfArb, observationArb, fc.integer({ min: -1e6, max: 1e6 }), fc.integer({ min: -1e6, max: 1e6 }), fc.nat({ max: 1e6 }), fc.nat({ max: 1e6 })],
    ([why, me, observation, now, mtime, stale, later]) => {
      const at = (t: number) =>
        leaseVerdict({ lease: { unreadable: why }, self: me, observation, now: t, remoteLeaseTtlMs: 0, fileMtimeMs: mtime, staleUnreadableMs: stale })
      const verdict = at(now)
      assert.strictEqual(verdict.alive, now - mtime <= stale)
      assert.strictEqual(verdict.reason, verdict.alive ? "unreadable" : "unreadable-stale")
      if (!verdict.alive) assert.isFalse(at(now + later).alive)
    }
  )

  it.prop(
    "no remote timestamp pins a lease: once its file is past the stale bound, it is alive only with a heartbeat within the ttl of now",
    [factsArb, fc.integer({ min: -1e7, max: 1e7 }), fc.integer({ min: -1e7, max: 1e7 }), fc.nat({ max: 1e6 }), fc.nat({ max: 1e6 }), fc.nat({ max: 1e6 })],
    ([facts, heartbeatAt, now, ttl, stale, past]) => {
      const lease = { ...facts, host: "far", heartbeatAt }
      const verdict = leaseVerdict({ lease, self, observation: null, now, remoteLeaseTtlMs: ttl, fileMtimeMs: now - stale - 1 - past, staleUnreadableMs: stale })
      assert.strictEqual(verdict.alive, Math.abs(now - heartbeatAt) <= ttl)
      assert.strictEqual(verdict.unreadable === true, isFarFuture(heartbeatAt, now, ttl))
    }
  )

  it.prop(
    "other-host verdict is monotone in time: once stale, stale forever after",
    [factsArb, selfArb, fc.integer({ min: -5000, max: 20_000 }), fc.nat({ max: 20_000 }), fc.nat({ max: 5000 })],
    ([lease, me, now, later, ttl]) => {
      fc.pre(lease.host !== me.hostname)
      const at = (t: number) => leaseVerdict({ lease, self: me, observation: null, now: t, remoteLeaseTtlMs: ttl })
      const before = at(now)
      const after = at(now + later)
      if (!before.alive) assert.isFalse(after.alive)
      assert.strictEqual(before.alive, now - lease.heartbeatAt <= ttl)
    }
  )

  it.prop(
    "a dead local verdict is always backed by a proof: other boot, pid gone, or differing start times",
    [factsArb, selfArb, observationArb],
    ([lease, me, observation]) => {
      fc.pre(lease.host === me.hostname)
      const verdict = leaseVerdict({ lease, self: me, observation, now: 0, remoteLeaseTtlMs: 0 })
      const otherBoot = lease.bootId !== undefined && me.bootId !== null && lease.bootId !== me.bootId
      const gone = observation !== null && !observation.exists
      const reused = observation !== null && observation.exists && observation.startTime !== null &&
        lease.processStartedAt !== undefined && observation.startTime !== lease.processStartedAt
      assert.strictEqual(verdict.alive, !(otherBoot || gone || reused))
      // Whenever the verdict depended on the observation, the program was told to look.
      if (!otherBoot) assert.isTrue(needsObservation(lease, me))
    }
  )
})
