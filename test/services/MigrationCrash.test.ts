/**
 * I5 for migrations: crash at every mutating step of each scenario, recover, rerun as a new process; the tree
 * must equal the crash-free result (every byte once, at its documented place), and a further rerun is a no-op.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, TestClock } from "effect"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import {
  AGENT,
  asProcess,
  type CrashScenario,
  crashAtEveryStep,
  files,
  HOST,
  links,
  runLayout,
  runToolkit,
  spawn as spawnProcess
} from "./migrationSupport.js"
import { assertMigrated, EXT, readmePlan, seedSplitExtension, WEB } from "./planFileSupport.js"

const seed = (world: MemoryWorld, entries: Record<string, string>) =>
  Effect.forEach(Object.entries(entries), ([rel, content]) => world.writeFixture(`${AGENT}/${rel}`, content), { discard: true })

// Done unless cut short or turned away by a marker (an empty one a crash left is held until the stale bound).
const layout = Effect.map(runLayout({ lockAttempts: 1 }), (r) => !r.partial && r.errors.every((e) => e.path !== ".pi-migration.lock"))

const trustMerge: CrashScenario = {
  name: "trust merge",
  seed: (world) =>
    seed(world, {
      "settings.json": "{}",
      "trust.json": `{"/a":true,"/b":false}`,
      "state/trust.json": `{"/b":true,"/c":true}`
    }),
  run: layout,
  expect: (world) => {
    const f = files(world)
    assert.deepStrictEqual(JSON.parse(f["state/trust.json"]!), { "/a": true, "/b": true, "/c": true })
    assert.deepStrictEqual(Object.keys(f).sort(), ["settings.json", "state/migration-conflicts/trust.json", "state/trust.json"])
    assert.strictEqual(f["state/migration-conflicts/trust.json"], `{"/a":true,"/b":false}`)
  }
}

const wholeRoot: CrashScenario = {
  name: "whole-root rename",
  seed: (world) =>
    Effect.zipRight(
      seed(world, { "backups/a.json": "A", "backups/sub/b.json": "B", "resource-profiles/p/settings.json": "P" }),
      world.symlinkFixture("../settings.json", `${AGENT}/backups/link`)
    ),
  run: layout,
  expect: (world) => {
    assert.deepStrictEqual(files(world), {
      "state/backups/config/a.json": "A",
      "state/backups/config/sub/b.json": "B",
      "profiles/directories/p/settings.json": "P"
    })
    assert.deepStrictEqual(links(world), { "state/backups/config/link": "../settings.json" })
  }
}

const perEntryConflicts: CrashScenario = {
  name: "per-entry merge with conflicts",
  seed: (world) =>
    seed(world, {
      "tmp/same": "same",
      "tmp/diff": "legacy",
      "tmp/only": "only",
      "tmp/d/x": "legacy x",
      "tmp/d/y": "legacy y",
      "state/legacy-layout/tmp/same": "same",
      "state/legacy-layout/tmp/diff": "canonical",
      "state/legacy-layout/tmp/d/x": "canonical x",
      "state/migration-conflicts/tmp/diff": "older conflict",
      "x:Zone.Identifier": "zone",
      "state/legacy-layout/sidecars/x.Zone.Identifier": "other zone"
    }),
  run: layout,
  expect: (world) =>
    assert.deepStrictEqual(files(world), {
      "state/legacy-layout/tmp/same": "same",
      "state/legacy-layout/tmp/diff": "canonical",
      "state/legacy-layout/tmp/only": "only",
      "state/legacy-layout/tmp/d/x": "canonical x",
      "state/legacy-layout/tmp/d/y": "legacy y",
      "state/legacy-layout/sidecars/x.Zone.Identifier": "other zone",
      "state/migration-conflicts/tmp/diff": "older conflict",
      "state/migration-conflicts/tmp/diff.1": "legacy",
      "state/migration-conflicts/tmp/d/x": "legacy x",
      "state/migration-conflicts/sidecars/x.Zone.Identifier": "zone"
    })
}

const crossDevice: CrashScenario = {
  name: "cross-device copy",
  seed: (world) =>
    Effect.gen(function*() {
      yield* world.mkdirFixture(`${AGENT}/state`)
      world.mount(`${AGENT}/state`, 2)
      yield* seed(world, {
        "trust.json": `{"/a":true}`,
        "auto-learn/obs/1.jsonl": "one",
        "auto-learn/obs/2.jsonl": "two",
        "backups/b": "legacy b",
        "state/backups/config/b": "canonical b"
      })
      yield* world.symlinkFixture("/nowhere", `${AGENT}/auto-learn/dangling`)
    }),
  run: layout,
  expect: (world) => {
    assert.deepStrictEqual(files(world), {
      "state/trust.json": `{"/a":true}`,
      "state/legacy-layout/auto-learn/obs/1.jsonl": "one",
      "state/legacy-layout/auto-learn/obs/2.jsonl": "two",
      "state/backups/config/b": "canonical b",
      "state/migration-conflicts/backups/b": "legacy b"
    })
    assert.deepStrictEqual(links(world), { "state/legacy-layout/auto-learn/dangling": "/nowhere" })
  }
}

const key = (row: unknown) => String((row as { id: string }).id)
const ledgerMerge: CrashScenario = {
  name: "ledger merge",
  seed: (world) =>
    Effect.zipRight(
      seed(world, {
        "state/ext/config-state/history.jsonl": `{"id":"a","v":1}\n{"id":"b","v":1}\n`,
        "state/ext/state/history.jsonl": `{"id":"b","v":2}\n{"id":"c","v":2}\n`,
        "state/ext/config-state/fav.json": `[{"id":"f"}]`,
        "state/ext/config-state/blobs/1.bin": "blob"
      }),
      world.mkdirFixture(`${AGENT}/state/ext/state/blobs`)
    ),
  run: Effect.map(
    runToolkit({
      id: "ext-split",
      entries: [
        { id: "history", kind: "merge-ledger", format: "jsonl", key, winner: "from", from: "state/ext/config-state/history.jsonl", to: "state/ext/state/history.jsonl" },
        { id: "fav", kind: "merge-ledger", format: "json-array", key, winner: "to", from: "state/ext/config-state/fav.json", to: "state/ext/state/fav.json" },
        { id: "blobs", kind: "move", from: "state/ext/config-state/blobs", to: "state/ext/state/blobs" }
      ]
    }, { lockAttempts: 1 }),
    (r) => !r.failed
  ),
  expect: (world) => {
    const f = files(world, `${AGENT}/state`)
    assert.strictEqual(f["ext/state/history.jsonl"], `{"id":"b","v":1}\n{"id":"c","v":2}\n{"id":"a","v":1}\n`)
    assert.deepStrictEqual(JSON.parse(f["ext/state/fav.json"]!), [{ id: "f" }])
    assert.strictEqual(f["ext/state/blobs/1.bin"], "blob")
    // The losing row ("b" v2 lost to the `from` winner) is in `to`'s old bytes only; `from` was fully kept.
    assert.deepStrictEqual(Object.keys(f).filter((p) => p.startsWith("ext/config-state")), [])
    assert.isDefined(f["migrations/ext-split.jsonl"])
  }
}

/**
 * The documented plan (docs/migrations.md; decoded from its YAML, as `pi-storage migrate --plan` decodes it) over a web extension whose
 * legacy `config/state/` sits beside `state/` with a split ledger; no agent dir yet (the run makes it for the
 * marker and the journal). Converging to the crash-free tree means: every row once in `state/usage.jsonl`, the
 * legacy ledger whose changed row lost kept whole, nothing left in a temp file.
 */
