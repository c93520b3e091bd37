import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { INDEX_FILE } from "../../src/domain/UserProfileArchive.js"
import { PROFILE_POINTER } from "../../src/domain/UserProfileText.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { doctorAt } from "../support/doctor.js"
import { asProcess, HOST, snapshot } from "./migrationSupport.js"
import { aliasBombShard, BOMB_SHARD, LATIN1_USER } from "../support/hostileProfile.js"
import { AGENT, ARCHIVE, PI_INDEX, PI_SHARD_1, PI_SHARD_2, piShard, profileProcess, seedPi, USER } from "./userProfileSupport.js"

const fresh = () => MemoryWorld.make({ journal: false })
const profileFindings = (world: MemoryWorld) =>
  Effect.gen(function*() {
    const before = snapshot(world)
    const report = yield* asProcess(world, doctorAt(AGENT))
    assert.deepStrictEqual(snapshot(world), before, "the doctor changed something")
    return report.findings.filter((f) => f.code.startsWith("user-profile-")).map((f) => [f.code, f.path, f.severity])
  })

describe("doctor: the user profile", () => {
  it.effect("a healthy Pi archive has no finding", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      assert.deepStrictEqual(yield* profileFindings(world), [])
    }))

  it.effect("USER.md over its budget", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.writeFixture(USER, "x".repeat(9000) + "\n")
      assert.deepStrictEqual(yield* profileFindings(world), [["user-profile-over-budget", "USER.md", "warning"]])
    }))

  it.effect("a pointer whose index is missing; shards the index does not list; a shard that does not parse", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.writeFixture(USER, PROFILE_POINTER)
      yield* world.writeFixture(`${ARCHIVE}/${PI_SHARD_1}`, piShard(1, "- a\n"))
      assert.deepStrictEqual(yield* profileFindings(world), [["user-profile-index-missing", `okf-memory/user-preferences/${INDEX_FILE}`, "warning"]])
      yield* world.writeFixture(`${ARCHIVE}/${INDEX_FILE}`, PI_INDEX.replace(`- [Part 2](./${PI_SHARD_2})\n`, ""))
      yield* world.writeFixture(`${ARCHIVE}/${PI_SHARD_2}`, piShard(2, "- b\n"))
      yield* world.writeFixture(`${ARCHIVE}/user-preferences-4444444444444444.okf.md`, "no front matter\n")
      assert.deepStrictEqual(yield* profileFindings(world), [
        ["user-profile-unlisted-shard", "okf-memory/user-preferences", "info"],
        ["user-profile-unparsable-shard", "okf-memory/user-preferences/user-preferences-4444444444444444.okf.md", "error"]
      ])
    }))

  it.effect("an index that does not parse", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      yield* world.writeFixture(`${ARCHIVE}/${INDEX_FILE}`, "- [x](user-preferences-0123456789abcdef.okf.md)\n")
      const report = yield* asProcess(world, doctorAt(AGENT))
      const finding = report.findings.find((f) => f.code === "user-profile-index-missing")
      assert.strictEqual(finding?.message, "USER.md points to an archive index that does not parse")
    }))

  it.effect("a leftover lock of a dead writer, and its interrupted write", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      const writer = profileProcess(world, { budgetBytes: 120 })
      // mkdir state, mkdir state/user-profile, the lock (exclusive create, then its write), then the journal
      // (temp + rename): crash right after it.
      world.crashAfter(6, { hostname: HOST, pid: writer.pid })
      yield* writer.run((p) => p.add("y".repeat(100))).pipe(Effect.exit)
      world.kill(HOST, writer.pid)
      world.recover()
      assert.deepStrictEqual(yield* profileFindings(world), [
        ["user-profile-dead-lock", "state/user-profile/lock", "info"],
        ["user-profile-interrupted-write", "state/user-profile/pending.json", "info"]
      ])
    }))

  it.effect("an archive directory that is a symlink is reported, not followed", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.mkdirFixture(`${AGENT}/elsewhere`)
      yield* world.symlinkFixture("../elsewhere", ARCHIVE)
      assert.deepStrictEqual(yield* profileFindings(world), [["user-profile-unsafe", "okf-memory/user-preferences", "error"]])
    }))

  it.effect("a Latin-1 USER.md is reported (user-profile-not-utf8), never rewritten", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* world.writeFixture(USER, LATIN1_USER)
      assert.deepStrictEqual(yield* profileFindings(world), [["user-profile-not-utf8", "USER.md", "error"]])
    }))

  it.effect("a shard whose front matter is a YAML alias bomb is reported, the doctor does not die", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      yield* world.writeFixture(`${ARCHIVE}/${BOMB_SHARD}`, aliasBombShard())
      assert.deepStrictEqual(yield* profileFindings(world), [["user-profile-unparsable-shard", `okf-memory/user-preferences/${BOMB_SHARD}`, "error"]])
    }))
})
