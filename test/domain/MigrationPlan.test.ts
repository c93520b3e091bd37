import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { CANONICAL_ROOT_ENTRIES, LEGACY_ROOT_ENTRIES } from "../../src/domain/AgentPaths.js"
import {
  conflictCandidate,
  conflictOwner,
  copiesRecorded,
  jsonEqual,
  keyOfFields,
  keylessRow,
  layoutUnit,
  layoutUnits,
  ledgerParse,
  ledgerSerialize,
  mergeJsonObjects,
  mergeLedgerRows,
  MIGRATION_MARKER,
  type MigrationPlan,
  parseJournal,
  planProblem,
  encodeJournalLine
} from "../../src/domain/MigrationPlan.js"

const bytes = (s: string) => new TextEncoder().encode(s)

describe("layout units (MG1)", () => {
  it("maps every legacy root entry to its table destination, with a conflict base named after it", () => {
    const expected: Record<string, string> = {
      "trust.json": "state/trust.json",
      backups: "state/backups/config",
      "resource-profiles": "profiles/directories",
      "auto-learn": "state/legacy-layout/auto-learn",
      tmp: "state/legacy-layout/tmp"
    }
    for (const legacy of LEGACY_ROOT_ENTRIES) {
      const unit = layoutUnit(legacy.name)!
      assert.strictEqual(unit.destination.join("/"), expected[legacy.name])
      assert.strictEqual(unit.conflictBase.join("/"), `state/migration-conflicts/${legacy.name}`)
    }
    assert.isTrue(layoutUnit("trust.json")!.mergeJson)
    assert.isFalse(layoutUnit("backups")!.mergeJson)
  })

  it("maps literal Zone.Identifier sidecars and leaves canonical entries alone", () => {
    const unit = layoutUnit("auth.json:Zone.Identifier")!
    assert.strictEqual(unit.kind, "sidecar")
    assert.strictEqual(unit.destination.join("/"), "state/legacy-layout/sidecars/auth.json.Zone.Identifier")
    assert.strictEqual(unit.conflictBase.join("/"), "state/migration-conflicts/sidecars/auth.json.Zone.Identifier")
    assert.isUndefined(layoutUnit(":Zone.Identifier"))
    for (const entry of CANONICAL_ROOT_ENTRIES) assert.isUndefined(layoutUnit(entry.name))
    assert.isUndefined(layoutUnit(MIGRATION_MARKER))
  })

  it.prop("layoutUnits is sorted, complete and order-independent", [fc.array(fc.constantFrom(
    "trust.json", "backups", "tmp", "a:Zone.Identifier", "settings.json", "state", "x.log", "auto-learn"
  ))], ([names]) => {
    const units = layoutUnits(names).map((u) => u.name)
    assert.deepStrictEqual(units, [...units].sort())
    assert.deepStrictEqual(units, layoutUnits([...names].reverse()).map((u) => u.name))
    for (const n of names) assert.strictEqual(units.includes(n), layoutUnit(n) !== undefined)
  })

  it("conflict candidates are deterministic suffixes", () => {
    assert.deepStrictEqual([0, 1, 2].map((k) => conflictCandidate("/a/b.json", k)), ["/a/b.json", "/a/b.json.1", "/a/b.json.2"])
  })
})

describe("JSON object merge (trust.json)", () => {
  it("canonical values win; overridden legacy keys are named; unparsable sides are refused", () => {
    const m = mergeJsonObjects(bytes(`{"a":1,"b":2}`), bytes(`{"b":3,"c":4}`))
    assert.strictEqual(m._tag, "Merged")
    if (m._tag !== "Merged") return
    assert.deepStrictEqual(m.merged, { a: 1, b: 3, c: 4 })
    assert.deepStrictEqual(m.overridden, ["b"])
    assert.isFalse(m.canonicalUnchanged)
    assert.deepStrictEqual(mergeJsonObjects(bytes("{oops"), bytes("{}")), { _tag: "Unparsable", which: "legacy" })
    assert.deepStrictEqual(mergeJsonObjects(bytes("{}"), bytes("[1]")), { _tag: "Unparsable", which: "canonical" })
  })

  const obj = fc.dictionary(fc.constantFrom("a", "b", "c", "d"), fc.oneof(fc.integer({ min: 0, max: 3 }), fc.boolean()))
  it.prop("merging again is a no-op and no legacy key is dropped", [obj, obj], ([legacy, canonical]) => {
    const first = mergeJsonObjects(bytes(JSON.stringify(legacy)), bytes(JSON.stringify(canonical)))
    assert.strictEqual(first._tag, "Merged")
    if (first._tag !== "Merged") return
    for (const k of Object.keys(legacy)) assert.isTrue(Object.hasOwn(first.merged, k))
    for (const [k, v] of Object.entries(canonical)) assert.deepStrictEqual(first.merged[k], v)
    const again = mergeJsonObjects(bytes(JSON.stringify(legacy)), bytes(JSON.stringify(first.merged)))
    assert.isTrue(again._tag === "Merged" && again.canonicalUnchanged)
    assert.deepStrictEqual(again._tag === "Merged" && again.overridden, first.overridden)
  })
})

