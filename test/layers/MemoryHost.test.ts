import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import * as MemoryFileSystem from "../../src/layers/MemoryFileSystem.js"
import * as MemoryHost from "../../src/layers/MemoryHost.js"
import { MemoryDriver, MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"

describe("MemoryWorld hosts (driver)", () => {
  it("spawn gives fresh pids with increasing start times; kill removes them", () => {
    const world = MemoryWorld.make()
    world.addHost("a")
    const p1 = world.spawn("a")
    const p2 = world.spawn("a")
    assert.notStrictEqual(p1, p2)
    const t1 = world.startTimeOf("a", p1)!
    const t2 = world.startTimeOf("a", p2)!
    assert.isAbove(t2, t1)
    assert.isTrue(world.kill("a", p1))
    assert.isFalse(world.kill("a", p1))
    assert.isNull(world.startTimeOf("a", p1))
    assert.deepStrictEqual([...world.processes("a").keys()], [p2])
  })

  it("a reused pid number gets a new start time", () => {
    const world = MemoryWorld.make()
    const pid = world.spawn("a", { pid: 4242 })
    const first = world.startTimeOf("a", pid)
    world.kill("a", pid)
    assert.strictEqual(world.spawn("a", { pid: 4242 }), 4242)
    const second = world.startTimeOf("a", 4242)
    assert.notStrictEqual(second, first)
    // Reusing a live pid replaces the process, too.
    world.spawn("a", { pid: 4242 })
    assert.notStrictEqual(world.startTimeOf("a", 4242), second)
  })

  it("reboot changes the boot id, clears the table and restarts pids and start times", () => {
    const world = MemoryWorld.make()
    const pid = world.spawn("a")
    const start = world.startTimeOf("a", pid)
    const boot = world.bootId("a")
    const newBoot = world.reboot("a")
    assert.notStrictEqual(newBoot, boot)
    assert.strictEqual(world.bootId("a"), newBoot)
    assert.strictEqual(world.processes("a").size, 0)
    // The same pid and start time come back: only the boot id tells the two processes apart.
    assert.strictEqual(world.spawn("a"), pid)
    assert.strictEqual(world.startTimeOf("a", pid), start)
  })

  it("hosts are independent", () => {
    const world = MemoryWorld.make()
    const pid = world.spawn("a")
    world.addHost("b")
    assert.isNull(world.startTimeOf("b", pid))
    assert.notStrictEqual(world.bootId("a"), world.bootId("b"))
    world.reboot("b")
    assert.isNotNull(world.startTimeOf("a", pid))
  })
})

describe("MemoryHost", () => {
  it.effect("answers pid questions from its own host only", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const other = world.spawn("b", { pid: 500 })
      const host = MemoryHost.make(world, { hostname: "a" })
      assert.strictEqual(host.hostname, "a")
      assert.strictEqual(host.bootId, world.bootId("a"))
      assert.strictEqual(host.selfStartTime, world.startTimeOf("a", host.pid))
      assert.isTrue(yield* host.pidExists(host.pid))
      assert.isFalse(yield* host.pidExists(other))
      assert.isNull(yield* host.processStartTime(other))
      const local = world.spawn("a", { pid: 500 })
      assert.isTrue(yield* host.pidExists(local))
      assert.strictEqual(yield* host.processStartTime(local), world.startTimeOf("a", 500))
      world.kill("a", local)
      assert.isFalse(yield* host.pidExists(local))
    }))

  it.effect("adopts a live pid, spawns a dead one, and reports uid, home, cwd and env", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const pid = world.spawn("a", { pid: 77 })
      const adopted = MemoryHost.make(world, { hostname: "a", pid })
      assert.strictEqual(adopted.selfStartTime, world.startTimeOf("a", 77))
      const spawned = MemoryHost.make(world, { hostname: "a", pid: 88, uid: 0, home: "/root", cwd: "/tmp", env: { PI: "1" } })
      assert.strictEqual(spawned.pid, 88)
      assert.isTrue(yield* spawned.pidExists(88))
      assert.deepStrictEqual([spawned.uid, spawned.homeDir, spawned.cwd], [0, "/root", "/tmp"])
      assert.strictEqual(spawned.env("PI"), "1")
      assert.isUndefined(spawned.env("toString"))
      assert.deepStrictEqual([adopted.uid, adopted.homeDir, adopted.cwd], [1000, "/home/user", "/"])
    }))

  it.effect("the Host layer of one process over a shared world", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const host = yield* Effect.provide(Host, MemoryHost.layer(world, { hostname: "x", pid: 9 }))
      assert.strictEqual(host.pid, 9)
      world.reboot("x")
      assert.isFalse(yield* host.pidExists(9)) // the process did not survive the reboot
    }))

  it.effect("layerMemory: two processes sharing one world see each other's files and pids", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const process = (pid: number, uid: number) =>
        MemoryFileSystem.layerMemory({ world, hostname: "shared", pid, uid })
      const first = yield* Effect.gen(function*() {
        const fs = yield* FileSystem
        yield* fs.makeDirectory("/run")
        return yield* Host
      }).pipe(Effect.provide(process(10, 1001)))
      const seen = yield* Effect.gen(function*() {
        const fs = yield* FileSystem
        const host = yield* Host
        const driver = yield* MemoryDriver
        assert.strictEqual(driver, world)
        return {
          uid: (yield* fs.lstat("/run")).uid,
          alive: yield* host.pidExists(first.pid),
          start: yield* host.processStartTime(first.pid)
        }
      }).pipe(Effect.provide(Layer.fresh(process(11, 1002))))
      assert.deepStrictEqual(seen, { uid: 1001, alive: true, start: first.selfStartTime })
      assert.deepStrictEqual(world.journal.map((e) => [e.op, e.pid]), [["makeDirectory", 10], ["lstat", 11]])
    }))

  it.effect("machines: several may report one host name, each with its own pids, boot and machine id; a clone shares the id", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      world.addHost("m1")
      world.addHost("m3", { machineId: world.machineId("m1") })
      const one = MemoryHost.make(world, { hostname: "twin", machine: "m1" })
      const two = MemoryHost.make(world, { hostname: "twin", machine: "m2" })
      const clone = MemoryHost.make(world, { hostname: "twin", machine: "m3" })
      assert.deepStrictEqual([one.hostname, two.hostname], ["twin", "twin"])
      assert.notStrictEqual(one.bootId, two.bootId)
      assert.match(one.machineId ?? "", /^[0-9a-f]{32}$/)
      assert.notStrictEqual(one.machineId, two.machineId)
      assert.strictEqual(clone.machineId, one.machineId)
      // Each machine answers for its own process table only.
      assert.isTrue(yield* one.pidExists(one.pid))
      world.kill("m1", one.pid)
      assert.isFalse(yield* one.pidExists(one.pid))
      assert.strictEqual(yield* two.pidExists(two.pid), true)
      world.addHost("bare", { machineId: null })
      assert.isNull(MemoryHost.make(world, { hostname: "bare" }).machineId)
    }))

  it.effect("uptime is read against the world's clock whatever the process's skew; unknown until a boot time is given", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      world.addHost("known", { bootedAtMs: 1_000 })
      const skewed = MemoryHost.make(world, { hostname: "known", clockSkewMs: -60_000 })
      const unknown = MemoryHost.make(world, { hostname: "other" })
      yield* TestClock.setTime(11_000)
      assert.strictEqual(yield* Effect.withClock(skewed.uptimeMs!, MemoryHost.skewedClock(yield* Effect.clock, -60_000)), 10_000)
      assert.isNull(yield* unknown.uptimeMs!)
      world.reboot("known", { atMs: 10_500 })
      assert.strictEqual(yield* Effect.withClock(skewed.uptimeMs!, MemoryHost.skewedClock(yield* Effect.clock, -60_000)), 500)
      world.reboot("known")
      assert.isNull(yield* skewed.uptimeMs!)
    }))

  it.effect("a process whose clock is skewed sees its Clock shifted; the files it writes are stamped on the world's clock", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture("/w")
      yield* TestClock.setTime(5_000_000)
      const fs = MemoryFileSystem.make(world, { hostname: "ahead", clockSkewMs: 1_200_000 })
      const [skewedNow, info] = yield* Effect.withClock(
        Effect.gen(function*() {
          yield* fs.writeFileExclusive("/w/f", new Uint8Array([1]))
          return [yield* Effect.clockWith((c) => c.currentTimeMillis), yield* fs.lstat("/w/f")] as const
        }),
        MemoryHost.skewedClock(yield* Effect.clock, 1_200_000)
      )
      assert.strictEqual(skewedNow, 5_000_000 + 1_200_000)
      assert.strictEqual(info.mtimeMs, 5_000_000)
      assert.strictEqual(yield* Effect.clockWith((c) => c.currentTimeMillis), 5_000_000, "the caller's own clock is untouched")
    }))
})
