/**
 * Measurements 1 (prune vs `rm -rf`) and 2 (a prune where nothing qualifies vs `du -sb`) over the same
 * released-runs tree. Ours runs in this process (wall + process CPU); the baselines are child processes
 * timed by bash's `time` (wall + their own CPU).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { openAgentStorage } from "../src/promise.js"
import * as NodeFileSystem from "../src/layers/NodeFileSystem.js"
import * as NodeHost from "../src/layers/NodeHost.js"
import { AgentDir } from "../src/services/AgentDir.js"
import { StorageConfig } from "../src/services/StorageConfig.js"
import { WorkRuns } from "../src/services/WorkRuns.js"
import { BENCH_CATEGORY, buildTenant, copyTree, ensureWorkRoot, removeTree, tenantDirOf, totalEntries, type TreeShape } from "./fixtures.js"
import { buildFloor, tryFloor } from "./floor.js"
import { nodeFloorAddon, nodeFloorPrune } from "./nodeFloor.js"
import type { Measurement, Row } from "./result.js"
import { cpuMs, nowMs, runTimed, settle, summarize } from "./util.js"

/** Removals at once, as the facade's store reads it (`PI_STORAGE_REMOVER_THREADS`). */
const REMOVER_THREADS = Effect.runSync(Effect.provide(StorageConfig, StorageConfig.layerFromEnv)).removerThreads

export interface TreeOptions {
  readonly root: string
  readonly shape: TreeShape
  readonly reps: number
  readonly settleMs: number
  readonly log: (line: string) => void
}

/** A ceiling nothing ever exceeds, so a prune under it removes nothing: a pure measurement (scan). */
export const NOTHING_QUALIFIES = {
  maxAgeMs: Number.MAX_SAFE_INTEGER,
  maxInactiveRuns: Number.MAX_SAFE_INTEGER,
  maxBytes: Number.MAX_SAFE_INTEGER,
  maxScannedRuns: Number.MAX_SAFE_INTEGER,
  maxEntries: Number.MAX_SAFE_INTEGER,
  maxDepth: 64
}

/** The Effect runtime of a store whose ceiling lets a prune keep everything (the facade's ceiling is WR9). */
export const scanRuntime = (agentDir: string) => {
  const base = Layer.mergeAll(NodeFileSystem.layer, NodeHost.layer)
  const dir = AgentDir.layerWith(agentDir).pipe(Layer.provide(base))
  const workRuns = WorkRuns.layerWith({ opportunisticRetention: false }).pipe(
    Layer.provide(Layer.merge(base, dir)),
    Layer.provide(StorageConfig.layerWith({ retentionCeiling: NOTHING_QUALIFIES })),
    Layer.provide(StorageConfig.layerFromEnv)
  )
  return ManagedRuntime.make(workRuns)
}

export const scanOnce = (runtime: ReturnType<typeof scanRuntime>, tenant: string) =>
  runtime.runPromise(Effect.flatMap(WorkRuns, (w) => w.prune({ category: BENCH_CATEGORY, tenant, policy: NOTHING_QUALIFIES })))

interface Timing {
  readonly wall: number
  readonly cpu: number
}

/** A wall row and a CPU row comparing our timings with a baseline's medians; targets only where given. */
const versus = (
  ours: ReadonlyArray<Timing>,
  base: ReadonlyArray<Timing>,
  baselineName: string,
  labelSuffix: string,
  targets: { readonly wall?: number; readonly cpu?: number }
): Array<Row> =>
  (["wall", "cpu"] as const).map((kind) => {
    const mine = summarize(ours.map((x) => x[kind]))
    const theirs = summarize(base.map((x) => x[kind]))
    const target = targets[kind]
    return {
      label: `${kind}${labelSuffix}`,
      unit: "ms",
      ours: mine,
      baseline: theirs,
      baselineName,
      ratio: mine.median / theirs.median,
      ...(target === undefined ? {} : { target })
    }
  })

/** `rm -rf` of a tenant's entries split over $2 parallel processes (by line number), then the tenant itself. */
const PARALLEL_RM = `cd "$1" && ls -A > ../parallel-rm.list && for k in $(seq 0 $(($2 - 1))); do
  awk -v n="$2" -v k="$k" 'NR % n == k' ../parallel-rm.list | xargs -r -d '\\n' rm -rf -- & done; wait
  cd .. && rm -f parallel-rm.list && rm -rf -- "$1"`