describe("ledger merge (MG2)", () => {
  const row = fc.record({ id: fc.integer({ min: 0, max: 6 }), v: fc.integer({ min: 0, max: 2 }) })
  const key = (r: unknown) => String((r as { id: number }).id)
  const rows = fc.array(row, { maxLength: 10 })

  it.prop("deduplicates by key, keeps every key, the declared winner wins, and re-merging changes nothing",
    [rows, rows, fc.constantFrom("from" as const, "to" as const)], ([to, from, winner]) => {
      const m = mergeLedgerRows({ to, from, key, winner })
      const keys = m.rows.map(key)
      assert.strictEqual(new Set(keys).size, keys.length)
      assert.deepStrictEqual(new Set(keys), new Set([...to, ...from].map(key)))
      const lastOf = (rs: ReadonlyArray<{ id: number; v: number }>, k: string) => rs.filter((r) => key(r) === k).at(-1)
      for (const r of m.rows) {
        const k = key(r)
        const fromRow = lastOf(from, k)
        const toRow = lastOf(to, k)
        const expected = winner === "from" ? (fromRow ?? toRow) : (toRow ?? fromRow)
        assert.deepStrictEqual(r, expected)
      }
      const again = mergeLedgerRows({ to: m.rows, from, key, winner })
      assert.deepStrictEqual(again.rows, m.rows)
      assert.strictEqual(again.added + again.replaced, 0)
      assert.strictEqual(m.fromFullyKept, from.every((r) => m.rows.some((x) => jsonEqual(x, r))))
      assert.strictEqual(m.toFullyKept, to.every((r) => m.rows.some((x) => jsonEqual(x, r))))
    })

  it.prop("nothing is lost: a row missing from the result is in a side that is not fully kept (so that side is kept whole)",
    [rows, rows, fc.constantFrom("from" as const, "to" as const)], ([to, from, winner]) => {
      const m = mergeLedgerRows({ to, from, key, winner })
      const inResult = (r: unknown) => m.rows.some((x) => jsonEqual(x, r))
      for (const r of to) if (!inResult(r)) assert.isFalse(m.toFullyKept, JSON.stringify(r))
      for (const r of from) if (!inResult(r)) assert.isFalse(m.fromFullyKept, JSON.stringify(r))
    })

  it("never lets the newer file replace the other: rows only the old side has survive", () => {
    const m = mergeLedgerRows({ to: [{ id: 1, v: "new" }], from: [{ id: 0, v: "old" }, { id: 1, v: "old" }], key, winner: "to" })
    assert.deepStrictEqual(m.rows, [{ id: 1, v: "new" }, { id: 0, v: "old" }])
    assert.isFalse(m.fromFullyKept)
    assert.strictEqual(m.added, 1)
  })

  it.prop("jsonl and json-array serialisations parse back", [rows, fc.constantFrom("jsonl" as const, "json-array" as const)],
    ([rs, format]) => {
      const parsed = ledgerParse(format, ledgerSerialize(format, rs))
      assert.isTrue(parsed.ok)
      assert.deepStrictEqual(parsed.ok && parsed.rows, rs)
    })

  it("refuses a torn line instead of dropping it", () => {
    const parsed = ledgerParse("jsonl", bytes(`{"id":1}\n{"id":2`))
    assert.isFalse(parsed.ok)
    assert.isFalse(ledgerParse("json-array", bytes(`{"id":1}`)).ok)
    assert.deepStrictEqual(ledgerParse("json-array", bytes("")), { ok: true, rows: [] })
  })
})

