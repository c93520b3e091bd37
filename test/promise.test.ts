/**
 * The Promise facade on the real filesystem: physical locations, typed rejections, close, extensions, and
 * real child processes holding leases (a live one survives a prune, a SIGKILLed one is reclaimed).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { acquireWorkRun, openAgentStorage, pruneWorkTenant } from "../src/promise.js"
import { du } from "./support/du.js"

let dir = ""
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-facade-"))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const leases = (runPath: string) => fs.readdirSync(path.join(runPath, ".leases"))
const manifest = (runPath: string) => JSON.parse(fs.readFileSync(path.join(runPath, ".pi-work-run.json"), "utf8"))

describe("openAgentStorage", () => {
  it("acquires runs at their documented place, with a manifest and a lease, and releases them", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    expect(storage.agentDir).toBe(dir)
    expect(storage.workRoot).toBe(path.join(dir, "work"))
    const run = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    expect(run.path).toBe(path.join(dir, "work", "tools", "bash", run.runId))
    expect(run.runId).toMatch(/^\d{8}t\d{9}z-[0-9a-f]{8}-[0-9a-f]{8}$/)
    expect(manifest(run.path)).toMatchObject({ version: 2, category: "tools", tenant: "bash", runId: run.runId, kind: "generated", createdBy: { pid: process.pid } })
    expect(leases(run.path)).toHaveLength(1)
    const manifestBefore = fs.lstatSync(path.join(run.path, ".pi-work-run.json"))
    expect(fs.statSync(path.join(dir, "work", "tools", "bash")).mode & 0o777).toBe(0o700)
    expect(storage.workRootEnv(run)).toEqual({
      PI_WORK_ROOT: path.join(dir, "work"),
      PI_WORK_RUN_DIR: run.path,
      PI_WORK_RUN_ID: run.runId,
      PI_WORK_CATEGORY: "tools",
      PI_WORK_TENANT: "bash"
    })
    await run.release()
    await run.release()
    expect(leases(run.path)).toEqual([])
    expect(typeof manifest(run.path).releasedAt).toBe("number")
    // The stamp was written in place: same file, same length, the room after the JSON shrunk.
    const manifestAfter = fs.lstatSync(path.join(run.path, ".pi-work-run.json"))
    expect([manifestAfter.ino, manifestAfter.size]).toEqual([manifestBefore.ino, manifestBefore.size])
    expect(fs.readdirSync(run.path).sort()).toEqual([".leases", ".pi-work-run.json"])
    await storage.close()
  })

  it("rejects with the typed error itself, naming the value", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const error = await storage.acquireWorkRun({ category: "tools", tenant: "CON" }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect(error).toMatchObject({ _tag: "InvalidSegment", field: "tenant", value: "CON", rule: "uppercase" })
    expect(String((error as Error).message)).toContain("\"CON\"")
    fs.mkdirSync(path.join(dir, "work", "tools", "bash", "stray"), { recursive: true })
    await expect(storage.acquireWorkRun({ category: "tools", tenant: "bash", runId: "stray" })).rejects.toMatchObject({ _tag: "UnownedRun" })
    await storage.close()
  })

  it("release({ delete: true }) removes a one-shot run; asyncDispose releases; close releases the rest", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const oneShot = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    fs.writeFileSync(path.join(oneShot.path, "out.txt"), "x")
    await oneShot.release({ delete: true })
    expect(fs.existsSync(oneShot.path)).toBe(false)
    {
      await using scoped = await storage.acquireWorkRun({ category: "tools", tenant: "bash", runId: "scoped", retention: false })
      expect(leases(scoped.path)).toHaveLength(1)
    }
    expect(leases(path.join(dir, "work", "tools", "bash", "scoped"))).toEqual([])
    const left = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    const processRun = await storage.getProcessWorkRun({ category: "tools", tenant: "proc" })
    expect((await storage.getProcessWorkRun({ category: "tools", tenant: "proc" })).path).toBe(processRun.path)
    await storage.close()
    expect(leases(left.path)).toEqual([])
    expect(leases(processRun.path)).toEqual([])
  })

  it("prunes with the report shape of the facade; dry run touches nothing", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const run = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
      fs.writeFileSync(path.join(run.path, "data.bin"), Buffer.alloc(1000))
      ids.push(run.runId)
      await run.release()
    }
    const dry = await storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 1 }, dryRun: true })
    expect(dry.removed.map((r) => r.runId)).toEqual(ids.slice(0, 2))
    for (const id of ids) expect(fs.existsSync(path.join(dir, "work", "tools", "bash", id))).toBe(true)
    const report = await storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 1 } })
    expect(Object.keys(report).sort()).toEqual(
      [
        "active", "activeOverBudget", "apparentBytesAfter", "apparentBytesBefore", "busy", "bytesAfter", "bytesBefore", "cutShort", "dryRun", "errors",
        "incomplete", "kept", "notMeasured", "removed", "scannedRuns", "skipped", "stoppedBy", "truncated", "unowned", "unreadable"
      ]
    )
    expect(report.removed.map((r) => [r.runId, r.reason])).toEqual(ids.slice(0, 2).map((id) => [id, "count"]))
    expect(report.kept).toEqual([ids[2]])
    expect(fs.readdirSync(path.join(dir, "work", "tools", "bash")).filter((n) => !n.startsWith(".")).sort()).toEqual([ids[2]])
    await storage.close()
  })

  it("retentionCeiling raises the scan bounds past their defaults and caps every policy; a prune stopped by one says so", async () => {
    // A released run whose one file sits 70 directories down: deeper than the default maxDepth (64).
    const tenantDir = path.join(dir, "work", "tools", "bash")
    const run = await (await openAgentStorage({ agentDir: dir })).acquireWorkRun({ category: "tools", tenant: "bash", runId: "deep", retention: false })
    await run.release()
    const deep = path.join(run.path, ...Array.from({ length: 70 }, () => "d"))
    fs.mkdirSync(deep, { recursive: true })
    fs.writeFileSync(path.join(deep, "f"), "x".repeat(5000))
    for (let i = 0; i < 4; i++) fs.writeFileSync(path.join(tenantDir, `stray${i}`), "")
    // maxBytes 0: the run's size decides its fate, so the dry run walks it.
    const target = { category: "tools", tenant: "bash", dryRun: true } as const
    const policy = { maxBytes: 0, maxDepth: 100 }

    // The default ceiling clamps a policy asking for more: the walk stops at 64, and the report says so.
    const capped = await openAgentStorage({ agentDir: dir, migrate: false })
    const stopped = await capped.pruneWorkTenant({ ...target, policy })
    expect([stopped.incomplete, stopped.stoppedBy.map((s) => [s._tag, s.limit, s.left, s.flag])]).toEqual([true, [["MaxDepth", 64, 1, "--max-depth"]]])
    expect(stopped.stoppedBy[0]!.option).toContain("retentionCeiling")
    // The policy's own option cannot pass the ceiling: the words name the ceiling and what was asked.
    expect(stopped.stoppedBy[0]!.message).toMatch(/raise the harness ceiling \(retentionCeiling\.maxDepth\): maxDepth 100 was asked and capped at the ceiling's 64$/)
    await capped.close()

    // A raised ceiling lets the policy walk it whole: du's numbers, nothing said.
    const raised = await openAgentStorage({ agentDir: dir, migrate: false, retentionCeiling: { maxDepth: 100 } })
    const whole = await raised.pruneWorkTenant({ ...target, policy })
    expect([whole.incomplete, whole.stoppedBy, whole.removed.map((r) => r.runId)]).toEqual([false, [], ["deep"]])
    expect(whole.bytesBefore).toBe(du(run.path).bytes)
    await raised.close()

    // A lower ceiling caps a policy asking for more, and is the default of a policy that leaves the field out.
    const low = await openAgentStorage({ agentDir: dir, migrate: false, retentionCeiling: { maxScannedRuns: 3 } })
    for (const asked of [{ maxScannedRuns: 5 }, {}]) {
      const three = await low.pruneWorkTenant({ ...target, policy: asked })
      expect([three.scannedRuns, three.truncated]).toEqual([3, true])
      const stop = three.stoppedBy.find((s) => s._tag === "MaxScannedRuns")
      expect(stop).toMatchObject({ limit: 3, left: 2, flag: "--max-scanned-runs" })
      // At the ceiling, asked for more or left to its default: only the ceiling raises it.
      if ("maxScannedRuns" in asked) expect(stop!.message).toMatch(/maxScannedRuns 5 was asked and capped at the ceiling's 3$/)
      else expect(stop!.message).toMatch(/raise the harness ceiling \(retentionCeiling\.maxScannedRuns\): a policy's maxScannedRuns is at most the ceiling's 3, its default$/)
    }
    await low.close()
    await expect(openAgentStorage({ agentDir: dir, retentionCeiling: { maxScannedRuns: -1 } })).rejects.toMatchObject({ _tag: "InvalidPolicy" })
  }, 60_000)

  it("refuses a group-writable or symlinked tenant with UnsafeRoot and deletes nothing", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const run = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    await run.release()
    const tenant = path.join(dir, "work", "tools", "bash")
    fs.chmodSync(tenant, 0o777)
    await expect(storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxAgeMs: 0 } })).rejects.toMatchObject({ _tag: "UnsafeRoot", reason: "group-or-world-writable" })
    fs.chmodSync(tenant, 0o700)
    fs.renameSync(tenant, path.join(dir, "moved"))
    fs.symlinkSync(path.join(dir, "moved"), tenant)
    await expect(storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxAgeMs: 0 } })).rejects.toMatchObject({ _tag: "UnsafeRoot", reason: "symlink" })
    expect(fs.existsSync(path.join(dir, "moved", run.runId, ".pi-work-run.json"))).toBe(true)
    await storage.close()
  })

  it("getStorage: no I/O until used; runs under work/extensions/<ns>/; unload releases and refuses", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const ext = storage.getStorage("notes")
    expect(fs.readdirSync(dir)).toEqual([])
    expect(ext.stateDir).toBe(path.join(dir, "state", "extensions", "notes"))
    expect(ext.cacheDir).toBe(path.join(dir, "cache", "extensions", "notes"))
    expect(() => storage.getStorage("Notes")).toThrow(expect.objectContaining({ _tag: "InvalidSegment" }))
    const run = await ext.acquireWorkRun({ retention: false })
    expect(run.path).toBe(path.join(dir, "work", "extensions", "notes", run.runId))
    await ext.unload()
    expect(leases(run.path)).toEqual([])
    await expect(ext.acquireWorkRun()).rejects.toMatchObject({ _tag: "StorageUnloaded" })
    await storage.close()
  })

  /** Every lease file under a directory, at any depth. */
  const leaseFilesUnder = (root: string): Array<string> =>
    fs.existsSync(root) ? (fs.readdirSync(root, { recursive: true }) as Array<string>).filter((p) => p.includes(`.leases${path.sep}`)) : []

  it("unload and close racing acquisitions leave no lease behind", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const ext = storage.getStorage("notes")
    // Acquisitions in flight when unload starts: each either rejects StorageUnloaded or is released by it.
    const racing = Array.from({ length: 4 }, () => ext.acquireWorkRun({ retention: false }))
    await ext.unload()
    const outcomes = await Promise.allSettled(racing)
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toMatchObject({ _tag: "StorageUnloaded" })
    expect(leaseFilesUnder(path.join(dir, "work", "extensions", "notes"))).toEqual([])
    // The same for the store: close waits for acquisitions in flight and releases them too.
    const inFlight = Array.from({ length: 4 }, () => storage.acquireWorkRun({ category: "tools", tenant: "race", retention: false }))
    await storage.close()
    await Promise.allSettled(inFlight)
    expect(leaseFilesUnder(path.join(dir, "work", "tools", "race"))).toEqual([])
    // After close, every call rejects with a typed StorageClosed naming the agent dir.
    await expect(storage.acquireWorkRun({ category: "tools", tenant: "race" })).rejects.toMatchObject({ _tag: "StorageClosed", agentDir: dir })
    await expect(storage.pruneWorkTenant({ category: "tools", tenant: "race" })).rejects.toMatchObject({ _tag: "StorageClosed" })
    await expect(storage.doctor()).rejects.toMatchObject({ _tag: "StorageClosed" })
  })

  it("module-level helpers share one store per agent dir", async () => {
    const run = await acquireWorkRun({ agentDir: dir, category: "tools", tenant: "mod", retention: false })
    expect(run.path.startsWith(path.join(dir, "work", "tools", "mod"))).toBe(true)
    await run.release()
    const report = await pruneWorkTenant({ agentDir: dir, category: "tools", tenant: "mod", policy: { maxInactiveRuns: 0 } })
    expect(report.removed.map((r) => r.runId)).toEqual([run.runId])
  })
})

