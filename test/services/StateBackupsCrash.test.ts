/**
 * Crash safety of state snapshots (Memory world): create, forget and restore crash after every mutating step
 * k in turn; the process is killed and the world recovered. Then: nothing listed is incomplete (every listed
 * snapshot verifies), no live byte is lost, and a rerun by a new process completes as a crash-free run does.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { StateBackups } from "../../src/services/StateBackups.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { AGENT, asProcess, files, HOST, links, spawn } from "./migrationSupport.js"

const ROOT = "/home/user/.pi/backups/agent"

const layerOf = (processLayer: ReturnType<typeof spawn>["layer"]) =>
  StateBackups.layerWith({ root: ROOT }).pipe(Layer.provideMerge(AgentDir.layerWith(AGENT)), Layer.provideMerge(processLayer))

/** Run an operation as a fresh process of the world. */
const as = <A, E>(world: MemoryWorld, use: (b: StateBackups["Type"]) => Effect.Effect<A, E>) =>
  Effect.provide(Effect.flatMap(StateBackups, use), layerOf(spawn(world).layer))

const LIVE = {
  "state/a.json": "{\"a\":1}",
  "state/sub/b.txt": "bravo",
  "state/extensions/foo/x": "foo x",
  "state/backups/config/h": "config history",
  "sessions/s1.jsonl": "{}\n",
  "MEMORY.md": "# memory",
  "settings.json": "{}"
}

const seedLive = (world: MemoryWorld) =>
  Effect.gen(function*() {
    for (const [rel, content] of Object.entries(LIVE)) yield* world.writeFixture(`${AGENT}/${rel}`, content)
    yield* world.symlinkFixture("../MEMORY.md", `${AGENT}/state/link`)
  })

/** Live files (content) and links outside the restore-aside and config-history directories. */
const liveScope = (world: MemoryWorld) => {
  const keep = (rel: string) => !rel.startsWith("state/restore-aside/")
  return {
    files: Object.fromEntries(Object.entries(files(world)).filter(([rel]) => keep(rel))),
    links: Object.fromEntries(Object.entries(links(world)).filter(([rel]) => keep(rel)))
  }
}

/** Everything listed verifies (one verify of all complete snapshots), and nothing listed is a hidden name. */
const listedAllVerify = (world: MemoryWorld, label: string) =>
  as(world, (b) =>
    Effect.gen(function*() {
      const listed = yield* b.list()
      for (const s of listed) assert.notMatch(s.id, /^\./, label)
      const v = yield* b.verify()
      assert.isTrue(v.ok, `${label}: a listed snapshot does not verify: ${JSON.stringify(v)}`)
      return listed
    }))

interface Scenario {
  readonly name: string
  readonly seed: (world: MemoryWorld) => Effect.Effect<void, unknown>
  readonly run: (b: StateBackups["Type"]) => Effect.Effect<unknown, unknown>
  /** Checked right after the crash (before any rerun) and again after the rerun. */
  readonly afterCrash: (world: MemoryWorld, label: string) => Effect.Effect<void, unknown>
  /** Checked after the rerun completed. */
  readonly settled: (world: MemoryWorld, label: string) => Effect.Effect<void, unknown>
}

const crashEverywhere = (scenario: Scenario) =>
  Effect.gen(function*() {
    const reference = MemoryWorld.make({ journal: false })
    yield* scenario.seed(reference)
    const start = reference.mutationCount
    yield* as(reference, scenario.run)
    const steps = reference.mutationCount - start
    yield* scenario.settled(reference, `${scenario.name}: crash-free`)
    assert.isAbove(steps, 5)
    for (let k = 0; k < steps; k++) {
      const label = `${scenario.name}: crash after step ${k} of ${steps}`
      const world = MemoryWorld.make({ journal: false })
      yield* scenario.seed(world)
      const first = spawn(world)
      world.crashAfter(k, { hostname: HOST, pid: first.pid })
      yield* Effect.provide(Effect.flatMap(StateBackups, scenario.run), layerOf(first.layer)).pipe(Effect.exit)
      world.kill(HOST, first.pid)
      world.recover()
      // A crash between a marker's create and write leaves it empty: held until the stale bound (docs/safety.md "How runs stay safe").
      yield* TestClock.adjust(DEFAULT_STALE_UNREADABLE_MS + 1)
      yield* scenario.afterCrash(world, label)
      yield* as(world, scenario.run)
      yield* scenario.afterCrash(world, label)
      yield* scenario.settled(world, label)
    }
    return steps
  })

