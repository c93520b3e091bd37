import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "effect/FastCheck"
import * as NodePath from "node:path"
import { DataDirRemoved, InvalidSegment } from "../../src/domain/Errors.js"
import {
  chooseTier,
  FILE_NAME_MAX_BYTES,
  fileNameViolation,
  isInside,
  jsonValueViolation,
  makeExtensionContext,
  resolveStateDir,
  resolveTierDirs,
  type TierDirs,
  type TierFacts,
  type TierName,
  type TierPurpose
} from "../../src/domain/Tiers.js"
import { configBudgetViolation, configFileNameViolation } from "../../src/domain/ConfigRedLines.js"

const noEnv = (_: string): string | undefined => undefined
const build = (extId: string, extra: Partial<Parameters<typeof makeExtensionContext>[0]> = {}) =>
  makeExtensionContext({ extId, env: noEnv, home: "/home/u", cwd: "/work", ...extra })

describe("makeExtensionContext (TD1, TD2)", () => {
  it("puts the three tiers under ~/.pi/web/data/<extId>/ by default", () => {
    const ctx = Either.getOrThrow(build("notes"))
    assert.deepStrictEqual({ ...ctx }, {
      extId: "notes",
      configDir: "/home/u/.pi/web/data/notes/config",
      stateDir: "/home/u/.pi/web/data/notes/state",
      cacheDir: "/home/u/.pi/web/data/notes/cache"
    })
  })

  it("honours PI_WEB_DATA_DIR, the dev instance and an explicit dataRoot", () => {
    const env = (n: string) => (n === "PI_WEB_DATA_DIR" ? "rel/data" : undefined)
    assert.strictEqual(Either.getOrThrow(build("x", { env })).stateDir, "/work/rel/data/x/state")
    assert.strictEqual(
      Either.getOrThrow(build("x", { options: { instance: "dev" } })).cacheDir,
      "/home/u/.pi/web-dev/data/x/cache"
    )
    assert.strictEqual(
      Either.getOrThrow(build("x", { env, options: { dataRoot: "/srv/d" } })).configDir,
      "/srv/d/x/config"
    )
  })

  it("throws DataDirRemoved naming the three tiers on ctx.dataDir, but serialises and spreads cleanly", () => {
    const ctx = Either.getOrThrow(build("notes"))
    let caught: unknown
    try {
      void (ctx as unknown as { dataDir: string }).dataDir
    } catch (e) {
      caught = e
    }
    assert.instanceOf(caught, DataDirRemoved)
    const err = caught as DataDirRemoved
    assert.strictEqual(err._tag, "DataDirRemoved")
    assert.strictEqual(err.extId, "notes")
    for (const word of ["configDir", "stateDir", "cacheDir", "chooseTier"]) assert.include(err.message, word)
    assert.deepStrictEqual(Object.keys(JSON.parse(JSON.stringify(ctx))), ["extId", "configDir", "stateDir", "cacheDir"])
    assert.notProperty({ ...ctx }, "dataDir")
    assert.isTrue(Object.isFrozen(ctx))
  })

  it("refuses an extId that is not a portable segment with InvalidSegment(field extId)", () => {
    for (const bad of ["", "..", "a/b", "Notes", "../etc", "con"]) {
      const r = build(bad)
      assert.isTrue(Either.isLeft(r), bad)
      const e = (r as Either.Left<InvalidSegment, unknown>).left
      assert.instanceOf(e, InvalidSegment)
      assert.strictEqual(e.field, "extId")
      assert.strictEqual(e.value, bad)
    }
  })

  it.prop("every tier is a direct child of <root>/<extId> for any valid extId", [
    fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}[a-z0-9_-]$/)
  ], ([extId]) => {
    const r = build(extId, { options: { dataRoot: "/d" } })
    if (Either.isLeft(r)) return r.left.rule === "device-name"
    const ctx = r.right
    return [ctx.configDir, ctx.stateDir, ctx.cacheDir].every((d) => NodePath.dirname(d) === `/d/${extId}`) &&
      [ctx.configDir, ctx.stateDir, ctx.cacheDir].map((d) => NodePath.basename(d)).join() === "config,state,cache"
  })
})

