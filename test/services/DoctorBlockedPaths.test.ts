/**
 * A file (or a link to one) where the library keeps a directory below a root entry: the doctor names that
 * entry once (`library-path-blocked`), not the paths below it that were never there (an "unsafe" profile
 * file, an "interrupted" config change whose suggested snapshot would fail), and a root entry of the wrong
 * kind only as the root's own finding.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { doctorAt } from "../support/doctor.js"
import { asProcess, snapshot } from "./migrationSupport.js"
import { AGENT } from "./userProfileSupport.js"

const HISTORY = `${AGENT}/state/backups/config/history`

/** The doctor's findings as [code, path, severity], after checking it changed nothing. */
const findingsOf = (world: MemoryWorld) =>
  Effect.gen(function*() {
    const before = snapshot(world)
    const report = yield* asProcess(world, doctorAt(AGENT))
    assert.deepStrictEqual(snapshot(world), before, "the doctor changed something")
    return report.findings.map((f) => ({ code: f.code, path: f.path, severity: f.severity, message: f.message, fix: f.fix }))
  })

const fresh = () => MemoryWorld.make({ journal: false })

describe("doctor: an entry in the way of the library's own directories", () => {
  it.effect("state/ a regular file: the root's kind mismatch alone", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.writeFixture(`${AGENT}/state`, "x")
      const found = yield* findingsOf(world)
      assert.deepStrictEqual(found.map((f) => [f.code, f.path]), [["canonical-kind-mismatch", "state"]])
    }))

  it.effect("state/user-profile a regular file: that entry, not an unsafe pending.json", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.writeFixture(`${AGENT}/state/user-profile`, "x")
      const found = yield* findingsOf(world)
      assert.deepStrictEqual(found.map((f) => [f.code, f.path, f.severity]), [["library-path-blocked", "state/user-profile", "warning"]])
      assert.strictEqual(found[0]!.message, "a regular file where the user profile keeps a directory: nothing below it can be read or written")
      assert.include(found[0]!.fix, "move it aside")
    }))

  it.effect("the config history's directory a regular file: that entry, not an interrupted change", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.writeFixture(HISTORY, "x")
      const found = yield* findingsOf(world)
      assert.deepStrictEqual(found.map((f) => [f.code, f.path]), [["library-path-blocked", "state/backups/config/history"]])
      assert.notInclude(found[0]!.fix ?? "", "config snapshot", "a fix that cannot work is not suggested")
    }))

  it.effect("a symlink to a file on the way blocks; a symlink to a directory does not", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.writeFixture(`${AGENT}/elsewhere/file`, "x")
      yield* world.mkdirFixture(`${AGENT}/state/backups`)
      yield* world.symlinkFixture("../../elsewhere/file", `${AGENT}/state/backups/config`)
      const found = yield* findingsOf(world)
      const blocked = found.filter((f) => f.code === "library-path-blocked")
      assert.deepStrictEqual(blocked.map((f) => [f.path, f.message]), [[
        "state/backups/config",
        "a symlink to a regular file where the config history keeps a directory: nothing below it can be read or written"
      ]])
      assert.isUndefined(found.find((f) => f.code === "config-change-interrupted"))

      const through = fresh()
      yield* through.mkdirFixture(`${AGENT}/elsewhere/history`)
      yield* through.mkdirFixture(`${AGENT}/state/backups`)
      yield* through.symlinkFixture("../../elsewhere", `${AGENT}/state/backups/config`)
      assert.deepStrictEqual((yield* findingsOf(through)).filter((f) => f.code === "library-path-blocked"), [])
    }))

  it.effect("state a symlink to a file: the root's findings are silent about a canonical link, so the link is named", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.writeFixture(`${AGENT}/elsewhere/file`, "x")
      yield* world.symlinkFixture("elsewhere/file", `${AGENT}/state`)
      const found = yield* findingsOf(world)
      const blocked = found.filter((f) => f.code === "library-path-blocked")
      // Both the profile and the history are below it: one entry, one finding.
      assert.deepStrictEqual(blocked.map((f) => f.path), ["state"])
      assert.isUndefined(found.find((f) => f.code === "user-profile-unsafe" || f.code === "config-change-interrupted"))
    }))
})
