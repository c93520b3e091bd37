/**
 * The dry run is the plan the run executes (docs/migrations.md "Migrations"; a second planner for the preview said "merge"
 * where the engine removed a duplicate or preserved a conflict). For generated legacy trees — identical
 * duplicates, differing and unparsable JSON, conflicting files, directories on both sides, earlier conflict
 * copies — `Migration.plan` writes nothing, and `Migration.run` reports executing exactly its decisions,
 * entry by entry.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT, asProcess, files, planLayout, runLayout } from "./migrationSupport.js"

const seed = (world: MemoryWorld, prefix: string, entries: Record<string, string>) =>
  Effect.forEach(Object.entries(entries), ([rel, content]) => world.writeFixture(`${AGENT}/${prefix}/${rel}`, content), { discard: true })

// `a.1` next to `a`: a conflict copy of `a` may need the `.1` slot that `a.1`'s own copy wants too.
const PATHS = ["a", "a.1", "b", "b/x", "b/y", "c/d/e", "c/d", "f"]
/** A consistent tree side: no path is both a file and a directory. */
const sideArb = fc
  .dictionary(fc.constantFrom(...PATHS), fc.constantFrom("1", "2"), { maxKeys: 5 })
  .map((d) => Object.fromEntries(Object.entries(d).filter(([p]) => !Object.keys(d).some((q) => q.startsWith(`${p}/`)))))
const trustArb = fc.option(fc.constantFrom(`{"/a":true}`, `{"/a":false,"/b":true}`, `{"/b":true}`, "{not json"), { nil: undefined })

const treeArb = fc.record({
  legacy: sideArb,
  canonical: sideArb,
  olderConflicts: sideArb,
  legacyTrust: trustArb,
  canonicalTrust: trustArb,
  sidecar: fc.option(fc.constantFrom("zone", "other"), { nil: undefined }),
  maxEntries: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined })
})

