import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FastCheck as fc, Fiber, Runtime, Scope, TestClock } from "effect"
import { PROCESS_RUN_KEPT } from "../../src/domain/PruneReport.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { doctorAt } from "../support/doctor.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`
const text = (world: MemoryWorld, path: string) => world.readFixtureText(path)
const exists = (world: MemoryWorld, path: string) => world.tree(path)[path] !== undefined
const leasesOf = (world: MemoryWorld, runPath: string) =>
  Object.keys(world.tree(`${runPath}/.leases`)).filter((p) => p !== `${runPath}/.leases`)
const DAY = 24 * 60 * 60 * 1000

describe("WorkRuns on the Memory layer", () => {
  it.scoped("a generated run appears with its manifest and the caller's lease; closing the scope releases it", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const scope = yield* Scope.make()
      const run = yield* Scope.extend(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }), scope)
      assert.strictEqual(run.kind, "generated")
      assert.strictEqual(run.path, `${tenantDir}/${run.runId}`)
      const manifest = JSON.parse(text(world, `${run.path}/.pi-work-run.json`)!)
      assert.deepStrictEqual(
        { v: manifest.version, c: manifest.category, t: manifest.tenant, r: manifest.runId, k: manifest.kind, by: manifest.createdBy },
        { v: 2, c: "tools", t: "bash", r: run.runId, k: "generated", by: { host: "h1", pid: p.host.pid } }
      )
      assert.isUndefined(manifest.releasedAt)
      assert.deepStrictEqual(leasesOf(world, run.path), [run.leasePath])
      const lease = JSON.parse(text(world, run.leasePath)!)
      assert.strictEqual(lease.pid, p.host.pid)
      assert.strictEqual(lease.bootId, world.bootId("h1"))
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(leasesOf(world, run.path), [])
      assert.isNumber(JSON.parse(text(world, `${run.path}/.pi-work-run.json`)!).releasedAt)
      // Nothing is left in staging.
      assert.deepStrictEqual(Object.keys(world.tree(`${tenantDir}/.staging`)), [`${tenantDir}/.staging`])
    }))

  it.scoped("an interrupted holder releases its lease", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      let path = ""
      const fiber = yield* Effect.fork(Effect.scoped(Effect.gen(function*() {
        const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
        path = run.path
        return yield* Effect.never
      })))
      while (path === "") yield* Effect.yieldNow()
      while (leasesOf(world, path).length === 0) yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(leasesOf(world, path), [])
    }))

  it.scoped("a failing program releases its lease", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      let path = ""
      const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
        const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
        path = run.path
        return yield* Effect.fail("boom")
      })))
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(leasesOf(world, path), [])
    }))

  it.scoped("a named run is shared: each holder has its own lease; delete waits for the last holder", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const a = yield* spawnProcess(world)
      const b = yield* spawnProcess(world)
      const ra = yield* a.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      const rb = yield* b.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      assert.strictEqual(ra.path, rb.path)
      assert.strictEqual(rb.kind, "named")
      assert.strictEqual(leasesOf(world, ra.path).length, 2)
      const first = yield* ra.release({ delete: true })
      assert.deepStrictEqual([first.deleted, first.keptBecause], [false, "another live lease holds it"])
      assert.isTrue(exists(world, ra.path))
      assert.deepStrictEqual((yield* ra.release()).released, false, "release is idempotent")
      const second = yield* rb.release({ delete: true })
      assert.isTrue(second.deleted)
      assert.isFalse(exists(world, ra.path))
    }))

  it.scoped("releasedAt is stamped in place (same length, no temp file); a manifest without room is replaced whole, with room", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const manifestPath = (run: { path: string }) => `${run.path}/.pi-work-run.json`
      const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "roomy", retention: false })
      const created = text(world, manifestPath(run))!
      assert.match(created, /^\{.*\} {32}\n$/, "JSON, 32 spaces of room, newline")
      world.clearJournal()
      yield* run.release()
      const stamped = text(world, manifestPath(run))!
      assert.strictEqual(stamped.length, created.length)
      assert.isNumber(JSON.parse(stamped).releasedAt)
      const ops = world.journal.filter((e) => e.path.startsWith(run.path)).map((e) => e.op)
      assert.include(ops, "writeFileInPlace")
      assert.notInclude(ops, "writeFileAtomic", "no temp file renamed over the manifest")
      // A second holder re-stamps the same bytes' length.
      const again = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "roomy", retention: false })
      yield* again.release()
      assert.strictEqual(text(world, manifestPath(run))!.length, created.length)
      // A manifest written by an older build has no room: the stamp replaces it whole, with room from then on.
      const compact = JSON.stringify({ version: 2, category: "tools", tenant: "bash", runId: "compact", kind: "named", createdAt: 0, createdBy: { host: "h1", pid: 1 } })
      yield* world.writeFixture(`${tenantDir}/compact/.pi-work-run.json`, compact, { mode: 0o600 })
      const old = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "compact", retention: false })
      yield* old.release()
      const replaced = text(world, manifestPath(old))!
      assert.isNumber(JSON.parse(replaced).releasedAt)
      assert.match(replaced, /\} {32}\n$/)
    }))

  it.scoped("never adopts an unowned directory, a mismatched manifest, a symlinked run or a symlinked .leases", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      yield* world.writeFixture(`${tenantDir}/stray/data.txt`, "not ours")
      yield* world.writeFixture(`${tenantDir}/other/.pi-work-run.json`, JSON.stringify({ version: 1, category: "tools", tenant: "bash", runId: "elsewhere", createdAt: 1 }))
      yield* world.writeFixture("/outside/target/keep.txt", "canary")
      yield* world.symlinkFixture("/outside/target", `${tenantDir}/linked`)
      yield* world.writeFixture(`${tenantDir}/trap/.pi-work-run.json`, JSON.stringify({ version: 1, category: "tools", tenant: "bash", runId: "trap", createdAt: 1 }))
      yield* world.symlinkFixture("/outside/target", `${tenantDir}/trap/.leases`)
      const before = world.tree("/outside")
      const tries = yield* Effect.forEach(["stray", "other", "linked", "trap"], (runId) =>
        Effect.flip(Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", runId, retention: false }))))
      assert.deepStrictEqual(tries.map((e) => e._tag), ["UnownedRun", "ManifestMismatch", "UnownedRun", "UnownedRun"])
      assert.include(tries[0]!.message, "no manifest")
      assert.strictEqual(text(world, `${tenantDir}/stray/data.txt`), "not ours")
      assert.deepStrictEqual(world.tree("/outside"), before)
    }))

  it.scoped("invalid segments are refused with the rule and the value", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const e = yield* Effect.flip(Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "Bash" })))
      assert.strictEqual(e._tag, "InvalidSegment")
      if (e._tag === "InvalidSegment") assert.deepStrictEqual([e.field, e.value, e.rule], ["tenant", "Bash", "uppercase"])
      const n = yield* Effect.flip(Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "nul.txt" })))
      assert.include(n.message, "device name")
      assert.isFalse(exists(world, `${AGENT_DIR}/work`), "nothing is created for a refused call")
    }))

  it.scoped("a live cleanup marker makes acquire back off and fail RunBusy; a dead one is ignored", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const first = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      yield* first.release()
      const pruner = world.spawn("h1")
      const marker = (pid: number) =>
        JSON.stringify({ version: 1, purpose: "cleanup", host: "h1", bootId: world.bootId("h1"), pid, processStartedAt: world.startTimeOf("h1", pid), createdAt: 0 })
      yield* world.writeFixture(`${tenantDir}/.cleanup/shared`, marker(pruner))
      const busy = yield* Effect.flip(Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })))
      assert.strictEqual(busy._tag, "RunBusy")
      assert.deepStrictEqual(leasesOf(world, first.path), [], "the backed-off acquirer left no lease (I4)")
      world.kill("h1", pruner)
      const again = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      assert.strictEqual(leasesOf(world, again.path).length, 1)
    }))

  // I1 with the marker gone: a pruner that read the leases before our lease landed renames the run into
  // .trash and releases (or dies holding) its marker, all between our lease write and our marker check.
  for (const pruner of ["released", "died holding"] as const) {
    it.scoped(`an acquirer whose run was quarantined while it checked the marker (${pruner} it) starts over`, () =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world)
        const first = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
        yield* first.release()
        const markerPath = `${tenantDir}/.cleanup/shared`
        const q = yield* spawnProcess(world)
        const quarantine = Effect.gen(function*() {
          yield* q.fs.makeDirectory(`${tenantDir}/.cleanup`, { mode: 0o700 }).pipe(Effect.ignore)
          yield* q.fs.makeDirectory(`${tenantDir}/.trash`, { mode: 0o700 }).pipe(Effect.ignore)
          const marker = { version: 1, purpose: "cleanup", host: "h1", bootId: world.bootId("h1"), pid: q.host.pid, processStartedAt: world.startTimeOf("h1", q.host.pid), createdAt: 0 }
          yield* q.fs.writeFileExclusive(markerPath, new TextEncoder().encode(JSON.stringify(marker)))
          yield* q.fs.rename(first.path, `${tenantDir}/.trash/shared.q`, { sync: false })
          if (pruner === "released") yield* q.fs.removeFile(markerPath)
          else world.kill("h1", q.host.pid)
        }).pipe(Effect.orDie)
        let fired = false
        const a = yield* spawnProcess(world, {
          wrapFs: (fs) => ({
            ...fs,
            lstat: (path) => {
              if (path !== markerPath || fired) return fs.lstat(path)
              fired = true
              return Effect.zipRight(quarantine, fs.lstat(path))
            }
          })
        })
        const run = yield* a.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
        assert.isTrue(fired, "the pruner acted between the lease write and the marker check")
        assert.isTrue(exists(world, run.leasePath), "the lease handed out is in the run at its path")
        assert.deepStrictEqual(leasesOf(world, run.path), [run.leasePath])
        assert.isTrue(exists(world, `${run.path}/.pi-work-run.json`))
      }))
  }

  it.scoped("getProcessWorkRun hands concurrent first callers the same run", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const runs = yield* Effect.all(Array.from({ length: 5 }, () => p.workRuns.getProcessWorkRun({ category: "tools", tenant: "bash" })), { concurrency: "unbounded" })
      assert.strictEqual(new Set(runs.map((r) => r.path)).size, 1)
      assert.strictEqual(leasesOf(world, runs[0]!.path).length, 1)
      const other = yield* p.workRuns.getProcessWorkRun({ category: "tools", tenant: "zsh" })
      assert.notStrictEqual(other.path, runs[0]!.path)
    }))

  it.effect.prop(
    "getProcessWorkRun: one run per (category, tenant), whatever the interleaving of first callers",
    [
      fc.array(fc.record({ tenant: fc.constantFrom("bash", "zsh", "fish"), yields: fc.integer({ min: 0, max: 4 }) }), { minLength: 2, maxLength: 8 }),
      fc.record({ seed: fc.integer(), maxYields: fc.integer({ min: 0, max: 3 }) })
    ],
    ([calls, jitter]) =>
      Effect.scoped(Effect.gen(function*() {
        const world = MemoryWorld.make({ jitter })
        const p = yield* spawnProcess(world)
        // Each caller is a root fiber of its own, as the facade's calls are (forked on the runtime, not children
        // of one fiber); some start at once, others after a few yields of their own.
        const runtime = yield* Effect.runtime<never>()
        const call = (tenant: string) => p.workRuns.getProcessWorkRun({ category: "tools", tenant })
        const fibers = calls.map((c) =>
          Runtime.runFork(runtime)(c.yields === 0 ? call(c.tenant) : Effect.zipRight(Effect.repeatN(Effect.yieldNow(), c.yields - 1), call(c.tenant))))
        const runs = yield* Effect.forEach(fibers, Fiber.join)
        for (const tenant of new Set(calls.map((c) => c.tenant))) {
          const paths = new Set(runs.filter((r) => r.tenant === tenant).map((r) => r.path))
          assert.strictEqual(paths.size, 1, `${tenant}: ${[...paths].join(", ")}`)
          const runDirs = Object.keys(world.tree(`${AGENT_DIR}/work/tools/${tenant}`)).filter((d) => /\/work\/tools\/[a-z]+\/[0-9]/.test(d) && d.split("/").length === `${AGENT_DIR}/work/tools/${tenant}/x`.split("/").length)
          assert.deepStrictEqual(runDirs, [...paths], "one run directory in the tenant")
        }
      })),
    { fastCheck: { numRuns: 60 } }
  )

  it.scoped("releasing the process run, even with delete, keeps it for every other caller and says why", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const run = yield* p.workRuns.getProcessWorkRun({ category: "tools", tenant: "bash" })
      const outcome = yield* run.release({ delete: true })
      assert.deepStrictEqual(outcome, { released: false, deleted: false, keptTag: "ProcessRun", keptBecause: PROCESS_RUN_KEPT })
      assert.isTrue(exists(world, `${run.path}/.pi-work-run.json`))
      assert.deepStrictEqual(leasesOf(world, run.path), [run.leasePath])
      const again = yield* p.workRuns.getProcessWorkRun({ category: "tools", tenant: "bash" })
      assert.strictEqual(again.path, run.path)
      yield* p.fs.writeFileExclusive(`${again.path}/out.txt`, new TextEncoder().encode("still here"))
      assert.strictEqual(text(world, `${run.path}/out.txt`), "still here")
    }))

  it.scoped("workRootEnv gives the child its root and run directory", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      assert.deepStrictEqual(p.workRuns.workRootEnv(), { PI_WORK_ROOT: `${AGENT_DIR}/work` })
      assert.deepStrictEqual(p.workRuns.workRootEnv(run), {
        PI_WORK_ROOT: `${AGENT_DIR}/work`,
        PI_WORK_RUN_DIR: run.path,
        PI_WORK_RUN_ID: run.runId,
        PI_WORK_CATEGORY: "tools",
        PI_WORK_TENANT: "bash"
      })
    }))
})

describe("pruneWorkTenant on the Memory layer", () => {
  it.scoped("removes released runs past the count, keeps active ones, reports unowned entries, never follows links", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const released: Array<string> = []
      for (let i = 0; i < 4; i++) {
        const run = yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
        released.push(run.runId)
        yield* world.writeFixture(`${run.path}/out.txt`, "x".repeat(100))
        yield* TestClock.adjust(1000)
      }
      const active = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      yield* world.writeFixture("/outside/big/data.bin", "y".repeat(5000))
      yield* world.symlinkFixture("/outside/big", `${tenantDir}/${released[0]!}/escape`)
      yield* world.symlinkFixture("/outside/big", `${tenantDir}/link-run`)
      yield* world.writeFixture(`${tenantDir}/stray/keep.txt`, "mine")
      const outside = world.tree("/outside")
      const dry = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 1 }, dryRun: true })
      const treeAfterDry = world.tree(tenantDir)
      const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 1 } })
      assert.deepStrictEqual(dry.removed.map((r) => r.runId), report.removed.map((r) => r.runId), "dry run = execution")
      assert.deepStrictEqual(report.removed.map((r) => [r.runId, r.reason]), released.slice(0, 3).map((id) => [id, "count"]))
      assert.deepStrictEqual(report.kept, [released[3]])
      assert.deepStrictEqual(report.active, [active.runId])
      assert.deepStrictEqual(report.unowned.map((u) => u.name).sort(), ["link-run", "stray"])
      assert.isFalse(dry.busy || report.busy)
      assert.isTrue(exists(world, active.path))
      assert.strictEqual(text(world, `${tenantDir}/stray/keep.txt`), "mine")
      assert.deepStrictEqual(world.tree("/outside"), outside, "symlink targets untouched (I3)")
      assert.isTrue(treeAfterDry[`${tenantDir}/${released[0]!}`] !== undefined, "dry run touched nothing")
      assert.deepStrictEqual(Object.keys(world.tree(`${tenantDir}/.trash`)), [`${tenantDir}/.trash`], "trash emptied")
      assert.strictEqual(report.bytesBefore! - report.bytesAfter!, report.removed.reduce((n, r) => n + r.bytes!, 0))
    }))

  it.scoped("age uses the latest of releasedAt, heartbeat and createdAt; a killed holder's run is reclaimed", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const doomed = yield* spawnProcess(world)
      const orphan = yield* Effect.scoped(Effect.gen(function*() {
        const run = yield* doomed.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
        world.kill("h1", doomed.host.pid)
        return run
      })).pipe(Effect.provide(TestClock.defaultTestClock))
      const fresh = yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
      yield* TestClock.adjust(31 * DAY)
      const recent = yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
      const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash" })
      assert.deepStrictEqual(report.removed.map((r) => [r.runId, r.reason]).sort(), [[fresh.runId, "age"], [orphan.runId, "age"]].sort())
      assert.deepStrictEqual(report.kept, [recent.runId])
    }))

  it.scoped("a remote host's lease holds until its heartbeat is stale", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const local = yield* spawnProcess(world, { hostname: "h1" })
      // Heartbeats on the TestClock: this simulation needs remote beats at every 5 simulated minutes.
      const remote = yield* spawnProcess(world, { hostname: "h2" })
      const run = yield* remote.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      const policy = { maxInactiveRuns: 0 }
      const held = yield* local.workRuns.prune({ category: "tools", tenant: "bash", policy })
      assert.deepStrictEqual(held.active, [run.runId])
      // The remote heartbeat keeps refreshing while the clock moves…
      yield* TestClock.adjust(40 * 60 * 1000)
      assert.deepStrictEqual((yield* local.workRuns.prune({ category: "tools", tenant: "bash", policy })).active, [run.runId])
      // …until the remote holder stops (its machine is gone): 15 minutes later it is stale.
      world.crashAfter(0, { hostname: "h2" })
      yield* TestClock.adjust(16 * 60 * 1000)
      const report = yield* local.workRuns.prune({ category: "tools", tenant: "bash", policy })
      assert.deepStrictEqual(report.removed.map((r) => r.runId), [run.runId])
    }))

  it.scoped("refuses unsafe roots with UnsafeRoot and deletes nothing", () =>
    Effect.gen(function*() {
      for (const damage of ["group-writable", "foreign-owner", "symlink"] as const) {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world)
        yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
        if (damage === "group-writable") yield* p.fs.chmod(`${AGENT_DIR}/work/tools`, 0o770)
        if (damage === "foreign-owner") world.chown(tenantDir, 0)
        if (damage === "symlink") {
          yield* p.fs.rename(`${AGENT_DIR}/work`, "/elsewhere")
          yield* world.symlinkFixture("/elsewhere", `${AGENT_DIR}/work`)
        }
        const before = world.tree("/")
        const e = yield* Effect.flip(p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } }))
        assert.strictEqual(e._tag, "UnsafeRoot", damage)
        if (e._tag === "UnsafeRoot") assert.strictEqual(e.reason, damage === "group-writable" ? "group-or-world-writable" : damage)
        assert.deepStrictEqual(world.tree("/"), before)
      }
    }))

  it.scoped("a live prune marker makes a second pruner report busy; a dead one is reclaimed", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
      const other = world.spawn("h1")
      yield* world.writeFixture(`${tenantDir}/.prune`, JSON.stringify({ version: 1, purpose: "prune", host: "h1", bootId: world.bootId("h1"), pid: other, processStartedAt: world.startTimeOf("h1", other), createdAt: 0 }))
      const busy = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
      assert.isTrue(busy.busy)
      assert.strictEqual(busy.removed.length, 0)
      world.kill("h1", other)
      const done = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
      assert.isFalse(done.busy)
      assert.strictEqual(done.removed.length, 1)
      assert.isFalse(exists(world, `${tenantDir}/.prune`))
    }))

  it.scoped("an incomplete walk counts the run as over budget (unmeasured) and flags the report", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const run = yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
      for (let i = 0; i < 20; i++) yield* world.writeFixture(`${run.path}/f${i}`, "z")
      const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxEntries: 5 }, dryRun: true })
      assert.isTrue(report.incomplete)
      assert.deepStrictEqual(report.removed.map((r) => [r.runId, r.reason, r.bytes]), [[run.runId, "unmeasured", null]])
      assert.deepStrictEqual(report.cutShort.map((c) => [c._tag, c.runId, c.active]), [["EntryBudget", run.runId, false]])
      assert.isNull(report.bytesBefore)
    }))

  it.scoped("the opportunistic prune runs in the background at most once an hour per tenant", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const firstScope = yield* Scope.make()
      const first = yield* Scope.extend(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: { maxInactiveRuns: 0 } }), firstScope)
      yield* p.workRuns.awaitBackground
      assert.isDefined(world.tree(`${tenantDir}/.last-prune`)[`${tenantDir}/.last-prune`], "the background prune ran")
      assert.isTrue(exists(world, first.path), "it never removes the held run")
      yield* Scope.close(firstScope, Exit.void)
      // Within the hour: no second prune, so the released run stays.
      yield* TestClock.adjust(30 * 60 * 1000)
      yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: { maxInactiveRuns: 0 } }))
      yield* p.workRuns.awaitBackground
      assert.isTrue(exists(world, first.path))
      yield* TestClock.adjust(61 * 60 * 1000)
      yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: { maxInactiveRuns: 0 } }))
      yield* p.workRuns.awaitBackground
      assert.isFalse(exists(world, first.path))
    }))

  it.scoped("a crash mid-acquire leaves only a staged entry: the doctor reports it, a later prune removes it", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
      const victim = yield* spawnProcess(world)
      world.crashAfter(1, { pid: victim.host.pid })
      const failed = yield* Effect.flip(Effect.scoped(victim.workRuns.acquire({ category: "tools", tenant: "bash", runId: "job", retention: false })))
      assert.strictEqual(failed._tag, "FileSystemError")
      world.recover()
      world.kill("h1", victim.host.pid)
      assert.isFalse(exists(world, `${tenantDir}/job`), "the run never appeared half-made")
      const report = yield* doctorAt(AGENT_DIR).pipe(Effect.provideService(FileSystem, p.fs), Effect.provideService(Host, p.host))
      assert.deepStrictEqual(report.findings.map((f) => f.code), ["work-abandoned-staging"])
      yield* TestClock.adjust(2 * 60 * 60 * 1000)
      yield* p.workRuns.prune({ category: "tools", tenant: "bash" })
      assert.deepStrictEqual(Object.keys(world.tree(`${tenantDir}/.staging`)), [`${tenantDir}/.staging`])
      const joined = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "job", retention: false })
      assert.strictEqual(joined.kind, "named")
    }))

  it.scoped("a manifest that is a symlink, a directory, oversized or invalid makes the run unowned, with why", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      yield* Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false }))
      const v1 = (runId: string) => JSON.stringify({ version: 1, category: "tools", tenant: "bash", runId, createdAt: 0 })
      yield* world.writeFixture("/outside/m.json", v1("linked"))
      yield* world.mkdirFixture(`${tenantDir}/linked`)
      yield* world.symlinkFixture("/outside/m.json", `${tenantDir}/linked/.pi-work-run.json`)
      yield* world.mkdirFixture(`${tenantDir}/dir/.pi-work-run.json`)
      yield* world.writeFixture(`${tenantDir}/big/.pi-work-run.json`, v1("big").slice(0, -1) + " ".repeat(5000) + "}")
      yield* world.writeFixture(`${tenantDir}/junk/.pi-work-run.json`, "{not json")
      const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxAgeMs: 0, maxInactiveRuns: 0 } })
      const why = Object.fromEntries(report.unowned.map((u) => [u.name, u.why]))
      assert.strictEqual(why.linked, "manifest is a symlink")
      assert.strictEqual(why.dir, "manifest is not a regular file")
      assert.strictEqual(why.big, "manifest is oversized (> 4096 bytes)")
      assert.include(why.junk, "manifest not valid JSON")
      for (const name of ["linked", "dir", "big", "junk"]) assert.isTrue(exists(world, `${tenantDir}/${name}`))
    }))
})