const readmePlanOverWeb: CrashScenario = {
  name: "the documented plan over a web extension's split state",
  seed: (world) => seedSplitExtension(world),
  run: Effect.map(runToolkit(readmePlan(), { webDataRoot: WEB, lockAttempts: 1 }), (r) => !r.failed),
  expect: (world) => assertMigrated(world),
  roots: [AGENT, EXT],
  ignore: (rel) => rel === "state/migrations" || rel.startsWith("state/migrations/")
}

describe("migrations survive a crash at every mutating step (Memory layer)", () => {
  for (const scenario of [trustMerge, wholeRoot, perEntryConflicts, crossDevice]) {
    it.effect(scenario.name, () =>
      Effect.map(crashAtEveryStep(scenario, () => MemoryWorld.make({ journal: false })), (steps) => {
        assert.isAbove(steps, 2)
      }))
  }

  it.effect("ledger merge", () =>
    Effect.map(
      crashAtEveryStep(
        { ...ledgerMerge, ignore: (rel) => rel === "state/migrations" || rel.startsWith("state/migrations/") },
        () => MemoryWorld.make({ journal: false })
      ),
      (steps) => assert.isAbove(steps, 5)
    ))

  it.effect(readmePlanOverWeb.name, () =>
    Effect.map(crashAtEveryStep(readmePlanOverWeb, () => MemoryWorld.make({ journal: false })), (steps) => assert.isAbove(steps, 8)))
})