export const benchPrune = async (o: TreeOptions): Promise<Measurement> => {
  const agentDir = path.join(o.root, "prune-agent")
  ensureWorkRoot(agentDir)
  const tenant = "prune"
  const template = path.join(o.root, "prune-template")
  o.log(`prune: building ${o.shape.runs} runs × ${o.shape.filesPerRun} files (${totalEntries(o.shape)} entries)`)
  buildTenant(template, tenant, o.shape)
  const store = await openAgentStorage({ agentDir, migrate: false })
  const tenantDir = tenantDirOf(agentDir, tenant)
  const rmCopy = path.join(o.root, "rm-copy")
  const ours: Array<Timing> = []
  const base: Array<Timing> = []
  const parallel: Array<Timing> = []
  const floored: Array<Timing> = []
  /** The C floor without the removal walk's fstatat per file: beside `floored`, what the reported sizes cost. */
  const uncounted: Array<Timing> = []
  const nodeFloored: Array<Timing> = []
  const built = buildFloor(o.root)
  if ("why" in built) o.log(`prune: no floor rows (${built.why})`)
  const addon = nodeFloorAddon()
  if ("why" in addon) o.log(`prune: no plain-JavaScript floor row (${addon.why})`)
  /** The template copied afresh for a baseline or a floor, the disk left to settle. */
  const freshCopy = async () => {
    removeTree(rmCopy)
    copyTree(template, rmCopy)
    await settle(o.settleMs)
  }
  /** A floor's timing kept and logged; a failed floor (logged by `tryFloor`) leaves only its own rows out. */
  const keepFloor = (into: Array<Timing>, what: string, rep: number, timing: Timing | undefined) => {
    if (timing === undefined) return
    into.push(timing)
    o.log(`prune floor (${what}) #${rep + 1}: ${timing.wall.toFixed(0)} ms wall, ${timing.cpu.toFixed(0)} ms cpu`)
  }
  try {
    for (let rep = 0; rep < o.reps; rep++) {
      // Rotate which goes first so drift in the disk's state does not favour one side.
      // With several removals at once, rm gets the same parallelism in a further series, for honesty; the
      // floors (the same protocol's syscalls in C, floor.c, and in plain JavaScript, nodeFloor.ts) say what
      // the disk alone and Node without the Effect runtime cost.
      const series = [
        "ours",
        "rm",
        ...(REMOVER_THREADS > 1 ? ["parallel" as const] : []),
        ...("floor" in built ? ["floor" as const, "floorUncounted" as const] : []),
        ...("fsat" in addon ? ["nodeFloor" as const] : [])
      ] as const
      const order = series.map((_, i, all) => all[(i + rep) % all.length]!)
      for (const who of order) {
        if (who === "ours") {
          removeTree(tenantDir)
          copyTree(template, tenantDir)
          await settle(o.settleMs)
          const c0 = cpuMs()
          const t0 = nowMs()
          const report = await store.pruneWorkTenant({ category: BENCH_CATEGORY, tenant, policy: { maxInactiveRuns: 0 } })
          const wall = nowMs() - t0
          const cpu = cpuMs() - c0
          if (report.removed.length !== o.shape.runs || report.errors.length > 0) {
            throw new Error(`prune removed ${report.removed.length}/${o.shape.runs} runs, errors ${JSON.stringify(report.errors.slice(0, 3))}`)
          }
          ours.push({ wall, cpu })
          o.log(`prune ours  #${rep + 1}: ${wall.toFixed(0)} ms wall, ${cpu.toFixed(0)} ms cpu`)
        } else if (who === "floor" && "floor" in built) {
          await freshCopy()
          keepFloor(floored, "C", rep, await tryFloor(o.log, "prune", async () => {
            const timed = await built.floor(["prune", rmCopy])
            const left = [...fs.readdirSync(rmCopy).filter((name) => !name.startsWith(".")), ...fs.readdirSync(path.join(rmCopy, ".trash"))]
            if (left.length > 0) throw new Error(`the floor prune left ${left.length} runs`)
            return timed.outside
          }))
        } else if (who === "floorUncounted" && "floor" in built) {
          await freshCopy()
          keepFloor(uncounted, "C, sizes not counted", rep, await tryFloor(o.log, "prune", async () => {
            const timed = await built.floor(["prune-uncounted", rmCopy])
            const left = [...fs.readdirSync(rmCopy).filter((name) => !name.startsWith(".")), ...fs.readdirSync(path.join(rmCopy, ".trash"))]
            if (left.length > 0) throw new Error(`the uncounted floor prune left ${left.length} runs`)
            return timed.outside
          }))
        } else if (who === "nodeFloor" && "fsat" in addon) {
          await freshCopy()
          keepFloor(nodeFloored, "plain JavaScript", rep, await tryFloor(o.log, "prune", async () => {
            const c0 = cpuMs()
            const t0 = nowMs()
            const removed = await nodeFloorPrune(addon.fsat, rmCopy)
            const timing = { wall: nowMs() - t0, cpu: cpuMs() - c0 }
            if (removed !== o.shape.runs || fs.readdirSync(path.join(rmCopy, ".trash")).length > 0) throw new Error(`the plain-JavaScript floor removed ${removed} runs`)
            return timing
          }))
        } else if (who === "parallel") {
          await freshCopy()
          const r = await runTimed("bash", ["-c", PARALLEL_RM, "parallel-rm", rmCopy, String(REMOVER_THREADS)])
          if (r.code !== 0 || fs.existsSync(rmCopy)) throw new Error("parallel rm -rf failed")
          parallel.push({ wall: r.wallMs, cpu: r.cpuMs ?? Number.NaN })
          o.log(`prune ${REMOVER_THREADS} × rm -rf #${rep + 1}: ${r.wallMs.toFixed(0)} ms wall, ${(r.cpuMs ?? 0).toFixed(0)} ms cpu`)
        } else {
          await freshCopy()
          const r = await runTimed("rm", ["-rf", "--", rmCopy])
          if (r.code !== 0 || fs.existsSync(rmCopy)) throw new Error("rm -rf failed")
          base.push({ wall: r.wallMs, cpu: r.cpuMs ?? Number.NaN })
          o.log(`prune rm -rf #${rep + 1}: ${r.wallMs.toFixed(0)} ms wall, ${(r.cpuMs ?? 0).toFixed(0)} ms cpu`)
        }
      }
    }
  } finally {
    await store.close()
    removeTree(tenantDir)
    removeTree(rmCopy)
  }
  return {
    name: "1 prune",
    rows: [
      ...versus(ours, base, "rm -rf", "", { wall: 1.1, cpu: 1.3 }),
      ...(REMOVER_THREADS === 1 ? [] : versus(ours, parallel, `${REMOVER_THREADS} × rm -rf`, " vs parallel rm", {})),
      ...(floored.length === 0 ? [] : versus(floored, base, "rm -rf", ", floor: the protocol's syscalls in C", {})),
      // What the sizes a prune reports cost (disk usage and apparent size come from one fstatat per file): the
      // C floor with that fstatat beside the same floor without it.
      ...(floored.length === 0 || uncounted.length === 0
        ? []
        : versus(floored, uncounted, "not counting", ", size accounting: the C floor counting sizes", {})),
      ...(nodeFloored.length === 0 ? [] : versus(nodeFloored, base, "rm -rf", ", floor: the protocol in plain JavaScript", {}))
    ],
    notes: { removerThreads: REMOVER_THREADS, runs: o.shape.runs, filesPerRun: o.shape.filesPerRun, entries: totalEntries(o.shape), reps: o.reps, template }
  }
}

