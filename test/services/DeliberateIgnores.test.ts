/**
 * Nothing swallowed silently (docs/errors.md "Errors", logs): each deliberate ignore at a safety boundary logs a warning
 * with its fields as annotations (through internal/warn.ts), and the program still carries on as before.
 * Report problems are tagged values beside their words (`_tag` with `message`/`why`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { PruneReport } from "../../src/domain/PruneReport.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { capturing, warningsOf } from "../support/logs.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`
const DAY = 24 * 60 * 60 * 1000

describe("deliberate ignores log a warning", () => {
  for (const dir of [".staging", ".cleanup"] as const) {
    it.scoped(`prune: a ${dir}/ that cannot be listed is a DirectoryNotListed warning, and the prune goes on`, () =>
      capturing((logged) =>
        Effect.gen(function*() {
          const world = MemoryWorld.make()
          const p = yield* spawnProcess(world)
          const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
          yield* run.release()
          yield* world.mkdirFixture(`${tenantDir}/${dir}`).pipe(Effect.ignore)
          world.injectFault({ op: "readDirectory", path: `${tenantDir}/${dir}`, count: Infinity, errno: "EACCES" })
          yield* TestClock.adjust(2 * DAY)
          const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0, maxAgeMs: 0 } })
          assert.deepStrictEqual(report.removed.map((r) => r.runId), [run.runId], "the prune still removed the inactive run")
          const warned = warningsOf(logged, "DirectoryNotListed")
          assert.strictEqual(warned.length, 1, JSON.stringify(logged))
          assert.strictEqual(warned[0]!.annotations["path"], `${tenantDir}/${dir}`)
          assert.match(String(warned[0]!.annotations["reason"]), /EACCES/)
        })))
  }

  it.scoped("acquire: stepping back from a live cleanup marker when its lease cannot be removed is a LeaseNotRemoved warning", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world, { config: { busyAttempts: 2 } })
        const first = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
        yield* first.release()
        const pruner = world.spawn("h1")
        yield* world.writeFixture(
          `${tenantDir}/.cleanup/shared`,
          JSON.stringify({ version: 1, purpose: "cleanup", host: "h1", bootId: world.bootId("h1"), pid: pruner, processStartedAt: world.startTimeOf("h1", pruner), createdAt: 0 })
        )
        world.injectFault({ op: "removeFile", path: /\/shared\/\.leases\//, count: Infinity, errno: "EACCES" })
        const busy = yield* Effect.flip(Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })))
        assert.strictEqual(busy._tag, "RunBusy")
        const warned = warningsOf(logged, "LeaseNotRemoved")
        assert.strictEqual(warned.length, 2, "one per backed-off attempt")
        for (const w of warned) assert.match(String(w.annotations["leasePath"]), /\/shared\/\.leases\//)
      })))

  it.scoped("prune: a prune marker that cannot be removed on release is a MarkerLeftInPlace warning", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world)
        yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
        world.injectFault({ op: "removeFile", path: `${tenantDir}/.prune`, errno: "EACCES" })
        yield* p.workRuns.prune({ category: "tools", tenant: "bash" })
        const warned = warningsOf(logged, "MarkerLeftInPlace")
        assert.strictEqual(warned.length, 1, JSON.stringify(logged))
        assert.strictEqual(warned[0]!.annotations["path"], `${tenantDir}/.prune`)
        assert.match(String(warned[0]!.annotations["reason"]), /cannot be removed/)
      })))

  it.scoped("acquire: a failed create whose staging directory cannot be removed is a StagingNotRemoved warning", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world)
        world.injectFault({ op: "writeFileExclusive", path: /\/\.staging\/.*\.pi-work-run\.json$/, errno: "ENOSPC" })
        world.injectFault({ op: "removeTree", path: /\/\.staging\//, errno: "EACCES" })
        const failed = yield* Effect.flip(Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })))
        assert.strictEqual(failed._tag, "FileSystemError")
        const warned = warningsOf(logged, "StagingNotRemoved")
        assert.strictEqual(warned.length, 1, JSON.stringify(logged))
        assert.match(String(warned[0]!.annotations["path"]), /\/\.staging\//)
      })))
})

describe("report problems are tagged", () => {
  it.scoped("a prune that cannot prepare removal tags its error and skip RemovalUnprepared; unowned entries say what they are", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      yield* run.release()
      yield* world.writeFixture(`${tenantDir}/.trash`, "a file where .trash belongs")
      yield* world.writeFixture(`${tenantDir}/notes.txt`, "not a run")
      yield* world.symlinkFixture("/elsewhere", `${tenantDir}/link`)
      yield* world.mkdirFixture(`${tenantDir}/foreign`)
      yield* TestClock.adjust(2 * DAY)
      const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0, maxAgeMs: 0 } })
      assert.isTrue(Schema.is(PruneReport)(report), "the report decodes with its schema")
      assert.include(report.errors.map((e) => e._tag), "RemovalUnprepared")
      assert.deepStrictEqual(report.skipped.map((s) => [s._tag, s.runId]), [["RemovalUnprepared", run.runId]])
      for (const s of report.skipped) assert.include(s.why, ".trash")
      const unowned = Object.fromEntries(report.unowned.map((u) => [u.name, u._tag]))
      assert.deepStrictEqual(unowned, { foreign: "NoManifest", link: "Symlink", "notes.txt": "NotADirectory" })
      // The words stay: fields were only added.
      for (const u of report.unowned) assert.isString(u.why)
    }))

  it.scoped("a delete: true release kept by another live lease says keptTag LeaseHeld beside keptBecause", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const a = yield* spawnProcess(world)
      const b = yield* spawnProcess(world)
      const first = yield* a.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      const second = yield* b.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      const kept = yield* first.release({ delete: true })
      assert.deepStrictEqual([kept.deleted, kept.keptTag], [false, "LeaseHeld"])
      assert.isString(kept.keptBecause)
      const gone = yield* second.release({ delete: true })
      assert.deepStrictEqual([gone.deleted, gone.keptTag], [true, undefined])
    }))
})
