/**
 * The facade and the Effect API as a new user meets them (docs/work-runs.md "Work runs"): a prune right after an acquire, what a
 * release resolves, warnings (`onWarning`, Effect's logger), the error classes from `/promise`, and a real
 * child process joining its parent's generated run from `workRootEnv`.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer, Logger, TestClock } from "effect"
import { it as effectIt } from "@effect/vitest"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import * as Promised from "../../src/promise.js"
import {
  FileSystemError,
  InvalidSegment,
  openAgentStorage,
  type StorageErrorTag,
  type StorageWarning,
  UnsafeRoot
} from "../../src/promise.js"
import { spawnProcess } from "../support/memoryProcess.js"

let dir = ""
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-newuser-"))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const DAY = 24 * 60 * 60 * 1000
const tenantDir = () => path.join(dir, "work", "tools", "bash")

/** A released run whose manifest says it was last used `daysAgo` days ago. */
const oldRun = (runId: string, daysAgo: number) => {
  const runDir = path.join(tenantDir(), runId)
  fs.mkdirSync(path.join(runDir, ".leases"), { recursive: true, mode: 0o700 })
  const at = Date.now() - daysAgo * DAY
  fs.writeFileSync(path.join(runDir, ".pi-work-run.json"), JSON.stringify({
    version: 2, category: "tools", tenant: "bash", runId, kind: "named", createdAt: at, releasedAt: at,
    createdBy: { host: os.hostname(), pid: 1 }
  }))
  // Last written then on the file system's clock too (ages are judged on it: docs/work-runs.md "Retention").
  fs.utimesSync(path.join(runDir, ".pi-work-run.json"), at / 1000, at / 1000)
}

describe("the facade", () => {
  it("a prune right after an acquire (which started this store's background prune) is never busy: it waits, then runs", async () => {
    fs.mkdirSync(tenantDir(), { recursive: true, mode: 0o700 })
    fs.chmodSync(path.join(dir, "work"), 0o700)
    fs.chmodSync(path.join(dir, "work", "tools"), 0o700)
    for (let i = 0; i < 5; i++) oldRun(`old-${i}`, 1)
    const storage = await openAgentStorage({ agentDir: dir })
    // Default retention: the acquire starts a background prune of tools/bash.
    const run = await storage.acquireWorkRun({ category: "tools", tenant: "bash" })
    const report = await storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } })
    expect(report.busy).toBe(false)
    expect(report.active).toEqual([run.runId])
    expect(fs.readdirSync(tenantDir()).filter((n) => !n.startsWith("."))).toEqual([run.runId])
    await storage.close()
  })

  it("release resolves { released, deleted, keptBecause? }: kept while another holder is live, deleted when alone", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const a = await storage.acquireWorkRun({ category: "tools", tenant: "bash", runId: "shared", retention: false })
    const b = await storage.acquireWorkRun({ category: "tools", tenant: "bash", runId: "shared", retention: false })
    const kept = await a.release({ delete: true })
    expect(kept).toMatchObject({ released: true, deleted: false })
    expect(kept.keptBecause).toMatch(/live lease/)
    expect(fs.existsSync(a.path)).toBe(true)
    expect(await a.release()).toMatchObject({ released: true, deleted: false })
    expect(await b.release({ delete: true })).toEqual({ released: true, deleted: true })
    expect(fs.existsSync(b.path)).toBe(false)
    await storage.close()
  })

  it("onWarning gets typed warnings: a background prune refused with UnsafeRoot, a lease that could not be removed", async () => {
    const warnings: Array<StorageWarning> = []
    const storage = await openAgentStorage({ agentDir: dir, onWarning: (w) => warnings.push(w) })
    const first = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    await first.release()
    fs.chmodSync(tenantDir(), 0o777)
    const run = await storage.acquireWorkRun({ category: "tools", tenant: "bash" })
    // The lease replaced by a non-empty directory: unlink cannot take it.
    const [leaseName] = fs.readdirSync(path.join(run.path, ".leases"))
    const leasePath = path.join(run.path, ".leases", leaseName!)
    fs.rmSync(leasePath)
    fs.mkdirSync(leasePath)
    fs.writeFileSync(path.join(leasePath, "x"), "x")
    // The background prune the acquire started refuses the tenant; close() would stop it at its first yield, so
    // the test waits for its word first (a lease operation never waits for it: docs/work-runs.md "Retention").
    await vi.waitFor(() => expect(warnings).toContainEqual(expect.objectContaining({
      _tag: "BackgroundPruneFailed", category: "tools", tenant: "bash", reason: "UnsafeRoot"
    })), { timeout: 60_000, interval: 10 })
    await run.release()
    await storage.close()
    expect(warnings).toContainEqual(expect.objectContaining({ _tag: "LeaseNotRemoved", leasePath }))
    for (const w of warnings) expect(w.message).not.toBe("")
    expect(fs.existsSync(first.path)).toBe(true)
  })
})

