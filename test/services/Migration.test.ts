import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { Migration } from "../../src/services/Migration.js"
import { AGENT, asProcess, files, HOST, links, migrationAt, runLayout, runToolkit, snapshot, spawn } from "./migrationSupport.js"

const seedFile = (world: MemoryWorld, rel: string, content: string) => world.writeFixture(`${AGENT}/${rel}`, content)

describe("Migration.run (MG1) on the Memory layer", () => {
  it.effect("moves every legacy entry to its canonical place and leaves config and resources alone", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "settings.json", `{"theme":"dark"}`)
      yield* seedFile(world, "skills/s/SKILL.md", "skill")
      yield* seedFile(world, "trust.json", `{"/p":true}`)
      yield* seedFile(world, "backups/2024/settings.json", "old settings")
      yield* seedFile(world, "resource-profiles/abc/settings.json", "overlay")
      yield* seedFile(world, "auto-learn/obs.jsonl", "obs")
      yield* seedFile(world, "tmp/scratch.txt", "scratch")
      yield* seedFile(world, "auth.json:Zone.Identifier", "[ZoneTransfer]")
      yield* world.symlinkFixture("/etc/passwd", `${AGENT}/tmp/link`)
      const report = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(report.errors, [])
      assert.isFalse(report.partial)
      assert.deepStrictEqual([...report.moved].sort(), [
        "auth.json:Zone.Identifier", "auto-learn", "backups", "resource-profiles", "tmp", "trust.json"
      ])
      assert.deepStrictEqual(files(world), {
        "settings.json": `{"theme":"dark"}`,
        "skills/s/SKILL.md": "skill",
        "state/trust.json": `{"/p":true}`,
        "state/backups/config/2024/settings.json": "old settings",
        "profiles/directories/abc/settings.json": "overlay",
        "state/legacy-layout/auto-learn/obs.jsonl": "obs",
        "state/legacy-layout/tmp/scratch.txt": "scratch",
        "state/legacy-layout/sidecars/auth.json.Zone.Identifier": "[ZoneTransfer]"
      })
      // The link moved as a link; its target was never touched.
      assert.deepStrictEqual(links(world), { "state/legacy-layout/tmp/link": "/etc/passwd" })
      assert.isUndefined(world.tree(`${AGENT}/.pi-migration.lock`)[`${AGENT}/.pi-migration.lock`])
    }))

  it.effect("a fresh or missing agent dir gets nothing created, and an already migrated one is not touched", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const missing = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(missing, { moved: [], merged: [], conflicts: [], partial: false, errors: [], decisions: [] })
      assert.deepStrictEqual(Object.keys(world.tree("/")), ["/"])
      yield* world.mkdirFixture(AGENT)
      yield* seedFile(world, "settings.json", "{}")
      const before = world.mutationCount
      const fresh = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(fresh.moved, [])
      assert.strictEqual(world.mutationCount, before)
      assert.deepStrictEqual(Object.keys(snapshot(world)).sort(), [".", "settings.json"])
    }))

  it.effect("trust.json at both places: objects merged (canonical wins), overridden legacy copy preserved", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "trust.json", `{"/a":true,"/b":false}`)
      yield* seedFile(world, "state/trust.json", `{"/b":true,"/c":true}`)
      const report = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(report.merged, ["trust.json"])
      assert.deepStrictEqual(report.conflicts, [{ from: "trust.json", to: "state/migration-conflicts/trust.json" }])
      assert.deepStrictEqual(JSON.parse(world.readFixtureText(`${AGENT}/state/trust.json`)!), { "/a": true, "/b": true, "/c": true })
      assert.strictEqual(world.readFixtureText(`${AGENT}/state/migration-conflicts/trust.json`), `{"/a":true,"/b":false}`)
      assert.isUndefined(world.readFixture(`${AGENT}/trust.json`))
    }))

  it.effect("trust.json whose keys the canonical copy already has with the same values is simply retired", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "trust.json", `{"/a":true}`)
      yield* seedFile(world, "state/trust.json", `{"/a":true,"/c":true}`)
      const report = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(report.conflicts, [])
      assert.deepStrictEqual(files(world), { "state/trust.json": `{"/a":true,"/c":true}` })
    }))

  it.effect("an unparsable trust.json is preserved as a conflict, never lost", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "trust.json", `{not json`)
      yield* seedFile(world, "state/trust.json", `{"/c":true}`)
      const report = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(report.errors, [])
      assert.deepStrictEqual(files(world), {
        "state/trust.json": `{"/c":true}`,
        "state/migration-conflicts/trust.json": "{not json"
      })
    }))

  it.effect("merges entry by entry into an existing target; collisions go to migration-conflicts with a suffix if taken", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "backups/same.json", "same")
      yield* seedFile(world, "backups/diff.json", "legacy diff")
      yield* seedFile(world, "backups/only.json", "only legacy")
      yield* seedFile(world, "backups/dir/x", "legacy x")
      yield* seedFile(world, "backups/dir/z", "legacy z")
      yield* seedFile(world, "state/backups/config/same.json", "same")
      yield* seedFile(world, "state/backups/config/diff.json", "canonical diff")
      yield* seedFile(world, "state/backups/config/dir/x", "canonical x")
      yield* seedFile(world, "state/migration-conflicts/backups/diff.json", "an older conflict")
      const report = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(report.errors, [])
      assert.deepStrictEqual(report.merged, ["backups"])
      assert.deepStrictEqual(report.conflicts, [
        { from: "backups/diff.json", to: "state/migration-conflicts/backups/diff.json.1" },
        { from: "backups/dir/x", to: "state/migration-conflicts/backups/dir/x" }
      ])
      assert.deepStrictEqual(files(world), {
        "state/backups/config/same.json": "same",
        "state/backups/config/diff.json": "canonical diff",
        "state/backups/config/only.json": "only legacy",
        "state/backups/config/dir/x": "canonical x",
        "state/backups/config/dir/z": "legacy z",
        "state/migration-conflicts/backups/diff.json": "an older conflict",
        "state/migration-conflicts/backups/diff.json.1": "legacy diff",
        "state/migration-conflicts/backups/dir/x": "legacy x"
      })
    }))

  it.effect("a pre-created empty target directory does not freeze the migration", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "resource-profiles/a/settings.json", "A")
      yield* world.mkdirFixture(`${AGENT}/profiles/directories`)
      yield* asProcess(world, runLayout())
      assert.deepStrictEqual(files(world), { "profiles/directories/a/settings.json": "A" })
    }))

  it.effect("a whole root moves with one rename when the target is absent", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "backups/a", "a")
      yield* seedFile(world, "backups/b/c", "c")
      const ino = world.tree(`${AGENT}/backups`)[`${AGENT}/backups`]!.ino
      world.clearJournal()
      yield* asProcess(world, runLayout())
      const renames = world.journal.filter((j) => j.op === "rename" && j.ok)
      assert.deepStrictEqual(renames.map((r) => [r.path, r.path2]).filter(([p]) => p === `${AGENT}/backups`), [
        [`${AGENT}/backups`, `${AGENT}/state/backups/config`]
      ])
      assert.strictEqual(world.tree(`${AGENT}/state/backups/config`)[`${AGENT}/state/backups/config`]!.ino, ino)
    }))

  it.effect("cross-device: copy, verify, then remove the source; links recreated, never followed", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture(`${AGENT}/state`)
      world.mount(`${AGENT}/state`, 2)
      yield* seedFile(world, "trust.json", `{"/a":true}`)
      yield* seedFile(world, "tmp/d/f.txt", "deep")
      yield* world.symlinkFixture("../../settings.json", `${AGENT}/tmp/d/l`)
      yield* world.writeFixture(`${AGENT}/tmp/mode.sh`, "#!/bin/sh", { mode: 0o750 })
      const report = yield* asProcess(world, runLayout())
      assert.deepStrictEqual(report.errors, [])
      assert.deepStrictEqual(files(world), {
        "state/trust.json": `{"/a":true}`,
        "state/legacy-layout/tmp/d/f.txt": "deep",
        "state/legacy-layout/tmp/mode.sh": "#!/bin/sh"
      })
      assert.deepStrictEqual(links(world), { "state/legacy-layout/tmp/d/l": "../../settings.json" })
      const tree = world.tree(`${AGENT}/state`)
      assert.strictEqual(tree[`${AGENT}/state/legacy-layout/tmp/mode.sh`]!.mode, 0o750)
      assert.strictEqual(tree[`${AGENT}/state/legacy-layout/tmp/d/f.txt`]!.dev, 2)
    }))

  it.effect("at most maxEntries top-level entries per call; partial calls continue", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      for (let i = 0; i < 5; i++) yield* seedFile(world, `backups/f${i}`, `v${i}`)
      yield* seedFile(world, "state/backups/config/keep", "keep")
      yield* seedFile(world, "tmp/t", "t")
      const first = yield* asProcess(world, runLayout({ maxEntries: 3 }))
      assert.isTrue(first.partial)
      assert.deepStrictEqual(first.moved, ["backups/f0", "backups/f1", "backups/f2"])
      const second = yield* asProcess(world, runLayout({ maxEntries: 3 }))
      assert.isFalse(second.partial)
      assert.deepStrictEqual(second.moved, ["backups/f3", "backups/f4", "tmp"])
      const third = yield* asProcess(world, runLayout({ maxEntries: 3 }))
      assert.deepStrictEqual(third, { moved: [], merged: [], conflicts: [], partial: false, errors: [], decisions: [] })
      assert.strictEqual(Object.keys(files(world)).length, 7)
    }))

  it.live("a live concurrent migration's marker makes the call wait, then report, moving nothing", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "trust.json", "{}")
      const other = world.spawn(HOST)
      yield* world.writeFixture(`${AGENT}/.pi-migration.lock`, JSON.stringify({
        version: 1, purpose: "migrate-agent-dir", host: HOST, bootId: world.bootId(HOST), pid: other,
        processStartedAt: world.startTimeOf(HOST, other), createdAt: 0
      }))
      const report = yield* asProcess(world, runLayout({ lockAttempts: 3, lockRetryDelay: "1 millis" }))
      assert.deepStrictEqual(report.moved, [])
      assert.strictEqual(report.errors.length, 1)
      assert.match(report.errors[0]!.message, /another migration is running/)
      assert.strictEqual(report.errors[0]!._tag, "MigrationBusy")
      assert.isDefined(world.readFixture(`${AGENT}/trust.json`))
      // Once that process is dead, its marker is reclaimed.
      world.kill(HOST, other)
      const after = yield* asProcess(world, runLayout({ lockAttempts: 1 }))
      assert.deepStrictEqual(after.moved, ["trust.json"])
      assert.deepStrictEqual(Object.keys(files(world)), ["state/trust.json"])
    }))

  it.live("two processes starting together: one migrates, nothing is lost or duplicated", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      for (let i = 0; i < 4; i++) yield* seedFile(world, `tmp/f${i}`, `v${i}`)
      yield* seedFile(world, "state/legacy-layout/tmp/pre", "pre")
      yield* seedFile(world, "trust.json", `{"a":1}`)
      const a = spawn(world)
      const b = spawn(world)
      const options = { lockAttempts: 1000, lockRetryDelay: "1 millis" as const }
      const [ra, rb] = yield* Effect.all([
        Effect.provide(runLayout(options), a.layer),
        Effect.provide(runLayout(options), b.layer)
      ], { concurrency: 2 })
      assert.deepStrictEqual([...ra.errors, ...rb.errors], [])
      assert.deepStrictEqual(files(world), {
        "state/legacy-layout/tmp/pre": "pre",
        "state/legacy-layout/tmp/f0": "v0",
        "state/legacy-layout/tmp/f1": "v1",
        "state/legacy-layout/tmp/f2": "v2",
        "state/legacy-layout/tmp/f3": "v3",
        "state/trust.json": `{"a":1}`
      })
    }))

  it.effect("the Migration service has R = never methods over the layer's ports", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "tmp/x", "x")
      const migration = yield* Migration.pipe(Effect.provide(migrationAt(AGENT)), Effect.provide(spawn(world).layer))
      const report = yield* migration.run()
      assert.deepStrictEqual(report.moved, ["tmp"])
    }))
})

