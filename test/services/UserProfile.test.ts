import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Layer, Option } from "effect"
import { INDEX_FILE, parseIndex, shardName } from "../../src/domain/UserProfileArchive.js"
import { PROFILE_POINTER } from "../../src/domain/UserProfileText.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { UnsafeProfile } from "../../src/domain/UserProfileErrors.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import * as MemoryFs from "../../src/layers/MemoryFileSystem.js"
import * as MemoryHost from "../../src/layers/MemoryHost.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { Host } from "../../src/services/Host.js"
import { UserProfile } from "../../src/services/UserProfile.js"
import { depsFromContext } from "../../src/services/internal/deps.js"
import { tryAcquireMarker } from "../../src/services/internal/markers.js"
import { aliasBombShard, BINARY_USER, BOMB_SHARD, LATIN1_OFFSET, LATIN1_USER } from "../support/hostileProfile.js"
import { asProcess, snapshot, spawn } from "./migrationSupport.js"
import {
  AGENT,
  ARCHIVE,
  asProfile,
  assertSettled,
  PI_FACTS,
  PI_INDEX,
  PI_SHARD_1,
  PI_SHARD_2,
  piShard,
  seedPi,
  shardFiles,
  USER
} from "./userProfileSupport.js"

const fresh = () => MemoryWorld.make({ journal: false })
const indexOf = (world: MemoryWorld) => {
  const parsed = parseIndex(world.readFixtureText(`${ARCHIVE}/${INDEX_FILE}`) ?? "")
  return parsed.ok ? parsed.shards : null
}
const removeFixture = (world: MemoryWorld, path: string) => asProcess(world, Effect.flatMap(FileSystem, (fs) => fs.removeFile(path)))
const texts = (view: { readonly entries: ReadonlyArray<{ readonly text: string }> }) => view.entries.map((e) => e.text)

