/**
 * Shared helpers of the benchmark and stress tools: argument parsing, timing (wall and CPU), statistics,
 * table rendering, machine facts, and letting the disk settle before a timed run.
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export const BENCH_DIR = path.dirname(new URL(import.meta.url).pathname)
export const REPO_DIR = path.dirname(BENCH_DIR)
/** The checkout's built `pi-storage` bin (`npm run build`). */
export const BUILT_CLI = path.join(REPO_DIR, "dist", "bundle", "cli", "main.mjs")

/** `--name value`, `--name=value` and bare `--flag` (true). */
export const parseArgs = (argv: ReadonlyArray<string>): Map<string, string | true> => {
  const out = new Map<string, string | true>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith("--")) continue
    const eq = arg.indexOf("=")
    if (eq > 0) {
      out.set(arg.slice(2, eq), arg.slice(eq + 1))
      continue
    }
    const next = argv[i + 1]
    if (next !== undefined && !next.startsWith("--")) {
      out.set(arg.slice(2), next)
      i++
    } else {
      out.set(arg.slice(2), true)
    }
  }
  return out
}

export const numberArg = (args: Map<string, string | true>, name: string, fallback: number): number => {
  const v = args.get(name)
  if (v === undefined || v === true) return fallback
  const n = Number(v)
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} needs a non-negative number, got ${v}`)
  return n
}

export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

/** CPU time (user + system, all threads) of this process, in ms. */
export const cpuMs = (): number => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

export interface Sample {
  readonly wallMs: number
  readonly cpuMs?: number
}

export interface Summary {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly n: number
}

export const summarize = (values: ReadonlyArray<number>): Summary => {
  const sorted = [...values].sort((a, b) => a - b)
  const n = sorted.length
  if (n === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 }
  const median = n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2
  return { median, min: sorted[0]!, max: sorted[n - 1]!, n }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** [I/Os in flight, writes completed, discards completed] of the block device holding `dir`, if Linux says. */
const diskActivity = (dir: string): ReadonlyArray<number> | undefined => {
  try {
    const dev = fs.statSync(dir).dev
    const major = Math.floor(dev / 256) & 0xfff
    const minor = dev & 0xff
    for (const line of fs.readFileSync("/proc/diskstats", "utf8").split("\n")) {
      const f = line.trim().split(/\s+/)
      if (Number(f[0]) === major && Number(f[1]) === minor) return [Number(f[11]), Number(f[7]), Number(f[14] ?? 0)]
    }
  } catch {
    // No /proc/diskstats (not Linux): the fixed pause alone.
  }
  return undefined
}

const QUIET_FOR_MS = 1_000
const QUIET_POLL_MS = 200
const QUIET_CAP_MS = 30_000

/**
 * Flush dirty pages, pause `ms`, then wait until the device holding `dir` has had no I/O in flight and no
 * new writes or discards for a second (ext4 mounted with discard keeps trimming long after a delete, which
 * would land on the next timed run). Capped at 30 s. Answers how long it waited.
 */
export const settle = async (ms: number, dir = os.tmpdir()): Promise<number> => {
  const start = nowMs()
  spawnSync("sync", [], { stdio: "ignore" })
  await sleep(ms)
  let last = diskActivity(dir)
  let quietSince = nowMs()
  while (last !== undefined && nowMs() - quietSince < QUIET_FOR_MS && nowMs() - start < QUIET_CAP_MS) {
    await sleep(QUIET_POLL_MS)
    const now = diskActivity(dir)
    if (now === undefined || now[0] !== 0 || now.some((v, i) => v !== last![i])) quietSince = nowMs()
    last = now
  }
  return nowMs() - start
}

export interface ChildResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly wallMs: number
}

/** Run a command to completion, measuring its wall time from here. */
export const run = (cmd: string, args: ReadonlyArray<string>, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  new Promise<ChildResult>((resolve, reject) => {
    const start = nowMs()
    const child = spawn(cmd, args, { cwd: options.cwd ?? REPO_DIR, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr, wallMs: nowMs() - start }))
  })

/**
 * Run a command under bash's `time` so the child's own CPU time (user + sys of the command and its
 * children) is known, not just the wall time seen from here.
 */
export const runTimed = async (
  cmd: string,
  args: ReadonlyArray<string>,
  env?: NodeJS.ProcessEnv
): Promise<Sample & { code: number | null; stdout: string }> => {
  const script = `TIMEFORMAT='@@TIME %3R %3U %3S'; time "$@"`
  const r = await run("bash", ["-c", script, "bench", cmd, ...args], env === undefined ? {} : { env })
  const m = /@@TIME ([\d.]+) ([\d.]+) ([\d.]+)/.exec(r.stderr)
  if (m === null) throw new Error(`no timing from ${cmd}: ${r.stderr}`)
  return { wallMs: r.wallMs, cpuMs: (Number(m[2]) + Number(m[3])) * 1000, code: r.code, stdout: r.stdout }
}

export const fsTypeOf = (dir: string): string => {
  const r = spawnSync("df", ["-T", dir], { encoding: "utf8" })
  const line = r.stdout?.trim().split("\n")[1]
  return line?.split(/\s+/)[1] ?? "unknown"
}

export interface Machine {
  readonly nproc: number
  readonly cpu: string
  readonly node: string
  readonly fsType: string
  readonly os: string
  readonly loadAverage: ReadonlyArray<number>
}

export const machine = (dir: string): Machine => ({
  nproc: os.cpus().length,
  cpu: os.cpus()[0]?.model ?? "unknown",
  node: process.version,
  fsType: fsTypeOf(dir),
  os: `${os.type()} ${os.release()}`,
  loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100)
})

/** Deterministic PRNG (mulberry32) so fixtures are identical across runs. */
export const prng = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const makeTempRoot = (label: string): string => fs.mkdtempSync(path.join(os.tmpdir(), `pi-${label}-`))

export const fmt = (n: number, digits = 2): string => {
  if (!Number.isFinite(n)) return "–"
  if (Math.abs(n) >= 100) return n.toFixed(0)
  if (Math.abs(n) >= 10) return n.toFixed(1)
  return n.toFixed(digits)
}

/** A plain-text table with right-aligned numeric columns. */
export const renderTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

/**
 * `env` (default: this process's) as a user's machine has it for a CLI: without `NODE_EXTRA_CA_CERTS`, which
 * this VM sets and which makes every Node process read the system's certificates at start (`node -e 0` 0.10
 * against 0.03 s here) though no command of ours uses them. Every row that starts our CLI, and the floors
 * beside it, run with it.
 */
export const withoutExtraCaCerts = (env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv => {
  const e = { ...env }
  delete e["NODE_EXTRA_CA_CERTS"]
  return e
}
