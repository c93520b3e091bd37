/**
 * docs/safety.md "How runs stay safe", on the Node layer, with real SIGKILLs: a process killed between the exclusive create
 * and the write of a marker or lease leaves an empty file. Fresh, it is held (a writer may be microseconds
 * from writing it); once its mtime is older than the stale bound it is dead, reclaimed under the dead-holder
 * protocol, and reported (prune report and doctor). Directories and symlinks squatting on a marker are
 * reported as what they are; far-future timestamps never pin a run.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { Effect, Scope } from "effect"
import * as NodeStorage from "../../src/layers/NodeStorage.js"
import { doctorAt } from "../support/doctor.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { DEFAULT_STALE_UNREADABLE_MS, REMOTE_MARGIN_MS } from "../../src/domain/Liveness.js"
import { DEFAULT_REMOTE_LEASE_TTL_MS } from "../../src/domain/Retention.js"

const creator = path.join(import.meta.dirname, "..", "fixtures", "createThenHang.mjs")

/** Run a child that exclusively creates `file`, then SIGKILL it before it writes a byte. */
const createAndKill = (file: string) =>
  new Promise<void>((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [creator, file], { stdio: ["ignore", "pipe", "inherit"] })
    child.stdout!.on("data", () => child.kill("SIGKILL"))
    child.on("error", reject)
    child.on("exit", (_code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`creator exited without SIGKILL (${signal})`))))
  })

const backdate = (file: string, ms = DEFAULT_STALE_UNREADABLE_MS + 60_000) => {
  const at = new Date(Date.now() - ms)
  fs.lutimesSync(file, at, at)
}

let agentDir: string
let tenantDir: string
beforeEach(() => {
  agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-stale-"))
  tenantDir = path.join(agentDir, "work", "tools", "bash")
  fs.mkdirSync(tenantDir, { recursive: true, mode: 0o700 })
  for (const dir of [path.join(agentDir, "work"), path.join(agentDir, "work", "tools"), tenantDir]) fs.chmodSync(dir, 0o700)
})
afterEach(() => fs.rmSync(agentDir, { recursive: true, force: true }))

const withWorkRuns = <A, E>(f: (w: WorkRuns["Type"]) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(WorkRuns, f)).pipe(
      Effect.provide(NodeStorage.layerWith({ agentDir, migrate: false, config: { busyAttempts: 2, busyDelayMs: 1 }, workRuns: { opportunisticRetention: false } }))
    )
  )
const prune = (policy?: { maxInactiveRuns?: number; maxAgeMs?: number }) =>
  withWorkRuns((w) => w.prune({ category: "tools", tenant: "bash", ...(policy ? { policy } : {}) }))
const findings = async (code: string) =>
  (await Effect.runPromise(doctorAt(agentDir).pipe(Effect.provide(NodeStorage.layerWith({ agentDir, migrate: false }))))).findings
    .filter((f) => f.code === code)
/** A released named run "shared", to prune or join. */
const makeShared = () =>
  withWorkRuns((w) => Effect.flatMap(w.acquire({ category: "tools", tenant: "bash", runId: "shared" }), (run) => Effect.as(run.release(), run.path)))
const join = () =>
  withWorkRuns((w) => Effect.flatMap(w.acquire({ category: "tools", tenant: "bash", runId: "shared" }), (run) => run.release()).pipe(Effect.either))