describe("UserProfile: add, replace, remove", () => {
  it.effect("the first add creates USER.md; a duplicate is a no-op that says so and writes nothing", () =>
    Effect.gen(function*() {
      const world = fresh()
      const added = yield* asProfile(world, (p) => p.add("likes tabs"))
      assert.strictEqual(added.outcome, "added")
      assert.strictEqual(world.readFixtureText(USER), "likes tabs\n")
      const before = world.mutationCount
      const dup = yield* asProfile(world, (p) => p.add("likes tabs"))
      assert.deepStrictEqual([dup.outcome, dup.changed], ["duplicate", false])
      // Only the lock was taken (an exclusive create and its write: two steps) and given back.
      assert.strictEqual(world.readFixtureText(USER), "likes tabs\n")
      assert.isAtMost(world.mutationCount - before, 3)
      const view = yield* asProfile(world, (p) => p.read)
      assert.deepStrictEqual(
        { text: view.text, entries: view.entries.map((e) => [e.text, e.shard]), sharded: view.sharded, bytes: view.bytes, budget: view.budgetBytes },
        { text: "likes tabs\n", entries: [["likes tabs", null]], sharded: false, bytes: 11, budget: 8192 }
      )
      assert.match(view.entries[0]!.id, /^[0-9a-f]{12}$/)
    }))

  it.effect("bad entries are InvalidEntry and change nothing", () =>
    Effect.gen(function*() {
      const world = fresh()
      for (const bad of ["two\nlines", "   ", "", "hidden\u200bspace", "rtl \u202eoverride"]) {
        const r = yield* asProfile(world, (p) => p.add(bad)).pipe(Effect.either)
        assert.isTrue(Either.isLeft(r) && r.left._tag === "InvalidEntry", JSON.stringify(bad))
      }
      assert.isUndefined(world.readFixtureText(USER))
    }))

  it.effect("over the budget the whole hot body moves into a shard and USER.md becomes Pi's pointer; later adds stay hot", () =>
    Effect.gen(function*() {
      const world = fresh()
      const budgetBytes = 150
      for (const e of ["one fact", "two facts", "three facts"]) yield* asProfile(world, (p) => p.add(e), { budgetBytes })
      assert.strictEqual(world.readFixtureText(USER), "one fact\ntwo facts\nthree facts\n")
      const long = "x".repeat(140)
      const change = yield* asProfile(world, (p) => p.add(long), { budgetBytes })
      assert.isTrue(change.archived)
      assert.strictEqual(world.readFixtureText(USER), PROFILE_POINTER)
      const first = shardName(["one fact", "two facts", "three facts", long])
      assert.deepStrictEqual(indexOf(world), [first])
      assert.deepStrictEqual(shardFiles(world), { [first]: ["one fact", "two facts", "three facts", long] })
      yield* asProfile(world, (p) => p.add("four"), { budgetBytes })
      assert.strictEqual(world.readFixtureText(USER), `${PROFILE_POINTER}\nfour\n`)
      const view = yield* asProfile(world, (p) => p.read, { budgetBytes })
      assert.deepStrictEqual(view.entries.map((e) => [e.text, e.shard]), [
        ["one fact", first], ["two facts", first], ["three facts", first], [long, first], ["four", null]
      ])
      assert.isTrue(view.sharded)
      // A second overflow appends a new shard; the first keeps its file.
      yield* asProfile(world, (p) => p.add("y".repeat(100)), { budgetBytes })
      const second = shardName(["four", "y".repeat(100)])
      assert.deepStrictEqual(indexOf(world), [first, second])
      assertSettled(world, ["one fact", "two facts", "three facts", long, "four", "y".repeat(100)], "two overflows")
    }))

  it.effect("replace and remove work in the hot part and in every shard; a shard left empty goes and the index is rebuilt", () =>
    Effect.gen(function*() {
      const world = fresh()
      const budgetBytes = 300
      const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((x) => x.repeat(100)) as [string, string, string, string, string]
      for (const x of [a, b, c]) yield* asProfile(world, (p) => p.add(x), { budgetBytes }) // overflow: shard 1 [a, b, c]
      for (const x of [d, e]) yield* asProfile(world, (p) => p.add(x), { budgetBytes }) // overflow: shard 2 [d, e]
      yield* asProfile(world, (p) => p.add("hot one"), { budgetBytes })
      const [s1, s2] = indexOf(world)!
      assert.strictEqual(s1, shardName([a, b, c]))
      assert.strictEqual(s2, shardName([d, e]))
      // In a shard, by a unique substring: a new shard replaces the old one, in place in the index.
      const r = yield* asProfile(world, (p) => p.replace("bbbb", "B!"), { budgetBytes })
      assert.deepStrictEqual([r.outcome, r.matched], ["replaced", b])
      const s1b = shardName([a, "B!", c])
      assert.deepStrictEqual(indexOf(world), [s1b, s2!])
      assert.deepStrictEqual(Object.keys(shardFiles(world)).sort(), [s1b, s2!].sort())
      // Hot.
      yield* asProfile(world, (p) => p.replace("hot one", "hot two"), { budgetBytes })
      assert.strictEqual(world.readFixtureText(USER), `${PROFILE_POINTER}\nhot two\n`)
      // Emptying a shard removes it.
      yield* asProfile(world, (p) => p.remove(d), { budgetBytes })
      yield* asProfile(world, (p) => p.remove("ee"), { budgetBytes })
      assert.deepStrictEqual(indexOf(world), [s1b])
      assertSettled(world, [a, "B!", c, "hot two"], "after edits")
      // Emptying the whole archive: USER.md is a plain profile again and the index goes.
      for (const x of ["aaa", "B!", "ccc"]) yield* asProfile(world, (p) => p.remove(x), { budgetBytes })
      assert.strictEqual(world.readFixtureText(USER), "hot two\n")
      assert.isUndefined(world.readFixtureText(`${ARCHIVE}/${INDEX_FILE}`))
      assertSettled(world, ["hot two"], "archive emptied")
    }))

  it.effect("no match is EntryNotFound; several are AmbiguousEntry listing them all, across shards and hot; nothing changes", () =>
    Effect.gen(function*() {
      const world = fresh()
      const budgetBytes = 110
      for (const e of ["likes tabs", "likes vim", "x".repeat(90), "likes rust"]) yield* asProfile(world, (p) => p.add(e), { budgetBytes })
      const before = snapshot(world)
      const amb = yield* asProfile(world, (p) => p.remove("likes"), { budgetBytes }).pipe(Effect.flip)
      assert.strictEqual(amb._tag, "AmbiguousEntry")
      if (amb._tag === "AmbiguousEntry") assert.deepStrictEqual(amb.candidates, ["likes tabs", "likes vim", "likes rust"])
      const none = yield* asProfile(world, (p) => p.replace("emacs", "x"), { budgetBytes }).pipe(Effect.flip)
      assert.strictEqual(none._tag, "EntryNotFound")
      assert.deepStrictEqual(snapshot(world), before)
    }))

  it.effect("a shard over its budget after a replace is split on entry boundaries", () =>
    Effect.gen(function*() {
      const world = fresh()
      const options = { budgetBytes: 60, shardBudgetBytes: 50 }
      for (const e of ["é".repeat(10), "ü".repeat(10), "中".repeat(10)]) yield* asProfile(world, (p) => p.add(e), options)
      // 21 + 21 + 31 bytes are over the USER.md budget: archived as [é, ü] and [中] (50 bytes of body a shard).
      assert.deepStrictEqual(Object.values(shardFiles(world)).length, 2)
      yield* asProfile(world, (p) => p.replace("ü".repeat(10), "😀".repeat(10)), options)
      const shards = indexOf(world)!.map((n) => shardFiles(world)[n])
      assert.deepStrictEqual(shards, [["é".repeat(10)], ["😀".repeat(10)], ["中".repeat(10)]])
    }))

  it.effect("budget options are checked", () =>
    Effect.gen(function*() {
      const r = yield* asProfile(fresh(), (p) => p.read, { budgetBytes: 0 }).pipe(Effect.flip)
      assert.strictEqual(r._tag, "InvalidArgument")
    }))
})