// ---------------------------------------------------------------------------------------------------------
// Random trees: whatever collides, every legacy byte survives once, the canonical copy is never overwritten.

const PATHS = ["a", "b", "a/x", "a/y", "b/x", "c/d/e", "c/d", "f"]
/** A consistent tree side: no path is both a file and a directory (a prefix of another chosen path). */
const sideArb = fc
  .dictionary(fc.constantFrom(...PATHS), fc.constantFrom("1", "2", "3"), { maxKeys: 6 })
  .map((d) => Object.fromEntries(Object.entries(d).filter(([p]) => !Object.keys(d).some((q) => q.startsWith(`${p}/`)))))

describe("random collisions (property)", () => {
  it.effect.prop(
    "legacy bytes end up exactly once at their place or under migration-conflicts; canonical files are untouched",
    [
      sideArb,
      sideArb,
      fc.boolean(),
      fc.option(fc.nat({ max: 40 }), { nil: undefined }),
      // Two migrators racing first (the lock must let one through and turn the other away), unevenly scheduled.
      fc.boolean(),
      fc.record({ seed: fc.integer(), maxYields: fc.integer({ min: 0, max: 3 }) })
    ],
    ([legacy, canonical, otherDevice, crashAt, race, jitter]) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make({ journal: false, jitter })
        const dest = "state/legacy-layout/tmp"
        yield* world.mkdirFixture(`${AGENT}/state`)
        if (otherDevice) world.mount(`${AGENT}/state`, 2)
        // Same small alphabet on both sides, so identical copies occur (they must collapse into one).
        yield* seed(world, Object.fromEntries(Object.entries(legacy).map(([p, c]) => [`tmp/${p}`, c])))
        yield* seed(world, Object.fromEntries(Object.entries(canonical).map(([p, c]) => [`${dest}/${p}`, c])))
        if (crashAt !== undefined) {
          const first = spawnProcess(world)
          world.crashAfter(crashAt, { pid: first.pid })
          yield* Effect.provide(layout, first.layer).pipe(Effect.exit)
          world.kill(HOST, first.pid)
          world.recover()
          // An empty marker left by the crash (killed between create and write) is held until the stale bound.
          yield* TestClock.adjust(DEFAULT_STALE_UNREADABLE_MS + 1)
        }
        if (race) {
          const racers = yield* Effect.all([0, 1].map(() => asProcess(world, runLayout({ lockAttempts: 1 }))), { concurrency: "unbounded" })
          for (const r of racers) {
            // A turned-away racer reports only the held lock.
            for (const e of r.errors) assert.strictEqual(e.path, ".pi-migration.lock", JSON.stringify(r.errors))
          }
        }
        const report = yield* asProcess(world, runLayout())
        assert.deepStrictEqual(report.errors, [])
        const after = files(world)
        // Canonical files keep their bytes at their place.
        for (const [p, c] of Object.entries(canonical)) assert.strictEqual(after[`${dest}/${p}`], c)
        // Each legacy file is at its place (moved, or identical to the canonical one), or under the conflicts
        // at its own relative path (whole when a colliding ancestor was preserved).
        const conflictRoot = "state/migration-conflicts/tmp"
        let identical = 0
        const preservedAt = new Set<string>()
        for (const [p, c] of Object.entries(legacy)) {
          if (after[`${dest}/${p}`] === c && canonical[p] === undefined) continue
          if (canonical[p] === c) {
            identical++
            continue
          }
          // Any component of the preserved path may carry a deterministic `.N` suffix (that slot was taken).
          const shape = new RegExp(`^${conflictRoot}/${p.split("/").map((c) => `${c}(\\.\\d+)?`).join("/")}$`)
          const candidates = Object.keys(after).filter((q) => shape.test(q) && after[q] === c)
          const fresh = candidates.filter((q) => !preservedAt.has(q))
          assert.isAbove(fresh.length, 0, `legacy ${p} (${c}) lost: ${JSON.stringify(after)}`)
          preservedAt.add(fresh[0]!)
        }
        // Nothing duplicated: every file is one original.
        assert.strictEqual(Object.keys(after).length, Object.keys(legacy).length + Object.keys(canonical).length - identical)
        assert.isUndefined(world.tree(`${AGENT}/tmp`)[`${AGENT}/tmp`])
        const settled = world.mutationCount
        yield* asProcess(world, runLayout())
        assert.strictEqual(world.mutationCount, settled)
      }),
    { fastCheck: { numRuns: 150 } }
  )
})

// ---------------------------------------------------------------------------------------------------------
// A plan's report and journal name every copy it kept, whichever run kept it.

