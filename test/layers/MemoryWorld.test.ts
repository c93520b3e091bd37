import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FastCheck, Fiber, TestClock } from "effect"
import { atomicTempTarget } from "../../src/domain/AtomicWrite.js"
import * as MemoryFileSystem from "../../src/layers/MemoryFileSystem.js"
import { isSimulatedCrash, MemoryDriver, MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { FileSystem } from "../../src/services/FileSystem.js"

const bytes = (text: string) => new TextEncoder().encode(text)

const fresh = (options?: MemoryFileSystem.MemoryFileSystemOptions) =>
  Effect.sync(() => {
    const world = MemoryWorld.make()
    return { world, fs: MemoryFileSystem.make(world, options) }
  })

/** A scenario with several kinds of mutating steps (recursive mkdir, atomic write, tree removal …). */
const scenario = (fs: FileSystem["Type"]) =>
  Effect.gen(function*() {
    yield* fs.makeDirectory("/app/runs/r1", { recursive: true })
    yield* fs.writeFileExclusive("/app/runs/r1/lease", bytes("lease"))
    yield* fs.writeFileAtomic("/app/runs/r1/manifest", bytes("v1"))
    yield* fs.symlink("/elsewhere", "/app/runs/r1/link")
    yield* fs.chmod("/app/runs/r1/lease", 0o644)
    yield* fs.rename("/app/runs/r1", "/app/runs/.trash-r1")
    yield* fs.removeTree("/app/runs/.trash-r1", { maxEntries: 100, maxDepth: 8 })
    return yield* fs.readDirectory("/app/runs")
  })

describe("MemoryWorld fault injection", () => {
  it.effect("fails the Nth matching call of an op, count times, with the errno and its reason", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* fresh()
      const fault = world.injectFault({ op: "writeFileExclusive", nth: 2, count: 2, errno: "EACCES" })
      const outcomes: Array<string> = []
      for (let i = 0; i < 5; i++) {
        const exit = yield* Effect.exit(fs.writeFileExclusive(`/f${i}`, bytes("x")))
        outcomes.push(Exit.isSuccess(exit) ? "ok" : Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.reason : "?")
      }
      assert.deepStrictEqual(outcomes, ["ok", "PermissionDenied", "PermissionDenied", "ok", "ok"])
      assert.strictEqual(fault.fired(), 2)
      assert.deepStrictEqual(Object.keys(world.tree("/")), ["/", "/f0", "/f3", "/f4"])
      // Other ops are not affected.
      yield* fs.lstat("/f0")
    }))

  it.effect("matches a path string or pattern on either path of the call; unknown errno is Unknown", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* fresh()
      yield* world.writeFixture("/d/a.lock", "a")
      yield* world.writeFixture("/d/b.txt", "b")
      world.injectFault({ path: /\.lock$/, count: Infinity, errno: "EIO" })
      world.injectFault({ op: "rename", path: "/d/target", errno: "EXDEV" })
      const locked = yield* Effect.flip(fs.readFile("/d/a.lock"))
      assert.deepStrictEqual([locked.reason, locked.errno, locked.method, locked.path], ["Unknown", "EIO", "readFile", "/d/a.lock"])
      yield* Effect.flip(fs.lstat("/d/a.lock"))
      yield* Effect.flip(fs.rename("/d/b.txt", "/d/b.lock"))
      yield* fs.readFile("/d/b.txt")
      const cross = yield* Effect.flip(fs.rename("/d/b.txt", "/d/target"))
      assert.strictEqual(cross.reason, "CrossDevice")
      yield* fs.rename("/d/b.txt", "/d/target") // count 1: spent
      world.clearFaults()
      yield* fs.readFile("/d/a.lock")
    }))

  it.effect("a fault can target one step of a compound call and one process", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const a = MemoryFileSystem.make(world, { hostname: "h", pid: 1 })
      const b = MemoryFileSystem.make(world, { hostname: "h", pid: 2 })
      world.injectFault({ op: "writeFileAtomic.rename", pid: 2, errno: "EBUSY" })
      const error = yield* Effect.flip(b.writeFileAtomic("/state", bytes("b")))
      assert.strictEqual(error.reason, "Busy")
      assert.deepStrictEqual(Object.keys(world.tree("/")), ["/"]) // the temp file was cleaned up
      yield* a.writeFileAtomic("/state", bytes("a"))
      assert.strictEqual(world.readFixtureText("/state"), "a")
      const handle = world.injectFault({ op: "removeTree.removeFile", path: "/t/2", errno: "EPERM" })
      for (const name of ["1", "2", "3"]) yield* world.writeFixture(`/t/${name}`, name)
      yield* Effect.flip(a.removeTree("/t", { maxEntries: 10, maxDepth: 4 }))
      assert.deepStrictEqual(Object.keys(world.tree("/t")), ["/t", "/t/2", "/t/3"])
      handle.remove()
      // Two one-block files and the directory: 3 blocks of 4 KiB; 2 bytes and a directory's 4096 apparent.
      assert.deepStrictEqual(yield* a.removeTree("/t", { maxEntries: 10, maxDepth: 4 }), { removedEntries: 2, complete: true, removedBytes: 3 * 4096, removedApparentBytes: 4096 + 2 })
    }))
})

