/**
 * `platformLayer` (pi-agent-storage/testing) beyond the conformance suite: the world's features apply to the
 * platform's calls as to the library's — faults by `platform:<op>` fail a call with the reason Node's layer
 * gives that errno, a crash point stops the process's platform calls and counts their mutating steps, the
 * journal records them — and the harness's calls and the library's meet in one tree as one process.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import type { PlatformError } from "@effect/platform/Error"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import { FileSystem as PortFileSystem, Storage, WorkRuns } from "../../src/index.js"
import { isSimulatedCrash, MemoryWorld, platformLayer } from "../../src/testing.js"

const encoder = new TextEncoder()
const bytes = (s: string) => encoder.encode(s)

/** Node's mapping (`@effect/platform-node-shared` internal/error.ts), written out: the test's own truth. */
const NODE_REASONS: ReadonlyArray<readonly [string, string]> = [
  ["ENOENT", "NotFound"],
  ["EACCES", "PermissionDenied"],
  ["EEXIST", "AlreadyExists"],
  ["EISDIR", "BadResource"],
  ["ENOTDIR", "BadResource"],
  ["ELOOP", "BadResource"],
  ["EBUSY", "Busy"],
  ["EPERM", "Unknown"],
  ["ENOSPC", "Unknown"],
  ["EIO", "Unknown"],
  ["ENOTEMPTY", "Unknown"],
  ["EXDEV", "Unknown"]
]

const causeCode = (error: PlatformError): unknown => (error._tag === "SystemError" ? (error.cause as { code?: unknown } | undefined)?.code : undefined)

/** A world with /work and one platform process on it. */
const setUp = (options?: Parameters<typeof platformLayer>[1]) =>
  Effect.gen(function*() {
    const world = MemoryWorld.make()
    yield* world.mkdirFixture("/work", { mode: 0o755 })
    yield* world.writeFixture("/work/existing.txt", "existing")
    yield* world.mkdirFixture("/work/dir/sub")
    yield* world.writeFixture("/work/dir/sub/f", "f")
    const context = yield* Layer.build(platformLayer(world, options))
    const fs = yield* Effect.provide(FileSystem.FileSystem, context)
    return { world, fs, context }
  })

/** One call per world op a harness is likely to meet, each on a path that would otherwise succeed. */
const operations = (fs: FileSystem.FileSystem) => ({
  writeFile: fs.writeFileString("/work/new.txt", "x"),
  readFile: fs.readFile("/work/existing.txt"),
  open: Effect.scoped(fs.open("/work/existing.txt")),
  // Appending: the sink's open changes nothing, so the tree shows the failed write alone.
  writeAll: Stream.run(Stream.make(bytes("x")), fs.sink("/work/existing.txt", { flag: "a" })),
  readAlloc: Stream.runDrain(fs.stream("/work/existing.txt")),
  makeDirectory: fs.makeDirectory("/work/a/b", { recursive: true }),
  readDirectory: fs.readDirectory("/work", { recursive: true }),
  stat: fs.stat("/work/existing.txt"),
  // `access` itself: `exists` is derived from it and answers false for NotFound, as the platform defines it.
  access: fs.access("/work/existing.txt"),
  rename: fs.rename("/work/existing.txt", "/work/renamed.txt"),
  remove: fs.remove("/work/dir", { recursive: true }),
  copy: fs.copy("/work/dir", "/work/dir-copy"),
  copyFile: fs.copyFile("/work/existing.txt", "/work/copy.txt"),
  truncate: fs.truncate("/work/existing.txt", 3),
  symlink: fs.symlink("existing.txt", "/work/link"),
  link: fs.link("/work/existing.txt", "/work/hard"),
  chmod: fs.chmod("/work/existing.txt", 0o600),
  utimes: fs.utimes("/work/existing.txt", 1, 1),
  makeTempDirectory: fs.makeTempDirectory({ directory: "/work" })
})