describe("leases held by real child processes", () => {
  const holder = path.join(import.meta.dirname, "fixtures", "holder.mjs")
  const start = (mode: "hold" | "exit" | "end") =>
    new Promise<{ child: ChildProcess; run: { path: string; runId: string } }>((resolve, reject) => {
      const child = spawn(process.execPath, [holder, dir, "tools", "bash", mode], { stdio: ["ignore", "pipe", "inherit"] })
      let out = ""
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes("\n")) resolve({ child, run: JSON.parse(out.split("\n")[0]!) })
      })
      child.on("error", reject)
      child.on("exit", (code) => { if (!out.includes("\n")) reject(new Error(`holder exited ${code}`)) })
    })
  const exited = (child: ChildProcess) => new Promise<void>((resolve) => child.exitCode !== null || child.signalCode !== null ? resolve() : child.on("exit", () => resolve()))

  it("a live child's run survives a prune; a SIGKILLed child's run is reclaimed; an exiting child drops its lease", async () => {
    const [live, killed, quitter] = await Promise.all([start("hold"), start("hold"), start("exit")])
    killed.child.kill("SIGKILL")
    await Promise.all([exited(killed.child), exited(quitter.child)])
    expect(leases(killed.run.path)).toHaveLength(1)
    expect(leases(quitter.run.path)).toEqual([])
    const storage = await openAgentStorage({ agentDir: dir })
    const report = await storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
    expect(report.active).toEqual([live.run.runId])
    expect(report.removed.map((r) => r.runId).sort()).toEqual([killed.run.runId, quitter.run.runId].sort())
    expect(fs.existsSync(live.run.path)).toBe(true)
    expect(fs.existsSync(killed.run.path)).toBe(false)
    live.child.kill("SIGTERM")
    await exited(live.child)
    expect(leases(live.run.path)).toEqual([])
    await storage.close()
  })
})