describe("empty markers and leases left by a SIGKILL between create and write (Node)", () => {
  it("an empty .prune: busy while fresh, reclaimed and reported once stale; the doctor says which", async () => {
    const marker = path.join(tenantDir, ".prune")
    await createAndKill(marker)
    expect(fs.statSync(marker).size).toBe(0)
    const fresh = await prune()
    expect(fresh.busy).toBe(true)
    expect(fresh.unreadable).toEqual([expect.objectContaining({ path: marker, action: "held" })])
    const [freshFinding] = await findings("work-unreadable-marker")
    expect(freshFinding?.fix).toMatch(/held until it is 10 min old/)
    backdate(marker)
    expect((await findings("work-unreadable-marker"))[0]?.fix).toBe("the next prune of this tenant reclaims it")
    const stale = await prune()
    expect(stale.busy).toBe(false)
    expect(stale.errors).toEqual([])
    expect(stale.unreadable).toEqual([expect.objectContaining({ path: marker, action: "reclaimed" })])
    expect(fs.existsSync(marker)).toBe(false)
    expect(await findings("work-unreadable-marker")).toEqual([])
  })

  it("an empty .cleanup/<run>: a named join is RunBusy while fresh, succeeds once stale; the prune reclaims the marker", async () => {
    const runDir = await makeShared()
    fs.mkdirSync(path.join(tenantDir, ".cleanup"), { mode: 0o700 })
    const marker = path.join(tenantDir, ".cleanup", "shared")
    await createAndKill(marker)
    const busy = await join()
    expect(busy._tag === "Left" && busy.left._tag).toBe("RunBusy")
    backdate(marker)
    const joined = await join()
    expect(joined).toEqual(expect.objectContaining({ _tag: "Right" }))
    const report = await prune()
    expect(report.unreadable).toEqual([expect.objectContaining({ path: marker, action: "reclaimed" })])
    expect(fs.existsSync(marker)).toBe(false)
    expect(fs.existsSync(path.join(runDir, ".pi-work-run.json"))).toBe(true)
  })

  it("an empty lease in .staging/: the entry is kept while fresh, removed and reported once stale", async () => {
    const staged = path.join(tenantDir, ".staging", "run-x.0000abcd")
    fs.mkdirSync(path.join(staged, ".leases"), { recursive: true, mode: 0o700 })
    fs.writeFileSync(path.join(staged, ".pi-work-run.json"), JSON.stringify({ version: 2, category: "tools", tenant: "bash", runId: "run-x", kind: "named", createdAt: Date.now(), createdBy: { host: os.hostname(), pid: 1 } }))
    const lease = path.join(staged, ".leases", "h-1-0000abcd.json")
    await createAndKill(lease)
    const fresh = await prune()
    expect(fs.existsSync(staged)).toBe(true)
    expect(fresh.unreadable).toEqual([expect.objectContaining({ path: lease, action: "held" })])
    expect((await findings("work-unreadable-lease"))[0]?.path).toContain("h-1-0000abcd.json")
    backdate(lease)
    const stale = await prune()
    expect(fs.existsSync(staged)).toBe(false)
    expect(stale.unreadable).toEqual([expect.objectContaining({ path: lease, action: "reclaimed" })])
  })

  it("an empty lease in a run keeps it while fresh; once stale the run is pruned like any dead holder's", async () => {
    const runDir = await makeShared()
    const lease = path.join(runDir, ".leases", "h-2-0000abcd.json")
    await createAndKill(lease)
    expect((await prune({ maxInactiveRuns: 0 })).active).toEqual(["shared"])
    backdate(lease)
    const report = await prune({ maxInactiveRuns: 0 })
    expect(report.removed.map((r) => r.runId)).toEqual(["shared"])
    expect(report.unreadable).toEqual([expect.objectContaining({ path: lease, action: "reclaimed" })])
  })
})

describe("directories and symlinks squatting on a marker (Node)", () => {
  it("a non-empty directory at .prune is reported as what it is, never as busy, and never deleted", async () => {
    const squat = path.join(tenantDir, ".prune")
    fs.mkdirSync(squat)
    fs.writeFileSync(path.join(squat, "keep.txt"), "someone's")
    backdate(squat)
    const report = await prune()
    expect(report.busy).toBe(false)
    expect(report.errors[0]?.message).toMatch(/nothing was pruned: a directory where a marker file belongs/)
    expect(report.unreadable).toEqual([expect.objectContaining({ path: squat, action: "left" })])
    expect(fs.readFileSync(path.join(squat, "keep.txt"), "utf8")).toBe("someone's")
    const [finding] = await findings("work-squatted-marker")
    expect(finding?.fix).toMatch(/never deleted .* no prune of this tenant runs until it is moved away by hand/)
  })

  it("a stale symlink at .prune is unlinked (its target untouched) and the prune proceeds; an empty directory is rmdir'ed", async () => {
    const outside = path.join(agentDir, "outside.txt")
    fs.writeFileSync(outside, "outside data")
    const squat = path.join(tenantDir, ".prune")
    fs.symlinkSync(outside, squat)
    const fresh = await prune()
    expect(fresh.busy).toBe(false)
    expect(fresh.unreadable).toEqual([expect.objectContaining({ path: squat, action: "held" })])
    expect((await findings("work-squatted-marker"))[0]?.fix).toMatch(/unlinks the link \(its target is never touched\)/)
    backdate(squat)
    const stale = await prune()
    expect(stale.errors).toEqual([])
    expect(stale.unreadable).toEqual([expect.objectContaining({ path: squat, action: "reclaimed" })])
    expect(fs.existsSync(squat)).toBe(false)
    expect(fs.readFileSync(outside, "utf8")).toBe("outside data")
    fs.mkdirSync(squat)
    backdate(squat)
    expect((await prune()).unreadable).toEqual([expect.objectContaining({ path: squat, action: "reclaimed" })])
    expect(fs.existsSync(squat)).toBe(false)
  })
})

