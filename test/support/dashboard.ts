/**
 * Test support for the dashboard (docs/dashboard.md "Dashboard"): a seeded agent dir whose every byte the tests know,
 * `pi-storage ui` started from the built CLI as a child process (its URL read from stdout, stopped with
 * SIGINT), and Debian's chromium driven by playwright-core (no browser download; a fresh profile per launch).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium } from "playwright-core"

export const CLI = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
export const CHROMIUM = "/usr/bin/chromium"

const DAY = 24 * 60 * 60 * 1000

export const launchBrowser = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout: 60_000
  })

const write = (path: string, bytes: number | string) => {
  Fs.mkdirSync(Path.dirname(path), { recursive: true })
  Fs.writeFileSync(path, typeof bytes === "string" ? bytes : Buffer.alloc(bytes, 0x61))
}

/** A run directory the library owns (a v2 manifest, its mtime dated too), last used `daysAgo` days ago and released then. */
export const seedRun = (agentDir: string, category: string, tenant: string, runId: string, daysAgo: number, payloadBytes: number, now = Date.now()) => {
  const dir = Path.join(agentDir, "work", category, tenant, runId)
  const at = now - daysAgo * DAY
  const manifest = Path.join(dir, ".pi-work-run.json")
  write(manifest, JSON.stringify({ version: 2, category, tenant, runId, kind: "named", createdAt: at, createdBy: { host: "seed", pid: 1 }, releasedAt: at }))
  // Last written then on the file system's clock too: prune judges ages on it (docs/work-runs.md "Retention").
  Fs.utimesSync(manifest, at / 1000, at / 1000)
  Fs.mkdirSync(Path.join(dir, ".leases"), { recursive: true })
  write(Path.join(dir, "out.bin"), payloadBytes)
  return dir
}

export interface Seeded {
  readonly agentDir: string
  readonly backupRoot: string
  /** Runs of tools/bash a prune with the default policy removes (released 40 days ago) and keeps. */
  readonly oldRuns: ReadonlyArray<string>
  readonly recentRuns: ReadonlyArray<string>
}

/**
 * An agent dir with something in every tier, an unknown root entry the doctor flags (`strange.db`), a tenant
 * with two runs old enough to prune, two recent ones and an unowned directory, three usage records (1, 5 and
 * 60 days old) and a USER.md. The backup root is beside it.
 */
export const seedAgentDir = (root: string, now = Date.now()): Seeded => {
  const agentDir = Path.join(root, "agent")
  write(Path.join(agentDir, "settings.json"), JSON.stringify({ model: "fast", apiKey: "sk-live-0123456789abcdef" }, null, 2) + "\n")
  write(Path.join(agentDir, "models.json"), "{}\n")
  write(Path.join(agentDir, "state", "extensions", "todo", "items.db"), 96 * 1024)
  write(Path.join(agentDir, "state", "extensions", "notes", "notes.json"), 24 * 1024)
  write(Path.join(agentDir, "cache", "extensions", "search", "index.bin"), 320 * 1024)
  write(Path.join(agentDir, "skills", "review", "SKILL.md"), 12 * 1024)
  write(Path.join(agentDir, "strange.db"), 8 * 1024)
  write(Path.join(agentDir, "USER.md"), "- prefers short answers\n- works in TypeScript\n")
  const oldRuns = [seedRun(agentDir, "tools", "bash", "old-a", 40, 40 * 1024, now), seedRun(agentDir, "tools", "bash", "old-b", 45, 30 * 1024, now)]
  const recentRuns = [seedRun(agentDir, "tools", "bash", "recent-a", 1, 10 * 1024, now), seedRun(agentDir, "tools", "bash", "recent-b", 2, 10 * 1024, now)]
  write(Path.join(agentDir, "work", "tools", "bash", "not-ours", "data.txt"), 2 * 1024)
  const record = (daysAgo: number, work: number) =>
    JSON.stringify({ v: 1, at: now - daysAgo * DAY, root: "agent", cause: "prune", tiers: { config: 100, state: 120_000 + work, cache: 330_000, work, other: 20_000 }, entries: 40, complete: true })
  write(Path.join(agentDir, "state", "usage-history.jsonl"), [record(60, 50_000), record(5, 90_000), record(1, 130_000)].join("\n") + "\n")
  return { agentDir, backupRoot: Path.join(root, "backups"), oldRuns: oldRuns.map((d) => Path.basename(d)), recentRuns: recentRuns.map((d) => Path.basename(d)) }
}

export interface RunningUi {
  readonly url: string
  readonly origin: string
  readonly port: number
  readonly token: string
  readonly child: ChildProcess
  readonly stderr: () => string
  /** SIGINT, as Ctrl-C; resolves with the exit code. */
  readonly stop: () => Promise<number | null>
}

/** `pi-storage ui` (the built CLI) with `args`; resolves once it printed its URL. */
export const startUi = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = process.env): Promise<RunningUi> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`pi-storage ui printed no URL within 60 s: ${stdout} ${stderr}`))
    }, 60_000)
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d
      const m = /(http:\/\/127\.0\.0\.1:(\d+))\/\?token=([0-9a-f]{32})/.exec(stdout)
      if (m === null) return
      clearTimeout(timer)
      const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
      resolve({
        url: m[0],
        origin: m[1]!,
        port: Number(m[2]),
        token: m[3]!,
        child,
        stderr: () => stderr,
        stop: () => {
          if (child.exitCode === null) child.kill("SIGINT")
          return exited
        }
      })
    })
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`pi-storage ui exited (${code}) before printing its URL: ${stdout} ${stderr}`))
    })
  })
