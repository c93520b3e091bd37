/**
 * Random schedules of concurrent acquirers, releasers and pruners over the Memory world, with clock jumps,
 * planted symlinks, unowned directories and mount points (planted, and made by holders inside their runs),
 * and crashes followed by a rerun. Invariants I1–I5 (DESIGN) are checked during and after every schedule; for
 * mount points I3 means nothing under a mount ever changes, and the run holding one stays quarantined in
 * `.trash/`, reported by every prune (domain/OneFileSystem.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FastCheck as fc, Scope, TestClock } from "effect"
import { isSimulatedCrash, MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const TENANT = `${AGENT_DIR}/work/tools/bash`
const OUTSIDE = "/outside"
const CLOCK_JUMPS = [0, 1000, 60 * 60 * 1000, 20 * 60 * 1000, 31 * 24 * 60 * 60 * 1000]

type Op =
  | {
    readonly _tag: "hold"
    readonly runId: string | undefined
    readonly steps: number
    readonly del: boolean
    readonly escape: boolean
    /** The holder mounts another file system inside its run (a tool's bind mount). */
    readonly mount: boolean
  }
  | { readonly _tag: "prune"; readonly maxInactiveRuns: number; readonly maxBytes: number; readonly dryRun: boolean }
  | { readonly _tag: "jump"; readonly ms: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    _tag: fc.constant("hold" as const),
    runId: fc.constantFrom(undefined, undefined, "shared", "other"),
    steps: fc.integer({ min: 0, max: 3 }),
    del: fc.boolean(),
    escape: fc.boolean(),
    mount: fc.integer({ min: 0, max: 3 }).map((n) => n === 0)
  }),
  fc.record({
    _tag: fc.constant("prune" as const),
    maxInactiveRuns: fc.integer({ min: 0, max: 3 }),
    maxBytes: fc.constantFrom(0, 300, 1 << 20),
    dryRun: fc.boolean()
  }),
  fc.record({ _tag: fc.constant("jump" as const), ms: fc.constantFrom(...CLOCK_JUMPS) })
)

const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  actors: fc.array(fc.array(opArb, { minLength: 1, maxLength: 5 }), { minLength: 2, maxLength: 4 }),
  /** Which actor crashes (index), after how many of its own mutating steps; -1: nobody. */
  crashActor: fc.integer({ min: -1, max: 3 }),
  crashAfter: fc.integer({ min: 0, max: 40 }),
  /** Uneven scheduling (MemoryWorld jitter): up to this many extra yields before each call. */
  jitter: fc.record({ seed: fc.integer(), maxYields: fc.integer({ min: 0, max: 3 }) })
})

const exists = (world: MemoryWorld, path: string) => world.tree(path)[path] !== undefined

const plantHazards = (world: MemoryWorld) =>
  Effect.gen(function*() {
    yield* world.writeFixture(`${OUTSIDE}/canary/secret.txt`, "outside data")
    yield* world.writeFixture(`${TENANT}/unowned-dir/data.txt`, "someone else's")
    yield* world.writeFixture(`${TENANT}/mismatch/.pi-work-run.json`, JSON.stringify({ version: 1, category: "tools", tenant: "bash", runId: "not-this", createdAt: 0 }))
    yield* world.symlinkFixture(`${OUTSIDE}/canary`, `${TENANT}/link-run`)
    yield* world.writeFixture(`${TENANT}/manifest-link/keep.txt`, "kept")
    yield* world.symlinkFixture(`${OUTSIDE}/canary/secret.txt`, `${TENANT}/manifest-link/.pi-work-run.json`)
    // Owned by its manifest, but its lease directory is a link out of the tenant: presumed held, never touched.
    yield* world.writeFixture(`${TENANT}/leases-link/.pi-work-run.json`, JSON.stringify({ version: 1, category: "tools", tenant: "bash", runId: "leases-link", createdAt: 0 }))
    yield* world.symlinkFixture(`${OUTSIDE}/canary`, `${TENANT}/leases-link/.leases`)
  })

/** An owned, inactive run with a mount point inside: every prune chooses it and must never empty the mount. */
const MOUNTED_RUN = `${TENANT}/mounted-run`

const plantMountedRun = (world: MemoryWorld) =>
  Effect.gen(function*() {
    yield* world.writeFixture(`${MOUNTED_RUN}/.pi-work-run.json`, JSON.stringify({ version: 1, category: "tools", tenant: "bash", runId: "mounted-run", createdAt: 0 }))
    yield* world.writeFixture(`${MOUNTED_RUN}/own.txt`, "the run's own")
    yield* world.writeFixture(`${MOUNTED_RUN}/src/checkout/main.ts`, "a mounted source tree")
    yield* world.writeFixture(`${MOUNTED_RUN}/src/checkout/lib/util.ts`, "more of it")
    world.mount(`${MOUNTED_RUN}/src/checkout`, 5)
  })

