/**
 * Measurement 3: peak RSS of a prune where nothing qualifies over a small and a large tree, each in a
 * fresh child process, plus an idle child (library loaded, runtime built, no scan) for reference.
 */
import * as path from "node:path"
import { BENCH_CATEGORY, buildTenant, ensureWorkRoot, entriesPerRun, removeTree, tenantDirOf } from "./fixtures.js"
import type { Measurement } from "./result.js"
import { BENCH_DIR, run, settle, summarize } from "./util.js"

export interface MemoryOptions {
  readonly root: string
  readonly smallEntries: number
  readonly largeEntries: number
  readonly filesPerRun: number
  readonly reps: number
  readonly log: (line: string) => void
}

const child = async (agentDir: string, tenant: string, idle: boolean) => {
  const args = ["--import", "tsx", path.join(BENCH_DIR, "memoryChild.ts"), agentDir, tenant, ...(idle ? ["--idle"] : [])]
  const r = await run(process.execPath, args)
  if (r.code !== 0) throw new Error(`memory child failed: ${r.stderr}`)
  const parsed = JSON.parse(r.stdout.trim().split("\n").pop()!) as { maxRssKiB: number; kept: number }
  return parsed
}

export const benchMemory = async (o: MemoryOptions): Promise<Measurement> => {
  const agentDir = path.join(o.root, "memory-agent")
  ensureWorkRoot(agentDir)
  const perRun = entriesPerRun({ runs: 1, filesPerRun: o.filesPerRun })
  const sizes = [
    { tenant: "small", runs: Math.ceil(o.smallEntries / perRun) },
    { tenant: "large", runs: Math.ceil(o.largeEntries / perRun) }
  ]
  for (const s of sizes) {
    o.log(`memory: building ${s.tenant} tenant, ${s.runs} runs (${s.runs * perRun} entries)`)
    buildTenant(tenantDirOf(agentDir, s.tenant), s.tenant, { runs: s.runs, filesPerRun: o.filesPerRun })
  }
  await settle(500)
  const rss: Record<string, Array<number>> = { idle: [], small: [], large: [] }
  try {
    for (let rep = 0; rep < o.reps; rep++) {
      const order = rep % 2 === 0 ? ["idle", "small", "large"] : ["large", "small", "idle"]
      for (const which of order) {
        const size = sizes.find((s) => s.tenant === which)
        const r = await child(agentDir, which === "idle" ? "small" : which, which === "idle")
        if (size !== undefined && r.kept !== size.runs) throw new Error(`memory child kept ${r.kept}/${size.runs}`)
        rss[which]!.push(r.maxRssKiB / 1024)
      }
    }
  } finally {
    removeTree(agentDir)
  }
  const idle = summarize(rss.idle!)
  const small = summarize(rss.small!)
  const large = summarize(rss.large!)
  return {
    name: "3 memory",
    rows: [
      { label: `peak RSS ${sizes[1]!.runs * perRun} vs ${sizes[0]!.runs * perRun} entries`, unit: "MiB", ours: large, baseline: small, baselineName: "small tree", ratio: large.median / small.median, target: 1.2 },
      { label: "peak RSS idle (no scan)", unit: "MiB", ours: idle }
    ],
    notes: { category: BENCH_CATEGORY, smallEntries: sizes[0]!.runs * perRun, largeEntries: sizes[1]!.runs * perRun, reps: o.reps }
  }
}