describe("UserProfile: what Pi wrote keeps working", () => {
  it.effect("Pi's pointer, index and shards read in order; an add leaves every shard file byte for byte", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      const view = yield* asProfile(world, (p) => p.read)
      assert.deepStrictEqual(view.entries.map((e) => [e.text, e.shard]), [
        ["- Prefers concise answers", PI_SHARD_1],
        ["- Uses pnpm", PI_SHARD_1],
        ["- Works in Europe/Paris", PI_SHARD_2],
        ["- Likes tabs", PI_SHARD_2],
        ["- Hot: answers in French", null]
      ])
      assert.isTrue(view.sharded)
      const shardsBefore = [PI_SHARD_1, PI_SHARD_2].map((n) => world.readFixtureText(`${ARCHIVE}/${n}`))
      const indexBefore = world.readFixtureText(`${ARCHIVE}/${INDEX_FILE}`)
      yield* asProfile(world, (p) => p.add("- Uses zsh"))
      assert.strictEqual(world.readFixtureText(USER), `${PROFILE_POINTER}\n- Hot: answers in French\n- Uses zsh\n`)
      assert.deepStrictEqual([PI_SHARD_1, PI_SHARD_2].map((n) => world.readFixtureText(`${ARCHIVE}/${n}`)), shardsBefore)
      assert.strictEqual(world.readFixtureText(`${ARCHIVE}/${INDEX_FILE}`), indexBefore)
    }))

  it.effect("an edit in one of Pi's shards rewrites that shard only; the other keeps its name and bytes", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      const untouched = world.readFixtureText(`${ARCHIVE}/${PI_SHARD_2}`)
      yield* asProfile(world, (p) => p.replace("pnpm", "- Uses bun"))
      const replaced = shardName(["- Prefers concise answers", "- Uses bun"])
      assert.deepStrictEqual(indexOf(world), [replaced, PI_SHARD_2])
      assert.strictEqual(world.readFixtureText(`${ARCHIVE}/${PI_SHARD_2}`), untouched)
      assert.isUndefined(world.readFixtureText(`${ARCHIVE}/${PI_SHARD_1}`))
      yield* asProfile(world, (p) => p.remove("Europe/Paris"))
      yield* asProfile(world, (p) => p.remove("Likes tabs"))
      assert.deepStrictEqual(indexOf(world), [replaced])
      assertSettled(world, ["- Prefers concise answers", "- Uses bun", "- Hot: answers in French"], "Pi archive edited")
    }))

  it.effect("shards the index does not list are adopted (oldest first); a missing index is rebuilt", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      const extra = "user-preferences-00000000000000aa.okf.md"
      yield* world.writeFixture(`${ARCHIVE}/${extra}`, piShard(3, "- Adopted fact\n"))
      const view = yield* asProfile(world, (p) => p.read)
      assert.deepStrictEqual(texts(view).slice(4), ["- Adopted fact", "- Hot: answers in French"])
      yield* asProfile(world, (p) => p.add("- new"))
      assert.deepStrictEqual(indexOf(world), [PI_SHARD_1, PI_SHARD_2, extra])
      // Without any index: rebuilt from the shards present, by their timestamps.
      const w2 = fresh()
      yield* seedPi(w2)
      yield* removeFixture(w2, `${ARCHIVE}/${INDEX_FILE}`)
      assert.deepStrictEqual(texts(yield* asProfile(w2, (p) => p.read)), texts(view).filter((t) => t !== "- Adopted fact"))
      yield* asProfile(w2, (p) => p.remove("- Hot: answers in French"))
      assert.deepStrictEqual(indexOf(w2), [PI_SHARD_1, PI_SHARD_2])
      assert.strictEqual(w2.readFixtureText(USER), PROFILE_POINTER)
    }))

  it.effect("facts held twice (old USER.md and shards, as a crash before the pointer leaves them) are kept once", () =>
    Effect.gen(function*() {
      const world = fresh()
      const facts = ["one", "two", "three"]
      const name = shardName(facts)
      yield* world.writeFixture(USER, "one\ntwo\nthree\n")
      yield* world.writeFixture(`${ARCHIVE}/${name}`, piShard(1, "one\ntwo\nthree\n"))
      const view = yield* asProfile(world, (p) => p.read)
      assert.deepStrictEqual(texts(view), facts)
      yield* asProfile(world, (p) => p.add("four"))
      assertSettled(world, [...facts, "four"], "doubled facts")
      assert.strictEqual(world.readFixtureText(USER), `${PROFILE_POINTER}\nfour\n`)
    }))
})

