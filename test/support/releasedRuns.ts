/**
 * A tools/bash tenant of released runs on a real file system (manifest and one file each, oldest first, two
 * days old, created by another host): what a background prune of that tenant removes. For the Node tests of
 * the background prune and its pacing.
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"

export const TOOL = { category: "tools", tenant: "bash" } as const

/** `count` released runs in `agentDir`'s tools/bash tenant (the dirs made 0700); their ids, oldest first. */
export const plantReleasedRuns = (agentDir: string, count: number) => {
  const tenantDir = NodePath.join(agentDir, "work", TOOL.category, TOOL.tenant)
  fs.mkdirSync(tenantDir, { recursive: true, mode: 0o700 })
  for (const dir of [agentDir, NodePath.join(agentDir, "work"), NodePath.dirname(tenantDir), tenantDir]) fs.chmodSync(dir, 0o700)
  const createdAt = Date.now() - 2 * 24 * 60 * 60 * 1000
  const runIds: Array<string> = []
  for (let i = 0; i < count; i++) {
    const runId = `run-${String(i).padStart(6, "0")}`
    const runDir = NodePath.join(tenantDir, runId)
    fs.mkdirSync(runDir, { mode: 0o700 })
    fs.writeFileSync(NodePath.join(runDir, ".pi-work-run.json"), JSON.stringify({
      version: 2,
      ...TOOL,
      runId,
      kind: "generated",
      createdAt: createdAt + i,
      createdBy: { host: "elsewhere", pid: 1 },
      releasedAt: createdAt + i + 1000
    }), { mode: 0o600 })
    fs.writeFileSync(NodePath.join(runDir, "out.txt"), `output of ${runId}\n`)
    runIds.push(runId)
  }
  return { agentDir, tenantDir, runIds }
}
