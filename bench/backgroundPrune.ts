/**
 * Measurement 8: the event loop during a background prune. A harness process acquires a run of a tenant
 * holding thousands of released runs whose prune stamp is old, which starts the opportunistic background
 * prune (docs/work-runs.md "Retention"); the same process goes on acquiring and releasing runs of another tenant. We
 * record the event loop's delay (`perf_hooks.monitorEventLoopDelay`, 1 ms resolution: its maximum is the
 * longest block), the most CPU time the main thread spent in one turn (bench/turns.ts: what the code holds the
 * loop for, whatever the machine's load), each acquire + release, and how long `close()` takes when called in
 * the middle of it.
 *
 * The floor, in the same run: the same acquire loop in the same process with no prune running (what the
 * loop and the disk cost the event loop by themselves). After every pair, in both windows, the one fsync a
 * pair must make is timed alone (`fsyncProbe`): the p99 of a pair can be no lower than the disk's own. A `close()` during the prune may leave it for the
 * next process: that next prune (foreground, `pruneWorkTenant`) is checked to finish the job — every
 * victim gone, every kept run whole, nothing left in `.trash/` or `.cleanup/`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks"
import { openAgentStorage } from "../src/promise.js"
import { BENCH_CATEGORY, copyTree, ensureWorkRoot, removeTree, tenantDirOf } from "./fixtures.js"
import type { Measurement, Row } from "./result.js"
import { monitorTurns, type TurnStats } from "./turns.js"
import { nowMs, settle, summarize } from "./util.js"

export interface BackgroundPruneOptions {
  readonly root: string
  /** Tenant sizes (released runs), each measured in turn. */
  readonly sizes: ReadonlyArray<number>
  readonly reps: number
  /** Acquire + release pairs of the quiet window (the floor). */
  readonly quietOps: number
  readonly settleMs: number
  readonly log: (line: string) => void
}

/**
 * The harness's retention: the default. Of the first `SCANNED` runs in name order (`maxScannedRuns`) the
 * newest `KEPT` inactive ones stay (`maxInactiveRuns`) and the rest go by count; the runs beyond are left to a
 * later prune.
 */
const KEPT = 64
const SCANNED = 10_000
export const PRUNED_TENANT = "bg"
const LOOP_TENANT = "lag"

/** `count` released runs, each its manifest and one small file in a subdirectory: sync calls, fast. */
export const buildReleasedRuns = (tenantDir: string, count: number) => {
  fs.mkdirSync(tenantDir, { recursive: true, mode: 0o700 })
  const createdAt = Date.now() - 2 * 24 * 60 * 60 * 1000
  const body = Buffer.alloc(1024, 0x62)
  for (let r = 0; r < count; r++) {
    const runId = `run-${String(r).padStart(6, "0")}`
    const runDir = path.join(tenantDir, runId)
    fs.mkdirSync(runDir, { mode: 0o700 })
    const manifest = {
      version: 2,
      category: BENCH_CATEGORY,
      tenant: PRUNED_TENANT,
      runId,
      kind: "generated",
      createdAt: createdAt + r,
      createdBy: { host: "bench", pid: 1 },
      releasedAt: createdAt + r + 1000
    }
    fs.writeFileSync(path.join(runDir, ".pi-work-run.json"), JSON.stringify(manifest), { mode: 0o600 })
    fs.mkdirSync(path.join(runDir, "d"))
    fs.writeFileSync(path.join(runDir, "d", "f.dat"), body)
  }
}

/** The event loop delay recorded so far, in ms. */
interface Lag {
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
  readonly samples: number
}

const lagOf = (h: IntervalHistogram): Lag => ({
  p50: h.percentile(50) / 1e6,
  p90: h.percentile(90) / 1e6,
  p99: h.percentile(99) / 1e6,
  max: h.max / 1e6,
  samples: h.count
})

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}

type Store = Awaited<ReturnType<typeof openAgentStorage>>

/** One acquire + release of a run of the loop tenant (no retention: that tenant has nothing to prune), in ms. */
export const acquireRelease = async (store: Store): Promise<number> => {
  const t0 = nowMs()
  const lease = await store.acquireWorkRun({ category: BENCH_CATEGORY, tenant: LOOP_TENANT, retention: false })
  await lease.release()
  return nowMs() - t0
}

/**
 * The one durable write of a pair, alone: a new small file created exclusively, written, fsynced on the thread
 * pool and closed (WR3: a run's manifest is fsynced before the run appears), then unlinked, in ms. A pair can
 * be no steadier than this: its tail is the disk's.
 */