describe("plan file keys and the plan check (MG2)", () => {
  it("a key is the named scalar fields of a JSON object; anything else has no key", () => {
    const one = keyOfFields(["id"])
    assert.strictEqual(one({ id: "a", v: 1 }), one({ id: "a", v: 2 }))
    assert.notStrictEqual(one({ id: 1 }), one({ id: "1" }))
    for (const row of [null, [], "a", 3, {}, { id: null }, { id: { x: 1 } }, { id: Number.NaN }, { id: [1] }]) {
      assert.isUndefined(one(row), JSON.stringify(row))
    }
    const two = keyOfFields(["day", "model"])
    assert.strictEqual(two({ day: "d1", model: "m", n: 1 }), two({ model: "m", day: "d1", n: 5 }))
    assert.notStrictEqual(two({ day: "d1", model: "m" }), two({ day: "d1", model: "n" }))
    assert.isUndefined(two({ day: "d1" }))
    assert.strictEqual(keylessRow([{ id: 1 }, { id: 2 }, { v: 3 }], one), 3)
    assert.isUndefined(keylessRow([{ id: 1 }], one))
  })

  it("planProblem names the first entry and field that is wrong, and passes a good plan", () => {
    const key = keyOfFields(["id"])
    const ok: MigrationPlan = {
      id: "p",
      root: { web: "ext" },
      entries: [
        { id: "a", kind: "move", from: "config/state", to: "state" },
        { id: "b", kind: "merge-ledger", from: "x.jsonl", to: "y.jsonl", format: "jsonl", key, winner: "to", root: { agentExtension: "todo" } }
      ]
    }
    assert.isUndefined(planProblem(ok))
    assert.deepStrictEqual(planProblem({ ...ok, root: { web: "Ext" } }), { field: "root", detail: "the extension id must be lowercase (found \"E\"; uppercase is refused, never lowercased)" })
    const entry = (patch: object) => planProblem({ ...ok, entries: [ok.entries[0]!, { ...ok.entries[1]!, ...patch } as never] })
    assert.include(entry({ to: "/abs" }), { index: 1, id: "b", field: "to" })
    assert.include(entry({ from: "../x" }), { index: 1, field: "from" })
    assert.include(entry({ to: "x.jsonl/y" }), { index: 1, field: "to" })
    assert.include(entry({ winner: "newest" }), { index: 1, field: "winner" })
    assert.include(entry({ format: "csv" }), { index: 1, field: "format" })
    assert.include(entry({ root: "web" }), { index: 1, field: "root" })
    assert.include(entry({ id: "a" }), { index: 1, field: "id" })
  })

  it("an entry may not move away the directories the migration keeps its own in: the root's conflicts directory, the agent dir's journal", () => {
    const move = (from: string, root?: MigrationPlan["root"]) => ({ id: "m", kind: "move" as const, from, to: "elsewhere", ...(root === undefined ? {} : { root }) })
    for (const [from, root, holds] of [
      ["state", { web: "u" }, "state/migration-conflicts/"],
      ["state/migration-conflicts", { web: "u" }, "state/migration-conflicts/"],
      ["state", undefined, "state/migration-conflicts/"],
      ["state/migrations", undefined, "state/migrations/"],
      ["migration-conflicts", { agentExtension: "todo" }, "migration-conflicts/"]
    ] as const) {
      const problem = planProblem({ id: "p", entries: [move(from, root)] })
      assert.include(problem, { index: 0, field: "from" }, `${from} ${JSON.stringify(root)}`)
      assert.include(problem?.detail, `holds ${holds}`)
    }
    // What lies beside them, or inside them, moves as any entry does; a web root keeps no journal.
    for (const [from, root] of [["state/trust.json", undefined], ["state/extensions/x", undefined], ["state/migrations", { web: "u" }], ["state", { agentExtension: "todo" }]] as const) {
      assert.isUndefined(planProblem({ id: "p", entries: [move(from, root)] }), `${from} ${JSON.stringify(root)}`)
    }
  })

  it("a plan moves data forward only: an entry may not fill an earlier entry's source (a rerun would move it again)", () => {
    const move = (id: string, from: string, to: string, root?: MigrationPlan["root"]) => ({ id, kind: "move" as const, from, to, ...(root === undefined ? {} : { root }) })
    // A chain forward is fine: x → y, then y → z.
    assert.isUndefined(planProblem({ id: "p", entries: [move("a", "x", "y"), move("b", "y", "z")] }))
    assert.include(planProblem({ id: "p", entries: [move("a", "x", "y"), move("b", "z", "x")] }), { index: 1, field: "to" })
    assert.include(planProblem({ id: "p", entries: [move("a", "x/old", "y"), move("b", "z", "x")] }), { index: 1, field: "to" })
    assert.include(planProblem({ id: "p", entries: [move("a", "x", "y"), move("b", "z", "x/new")] }), { index: 1, field: "to" })
    // The same place through two roots: an agent-side extension's root is inside the agent dir.
    assert.include(
      planProblem({ id: "p", entries: [move("a", "state/extensions/todo/old", "y"), move("b", "z", "old", { agentExtension: "todo" })] }),
      { index: 1, field: "to" }
    )
    // Different web extensions never meet.
    assert.isUndefined(planProblem({ id: "p", entries: [move("a", "x", "y", { web: "one" }), move("b", "z", "x", { web: "two" })] }))
  })
})

