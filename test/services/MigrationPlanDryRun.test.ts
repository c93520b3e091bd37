/**
 * A migration plan's dry run is what its run executes, and a run loses no row (docs/migrations.md "Migrations"). For
 * generated trees of JSON-lines files and generated plans of `move` and `merge-ledger` steps whose paths
 * overlap (a step may move what an earlier one merged into, or merge out of what an earlier one moved),
 * `Migration.previewPlan` writes nothing and lists, entry by entry, the decisions `Migration.runPlan` then
 * reports; every row found in any file before the run is in some file after it; a rerun changes nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { keyOfFields, type MigrationPlan, type PlanEntry, planProblem } from "../../src/domain/MigrationPlan.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { asProcess, files, previewToolkit, runToolkit } from "./migrationSupport.js"

const WEB = "/home/user/.pi/web/data"
const EXT = `${WEB}/ext`

const FILES = ["a/x.jsonl", "a/y.jsonl", "b/x.jsonl", "b/s/x.jsonl", "c.jsonl", "d.jsonl"]
const STEP_PATHS = ["a", "b", "f", "a/x.jsonl", "b/x.jsonl", "f/x.jsonl", "c.jsonl", "d.jsonl", "e.jsonl", "b/s"]

const rowArb = fc.record({ id: fc.integer({ min: 0, max: 3 }), v: fc.integer({ min: 0, max: 1 }) })
const treeArb = fc.dictionary(fc.constantFrom(...FILES), fc.array(rowArb, { minLength: 1, maxLength: 4 }), { maxKeys: 5 })
const nests = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`)
const stepArb = fc
  .record({
    kind: fc.constantFrom("move" as const, "merge-ledger" as const),
    from: fc.constantFrom(...STEP_PATHS),
    to: fc.constantFrom(...STEP_PATHS),
    winner: fc.constantFrom("from" as const, "to" as const)
  })
  .filter((s) => !nests(s.from, s.to))
const planArb = fc.array(stepArb, { minLength: 1, maxLength: 4 })

const key = keyOfFields(["id"])
const planOf = (steps: ReadonlyArray<fc.RecordValue<{ kind: "move" | "merge-ledger"; from: string; to: string; winner: "from" | "to" }>>): MigrationPlan => ({
  id: "p",
  root: { web: "ext" },
  entries: steps.map((s, i): PlanEntry =>
    s.kind === "move"
      ? { id: `s${i}`, kind: "move", from: s.from, to: s.to }
      : { id: `s${i}`, kind: "merge-ledger", from: s.from, to: s.to, format: "jsonl", key, winner: s.winner })
})

/** Every row of every file, as canonical JSON. */
const rowsIn = (world: MemoryWorld): ReadonlySet<string> =>
  new Set(Object.values(files(world, EXT)).flatMap((text) => text.split("\n").filter((l) => l !== "").map((l) => JSON.stringify(JSON.parse(l)))))

type Tree = typeof treeArb extends fc.Arbitrary<infer A> ? A : never
type Steps = typeof planArb extends fc.Arbitrary<infer A> ? A : never

const dryRunIsTheRun = (tree: Tree, steps: Steps) =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      for (const [path, rows] of Object.entries(tree)) {
        yield* world.writeFixture(`${EXT}/${path}`, rows.map((r) => JSON.stringify(r) + "\n").join(""))
      }
      const plan = planOf(steps)
      if (planProblem(plan) !== undefined) {
        // A plan that would move data back where an earlier step took it from is refused before anything runs.
        const refused = yield* asProcess(world, runToolkit(plan, { webDataRoot: WEB })).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "InvalidMigrationPlan")
        return
      }
      const rowsBefore = rowsIn(world)
      const mutations = world.mutationCount
      const preview = yield* asProcess(world, previewToolkit(plan, { webDataRoot: WEB }))
      assert.strictEqual(world.mutationCount, mutations, "the dry run wrote something")

      const report = yield* asProcess(world, runToolkit(plan, { webDataRoot: WEB }))
      assert.deepStrictEqual(report.entries.map((e) => e.decisions), preview.entries.map((e) => e.decisions))
      // The only failures are the refusals the dry run announced.
      assert.deepStrictEqual(
        report.entries.map((e) => e.outcome === "failed"),
        preview.entries.map((e) => e.decisions.some((d) => d.action === "refuse"))
      )
      const rowsAfter = rowsIn(world)
      for (const row of rowsBefore) assert.isTrue(rowsAfter.has(row), `row ${row} lost`)

      if (!report.failed) {
        const settled = world.mutationCount
        const again = yield* asProcess(world, runToolkit(plan, { webDataRoot: WEB }))
        assert.isFalse(again.failed)
        assert.strictEqual(world.mutationCount, settled, "a rerun changed something")
      }
    })

describe("Migration.previewPlan is what Migration.runPlan executes (Memory layer)", () => {
  it.effect.prop("the dry run writes nothing; the run reports its decisions entry by entry; no row is lost; a rerun is a no-op", [treeArb, planArb], ([tree, steps]) =>
    dryRunIsTheRun(tree, steps), { fastCheck: { numRuns: 100 } })

  // Found by the property: a directory an entry makes on its way (`b`, for `b/s`) is a directory for the
  // entries after it, where a later entry moves it (the dry run said "nothing is at the destination"), and
  // after a later entry moves out what it holds (the run leaves it; the dry run said "the source is absent").
  it.effect("a directory made on the way stays, and is where a move puts it", () =>
    Effect.gen(function*() {
      yield* dryRunIsTheRun({ "a/x.jsonl": [{ id: 0, v: 0 }], "c.jsonl": [{ id: 0, v: 0 }] }, [
        { kind: "move", from: "a", to: "b/s", winner: "from" },
        { kind: "move", from: "b", to: "e.jsonl", winner: "from" },
        { kind: "move", from: "c.jsonl", to: "e.jsonl", winner: "from" }
      ])
      yield* dryRunIsTheRun({ "c.jsonl": [{ id: 0, v: 0 }] }, [
        { kind: "move", from: "c.jsonl", to: "b/s", winner: "from" },
        { kind: "move", from: "b/s", to: "a", winner: "from" },
        { kind: "move", from: "b", to: "a", winner: "from" }
      ])
    }))

  // Found by a review (the property's paths hold no chain of three directories): a directory moved twice holds
  // what an entry put in it between the moves, and a later move of it takes that along.
  it.effect("a directory moved twice holds what was put in it between the moves", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      for (const path of ["c.jsonl", "d.jsonl", "t/q.jsonl"]) yield* world.writeFixture(`${EXT}/${path}`, `{"id":0,"v":0}\n`)
      const plan: MigrationPlan = {
        id: "p",
        root: { web: "ext" },
        entries: [["c.jsonl", "x/k.jsonl"], ["x", "y"], ["d.jsonl", "y/m.jsonl"], ["y", "z"], ["z", "t"]].map(([from, to], i): PlanEntry => ({ id: `s${i}`, kind: "move", from: from!, to: to! }))
      }
      const preview = yield* asProcess(world, previewToolkit(plan, { webDataRoot: WEB }))
      const report = yield* asProcess(world, runToolkit(plan, { webDataRoot: WEB }))
      assert.deepStrictEqual(report.entries.map((e) => e.decisions), preview.entries.map((e) => e.decisions))
      assert.deepStrictEqual(Object.keys(files(world, EXT)).sort(), ["t/k.jsonl", "t/m.jsonl", "t/q.jsonl"])
    }))
})