describe("resolveStateDir / resolveTierDirs", () => {
  it("falls back to config/state on hosts without stateDir", () => {
    assert.strictEqual(resolveStateDir({ configDir: "/d/x/config" }), "/d/x/config/state")
    assert.strictEqual(resolveStateDir({ configDir: "/d/x/config", stateDir: "/d/x/state" }), "/d/x/state")
  })

  it("refuses relative tier directories", () => {
    assert.isTrue(Either.isLeft(resolveTierDirs({ configDir: "rel/config", cacheDir: "/c" })))
    assert.isTrue(Either.isLeft(resolveTierDirs({ configDir: "/c", cacheDir: "cache" })))
    assert.deepStrictEqual(
      Either.getOrThrow(resolveTierDirs({ configDir: "/x/config", cacheDir: "/x/cache" })),
      { configDir: "/x/config", stateDir: "/x/config/state", cacheDir: "/x/cache" }
    )
  })

  it("refuses tiers that overlap cache/ or each other (clearing cache must never wipe another tier)", () => {
    const bad: ReadonlyArray<TierDirs> = [
      { configDir: "/x/config", stateDir: "/x/state", cacheDir: "/x/config/cache" },
      { configDir: "/x/config", stateDir: "/x/cache/state", cacheDir: "/x/cache" },
      { configDir: "/x/cache/config", stateDir: "/x/state", cacheDir: "/x/cache" },
      { configDir: "/x", stateDir: "/y/state", cacheDir: "/x/cache" },
      { configDir: "/x/config", stateDir: "/x/config", cacheDir: "/x/cache" },
      { configDir: "/x/config", stateDir: "/x/state", cacheDir: "/x/state/" }
    ]
    for (const dirs of bad) assert.isTrue(Either.isLeft(resolveTierDirs(dirs)), JSON.stringify(dirs))
    assert.isTrue(Either.isRight(resolveTierDirs({ configDir: "/x/config", stateDir: "/x/..state", cacheDir: "/x/..cache" })))
  })

  it.prop("isInside agrees with a path-prefix check on normalised paths", [
    fc.array(fc.constantFrom("a", "b", "..a", ".."), { maxLength: 4 }),
    fc.array(fc.constantFrom("a", "b", "..a", ".."), { maxLength: 4 })
  ], ([p, c]) => {
    const parent = NodePath.resolve("/r", ...p)
    const child = NodePath.resolve("/r", ...c)
    const expected = child !== parent && child.startsWith(parent === "/" ? "/" : parent + "/")
    return isInside(child, parent) === expected
  })
})

describe("chooseTier (TD3)", () => {
  // Every example the seed names, with the facts an extension author would state about it.
  const table: ReadonlyArray<readonly [string, TierFacts, TierName]> = [
    ["search index rebuilt from the notes", { rebuildable: true, reloadSourceExists: true, purpose: "index" }, "cache"],
    ["thumbnails", { rebuildable: true }, "cache"],
    ["python venv", { rebuildable: true }, "cache"],
    ["downloads", { rebuildable: true, reloadSourceExists: true }, "cache"],
    ["debug log", { rebuildable: false, purpose: "debug-log" }, "cache"],
    ["audit log", { rebuildable: false, purpose: "audit-log" }, "state"],
    ["audit log claimed rebuildable", { rebuildable: true, reloadSourceExists: true, purpose: "audit-log" }, "state"],
    ["settings", { rebuildable: false, userSetKeyValues: true }, "config"],
    ["API keys", { rebuildable: false, userSetKeyValues: true }, "config"],
    ["model selection", { rebuildable: false, userSetKeyValues: true }, "config"],
    ["tags", { rebuildable: false, userSetKeyValues: true }, "config"],
    ["dictionaries", { rebuildable: false, userSetKeyValues: true }, "config"],
    ["hot words", { rebuildable: false, userSetKeyValues: true }, "config"],
    ["archives", { rebuildable: false, purpose: "archive" }, "state"],
    ["history", { rebuildable: false }, "state"],
    ["statistics records", { rebuildable: false }, "state"],
    ["rebuildable statistics (usage.sqlite from sessions + .pwarc)", { rebuildable: true, reloadSourceExists: true, purpose: "database" }, "cache"],
    ["database with a reload source", { rebuildable: true, reloadSourceExists: true, purpose: "database" }, "cache"],
    ["database whose reload source is gone", { rebuildable: true, reloadSourceExists: false, purpose: "database" }, "state"],
    ["database of unique records", { rebuildable: false, purpose: "database" }, "state"],
    ["database, reload source unknown", { rebuildable: true, purpose: "database" }, "state"],
    ["index whose reload source is gone", { rebuildable: true, reloadSourceExists: false, purpose: "index" }, "state"],
    ["user creations", { rebuildable: false }, "state"],
    ["exports", { rebuildable: false, purpose: "export" }, "state"],
    ["exports claimed rebuildable", { rebuildable: true, purpose: "export" }, "state"]
  ]
  for (const [what, facts, tier] of table) {
    it(`${what} → ${tier}`, () => {
      const choice = chooseTier(facts)
      assert.strictEqual(choice.tier, tier)
      assert.isAbove(choice.reason.length, 10)
    })
  }

  const purposes: ReadonlyArray<TierPurpose> = ["debug-log", "audit-log", "index", "database", "archive", "export", "other"]
  const facts = fc.record({
    rebuildable: fc.boolean(),
    reloadSourceExists: fc.option(fc.boolean(), { nil: undefined }),
    userSetKeyValues: fc.option(fc.boolean(), { nil: undefined }),
    purpose: fc.option(fc.constantFrom(...purposes), { nil: undefined })
  })

  it.prop("audit logs, archives and exports are never cache", [facts], ([f]) =>
    !(f.purpose === "audit-log" || f.purpose === "archive" || f.purpose === "export") || chooseTier(f).tier !== "cache")

  it.prop("a rebuildable thing whose reload source is known missing is never cache", [facts], ([f]) =>
    !(f.rebuildable && f.reloadSourceExists === false) || chooseTier(f).tier !== "cache")

  it.prop("nothing non-rebuildable lands in cache except a debug log", [facts], ([f]) =>
    f.rebuildable || f.purpose === "debug-log" || chooseTier(f).tier !== "cache")

  it.prop("config only ever holds user-set key-values", [facts], ([f]) =>
    chooseTier(f).tier !== "config" || f.userSetKeyValues === true)
})