describe("MemoryWorld crash point", () => {
  it.effect("a crash at every step leaves the tree as it was after exactly that many steps; recover resumes", () =>
    Effect.gen(function*() {
      const clean = yield* fresh()
      const before = clean.world.mutationCount
      const listing = yield* scenario(clean.fs)
      assert.deepStrictEqual(listing, [])
      const steps = clean.world.mutationCount - before
      assert.isAtLeast(steps, 10)
      for (let k = 0; k <= steps; k++) {
        const { world, fs } = yield* fresh()
        world.crashAfter(k)
        const exit = yield* Effect.exit(scenario(fs))
        // After k steps every further call fails (the final readDirectory too when k = steps).
        assert.strictEqual(world.mutationCount, k)
        assert.isTrue(world.crashed)
        assert.isTrue(Exit.isFailure(exit))
        // The crash is a test-only errno, never a public reason.
        if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
          assert.deepStrictEqual([exit.cause.error.reason, exit.cause.error.errno], ["Unknown", "ECRASHED"])
          assert.isTrue(isSimulatedCrash(exit.cause.error))
        }
        const frozen = world.tree()
        const read = yield* Effect.flip(fs.lstat("/"))
        assert.isTrue(isSimulatedCrash(read))
        yield* Effect.flip(fs.writeFileExclusive("/after-crash", bytes("x")))
        assert.deepStrictEqual(world.tree(), frozen)
        world.recover()
        assert.isFalse(world.crashed)
        yield* fs.writeFileExclusive("/after-recover", bytes("x"))
      }
    }))

  it.effect("a crash inside writeFileAtomic leaves the temp file and the old content", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* fresh({ pid: 42 })
      yield* world.writeFixture("/dir/state", "old")
      world.crashAfter(1)
      yield* Effect.flip(fs.writeFileAtomic("/dir/state", bytes("new")))
      const names = Object.keys(world.tree("/dir"))
      assert.strictEqual(names.length, 3)
      // The one temp-name rule of domain/AtomicWrite.ts (the doctor recognises it): pid 42 is 002a in hex.
      assert.match(names[1]!, /^\/dir\/\.state\.tmp-002a[0-9a-f]{8}$/)
      assert.strictEqual(atomicTempTarget(names[1]!.slice("/dir/".length)), "state")
      assert.strictEqual(world.readFixtureText("/dir/state"), "old")
      assert.strictEqual(world.readFixtureText(names[1]!), "new")
    }))

  it.effect("a crash scoped to one process leaves the others running", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const dying = MemoryFileSystem.make(world, { hostname: "h", pid: 1 })
      const living = MemoryFileSystem.make(world, { hostname: "h", pid: 2 })
      world.crashAfter(1, { hostname: "h", pid: 1 })
      yield* living.makeDirectory("/x") // not counted for pid 1
      yield* dying.makeDirectory("/y")
      yield* Effect.flip(dying.makeDirectory("/z"))
      yield* living.makeDirectory("/z")
      assert.deepStrictEqual(Object.keys(world.tree("/")), ["/", "/x", "/y", "/z"])
    }))

  it.effect.prop(
    "a recursive makeDirectory crashed after k steps created exactly k directories",
    [FastCheck.integer({ min: 1, max: 6 }), FastCheck.nat(6)],
    ([depth, k]) =>
      Effect.gen(function*() {
        const { world, fs } = yield* fresh()
        world.crashAfter(k)
        const path = Array.from({ length: depth }, (_, i) => `/d${i}`).join("")
        const exit = yield* Effect.exit(fs.makeDirectory(path, { recursive: true }))
        assert.strictEqual(Exit.isSuccess(exit), k >= depth)
        assert.strictEqual(Object.keys(world.tree("/")).length - 1, Math.min(k, depth))
      }),
    { fastCheck: { numRuns: 25 } }
  )
})

