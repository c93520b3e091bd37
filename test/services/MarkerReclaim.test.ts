/**
 * Reclaiming a dead marker never moves a live one (I1): reclaimers of one path are serialised by
 * `<path>.reclaim`, and a marker's release unlinks only the inode it created.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Scope, TestClock } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { DEFAULT_STALE_UNREADABLE_MS, REMOTE_MARGIN_MS } from "../../src/domain/Liveness.js"
import { DEFAULT_REMOTE_LEASE_TTL_MS } from "../../src/domain/Retention.js"
import { doctorAt } from "../support/doctor.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import type { Deps } from "../../src/services/internal/deps.js"
import { judgeMarker, reclaimDeadMarker, tryAcquireMarker } from "../../src/services/internal/markers.js"
import { ensureLibraryDir, quarantineOwnedRun } from "../../src/services/internal/removeRun.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`
const markerPath = `${tenantDir}/.cleanup/shared`
const depsOf = (p: { readonly fs: FileSystem["Type"]; readonly host: Host["Type"] }): Deps => ({
  fs: p.fs,
  host: p.host,
  remoteLeaseTtlMs: DEFAULT_REMOTE_LEASE_TTL_MS,
  staleUnreadableMs: DEFAULT_STALE_UNREADABLE_MS
})
const exists = (world: MemoryWorld, path: string) => world.tree(path)[path] !== undefined

/** A marker written by a process that then died. */
const deadMarker = (world: MemoryWorld, path: string, purpose: string) =>
  Effect.gen(function*() {
    const d = yield* spawnProcess(world)
    const body = { version: 1, purpose, host: "h1", bootId: world.bootId("h1"), pid: d.host.pid, processStartedAt: world.startTimeOf("h1", d.host.pid), createdAt: 0 }
    yield* d.fs.writeFileExclusive(path, new TextEncoder().encode(JSON.stringify(body))).pipe(Effect.orDie)
    world.kill("h1", d.host.pid)
  })