describe("platformLayer: the world's faults", () => {
  // Every op with every errno (a few hundred small cases): a sample would miss the combinations it did not draw.
  it.effect("a fault on platform:<op> fails that call with Node's reason for the errno, changes nothing, and is journaled", () =>
    Effect.forEach(Object.keys(operations(FileSystem.makeNoop({}))), (op) =>
      Effect.forEach(NODE_REASONS, ([errno, reason]) =>
        Effect.scoped(Effect.gen(function*() {
          const { world, fs } = yield* setUp()
          const before = world.tree()
          const fault = world.injectFault({ op: `platform:${op}`, errno })
          const error = yield* Effect.flip(operations(fs)[op as keyof ReturnType<typeof operations>] as Effect.Effect<unknown, PlatformError>)
          const where = `${op} ${errno}`
          assert.strictEqual(error._tag, "SystemError", where)
          assert.deepStrictEqual([error._tag === "SystemError" ? error.reason : "", causeCode(error)], [reason, errno], `${where}: ${error.message}`)
          assert.strictEqual(fault.fired(), 1, where)
          assert.deepStrictEqual(world.tree(), before, `${where}: a failed call changed the tree`)
          const entry = world.journal.find((e) => e.op === `platform:${op}` && !e.ok)
          assert.strictEqual(entry?.errno, errno, where)
        })))))

  it.scoped("faults address one call (nth, count, path, pid), and platform op names never hit the library's calls", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setUp({ hostname: "h", pid: 77 })
      world.injectFault({ op: "platform:writeFile", nth: 2, errno: "ENOSPC" })
      yield* fs.writeFileString("/work/one", "1")
      const second = yield* Effect.flip(fs.writeFileString("/work/two", "2"))
      assert.strictEqual(causeCode(second), "ENOSPC")
      yield* fs.writeFileString("/work/three", "3")
      world.injectFault({ op: "platform:stat", path: /secret/, count: Infinity, errno: "EACCES" })
      yield* fs.stat("/work/one")
      const denied = yield* Effect.flip(fs.stat("/work/secret"))
      assert.strictEqual(denied._tag === "SystemError" && denied.reason, "PermissionDenied")
      world.injectFault({ op: "platform:readFile", pid: 78, errno: "EIO" })
      assert.strictEqual(new TextDecoder().decode(yield* fs.readFile("/work/one")), "1")
      // The library's op "readFile" and the platform's "platform:readFile" are different ops.
      const library = yield* Effect.provide(PortFileSystem, MemoryWorld.layer(world, { hostname: "h", pid: 77 }))
      world.injectFault({ op: "readFile", errno: "EIO" })
      assert.strictEqual(new TextDecoder().decode(yield* fs.readFile("/work/one")), "1")
      assert.strictEqual((yield* Effect.flip(library.readFile("/work/one"))).errno, "EIO")
    }))

  it.scoped("a fault on a step: writeFile.write leaves the file created and empty; remove.unlink leaves part of the tree", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setUp()
      world.injectFault({ op: "platform:writeFile.write", errno: "ENOSPC" })
      const error = yield* Effect.flip(fs.writeFileString("/work/half", "content"))
      assert.deepStrictEqual([error._tag === "SystemError" && error.method, causeCode(error)], ["writeFile", "ENOSPC"])
      assert.strictEqual(world.readFixtureText("/work/half"), "")
      yield* world.writeFixture("/work/dir/sub/g", "g")
      world.injectFault({ op: "platform:remove.unlink", nth: 2, errno: "EIO" })
      yield* Effect.flip(fs.remove("/work/dir", { recursive: true }))
      assert.deepStrictEqual(Object.keys(world.tree("/work/dir")), ["/work/dir", "/work/dir/sub", "/work/dir/sub/g"])
    }))
})

/**
 * A harness spilling a tool's output: make the run's output directory, stream the output through `sink`
 * into a temp name, append a trailer through `open` "a", rename it into place and mark it done.
 */
const spill = (fs: FileSystem.FileSystem, dir: string) =>
  Effect.gen(function*() {
    yield* fs.makeDirectory(`${dir}/out`, { recursive: true })
    yield* Stream.make(bytes("line 1\n"), bytes("line 2\n"), bytes("line 3\n")).pipe(Stream.run(fs.sink(`${dir}/out/log.tmp`)))
    yield* Effect.scoped(Effect.gen(function*() {
      const log = yield* fs.open(`${dir}/out/log.tmp`, { flag: "a" })
      yield* log.writeAll(bytes("exit 0\n"))
      yield* log.writeAll(bytes("-- end --\n"))
    }))
    yield* fs.rename(`${dir}/out/log.tmp`, `${dir}/out/log`)
    yield* fs.writeFileString(`${dir}/done`, "ok")
  })

/** The mutating steps of `spill` under /work: 2 directories, the sink's create and 3 writes, 2 appends, the rename, writeFile's create and write. */
const SPILL_STEPS = 2 + 1 + 3 + 2 + 1 + 2