export const fsyncProbe = (dir: string, n: number): Promise<number> => {
  const file = path.join(dir, `probe-${n}`)
  const t0 = nowMs()
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600)
  fs.writeSync(fd, PROBE_BYTES)
  return new Promise((resolve, reject) =>
    fs.fsync(fd, (error) => {
      fs.closeSync(fd)
      const ms = nowMs() - t0
      fs.unlinkSync(file)
      if (error) reject(error)
      else resolve(ms)
    })
  )
}
const PROBE_BYTES = Buffer.alloc(200, 0x7b)

/** The runs and library leftovers of a tenant after a prune, for the checks. */
const tenantState = (tenantDir: string) => {
  const names = fs.readdirSync(tenantDir)
  const runs = names.filter((n) => !n.startsWith("."))
  const halfRemoved = runs.filter((n) => !fs.existsSync(path.join(tenantDir, n, ".pi-work-run.json")))
  const listed = (dir: string) => (fs.existsSync(path.join(tenantDir, dir)) ? fs.readdirSync(path.join(tenantDir, dir)) : [])
  return { runs: runs.length, names: runs, halfRemoved, trash: listed(".trash"), cleanup: listed(".cleanup"), marker: names.includes(".prune") }
}

/**
 * What a whole prune leaves: the kept runs, the run acquired to start it, the runs beyond the scanned ones,
 * each whole; nothing in `.trash/` or `.cleanup/`.
 */
const prunedAsPlanned = (state: ReturnType<typeof tenantState>, size: number): boolean =>
  state.runs >= KEPT && state.runs <= KEPT + 1 + Math.max(0, size + 1 - SCANNED) && state.halfRemoved.length === 0 &&
  state.trash.length === 0 && state.cleanup.length === 0

/** A background prune is over once its stamp was touched at or after `since` and its marker is gone. */
export const pruneEnded = (tenantDir: string, since: number): boolean => {
  try {
    const stamp = fs.lstatSync(path.join(tenantDir, ".last-prune"))
    return stamp.mtimeMs >= since - 1000 && !fs.existsSync(path.join(tenantDir, ".prune"))
  } catch {
    return false
  }
}

interface Rep {
  readonly quietTurns: TurnStats
  readonly turns: TurnStats
  readonly quietLag: Lag
  readonly quietMedian: number
  readonly quietP99: number
  /** The manifest's fsync alone (`fsyncProbe`), one after each pair, in each window. */
  readonly quietProbeP99: number
  readonly probeP99: number
  readonly lag: Lag
  readonly p99: number
  readonly pairs: number
  readonly firstAcquire: number
  readonly pruneMs: number
  readonly closeMs: number
  /** Runs and quarantined trees the interrupted prune left. */
  readonly closeLeft: number
  /** Prunes it took to finish the job after close(). */
  readonly nextPrunes: number
}

const PRUNE_TIMEOUT_MS = 600_000

