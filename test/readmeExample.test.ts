/** The README's Effect example, run against a temp agent dir so it cannot rot. */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { expect, it } from "vitest"
import { AgentDir, NodeFileSystemLive, NodeHostLive, WorkRuns } from "../src/index.js"

it("the README's Effect example acquires, releases with the scope, and dry-runs a prune", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-readme-"))
  try {
    const base = Layer.mergeAll(NodeFileSystemLive, NodeHostLive)
    const agentDir = AgentDir.layer(dir).pipe(Layer.provide(NodeHostLive))
    const StorageLive = WorkRuns.layer().pipe(Layer.provideMerge(Layer.merge(base, agentDir)))
    let runPath = ""
    const program = Effect.scoped(Effect.gen(function*() {
      const workRuns = yield* WorkRuns
      const run = yield* workRuns.acquire({ category: "tools", tenant: "bash" })
      runPath = run.path
      return yield* workRuns.prune({ category: "tools", tenant: "bash", dryRun: true })
    }))
    const report = await Effect.runPromise(Effect.provide(program, StorageLive))
    expect(report.active).toEqual([path.basename(runPath)])
    expect(fs.readdirSync(path.join(runPath, ".leases"))).toEqual([])
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
