import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, FastCheck, Layer, Scope, TestClock } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { Inventory } from "../../src/services/Inventory.js"
import { AGENT_DIR, processLayer, spawnProcess } from "../support/memoryProcess.js"
import { memoryDu } from "../support/memoryDu.js"

const DAY = 24 * 60 * 60 * 1000
const work = `${AGENT_DIR}/work`

/** An inventory as seen by a fresh simulated process of `world` (its own pid, same host). */
const inventoryOf = (world: MemoryWorld) =>
  Effect.map(Layer.build(Inventory.layer.pipe(Layer.provide(processLayer(world)))), (ctx) => Context.get(ctx, Inventory))

/** Entries below `root` (as `du --inodes`, without the root itself). */
const entryCount = (world: MemoryWorld, root: string) => Object.keys(world.tree(root)).length - 1

/**
 * tools/bash: a released run (day 0), an idle run whose holder died (day 1), an active run (day 3), an
 * unowned directory and a symlink; tools/git: one released run (day 2). Extension tiers: foo (state+cache),
 * bar (cache only).
 */
const messyWorld = Effect.gen(function*() {
  const world = MemoryWorld.make({ journal: false })
  // Heartbeats every 10 days: the clock jumps below fire none, which keeps the fixture fast.
  const slowHeartbeat = { config: { remoteLeaseTtlMs: 30 * DAY } }
  const p1 = yield* spawnProcess(world, slowHeartbeat)
  const acquire = (tenant: string) => p1.workRuns.acquire({ category: "tools", tenant, retention: false })

  const releasedScope = yield* Scope.make()
  const released = yield* Scope.extend(acquire("bash"), releasedScope)
  yield* world.writeFixture(`${released.path}/out.log`, "x".repeat(1000))
  yield* Scope.close(releasedScope, Exit.void)

  yield* TestClock.adjust(DAY)
  const p2 = yield* spawnProcess(world, slowHeartbeat)
  const idle = yield* p2.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
  yield* world.writeFixture(`${idle.path}/data.bin`, "y".repeat(300))
  world.kill("h1", p2.host.pid)

  yield* TestClock.adjust(DAY)
  const gitScope = yield* Scope.make()
  const git = yield* Scope.extend(acquire("git"), gitScope)
  yield* Scope.close(gitScope, Exit.void)

  yield* TestClock.adjust(DAY)
  const active = yield* acquire("bash")
  yield* world.mkdirFixture(`${work}/tools/bash/stray`)
  yield* world.writeFixture(`${work}/tools/bash/stray/file`, "z".repeat(50))
  yield* world.symlinkFixture("/etc", `${work}/tools/bash/link`)

  yield* world.writeFixture(`${AGENT_DIR}/state/extensions/foo/db.sqlite`, "s".repeat(2048))
  yield* world.writeFixture(`${AGENT_DIR}/cache/extensions/foo/index`, "c".repeat(100))
  yield* world.writeFixture(`${AGENT_DIR}/cache/extensions/bar/blob`, "b".repeat(7))
  return { world, released, idle, git, active }
})