const oneRep = async (o: BackgroundPruneOptions, agentDir: string, template: string, size: number): Promise<Rep> => {
  const tenantDir = tenantDirOf(agentDir, PRUNED_TENANT)
  const fresh = async () => {
    removeTree(tenantDir)
    copyTree(template, tenantDir)
    await settle(o.settleMs)
  }
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  const probeDir = path.join(agentDir, "probe")
  fs.mkdirSync(probeDir, { recursive: true })
  let probes = 0
  await fresh()
  // The prune window, with the quiet window (the floor) first in the same store.
  let store = await openAgentStorage({ agentDir, migrate: false })
  let quietLag: Lag
  let quietTurns: TurnStats
  let turns: TurnStats
  let quietMedian: number
  let quietP99: number
  let quietProbeP99: number
  let probeP99: number
  let lag: Lag
  let p99: number
  let pairs: number
  let firstAcquire: number
  let pruneMs: number
  try {
    for (let i = 0; i < 20; i++) await acquireRelease(store)
    const quiet: Array<number> = []
    histogram.reset()
    histogram.enable()
    let monitor = monitorTurns()
    const quietProbes: Array<number> = []
    for (let i = 0; i < o.quietOps; i++) {
      quiet.push(await acquireRelease(store))
      quietProbes.push(await fsyncProbe(probeDir, probes++))
    }
    quietTurns = monitor.stop()
    histogram.disable()
    quietLag = lagOf(histogram)
    quietMedian = summarize(quiet).median
    quietP99 = percentile(quiet, 99)
    quietProbeP99 = percentile(quietProbes, 99)
    histogram.reset()
    histogram.enable()
    monitor = monitorTurns()
    const t0 = nowMs()
    const started = Date.now()
    const lease = await store.acquireWorkRun({ category: BENCH_CATEGORY, tenant: PRUNED_TENANT })
    firstAcquire = nowMs() - t0
    await lease.release()
    const during: Array<number> = []
    const duringProbes: Array<number> = []
    while (!pruneEnded(tenantDir, started)) {
      if (nowMs() - t0 > PRUNE_TIMEOUT_MS) throw new Error(`the background prune of ${size} runs did not end in ${PRUNE_TIMEOUT_MS} ms`)
      during.push(await acquireRelease(store))
      duringProbes.push(await fsyncProbe(probeDir, probes++))
    }
    probeP99 = percentile(duringProbes, 99)
    pruneMs = nowMs() - t0
    turns = monitor.stop()
    histogram.disable()
    lag = lagOf(histogram)
    p99 = percentile(during, 99)
    pairs = during.length
    const after = tenantState(tenantDir)
    if (!prunedAsPlanned(after, size)) {
      throw new Error(`the background prune left ${after.runs} runs (${after.halfRemoved.length} half removed), ${after.trash.length} in .trash: ${after.names.filter((n) => !n.startsWith("run-")).join(" ")}`)
    }
  } finally {
    await store.close()
  }
  // The close window: close() in the middle of the prune, then the next prune finishes the job.
  await fresh()
  store = await openAgentStorage({ agentDir, migrate: false })
  let closeMs: number
  try {
    const lease = await store.acquireWorkRun({ category: BENCH_CATEGORY, tenant: PRUNED_TENANT })
    await lease.release()
    // Into the prune: a third of what a whole one took above.
    const into = nowMs() + pruneMs / 3
    while (nowMs() < into) await acquireRelease(store)
  } finally {
    const t0 = nowMs()
    await store.close()
    closeMs = nowMs() - t0
  }
  const left = tenantState(tenantDir)
  if (left.marker) throw new Error("close() left the prune marker behind")
  // The next prunes finish the job: `.trash/` gets a time budget per prune (docs/work-runs.md "Retention"), so what the
  // interrupted one quarantined may take more than one.
  const next = await openAgentStorage({ agentDir, migrate: false })
  let nextPrunes = 0
  try {
    for (;;) {
      nextPrunes++
      const report = await next.pruneWorkTenant({ category: BENCH_CATEGORY, tenant: PRUNED_TENANT })
      const pending = report.errors.filter((e) => e._tag === "TrashPending")
      if (report.errors.length > pending.length) throw new Error(`the next prune reported ${JSON.stringify(report.errors.filter((e) => e._tag !== "TrashPending").slice(0, 3))}`)
      if (pending.length === 0) break
      if (nextPrunes >= 20) throw new Error(`${nextPrunes} prunes after close() still left ${pending.length} trees in .trash`)
    }
  } finally {
    await next.close()
  }
  const finished = tenantState(tenantDir)
  if (!prunedAsPlanned(finished, size)) {
    throw new Error(`after close() and the next prune: ${finished.runs} runs (${finished.halfRemoved.length} half removed), .trash ${finished.trash.length}, .cleanup ${finished.cleanup.length}`)
  }
  return { quietTurns, turns, quietLag, quietMedian, quietP99, quietProbeP99, probeP99, lag, p99, pairs, firstAcquire, pruneMs, closeMs, closeLeft: left.runs + left.trash.length, nextPrunes }
}

