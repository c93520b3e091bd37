/**
 * The views vs `du -sb` (docs/benchmarks.md): `pi-storage status`, `work ls` (and their `--json`) and `doctor`,
 * each a child process of the built CLI (dist/bundle/cli/main.mjs, start-up included), beside `du -sb` of the
 * same agent dir, on `runs` released runs spread over `tenants` tenants, each run holding only its manifest
 * and an empty `.leases/` (fixtures.ts `buildLeanTenant`): the tree where a view costs its read model and
 * nothing else. Ours and du alternate within each repetition (the order rotates), both timed by bash's `time`
 * (wall, and the child's own user + system CPU); medians with min–max, ratios of the medians.
 *
 * Then the peak RSS of each view at `rssRuns` runs (the same tree grown), by `/usr/bin/time -f %M`, beside
 * du's; goal ≤ 128 MiB. Without /usr/bin/time the RSS rows are left out (the notes say so).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { BENCH_CATEGORY, buildLeanTenant, ensureWorkRoot, removeTree, tenantDirOf } from "./fixtures.js"
import type { Measurement, Row } from "./result.js"
import { nowMs, run, runTimed, settle, summarize, BUILT_CLI, withoutExtraCaCerts } from "./util.js"

export interface ViewsOptions {
  readonly root: string
  /** Runs of the timed tree (default 20,000). */
  readonly runs: number
  /** Runs of the tree the peak RSS is read on (default 40,000). */
  readonly rssRuns: number
  readonly tenants: number
  readonly reps: number
  readonly settleMs: number
  readonly log: (line: string) => void
}

const CLI = BUILT_CLI
const TIME = "/usr/bin/time"
const MiB = 1024 * 1024

interface View {
  readonly name: string
  readonly args: ReadonlyArray<string>
  /** The goal on the wall-clock ratio to `du -sb`. */
  readonly target: number
  /** Exit codes that mean it worked (`doctor` exits 1 when it finds something worth attention). */
  readonly ok: ReadonlyArray<number>
  /** What its output must say about this tree, so a view that silently read less is caught. */
  readonly check: (stdout: string, runs: number) => string | undefined
}

const jsonOf = (stdout: string): Record<string, unknown> => JSON.parse(stdout) as Record<string, unknown>

const statusCheck = (stdout: string, runs: number) => {
  const doc = jsonOf(stdout) as { tenants: ReadonlyArray<{ runs: number; unowned: number }>; truncated: boolean }
  const owned = doc.tenants.reduce((n, t) => n + t.runs, 0)
  const unowned = doc.tenants.reduce((n, t) => n + t.unowned, 0)
  return owned === runs && unowned === 0 && !doc.truncated ? undefined : `status --json counted ${owned} runs, ${unowned} unowned, truncated ${doc.truncated}`
}

const lsCheck = (stdout: string, runs: number) => {
  const doc = jsonOf(stdout) as { runs: ReadonlyArray<unknown>; unowned: ReadonlyArray<unknown>; truncated: boolean; incomplete: boolean }
  return doc.runs.length === runs && doc.unowned.length === 0 && !doc.truncated && !doc.incomplete
    ? undefined
    : `work ls --json listed ${doc.runs.length} runs, ${doc.unowned.length} unowned, truncated ${doc.truncated}, incomplete ${doc.incomplete}`
}

const lineCount = (stdout: string, runs: number) => {
  const lines = stdout.split("\n").filter((l) => l.startsWith(`${BENCH_CATEGORY}/`)).length
  return lines === runs ? undefined : `work ls printed ${lines} run lines`
}

/** `--max-scanned-runs` high enough that no tenant of this tree is cut short (the default is 10,000 per tenant). */
const VIEWS = (perTenant: number): ReadonlyArray<View> => {
  const limit = perTenant > 10_000 ? ["--max-scanned-runs", String(perTenant)] : []
  return [
    { name: "status", args: ["status"], target: 2, ok: [0], check: (out) => (out.includes("Work runs") ? undefined : "status printed no work runs") },
    { name: "status --json", args: ["status", "--json"], target: 2, ok: [0], check: statusCheck },
    { name: "work ls", args: ["work", "ls", ...limit], target: 2, ok: [0], check: lineCount },
    { name: "work ls --json", args: ["work", "ls", "--json", ...limit], target: 2, ok: [0], check: lsCheck },
    { name: "doctor", args: ["doctor"], target: 1.5, ok: [0, 1], check: (out) => (out.includes("Checked") ? undefined : "doctor printed no report") }
  ]
}

const cliArgs = (agentDir: string, view: View) => [CLI, "--agent-dir", agentDir, ...view.args]

/** The views run as on a user's machine, `du` in the same environment (util.ts `withoutExtraCaCerts`). */
const CLI_ENV = withoutExtraCaCerts()

/** Grow the agent dir to `runs` runs over `tenants` tenants (tenants filled in turn; existing runs kept). */
const growTo = (agentDir: string, runs: number, tenants: number, have: number) => {
  const perTenant = Math.ceil(runs / tenants)
  const havePer = Math.ceil(have / tenants)
  for (let t = 0; t < tenants; t++) {
    const already = Math.max(0, Math.min(havePer, have - t * havePer))
    const want = Math.max(0, Math.min(perTenant, runs - t * perTenant))
    if (want > already) buildLeanTenant(tenantDirOf(agentDir, `t${t}`), `t${t}`, want - already, already)
  }
}

