/**
 * Liveness across hosts in the simulated world (docs/safety.md "How runs stay safe": leases and liveness): hosts
 * whose wall clocks are off by minutes or a day, and machines sharing one host name, share one file system
 * whose clock stamps every mtime. A holder elsewhere is judged by its lease file's age on that clock, so no
 * skew makes a live run look dead, and a silent one is reclaimed after the TTL + margin whatever the pruner's
 * clock says.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { REMOTE_MARGIN_MS } from "../../src/domain/Liveness.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { readLeases } from "../../src/services/internal/runFacts.js"
import { doctorAt } from "../support/doctor.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const MINUTE = 60 * 1000
const DAY = 24 * 60 * MINUTE
const TTL = 15 * MINUTE // the default remote lease TTL
const ALL_INACTIVE = { maxInactiveRuns: 0 }
const TENANT = { category: "tools", tenant: "bash" } as const
/** The world's clock starts at a real date, so a host a day behind still stamps valid times. */
const EPOCH = Date.UTC(2027, 0, 15)

describe("liveness across hosts with skewed clocks (Memory)", () => {
  it.scoped("a host 20 minutes ahead never deletes another host's live run", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
      const holder = yield* spawnProcess(world, { hostname: "a" })
      const pruner = yield* spawnProcess(world, { hostname: "b", clockSkewMs: 20 * MINUTE })
      const run = yield* holder.run(holder.workRuns.acquire({ ...TENANT, retention: false }))
      // The lease records the holder's machine beside its host name and boot.
      const lease = JSON.parse(world.readFixtureText(run.leasePath)!)
      assert.deepStrictEqual([lease.host, lease.machineId, lease.bootId], ["a", holder.host.machineId, holder.host.bootId])
      assert.match(lease.machineId, /^[0-9a-f]{32}$/)
      for (let i = 0; i < 4; i++) {
        const report = yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
        assert.deepStrictEqual(report.removed, [])
        assert.deepStrictEqual(report.active, [run.runId])
        yield* TestClock.adjust(7 * MINUTE) // the holder beats every 5 minutes meanwhile
      }
      assert.isDefined(world.readFixtureText(run.leasePath))
    }))

  it.scoped("a host a day behind keeps its own live run, and prunes a day behind without harm", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
      const holder = yield* spawnProcess(world, { hostname: "late", clockSkewMs: -DAY })
      const pruner = yield* spawnProcess(world, { hostname: "b" })
      const run = yield* holder.run(holder.workRuns.acquire({ ...TENANT, retention: false }))
      yield* TestClock.adjust(TTL)
      const report = yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
      assert.deepStrictEqual(report.active, [run.runId])
      // And the late host judging the correct one: the same.
      const other = yield* pruner.run(pruner.workRuns.acquire({ ...TENANT, retention: false }))
      yield* TestClock.adjust(TTL)
      const back = yield* holder.run(holder.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
      assert.deepStrictEqual([...back.active].sort(), [run.runId, other.runId].sort())
      assert.deepStrictEqual(back.removed, [])
    }))

  it.scoped("two machines with one host name and other boot ids never delete each other's live runs (cloned machine id too)", () =>
    Effect.gen(function*() {
      for (const clone of [false, true]) {
        yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
        if (clone) {
          world.addHost("m1", { machineId: "c".repeat(32), bootedAtMs: EPOCH - DAY })
          world.addHost("m2", { machineId: "c".repeat(32), bootedAtMs: EPOCH - DAY })
        }
        const one = yield* spawnProcess(world, { hostname: "twin", machine: "m1" })
        const two = yield* spawnProcess(world, { hostname: "twin", machine: "m2", clockSkewMs: 3 * MINUTE })
        assert.notStrictEqual(one.host.bootId, two.host.bootId)
        yield* TestClock.adjust(MINUTE)
        const a = yield* one.run(one.workRuns.acquire({ ...TENANT, retention: false }))
        const b = yield* two.run(two.workRuns.acquire({ ...TENANT, retention: false }))
        for (let i = 0; i < 3; i++) {
          const fromTwo = yield* two.run(two.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
          const fromOne = yield* one.run(one.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
          assert.deepStrictEqual([fromTwo.removed, fromOne.removed], [[], []], `clone ${clone}`)
          assert.deepStrictEqual([...fromTwo.active].sort(), [a.runId, b.runId].sort())
          yield* TestClock.adjust(6 * MINUTE)
        }
      }
    }))

  it.scoped("a silent holder elsewhere is reclaimed after the ttl + margin, whatever the pruner's clock says", () =>
    Effect.gen(function*() {
      for (const [holderSkew, prunerSkew] of [[-DAY, 20 * MINUTE], [20 * MINUTE, -DAY], [0, 0]] as const) {
        yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
        // A host that stopped beating (killed, or cut off) while its lease stays on disk.
        const holder = yield* spawnProcess(world, { hostname: "gone", clockSkewMs: holderSkew, heartbeats: false })
        const pruner = yield* spawnProcess(world, { hostname: "b", clockSkewMs: prunerSkew })
        const run = yield* holder.run(holder.workRuns.acquire({ ...TENANT, retention: false }))
        yield* TestClock.adjust(TTL + REMOTE_MARGIN_MS)
        const within = yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
        assert.deepStrictEqual(within.active, [run.runId], `skews ${holderSkew}/${prunerSkew}: held within the ttl + margin`)
        yield* TestClock.adjust(1)
        const after = yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
        assert.deepStrictEqual(after.removed.map((r) => r.runId), [run.runId], `skews ${holderSkew}/${prunerSkew}: reclaimed after`)
      }
    }))

  it.scoped("a live pruner's marker on a host a day behind keeps a pruner 20 minutes ahead out (busy)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
      const pruner = yield* spawnProcess(world, { hostname: "b", clockSkewMs: 20 * MINUTE })
      const tenantDir = `${AGENT_DIR}/work/tools/bash`
      yield* pruner.run(pruner.workRuns.acquire({ ...TENANT, retention: false }).pipe(Effect.flatMap((r) => r.release())))
      // A pruner on host "late" took the tenant's marker a minute ago (by its clock: a day and a minute ago).
      const late = world.spawn("late")
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      yield* world.writeFixture(`${tenantDir}/.prune`, JSON.stringify({ version: 1, purpose: "prune", host: "late", machineId: world.machineId("late"), bootId: world.bootId("late"), pid: late, createdAt: now - DAY - MINUTE }))
      yield* TestClock.adjust(MINUTE)
      const report = yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
      assert.isTrue(report.busy)
      assert.isDefined(world.readFixtureText(`${tenantDir}/.prune`))
      // Silent past the ttl + margin: reclaimed, and the prune runs.
      yield* TestClock.adjust(TTL + REMOTE_MARGIN_MS)
      const later = yield* pruner.run(pruner.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
      assert.isFalse(later.busy)
      assert.strictEqual(later.removed.length, 1)
    }))

  it.scoped("the boot shortcut: a lease of this machine's previous boot, older than the ttl, is dead without the margin", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
      world.addHost("m", { bootedAtMs: EPOCH })
      const before = yield* spawnProcess(world, { hostname: "m", heartbeats: false })
      yield* TestClock.adjust(DAY)
      const run = yield* before.run(before.workRuns.acquire({ ...TENANT, retention: false }))
      const written = yield* Effect.clockWith((c) => c.currentTimeMillis)
      yield* TestClock.adjust(MINUTE)
      world.reboot("m", { atMs: written + MINUTE })
      const after = yield* spawnProcess(world, { hostname: "m" })
      // Within the ttl: a fresh lease is alive whatever the identity says.
      yield* TestClock.adjust(TTL - MINUTE)
      assert.deepStrictEqual((yield* after.run(after.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))).active, [run.runId])
      // Past the ttl, within the margin: another host's lease would still be held; this one predates the boot.
      yield* TestClock.adjust(1)
      const report = yield* after.run(after.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
      assert.deepStrictEqual(report.removed.map((r) => r.runId), [run.runId])
    }))

  it.scoped("the doctor judges another host's holders without writing anything (no clock probe); a remover's probe leaves nothing behind", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
      const holder = yield* spawnProcess(world, { hostname: "a" })
      const run = yield* holder.run(holder.workRuns.acquire({ ...TENANT, retention: false }))
      // The doctor reads its own clock for the file system's (advisory: it writes no probe, DR1); here it is right.
      const doctorHost = yield* spawnProcess(world, { hostname: "c" })
      yield* TestClock.adjust(MINUTE)
      const before = world.mutationCount
      const report = yield* doctorAt(AGENT_DIR).pipe(Effect.provideService(FileSystem, doctorHost.fs), Effect.provideService(Host, doctorHost.host))
      assert.strictEqual(world.mutationCount, before, "the doctor wrote nothing")
      assert.deepStrictEqual(report.findings.filter((f) => f.code === "work-dead-lease"), [])
      const reader = yield* spawnProcess(world, { hostname: "b", clockSkewMs: 20 * MINUTE })
      // `work rm` judges the run's leases before it takes any marker: its clock comes from a probe.
      const removed = yield* reader.run(reader.workRuns.removeRuns({ ...TENANT, runIds: [run.runId] }))
      assert.deepStrictEqual(removed.map((o) => o._tag), ["Held"])
      assert.isTrue(world.journal.some((e) => e.op === "writeFileExclusive" && /\/\.cleanup\/\.clock-\d+-[0-9a-f]{8}\.reclaim$/.test(e.path)), "it probed")
      assert.deepStrictEqual(Object.keys(world.tree(`${AGENT_DIR}/work/tools/bash/.cleanup`)).filter((p) => p.includes(".clock-")), [])
    }))

  it.scoped("a clock probe left by a killed prober is a dead reclaim lock: the next prune reclaims it, nobody reports it unowned", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world, { hostname: "a" })
      yield* p.run(p.workRuns.acquire({ ...TENANT, retention: false }).pipe(Effect.flatMap((r) => r.release())))
      const tenantDir = `${AGENT_DIR}/work/tools/bash`
      const gone = world.spawn("a")
      world.kill("a", gone)
      const probe = `${tenantDir}/.cleanup/.clock-${gone}-0badc0de.reclaim`
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      yield* world.writeFixture(probe, JSON.stringify({ version: 1, purpose: "clock-probe", host: "a", machineId: world.machineId("a"), bootId: world.bootId("a"), pid: gone, createdAt: now }))
      const doctor = yield* doctorAt(AGENT_DIR).pipe(Effect.provideService(FileSystem, p.fs), Effect.provideService(Host, p.host))
      assert.deepStrictEqual(doctor.findings.filter((f) => f.path.includes(".clock-")).map((f) => f.code), ["work-dead-marker"])
      const report = yield* p.run(p.workRuns.prune({ ...TENANT, policy: ALL_INACTIVE }))
      assert.deepStrictEqual([report.unowned, report.unreadable, report.errors], [[], [], []])
      assert.isUndefined(world.readFixtureText(probe))
    }))

  it.scoped("no probe through a link: with .cleanup a symlink, the file system's clock is not read and another host's holder is held", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(EPOCH)
      const world = MemoryWorld.make()
      const holder = yield* spawnProcess(world, { hostname: "a", heartbeats: false })
      const run = yield* holder.run(holder.workRuns.acquire({ ...TENANT, retention: false }))
      yield* world.mkdirFixture("/elsewhere")
      yield* world.symlinkFixture("/elsewhere", `${AGENT_DIR}/work/tools/bash/.cleanup`)
      yield* TestClock.adjust(2 * TTL) // long silent: only a probe could prove it
      const remover = yield* spawnProcess(world, { hostname: "b" })
      const outcomes = yield* remover.run(remover.workRuns.removeRuns({ ...TENANT, runIds: [run.runId] }))
      assert.deepStrictEqual(outcomes.map((o) => o._tag), ["Held"])
      // (Silent for twice the TTL: with a probe it would be dead; without one it is held.)
      const judged = yield* remover.run(readLeases({ fs: remover.fs, host: remover.host, remoteLeaseTtlMs: TTL, staleUnreadableMs: TTL }, run.path))
      assert.deepStrictEqual(judged.leases.map((l) => [l.verdict.reason, l.verdict.alive]), [["remote-unjudged", true]])
      assert.match(judged.leases[0]!.verdict.detail, /clock could not be read/)
      assert.deepStrictEqual(Object.keys(world.tree("/elsewhere")), ["/elsewhere"], "nothing was written through the link")
    }))
})
