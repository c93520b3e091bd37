/**
 * Typed failures (docs/errors.md "Errors"): program failures are tagged errors of their own, never a
 * dressed-up FileSystemError; each reaches the caller (Effect API, Promise facade) with its `_tag`, and the
 * CLI's exit code comes from the one exhaustive match in cli/exit.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { Effect, Either, Schema } from "effect"
import { ExitCode, exitCodeForError, exitCodeOf } from "../../src/cli/exit.js"
import {
  ConfigUnreadable,
  DecodeFailure,
  FileSystemError,
  FileSystemErrorReason,
  LibraryDirUnusable,
  MigrationStepFailed,
  RemovalStalled,
  RunChanged,
  TierUnresolvable
} from "../../src/domain/Errors.js"
import { isStorageError, StorageError } from "../../src/domain/StorageErrors.js"
import { makeExtensionContext } from "../../src/domain/Tiers.js"
import { extensionContext, openTiers as openTiersFacade } from "../../src/facade/tiers.js"
import { layerMemory } from "../../src/layers/MemoryFileSystem.js"
import { MemoryDriver } from "../../src/layers/MemoryWorld.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { openTiers } from "../support/tiers.js"

describe("StorageError union and exit codes", () => {
  it("every tag of the union has one of the tool's own codes; anything else is a failure (1)", () => {
    const tags = StorageError.members.map((m) => m._tag)
    assert.strictEqual(new Set(tags).size, tags.length, "no tag listed twice")
    for (const tag of tags) {
      const code = exitCodeForError({ _tag: tag })
      assert.include([ExitCode.findings, ExitCode.usage, ExitCode.refused], code, tag)
      assert.isTrue(isStorageError({ _tag: tag }))
    }
    assert.isFalse(isStorageError({ _tag: "ParseError" }))
    assert.strictEqual(exitCodeForError({ _tag: "ParseError" }), ExitCode.findings)
    assert.strictEqual(exitCodeForError({ _tag: "RunChanged" }), ExitCode.findings, "an internal error is not a public tag")
  })

  it("the new program errors: their codes, and their messages name the path", () => {
    const cases: ReadonlyArray<readonly [StorageError, number]> = [
      [new ConfigUnreadable({
        path: "/x/config/settings.json",
        detail: "settings are not a JSON object",
        cause: new DecodeFailure({ stage: "schema", detail: "settings are not a JSON object" })
      }), ExitCode.findings],
      [new RemovalStalled({ path: "/x/cache" }), ExitCode.findings],
      [new MigrationStepFailed({ step: "copy-not-verified", path: "/x/sessions", detail: "cross-device copy did not verify" }), ExitCode.findings],
      [new TierUnresolvable({ path: "/deep", detail: "more than 4096 ancestors to compare" }), ExitCode.refused]
    ]
    for (const [error, code] of cases) {
      assert.strictEqual(exitCodeOf(error), code, error._tag)
      assert.include(error.message, "path" in error ? error.path : "", error._tag)
    }
    // Internal errors keep their words as the message a report carries.
    assert.strictEqual(new RunChanged({ path: "/r", detail: "the run directory /r was replaced" }).message, "the run directory /r was replaced")
    assert.strictEqual(new LibraryDirUnusable({ path: "/t/.trash", detail: "/t/.trash is not a directory (a file)" }).message, "/t/.trash is not a directory (a file)")
  })

  it("the simulated crash is not a public reason; FileSystemError keeps the platform's cause", () => {
    assert.notInclude(FileSystemErrorReason.literals as ReadonlyArray<string>, "Crashed")
    let thrown: unknown
    try {
      fs.readFileSync(NodePath.join(os.tmpdir(), "pi-storage-no-such-file-" + process.pid))
    } catch (e) {
      thrown = e
    }
    const error = new FileSystemError({ reason: "NotFound", errno: "ENOENT", method: "readFile", path: "/p", cause: thrown })
    assert.strictEqual(error.cause, thrown)
  })
})

describe("typed failures reach the caller", () => {
  it.effect("cache.clear that makes no progress fails RemovalStalled, not a Busy FileSystemError (Effect API)", () =>
    Effect.gen(function*() {
      const world = yield* MemoryDriver
      yield* world.mkdirFixture("/data/notes/cache/sub")
      yield* world.writeFixture("/data/notes/cache/sub/f", "x")
      const real = yield* FileSystem
      // A tree whose removal stops without removing anything (an entry that keeps coming back).
      const stuck: FileSystem["Type"] = { ...real, removeTree: () => Effect.succeed({ removedEntries: 0, removedBytes: 0, removedApparentBytes: 0, complete: false }) }
      const ctx = Either.getOrThrow(
        makeExtensionContext({ extId: "notes", options: { dataRoot: "/data" }, env: () => undefined, home: "/h", cwd: "/" })
      )
      const tiers = yield* openTiers(ctx).pipe(Effect.provideService(FileSystem, stuck))
      const error = yield* Effect.flip(tiers.cache.clear())
      assert.strictEqual(error._tag, "RemovalStalled")
      assert.instanceOf(error, RemovalStalled)
      assert.strictEqual((error as RemovalStalled).path, "/data/notes/cache")
      assert.strictEqual(exitCodeForError(error), ExitCode.findings)
    }).pipe(Effect.provide(layerMemory())))

  it("a corrupt settings.json rejects with ConfigUnreadable through the Promise facade, file untouched", async () => {
    const root = fs.mkdtempSync(NodePath.join(os.tmpdir(), "errors-facade-"))
    try {
      const tiers = await openTiersFacade(extensionContext("notes", { dataRoot: root }))
      const path = NodePath.join(root, "notes", "config", "settings.json")
      fs.mkdirSync(NodePath.dirname(path), { recursive: true })
      fs.writeFileSync(path, "[1,2]")
      let rejected: unknown
      await tiers.config.get("k").catch((e: unknown) => {
        rejected = e
      })
      assert.instanceOf(rejected, ConfigUnreadable)
      assert.strictEqual((rejected as ConfigUnreadable)._tag, "ConfigUnreadable")
      assert.include((rejected as ConfigUnreadable).message, path)
      assert.isTrue(Schema.is(StorageError)(rejected))
      assert.strictEqual(exitCodeForError(rejected as ConfigUnreadable), ExitCode.findings)
      assert.strictEqual(fs.readFileSync(path, "utf8"), "[1,2]")
      await tiers.close()
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})
