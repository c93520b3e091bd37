/**
 * A development tool beside measurement 8: which code holds the event loop during a background prune.
 * `npx tsx bench/backgroundTurns.ts --runs 10000 [--template DIR] [--no-profile]`
 *
 * Runs one background prune of `--runs` released runs in this process (an acquire of the tenant starts it, then
 * acquire + release of another tenant until it ends), records the main thread's CPU time per turn
 * (bench/turns.ts) and a V8 CPU profile taken in-process, and prints the turns that used the most CPU with the
 * functions the profile's samples in each name (self time, and the innermost of our own frames). `--template`
 * keeps the built runs between invocations; `--heap-at MS` writes a heap snapshot that long into the prune. It loads the library from `dist/` (`npm run build` first): tsc keeps
 * its functions' names and lines, which the profile then names.
 */
import * as fs from "node:fs"
import { Session } from "node:inspector/promises"
import { type PerformanceEntry, PerformanceObserver } from "node:perf_hooks"
import * as path from "node:path"
import * as v8 from "node:v8"
import { acquireRelease, buildReleasedRuns, pruneEnded, PRUNED_TENANT } from "./backgroundPrune.js"
import { BENCH_CATEGORY, copyTree, ensureWorkRoot, removeTree, tenantDirOf } from "./fixtures.js"
import { monitorTurns, type TurnWindow } from "./turns.js"
import { makeTempRoot, nowMs, REPO_DIR, numberArg, parseArgs, settle } from "./util.js"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const frameName = (n: ProfileNode): string => {
  const url = n.callFrame.url.replace(/^.*\/(src|dist|node_modules|bench)\//, "$1/")
  return `${n.callFrame.functionName || "(anonymous)"} ${url}:${n.callFrame.lineNumber + 1}`
}

const top = (counts: Map<string, number>, n: number) =>
  [...counts].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${v} ${k}`)

const attribute = (profile: Profile, windows: ReadonlyArray<TurnWindow>) => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const times: Array<number> = []
  let t = profile.startTime
  for (const d of profile.timeDeltas) times.push((t += d) / 1000)
  for (const w of windows) {
    const self = new Map<string, number>()
    const ours = new Map<string, number>()
    let samples = 0
    for (let i = 0; i < times.length; i++) {
      if (times[i]! < w.startMs || times[i]! > w.endMs) continue
      const node = byId.get(profile.samples[i]!)!
      if (node.callFrame.functionName === "(idle)") continue
      samples++
      self.set(frameName(node), (self.get(frameName(node)) ?? 0) + 1)
      // The innermost frames of our own code (src/) on the stack, up to three, as one chain.
      const chain: Array<string> = []
      for (let id: number | undefined = node.id; id !== undefined && chain.length < 3; id = parent.get(id)) {
        const f = byId.get(id)!
        if (/\/(src|dist)\//.test(f.callFrame.url) && !f.callFrame.url.includes("node_modules")) chain.push(frameName(f))
      }
      const key = chain.join(" < ") || "(no src frame)"
      ours.set(key, (ours.get(key) ?? 0) + 1)
    }
    process.stdout.write(`\n== turn: ${w.cpuMs.toFixed(1)} ms CPU, ${(w.endMs - w.startMs).toFixed(1)} ms wall, ${samples} samples\n`)
    for (const line of top(self, 6)) process.stdout.write(`  self  ${line}\n`)
    for (const line of top(ours, 6)) process.stdout.write(`  ours  ${line}\n`)
  }
}

const main = async () => {
  const args = parseArgs(process.argv.slice(2))
  const runs = numberArg(args, "runs", 10_000)
  const profiling = !args.has("no-profile")
  const root = makeTempRoot("turns")
  const templateArg = args.get("template")
  const template = typeof templateArg === "string" ? templateArg : path.join(root, "template")
  try {
    if (!fs.existsSync(path.join(template, "run-000000"))) {
      process.stderr.write(`building ${runs} released runs in ${template}\n`)
      removeTree(template)
      buildReleasedRuns(template, runs)
    }
    const agentDir = path.join(root, "agent")
    ensureWorkRoot(agentDir)
    const tenantDir = tenantDirOf(agentDir, PRUNED_TENANT)
    copyTree(template, tenantDir)
    await settle(300)
    const { openAgentStorage } = (await import(path.join(REPO_DIR, "dist", "promise.js"))) as typeof import("../src/promise.js")
    const store = await openAgentStorage({ agentDir, migrate: false })
    const session = new Session()
    try {
      for (let i = 0; i < 20; i++) await acquireRelease(store)
      if (profiling) {
        session.connect()
        await session.post("Profiler.enable")
        await session.post("Profiler.setSamplingInterval", { interval: 200 })
        await session.post("Profiler.start")
      }
      // Garbage collections on the main thread, on the turns' clock (hrtime ms).
      const gcs: Array<{ readonly startMs: number; readonly ms: number; readonly kind: number }> = []
      const offset = nowMs() - performance.now()
      const observer = new PerformanceObserver((list) => {
        for (const e of list.getEntries() as Array<PerformanceEntry & { detail?: { kind?: number } }>) {
          gcs.push({ startMs: e.startTime + offset, ms: e.duration, kind: e.detail?.kind ?? 0 })
        }
      })
      observer.observe({ entryTypes: ["gc"] })
      const monitor = monitorTurns({ keep: 12, keepOverMs: 8 })
      const t0 = nowMs()
      const started = Date.now()
      const lease = await store.acquireWorkRun({ category: BENCH_CATEGORY, tenant: PRUNED_TENANT })
      const first = nowMs() - t0
      await lease.release()
      let pairs = 0
      let worst = 0
      const heapAt = numberArg(args, "heap-at", 0)
      let heapWritten = heapAt === 0
      while (!pruneEnded(tenantDir, started)) {
        if (!heapWritten && nowMs() - t0 > heapAt) {
          heapWritten = true
          process.stderr.write(`heap snapshot: ${v8.writeHeapSnapshot()}\n`)
        }
        worst = Math.max(worst, await acquireRelease(store))
        pairs++
      }
      const stats = monitor.stop()
      observer.disconnect()
      // kind: 1 minor (scavenge), 4 major (mark-compact), 8 incremental marking, 16 weak callbacks.
      const gcIn = (w: TurnWindow) =>
        gcs.filter((g) => g.startMs < w.endMs && g.startMs + g.ms > w.startMs).map((g) => `${g.kind === 1 ? "minor" : g.kind === 4 ? "major" : `kind ${g.kind}`} ${g.ms.toFixed(1)} ms`).join(", ")
      for (const w of stats.longest) process.stdout.write(`turn ${w.cpuMs.toFixed(1)} ms CPU, ${(w.endMs - w.startMs).toFixed(1)} ms wall; GC: ${gcIn(w) || "none"}\n`)
      const majors = gcs.filter((g) => g.kind === 4)
      process.stdout.write(`GC: ${gcs.length} pauses, ${majors.length} major (longest ${Math.max(0, ...majors.map((g) => g.ms)).toFixed(1)} ms wall), longest minor ${Math.max(0, ...gcs.filter((g) => g.kind === 1).map((g) => g.ms)).toFixed(1)} ms wall\n`)
      const pruneMs = nowMs() - t0
      process.stdout.write(
        `${runs} runs: prune ${pruneMs.toFixed(0)} ms, first acquire ${first.toFixed(1)} ms, ${pairs} pairs (worst ${worst.toFixed(1)} ms); ` +
          `turns ${stats.windows}: max CPU ${stats.maxCpuMs.toFixed(1)} ms (${stats.source}), max wall ${stats.maxWallMs.toFixed(1)} ms, ` +
          `${stats.over10Ms} over 10 ms CPU\n`
      )
      if (profiling) {
        const { profile } = await session.post("Profiler.stop")
        if (args.has("save")) fs.writeFileSync(String(args.get("save")), JSON.stringify(profile))
        attribute(profile as unknown as Profile, stats.longest)
      }
    } finally {
      if (profiling) session.disconnect()
      await store.close()
    }
  } finally {
    removeTree(root)
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
  process.exit(1)
})
