/**
 * Regression: the config tier refused names the doctor did not flag (`a.s3db`, `a.log.1.gz`) and the doctor
 * flagged names the tier accepted (`trace.out`). Both now call one classifier; this checks it end to end on
 * real disk: every name the tier refuses is a doctor finding, with the same rule.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { ConfigRedLine } from "../../src/domain/Errors.js"
import { makeExtensionContext } from "../../src/domain/Tiers.js"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { doctorAt } from "../support/doctor.js"
import { openTiers } from "../support/tiers.js"
import { spawn } from "./migrationSupport.js"

const CODE = { database: "extension-config-database", log: "extension-config-log" } as const

describe("config red lines agree between the tier store and the doctor", () => {
  it.scoped("each formerly disagreeing name is refused by the tier and flagged by the doctor", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(NodePath.join(os.tmpdir(), "redlines-"))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      const web = NodePath.join(dir, "web")
      const ctx = Either.getOrThrow(makeExtensionContext({ extId: "ext1", options: { dataRoot: web }, env: () => undefined, home: "/nohome", cwd: "/" }))
      const tiers = yield* openTiers(ctx).pipe(Effect.provide(NodeFileSystem.layer))
      fs.mkdirSync(ctx.configDir, { recursive: true })
      const names = [["a.s3db", "database"], ["a.log.1.gz", "log"], ["trace.out", "log"], ["x.sqlite3-wal", "database"]] as const
      for (const [name, rule] of names) {
        const refused = yield* Effect.flip(tiers.config.writeFile(name, "x").pipe(Effect.provide(NodeFileSystem.layer)))
        assert.instanceOf(refused, ConfigRedLine, name)
        assert.strictEqual((refused as ConfigRedLine).rule, rule, name)
        fs.writeFileSync(NodePath.join(ctx.configDir, name), "x") // as an external writer would
      }
      const report = yield* doctorAt(NodePath.join(dir, "agent"), { webDataRoot: web }).pipe(
        Effect.provide(Layer.merge(NodeFileSystem.layer, NodeHost.layer))
      )
      const found = new Set(report.findings.map((f) => `${f.code} ${NodePath.basename(f.path)}`))
      for (const [name, rule] of names) assert.isTrue(found.has(`${CODE[rule]} ${name}`), `${name}: ${[...found].join(", ")}`)
    }))

  /** Names built from the suffixes the rules are about, their near misses, and case variants. */
  const nameArb = fc.tuple(
    fc.constantFrom("a", "trace", "usage", "x.y", "app-1"),
    fc.constantFrom(
      ".db", ".DB", ".db3", ".sqlite", ".Sqlite3", ".s3db", ".sl3", ".mdb", ".ldb", ".sqlite-wal", ".db-journal", ".db-shm",
      ".log", ".LOG", ".log.1", ".log.12.gz", ".log.gz", ".out", ".err", ".txt", ".json", ".md", ".dbx", ".logs", ".output",
      ".outx", ".log.x", ".sqlite-wal2", ""
    ),
    fc.constantFrom("", "", ".bak", ".gz", ".1")
  ).map(([stem, ext, tail]) => `${stem}${ext}${tail}`)

  it.effect.prop(
    "for any names: the config tier refuses exactly what the doctor flags, with the same rule (Memory)",
    [fc.uniqueArray(nameArb, { minLength: 1, maxLength: 8 })],
    ([names]) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const proc = spawn(world)
        const web = "/home/user/.pi/web/data"
        const ctx = Either.getOrThrow(makeExtensionContext({ extId: "ext1", options: { dataRoot: web }, env: () => undefined, home: "/nohome", cwd: "/" }))
        yield* world.mkdirFixture(ctx.configDir)
        const tiers = yield* openTiers(ctx).pipe(Effect.provide(proc.layer))
        const expected: Array<string> = []
        for (const name of names) {
          const written = yield* Effect.either(tiers.config.writeFile(name, "x").pipe(Effect.provide(proc.layer)))
          if (Either.isLeft(written)) {
            assert.instanceOf(written.left, ConfigRedLine, name)
            const rule = (written.left as ConfigRedLine).rule
            assert.include(["database", "log"], rule, name)
            expected.push(`${CODE[rule as keyof typeof CODE]} ${name}`)
            yield* world.writeFixture(`${ctx.configDir}/${name}`, "x") // as an external writer would
          }
        }
        const report = yield* doctorAt("/home/user/.pi/agent", { webDataRoot: web }).pipe(Effect.provide(proc.layer))
        const flagged = report.findings
          .filter((f) => f.code === CODE.database || f.code === CODE.log)
          .map((f) => `${f.code} ${NodePath.basename(f.path)}`)
        assert.deepStrictEqual(flagged.sort(), expected.sort())
      }),
    { fastCheck: { numRuns: 25 } }
  )
})