describe("Inventory on the Memory layer", () => {
  it.scoped("a missing agent dir is reported as such and nothing is created", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const inventory = yield* inventoryOf(world)
      const before = world.mutationCount
      const report = yield* inventory.summary()
      assert.isFalse(report.exists)
      assert.strictEqual(report.agentDir, AGENT_DIR)
      assert.deepStrictEqual([report.tenants, report.extensions], [[], []])
      const list = yield* inventory.listRuns()
      assert.deepStrictEqual([list.runs, list.unowned], [[], []])
      assert.strictEqual(world.mutationCount, before)
      assert.deepStrictEqual(world.tree(AGENT_DIR), {})
    }))

  it.scoped("summary counts runs, liveness, unowned entries, sizes and oldest use per tenant, read-only", () =>
    Effect.gen(function*() {
      const { world, released } = yield* messyWorld
      const inventory = yield* inventoryOf(world)
      const tree = world.tree("/")
      const before = world.mutationCount
      const report = yield* inventory.summary()
      assert.strictEqual(world.mutationCount, before)
      assert.deepStrictEqual(world.tree("/"), tree)

      assert.isTrue(report.exists)
      assert.strictEqual(report.scannedAt, 3 * DAY)
      const shape = report.tenants.map((t) => ({
        at: `${t.category}/${t.tenant}`, runs: t.runs, active: t.active, inactive: t.inactive, unowned: t.unowned,
        oldest: t.oldestLastUsedAt
      }))
      assert.deepStrictEqual(shape, [
        { at: "tools/bash", runs: 3, active: 1, inactive: 2, unowned: 2, oldest: JSON.parse(world.readFixtureText(`${released.path}/.pi-work-run.json`)!).releasedAt },
        { at: "tools/git", runs: 1, active: 0, inactive: 1, unowned: 0, oldest: 2 * DAY }
      ])
      // Sizes as du counts them: disk usage beside apparent size, the whole tenant directory.
      for (const t of report.tenants) {
        const dir = `${work}/${t.category}/${t.tenant}`
        assert.deepStrictEqual(t.size, { ...memoryDu(world, dir), entries: entryCount(world, dir), complete: true, measured: true })
      }
      const dirSize = (dir: string) => ({ ...memoryDu(world, dir), entries: 1, complete: true, measured: true })
      assert.deepStrictEqual(report.extensions, [
        { namespace: "bar", config: null, state: null, cache: dirSize(`${AGENT_DIR}/cache/extensions/bar`) },
        { namespace: "foo", config: null, state: dirSize(`${AGENT_DIR}/state/extensions/foo`), cache: dirSize(`${AGENT_DIR}/cache/extensions/foo`) }
      ])
      // A 7-byte file takes a 4 KiB block, as a directory does.
      assert.deepStrictEqual(memoryDu(world, `${AGENT_DIR}/cache/extensions/bar`), { bytes: 2 * 4096, apparentBytes: 4096 + 7 })
      assert.isFalse(report.truncated)
      assert.isFalse(report.incomplete)
      assert.deepStrictEqual(report.stoppedBy, [])
      assert.deepStrictEqual(report.errors, [])
    }))

  it.scoped("listRuns: id, kind, state, last use and size, newest first; unowned entries listed apart; filters", () =>
    Effect.gen(function*() {
      const { world, released, idle, git, active } = yield* messyWorld
      const inventory = yield* inventoryOf(world)
      const before = world.mutationCount
      const list = yield* inventory.listRuns()
      assert.strictEqual(world.mutationCount, before)
      assert.deepStrictEqual(
        list.runs.map((r) => [r.tenant, r.runId, r.kind, r.state, r.leases]),
        [
          ["bash", active.runId, "generated", "active", 1],
          ["bash", idle.runId, "generated", "idle", 1],
          ["bash", released.runId, "generated", "released", 0],
          ["git", git.runId, "generated", "released", 0]
        ]
      )
      const releasedRow = list.runs.find((r) => r.runId === released.runId)!
      assert.deepStrictEqual(releasedRow.size, { ...memoryDu(world, released.path), entries: entryCount(world, released.path), complete: true, measured: true })
      assert.isAtLeast(releasedRow.size.apparentBytes, 1000)
      assert.deepStrictEqual([list.truncated, list.incomplete, list.stoppedBy], [false, false, []])
      assert.strictEqual(list.runs.find((r) => r.runId === git.runId)!.lastUsedAt, 2 * DAY)
      assert.deepStrictEqual(list.unowned.map((u) => [u.name, u.why]), [
        ["link", "symlink (never followed)"],
        ["stray", "no manifest"]
      ])

      const onlyGit = yield* inventory.listRuns({ category: "tools", tenant: "git" })
      assert.deepStrictEqual(onlyGit.runs.map((r) => r.runId), [git.runId])
      const onlyTools = yield* inventory.listRuns({ category: "tools" })
      assert.strictEqual(onlyTools.runs.length, 4)
      const none = yield* inventory.listRuns({ category: "nope" })
      assert.deepStrictEqual(none.runs, [])
      const bad = yield* Effect.flip(inventory.listRuns({ category: "Tools" }))
      assert.strictEqual(bad._tag, "InvalidSegment")
      assert.strictEqual(bad.field, "category")
    }))

  it.scoped("tenants lists prunable tenants only (valid segments, real directories)", () =>
    Effect.gen(function*() {
      const { world } = yield* messyWorld
      yield* world.mkdirFixture(`${work}/Bad Name/x`)
      yield* world.mkdirFixture(`${work}/real/t1`)
      yield* world.symlinkFixture(`${work}/real`, `${work}/linked`)
      const inventory = yield* inventoryOf(world)
      assert.deepStrictEqual(
        (yield* inventory.tenants).map((t) => `${t.category}/${t.tenant}`),
        ["real/t1", "tools/bash", "tools/git"]
      )
    }))

  it.effect.prop(
    "a per-tenant walk budget never overcounts: complete sizes are exact, incomplete ones lower bounds, and the report says it stopped",
    [FastCheck.integer({ min: 0, max: 40 })],
    ([maxEntries]) =>
      Effect.scoped(Effect.gen(function*() {
        const { world } = yield* messyWorld
        const inventory = yield* inventoryOf(world)
        const full = yield* inventory.summary()
        const bounded = yield* inventory.summary({ maxEntries })
        const sizes = (r: typeof full) => [
          ...r.tenants.map((t) => t.size),
          ...r.extensions.flatMap((e) => [e.state, e.cache].filter((s) => s !== null))
        ]
        const exact = sizes(full)
        sizes(bounded).forEach((size, i) => {
          assert.isTrue(exact[i]!.complete)
          // Each tenant and directory has a budget of its own: it is cut exactly when it holds more entries.
          assert.strictEqual(size.complete, maxEntries > 0 && exact[i]!.entries <= maxEntries)
          if (size.complete) assert.deepStrictEqual(size, exact[i])
          else {
            assert.isAtMost(size.bytes, exact[i]!.bytes)
            assert.isAtMost(size.apparentBytes, exact[i]!.apparentBytes)
          }
        })
        if (maxEntries === 0) assert.isTrue(sizes(bounded).every((s) => !s.complete && !s.measured))
        assert.strictEqual(bounded.incomplete, sizes(bounded).some((s) => !s.complete))
        assert.strictEqual(bounded.stoppedBy.some((s) => s._tag === "MaxEntries"), bounded.incomplete)
        // Counts do not depend on the size budget.
        assert.deepStrictEqual(bounded.tenants.map((t) => t.runs), full.tenants.map((t) => t.runs))
      })),
    { fastCheck: { numRuns: 15 } }
  )
})