describe("UserProfile: unsafe files are refused before use", () => {
  /** Every method fails with UnsafeProfile(reason) and nothing is written (the lock comes and goes in state/). */
  const refused = (setup: (world: MemoryWorld) => Effect.Effect<void>, reason: string) =>
    Effect.gen(function*() {
      const world = fresh()
      yield* setup(world)
      const before = snapshot(world)
      const programs: ReadonlyArray<(p: UserProfile["Type"]) => Effect.Effect<unknown, { readonly _tag: string }>> = [
        (p) => p.read,
        (p) => p.add("- x"),
        (p) => p.remove("pnpm")
      ]
      for (const program of programs) {
        const e = yield* asProfile(world, program).pipe(Effect.flip)
        assert.strictEqual(e._tag, "UnsafeProfile")
        if (e instanceof UnsafeProfile) assert.strictEqual(e.reason, reason, e.message)
      }
      const after = Object.fromEntries(Object.entries(snapshot(world)).filter(([rel]) => !rel.startsWith("state")))
      assert.deepStrictEqual(after, before)
    })

  it.effect("the archive directory is a symlink", () =>
    refused((world) =>
      Effect.gen(function*() {
        yield* world.writeFixture(USER, `${PROFILE_POINTER}\n- hot\n`)
        yield* world.writeFixture(`${AGENT}/elsewhere/${INDEX_FILE}`, PI_INDEX)
        yield* world.writeFixture(`${AGENT}/elsewhere/${PI_SHARD_1}`, piShard(1, "- Uses pnpm\n"))
        yield* world.symlinkFixture("../elsewhere", ARCHIVE)
      }), "symlink"))

  it.effect("okf-memory/ above the archive is a symlink (an archive there or none yet: an add would make one through it)", () =>
    Effect.gen(function*() {
      yield* refused((world) =>
        Effect.gen(function*() {
          yield* world.writeFixture(USER, `${PROFILE_POINTER}\n- hot\n`)
          yield* world.writeFixture(`${AGENT}/elsewhere/user-preferences/${INDEX_FILE}`, PI_INDEX)
          yield* world.writeFixture(`${AGENT}/elsewhere/user-preferences/${PI_SHARD_1}`, piShard(1, "- Uses pnpm\n"))
          yield* world.symlinkFixture("elsewhere", `${AGENT}/okf-memory`)
        }), "symlink")
      yield* refused((world) =>
        Effect.gen(function*() {
          yield* world.mkdirFixture(`${AGENT}/elsewhere`)
          yield* world.symlinkFixture("elsewhere", `${AGENT}/okf-memory`)
        }), "symlink")
    }))

  it.effect("okf-memory is a file", () =>
    refused((world) => world.writeFixture(`${AGENT}/okf-memory`, "not a directory"), "not-a-directory"))

  it.effect("the archive path is a file", () =>
    refused((world) => world.writeFixture(ARCHIVE, "not a directory"), "not-a-directory"))

  it.effect("a shard is a symlink", () =>
    refused((world) =>
      Effect.zipRight(seedPi(world), world.symlinkFixture("/etc/passwd", `${ARCHIVE}/user-preferences-1111111111111111.okf.md`)), "symlink"))

  it.effect("a shard is a directory", () =>
    refused((world) => Effect.zipRight(seedPi(world), world.mkdirFixture(`${ARCHIVE}/user-preferences-2222222222222222.okf.md`)), "not-a-regular-file"))

  it.effect("USER.md is a symlink", () =>
    refused((world) => Effect.zipRight(world.writeFixture(`${AGENT}/real.md`, "x\n"), world.symlinkFixture("real.md", USER)), "symlink"))

  it.effect("a shard that does not parse is reported by read, refuses edits and is left untouched", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      const broken = `${ARCHIVE}/user-preferences-3333333333333333.okf.md`
      yield* world.writeFixture(broken, "---\ntitle: [unclosed\n---\n\n- a fact nobody can read\n")
      const view = yield* asProfile(world, (p) => p.read)
      assert.deepStrictEqual(view.unparsable.map((u) => u.shard), ["user-preferences-3333333333333333.okf.md"])
      assert.strictEqual(view.entries.length, 5)
      const before = snapshot(world)
      const e = yield* asProfile(world, (p) => p.add("- x")).pipe(Effect.flip)
      assert.isTrue(e instanceof UnsafeProfile && e.reason === "unparsable-shard", String(e))
      const after = Object.fromEntries(Object.entries(snapshot(world)).filter(([rel]) => !rel.startsWith("state")))
      assert.deepStrictEqual(after, before)
    }))
})

