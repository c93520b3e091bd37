/**
 * Smoke runs of the measuring tools (docs/benchmarks.md "Benchmarks and soak test"), a few seconds each, so they cannot rot: the benchmark's
 * scan at a tiny size, its prune and acquire with their floor rows (the C and plain-JavaScript replays of the
 * protocol), the views beside `du -sb`, the event loop during a background prune with the floors of its acquire
 * p99, and the multi-process stress test with two workers.
 */
import { execFile } from "node:child_process"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"

const REPO = path.resolve(import.meta.dirname, "../..")
/**
 * Each run is a child process of its own, awaited (never `spawnSync`: a worker blocked for a minute cannot
 * answer vitest, which then reports RPC timeouts), with time sized to a busy 2-core machine: a quiet run takes
 * 5–20 s, the same beside a CPU hog up to four times that.
 */
const CHILD_TIMEOUT = 240_000
const TEST_TIMEOUT = CHILD_TIMEOUT + 10_000
const tsx = (script: string, args: ReadonlyArray<string>) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, ["--import", "tsx", path.join(REPO, "bench", script), ...args], { cwd: REPO, encoding: "utf8", timeout: CHILD_TIMEOUT, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      resolve({ status: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr: stderr || String(error?.message ?? "") }))
  })

describe("bench tools", () => {
  it("bench --quick --only scan --json prints the measurement with ratio and target", async () => {
    const r = await tsx("main.ts", ["--quick", "--only", "scan", "--runs", "20", "--files", "8", "--reps", "2", "--settle", "0", "--json"])
    expect(r.status, r.stderr).toBe(0)
    const doc = JSON.parse(r.stdout) as {
      machine: { nproc: number; node: string; fsType: string }
      measurements: Array<{ name: string; rows: Array<{ label: string; ours: { median: number; n: number }; baseline: { median: number }; ratio: number; target?: number; pass: boolean | null }> }>
    }
    expect(doc.machine.nproc).toBeGreaterThan(0)
    expect(doc.machine.node).toBe(process.version)
    const scan = doc.measurements.find((m) => m.name === "2 scan")
    expect(scan).toBeDefined()
    const wall = scan!.rows.find((row) => row.label === "wall")!
    expect(wall.ours.n).toBe(4)
    expect(wall.ours.median).toBeGreaterThan(0)
    expect(wall.baseline.median).toBeGreaterThan(0)
    expect(wall.ratio).toBeCloseTo(wall.ours.median / wall.baseline.median, 6)
    expect(wall.target).toBe(2)
    expect(typeof wall.pass).toBe("boolean")
  }, TEST_TIMEOUT)

  it("bench --only prune,acquire at a tiny size reports the floor rows beside ours, and what counting sizes costs", async () => {
    const r = await tsx("main.ts", ["--quick", "--only", "prune,acquire", "--runs", "6", "--files", "3", "--reps", "1", "--ops", "20", "--inactive", "2", "--settle", "0", "--json"])
    expect(r.status, r.stderr).toBe(0)
    const doc = JSON.parse(r.stdout) as { measurements: Array<{ name: string; rows: Array<{ label: string; ours: { median: number }; baseline?: { median: number }; ratio?: number }> }> }
    const labels = (name: string) => doc.measurements.find((m) => m.name === name)!.rows.map((row) => row.label)
    expect(labels("1 prune")).toEqual(expect.arrayContaining([
      "wall",
      "cpu",
      "wall, floor: the protocol's syscalls in C",
      "cpu, floor: the protocol's syscalls in C",
      "wall, floor: the protocol in plain JavaScript",
      "cpu, floor: the protocol in plain JavaScript",
      "wall, size accounting: the C floor counting sizes",
      "cpu, size accounting: the C floor counting sizes"
    ]))
    expect(labels("4 acquire")).toEqual(expect.arrayContaining(["acquire+release ×20", "… floor: the same syscalls in C"]))
    for (const m of doc.measurements) {
      for (const row of m.rows.filter((row) => row.label.includes("floor"))) {
        expect(row.ours.median, row.label).toBeGreaterThan(0)
        expect(row.ratio!, row.label).toBeGreaterThan(0)
      }
    }
  }, TEST_TIMEOUT)

  it("bench --only views at a tiny size times each view beside du -sb and reads its peak RSS", async () => {
    const r = await tsx("main.ts", ["--quick", "--only", "views", "--views-runs", "40", "--views-rss-runs", "60", "--reps", "1", "--settle", "0", "--json"])
    expect(r.status, r.stderr).toBe(0)
    const doc = JSON.parse(r.stdout) as { measurements: Array<{ name: string; rows: Array<{ label: string; ours: { median: number }; baselineName?: string; ratio?: number; target?: number; max?: number }> }> }
    const views = doc.measurements.find((m) => m.name === "views vs du at 40 runs")
    expect(views).toBeDefined()
    const row = (label: string) => views!.rows.find((x) => x.label === label)
    for (const [view, target] of [["status", 2], ["status --json", 2], ["work ls", 2], ["work ls --json", 2], ["doctor", 1.5]] as const) {
      expect(row(`${view} wall`)?.target, view).toBe(target)
      expect(row(`${view} wall`)?.baselineName, view).toBe("du -sb")
      expect(row(`${view} cpu`)!.ratio!, view).toBeGreaterThan(0)
      if (views!.rows.some((x) => x.label.startsWith("peak RSS"))) expect(row(`peak RSS at 60 runs: ${view}`)?.max, view).toBe(128)
    }
  }, TEST_TIMEOUT)

  it("bench --only background at a tiny size reports the event loop, the pairs and their floors during a background prune", async () => {
    const r = await tsx("main.ts", ["--quick", "--only", "background", "--background-runs", "300", "--settle", "0", "--json"])
    expect(r.status, r.stderr).toBe(0)
    const doc = JSON.parse(r.stdout) as { measurements: Array<{ name: string; rows: Array<{ label: string; ours: { median: number }; baselineName?: string; ratio?: number; target?: number; max?: number }> }> }
    const background = doc.measurements.find((m) => m.name === "8 background prune")
    expect(background).toBeDefined()
    const row = (label: string) => background!.rows.find((x) => x.label === label)
    expect(row("event loop: longest block during it, 300 runs")?.max).toBe(20)
    expect(row("… acquire+release p99 during it")?.target).toBe(3)
    expect(row("… close() during it")?.max).toBe(100)
    // The floors of the p99 goal, measured in the same windows: each a time beside the same quiet median.
    for (const label of ["… acquire+release p99, no prune", "… the manifest's fsync alone, p99 during it", "… the manifest's fsync alone, p99 with no prune"]) {
      expect(row(label)?.ours.median, label).toBeGreaterThan(0)
      expect(row(label)?.baselineName, label).toBe("quiet median")
      expect(row(label)?.ratio, label).toBeGreaterThan(0)
    }
  }, TEST_TIMEOUT)

  it("bench table output names every column", async () => {
    const r = await tsx("main.ts", ["--quick", "--only", "scan", "--runs", "5", "--files", "4", "--reps", "1", "--settle", "0"])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/^machine: \d+ × .*node v\d+/m)
    expect(r.stdout).toMatch(/measurement\s+unit\s+ours median\s+ours min–max\s+baseline/)
    expect(r.stdout).toMatch(/2 scan: wall\s+ms\s+[\d.]+\s+[\d.]+–[\d.]+\s+du -sb/)
  }, TEST_TIMEOUT)

  it("stress with two processes for two seconds reports operations and zero violations", async () => {
    const r = await tsx("stress.ts", ["--processes", "2", "--seconds", "2", "--json"])
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0)
    const doc = JSON.parse(r.stdout) as { processes: number; violations: number; operations: Record<string, number> }
    expect(doc.processes).toBe(2)
    expect(doc.violations).toBe(0)
    expect(doc.operations["checks I2+I3"]).toBeGreaterThan(0)
    const acquires = (doc.operations["acquire generated"] ?? 0) + (doc.operations["acquire named"] ?? 0)
    expect(acquires).toBeGreaterThan(0)
  }, TEST_TIMEOUT)
})
