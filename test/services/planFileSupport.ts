/**
 * The documented migration plan (docs/migrations.md "Migrations") and the tree it is written for: a web extension whose
 * legacy `config/state/` sits beside `state/`, with a usage ledger written at both places.
 */
import { assert } from "@effect/vitest"
import { Effect, Either } from "effect"
import { decodeMigrationPlanFile } from "../../src/domain/MigrationPlanFile.js"
import type { MigrationPlan } from "../../src/domain/MigrationPlan.js"
import type { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { README_PLAN, readmePlanText } from "../support/readmePlan.js"
import { files } from "./migrationSupport.js"

export const WEB = "/home/user/.pi/web/data"
export const EXT = `${WEB}/${README_PLAN.extId}`

export const readmePlan = (): MigrationPlan => {
  const decoded = decodeMigrationPlanFile(new TextEncoder().encode(readmePlanText()), "docs/migrations.md")
  if (Either.isLeft(decoded)) throw new Error(decoded.left.message)
  return decoded.right
}

export const rows = (text: string | undefined) => (text ?? "").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>)

/** Legacy `config/state/` beside `state/`: a ledger written at both places (r2 in both, r3 changed in the newer one). */
export const LEGACY_USAGE = `{"id":"r1","tokens":10}\n{"id":"r2","tokens":20}\n{"id":"r3","tokens":30}\n`
export const NEWER_USAGE = `{"id":"r2","tokens":20}\n{"id":"r3","tokens":31}\n{"id":"r4","tokens":40}\n`
export const seedSplitExtension = (world: MemoryWorld, ext = EXT) =>
  Effect.gen(function*() {
    yield* world.writeFixture(`${ext}/config/settings.json`, `{"theme":"dark"}`)
    yield* world.writeFixture(`${ext}/config/state/usage.jsonl`, LEGACY_USAGE)
    yield* world.writeFixture(`${ext}/config/state/archive/2026-10.pwarc`, "october")
    yield* world.writeFixture(`${ext}/config/state/notes.md`, "legacy notes")
    yield* world.writeFixture(`${ext}/state/usage.jsonl`, NEWER_USAGE)
    yield* world.writeFixture(`${ext}/state/notes.md`, "new notes")
    // The upgraded extension made its (empty) archive directory: it must not freeze the migration.
    yield* world.mkdirFixture(`${ext}/state/archive`)
  })

/** Where every byte lands (MG3): each row once in state/usage.jsonl, the losing legacy file kept whole. */
export const assertMigrated = (world: MemoryWorld, ext = EXT) => {
  const f = files(world, ext)
  assert.deepStrictEqual(rows(f["state/usage.jsonl"]), [
    { id: "r2", tokens: 20 },
    { id: "r3", tokens: 31 },
    { id: "r4", tokens: 40 },
    { id: "r1", tokens: 10 }
  ])
  const conflicts = `state/migration-conflicts/${README_PLAN.id}`
  assert.deepStrictEqual(f, {
    "config/settings.json": `{"theme":"dark"}`,
    "state/usage.jsonl": f["state/usage.jsonl"]!,
    "state/archive/2026-10.pwarc": "october",
    "state/notes.md": "new notes",
    // r3's legacy value lost to the winner (state/): the legacy ledger is kept whole.
    [`${conflicts}/usage-ledger`]: LEGACY_USAGE,
    [`${conflicts}/legacy-state/notes.md`]: "legacy notes"
  })
}

