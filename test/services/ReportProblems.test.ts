/**
 * Report problems are tagged values with a message (docs/errors.md "Errors"): each tag of
 * `domain/ReportProblems.ts` provoked for real in the Memory world (an injected port failure, or a file that
 * is what the tag says), checked by `_tag`, `message` and the fields kept from before.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Inventory } from "../../src/services/Inventory.js"
import { StateBackups } from "../../src/services/StateBackups.js"
import { renderVerify } from "../../src/cli/commands/backup.js"
import { AGENT_DIR, processLayer, spawnProcess } from "../support/memoryProcess.js"
import { ARCHIVE, asProfile } from "./userProfileSupport.js"

const work = `${AGENT_DIR}/work`
const tenantDir = `${work}/tools/bash`
const ROOT = "/home/user/.pi/backups/agent"

const inventoryOf = (world: MemoryWorld) =>
  Effect.map(Layer.build(Inventory.layer.pipe(Layer.provide(processLayer(world)))), (ctx) => Context.get(ctx, Inventory))

/** A world with one released run in tools/bash. */
const oneRun = Effect.gen(function*() {
  const world = MemoryWorld.make({ journal: false })
  const p = yield* spawnProcess(world)
  const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
  yield* world.writeFixture(`${run.path}/out.log`, "x".repeat(100))
  yield* run.release()
  return { world, run }
})

describe("Inventory errors are tagged with the port reason", () => {
  it.scoped("a tenant that cannot be listed is NotListed (PermissionDenied); summary and listRuns both say so", () =>
    Effect.gen(function*() {
      const { world } = yield* oneRun
      world.injectFault({ op: "readDirectory", path: tenantDir, count: Infinity, errno: "EACCES" })
      const inventory = yield* inventoryOf(world)
      for (const errors of [(yield* inventory.summary()).errors, (yield* inventory.listRuns()).errors]) {
        const problem = errors.find((e) => e.path === tenantDir)
        assert.isDefined(problem, JSON.stringify(errors))
        assert.strictEqual(problem!._tag, "NotListed")
        assert.strictEqual(problem!.reason, "PermissionDenied")
        assert.match(problem!.message, new RegExp(`readDirectory ${tenantDir}: EACCES`))
      }
    }))

  it.scoped("a tenant that cannot be examined is Unreadable (PermissionDenied)", () =>
    Effect.gen(function*() {
      const { world } = yield* oneRun
      world.injectFault({ op: "lstat", path: tenantDir, count: Infinity, errno: "EACCES" })
      const report = yield* (yield* inventoryOf(world)).summary()
      const problem = report.errors.find((e) => e.path === tenantDir)
      assert.isDefined(problem, JSON.stringify(report.errors))
      assert.strictEqual(problem!._tag, "Unreadable")
      assert.strictEqual(problem!.reason, "PermissionDenied")
      assert.match(problem!.message, /EACCES/)
    }))

  it.scoped("a size walk that fails is SizeUnmeasured: the size is not measured (never shown as a number), the problem names the path", () =>
    Effect.gen(function*() {
      const { run, world } = yield* oneRun
      world.injectFault({ op: "measureTree", path: run.path, count: Infinity, errno: "EIO" })
      const list = yield* (yield* inventoryOf(world)).listRuns()
      assert.deepStrictEqual(list.runs.map((r) => r.size), [{ bytes: 0, apparentBytes: 0, entries: 0, complete: false, measured: false }])
      assert.deepStrictEqual(list.errors.map((e) => [e._tag, e.path, e.reason]), [["SizeUnmeasured", run.path, "Unknown"]])
      assert.match(list.errors[0]!.message, new RegExp(`^size of ${run.path} not measured: measureTree ${run.path}: EIO`))
    }))
})

// ---------------------------------------------------------------------------------------------------------