describe("a held lease never keeps a Promise caller's process alive", () => {
  const holder = path.join(import.meta.dirname, "fixtures", "holder.mjs")
  it("a child whose script ends holding a lease exits by itself (heartbeat on unref'd timers); its lease is then seen dead", async () => {
    const child = spawn(process.execPath, [holder, dir, "tools", "bash", "end"], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    child.stdout!.on("data", (chunk: Buffer) => { out += chunk.toString() })
    // A ref'd heartbeat timer (5 minutes) would keep the child alive far past this bound.
    const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve, reject) => {
      const timer = setTimeout(() => { child.kill("SIGKILL"); reject(new Error("the child was kept alive by its held lease")) }, 30_000)
      child.on("exit", (code, signal) => { clearTimeout(timer); resolve({ code, signal }) })
    })
    expect(exit).toEqual({ code: 0, signal: null })
    const run = JSON.parse(out.split("\n")[0]!) as { path: string; runId: string }
    expect(fs.existsSync(run.path)).toBe(true)
    const storage = await openAgentStorage({ agentDir: dir })
    const report = await storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
    expect(report.active).toEqual([])
    expect(report.removed.map((r) => r.runId)).toEqual([run.runId])
    await storage.close()
  })
})

describe("start-up migration and the doctor through the facade", () => {
  it("openAgentStorage migrates legacy entries before anything else, unless told not to; doctor is read-only", async () => {
    fs.writeFileSync(path.join(dir, "trust.json"), JSON.stringify({ "/repo": "trusted" }))
    fs.mkdirSync(path.join(dir, "tmp"))
    fs.writeFileSync(path.join(dir, "tmp", "scratch.txt"), "old")
    const unmigrated = await openAgentStorage({ agentDir: dir, migrate: false })
    const findings = await unmigrated.doctor()
    expect(findings.findings.filter((f) => f.code === "legacy-entry").map((f) => f.path).sort()).toEqual(["tmp", "trust.json"])
    expect(fs.existsSync(path.join(dir, "trust.json"))).toBe(true)
    await unmigrated.close()
    const storage = await openAgentStorage({ agentDir: dir })
    expect(JSON.parse(fs.readFileSync(path.join(dir, "state", "trust.json"), "utf8"))).toEqual({ "/repo": "trusted" })
    expect(fs.readFileSync(path.join(dir, "state", "legacy-layout", "tmp", "scratch.txt"), "utf8")).toBe("old")
    expect(fs.existsSync(path.join(dir, "trust.json"))).toBe(false)
    expect((await storage.migration.plan()).decisions).toEqual([])
    const again = await storage.migration.run()
    expect(again).toEqual({ moved: [], merged: [], conflicts: [], partial: false, errors: [], decisions: [] })
    expect((await storage.doctor()).findings.filter((f) => f.severity !== "info")).toEqual([])
    await storage.close()
  })
})