/** Peak RSS (MiB) of a command, by GNU time; `undefined` without it. */
const peakRss = async (cmd: string, args: ReadonlyArray<string>): Promise<number | undefined> => {
  if (!fs.existsSync(TIME)) return undefined
  const r = await run(TIME, ["-f", "@@RSS %M", cmd, ...args], { env: CLI_ENV })
  const m = /@@RSS (\d+)/.exec(r.stderr)
  if (m === null) throw new Error(`no RSS from ${cmd}: ${r.stderr.slice(-500)}`)
  return (Number(m[1]) * 1024) / MiB
}

export const benchViews = async (o: ViewsOptions): Promise<Measurement> => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`)
  const agentDir = path.join(o.root, "views-agent")
  ensureWorkRoot(agentDir)
  const label = `views vs du at ${o.runs.toLocaleString("en-US")} runs`
  const rows: Array<Row> = []
  const notes: Record<string, unknown> = {
    runs: o.runs,
    rssRuns: o.rssRuns,
    tenants: o.tenants,
    reps: o.reps,
    perRun: "manifest + empty .leases/",
    cliEnvironment: "the views and du run with NODE_EXTRA_CA_CERTS unset (this VM sets it; a user's machine does not)"
  }
  try {
    const t0 = nowMs()
    growTo(agentDir, o.runs, o.tenants, 0)
    o.log(`views: ${o.runs} runs in ${o.tenants} tenants built in ${Math.round(nowMs() - t0)} ms`)
    await settle(o.settleMs)
    const views = VIEWS(Math.ceil(o.runs / o.tenants))
    // Once each, unmeasured: warms the dentry and inode caches for every side, and checks what each view says.
    await runTimed("du", ["-sb", agentDir], CLI_ENV)
    for (const view of views) {
      const r = await runTimed(process.execPath, cliArgs(agentDir, view), CLI_ENV)
      if (!view.ok.includes(r.code ?? -1)) throw new Error(`pi-storage ${view.args.join(" ")} exited ${r.code}`)
      const wrong = view.check(r.stdout, o.runs)
      if (wrong !== undefined) throw new Error(wrong)
    }
    const du: Array<{ wall: number; cpu: number }> = []
    const ours = new Map<string, Array<{ wall: number; cpu: number }>>(views.map((v) => [v.name, []]))
    const series = ["du", ...views.map((v) => v.name)]
    for (let rep = 0; rep < o.reps; rep++) {
      const order = series.map((_, i, all) => all[(i + rep) % all.length]!)
      for (const who of order) {
        if (who === "du") {
          const r = await runTimed("du", ["-sb", agentDir], CLI_ENV)
          if (r.code !== 0) throw new Error("du -sb failed")
          du.push({ wall: r.wallMs, cpu: r.cpuMs ?? Number.NaN })
          continue
        }
        const view = views.find((v) => v.name === who)!
        const r = await runTimed(process.execPath, cliArgs(agentDir, view), CLI_ENV)
        if (!view.ok.includes(r.code ?? -1)) throw new Error(`pi-storage ${view.args.join(" ")} exited ${r.code}`)
        ours.get(who)!.push({ wall: r.wallMs, cpu: r.cpuMs ?? Number.NaN })
      }
      o.log(`views: rep ${rep + 1}/${o.reps}: du ${du.at(-1)!.wall.toFixed(0)} ms, ${views.map((v) => `${v.name} ${ours.get(v.name)!.at(-1)!.wall.toFixed(0)} ms`).join(", ")}`)
    }
    const duWall = summarize(du.map((x) => x.wall))
    const duCpu = summarize(du.map((x) => x.cpu))
    for (const view of views) {
      const mine = ours.get(view.name)!
      const wall = summarize(mine.map((x) => x.wall))
      const cpu = summarize(mine.map((x) => x.cpu))
      rows.push({ label: `${view.name} wall`, unit: "ms", ours: wall, baseline: duWall, baselineName: "du -sb", ratio: wall.median / duWall.median, target: view.target })
      rows.push({ label: `${view.name} cpu`, unit: "ms", ours: cpu, baseline: duCpu, baselineName: "du -sb", ratio: cpu.median / duCpu.median })
    }

    // Peak RSS on the grown tree: once per view (RSS barely varies), du's beside it.
    if (!fs.existsSync(TIME)) {
      notes.rss = `${TIME} missing: peak RSS not measured`
    } else if (o.rssRuns > 0) {
      const t1 = nowMs()
      growTo(agentDir, o.rssRuns, o.tenants, o.runs)
      o.log(`views: grown to ${o.rssRuns} runs in ${Math.round(nowMs() - t1)} ms`)
      await settle(o.settleMs)
      const duRss = await peakRss("du", ["-sb", agentDir])
      const rssViews = VIEWS(Math.ceil(o.rssRuns / o.tenants))
      for (const view of rssViews) {
        const samples: Array<number> = []
        for (let rep = 0; rep < Math.min(o.reps, 2); rep++) samples.push((await peakRss(process.execPath, cliArgs(agentDir, view)))!)
        rows.push({
          label: `peak RSS at ${o.rssRuns.toLocaleString("en-US")} runs: ${view.name}`,
          unit: "MiB",
          ours: summarize(samples),
          baseline: summarize([duRss!]),
          baselineName: "du -sb",
          max: 128
        })
        o.log(`views: ${view.name} peak RSS ${samples.map((s) => s.toFixed(0)).join(", ")} MiB at ${o.rssRuns} runs`)
      }
    }
  } finally {
    removeTree(agentDir)
  }
  return { name: label, rows, notes }
}
