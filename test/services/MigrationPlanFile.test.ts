/**
 * Per-entry plans from the deployment flow (docs/migrations.md "Migrations", seed 003 §5) on the Memory layer: the documented
 * plan file, decoded as the CLI decodes it, over a web extension whose legacy `config/state/` sits beside
 * `state/` with a split ledger; the dry run says what the run then does; a rerun is a no-op; roots, links on
 * the way and keyless rows.
 */
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { keyOfFields, type MigrationPlan } from "../../src/domain/MigrationPlan.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { README_PLAN } from "../support/readmePlan.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { AGENT, asProcess, files, previewToolkit, runToolkit, snapshot, spawn } from "./migrationSupport.js"
import { assertMigrated, EXT, readmePlan, rows, seedSplitExtension, WEB } from "./planFileSupport.js"

describe("the documented plan over a web extension with a split state (Memory)", () => {
  it.effect("runs once: ledger merged by key, the rest moved entry by entry, collisions kept, each outcome journaled; a rerun is a no-op", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedSplitExtension(world)
      yield* world.writeFixture(`${AGENT}/settings.json`, "{}")
      const plan = readmePlan()
      const report = yield* asProcess(world, runToolkit(plan, { webDataRoot: WEB }))
      assert.isFalse(report.failed)
      assert.deepStrictEqual(report.entries.map((e) => [e.id, e.root, e.outcome, e.rows, e.mergedRows, e.conflicts]), [
        ["usage-ledger", EXT, "conflict-preserved", 4, 1, [`state/migration-conflicts/${README_PLAN.id}/usage-ledger`]],
        ["legacy-state", EXT, "conflict-preserved", undefined, undefined, [`state/migration-conflicts/${README_PLAN.id}/legacy-state/notes.md`]]
      ])
      assertMigrated(world)
      const journal = rows(world.readFixtureText(`${AGENT}/state/migrations/${README_PLAN.id}.jsonl`))
      assert.deepStrictEqual(journal.map((r) => [r["entryId"], r["outcome"], r["root"], r["from"], r["to"]]), [
        ["usage-ledger", "conflict-preserved", EXT, "config/state/usage.jsonl", "state/usage.jsonl"],
        ["legacy-state", "conflict-preserved", EXT, "config/state", "state"]
      ])

      const settled = world.mutationCount
      const again = yield* asProcess(world, runToolkit(plan, { webDataRoot: WEB }))
      assert.deepStrictEqual(again.entries.map((e) => e.outcome), ["already-done", "already-done"])
      assert.match(again.entries[0]!.reason!, /journal: conflict-preserved/)
      assert.strictEqual(world.mutationCount, settled, "a rerun writes nothing")
    }))

  it.effect("the dry run changes nothing and lists, entry by entry, exactly the decisions the run then executes", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedSplitExtension(world)
      const plan = readmePlan()
      const before = world.mutationCount
      const preview = yield* asProcess(world, previewToolkit(plan, { webDataRoot: WEB }))
      assert.strictEqual(world.mutationCount, before)
      assert.isFalse(preview.refused)
      const decisions = preview.entries.map((e) => e.decisions.map((d) => [d.action, d.from, d.to]))
      assert.deepStrictEqual(decisions, [
        [
          ["merge-ledger", "config/state/usage.jsonl", "state/usage.jsonl"],
          ["preserve-conflict", "config/state/usage.jsonl", `state/migration-conflicts/${README_PLAN.id}/usage-ledger`]
        ],
        // Planned as the ledger step leaves the tree: usage.jsonl is gone from config/state/ by then.
        [
          ["merge-directory", "config/state", "state"],
          ["merge-directory", "config/state/archive", "state/archive"],
          ["move", "config/state/archive/2026-10.pwarc", "state/archive/2026-10.pwarc"],
          ["preserve-conflict", "config/state/notes.md", `state/migration-conflicts/${README_PLAN.id}/legacy-state/notes.md`]
        ]
      ])
      assert.match(preview.entries[0]!.decisions[0]!.why, /3 rows in from, 3 rows in to; 1 added, 0 replaced \(winner: to\), 4 rows after; some rows of from lost/)
      const report = yield* asProcess(world, runToolkit(plan, { webDataRoot: WEB }))
      assert.deepStrictEqual(report.entries.map((e) => e.decisions), preview.entries.map((e) => e.decisions))
    }))

  it.effect("the web data root defaults to ~/.pi/web/data (the Host's home), and a missing extension dir is reported as such", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedSplitExtension(world)
      const report = yield* asProcess(world, runToolkit(readmePlan()))
      assert.isFalse(report.failed)
      assertMigrated(world)
      const elsewhere = yield* asProcess(world, runToolkit(readmePlan(), { webDataRoot: "/srv/nowhere" }))
      assert.deepStrictEqual(elsewhere.entries.map((e) => e.outcome), ["already-done", "already-done"])
      assert.match(elsewhere.entries[0]!.reason!, /its root \/srv\/nowhere\/aiti-usage does not exist/)
    }))
})