describe("tier names and values (TD4)", () => {
  it("refuses file names that are paths or aliases", () => {
    for (const bad of ["", ".", "..", "a/b", "../x", "a\\b", "a\0b", "x".repeat(256)]) {
      assert.isNotNull(fileNameViolation(bad), JSON.stringify(bad))
    }
    for (const good of ["index.bin", "a..b", ".hidden", "Thumb-1.PNG"]) assert.isNull(fileNameViolation(good), good)
  })

  it("a name's length is its UTF-8 bytes, with room for its write's temp file within the file system's 255 bytes", () => {
    assert.strictEqual(FILE_NAME_MAX_BYTES, 237)
    assert.isNull(fileNameViolation("a".repeat(237)))
    assert.match(fileNameViolation("a".repeat(238))!, /at most 237 bytes in UTF-8 \(got 238\)/)
    // 79 three-byte characters are 237 bytes; one more is over, though far fewer than 237 characters.
    assert.isNull(fileNameViolation("中".repeat(79)))
    assert.match(fileNameViolation("中".repeat(80))!, /got 240/)
  })

  it("sees databases and logs by name", () => {
    for (const db of ["usage.db", "a.sqlite", "a.sqlite3", "a.sqlite-wal", "a.sqlite-shm", "a.db-journal", "X.DB"]) {
      assert.strictEqual(configFileNameViolation(db)?.rule, "database", db)
      assert.strictEqual(configFileNameViolation(db)?.rightTier, "state")
    }
    for (const log of ["debug.log", "app.log.1", "app.log.3.gz", "A.LOG"]) {
      assert.strictEqual(configFileNameViolation(log)?.rule, "log", log)
    }
    for (const ok of ["settings.json", "dictionary.txt", "debug.login", "dbx.json", "catalog"]) {
      assert.isNull(configFileNameViolation(ok), ok)
    }
  })

  it("accepts JSON values and names the first part that is not", () => {
    for (const ok of [null, true, 0, -1.5, "s", [], {}, { a: [1, { b: null }] }, Object.create(null)]) {
      assert.isNull(jsonValueViolation(ok))
    }
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const bad: ReadonlyArray<readonly [unknown, string]> = [
      [undefined, "value"], [NaN, "value"], [Infinity, "value"], [() => 1, "value"], [10n, "value"],
      [new Date(0), "Date"], [new Uint8Array(1), "Uint8Array"], [{ a: { b: undefined } }, "value.a.b"],
      [[1, Symbol("s")], "value[1]"], [cyclic, "cycle"], [new Map(), "Map"]
    ]
    for (const [v, mention] of bad) {
      const why = jsonValueViolation(v)
      assert.isNotNull(why)
      assert.include(why!, mention)
    }
    // The same object twice (not a cycle) is fine.
    const shared = { x: 1 }
    assert.isNull(jsonValueViolation({ a: shared, b: shared }))
  })

  it.prop("the budget check refuses exactly when the projected total exceeds the budget", [
    fc.nat(4096), fc.nat(4096), fc.nat(4096), fc.nat(8192)
  ], ([current, replacedRaw, incoming, budget]) => {
    const replaced = Math.min(replacedRaw, current)
    const v = configBudgetViolation({ currentBytes: current, complete: true, replacedBytes: replaced, newBytes: incoming, budgetBytes: budget })
    return (v !== null) === (current - replaced + incoming > budget) && (v === null || v.rule === "size-budget")
  })

  it("refuses when the measure of config/ was cut short", () => {
    const v = configBudgetViolation({ currentBytes: 0, complete: false, replacedBytes: 0, newBytes: 1, budgetBytes: 100 })
    assert.strictEqual(v?.rule, "size-budget")
  })
})