/** A mount's tree relative to its root: equal snapshots mean nothing under it changed, wherever it moved. */
const mountSnapshot = (world: MemoryWorld, root: string) =>
  JSON.stringify(Object.entries(world.tree(root)).map(([path, entry]) => [path.slice(root.length), entry]))

const UNOWNED = ["unowned-dir/data.txt", "mismatch/.pi-work-run.json", "manifest-link/keep.txt", "leases-link/.pi-work-run.json"]

interface Schedule {
  readonly actors: ReadonlyArray<ReadonlyArray<Op>>
  readonly crashActor: number
  readonly crashAfter: number
  readonly jitter: { readonly seed: number; readonly maxYields: number }
}

const runSchedule = (schedule: Schedule) =>
  Effect.gen(function*() {
    const world = MemoryWorld.make({ jitter: schedule.jitter })
    yield* world.mkdirFixture(`${AGENT_DIR}/work/tools/bash`, { mode: 0o700 })
    yield* world.mkdirFixture(`${AGENT_DIR}/work/tools`, { mode: 0o700 })
    yield* world.mkdirFixture(`${AGENT_DIR}/work`, { mode: 0o700 })
    yield* plantHazards(world)
    yield* plantMountedRun(world)
    const outsideBefore = world.tree(OUTSIDE)
    const violations: Array<string> = []
    /** Every mount point made, found again by its root's inode (it moves with its run into `.trash/`). */
    const mounts = [{ ino: world.tree(`${MOUNTED_RUN}/src/checkout`)[`${MOUNTED_RUN}/src/checkout`]!.ino, before: mountSnapshot(world, `${MOUNTED_RUN}/src/checkout`) }]
    let nextDevice = 100
    const clockTurn = yield* Effect.makeSemaphore(1)
    const processes = yield* Effect.forEach(schedule.actors, (_, i) =>
      spawnProcess(world, { hostname: i === 3 ? "h2" : "h1", config: { busyAttempts: 4 }, workRuns: { opportunisticRetention: i % 2 === 0 } }))
    const crashed = schedule.crashActor >= 0 && schedule.crashActor < processes.length ? processes[schedule.crashActor]! : undefined
    if (crashed) world.crashAfter(schedule.crashAfter, { hostname: crashed.host.hostname, pid: crashed.host.pid })

    const checkHeld = (label: string, run: { path: string; leasePath: string }) => {
      if (!exists(world, `${run.path}/.pi-work-run.json`)) violations.push(`${label}: manifest of held run ${run.path} vanished`)
      if (!exists(world, run.leasePath)) violations.push(`${label}: lease ${run.leasePath} vanished while held`)
    }

    const actor = (ops: ReadonlyArray<Op>, p: (typeof processes)[number]) =>
      Effect.gen(function*() {
        for (const op of ops) {
          if (op._tag === "jump") {
            // Concurrent TestClock.adjust calls can rewind each other: jumps take turns.
            yield* clockTurn.withPermits(1)(TestClock.adjust(op.ms))
          } else if (op._tag === "prune") {
            yield* p.workRuns.prune({ category: "tools", tenant: "bash", dryRun: op.dryRun, policy: { maxInactiveRuns: op.maxInactiveRuns, maxBytes: op.maxBytes } })
          } else {
            const scope = yield* Scope.make()
            const run = yield* Scope.extend(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: op.runId, retention: { maxInactiveRuns: 1 } }), scope).pipe(
              Effect.catchTag("RunBusy", () => Effect.succeed(null))
            )
            if (run === null) continue
            checkHeld("I4 after acquire", run)
            if (op.escape) yield* p.fs.symlink(`${OUTSIDE}/canary`, `${run.path}/escape-${run.leasePath.length}-${op.steps}`).pipe(Effect.ignore)
            if (op.mount) {
              const dir = `${run.path}/mnt-${nextDevice}`
              const made = yield* p.fs.makeDirectory(dir).pipe(
                Effect.zipRight(p.fs.writeFileExclusive(`${dir}/tool.txt`, new TextEncoder().encode("mounted by the tool"))),
                Effect.either
              )
              if (made._tag === "Right") {
                world.mount(dir, nextDevice++)
                mounts.push({ ino: world.tree(dir)[dir]!.ino, before: mountSnapshot(world, dir) })
              }
            }
            for (let i = 0; i < op.steps; i++) {
              yield* Effect.yieldNow()
              checkHeld("I1 while held", run)
            }
            checkHeld("I1 before release", run)
            yield* run.release(op.del ? { delete: true } : undefined)
            yield* Scope.close(scope, Exit.void)
          }
        }
      }).pipe(
        // A crashed process stops where it is: its leases stay behind, as a killed process's would.
        Effect.catchAll((e) => (isSimulatedCrash(e) ? Effect.void : Effect.fail(e)))
      )

    yield* Effect.all(schedule.actors.map((ops, i) => actor(ops, processes[i]!)), { concurrency: "unbounded", discard: true })
    yield* Effect.forEach(processes, (p) => p.workRuns.awaitBackground)
    for (const file of UNOWNED) {
      if (!exists(world, `${TENANT}/${file}`)) violations.push(`I2: unowned ${file} disappeared`)
    }
    // I5: the crashed process dies; after recovery a fresh pruner converges.
    world.recover()
    if (crashed) world.kill(crashed.host.hostname, crashed.host.pid)
    yield* TestClock.adjust(2 * 60 * 60 * 1000)
    const fresh = yield* spawnProcess(world, { hostname: "h1" })
    // Twice: the first pass reclaims dead leases of runs it keeps, the second removes nothing more.
    const report = yield* fresh.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
    const again = yield* fresh.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
    if (again.removed.length > 0) violations.push(`I5: a second prune still removed ${again.removed.map((r) => r.runId)}`)
    // I3 for mounts: each mount is whole, wherever its run went; one in `.trash/` is reported by every prune.
    const everything = Object.entries(world.tree("/"))
    const mountRoots: Array<string> = []
    for (const mount of mounts) {
      const found = everything.find(([, entry]) => entry.ino === mount.ino && entry.type === "Directory")
      if (found === undefined) {
        violations.push(`I3: a mount point vanished (inode ${mount.ino})`)
        continue
      }
      mountRoots.push(found[0])
      if (mountSnapshot(world, found[0]) !== mount.before) violations.push(`I3: something under the mount ${found[0]} changed`)
    }
    const isMountReport = (e: { readonly path: string; readonly message: string }) => mountRoots.includes(e.path) && /EXDEV/.test(e.message)
    // Each quarantined run holding mounts is reported (naming the first mount its walk met) by both final prunes.
    const trash = `${TENANT}/.trash/`
    const quarantinedWithMounts = new Set(mountRoots.filter((r) => r.startsWith(trash)).map((r) => r.slice(0, r.indexOf("/", trash.length))))
    for (const run of quarantinedWithMounts) {
      for (const [label, r] of [["first", report], ["second", again]] as const) {
        if (!r.errors.some((e) => isMountReport(e) && e.path.startsWith(`${run}/`))) violations.push(`I3: the ${label} final prune did not report ${run}, quarantined with a mount: ${JSON.stringify(r.errors)}`)
      }
    }
    const otherErrors = [...report.errors, ...again.errors].filter((e) => !isMountReport(e))
    if (otherErrors.length > 0) violations.push(`prune errors: ${JSON.stringify(otherErrors)}`)
    /** On the way to a mount point or under it: what a quarantined run holding one keeps. */
    const keptForMount = (path: string) => mountRoots.some((root) => root === path || root.startsWith(`${path}/`) || path.startsWith(`${root}/`))
    const left = Object.keys(world.tree(TENANT)).filter((p) => p.split("/").length === TENANT.split("/").length + 1)
    const allowed = new Set([".cleanup", ".trash", ".staging", ".last-prune", "unowned-dir", "mismatch", "link-run", "manifest-link", "leases-link", ...again.active])
    for (const path of left) {
      const name = path.slice(TENANT.length + 1)
      if (!allowed.has(name)) violations.push(`I5: ${name} survived a converged prune (report ${JSON.stringify(again)})`)
    }
    for (const dir of [".trash", ".cleanup", ".staging"]) {
      const entries = Object.keys(world.tree(`${TENANT}/${dir}`)).filter((p) => p !== `${TENANT}/${dir}` && !keptForMount(p))
      if (entries.length > 0) violations.push(`I5: leftovers in ${dir}: ${entries.join(", ")} (final prunes busy: ${report.busy}/${again.busy}; tree ${JSON.stringify(world.tree(`${TENANT}/${dir}`))})`)
    }
    if (exists(world, `${TENANT}/.prune`)) violations.push("I5: prune marker left behind")
    if (JSON.stringify(world.tree(OUTSIDE)) !== JSON.stringify(outsideBefore)) violations.push("I3: something outside the tenant changed")
    return violations
  })

describe("work-run invariants under random schedules (Memory)", () => {
  it.effect.prop(
    "I1–I5 hold for concurrent acquirers, releasers, pruners, clock jumps, planted links and crashes",
    [scheduleArb],
    ([schedule]) => Effect.map(Effect.scoped(runSchedule(schedule)), (violations) => {
      if (violations.length > 0) console.error(violations.join("\n"))
      assert.strictEqual(violations.join("\n"), "")
    }),
    { timeout: 180_000, fastCheck: { numRuns: Number(process.env.PROPERTY_RUNS ?? 200), ...(process.env.PROPERTY_SEED ? { seed: Number(process.env.PROPERTY_SEED), ...(process.env.PROPERTY_PATH ? { path: process.env.PROPERTY_PATH } : {}) } : {}) } }
  )
})