describe("MemoryWorld journal", () => {
  it.effect("records every call with its outcome, steps of compound calls, and can be cleared", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* fresh({ hostname: "h1", pid: 7 })
      yield* fs.makeDirectory("/a")
      yield* Effect.flip(fs.makeDirectory("/a"))
      yield* fs.writeFileAtomic("/a/f", bytes("x"))
      yield* fs.rename("/a/f", "/a/g")
      const journal = world.journal.map(({ seq: _seq, ...rest }) => rest)
      const temp = journal[2]!.path
      assert.deepStrictEqual(journal, [
        { op: "makeDirectory", path: "/a", ok: true, hostname: "h1", pid: 7 },
        { op: "makeDirectory", path: "/a", ok: false, errno: "EEXIST", hostname: "h1", pid: 7 },
        { op: "writeFileAtomic.create", path: temp, ok: true, hostname: "h1", pid: 7 },
        { op: "writeFileAtomic.rename", path: temp, path2: "/a/f", ok: true, hostname: "h1", pid: 7 },
        { op: "writeFileAtomic", path: "/a/f", ok: true, hostname: "h1", pid: 7 },
        { op: "rename", path: "/a/f", path2: "/a/g", ok: true, hostname: "h1", pid: 7 }
      ])
      assert.deepStrictEqual(world.journal.map((e) => e.seq), [1, 2, 3, 4, 5, 6])
      world.clearJournal()
      assert.strictEqual(world.journal.length, 0)
      yield* world.writeFixture("/quiet", "fixtures are not journaled")
      assert.strictEqual(world.journal.length, 0)
    }))
})

describe("MemoryWorld devices", () => {
  it.effect("mount makes another device: EXDEV across it, EBUSY on the mount point, rename within works", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* fresh()
      yield* world.writeFixture("/mnt/usb/old", "x")
      yield* world.writeFixture("/home/f", "f")
      world.mount("/mnt/usb", 9)
      assert.strictEqual((yield* fs.lstat("/mnt/usb")).dev, 9)
      assert.strictEqual((yield* fs.lstat("/mnt/usb/old")).dev, 9)
      assert.strictEqual((yield* fs.lstat("/home/f")).dev, 1)
      yield* fs.makeDirectory("/mnt/usb/new")
      assert.strictEqual((yield* fs.lstat("/mnt/usb/new")).dev, 9)
      assert.strictEqual((yield* Effect.flip(fs.rename("/home/f", "/mnt/usb/f"))).errno, "EXDEV")
      assert.strictEqual((yield* Effect.flip(fs.rename("/mnt/usb/old", "/home/old"))).errno, "EXDEV")
      assert.strictEqual((yield* Effect.flip(fs.link("/home/f", "/mnt/usb/f"))).errno, "EXDEV")
      assert.strictEqual((yield* Effect.flip(fs.rename("/mnt/usb", "/mnt/other"))).errno, "EBUSY")
      yield* fs.removeFile("/mnt/usb/old")
      yield* fs.removeDirectory("/mnt/usb/new")
      assert.strictEqual((yield* Effect.flip(fs.removeDirectory("/mnt/usb"))).errno, "EBUSY")
      yield* fs.rename("/home/f", "/home/g")
      // Copying is how data crosses devices.
      yield* fs.copyFile("/home/g", "/mnt/usb/g")
      assert.strictEqual(world.readFixtureText("/mnt/usb/g"), "f")
    }))
})

describe("MemoryWorld concurrency", () => {
  it.effect("two fibers creating the same path exclusively: exactly one wins", () =>
    Effect.gen(function*() {
      for (let round = 0; round < 20; round++) {
        const world = MemoryWorld.make()
        const a = MemoryFileSystem.make(world, { pid: 1 })
        const b = MemoryFileSystem.make(world, { pid: 2 })
        const results = yield* Effect.all(
          [a, b].map((fs, i) => Effect.either(fs.writeFileExclusive("/lock", bytes(`owner ${i}`)))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(results.filter((r) => r._tag === "Right").length, 1)
        const loser = results.find((r) => r._tag === "Left")
        assert.strictEqual(loser?._tag === "Left" ? loser.left.errno : "", "EEXIST")
        const winner = results.findIndex((r) => r._tag === "Right")
        assert.strictEqual(world.readFixtureText("/lock"), `owner ${winner}`)
      }
    }))

  it.effect("operations of concurrent fibers interleave (a yield before each operation)", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const worker = (pid: number) =>
        Effect.gen(function*() {
          const fs = MemoryFileSystem.make(world, { pid })
          for (let i = 0; i < 5; i++) yield* fs.makeDirectory(`/p${pid}-${i}`)
        })
      yield* Effect.all([worker(1), worker(2)], { concurrency: "unbounded" })
      const pids = world.journal.map((e) => e.pid)
      assert.strictEqual(pids.length, 10)
      const switches = pids.filter((pid, i) => i > 0 && pid !== pids[i - 1]).length
      assert.isAtLeast(switches, 4)
    }))
})