export const benchScan = async (o: TreeOptions & { readonly template?: string }): Promise<Measurement> => {
  const agentDir = path.join(o.root, "scan-agent")
  ensureWorkRoot(agentDir)
  const tenant = "prune"
  const tenantDir = tenantDirOf(agentDir, tenant)
  if (o.template !== undefined && fs.existsSync(o.template)) {
    copyTree(o.template, tenantDir)
  } else {
    o.log(`scan: building ${o.shape.runs} runs × ${o.shape.filesPerRun} files (${totalEntries(o.shape)} entries)`)
    buildTenant(tenantDir, tenant, o.shape)
  }
  await settle(o.settleMs)
  const runtime = scanRuntime(agentDir)
  const ours: Array<Timing> = []
  const base: Array<Timing> = []
  try {
    // Warm the dentry/inode caches for both sides.
    await scanOnce(runtime, tenant)
    await runTimed("du", ["-sb", tenantDir])
    for (let rep = 0; rep < o.reps; rep++) {
      const order = rep % 2 === 0 ? ["ours", "du"] : ["du", "ours"]
      for (const who of order) {
        if (who === "ours") {
          const c0 = cpuMs()
          const t0 = nowMs()
          const report = await scanOnce(runtime, tenant)
          const wall = nowMs() - t0
          const cpu = cpuMs() - c0
          if (report.removed.length !== 0 || report.kept.length !== o.shape.runs) {
            throw new Error(`scan removed ${report.removed.length}, kept ${report.kept.length}/${o.shape.runs}`)
          }
          ours.push({ wall, cpu })
        } else {
          const r = await runTimed("du", ["-sb", tenantDir])
          if (r.code !== 0) throw new Error("du -sb failed")
          base.push({ wall: r.wallMs, cpu: r.cpuMs ?? Number.NaN })
        }
      }
    }
  } finally {
    await runtime.dispose()
    removeTree(agentDir)
  }
  return {
    name: "2 scan",
    rows: versus(ours, base, "du -sb", "", { wall: 2 }),
    notes: { runs: o.shape.runs, filesPerRun: o.shape.filesPerRun, entries: totalEntries(o.shape), reps: o.reps }
  }
}