/**
 * Two entries with collisions: a directory whose children partly collide (kept one by one under the entry's
 * conflict directory) and a file that collides whole. Crashed after every mutating step, then run to the end: the
 * last journal line of each entry names every copy of that entry on disk (the copy, or a directory holding it),
 * only its own, and a further run's report names them too.
 */
describe("a plan names every copy it kept, after a crash at any step (Memory layer)", () => {
  const plan = {
    id: "p",
    entries: [
      { id: "d", kind: "move" as const, from: "old/data", to: "state/data" },
      { id: "notes", kind: "move" as const, from: "old/notes.txt", to: "state/notes.txt" }
    ]
  }
  const seedPlan = (world: MemoryWorld) =>
    seed(world, {
      "old/data/a": "legacy a",
      "old/data/b": "legacy b",
      "old/data/c": "only legacy",
      "old/data/sub/x": "legacy x",
      "state/data/a": "canonical a",
      "state/data/b": "canonical b",
      "state/data/sub/x": "canonical x",
      "old/notes.txt": "legacy notes",
      "state/notes.txt": "canonical notes"
    })
  const CONFLICTS = "state/migration-conflicts/p"
  const finished = Effect.map(runToolkit(plan, { lockAttempts: 1 }), (r) => !r.failed)
  /** Each entry's copies on disk: the top-level names under the plan's conflict directory that are its own. */
  const copiesOnDisk = (world: MemoryWorld) => {
    const top = new Set(Object.keys(files(world)).filter((p) => p.startsWith(`${CONFLICTS}/`)).map((p) => p.split("/").slice(0, 4).join("/")))
    return {
      d: [...top].filter((p) => /\/d(\.[0-9]+)?$/.test(p)),
      notes: [...top].filter((p) => /\/notes(\.[0-9]+)?$/.test(p))
    }
  }
  const lastJournalLines = (world: MemoryWorld) => {
    const text = world.readFixtureText(`${AGENT}/state/migrations/p.jsonl`) ?? ""
    const last: Record<string, { outcome: string; conflicts?: Array<string> }> = {}
    for (const line of text.split("\n").filter((l) => l !== "")) {
      const record = JSON.parse(line)
      last[record.entryId] = record
    }
    return last
  }
  const named = (conflicts: ReadonlyArray<string> | undefined, copy: string) => (conflicts ?? []).some((c) => c === copy || c.startsWith(`${copy}/`))

  it.effect("every journal line and the report after a rerun name the copies on disk", () =>
    Effect.gen(function*() {
      const reference = MemoryWorld.make({ journal: false })
      yield* seedPlan(reference)
      const start = reference.mutationCount
      assert.isTrue(yield* asProcess(reference, finished))
      const steps = reference.mutationCount - start
      assert.isAbove(steps, 5)
      for (let k = 0; k <= steps; k++) {
        const world = MemoryWorld.make({ journal: false })
        yield* seedPlan(world)
        const first = spawnProcess(world)
        world.crashAfter(k, { hostname: HOST, pid: first.pid })
        yield* Effect.provide(finished, first.layer).pipe(Effect.exit)
        world.kill(HOST, first.pid)
        world.recover()
        for (let i = 0; i < 20 && !(yield* asProcess(world, finished)); i++) yield* TestClock.adjust(DEFAULT_STALE_UNREADABLE_MS + 1)
        const onDisk = copiesOnDisk(world)
        assert.isAbove(onDisk.d.length + onDisk.notes.length, 0, `crash ${k}: nothing collided`)
        const journal = lastJournalLines(world)
        const report = yield* asProcess(world, runToolkit(plan))
        for (const id of ["d", "notes"] as const) {
          for (const copy of onDisk[id]) {
            assert.isTrue(named(journal[id]?.conflicts, copy), `crash ${k}: journal of ${id} ${JSON.stringify(journal[id])} misses ${copy}`)
            const entry = report.entries.find((e) => e.id === id)!
            assert.isTrue(named(entry.conflicts, copy), `crash ${k}: report of ${id} ${JSON.stringify(entry)} misses ${copy}`)
          }
          // An entry names only its own copies.
          const other = id === "d" ? onDisk.notes : onDisk.d
          for (const copy of other) assert.isFalse(named(journal[id]?.conflicts, copy), `crash ${k}: ${id} names ${copy}`)
          // Kept by this run, or found kept by a run a crash stopped before its line.
          assert.include(["conflict-preserved", "already-done"], journal[id]?.outcome, `crash ${k}: ${id}`)
        }
      }
    }))
})
