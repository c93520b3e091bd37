/**
 * Measurement 4: acquire + release of generated runs through the Promise facade (durable: fsync'd
 * manifest) vs `fs.mkdtemp` + manifest write (`wx`) + `rm` in the same process, alternating blocks.
 * A second row shows what retention on costs the acquirer: acquires in a tenant holding many inactive runs
 * with files, while the background prune they start deletes them (in the same block group as the new runs).
 *
 * What the blocks leave (ours' runs, the C floor's) stays until the measurement ends: journal-less ext4 (this
 * machine's) avoids reusing an inode freed in the last 60 s (360 s while its inode-table block is dirty) when
 * it allocates one, where it can (`recently_deleted` in the kernel's `find_inode_bit`, one inode-table lookup
 * per skipped inode), so removing a block's 6,000 inodes between blocks slowed our next blocks and the C
 * floor's (BENCHMARKS.md "Acquire: the inode shadow on journal-less ext4"). For the same reason the first block waits for earlier removals to age.
 * Our runs' own deletion, and the shadow it leaves, is the prune's cost (measurement 1 and the retention row).
 */
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { openAgentStorage } from "../src/promise.js"
import { BENCH_CATEGORY, buildTenant, ensureWorkRoot, removeTree, tenantDirOf } from "./fixtures.js"
import { buildFloor, type FloorTiming, tryFloor } from "./floor.js"
import type { Measurement } from "./result.js"
import { nowMs, settle, summarize } from "./util.js"

export interface AcquireOptions {
  readonly root: string
  readonly ops: number
  readonly reps: number
  readonly settleMs: number
  /** Inactive runs (with files) planted before the retention-on row. */
  readonly inactiveRuns: number
  /** Pause before the first block, so inodes freed by earlier measurements count as old (ext4: 60 s once written back). */
  readonly freedInodesAgeMs: number
  readonly log: (line: string) => void
}