export const benchBackgroundPrune = async (o: BackgroundPruneOptions): Promise<Measurement> => {
  const agentDir = path.join(o.root, "background-agent")
  ensureWorkRoot(agentDir)
  const rows: Array<Row> = []
  const notes: Record<string, unknown> = { reps: o.reps, quietOps: o.quietOps, kept: KEPT }
  try {
    for (const size of o.sizes) {
      const template = path.join(o.root, `background-template-${size}`)
      o.log(`background prune: building ${size} released runs`)
      buildReleasedRuns(template, size)
      const reps: Array<Rep> = []
      try {
        for (let rep = 0; rep < o.reps; rep++) {
          const r = await oneRep(o, agentDir, template, size)
          reps.push(r)
          o.log(
            `background prune ${size} #${rep + 1}: longest block ${r.lag.max.toFixed(1)} ms (quiet ${r.quietLag.max.toFixed(1)}), ` +
              `most CPU in one turn ${r.turns.maxCpuMs.toFixed(1)} ms (quiet ${r.quietTurns.maxCpuMs.toFixed(1)}; ${r.turns.over10Ms} turns over 10 ms of ${r.turns.windows}), ` +
              `lag p99 ${r.lag.p99.toFixed(1)} ms, acquire+release p99 ${r.p99.toFixed(1)} ms over ${r.pairs} (quiet median ${r.quietMedian.toFixed(1)}, quiet p99 ${r.quietP99.toFixed(1)}; ` +
              `the manifest's fsync alone p99 ${r.probeP99.toFixed(1)}, quiet ${r.quietProbeP99.toFixed(1)}), ` +
              `first acquire ${r.firstAcquire.toFixed(1)} ms, prune ${r.pruneMs.toFixed(0)} ms, close() ${r.closeMs.toFixed(1)} ms (${r.closeLeft} runs and trees left, finished by ${r.nextPrunes} prune(s))`
          )
        }
      } finally {
        removeTree(template)
      }
      const longest = summarize(reps.map((r) => r.lag.max))
      const quietLongest = summarize(reps.map((r) => r.quietLag.max))
      const p99 = summarize(reps.map((r) => r.p99))
      const quiet = summarize(reps.map((r) => r.quietMedian))
      const turnCpu = summarize(reps.map((r) => r.turns.maxCpuMs))
      const quietTurnCpu = summarize(reps.map((r) => r.quietTurns.maxCpuMs))
      const n = size.toLocaleString("en-US")
      rows.push(
        { label: `event loop: longest block during it, ${n} runs`, unit: "ms", ours: longest, baseline: quietLongest, baselineName: "no prune", ratio: longest.median / quietLongest.median, max: 20 },
        // The same block in CPU time of the main thread (load does not stretch it): the code's own share.
        { label: `… most CPU in one turn during it`, unit: "ms", ours: turnCpu, baseline: quietTurnCpu, baselineName: "no prune", ratio: turnCpu.median / quietTurnCpu.median, max: 10 },
        { label: `… acquire+release p99 during it`, unit: "ms", ours: p99, baseline: quiet, baselineName: "quiet median", ratio: p99.median / quiet.median, target: 3 },
        // The floors of that goal, in the same windows: the pair's own tail with no prune, and the tail of the one
        // fsync a pair must make (WR3), timed alone after each pair: no pair is steadier than the disk.
        { label: `… acquire+release p99, no prune`, unit: "ms", ours: summarize(reps.map((r) => r.quietP99)), baseline: quiet, baselineName: "quiet median", ratio: summarize(reps.map((r) => r.quietP99)).median / quiet.median },
        { label: `… the manifest's fsync alone, p99 during it`, unit: "ms", ours: summarize(reps.map((r) => r.probeP99)), baseline: quiet, baselineName: "quiet median", ratio: summarize(reps.map((r) => r.probeP99)).median / quiet.median },
        { label: `… the manifest's fsync alone, p99 with no prune`, unit: "ms", ours: summarize(reps.map((r) => r.quietProbeP99)), baseline: quiet, baselineName: "quiet median", ratio: summarize(reps.map((r) => r.quietProbeP99)).median / quiet.median },
        { label: `… first acquire (starts it)`, unit: "ms", ours: summarize(reps.map((r) => r.firstAcquire)), baseline: quiet, baselineName: "quiet median", ratio: summarize(reps.map((r) => r.firstAcquire)).median / quiet.median },
        { label: `… close() during it`, unit: "ms", ours: summarize(reps.map((r) => r.closeMs)), max: 100 },
        { label: `… the background prune`, unit: "ms", ours: summarize(reps.map((r) => r.pruneMs)) }
      )
      notes[`lag ${size} (ms)`] = reps.map((r) => ({ during: round(r.lag), quiet: round(r.quietLag), pairs: r.pairs, leftByClose: r.closeLeft, nextPrunes: r.nextPrunes }))
      notes[`turn CPU ${size} (ms)`] = reps.map((r) => ({ during: turnNote(r.turns), quiet: turnNote(r.quietTurns) }))
    }
  } finally {
    removeTree(agentDir)
  }
  return { name: "8 background prune", rows, notes }
}

const round = (lag: Lag) => ({
  p50: Math.round(lag.p50 * 10) / 10,
  p90: Math.round(lag.p90 * 10) / 10,
  p99: Math.round(lag.p99 * 10) / 10,
  max: Math.round(lag.max * 10) / 10,
  samples: lag.samples
})

const turnNote = (t: TurnStats) => ({
  max: Math.round(t.maxCpuMs * 10) / 10,
  over10Ms: t.over10Ms,
  turns: t.windows,
  source: t.source
})