describe("Migration.plan is what Migration.run executes (Memory layer)", () => {
  it.effect.prop(
    "the dry run writes nothing, and the run reports doing exactly its decisions, entry by entry",
    [treeArb],
    ([tree]) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make({ journal: false })
        yield* seed(world, "tmp", tree.legacy)
        yield* seed(world, "state/legacy-layout/tmp", tree.canonical)
        yield* seed(world, "state/migration-conflicts/tmp", tree.olderConflicts)
        if (tree.legacyTrust !== undefined) yield* world.writeFixture(`${AGENT}/trust.json`, tree.legacyTrust)
        if (tree.canonicalTrust !== undefined) yield* world.writeFixture(`${AGENT}/state/trust.json`, tree.canonicalTrust)
        if (tree.sidecar !== undefined) {
          yield* world.writeFixture(`${AGENT}/n:Zone.Identifier`, tree.sidecar)
          yield* world.writeFixture(`${AGENT}/state/legacy-layout/sidecars/n.Zone.Identifier`, "zone")
        }
        const options = tree.maxEntries === undefined ? undefined : { maxEntries: tree.maxEntries }
        const before = files(world)
        const mutations = world.mutationCount
        const plan = yield* asProcess(world, planLayout(options))
        assert.strictEqual(world.mutationCount, mutations, "the dry run wrote something")
        assert.deepStrictEqual(files(world), before)

        const report = yield* asProcess(world, runLayout(options))
        // The only errors are the refusals the dry run announced (a file where a conflict copy's directory belongs).
        assert.deepStrictEqual(report.errors, plan.decisions.filter((d) => d.action === "refuse").map((d) => ({ _tag: "UnitFailed", path: d.from, message: d.why })))
        assert.strictEqual(report.partial, plan.partial)
        assert.deepStrictEqual(report.decisions.map(({ outcome: _, ...d }) => d), [...plan.decisions])
        assert.deepStrictEqual(report.decisions.map((d) => d.outcome), plan.decisions.map(() => "done"))
        // What each decision says happened, happened: the legacy side is gone, kept copies hold its bytes.
        const after = files(world)
        for (const d of plan.decisions) {
          if (d.action === "move" || d.action === "preserve-conflict") {
            if (before[d.from] !== undefined) assert.strictEqual(after[d.to], before[d.from], JSON.stringify(d))
            assert.isUndefined(after[d.from], JSON.stringify(d))
          }
          if (d.action === "remove-duplicate") {
            assert.isUndefined(after[d.from])
            assert.strictEqual(after[d.to], before[d.from])
          }
        }
        // Until the plan is empty (a budget makes several calls), each call executes its own dry run.
        for (let call = 0; call < 20 && report.partial; call++) {
          const next = yield* asProcess(world, planLayout(options))
          const done = yield* asProcess(world, runLayout(options))
          assert.deepStrictEqual(done.decisions.map(({ outcome: _, ...d }) => d), [...next.decisions])
          if (!done.partial) break
        }
        // Done: nothing left but what was refused (and stays refused until a person moves the blocker).
        const last = yield* asProcess(world, planLayout(options))
        assert.isTrue(last.decisions.every((d) => d.action === "refuse" || d.action === "merge-directory"), JSON.stringify(last.decisions))
      }),
    { fastCheck: { numRuns: 40 } }
  )

  it.effect("a missing agent dir: the plan says so and nothing is created", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const plan = yield* asProcess(world, planLayout())
      assert.deepStrictEqual(plan, { agentDir: AGENT, exists: false, notADirectory: null, decisions: [], partial: false })
      assert.deepStrictEqual(Object.keys(world.tree("/")), ["/"])
    }))

  it.effect("an agent dir that is a regular file: the plan names its type", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(AGENT, "not a dir")
      const plan = yield* asProcess(world, planLayout())
      assert.deepStrictEqual([plan.exists, plan.notADirectory, plan.decisions], [false, "regular file", []])
    }))

  it.effect("the decisions the old preview got wrong: a duplicate is removed and a conflict preserved, not merged", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${AGENT}/n:Zone.Identifier`, "same")
      yield* world.writeFixture(`${AGENT}/state/legacy-layout/sidecars/n.Zone.Identifier`, "same")
      yield* world.writeFixture(`${AGENT}/trust.json`, "{not json")
      yield* world.writeFixture(`${AGENT}/state/trust.json`, "{}")
      const plan = yield* asProcess(world, planLayout())
      assert.deepStrictEqual(plan.decisions.map((d) => [d.action, d.from, d.to]), [
        ["remove-duplicate", "n:Zone.Identifier", "state/legacy-layout/sidecars/n.Zone.Identifier"],
        ["preserve-conflict", "trust.json", "state/migration-conflicts/trust.json"]
      ])
      assert.match(plan.decisions[1]!.why, /not a JSON object/)
      const report = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(report.decisions.map((d) => [d.action, d.outcome]), [["remove-duplicate", "done"], ["preserve-conflict", "done"]])
      assert.deepStrictEqual(files(world), {
        "state/legacy-layout/sidecars/n.Zone.Identifier": "same",
        "state/trust.json": "{}",
        "state/migration-conflicts/trust.json": "{not json"
      })
    }))

  it.effect("the run plans again: a tree changed after the dry run gets the run's own decisions, never the stale ones", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${AGENT}/tmp/x`, "legacy")
      yield* world.mkdirFixture(`${AGENT}/state/legacy-layout/tmp`)
      yield* world.writeFixture(`${AGENT}/backups/b`, "b")
      const dry = yield* asProcess(world, planLayout())
      assert.deepStrictEqual(dry.decisions.map((d) => [d.action, d.from]), [["move", "backups"], ["merge-directory", "tmp"], ["move", "tmp/x"]])
      // A foreign writer puts a file where backups/ was to go.
      yield* world.writeFixture(`${AGENT}/state/backups/config`, "a file now")
      const report = yield* asProcess(world, runLayout())
      // Planned again under the marker: the run sees the file and preserves instead of moving onto it.
      assert.deepStrictEqual(report.decisions.map((d) => [d.action, d.from, d.outcome]), [
        ["preserve-conflict", "backups", "done"],
        ["merge-directory", "tmp", "done"],
        ["move", "tmp/x", "done"]
      ])
      assert.strictEqual(world.readFixtureText(`${AGENT}/state/backups/config`), "a file now")
      assert.strictEqual(world.readFixtureText(`${AGENT}/state/migration-conflicts/backups/b`), "b")
    }))
})