describe("links on the way are never gone through (Memory)", () => {
  const plan = (from: string, to: string): MigrationPlan => ({ id: "p", root: { web: "ext" }, entries: [{ id: "e", kind: "move", from, to }] })

  for (const [name, link, target, from, to] of [
    ["config/state is a link out of the root", `${WEB}/ext/config/state`, "/home/user/secrets", "config/state/x", "state/x"],
    ["the destination's parent is a link out", `${WEB}/ext/state`, "/home/user/secrets", "config/x", "state/x"],
    ["the extension's own dir is a link", `${WEB}/ext`, "/home/user/secrets", "config/x", "state/x"]
  ] as const) {
    it.effect(`${name}: the step fails naming it; nothing outside is read into the plan or changed`, () =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        yield* world.writeFixture("/home/user/secrets/x", "secret")
        yield* world.writeFixture("/home/user/secrets/config/x", "secret")
        if (link !== `${WEB}/ext`) yield* world.writeFixture(`${WEB}/ext/config/x`, "mine")
        yield* world.mkdirFixture(NodePath.dirname(link))
        yield* world.symlinkFixture(target, link)
        const outside = snapshot(world, "/home/user/secrets")
        const report = yield* asProcess(world, runToolkit(plan(from, to), { webDataRoot: WEB }))
        assert.isTrue(report.failed)
        assert.strictEqual(report.entries[0]!.outcome, "failed")
        assert.match(report.entries[0]!.reason!, /is a symlink on the way \(never written through\)/)
        assert.deepStrictEqual(snapshot(world, "/home/user/secrets"), outside)
        const preview = yield* asProcess(world, previewToolkit(plan(from, to), { webDataRoot: WEB }))
        assert.isTrue(preview.refused)
      }))
  }
})

