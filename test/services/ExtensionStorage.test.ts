import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FastCheck, Fiber, Schema, Scope } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const leaseCount = (world: MemoryWorld, runPath: string) =>
  Object.keys(world.tree(`${runPath}/.leases`)).filter((p) => p !== `${runPath}/.leases`).length

describe("ExtensionStorage (WR11) on the Memory layer", () => {
  it.scoped("getStorage does no I/O and names the extension's three places", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      world.clearJournal()
      const view = yield* p.extensions.getStorage("notes")
      assert.deepStrictEqual(world.journal, [])
      assert.deepStrictEqual(
        [view.configDir, view.stateDir, view.cacheDir],
        [`${AGENT_DIR}/config/extensions/notes`, `${AGENT_DIR}/state/extensions/notes`, `${AGENT_DIR}/cache/extensions/notes`]
      )
      assert.deepStrictEqual([view.config.dir, view.state.dir, view.cache.dir], [view.configDir, view.stateDir, view.cacheDir])
      assert.isUndefined(world.tree(AGENT_DIR)[AGENT_DIR], "no directory was created")
      const bad = yield* Effect.flip(p.extensions.getStorage("../x"))
      assert.deepStrictEqual([bad._tag, bad.field], ["InvalidSegment", "namespace"])
    }))

  it.scoped("runs live under work/extensions/<ns>/ and unload releases them and refuses new ones", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const view = yield* p.extensions.getStorage("notes")
      const run = yield* view.acquireWorkRun({ retention: false })
      assert.strictEqual(run.path, `${AGENT_DIR}/work/extensions/notes/${run.runId}`)
      assert.strictEqual(leaseCount(world, run.path), 1)
      yield* view.unload
      assert.strictEqual(leaseCount(world, run.path), 0)
      const refused = yield* Effect.flip(view.acquireWorkRun())
      assert.strictEqual(refused._tag, "StorageUnloaded")
      yield* view.unload
    }))

  // An acquisition in flight when unload starts either fails StorageUnloaded or hands out a run that still
  // has its lease until unload releases it; never a run whose lease is already gone.
  it.effect.prop("unload racing acquisitions never hands out a run without its lease", [
    FastCheck.integer({ min: 1, max: 4 }),
    FastCheck.record({ seed: FastCheck.integer(), maxYields: FastCheck.integer({ min: 0, max: 4 }) })
  ], ([acquirers, jitter]) =>
    Effect.scoped(Effect.gen(function*() {
      const world = MemoryWorld.make({ jitter })
      const p = yield* spawnProcess(world)
      const view = yield* p.extensions.getStorage("notes")
      const problems: Array<string> = []
      const acquireOne = Effect.scoped(Effect.gen(function*() {
        const run = yield* view.acquireWorkRun({ retention: false })
        // Returned to us: our lease must exist now, whatever unload is doing.
        if (!(run.leasePath in world.tree(run.path))) problems.push(`run ${run.runId} handed out without its lease`)
      })).pipe(Effect.catchTag("StorageUnloaded", () => Effect.void))
      yield* Effect.all([...Array.from({ length: acquirers }, () => acquireOne), view.unload], { concurrency: "unbounded", discard: true })
      assert.deepStrictEqual(problems, [])
      // After unload every lease of the view is gone, and new acquisitions are refused.
      const leases = Object.keys(world.tree(`${AGENT_DIR}/work/extensions/notes`)).filter((k) => k.includes("/.leases/"))
      assert.deepStrictEqual(leases, [])
      assert.strictEqual((yield* Effect.flip(Effect.scoped(view.acquireWorkRun())))._tag, "StorageUnloaded")
    })), { fastCheck: { numRuns: 200 } })

  it.effect("a failing extension program releases its leases when its scope closes", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      let path = ""
      const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
        const p = yield* spawnProcess(world)
        yield* Effect.scoped(Effect.gen(function*() {
          const view = yield* p.extensions.getStorage("notes")
          // The lease outlives this inner caller scope only through the view; the view goes when the program fails.
          const run = yield* Scope.extend(view.acquireWorkRun({ retention: false }), yield* Scope.make())
          path = run.path
          return yield* Effect.fail("extension crashed")
        }))
      })))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(leaseCount(world, path), 0)
    }))

  it.scoped("an interrupted extension releases its leases", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      let path = ""
      const fiber = yield* Effect.fork(Effect.scoped(Effect.gen(function*() {
        const view = yield* p.extensions.getStorage("notes")
        const run = yield* view.acquireWorkRun({ retention: false })
        path = run.path
        return yield* Effect.never
      })))
      while (path === "" || leaseCount(world, path) === 0) yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(leaseCount(world, path), 0)
    }))

  it.scoped("an extension's retention is clamped to the harness ceiling: it can keep less, never more", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world, { config: { retentionCeiling: { maxAgeMs: 1e12, maxInactiveRuns: 2, maxBytes: 1e12, maxScannedRuns: 100, maxEntries: 1000, maxDepth: 8 } } })
      const view = yield* p.extensions.getStorage("notes")
      for (let i = 0; i < 5; i++) yield* Effect.scoped(view.acquireWorkRun({ retention: false }))
      const greedy = yield* view.pruneWork({ policy: { maxInactiveRuns: 1000 }, dryRun: true })
      assert.strictEqual(greedy.kept.length, 2, "asking for more than the ceiling keeps the ceiling")
      const modest = yield* view.pruneWork({ policy: { maxInactiveRuns: 1 } })
      assert.deepStrictEqual([modest.kept.length, modest.removed.length], [1, 4])
    }))

  it.scoped("the view carries the tier API of the web host's extensions: config with red lines, state with schemas, cache ensure/clear", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const view = yield* p.extensions.getStorage("notes")

      // config: key-values in config/extensions/notes/settings.json; databases and logs refused
      yield* view.config.set("font", "mono")
      assert.strictEqual(yield* view.config.get("font"), "mono")
      assert.deepStrictEqual(JSON.parse(world.readFixtureText(`${AGENT_DIR}/config/extensions/notes/settings.json`)!), { font: "mono" })
      const refused = yield* Effect.flip(view.config.writeFile("notes.sqlite", "db"))
      assert.deepStrictEqual(refused._tag === "ConfigRedLine" ? [refused.rule, refused.rightTier] : refused._tag, ["database", "state"])

      // state: strict reads (missing is an error, never a default), schema-checked, atomic writes at state/extensions/notes/
      const Notes = Schema.Struct({ notes: Schema.Array(Schema.String) })
      assert.strictEqual((yield* Effect.flip(view.state.read("notes.json")))._tag, "StateMissing")
      yield* view.state.write("notes.json", { notes: ["first"] })
      assert.deepStrictEqual(yield* view.state.read("notes.json", Notes), { notes: ["first"] })
      assert.strictEqual(world.readFixtureText(`${AGENT_DIR}/state/extensions/notes/notes.json`), "{\"notes\":[\"first\"]}\n")
      yield* view.state.write("odd.json", { notes: [1] })
      assert.strictEqual((yield* Effect.flip(view.state.read("odd.json", Notes)))._tag, "StateUnreadable")

      // cache: rebuilt whenever missing, cleared whole
      let builds = 0
      const build = Effect.sync(() => `index ${++builds}`)
      assert.strictEqual(new TextDecoder().decode(yield* view.cache.ensure("index", build)), "index 1")
      assert.strictEqual(new TextDecoder().decode(yield* view.cache.ensure("index", build)), "index 1")
      yield* view.cache.clear()
      assert.isUndefined(world.tree(`${AGENT_DIR}/cache/extensions`)[`${AGENT_DIR}/cache/extensions/notes`])
      assert.strictEqual(new TextDecoder().decode(yield* view.cache.ensure("index", build)), "index 2")
      assert.strictEqual(world.readFixtureText(`${AGENT_DIR}/cache/extensions/notes/index`), "index 2")

      // The tiers hold no lease: they keep working after unload.
      yield* view.unload
      assert.strictEqual(yield* view.config.get("font"), "mono")
    }))

  it.scoped("the view's tiers have a read for every write and Schemas at the edges, as opened tiers do (config.delete/readFile, encode on write)", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const view = yield* p.extensions.getStorage("notes")
      const settings = `${AGENT_DIR}/config/extensions/notes/settings.json`

      // config.set/get with a schema: the value is encoded on the way in and decoded on the way back.
      const Since = Schema.Struct({ since: Schema.Date })
      yield* view.config.set("opened", { since: new Date(0) }, Since)
      assert.deepStrictEqual(JSON.parse(world.readFixtureText(settings)!), { opened: { since: "1970-01-01T00:00:00.000Z" } })
      assert.deepStrictEqual(yield* view.config.get("opened", Since), { since: new Date(0) })
      // One mistake, one error: undefined is InvalidArgument pointing at delete; delete says whether the key was set.
      const unset = yield* Effect.flip(view.config.set("opened", undefined))
      assert.strictEqual(unset._tag, "InvalidArgument")
      assert.include(unset.message, "config.delete")
      assert.isTrue(yield* view.config.delete("opened"))
      assert.isFalse(yield* view.config.delete("opened"))
      assert.isUndefined(yield* view.config.get("opened"))

      // config.writeFile has its read.
      yield* view.config.writeFile("theme.css", "body {}")
      assert.strictEqual(new TextDecoder().decode((yield* view.config.readFile("theme.css"))!), "body {}")
      assert.isUndefined(yield* view.config.readFile("absent.css"))

      // state.write with a schema encodes.
      yield* view.state.write("seen.json", { since: new Date(1000) }, Since)
      assert.strictEqual(world.readFixtureText(`${AGENT_DIR}/state/extensions/notes/seen.json`), "{\"since\":\"1970-01-01T00:00:01.000Z\"}\n")
      assert.deepStrictEqual(yield* view.state.read("seen.json", Since), { since: new Date(1000) })
    }))

  it.scoped("the view's tiers are compared by identity on first use (TD5): a cache linked onto the state tier is refused, nothing cleared", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${AGENT_DIR}/state/extensions/notes/notes.json`, "{}")
      yield* world.mkdirFixture(`${AGENT_DIR}/cache/extensions`)
      yield* world.symlinkFixture(`${AGENT_DIR}/state/extensions/notes`, `${AGENT_DIR}/cache/extensions/notes`)
      const p = yield* spawnProcess(world)
      const view = yield* p.extensions.getStorage("notes")
      const refused = yield* Effect.flip(view.cache.clear())
      assert.strictEqual(refused._tag, "TiersOverlap")
      assert.strictEqual((yield* Effect.flip(view.state.write("more.json", {})))._tag, "TiersOverlap")
      assert.strictEqual(world.readFixtureText(`${AGENT_DIR}/state/extensions/notes/notes.json`), "{}")
    }))
})
