/**
 * WR8a and WR2 through the Promise facade on the real filesystem: a malformed policy rejects with
 * `InvalidPolicy` and deletes nothing; a non-string segment is `InvalidSegment` (thrown synchronously by
 * `getStorage`), never a `TypeError`.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { extensionContext, openAgentStorage, pruneWorkTenant } from "../../src/promise.js"

let dir = ""
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-facade-input-"))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

/** An owned run unused since the epoch: any valid prune removes it. */
const plantOldRun = (category: string, tenant: string, runId: string) => {
  const runDir = path.join(dir, "work", category, tenant, runId)
  fs.mkdirSync(runDir, { recursive: true, mode: 0o700 })
  for (const d of [path.join(dir, "work"), path.join(dir, "work", category), path.join(dir, "work", category, tenant)]) fs.chmodSync(d, 0o700)
  fs.writeFileSync(path.join(runDir, ".pi-work-run.json"), JSON.stringify({ version: 1, category, tenant, runId, createdAt: 0 }))
  fs.writeFileSync(path.join(runDir, "out.txt"), "kept unless the policy is valid")
  return runDir
}

const BAD: ReadonlyArray<readonly [unknown, string, string]> = [
  [{ maxBytes: NaN }, "maxBytes", "not-finite"],
  [{ maxBytes: -5 }, "maxBytes", "negative"],
  [{ maxInactiveRuns: 1.5 }, "maxInactiveRuns", "not-an-integer"],
  [{ maxAgeMs: "2" }, "maxAgeMs", "not-a-number"],
  [{ maxAge: 0 }, "maxAge", "unknown-key"],
  [null, "policy", "not-an-object"]
]

describe("malformed input through the Promise facade", () => {
  it("every policy entry point rejects InvalidPolicy and nothing is deleted", async () => {
    const tool = plantOldRun("tools", "bash", "old")
    const ext = plantOldRun("extensions", "notes", "old")
    const storage = await openAgentStorage({ agentDir: dir })
    const view = storage.getStorage("notes")
    for (const [policy, field, rule] of BAD) {
      const expected = { _tag: "InvalidPolicy", field, rule }
      await expect(storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: policy as never })).rejects.toMatchObject(expected)
      await expect(pruneWorkTenant({ category: "tools", tenant: "bash", policy: policy as never, agentDir: dir })).rejects.toMatchObject(expected)
      await expect(storage.acquireWorkRun({ category: "tools", tenant: "bash", retention: policy as never })).rejects.toMatchObject(expected)
      await expect(view.pruneWork({ policy: policy as never })).rejects.toMatchObject(expected)
      await expect(view.acquireWorkRun({ retention: policy as never })).rejects.toMatchObject(expected)
    }
    const error = await storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxBytes: NaN } }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toBe("invalid retention policy: maxBytes = NaN: a limit must be finite; nothing was deleted")
    // Both old runs are still there, and no acquisition left a run or a lease behind.
    expect(fs.readFileSync(path.join(tool, "out.txt"), "utf8")).toBe("kept unless the policy is valid")
    expect(fs.existsSync(path.join(ext, "out.txt"))).toBe(true)
    expect(fs.readdirSync(path.join(dir, "work", "tools", "bash")).filter((n) => !n.startsWith("."))).toEqual(["old"])
    // The same run goes with a valid policy: the refusals were real.
    const report = await storage.pruneWorkTenant({ category: "tools", tenant: "bash", policy: { maxBytes: 0 } })
    expect(report.removed.map((r) => r.runId)).toEqual(["old"])
    await storage.close()
  })

  it("non-string segments are InvalidSegment; getStorage throws it synchronously", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    for (const bad of [undefined, 5, {}, null]) {
      let thrown: unknown
      try {
        storage.getStorage(bad as never)
      } catch (e) {
        thrown = e
      }
      expect(thrown).toBeInstanceOf(Error)
      expect(thrown).toMatchObject({ _tag: "InvalidSegment", field: "namespace", rule: "not-a-string" })
      expect(() => extensionContext(bad as never)).toThrow(expect.objectContaining({ _tag: "InvalidSegment", field: "extId", rule: "not-a-string" }))
      await expect(storage.acquireWorkRun({ category: bad as never, tenant: "bash" })).rejects.toMatchObject({ _tag: "InvalidSegment", field: "category", rule: "not-a-string" })
      await expect(storage.pruneWorkTenant({ category: "tools", tenant: bad as never })).rejects.toMatchObject({ _tag: "InvalidSegment", field: "tenant" })
      await expect(storage.getProcessWorkRun({ category: "tools", tenant: bad as never })).rejects.toMatchObject({ _tag: "InvalidSegment", field: "tenant" })
    }
    expect((() => {
      try {
        storage.getStorage(5 as never)
      } catch (e) {
        return (e as Error).message
      }
    })()).toBe("invalid namespace: must be a string (got a number: 5)")
    expect(fs.readdirSync(dir)).toEqual([])
    await storage.close()
  })
})
