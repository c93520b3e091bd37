/**
 * The process run through the facade (WR7): concurrent first calls on one store get one run, and releasing it
 * (even with `delete`) keeps it for every other caller and says why.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "vitest"
import { PROCESS_RUN_KEPT } from "../../src/domain/PruneReport.js"
import { getProcessWorkRun, openAgentStorage } from "../../src/promise.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

describe("the facade's process run", () => {
  it("concurrent first calls on one store get the same run, every time", async () => {
    for (let round = 0; round < 20; round++) {
      const storage = await openAgentStorage({ agentDir: scratch("pi-process-run-") })
      try {
        const o = { category: "tools", tenant: `t${round % 3}` }
        const runs = await Promise.all([storage.getProcessWorkRun(o), storage.getProcessWorkRun(o), storage.getProcessWorkRun(o)])
        assert.strictEqual(new Set(runs.map((r) => r.runId)).size, 1, `round ${round}: ${runs.map((r) => r.runId).join(", ")}`)
        const tenantDir = path.join(storage.workRoot, o.category, o.tenant)
        assert.deepStrictEqual(fs.readdirSync(tenantDir).filter((n) => !n.startsWith(".")), [runs[0]!.runId])
      } finally {
        await storage.close()
      }
    }
  })

  it("the module-level helper: concurrent first calls share one store and one run", async () => {
    const agentDir = scratch("pi-process-run-")
    const o = { agentDir, category: "tools", tenant: "shared" }
    const runs = await Promise.all([getProcessWorkRun(o), getProcessWorkRun(o), getProcessWorkRun(o)])
    assert.strictEqual(new Set(runs.map((r) => r.runId)).size, 1, runs.map((r) => r.runId).join(", "))
    assert.deepStrictEqual(fs.readdirSync(path.join(agentDir, "work", "tools", "shared")).filter((n) => !n.startsWith(".")), [runs[0]!.runId])
  })

  it("release({ delete: true }) is a no-op that says why; the run stays usable", async () => {
    const storage = await openAgentStorage({ agentDir: scratch("pi-process-run-") })
    try {
      const run = await storage.getProcessWorkRun({ category: "tools", tenant: "bash" })
      assert.deepStrictEqual(await run.release({ delete: true }), { released: false, deleted: false, keptTag: "ProcessRun", keptBecause: PROCESS_RUN_KEPT })
      fs.writeFileSync(path.join(run.path, "out.txt"), "still here")
      assert.strictEqual((await storage.getProcessWorkRun({ category: "tools", tenant: "bash" })).path, run.path)
    } finally {
      await storage.close()
    }
  })
})