describe("far-future timestamps (Node)", () => {
  it("a remote lease heartbeat or a manifest createdAt a year ahead does not pin the run; both are reported", async () => {
    const YEAR = 365 * 24 * 60 * 60 * 1000
    const runDir = await makeShared()
    const manifestPath = path.join(runDir, ".pi-work-run.json")
    const manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8"))
    fs.writeFileSync(manifestPath, JSON.stringify({ ...manifest, createdAt: Date.now() + YEAR, releasedAt: Date.now() + YEAR }))
    const lease = path.join(runDir, ".leases", "far-away-7-0000abcd.json")
    fs.writeFileSync(lease, JSON.stringify({ version: 2, host: "far-away", pid: 7, acquiredAt: Date.now() + YEAR, heartbeatAt: Date.now() + YEAR }))
    // Fresh lease file: held (a clock far off on a live host); the manifest stamps are set aside already.
    const held = await prune({ maxAgeMs: 24 * 60 * 60 * 1000 })
    expect(held.active).toEqual(["shared"])
    expect(held.unreadable.map((u) => u.action).sort()).toEqual(["held", "ignored", "ignored"])
    expect((await findings("work-future-timestamp")).map((f) => path.basename(f.path)).sort()).toEqual(
      [".pi-work-run.json", ".pi-work-run.json", "far-away-7-0000abcd.json"]
    )
    // Its stamp decides nothing: like any lease of another host it is dead once its file has not been written
    // for the remote TTL + margin (on the file system's clock).
    backdate(lease, DEFAULT_REMOTE_LEASE_TTL_MS + REMOTE_MARGIN_MS + 60_000)
    backdate(manifestPath, 2 * 24 * 60 * 60 * 1000)
    // Last use is when its files were last written on the file system's clock, whatever their stamps say: the
    // dead holder's lease a quarter of an hour ago, so this prune reclaims the lease and keeps the run; then the
    // manifest's two days ago, older than a day, so the next prune removes it.
    const report = await prune({ maxAgeMs: 24 * 60 * 60 * 1000 })
    expect(report.removed).toEqual([])
    expect(report.unreadable).toEqual(expect.arrayContaining([expect.objectContaining({ path: lease, action: "reclaimed" })]))
    const next = await prune({ maxAgeMs: 24 * 60 * 60 * 1000 })
    expect(next.removed).toEqual([expect.objectContaining({ runId: "shared", reason: "age" })])
  })
})

/** JSON on which the schema's interpreter itself threw (a union's tag that is an object whose toString is no function). */
const TRAP = `{"version":{"toString":[]}}`

describe("a lease, marker or manifest the schema's interpreter threw on is unreadable, never a crash (Node)", () => {
  it("such a lease keeps its run while fresh; once stale the run is pruned like any dead holder's", async () => {
    const runDir = await makeShared()
    const lease = path.join(runDir, ".leases", "h-3-0000abcd.json")
    fs.writeFileSync(lease, TRAP)
    const fresh = await prune({ maxInactiveRuns: 0 })
    expect(fresh.active).toEqual(["shared"])
    expect(fresh.unreadable).toEqual([expect.objectContaining({ path: lease, action: "held" })])
    backdate(lease)
    const stale = await prune({ maxInactiveRuns: 0 })
    expect(stale.removed.map((r) => r.runId)).toEqual(["shared"])
    expect(stale.unreadable).toEqual([expect.objectContaining({ path: lease, action: "reclaimed" })])
  })

  it("such a .prune marker holds the tenant while fresh, and is reclaimed once stale", async () => {
    const marker = path.join(tenantDir, ".prune")
    fs.writeFileSync(marker, TRAP)
    const fresh = await prune()
    expect(fresh.busy).toBe(true)
    expect(fresh.unreadable).toEqual([expect.objectContaining({ path: marker, action: "held" })])
    backdate(marker)
    const stale = await prune()
    expect(stale.busy).toBe(false)
    expect(stale.unreadable).toEqual([expect.objectContaining({ path: marker, action: "reclaimed" })])
  })

  it("such a manifest makes its directory unowned: never removed, reported", async () => {
    const odd = path.join(tenantDir, "odd")
    fs.mkdirSync(odd, { mode: 0o700 })
    fs.writeFileSync(path.join(odd, ".pi-work-run.json"), TRAP)
    const report = await prune({ maxInactiveRuns: 0, maxAgeMs: 0 })
    expect(report.removed).toEqual([])
    expect(report.unowned).toEqual([expect.objectContaining({ path: odd })])
    expect(fs.existsSync(path.join(odd, ".pi-work-run.json"))).toBe(true)
  })
})
