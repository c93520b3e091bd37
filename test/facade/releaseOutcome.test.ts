/**
 * The Promise facade on the real filesystem: a lease released by `await using` or `close()` can delete its run
 * (`deleteOnClose`) and still say what happened (`onRelease`), so `keptBecause` is never lost with the lease.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { acquireWorkRun, openAgentStorage, type ReleaseOutcome } from "../../src/promise.js"

let dir = ""
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-release-outcome-"))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

describe("acquireWorkRun({ deleteOnClose, onRelease })", () => {
  it("await using deletes the run and hands over the outcome; a run another lease holds is kept, and why is heard", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    try {
      const heard: Array<ReleaseOutcome> = []
      let runPath = ""
      {
        await using run = await storage.acquireWorkRun({
          category: "tools", tenant: "bash", retention: false, deleteOnClose: true, onRelease: (o) => heard.push(o)
        })
        runPath = run.path
        fs.writeFileSync(path.join(run.path, "out.txt"), "scratch")
      }
      expect(fs.existsSync(runPath)).toBe(false)
      expect(heard).toEqual([{ released: true, deleted: true }])

      const other = await storage.acquireWorkRun({ category: "tools", tenant: "bash", runId: "shared", retention: false })
      {
        await using _run = await storage.acquireWorkRun({
          category: "tools", tenant: "bash", runId: "shared", retention: false, deleteOnClose: true, onRelease: (o) => heard.push(o)
        })
      }
      expect(heard).toHaveLength(2)
      expect(heard[1]).toMatchObject({ released: true, deleted: false, keptTag: "LeaseHeld" })
      expect(heard[1]!.keptBecause).toContain("another live lease")
      expect(fs.existsSync(other.path)).toBe(true)
      await other.release()
    } finally {
      await storage.close()
    }
  })

  it("close() releases with deleteOnClose and is heard; a release by hand is heard once, with its own options", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    const heard: Array<[string, ReleaseOutcome]> = []
    const closing = await storage.acquireWorkRun({
      category: "tools", tenant: "bash", retention: false, deleteOnClose: true, onRelease: (o) => heard.push(["closing", o])
    })
    const byHand = await storage.acquireWorkRun({
      category: "tools", tenant: "bash", retention: false, deleteOnClose: true, onRelease: (o) => heard.push(["by hand", o])
    })
    expect(await byHand.release()).toEqual({ released: true, deleted: false })
    await storage.close()
    expect(heard).toEqual([["by hand", { released: true, deleted: false }], ["closing", { released: true, deleted: true }]])
    expect(fs.existsSync(closing.path)).toBe(false)
    expect(fs.existsSync(byHand.path)).toBe(true)
  })

  it("the module-level acquireWorkRun takes the same options", async () => {
    const heard: Array<ReleaseOutcome> = []
    let runPath = ""
    {
      await using run = await acquireWorkRun({
        agentDir: dir, category: "tools", tenant: "bash", retention: false, deleteOnClose: true, onRelease: (o) => heard.push(o)
      })
      runPath = run.path
    }
    expect(heard).toEqual([{ released: true, deleted: true }])
    expect(fs.existsSync(runPath)).toBe(false)
  })

  it("what onRelease throws rejects that release, after the lease is gone", async () => {
    const storage = await openAgentStorage({ agentDir: dir })
    try {
      const bug = new Error("listener bug")
      const run = await storage.acquireWorkRun({
        category: "tools", tenant: "bash", retention: false, onRelease: () => {
          throw bug
        }
      })
      await expect(run.release()).rejects.toBe(bug)
      expect(fs.readdirSync(path.join(run.path, ".leases"))).toEqual([])
    } finally {
      await storage.close()
    }
  })
})