describe("MemoryWorld time", () => {
  it.effect("mtimes come from Clock, so TestClock drives age", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* fresh()
      yield* TestClock.setTime(1_000_000)
      yield* fs.makeDirectory("/d")
      yield* TestClock.adjust("1 hour")
      yield* fs.writeFileExclusive("/d/f", bytes("x"))
      assert.strictEqual((yield* fs.lstat("/d/f")).mtimeMs, 1_000_000 + 3_600_000)
      // Adding an entry changes the directory's mtime; reading does not.
      assert.strictEqual((yield* fs.lstat("/d")).mtimeMs, 1_000_000 + 3_600_000)
      yield* TestClock.adjust("1 hour")
      yield* fs.readFile("/d/f")
      assert.strictEqual((yield* fs.lstat("/d/f")).mtimeMs, 1_000_000 + 3_600_000, "reading does not touch mtime")
      yield* world.writeFixture("/d/g", "g")
      assert.strictEqual(world.tree("/d")["/d/g"]?.mtimeMs, 1_000_000 + 7_200_000)
      yield* world.writeFixture("/d/old", "o", { mtimeMs: 5 })
      assert.strictEqual((yield* fs.lstat("/d/old")).mtimeMs, 5)
    }))

  it.effect("a fiber sleeping on the TestClock sees the world change meanwhile", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* fresh()
      const waiter = yield* Effect.fork(Effect.zipRight(Effect.sleep("10 seconds"), fs.lstat("/later")))
      yield* world.writeFixture("/later", "now")
      yield* TestClock.adjust("10 seconds")
      const info = yield* Fiber.join(waiter)
      assert.strictEqual(info.type, "File")
    }))
})

describe("MemoryWorld snapshot and layers", () => {
  it.effect("tree() describes every entry; layerMemory exposes the world as MemoryDriver", () =>
    Effect.gen(function*() {
      const driver = yield* MemoryDriver
      const fs = yield* FileSystem
      yield* fs.makeDirectory("/r", { mode: 0o750 })
      yield* fs.writeFileExclusive("/r/f", bytes("abc"))
      yield* fs.link("/r/f", "/r/h")
      yield* fs.symlink("f", "/r/l")
      const tree = driver.tree("/r")
      assert.deepStrictEqual(Object.keys(tree), ["/r", "/r/f", "/r/h", "/r/l"])
      assert.strictEqual(tree["/r"]?.mode, 0o750)
      assert.strictEqual(tree["/r/f"]?.nlink, 2)
      assert.strictEqual(tree["/r/f"]?.ino, tree["/r/h"]?.ino)
      assert.strictEqual(tree["/r/f"]?.hash, tree["/r/h"]?.hash)
      assert.strictEqual(tree["/r/l"]?.target, "f")
      assert.strictEqual(tree["/r/f"]?.uid, 1000)
      assert.deepStrictEqual(driver.tree("/absent"), {})
    }).pipe(Effect.provide(MemoryFileSystem.layerMemory())))
})

describe("MemoryWorld scheduling jitter", () => {
  it.effect("without jitter every call yields once; with it, 1..maxYields+1 times, the same for the same seed", () =>
    Effect.sync(() => {
      const plain = MemoryWorld.make()
      assert.deepStrictEqual(Array.from({ length: 5 }, () => plain.yieldsBeforeCall()), [1, 1, 1, 1, 1])
      const draws = (seed: number) => {
        const world = MemoryWorld.make({ jitter: { seed, maxYields: 3 } })
        return Array.from({ length: 200 }, () => world.yieldsBeforeCall())
      }
      const a = draws(42)
      assert.deepStrictEqual(a, draws(42))
      assert.notDeepEqual(a, draws(43))
      assert.deepStrictEqual([...new Set(a)].sort(), [1, 2, 3, 4], "every count in range occurs, none outside")
    }))

  it.effect("a jittered process can run several calls while another runs one", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ jitter: { seed: 7, maxYields: 4 } })
      const fs = MemoryFileSystem.make(world)
      const order: Array<string> = []
      const actor = (name: string) =>
        Effect.forEach([1, 2, 3, 4], (i) => Effect.tap(fs.makeDirectory(`/${name}${i}`), () => order.push(name)), { discard: true })
      yield* Effect.all([actor("a"), actor("b")], { concurrency: "unbounded", discard: true })
      const alternating = order.every((name, i) => i === 0 || name !== order[i - 1])
      assert.isFalse(alternating, `order ${order.join("")}`)
    }))
})
