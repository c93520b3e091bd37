/**
 * The facade's lifecycle on the real filesystem: every lease is a child scope of the store's scope (a view's
 * leases of the view's), so `close()` releases them all by construction; the module-level helpers share one
 * store per agent dir (an RcMap entry), opened once while in use.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { acquireWorkRun, getProcessWorkRun, openAgentStorage, pruneWorkTenant } from "../../src/promise.js"

let dir = ""
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-lifecycle-"))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const leases = (runPath: string) => fs.readdirSync(path.join(runPath, ".leases"))

describe("close() closes the store's scope", () => {
  it("releases the store's leases, a view's leases and the process run; a release afterwards touches nothing", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const a = await storage.acquireWorkRun({ category: "tools", tenant: "a", retention: false })
    const b = await storage.acquireWorkRun({ category: "tools", tenant: "b", runId: "named", retention: false })
    const ext = storage.getStorage("notes")
    const c = await ext.acquireWorkRun({ retention: false })
    const proc = await storage.getProcessWorkRun({ category: "tools", tenant: "proc" })
    // Released early by its holder: its scope is closed already, close() leaves it alone.
    expect(await b.release()).toEqual({ released: true, deleted: false })
    for (const run of [a, c, proc]) expect(leases(run.path)).toHaveLength(1)
    await storage.close()
    for (const run of [a, b, c, proc]) expect(leases(run.path)).toEqual([])
    // Idempotent, and after close: the outcome says so, nothing is touched.
    expect(await b.release()).toEqual({ released: true, deleted: false })
    expect(await a.release({ delete: true })).toMatchObject({ released: false, deleted: false, reason: "already released" })
    expect(fs.existsSync(a.path)).toBe(true)
    await ext.unload() // after close too
    await expect(ext.acquireWorkRun()).rejects.toMatchObject({ _tag: "StorageClosed" })
    await expect(storage.userProfile().read()).rejects.toMatchObject({ _tag: "StorageClosed", agentDir: dir })
    expect(() => storage.stateBackups()).toThrow(expect.objectContaining({ _tag: "StorageClosed" }))
    await storage.close() // twice is fine
  })

  it("a call in flight when close() begins completes (its lease is then released); calls after it reject", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const pending = storage.acquireWorkRun({ category: "tools", tenant: "late", retention: false })
    const closing = storage.close()
    const lease = await pending
    await closing
    expect(leases(lease.path)).toEqual([])
    await expect(storage.pruneWorkTenant({ category: "tools", tenant: "late" })).rejects.toMatchObject({ _tag: "StorageClosed" })
  })
})

describe("module-level helpers: one shared store per agent dir while in use", () => {
  it("the store is opened once: a legacy entry planted after it opened is not migrated by later helper calls", async () => {
    const first = await acquireWorkRun({ agentDir: dir, category: "tools", tenant: "shared", retention: false })
    const proc = await getProcessWorkRun({ agentDir: dir, category: "tools", tenant: "proc" })
    // A store opening now would migrate this root entry (start-up migration); the shared one is already open.
    fs.writeFileSync(path.join(dir, "trust.json"), "{}")
    const second = await acquireWorkRun({ agentDir: dir, category: "tools", tenant: "shared", retention: false })
    expect((await getProcessWorkRun({ agentDir: dir, category: "tools", tenant: "proc" })).runId).toBe(proc.runId)
    await first.release()
    await second.release()
    const report = await pruneWorkTenant({ agentDir: dir, category: "tools", tenant: "shared", policy: { maxInactiveRuns: 0 } })
    expect(report.removed.map((r) => r.runId).sort()).toEqual([first.runId, second.runId].sort())
    expect(fs.existsSync(path.join(dir, "trust.json"))).toBe(true)
    // The helper's lease release is idempotent (the same outcome again) and stops using the store once.
    expect(await first.release()).toEqual({ released: true, deleted: false })
  })
})