describe("errors from pi-agent-storage/promise", () => {
  it("the error classes and their tags come from /promise, so a Promise caller can instanceof", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const error = await storage.acquireWorkRun({ category: "tools", tenant: "CON" }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(InvalidSegment)
    const tag: StorageErrorTag = (error as InvalidSegment)._tag
    expect(tag).toBe("InvalidSegment")
    fs.mkdirSync(tenantDir(), { recursive: true })
    fs.chmodSync(tenantDir(), 0o777)
    const refused = await storage.pruneWorkTenant({ category: "tools", tenant: "bash" }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(UnsafeRoot)
    expect(refused).not.toBeInstanceOf(FileSystemError)
    // The errors of the profile, the snapshots and the history are classes from /promise too.
    const profileError = await storage.userProfile().add("two\nlines").catch((e: unknown) => e)
    expect(profileError).toBeInstanceOf(Promised.InvalidEntry)
    const missing = await storage.stateBackups({ root: path.join(dir, "..", "backups-for-test") }).restore("nope").catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(Promised.SnapshotNotFound)
    for (const name of ["EntryNotFound", "AmbiguousEntry", "UnsafeProfile", "ProfileBusy", "UnsafeBackupRoot", "BackupBusy", "SnapshotCorrupt", "GitFailed", "UnknownRevision", "ConfigHistoryBusy", "TiersOverlap", "InvalidPolicy"]) {
      expect(typeof (Promised as Record<string, unknown>)[name], name).toBe("function")
    }
    await storage.close()
  })
})

describe("a child process joins its parent's run from workRootEnv", () => {
  it("acquireWorkRun({ category, tenant, runId }) from PI_WORK_* joins a generated run with the child's own lease", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const run = await storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    const env = storage.workRootEnv(run)
    expect(env).toEqual({
      PI_WORK_ROOT: path.join(dir, "work"),
      PI_WORK_RUN_DIR: run.path,
      PI_WORK_RUN_ID: run.runId,
      PI_WORK_CATEGORY: "tools",
      PI_WORK_TENANT: "bash"
    })
    const child = spawn(process.execPath, [path.join(import.meta.dirname, "..", "fixtures", "joiner.mjs"), dir], {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "inherit"]
    })
    let out = ""
    const lines = (n: number) =>
      new Promise<Array<any>>((resolve, reject) => {
        const check = () => {
          const done = out.split("\n").filter((l) => l !== "")
          if (done.length >= n) resolve(done.map((l) => JSON.parse(l)))
        }
        child.stdout!.on("data", (chunk: Buffer) => {
          out += chunk.toString()
          check()
        })
        child.once("exit", (code) => (out.split("\n").filter((l) => l !== "").length < n ? reject(new Error(`joiner exited ${code}`)) : undefined))
        check()
      })
    const [joined] = await lines(1)
    expect(joined).toEqual({ path: run.path, runId: run.runId, kind: "generated", sameDir: true })
    expect(fs.readdirSync(path.join(run.path, ".leases"))).toHaveLength(2)
    // The parent is done first: the child's live lease keeps the run (and its file).
    const parentOutcome = await run.release({ delete: true })
    expect(parentOutcome).toMatchObject({ released: true, deleted: false })
    expect(fs.readFileSync(path.join(run.path, "from-child.txt"), "utf8")).toBe("hello")
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
    child.stdin!.end()
    const [, childOutcome] = await lines(2)
    expect(childOutcome).toEqual({ released: true, deleted: false })
    expect(await exited).toBe(0)
    expect(fs.readdirSync(path.join(run.path, ".leases"))).toEqual([])
    await storage.close()
  })
})

describe("warnings through Effect's logger", () => {
  effectIt.scoped("a failing heartbeat is logged as a warning with annotations (HeartbeatFailed)", () =>
    Effect.gen(function*() {
      const logged: Array<{ message: unknown; annotations: Record<string, unknown>; level: string }> = []
      const capture = Logger.make(({ annotations, logLevel, message }) => {
        logged.push({ message, level: logLevel.label, annotations: Object.fromEntries(annotations) })
      })
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      yield* Effect.gen(function*() {
        const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
        world.injectFault({ op: "writeFileAtomic", path: run.leasePath, count: Infinity, errno: "EIO" })
        yield* TestClock.adjust(6 * 60 * 1000)
        const entry = logged.find((l) => l.annotations["warning"] === "HeartbeatFailed")
        expect(entry?.level).toBe("WARN")
        expect(entry?.annotations["leasePath"]).toBe(run.leasePath)
        expect(String(entry?.message)).toContain("stale")
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)), Effect.scoped)
    }))
})