const liveUnchanged = (world: MemoryWorld, label: string) =>
  Effect.sync(() => {
    const { files: f, links: l } = liveScope(world)
    assert.deepStrictEqual(f, LIVE, label)
    assert.deepStrictEqual(l, { "state/link": "../MEMORY.md" }, label)
  })

const noLeftovers = (world: MemoryWorld, label: string) => {
  const names = Object.keys(world.tree(ROOT)).map((p) => p.slice(ROOT.length + 1)).filter((p) => !p.includes("/"))
  assert.deepStrictEqual(names.filter((n) => n.startsWith(".incomplete-") || n.startsWith(".removing-") || n === ".lock"), [], label)
}

describe("state snapshots survive a crash at every mutating step (Memory world)", () => {
  it.effect("create (an incremental one, with links to the previous snapshot)", () =>
    Effect.gen(function*() {
      const steps = yield* crashEverywhere({
        name: "create",
        seed: (world) =>
          Effect.gen(function*() {
            yield* seedLive(world)
            yield* as(world, (b) => b.create())
            yield* TestClock.adjust("1 second")
          }),
        run: (b) => b.create(),
        afterCrash: (world, label) =>
          Effect.gen(function*() {
            yield* liveUnchanged(world, label)
            const listed = yield* listedAllVerify(world, label)
            assert.include([1, 2, 3], listed.length, label)
          }),
        settled: (world, label) =>
          Effect.gen(function*() {
            const listed = yield* listedAllVerify(world, label)
            // The seed's and at least one more (a crash after the final rename leaves it complete, then a third).
            assert.isAtLeast(listed.length, 2, label)
            assert.strictEqual(listed[0]!.files, 5, label)
            noLeftovers(world, label)
          })
      })
      assert.isAbove(steps, 10)
    }), 60_000)

  it.effect("forget", () =>
    Effect.gen(function*() {
      let newest = ""
      yield* crashEverywhere({
        name: "forget",
        seed: (world) =>
          Effect.gen(function*() {
            yield* seedLive(world)
            for (let i = 0; i < 2; i++) {
              newest = (yield* as(world, (b) => b.create())).id
              yield* TestClock.adjust("1 hour")
            }
          }),
        run: (b) => b.forget({ keepLast: 1 }),
        afterCrash: (world, label) =>
          Effect.gen(function*() {
            yield* liveUnchanged(world, label)
            const listed = yield* listedAllVerify(world, label)
            assert.include(listed.map((s) => s.id), newest, label)
          }),
        settled: (world, label) =>
          Effect.gen(function*() {
            assert.deepStrictEqual((yield* listedAllVerify(world, label)).map((s) => s.id), [newest], label)
            noLeftovers(world, label)
          })
      })
    }), 60_000)

  it.effect("restore", () =>
    Effect.gen(function*() {
      let id = ""
      // What was live before the restore: every byte must stay somewhere (in place or under restore-aside/).
      const EDITED = { "state/a.json": "{\"a\":2}", "state/new.txt": "new", "MEMORY.md": "# newer" }
      const everyLiveByteKept = (world: MemoryWorld, label: string) => {
        const all = files(world)
        for (const [rel, content] of Object.entries({ ...LIVE, ...EDITED })) {
          if (rel === "state/sub/b.txt") continue // deleted before the restore
          const found = Object.entries(all).some(([p, c]) => c === content && (p === rel || (p.startsWith("state/restore-aside/") && p.endsWith(`/agent/${rel}`))))
          assert.isTrue(found, `${label}: live ${rel} (${content}) lost: ${JSON.stringify(all)}`)
        }
      }
      yield* crashEverywhere({
        name: "restore",
        seed: (world) =>
          Effect.gen(function*() {
            yield* seedLive(world)
            id = (yield* as(world, (b) => b.create())).id
            yield* TestClock.adjust("1 second")
            for (const [rel, content] of Object.entries(EDITED)) yield* world.writeFixture(`${AGENT}/${rel}`, content)
            yield* asProcess(world, Effect.flatMap(FileSystem, (fs) => fs.removeFile(`${AGENT}/state/sub/b.txt`)))
          }),
        run: (b) => b.restore(id),
        afterCrash: (world, label) =>
          Effect.gen(function*() {
            everyLiveByteKept(world, label)
            yield* listedAllVerify(world, label)
          }),
        settled: (world, label) =>
          Effect.gen(function*() {
            everyLiveByteKept(world, label)
            yield* liveUnchanged(world, label)
            noLeftovers(world, label)
          })
      })
    }), 60_000)
})
