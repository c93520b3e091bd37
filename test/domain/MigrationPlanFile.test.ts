/**
 * The migration plan file (docs/migrations.md "Migrations"): strict YAML 1.2 (JSON reads the same), one Schema, and every
 * refusal naming where (`steps[1] ("usage").from`), before anything is read or moved.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { decodeMigrationPlanFile, PLAN_FILE_MAX_BYTES } from "../../src/domain/MigrationPlanFile.js"
import { README_PLAN, readmePlanText } from "../support/readmePlan.js"

const decode = (text: string) => decodeMigrationPlanFile(new TextEncoder().encode(text), "plan.yaml")

const refusal = (text: string) => {
  const r = decode(text)
  if (Either.isRight(r)) throw new Error(`accepted: ${text}`)
  assert.strictEqual(r.left._tag, "InvalidMigrationPlan")
  return r.left
}

const plan = (steps: string, head = "version: 1\nid: p\nroot: { web: ext }\n") => `${head}steps:\n${steps}`

describe("decodeMigrationPlanFile", () => {
  it("the documented plan decodes: two entries under the web extension's root, the ledger keyed by id, defaults filled in", () => {
    const r = decode(readmePlanText())
    assert.isTrue(Either.isRight(r), Either.isLeft(r) ? r.left.message : "")
    if (Either.isLeft(r)) return
    assert.strictEqual(r.right.id, README_PLAN.id)
    const [ledger, move] = r.right.entries
    assert.deepStrictEqual([ledger!.kind, ledger!.root, ledger!.from, ledger!.to], ["merge-ledger", { web: README_PLAN.extId }, "config/state/usage.jsonl", "state/usage.jsonl"])
    assert.deepStrictEqual([move!.kind, move!.from, move!.to], ["move", "config/state", "state"])
    if (ledger!.kind !== "merge-ledger") return
    assert.deepStrictEqual([ledger!.format, ledger!.winner], ["jsonl", "to"])
    assert.strictEqual(ledger!.key({ id: "r1", tokens: 1 }), ledger!.key({ id: "r1", tokens: 2 }))
    assert.isUndefined(ledger!.key({ tokens: 2 }))
  })

  it("JSON is a plan too, and each root form decodes (a step's own root wins over the plan's)", () => {
    const r = decode(JSON.stringify({
      version: 1,
      id: "p",
      root: "agent",
      steps: [
        { id: "a", kind: "move", from: "x", to: "y" },
        { id: "b", kind: "move", from: "x", to: "y", root: { "agent-extension": "todo" } },
        { id: "c", kind: "merge-ledger", from: "x", to: "y", key: ["day", "model"], format: "json-array", winner: "from", root: { web: "ext" } }
      ]
    }))
    assert.isTrue(Either.isRight(r))
    if (Either.isLeft(r)) return
    assert.deepStrictEqual(r.right.entries.map((e) => e.root), ["agent", { agentExtension: "todo" }, { web: "ext" }])
  })

  it("names the step (index and id) and the field of each problem", () => {
    const cases: ReadonlyArray<readonly [string, string, RegExp]> = [
      [plan("  - { id: a, kind: move, from: x, to: y }\n  - { id: b, kind: move, from: ../x, to: y }\n"), `steps[1] ("b").from`, /"\.\." segment/],
      [plan("  - { id: a, kind: move, from: /etc, to: y }\n"), `steps[0] ("a").from`, /absolute/],
      [plan("  - { id: a, kind: move, from: config/state, to: config/state/old }\n"), `steps[0] ("a").to`, /inside the other/],
      [plan("  - { id: a, kind: merge-ledger, from: x, to: y }\n"), `steps[0] ("a").key`, /missing/],
      [plan("  - { id: a, kind: merge-ledger, from: x, to: y, key: [] }\n"), `steps[0] ("a").key`, /field name/],
      [plan("  - { id: a, kind: merge-ledger, from: x, to: y, key: id, winner: newest }\n"), `steps[0] ("a").winner`, /must be "from" or "to"/],
      [plan("  - { id: a, kind: merge-ledger, from: x, to: y, key: id, format: csv }\n"), `steps[0] ("a").format`, /must be "jsonl" or "json-array"/],
      [plan("  - { id: a, kind: move, from: x, to: y, kye: id }\n"), `steps[0] ("a").kye`, /unexpected/],
      [plan("  - { id: a, kind: copy, from: x, to: y }\n"), `steps[0] ("a").kind`, /"move" \| "merge-ledger"/],
      [plan("  - { id: A, kind: move, from: x, to: y }\n"), `steps[0] ("A").id`, /lowercase/],
      [plan("  - { id: a, kind: move, from: x, to: y }\n  - { id: a, kind: move, from: z, to: w }\n"), `steps[1] ("a").id`, /duplicate/],
      [plan("  - { id: a, kind: move, from: x, to: y, root: { web: ../x } }\n"), `steps[0] ("a").root`, /extension id/],
      [plan("  - { id: a, kind: move, from: x, to: y }\n", "version: 1\nid: p\n"), `steps[0] ("a").root`, /missing, and the plan names no root/],
      [plan("  - { id: a, kind: move, from: x, to: y }\n", "version: 2\nid: p\nroot: agent\n"), "version", /Expected 1/],
      [plan("", "version: 1\nid: p\nroot: { webb: ext }\n") + "  []\n", "root", /must be agent/]
    ]
    for (const [text, at, detail] of cases) {
      const e = refusal(text)
      assert.strictEqual(e.at, at, text)
      assert.match(e.detail, detail, text)
      assert.match(e.message, /^invalid migration plan plan\.yaml: .*; nothing was moved$/)
    }
  })

  it("the YAML is strict: one document, unique keys, no anchors, aliases or tags, YAML 1.2 scalars, a size cap", () => {
    const ok = plan("  - { id: a, kind: move, from: x, to: y }\n")
    assert.match(refusal(`${ok}---\n${ok}`).detail, /more than one YAML document/)
    assert.match(refusal(`version: 1\nid: p\nid: q\nroot: agent\nsteps: []\n`).detail, /unique/)
    assert.match(refusal(plan("  - &s { id: a, kind: move, from: x, to: y }\n  - *s\n")).detail, /anchor/)
    assert.match(refusal(plan("  - { id: a, kind: move, from: !!binary eA==, to: y }\n")).detail, /tag/)
    assert.match(refusal(plan("  - { id: a, kind: move, from: x, to: y\n")).detail, /not valid YAML/)
    assert.match(decodeMigrationPlanFile(new Uint8Array([0xff, 0xfe]), "p").pipe(Either.flip, Either.getOrThrow).detail, /UTF-8/)
    assert.match(decodeMigrationPlanFile(new Uint8Array(PLAN_FILE_MAX_BYTES + 1).fill(0x20), "p").pipe(Either.flip, Either.getOrThrow).detail, /over the/)
    // YAML 1.2 core: `no` is a string, so a step id `no` is an id, not `false`.
    assert.isTrue(Either.isRight(decode(plan("  - { id: no, kind: move, from: on, to: yes }\n"))))
  })
})