describe("UserProfile: a journal without the digests of what its writer read", () => {
  it.effect("listing a shard as obsolete whose facts the finished profile would not hold (stale, or written by hand): the shard is kept, no fact is lost", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      const journal = { version: 1, shards: [], created: [], obsolete: [PI_SHARD_1], user: "- hello\n" }
      yield* world.writeFixture(`${AGENT}/state/user-profile/pending.json`, JSON.stringify(journal))
      yield* asProfile(world, (p) => p.add("- z"))
      const facts = (yield* asProfile(world, (p) => p.read)).entries.map((e) => e.text)
      for (const fact of ["- Prefers concise answers", "- Uses pnpm"]) assert.include(facts, fact, "the obsolete shard's facts are still in the profile")
      assert.isDefined(world.readFixture(`${ARCHIVE}/${PI_SHARD_1}`), "the shard is kept")
      assert.include(facts, "- z")
    }))
})

describe("UserProfile: an OKF file under a name the archive does not use", () => {
  it.effect("a shard renamed by hand (its hex in capitals, or any other name) is reported by read, refuses edits, and nothing is rewritten or orphaned", () =>
    Effect.gen(function*() {
      for (const renamed of ["user-preferences-FEDCBA9876543210.okf.md", "user-preferences-mine.okf.md", "Notes.OKF.MD"]) {
        const world = fresh()
        // What Pi wrote, then a person renames the second shard and points the index at its new name.
        yield* world.writeFixture(USER, `${PROFILE_POINTER}\n- Hot: answers in French\n`)
        yield* world.writeFixture(`${ARCHIVE}/${INDEX_FILE}`, PI_INDEX.replace(PI_SHARD_2, renamed))
        yield* world.writeFixture(`${ARCHIVE}/${PI_SHARD_1}`, piShard(1, "- Prefers concise answers\n- Uses pnpm\n"))
        yield* world.writeFixture(`${ARCHIVE}/${renamed}`, piShard(2, "- Works in Europe/Paris\n\n- Likes tabs\n"))
        const view = yield* asProfile(world, (p) => p.read)
        assert.deepStrictEqual(view.unparsable.map((u) => u.shard), [renamed])
        assert.match(view.unparsable[0]!.message, /its name is not one the archive uses/)
        const before = snapshot(world)
        for (const edit of [(p: UserProfile["Type"]) => p.add("- new"), (p: UserProfile["Type"]) => p.remove("pnpm")]) {
          const e = yield* asProfile(world, edit).pipe(Effect.flip)
          assert.isTrue(e instanceof UnsafeProfile && e.reason === "unparsable-shard", `${renamed}: ${String(e)}`)
        }
        const after = Object.fromEntries(Object.entries(snapshot(world)).filter(([rel]) => !rel.startsWith("state")))
        assert.deepStrictEqual(after, before, renamed)
      }
    }))
})