export const benchAcquire = async (o: AcquireOptions): Promise<Measurement> => {
  const agentDir = path.join(o.root, "acquire-agent")
  ensureWorkRoot(agentDir)
  const baseDir = path.join(o.root, "acquire-baseline")
  await fsp.mkdir(baseDir, { recursive: true })
  const store = await openAgentStorage({ agentDir, migrate: false })
  const manifest = JSON.stringify({ version: 2, category: BENCH_CATEGORY, tenant: "acq", runId: "x", kind: "generated", createdAt: 0, createdBy: { host: os.hostname(), pid: process.pid } })
  const ours: Array<number> = []
  const base: Array<number> = []
  const retention: Array<number> = []
  const maxSingle: Array<number> = []
  /** The same pair's syscalls in C, and the baseline's (floor.c), per op: what the disk alone costs. */
  const floorOurs: Array<number> = []
  const floorBase: Array<number> = []
  const built = buildFloor(o.root)
  if ("why" in built) o.log(`acquire: no floor rows (${built.why})`)
  /** The C floor's run directories, removed with everything else once the blocks are done. */
  const floorDirs: Array<string> = []
  try {
    // Warm-up: first acquire makes the tenant directories, JIT settles.
    for (let i = 0; i < 20; i++) await (await store.acquireWorkRun({ category: BENCH_CATEGORY, tenant: "acq", retention: false })).release()
    if (o.freedInodesAgeMs > 0) {
      o.log(`acquire: waiting ${o.freedInodesAgeMs} ms for the inodes earlier measurements freed to age`)
      await settle(o.freedInodesAgeMs)
    }
    for (let rep = 0; rep < o.reps; rep++) {
      const order = rep % 2 === 0 ? ["ours", "base"] : ["base", "ours"]
      for (const who of order) {
        // A fresh tenant per block, kept to the end (the header; and the store remembers tenants it made).
        const tenant = `acq-${rep}`
        await settle(o.settleMs)
        const t0 = nowMs()
        if (who === "ours") {
          for (let i = 0; i < o.ops; i++) {
            const lease = await store.acquireWorkRun({ category: BENCH_CATEGORY, tenant, retention: false })
            await lease.release()
          }
          ours.push(((nowMs() - t0) * 1000) / o.ops)
        } else {
          for (let i = 0; i < o.ops; i++) {
            const dir = await fsp.mkdtemp(path.join(baseDir, "run-"))
            await fsp.writeFile(path.join(dir, ".pi-work-run.json"), manifest, { flag: "wx" })
            await fsp.rm(dir, { recursive: true })
          }
          base.push(((nowMs() - t0) * 1000) / o.ops)
        }
      }
      o.log(`acquire #${rep + 1}: ours ${ours.at(-1)!.toFixed(0)} µs/op, baseline ${base.at(-1)!.toFixed(0)} µs/op`)
      if ("floor" in built) {
        // Per op as the program timed its loop (as ours and the baseline above time theirs: no start-up).
        const perOp = (t: FloorTiming) => (t.inside.wall * 1000) / o.ops
        const pair = await tryFloor(o.log, "acquire", async () => {
          const timings: Record<string, number> = {}
          for (const who of rep % 2 === 0 ? ["acquire", "mkdtemp"] : ["mkdtemp", "acquire"]) {
            const dir = path.join(o.root, `acquire-floor-${who}-${rep}`)
            await fsp.mkdir(dir, { recursive: true })
            floorDirs.push(dir)
            await settle(o.settleMs)
            timings[who] = perOp(await built.floor([who, dir, String(o.ops)]))
          }
          return { ours: timings["acquire"]!, base: timings["mkdtemp"]! }
        })
        if (pair !== undefined) {
          floorOurs.push(pair.ours)
          floorBase.push(pair.base)
          o.log(`acquire floor (C) #${rep + 1}: pair ${pair.ours.toFixed(0)} µs/op, mkdtemp ${pair.base.toFixed(0)} µs/op`)
        }
      }
    }
    // Retention on: the tenant holds inactive runs with files; the first acquire starts a background prune.
    if (o.inactiveRuns > 0) {
      const tenant = "acq-retained"
      buildTenant(tenantDirOf(agentDir, tenant), tenant, { runs: o.inactiveRuns, filesPerRun: 40 })
      await settle(o.settleMs)
      const fresh = await openAgentStorage({ agentDir, migrate: false })
      try {
        const n = Math.min(o.ops, 200)
        const t0 = nowMs()
        let worst = 0
        for (let i = 0; i < n; i++) {
          const s = nowMs()
          const lease = await fresh.acquireWorkRun({ category: BENCH_CATEGORY, tenant, retention: { maxInactiveRuns: 0 } })
          await lease.release()
          worst = Math.max(worst, nowMs() - s)
        }
        retention.push(((nowMs() - t0) * 1000) / n)
        maxSingle.push(worst * 1000)
      } finally {
        await fresh.close()
      }
    }
  } finally {
    try {
      await store.close()
    } finally {
      removeTree(agentDir)
      removeTree(baseDir)
      for (const dir of floorDirs) removeTree(dir)
    }
  }
  const oursS = summarize(ours)
  const baseS = summarize(base)
  const rows: Measurement["rows"] = [
    { label: `acquire+release ×${o.ops}`, unit: "µs/op", ours: oursS, baseline: baseS, baselineName: "mkdtemp+wx+rm", ratio: oursS.median / baseS.median, target: 3 }
  ]
  const extra = retention.length > 0
    ? [
      { label: `… retention on, ${o.inactiveRuns} inactive runs`, unit: "µs/op", ours: summarize(retention), baseline: oursS, baselineName: "retention off", ratio: summarize(retention).median / oursS.median },
      { label: "… slowest single acquire (retention on)", unit: "µs", ours: summarize(maxSingle) }
    ]
    : []
  const floor = floorOurs.length === 0
    ? []
    : [{
      label: "… floor: the same syscalls in C",
      unit: "µs/op",
      ours: summarize(floorOurs),
      baseline: summarize(floorBase),
      baselineName: "mkdtemp+wx+rm in C",
      ratio: summarize(floorOurs).median / summarize(floorBase).median
    }]
  return { name: "4 acquire", rows: [...rows, ...floor, ...extra], notes: { ops: o.ops, reps: o.reps } }
}