describe("journal records", () => {
  it("round-trips and skips damaged lines", () => {
    const record = {
      version: 1 as const,
      planId: "p",
      entryId: "e",
      kind: "merge-ledger" as const,
      outcome: "merged" as const,
      from: "a",
      to: "b",
      rows: 3,
      mergedRows: 1,
      at: 5
    }
    const text = encodeJournalLine(record) + "garbage\n" + `{"version":1}\n` + encodeJournalLine({ ...record, outcome: "failed", reason: "x" })
    const parsed = parseJournal(bytes(text))
    assert.strictEqual(parsed.bad, 2)
    assert.deepStrictEqual(parsed.records.map((r) => r.outcome), ["merged", "failed"])
    assert.deepStrictEqual(parsed.records[0], record)
  })
})

describe("an entry's conflict copies", () => {
  it.prop("every candidate of an entry's base and of its replaced copy is that entry's, never a shorter id's", [
    fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9.]{0,5}$/), { minLength: 1, maxLength: 4 }),
    fc.nat({ max: 12 }),
    fc.boolean()
  ], ([ids, k, replaced]) => {
    for (const id of ids) {
      const name = conflictCandidate(replaced ? `${id}.replaced` : id, k)
      const owner = conflictOwner(name, ids)
      // The owner made this name too, and no longer id among those that could have did.
      assert.isDefined(owner)
      assert.isAtLeast(owner!.length, id.length)
    }
  })

  it("examples: ids that extend one another, names of no entry", () => {
    const ids = ["d", "d.1", "ledger"]
    assert.strictEqual(conflictOwner("d", ids), "d")
    assert.strictEqual(conflictOwner("d.2", ids), "d")
    assert.strictEqual(conflictOwner("d.1", ids), "d.1")
    assert.strictEqual(conflictOwner("d.1.1", ids), "d.1")
    assert.strictEqual(conflictOwner("ledger.replaced", ids), "ledger")
    assert.strictEqual(conflictOwner("ledger.replaced.3", ids), "ledger")
    for (const stray of ["dd", "d.0", "d.01", "d.x", "ledger.replaced.0", "other", "d.replaced.x"]) assert.isUndefined(conflictOwner(stray, ids), stray)
  })

  it("a plan whose entry ids extend one another as conflict copies are named (d, d.1, d.replaced) is refused", () => {
    const move = (id: string, from: string) => ({ id, kind: "move" as const, from, to: `new/${from}` })
    for (const [a, b] of [["d", "d.1"], ["d", "d.replaced"], ["d.replaced.2", "d"], ["x.y", "x.y.3"]] as const) {
      const problem = planProblem({ id: "p", entries: [move(a, "a"), move(b, "b")] })
      assert.strictEqual(problem?.field, "id", `${a} ${b}`)
      assert.include(problem?.detail, "conflict copies", `${a} ${b}`)
    }
    for (const [a, b] of [["d", "dd"], ["d", "d.x"], ["d.1x", "d"], ["ledger", "ledger-replaced"]] as const) {
      assert.isUndefined(planProblem({ id: "p", entries: [move(a, "a"), move(b, "b")] }), `${a} ${b}`)
    }
  })

  it("the journal names every copy when its last record that did not fail names each (or a path inside it)", () => {
    const record = (outcome: "moved" | "conflict-preserved" | "failed", conflicts?: Array<string>) =>
      ({ version: 1 as const, planId: "p", entryId: "d", kind: "move" as const, outcome, from: "a", to: "b", at: 0, ...(conflicts === undefined ? {} : { conflicts }) })
    const copy = "state/migration-conflicts/p/d"
    assert.isTrue(copiesRecorded([], "d", []))
    assert.isFalse(copiesRecorded([], "d", [copy]))
    assert.isTrue(copiesRecorded([record("conflict-preserved", [`${copy}/a`])], "d", [copy]))
    assert.isFalse(copiesRecorded([record("conflict-preserved", [`${copy}/a`]), record("moved")], "d", [copy]))
    assert.isTrue(copiesRecorded([record("conflict-preserved", [copy]), record("failed")], "d", [copy]))
    assert.isFalse(copiesRecorded([record("conflict-preserved", [`${copy}.1`])], "d", [copy]))
  })
})