describe("platformLayer: crash points", () => {
  it.scoped("crashAfter(n) at every n of a spill leaves the tree exactly as it was after n steps; the steps are the mutating calls", () =>
    Effect.gen(function*() {
      // The reference run: the tree after each mutating step (the world's counter, read by wrapping it).
      const reference = yield* setUp()
      const start = reference.world.mutationCount
      const afterStep: Array<ReturnType<MemoryWorld["tree"]>> = [reference.world.tree()]
      const mutated = (reference.world as unknown as { mutated: (ctx: unknown) => void }).mutated.bind(reference.world)
      ;(reference.world as unknown as { mutated: (ctx: unknown) => void }).mutated = (ctx) => {
        mutated(ctx)
        afterStep.push(reference.world.tree())
      }
      yield* spill(reference.fs, "/work/run")
      assert.strictEqual(reference.world.mutationCount - start, SPILL_STEPS)
      assert.strictEqual(afterStep.length, SPILL_STEPS + 1)
      assert.strictEqual(reference.world.readFixtureText("/work/run/out/log"), "line 1\nline 2\nline 3\nexit 0\n-- end --\n")
      for (let n = 0; n <= SPILL_STEPS; n++) {
        const { world, fs } = yield* setUp()
        world.crashAfter(n)
        const result = yield* Effect.either(spill(fs, "/work/run"))
        if (n < SPILL_STEPS) {
          assert.isTrue(result._tag === "Left" && isSimulatedCrash(result.left), `crash at ${n}: ${JSON.stringify(result)}`)
        } else {
          assert.strictEqual(result._tag, "Right")
        }
        world.recover()
        assert.deepStrictEqual(world.tree(), afterStep[n], `crash after ${n} steps`)
      }
    }))

  it.scoped("a crashed process's platform calls all fail, reads and open handles too; another process goes on", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setUp({ hostname: "h", pid: 10 })
      const handle = yield* fs.open("/work/existing.txt", { flag: "r+" })
      const other = yield* Effect.provide(FileSystem.FileSystem, platformLayer(world, { hostname: "h", pid: 11 }))
      world.crashAfter(0, { pid: 10 })
      const before = world.tree()
      for (const effect of [fs.readFile("/work/existing.txt"), fs.stat("/work"), fs.writeFileString("/work/x", "x"), handle.writeAll(bytes("x")), handle.stat, handle.sync] as const) {
        const error = yield* Effect.flip(effect as Effect.Effect<unknown, PlatformError>)
        assert.isTrue(isSimulatedCrash(error), error.message)
        assert.strictEqual(error._tag === "SystemError" && error.reason, "Unknown")
      }
      assert.deepStrictEqual(world.tree(), before)
      yield* other.writeFileString("/work/from-11", "alive")
      assert.strictEqual(world.readFixtureText("/work/from-11"), "alive")
    }))
})

describe("platformLayer: one process, one tree, one journal with the library", () => {
  const AGENT_DIR = "/home/user/.pi/agent"

  it.scoped("a harness spills into a run the library acquired: both are journaled as one process, the prune removes what the harness wrote", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const proc = { hostname: "ci", pid: 4242 }
      const layer = Layer.mergeAll(Storage.layer(MemoryWorld.layer(world, proc), { agentDir: AGENT_DIR }), platformLayer(world, proc))
      yield* Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const run = yield* Effect.scoped(Effect.gen(function*() {
          const run = yield* workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
          world.clearJournal()
          yield* spill(fs, run.path)
          // The harness sees the library's files; the library's walk measures the harness's.
          assert.isTrue((yield* fs.readDirectory(run.path)).includes(".leases"))
          assert.strictEqual(yield* fs.readFileString(path.join(run.path, "out", "log")), "line 1\nline 2\nline 3\nexit 0\n-- end --\n")
          return run
        }))
        const journal = world.journal
        assert.isTrue(journal.some((e) => e.op === "platform:writeAll" && e.path === `${run.path}/out/log.tmp`))
        assert.isTrue(journal.some((e) => e.op === "platform:rename" && e.path2 === `${run.path}/out/log`))
        assert.isTrue(journal.some((e) => !e.op.startsWith("platform:")), "the release's library calls are in the same journal")
        assert.deepStrictEqual([...new Set(journal.map((e) => `${e.hostname}/${e.pid}`))], ["ci/4242"])
        const report = yield* workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
        assert.deepStrictEqual(report.removed.map((r) => r.runId), [run.runId])
        assert.isFalse(yield* fs.exists(run.path))
      }).pipe(Effect.provide(layer))
    }))

  it.scoped("the journal records each platform call with its op, paths, outcome and process", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setUp({ hostname: "h", pid: 9 })
      world.clearJournal()
      yield* fs.writeFileString("/work/a", "a")
      yield* Effect.flip(fs.readFile("/work/missing"))
      yield* fs.rename("/work/a", "/work/b")
      yield* fs.symlink("b", "/work/l")
      assert.deepStrictEqual(world.journal.map(({ seq: _, ...e }) => e), [
        { op: "platform:writeFile.open", path: "/work/a", ok: true, hostname: "h", pid: 9 },
        { op: "platform:writeFile.write", path: "/work/a", ok: true, hostname: "h", pid: 9 },
        { op: "platform:writeFile", path: "/work/a", ok: true, hostname: "h", pid: 9 },
        { op: "platform:readFile", path: "/work/missing", ok: false, errno: "ENOENT", hostname: "h", pid: 9 },
        { op: "platform:rename", path: "/work/a", path2: "/work/b", ok: true, hostname: "h", pid: 9 },
        { op: "platform:symlink", path: "/work/l", path2: "b", ok: true, hostname: "h", pid: 9 }
      ])
    }))
})