describe("reclaiming a dead marker (Memory)", () => {
  it.scoped("two reclaimers of one dead cleanup marker and an acquirer: the acquirer's run is never quarantined, no live marker is removed", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const first = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      yield* first.release()
      for (const dir of [".cleanup", ".trash"]) yield* ensureLibraryDir(depsOf(p), `${tenantDir}/${dir}`).pipe(Effect.orDie)
      yield* deadMarker(world, markerPath, "cleanup")
      // X (a `release({ delete: true })`) judged the dead marker; it acts only later, with that judgement.
      let xActs = false
      let acquirerHeld: { leasePath: string; path: string } | undefined
      let acquirerBusy = false
      const a = yield* spawnProcess(world, { config: { busyAttempts: 1 } })
      // The acquirer comes in at X's first touch of the marker path after its judgement: the reviewer's window
      // (with a rename aside, the path was empty here).
      // Held in the test's scope: the acquirer keeps its lease for the whole interleaving.
      const scope = yield* Effect.scope
      const acquire = Scope.extend(a.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false }), scope).pipe(
        Effect.match({ onFailure: (e) => { acquirerBusy = e._tag === "RunBusy" }, onSuccess: (run) => { acquirerHeld = run } })
      )
      let fired = false
      const touch = <A, E>(path: string, op: Effect.Effect<A, E>): Effect.Effect<A, E> =>
        path === markerPath && xActs && !fired ? Effect.zipRight(Effect.sync(() => { fired = true }), op).pipe(Effect.zipLeft(acquire)) : op
      const x = yield* spawnProcess(world, {
        wrapFs: (fs) => ({
          ...fs,
          lstat: (path) => touch(path, fs.lstat(path)),
          rename: (from, to, o) => touch(from, fs.rename(from, to, o)),
          removeFile: (path) => touch(path, fs.removeFile(path))
        })
      })
      const xDeps = depsOf(x)
      const judged = yield* judgeMarker(xDeps, markerPath)
      assert.isDefined(judged)
      assert.isFalse(judged!.alive, "the pruner that left the marker is dead")
      let yMarker: Uint8Array | undefined
      let xOutcome: string | undefined
      // Y (a prune) reclaims the marker, takes its own, reads the run's leases (none) — then X acts, and A.
      let yRead = false
      const y = yield* spawnProcess(world, {
        wrapFs: (fs) => ({
          ...fs,
          readDirectory: (path) =>
            path !== `${first.path}/.leases` || yRead ? fs.readDirectory(path) : Effect.tap(fs.readDirectory(path), () =>
              Effect.gen(function*() {
                yRead = true
                yMarker = world.tree(markerPath)[markerPath] === undefined ? undefined : yield* fs.readFile(markerPath).pipe(Effect.orDie)
                xActs = true
                xOutcome = yield* reclaimDeadMarker(xDeps, markerPath, judged!)
              }))
        })
      })
      const outcome = yield* quarantineOwnedRun(depsOf(y), { tenantDir, category: "tools", tenant: "bash", runId: "shared" })
      assert.isTrue(yRead && fired, "X and the acquirer acted inside Y's window")
      assert.isDefined(yMarker, "Y held its own marker when it read the leases")
      assert.strictEqual(xOutcome, "changed", "X saw the marker was no longer the one it judged")
      assert.isTrue(acquirerBusy || acquirerHeld !== undefined)
      // I1: a run handed out is never quarantined while its lease is held.
      if (acquirerHeld !== undefined) {
        assert.strictEqual(outcome._tag, "Skipped")
        assert.isTrue(exists(world, acquirerHeld.leasePath), "the acquirer's lease is still in its run")
      } else {
        assert.isTrue(acquirerBusy, "the acquirer saw Y's live marker and stepped back")
      }
      // Y's live marker was never removed by X: Y released it itself, and no reclaim lock is left.
      assert.isFalse(exists(world, markerPath))
      assert.isFalse(exists(world, `${markerPath}.reclaim`))
      // The acquirer tries again once Y is done: it gets a run in place, with its lease.
      const again = yield* a.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      assert.isTrue(exists(world, again.leasePath))
    }))

  it.scoped("a reclaimer that finds another's live reclaim lock leaves the marker alone; a dead one's lock is removed", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const deps = depsOf(p)
      yield* p.fs.makeDirectory(`${tenantDir}/.cleanup`, { recursive: true, mode: 0o700 }).pipe(Effect.orDie)
      yield* deadMarker(world, markerPath, "cleanup")
      const q = yield* spawnProcess(world)
      const live = { version: 1, purpose: "reclaim", host: "h1", bootId: world.bootId("h1"), pid: q.host.pid, processStartedAt: world.startTimeOf("h1", q.host.pid), createdAt: 0 }
      yield* q.fs.writeFileExclusive(`${markerPath}.reclaim`, new TextEncoder().encode(JSON.stringify(live))).pipe(Effect.orDie)
      const judged = yield* judgeMarker(deps, markerPath)
      assert.strictEqual(yield* reclaimDeadMarker(deps, markerPath, judged!), "changed")
      assert.isTrue(exists(world, markerPath), "the marker stays while another reclaimer holds the lock")
      world.kill("h1", q.host.pid)
      assert.strictEqual(yield* reclaimDeadMarker(deps, markerPath, judged!), "reclaimed")
      assert.isFalse(exists(world, markerPath))
      assert.isFalse(exists(world, `${markerPath}.reclaim`))
    }))

  it.scoped("a marker's release unlinks only the marker it created", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const deps = depsOf(p)
      yield* p.fs.makeDirectory(`${tenantDir}/.cleanup`, { recursive: true, mode: 0o700 }).pipe(Effect.orDie)
      const ours = yield* tryAcquireMarker(deps, markerPath, "cleanup").pipe(Effect.orDie)
      assert.strictEqual(ours._tag, "Acquired")
      // Someone else's marker took its place (a wrong reclaim, a human): release must leave it.
      yield* p.fs.removeFile(markerPath).pipe(Effect.orDie)
      yield* world.writeFixture(`${tenantDir}/.cleanup/other`, "x")
      yield* p.fs.writeFileExclusive(markerPath, new TextEncoder().encode("theirs")).pipe(Effect.orDie)
      if (ours._tag === "Acquired") yield* ours.release
      assert.strictEqual(world.readFixtureText(markerPath), "theirs")
    }))

  it.scoped("dead reclaim locks are library entries: the doctor never calls them unowned or stray, a prune removes them", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      yield* p.fs.makeDirectory(`${tenantDir}/.cleanup`, { mode: 0o700 }).pipe(Effect.orDie)
      yield* deadMarker(world, `${markerPath}.reclaim`, "reclaim")
      yield* deadMarker(world, `${tenantDir}/.prune.reclaim`, "reclaim")
      const report = yield* doctorAt(AGENT_DIR).pipe(Effect.provideService(FileSystem, p.fs), Effect.provideService(Host, p.host))
      const about = report.findings.filter((f) => f.path.endsWith(".reclaim"))
      assert.deepStrictEqual(about.map((f) => f.code), ["work-dead-marker", "work-dead-marker"])
      yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
      assert.isFalse(exists(world, `${markerPath}.reclaim`))
      assert.isFalse(exists(world, `${tenantDir}/.prune.reclaim`))
      assert.isTrue(exists(world, run.leasePath), "the held run is untouched")
    }))
})

describe("a lock marker of another host, outside work/ (Memory)", () => {
  it.scoped("a writer lock held on a host a day behind keeps a taker 20 minutes ahead waiting; silent past the TTL + margin it is reclaimed", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2027, 0, 15))
      const world = MemoryWorld.make()
      const lockDir = `${AGENT_DIR}/state/user-profile`
      yield* world.mkdirFixture(lockDir)
      const lock = `${lockDir}/.lock`
      const late = world.spawn("late")
      const now = yield* Effect.clockWith((c) => c.currentTimeMillis)
      // Written now by a host whose clock is a day behind (its stamp says so); its file is fresh.
      yield* world.writeFixture(lock, JSON.stringify({ version: 1, purpose: "user-profile", host: "late", machineId: world.machineId("late"), bootId: world.bootId("late"), pid: late, createdAt: now - 24 * 60 * 60 * 1000 }))
      const taker = yield* spawnProcess(world, { hostname: "early", clockSkewMs: 20 * 60 * 1000 })
      const attempt = () => taker.run(tryAcquireMarker(depsOf(taker), lock, "user-profile"))
      const first = yield* attempt()
      assert.strictEqual(first._tag, "Held")
      yield* TestClock.adjust(DEFAULT_REMOTE_LEASE_TTL_MS + REMOTE_MARGIN_MS)
      assert.strictEqual((yield* attempt())._tag, "Held", "within the TTL + margin of its last write")
      // The probe of the file system's clock (the lock's reclaim lock) is gone again.
      assert.isFalse(exists(world, `${lock}.reclaim`))
      yield* TestClock.adjust(1)
      const taken = yield* attempt()
      assert.strictEqual(taken._tag, "Acquired")
      if (taken._tag === "Acquired") yield* taken.release
      assert.isFalse(exists(world, lock))
    }))
})