describe("UserProfile: files that are not what they claim are refused or reported, never rewritten", () => {
  const refusedAll = (setup: (world: MemoryWorld) => Effect.Effect<void>, reason: string, detail: RegExp) =>
    Effect.gen(function*() {
      const world = fresh()
      yield* setup(world)
      const before = snapshot(world)
      const programs: ReadonlyArray<(p: UserProfile["Type"]) => Effect.Effect<unknown, { readonly _tag: string }>> = [
        (p) => p.read,
        (p) => p.add("- x"),
        (p) => p.replace("pnpm", "- Uses bun")
      ]
      for (const program of programs) {
        const e = yield* asProfile(world, program).pipe(Effect.flip)
        assert.isTrue(e instanceof UnsafeProfile && e.reason === reason, String(e))
        assert.match((e as UnsafeProfile).message, detail)
      }
      const after = Object.fromEntries(Object.entries(snapshot(world)).filter(([rel]) => !rel.startsWith("state")))
      assert.deepStrictEqual(after, before)
    })

  it.effect("a Latin-1 USER.md (first bad byte at 5) and a binary one (at 0): UnsafeProfile not-utf8, its bytes untouched", () =>
    Effect.gen(function*() {
      yield* refusedAll((world) => world.writeFixture(USER, LATIN1_USER), "not-utf8", new RegExp(`USER\\.md.*offset ${LATIN1_OFFSET}`))
      yield* refusedAll((world) => world.writeFixture(USER, BINARY_USER), "not-utf8", /offset 0/)
    }))

  it.effect("an index that is not UTF-8 is refused too (it would otherwise be rebuilt over its bytes)", () =>
    refusedAll((world) =>
      Effect.zipRight(seedPi(world), world.writeFixture(`${ARCHIVE}/${INDEX_FILE}`, Uint8Array.from([...new TextEncoder().encode(PI_INDEX), 0xff]))), "not-utf8", /index\.okf\.md/))

  const hostileShards: ReadonlyArray<readonly [string, string | Uint8Array, string, RegExp]> = [
    ["a YAML alias bomb", aliasBombShard(), "ShardUnparsable", /alias/],
    ["front matter nested 40 deep", `---\na: ${"[".repeat(40)}${"]".repeat(40)}\n---\n\n- f\n`, "ShardUnparsable", /deeper than 32/],
    ["front matter over 64 KiB", `---\nnote: "${"n".repeat(70_000)}"\n---\n\n- f\n`, "ShardUnparsable", /over the 65536-byte limit/],
    ["a Latin-1 shard", Uint8Array.from([...new TextEncoder().encode("---\ntitle: caf"), 0xe9, ...new TextEncoder().encode("\n---\n\n- f\n")]), "ShardNotUtf8", /offset 14/]
  ]
  for (const [name, content, tag, why] of hostileShards) {
    it.effect(`a shard with ${name}: read lists it (${tag}), an edit refuses, nothing is rewritten`, () =>
      Effect.gen(function*() {
        const world = fresh()
        yield* seedPi(world)
        yield* world.writeFixture(`${ARCHIVE}/${BOMB_SHARD}`, content)
        const view = yield* asProfile(world, (p) => p.read)
        assert.deepStrictEqual(view.unparsable.map((u) => [u._tag, u.shard]), [[tag, BOMB_SHARD]])
        assert.match(view.unparsable[0]!.why, why)
        assert.deepStrictEqual(texts(view).sort(), [...PI_FACTS].sort())
        const before = snapshot(world)
        const e = yield* asProfile(world, (p) => p.add("- x")).pipe(Effect.flip)
        assert.isTrue(e instanceof UnsafeProfile && e.reason === "unparsable-shard", String(e))
        const after = Object.fromEntries(Object.entries(snapshot(world)).filter(([rel]) => !rel.startsWith("state")))
        assert.deepStrictEqual(after, before)
      }))
  }
})