const backupsLayer = (world: MemoryWorld) =>
  StateBackups.layerWith({ root: ROOT }).pipe(Layer.provideMerge(AgentDir.layerWith(AGENT_DIR)), Layer.provideMerge(processLayer(world)))

const withBackups = <A, E>(world: MemoryWorld, use: (b: StateBackups["Type"], fs: FileSystem["Type"]) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.provide(Effect.flatMap(Effect.all([StateBackups, FileSystem]), ([b, fs]) => use(b, fs)), backupsLayer(world)))

const seedState = (world: MemoryWorld) =>
  Effect.gen(function*() {
    yield* world.writeFixture(`${AGENT_DIR}/state/a.json`, "{\"a\":1}")
    yield* world.writeFixture(`${AGENT_DIR}/state/gone.txt`, "going")
    yield* world.writeFixture(`${AGENT_DIR}/state/locked.txt`, "locked")
    yield* world.writeFixture(`${AGENT_DIR}/state/dir/x.txt`, "x")
    yield* world.writeFixture(`${AGENT_DIR}/MEMORY.md`, "# memory")
    yield* world.symlinkFixture("../MEMORY.md", `${AGENT_DIR}/state/link`)
  })

describe("state snapshots: skipped entries and verify findings are tagged", () => {
  it.effect("create: a file that vanished is Vanished, one that cannot be read Unreadable; problems lists both, in order", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      yield* seedState(world)
      world.injectFault({ op: "copyFileStamped", path: `${AGENT_DIR}/state/gone.txt`, count: Infinity, errno: "ENOENT" })
      world.injectFault({ op: "copyFileStamped", path: `${AGENT_DIR}/state/locked.txt`, count: Infinity, errno: "EACCES" })
      const created = yield* withBackups(world, (b) => b.create())
      assert.deepStrictEqual(created.skipped.map((s) => [s._tag, s.path]), [
        ["Vanished", "agent/state/gone.txt"],
        ["Unreadable", "agent/state/locked.txt"]
      ])
      assert.strictEqual(created.skipped[0]!.reason, "vanished during the backup")
      assert.strictEqual(created.skipped[0]!.message, "not in the snapshot: agent/state/gone.txt: vanished during the backup")
      assert.match(created.skipped[1]!.message, /^not in the snapshot: agent\/state\/locked\.txt: unreadable: .*EACCES/)
      assert.deepStrictEqual(created.problems, created.skipped)
      assert.deepStrictEqual(created.changedDuringBackup, [])
    }))

  it.effect("verify: each kind of damage has its tag; corrupt and missing stay the path lists; the CLI says why", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      yield* seedState(world)
      const [one, two, three] = yield* withBackups(world, (b) => Effect.all([b.create(), b.create(), b.create()]))
      const snap = (id: string, rel: string) => `${ROOT}/${id}/${rel}`
      yield* withBackups(world, (_b, fs) =>
        Effect.gen(function*() {
          // one: content, target, type, an unreadable file, a missing one.
          yield* fs.writeFileAtomic(snap(one!.id, "agent/state/a.json"), new TextEncoder().encode("{\"a\":2}"))
          yield* fs.writeFileAtomic(snap(one!.id, "agent/state/locked.txt"), new TextEncoder().encode("longer than it was"))
          yield* fs.removeFile(snap(one!.id, "agent/state/link"))
          yield* fs.symlink("elsewhere", snap(one!.id, "agent/state/link"))
          yield* fs.removeFile(snap(one!.id, "agent/state/dir/x.txt"))
          yield* fs.removeDirectory(snap(one!.id, "agent/state/dir"))
          yield* fs.writeFileAtomic(snap(one!.id, "agent/state/dir"), new TextEncoder().encode("not a dir"))
          yield* fs.removeFile(snap(one!.id, "agent/MEMORY.md"))
          // two: no manifest; three: a manifest that does not decode.
          yield* fs.removeFile(snap(two!.id, "manifest.json"))
          yield* fs.writeFileAtomic(snap(three!.id, "manifest.json"), new TextEncoder().encode("{ not json"))
        }))
      world.injectFault({ op: "hashFile", path: snap(one!.id, "agent/state/gone.txt"), count: Infinity, errno: "EIO" })
      const v = yield* withBackups(world, (b) => b.verify())
      assert.isFalse(v.ok)
      const tags = Object.fromEntries(v.problems.map((p) => [p.path, p._tag]))
      assert.deepInclude(tags, {
        [`${one!.id}/agent/state/a.json`]: "ContentMismatch",
        [`${one!.id}/agent/state/locked.txt`]: "ContentMismatch",
        [`${one!.id}/agent/state/link`]: "TargetMismatch",
        [`${one!.id}/agent/state/dir`]: "TypeMismatch",
        [`${one!.id}/agent/state/gone.txt`]: "Unreadable",
        [`${one!.id}/agent/MEMORY.md`]: "Missing",
        [`${two!.id}/manifest.json`]: "ManifestMissing",
        [`${three!.id}/manifest.json`]: "ManifestUnusable"
      })
      for (const p of v.problems) assert.isTrue(p.message.startsWith(`${p.path}: `), p.message)
      const message = (path: string) => v.problems.find((p) => p.path === path)!.message
      assert.strictEqual(message(`${one!.id}/agent/state/a.json`), `${one!.id}/agent/state/a.json: its SHA-256 differs from the manifest's`)
      assert.strictEqual(message(`${one!.id}/agent/state/locked.txt`), `${one!.id}/agent/state/locked.txt: 18 bytes, the manifest records 6`)
      assert.match(message(`${one!.id}/agent/state/link`), /points to elsewhere, not \.\.\/MEMORY\.md/)
      assert.match(message(`${one!.id}/agent/state/dir`), /is a regular file, the manifest records a directory/)
      assert.match(message(`${one!.id}/agent/state/gone.txt`), /cannot be read: .*EIO/)
      assert.match(message(`${three!.id}/manifest.json`), /manifest is unusable/)
      assert.sameMembers([...v.missing], [`${one!.id}/agent/MEMORY.md`, `${two!.id}/manifest.json`])
      assert.sameMembers([...v.corrupt], v.problems.filter((p) => p._tag !== "Missing" && p._tag !== "ManifestMissing").map((p) => p.path))
      assert.strictEqual(v.corrupt.length + v.missing.length, v.problems.length)
      const text = renderVerify(v).text
      assert.include(text, `  corrupt  ${message(`${one!.id}/agent/state/a.json`)}\n`)
      assert.include(text, `  missing  ${one!.id}/agent/MEMORY.md: gone (the manifest records it)\n`)
    }))
})

// ---------------------------------------------------------------------------------------------------------

describe("user profile: shards that cannot be read are tagged", () => {
  it.effect("a shard without front matter is ShardUnparsable, one over the archive file limit ShardTooLarge", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      const broken = "user-preferences-1111111111111111.okf.md"
      const huge = "user-preferences-2222222222222222.okf.md"
      yield* world.writeFixture(`${ARCHIVE}/${broken}`, "no front matter here\n")
      yield* world.writeFixture(`${ARCHIVE}/${huge}`, "x".repeat(5 * 1024 * 1024))
      const view = yield* asProfile(world, (profile) => profile.read)
      const byShard = Object.fromEntries(view.unparsable.map((u) => [u.shard, u]))
      assert.strictEqual(byShard[broken]!._tag, "ShardUnparsable")
      assert.match(byShard[broken]!.why, /no front matter/)
      assert.strictEqual(byShard[broken]!.message, `shard ${broken} does not parse: ${byShard[broken]!.why}`)
      assert.strictEqual(byShard[huge]!._tag, "ShardTooLarge")
      assert.match(byShard[huge]!.message, new RegExp(`^shard ${huge} is not read: larger than \\d+ bytes$`))
    }))
})
