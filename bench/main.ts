/**
 * `npm run bench [-- --quick] [--json] [--only prune,scan,memory,acquire,cli,property,snapshots,config,dashboard,background,views]
 *  [--runs N] [--files N] [--reps N] [--ops N] [--settle MS] [--snapshot-files N] [--snapshot-reps N] [--config-files N] [--config-cli BIN]
 *  [--dashboard-runs N] [--dashboard-tenants N] [--background-runs N,N] [--views-runs N] [--views-rss-runs N] [--views-tenants N] [--keep]`
 *
 * Builds fixtures in a temp dir, runs each measurement several times alternating ours and the baseline,
 * and prints medians, min–max and ratios (or one JSON document with `--json`). `--quick` runs everything at
 * a smaller size in under a minute. `cli` is the start-up and install footprint of the packed tarball. Exit code 0 even when a target is missed: the table says so.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { benchAcquire } from "./acquire.js"
import { benchBackgroundPrune } from "./backgroundPrune.js"
import { benchCli } from "./cli.js"
import { benchConfigHistory } from "./configHistory.js"
import { benchDashboard } from "./dashboard.js"
import { benchMemory } from "./memory.js"
import { benchProperty } from "./property.js"
import { benchStateBackups } from "./stateBackups.js"
import { benchViews } from "./views.js"
import { type Measurement, passes, renderMeasurements } from "./result.js"
import { benchPrune, benchScan } from "./tree.js"
import { machine, makeTempRoot, numberArg, parseArgs } from "./util.js"

const ALL = ["prune", "scan", "memory", "acquire", "cli", "property", "snapshots", "config", "dashboard", "background", "views"] as const

const main = async () => {
  const args = parseArgs(process.argv.slice(2))
  const quick = args.has("quick")
  const json = args.has("json")
  const onlyArg = args.get("only")
  const only = new Set(typeof onlyArg === "string" ? onlyArg.split(",") : ALL)
  for (const name of only) if (!(ALL as ReadonlyArray<string>).includes(name)) throw new Error(`unknown measurement ${name}; known: ${ALL.join(", ")}`)
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const shape = { runs: numberArg(args, "runs", quick ? 100 : 500), filesPerRun: numberArg(args, "files", 40) }
  const reps = numberArg(args, "reps", quick ? 3 : 5)
  const settleMs = numberArg(args, "settle", quick ? 300 : 3000)
  const root = makeTempRoot("bench")
  const started = Date.now()
  const results: Array<Measurement> = []
  try {
    let template: string | undefined
    // Acquire first: it is the one measurement that makes inodes in its timed loop, and journal-less ext4 makes
    // that slow for up to 6 minutes after a large removal (bench/acquire.ts), which prune, scan and memory do.
    if (only.has("acquire")) {
      const ops = numberArg(args, "ops", quick ? 300 : 2000)
      results.push(await benchAcquire({ root, ops, reps, settleMs, inactiveRuns: numberArg(args, "inactive", quick ? 20 : 100), freedInodesAgeMs: quick ? 0 : 61_000, log }))
    }
    if (only.has("prune")) {
      const m = await benchPrune({ root, shape, reps, settleMs, log })
      template = String(m.notes.template)
      results.push(m)
    }
    if (only.has("scan")) results.push(await benchScan({ root, shape, reps: reps * 2, settleMs, log, ...(template ? { template } : {}) }))
    if (only.has("memory")) {
      const small = numberArg(args, "memory-small", quick ? 2_000 : 10_000)
      const large = numberArg(args, "memory-large", quick ? 20_000 : 100_000)
      results.push(await benchMemory({ root, smallEntries: small, largeEntries: large, filesPerRun: shape.filesPerRun, reps: quick ? 1 : 3, log }))
    }
    if (only.has("cli")) results.push(await benchCli({ root, reps: quick ? 5 : 15, log }))
    if (only.has("snapshots")) {
      results.push(await benchStateBackups({ root, files: numberArg(args, "snapshot-files", quick ? 2_000 : 10_000), reps: numberArg(args, "snapshot-reps", quick ? 1 : 3), log }))
    }
    if (only.has("config")) {
      const files = numberArg(args, "config-files", 200)
      const cli = args.get("config-cli")
      results.push(await benchConfigHistory({ root, files, ops: quick ? 10 : 30, reps, settleMs, log, cli: typeof cli === "string" ? path.resolve(cli) : undefined }))
    }
    if (only.has("dashboard")) {
      const runs = numberArg(args, "dashboard-runs", quick ? 2_000 : 20_000)
      results.push(await benchDashboard({ root, runs, tenants: numberArg(args, "dashboard-tenants", 10), reps: quick ? 1 : 3, log }))
    }
    if (only.has("background")) {
      const sizes = String(args.get("background-runs") ?? (quick ? "2000,10000" : "10000,50000")).split(",").map(Number)
      results.push(await benchBackgroundPrune({ root, sizes, reps: quick ? 1 : 3, quietOps: quick ? 100 : 300, settleMs, log }))
    }
    if (only.has("views")) {
      results.push(await benchViews({
        root,
        runs: numberArg(args, "views-runs", quick ? 2_000 : 20_000),
        rssRuns: numberArg(args, "views-rss-runs", quick ? 4_000 : 40_000),
        tenants: numberArg(args, "views-tenants", 4),
        reps,
        settleMs,
        log
      }))
    }
    if (only.has("property")) results.push(await benchProperty({ seconds: numberArg(args, "property-seconds", quick ? 3 : 10), log }))
  } finally {
    if (!args.has("keep")) fs.rmSync(root, { recursive: true, force: true })
  }
  const doc = {
    machine: machine(root.replace(/\/[^/]*$/, "")),
    quick,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    measurements: results.map((m) => ({ ...m, rows: m.rows.map((r) => ({ ...r, pass: passes(r) ?? null })) }))
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`)
  } else {
    const mc = doc.machine
    process.stdout.write(`machine: ${mc.nproc} × ${mc.cpu}, node ${mc.node}, ${mc.fsType}, ${mc.os}, load ${mc.loadAverage.join(" ")}\n`)
    process.stdout.write(`${renderMeasurements(results)}\n`)
    for (const m of results) {
      if (Object.keys(m.notes).length > 0) process.stdout.write(`${m.name}: ${JSON.stringify(m.notes)}\n`)
    }
    process.stdout.write(`took ${doc.seconds} s\n`)
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? e.stack ?? e.message : JSON.stringify(e)}\n`)
  process.exit(1)
})