describe("platformLayer: the simulated process", () => {
  it.scoped("relative paths and Path.resolve use the simulated cwd; temp names go under its tmpdir; created entries carry its uid and gid", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture("/home/u", { mode: 0o755 })
      yield* world.mkdirFixture("/var/tmp", { mode: 0o777 })
      const context = yield* Layer.build(platformLayer(world, { cwd: "/home/u", uid: 501, gid: 20, tmpdir: "/var/tmp" }))
      const fs = yield* Effect.provide(FileSystem.FileSystem, context)
      const path = yield* Effect.provide(Path.Path, context)
      assert.strictEqual(path.resolve("notes/x"), "/home/u/notes/x")
      assert.strictEqual(path.relative("a", "/home/u/b"), "../b")
      yield* fs.writeFileString("rel.txt", "r")
      assert.strictEqual(world.readFixtureText("/home/u/rel.txt"), "r")
      assert.strictEqual(yield* fs.realPath("."), "/home/u")
      const info = yield* fs.stat("rel.txt")
      assert.deepStrictEqual([Option.getOrNull(info.uid), Option.getOrNull(info.gid), info.mode & 0o777], [501, 20, 0o644])
      const temp = yield* fs.makeTempDirectory()
      assert.match(temp, /^\/var\/tmp\/[A-Za-z0-9]{6}$/)
      // Without the directory there is nowhere to make one, as on a real system.
      const bare = yield* Effect.provide(FileSystem.FileSystem, platformLayer(world))
      const error = yield* Effect.flip(bare.makeTempDirectory())
      assert.strictEqual(error._tag === "SystemError" && error.reason, "NotFound")
    }))

  it.scoped("watch is unsupported: a typed SystemError (Unknown), after the path is checked", () =>
    Effect.gen(function*() {
      const { fs } = yield* setUp()
      const error = yield* Effect.flip(Stream.runDrain(fs.watch("/work")))
      assert.deepStrictEqual([error._tag, error._tag === "SystemError" && error.reason, error._tag === "SystemError" && error.method], ["SystemError", "Unknown", "watch"])
      const missing = yield* Effect.flip(Stream.runDrain(fs.watch("/nowhere")))
      assert.strictEqual(missing._tag === "SystemError" && missing.reason, "NotFound")
    }))

  it.scoped("writing never touches memory the file's content was given from (a fixture's Buffer view)", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setUp()
      const backing = Buffer.alloc(64, 0x61)
      yield* world.writeFixture("/work/shared", backing.subarray(0, 8))
      yield* Effect.scoped(Effect.flatMap(fs.open("/work/shared", { flag: "r+" }), (file) => file.writeAll(bytes("ZZ"))))
      yield* fs.writeFileString("/work/shared", "+tail", { flag: "a" })
      assert.strictEqual(world.readFixtureText("/work/shared"), "ZZaaaaaa+tail")
      assert.isTrue(backing.every((b) => b === 0x61), "the fixture's buffer was written through")
    }))

  it("platformLayer refuses a world that is not from MemoryWorld.make()", () => {
    assert.throws(() => platformLayer({} as MemoryWorld), /MemoryWorld\.make/)
  })
})