describe("Migration.runPlan (MG2) on the Memory layer", () => {
  const key = (row: unknown) => String((row as { id: string }).id)

  it.effect("merges split ledgers by key, durably, then retires the source; journals each outcome", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "state/old/usage.jsonl", `{"id":"a","n":1}\n{"id":"b","n":1}\n`)
      yield* seedFile(world, "state/new/usage.jsonl", `{"id":"b","n":1}\n{"id":"c","n":2}\n`)
      yield* seedFile(world, "state/old/notes/n1.md", "note")
      yield* world.mkdirFixture(`${AGENT}/state/new/notes`)
      const plan = {
        id: "usage-v2",
        entries: [
          { id: "ledger", kind: "merge-ledger" as const, from: "state/old/usage.jsonl", to: "state/new/usage.jsonl", format: "jsonl" as const, key, winner: "to" as const },
          { id: "notes", kind: "move" as const, from: "state/old/notes", to: "state/new/notes" }
        ]
      }
      const report = yield* asProcess(world, runToolkit(plan))
      assert.isFalse(report.failed)
      assert.deepStrictEqual(report.entries.map((e) => [e.id, e.outcome, e.rows, e.mergedRows]), [
        ["ledger", "merged", 3, 1],
        ["notes", "moved", undefined, undefined]
      ])
      assert.deepStrictEqual(files(world, `${AGENT}/state`), {
        "new/usage.jsonl": `{"id":"b","n":1}\n{"id":"c","n":2}\n{"id":"a","n":1}\n`,
        "new/notes/n1.md": "note",
        "migrations/usage-v2.jsonl": files(world, `${AGENT}/state`)["migrations/usage-v2.jsonl"]!
      })
      const journal = world.readFixtureText(`${AGENT}/state/migrations/usage-v2.jsonl`)!.trim().split("\n").map((l) => JSON.parse(l))
      assert.deepStrictEqual(journal.map((r) => [r.entryId, r.outcome, r.rows ?? null]), [["ledger", "merged", 3], ["notes", "moved", null]])
      // Rerun: the files say it is done; nothing is written.
      const before = world.mutationCount
      const again = yield* asProcess(world, runToolkit(plan))
      assert.deepStrictEqual(again.entries.map((e) => e.outcome), ["already-done", "already-done"])
      assert.match(again.entries[0]!.reason!, /journal: merged/)
      assert.strictEqual(world.mutationCount, before)
    }))

  it.effect("a same-key row that lost to the declared winner keeps its file under migration-conflicts", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "a.json", `[{"id":"x","v":"old"},{"id":"y","v":"only-old"}]`)
      yield* seedFile(world, "b.json", `[{"id":"x","v":"new"}]`)
      const report = yield* asProcess(world, runToolkit({
        id: "p",
        entries: [{ id: "rows", kind: "merge-ledger", from: "a.json", to: "b.json", format: "json-array", key, winner: "to" }]
      }))
      assert.deepStrictEqual(report.entries[0]!.outcome, "conflict-preserved")
      assert.deepStrictEqual(JSON.parse(world.readFixtureText(`${AGENT}/b.json`)!), [{ id: "x", v: "new" }, { id: "y", v: "only-old" }])
      assert.strictEqual(world.readFixtureText(`${AGENT}/state/migration-conflicts/p/rows`), `[{"id":"x","v":"old"},{"id":"y","v":"only-old"}]`)
      assert.isUndefined(world.readFixture(`${AGENT}/a.json`))
    }))

  it.effect("failures are visible: an unparsable ledger fails its entry, touches nothing, and is journaled", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "a.jsonl", `{"id":"x"}\n{"id":`)
      yield* seedFile(world, "b.jsonl", `{"id":"y"}\n`)
      const report = yield* asProcess(world, runToolkit({
        id: "p",
        entries: [{ id: "rows", kind: "merge-ledger", from: "a.jsonl", to: "b.jsonl", format: "jsonl", key, winner: "from" }]
      }))
      assert.isTrue(report.failed)
      assert.strictEqual(report.entries[0]!.outcome, "failed")
      assert.match(report.entries[0]!.reason!, /line 2/)
      assert.strictEqual(world.readFixtureText(`${AGENT}/a.jsonl`), `{"id":"x"}\n{"id":`)
      assert.strictEqual(world.readFixtureText(`${AGENT}/b.jsonl`), `{"id":"y"}\n`)
      assert.match(world.readFixtureText(`${AGENT}/state/migrations/p.jsonl`)!, /"outcome":"failed"/)
    }))

  it.effect("an invalid plan is a typed error naming the entry and field, before anything moves", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const bad = yield* asProcess(world, runToolkit({ id: "Bad Id", entries: [] })).pipe(Effect.flip)
      assert.strictEqual(bad._tag, "InvalidMigrationPlan")
      assert.strictEqual(bad.at, "id")
      const dup = yield* asProcess(world, runToolkit({
        id: "p",
        entries: [{ id: "a", kind: "move", from: "x", to: "y" }, { id: "a", kind: "move", from: "x", to: "z" }]
      })).pipe(Effect.flip)
      assert.match(dup.message, /entries\[1\] \("a"\)\.id: duplicate/)
    }))

  it.effect("an API plan's paths are untrusted too: absolute, `..` and nested paths are refused and nothing moves", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* seedFile(world, "state/x/a", "A")
      yield* world.writeFixture("/home/user/outside", "keep")
      const before = snapshot(world, "/home/user")
      for (const [from, to, field, why] of [
        ["state/x/a", "/home/user/stolen", "to", /absolute/],
        ["../outside", "state/x/b", "from", /"\.\." segment/],
        ["state/x", "state/x/a/b", "to", /inside the other/],
        ["state/./x/a", "state/y", "from", /"\." segment/]
      ] as const) {
        const error = yield* asProcess(world, runToolkit({ id: "p", entries: [{ id: "e", kind: "move", from, to }] })).pipe(Effect.flip)
        assert.strictEqual(error._tag, "InvalidMigrationPlan")
        assert.strictEqual(error.at, `entries[0] ("e").${field}`)
        assert.match(error.detail, why)
      }
      assert.deepStrictEqual(snapshot(world, "/home/user"), before)
    }))
})