describe("UserProfile: the lock", () => {
  /** A simulated process that takes the profile lock itself and keeps it. */
  const holdLock = (world: MemoryWorld) => {
    const holder = spawn(world)
    const take = Effect.gen(function*() {
      const deps = yield* depsFromContext
      yield* deps.fs.makeDirectory(`${AGENT}/state/user-profile`, { recursive: true })
      const attempt = yield* tryAcquireMarker(deps, `${AGENT}/state/user-profile/lock`, "test holder")
      assert.strictEqual(attempt._tag, "Acquired")
      return attempt._tag === "Acquired" ? attempt.release : Effect.void
    })
    return Effect.map(Effect.provide(take, holder.layer), (release) => ({ pid: holder.pid, release }))
  }

  it.live("a writer waits for a live holder as long as it lives, then writes; a dead holder's lock is reclaimed", () =>
    Effect.gen(function*() {
      const world = fresh()
      const first = yield* holdLock(world)
      const waiting = yield* Effect.fork(asProfile(world, (p) => p.add("waited for the lock"), { lockPollMs: 1 }))
      // Far longer than any fixed retry budget at this poll interval: still waiting, nothing written.
      yield* Effect.sleep("600 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiting)))
      assert.isUndefined(world.readFixtureText(USER))
      yield* first.release
      assert.strictEqual((yield* Fiber.join(waiting)).outcome, "added")
      // A holder that dies without giving the lock back: the waiting writer reclaims it.
      const second = yield* holdLock(world)
      const next = yield* Effect.fork(asProfile(world, (p) => p.add("after a dead holder"), { lockPollMs: 1 }))
      yield* Effect.sleep("100 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(next)))
      world.kill("h1", second.pid)
      assert.strictEqual((yield* Fiber.join(next)).outcome, "added")
      assertSettled(world, ["waited for the lock", "after a dead holder"], "after the lock")
    }))
})

describe("UserProfile: readers beside a writer", () => {
  it.live("a read that lists the archive just before another process edits a shard still sees the profile before or after", () =>
    Effect.gen(function*() {
      const world = fresh()
      yield* seedPi(world)
      yield* asProfile(world, (p) => p.add("- first edit"))
      const before = [...PI_FACTS, "- first edit"].sort()
      const after = before.map((f) => (f === "- Uses pnpm" ? "- Uses bun" : f)).sort()
      // The reader's process: right after it lists the archive, a writer edits a shard; the reader waits for
      // that writer to finish (or 300 ms, when the writer is itself waiting for the reader's lock).
      const host = MemoryHost.make(world, { hostname: "h1" })
      const memoryFs = MemoryFs.make(world, { uid: host.uid ?? 1000, hostname: host.hostname, pid: host.pid })
      let writer: Fiber.RuntimeFiber<unknown, unknown> | undefined
      const fs: FileSystem["Type"] = {
        ...memoryFs,
        readDirectory: (path) =>
          Effect.tap(memoryFs.readDirectory(path), () =>
            path !== ARCHIVE || writer !== undefined ? Effect.void : Effect.gen(function*() {
              writer = yield* Effect.fork(asProfile(world, (p) => p.replace("pnpm", "- Uses bun"), { lockPollMs: 1 }))
              yield* Fiber.await(writer).pipe(Effect.timeout("300 millis"), Effect.ignore)
            }))
      }
      const layer = Layer.provideMerge(AgentDir.layerWith(AGENT), Layer.merge(Layer.succeed(FileSystem, fs), Layer.succeed(Host, host)))
      const seen = texts(yield* Effect.provide(Effect.flatMap(UserProfile.make({ lockPollMs: 1 }), (p) => p.read), layer)).sort()
      assert.deepStrictEqual(seen, before)
      yield* Fiber.join(writer!)
      assert.deepStrictEqual(texts(yield* asProfile(world, (p) => p.read)).sort(), after)
    }))
})