describe("the store copes with its work root being deleted behind its back", () => {
  it("acquires again after rm -rf work/", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const first = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    await first.release()
    fs.rmSync(path.join(dir, "work"), { recursive: true, force: true })
    const second = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    expect(leases(second.path)).toHaveLength(1)
    await storage.close()
  })
})

describe("planted links on real disk (I2, I3)", () => {
  it("a prune never follows a link out of the tenant and never removes what it does not own", async () => {
    const outside = path.join(dir, "outside")
    fs.mkdirSync(outside)
    fs.writeFileSync(path.join(outside, "canary.txt"), "precious")
    const before = fs.lstatSync(path.join(outside, "canary.txt"))
    const storage = await openAgentStorage({ agentDir: dir })
    const tenant = path.join(dir, "work", "tools", "bash")
    const run = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    fs.symlinkSync(outside, path.join(run.path, "escape"))
    await run.release()
    fs.symlinkSync(outside, path.join(tenant, "link-run"))
    fs.mkdirSync(path.join(tenant, "manifest-link"))
    fs.symlinkSync(path.join(outside, "canary.txt"), path.join(tenant, "manifest-link", ".pi-work-run.json"))
    fs.mkdirSync(path.join(tenant, "leases-link"))
    fs.writeFileSync(path.join(tenant, "leases-link", ".pi-work-run.json"), JSON.stringify({ version: 1, category: "tools", tenant: "bash", runId: "leases-link", createdAt: 0 }))
    fs.symlinkSync(outside, path.join(tenant, "leases-link", ".leases"))
    const report = await storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxAgeMs: 0, maxInactiveRuns: 0 } })
    expect(report.removed.map((r) => r.runId)).toEqual([run.runId])
    expect(report.unowned.map((u) => u.name).sort()).toEqual(["link-run", "manifest-link"])
    expect(report.active).toEqual(["leases-link"])
    expect(fs.readdirSync(outside)).toEqual(["canary.txt"])
    const after = fs.lstatSync(path.join(outside, "canary.txt"))
    expect([after.mtimeMs, after.mode, fs.readFileSync(path.join(outside, "canary.txt"), "utf8")]).toEqual([before.mtimeMs, before.mode, "precious"])
    for (const name of ["link-run", "manifest-link", "leases-link"]) expect(fs.existsSync(path.join(tenant, name))).toBe(true)
    await storage.close()
  })
})