describe("merge-ledger keeps every row (Memory)", () => {
  const key = keyOfFields(["id"])

  it.effect("the winner `from` replacing rows of `to`: to's previous bytes are kept first, and a rerun changes nothing (a crash between is MigrationCrash's)", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${AGENT}/state/old.jsonl`, `{"id":"a","v":1}\n`)
      yield* world.writeFixture(`${AGENT}/state/new.jsonl`, `{"id":"a","v":2}\n{"id":"b","v":2}\n`)
      const plan: MigrationPlan = { id: "p", entries: [{ id: "rows", kind: "merge-ledger", from: "state/old.jsonl", to: "state/new.jsonl", format: "jsonl", key, winner: "from" }] }
      const report = yield* asProcess(world, runToolkit(plan))
      assert.deepStrictEqual([report.entries[0]!.outcome, report.entries[0]!.conflicts], ["conflict-preserved", ["state/migration-conflicts/p/rows.replaced"]])
      const f = files(world)
      assert.strictEqual(f["state/new.jsonl"], `{"id":"a","v":1}\n{"id":"b","v":2}\n`)
      assert.strictEqual(f["state/migration-conflicts/p/rows.replaced"], `{"id":"a","v":2}\n{"id":"b","v":2}\n`)
      assert.isUndefined(f["state/old.jsonl"])
      const settled = world.mutationCount
      assert.strictEqual((yield* asProcess(world, runToolkit(plan))).entries[0]!.outcome, "already-done")
      assert.strictEqual(world.mutationCount, settled)
    }))

  for (const written of ["to", "from"] as const) {
    it.effect(`a row the extension appends to ${written} while the merge runs fails the entry instead of being lost; a rerun merges it`, () =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const from = `${AGENT}/state/old.jsonl`
        const to = `${AGENT}/state/new.jsonl`
        yield* world.writeFixture(from, `{"id":"a"}\n{"id":"b"}\n`)
        yield* world.writeFixture(to, `{"id":"b"}\n{"id":"c"}\n`)
        const plan: MigrationPlan = { id: "p", entries: [{ id: "rows", kind: "merge-ledger", from: "state/old.jsonl", to: "state/new.jsonl", format: "jsonl", key, winner: "to" }] }
        // A writer still running: it appends one row between the merge's read and its replace of `to`.
        const process = spawn(world)
        const memory = Context.get(yield* Layer.build(process.layer), FileSystem)
        const appended = written === "to" ? to : from
        const racing = FileSystem.of({
          ...memory,
          writeFileExclusive: (path, data, options) =>
            Effect.zipRight(
              path.endsWith(".new.jsonl.pi-migrate-partial")
                ? Effect.flatMap(memory.readFile(appended), (bytes) => memory.writeFileAtomic(appended, new TextEncoder().encode(new TextDecoder().decode(bytes) + `{"id":"late"}\n`)))
                : Effect.void,
              memory.writeFileExclusive(path, data, options)
            )
        })
        const report = yield* runToolkit(plan).pipe(Effect.provide(Layer.merge(process.layer, Layer.succeed(FileSystem, racing))))
        assert.strictEqual(report.entries[0]!.outcome, "failed")
        assert.match(report.entries[0]!.reason!, /written after the merge read it/)
        assert.include(world.readFixtureText(appended)!, `{"id":"late"}`)
        assert.deepStrictEqual(Object.keys(files(world, `${AGENT}/state`)).filter((p) => p.includes("pi-migrate-partial")), [])
        const again = yield* asProcess(world, runToolkit(plan))
        assert.isFalse(again.failed)
        assert.deepStrictEqual(rows(world.readFixtureText(to)).map((r) => r["id"]).sort(), ["a", "b", "c", "late"])
      }).pipe(Effect.scoped))
  }

  it.effect("a row without the key fails the entry, naming the row; both files are left as they are", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${AGENT}/state/old.jsonl`, `{"id":"a"}\n{"name":"no id"}\n`)
      yield* world.writeFixture(`${AGENT}/state/new.jsonl`, `{"id":"b"}\n`)
      const before = snapshot(world, `${AGENT}/state`)
      const report = yield* asProcess(world, runToolkit({ id: "p", entries: [{ id: "rows", kind: "merge-ledger", from: "state/old.jsonl", to: "state/new.jsonl", format: "jsonl", key, winner: "to" }] }))
      assert.isTrue(report.failed)
      assert.match(report.entries[0]!.reason!, /row 2 of state\/old\.jsonl has no key/)
      const after = snapshot(world, `${AGENT}/state`)
      for (const rel of Object.keys(before)) assert.strictEqual(after[rel], before[rel], rel)
      assert.match(world.readFixtureText(`${AGENT}/state/migrations/p.jsonl`)!, /"outcome":"failed"/)
    }))

  it.effect("an agent-side extension's root is its state dir, and its conflicts stay inside it", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const ns = `${AGENT}/state/extensions/todo`
      yield* world.writeFixture(`${ns}/items-v1.json`, `[{"id":1,"t":"old"},{"id":2,"t":"two"}]`)
      yield* world.writeFixture(`${ns}/items.json`, `[{"id":1,"t":"new"}]`)
      const report = yield* asProcess(world, runToolkit({
        id: "todo-v2",
        root: { agentExtension: "todo" },
        entries: [{ id: "items", kind: "merge-ledger", from: "items-v1.json", to: "items.json", format: "json-array", key, winner: "to" }]
      }))
      assert.deepStrictEqual([report.entries[0]!.root, report.entries[0]!.conflicts], [ns, ["migration-conflicts/todo-v2/items"]])
      const f = files(world, ns)
      assert.deepStrictEqual(JSON.parse(f["items.json"]!), [{ id: 1, t: "new" }, { id: 2, t: "two" }])
      assert.strictEqual(f["migration-conflicts/todo-v2/items"], `[{"id":1,"t":"old"},{"id":2,"t":"two"}]`)
    }))
})

describe("copies kept earlier are read only where the plan keeps them (Memory)", () => {
  it.effect("a symlinked state/migration-conflicts is not listed: nothing is claimed, no journal line is made up", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      yield* world.writeFixture("/elsewhere/p/d.9", "someone else's")
      yield* world.mkdirFixture(`${AGENT}/state`)
      yield* world.symlinkFixture("/elsewhere", `${AGENT}/state/migration-conflicts`)
      // The source is gone: nothing to move.
      const plan: MigrationPlan = { id: "p", entries: [{ id: "d", kind: "move", from: "a", to: "b" }] }
      const before = snapshot(world, AGENT)
      const report = yield* asProcess(world, runToolkit(plan))
      assert.strictEqual(report.entries[0]!.outcome, "already-done")
      assert.isUndefined(report.entries[0]!.conflicts)
      assert.deepStrictEqual(snapshot(world, AGENT), before)
    }))
})
