/**
 * The dashboard (docs/dashboard.md "Dashboard") on a large agent dir: `pi-storage ui` from the build, on `runs` released
 * runs spread over `tenants` tenants, measured as a person meets it:
 * - time to first render: a new server each repetition, Debian's chromium (playwright-core, no download)
 *   opening the token URL until the page says its first view is drawn (`main[data-ready]`, not busy);
 * - the API's latency on that server, once the page is up: each endpoint the page calls, timed over HTTP.
 * Without /usr/bin/chromium the render row is left out (the notes say so); the API rows are still measured.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { buildTenant, ensureWorkRoot, BENCH_CATEGORY, tenantDirOf } from "./fixtures.js"
import type { Measurement, Row } from "./result.js"
import { nowMs, summarize, BUILT_CLI } from "./util.js"

export interface DashboardOptions {
  readonly root: string
  readonly runs: number
  readonly tenants: number
  readonly reps: number
  readonly log: (line: string) => void
}

const CLI = BUILT_CLI
const CHROMIUM = "/usr/bin/chromium"

interface Ui {
  readonly url: string
  readonly port: number
  readonly token: string
  readonly stop: () => Promise<void>
}

const startUi = (agentDir: string): Promise<Ui> =>
  new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [CLI, "--agent-dir", agentDir, "ui"], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d
      const m = /http:\/\/127\.0\.0\.1:(\d+)\/\?token=([0-9a-f]{32})/.exec(stdout)
      if (m === null) return
      const exited = new Promise<void>((done) => child.once("exit", () => done()))
      resolve({ url: m[0], port: Number(m[1]), token: m[2]!, stop: () => (child.exitCode === null && child.kill("SIGINT"), exited) })
    })
    child.once("exit", (code) => reject(new Error(`pi-storage ui exited (${code}) before printing its URL: ${stdout} ${stderr}`)))
  })

/** One GET with the token as a bearer; resolves with its milliseconds (a non-200 answer is an error). */
const timedGet = (ui: Ui, apiPath: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const started = nowMs()
    const req = http.get({ host: "127.0.0.1", port: ui.port, path: apiPath, headers: { host: `127.0.0.1:${ui.port}`, authorization: `Bearer ${ui.token}` } }, (res) => {
      res.resume()
      res.on("end", () => (res.statusCode === 200 ? resolve(nowMs() - started) : reject(new Error(`${apiPath}: HTTP ${res.statusCode}`))))
    })
    req.on("error", reject)
  })

/** The page's globals the wait reads (this file is typed without the DOM library). */
interface InPage {
  readonly document: { querySelector(s: string): { getAttribute(n: string): string | null } | null }
}

export const benchDashboard = async (o: DashboardOptions): Promise<Measurement> => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`)
  const agentDir = path.join(o.root, "dashboard-agent")
  ensureWorkRoot(agentDir)
  const perTenant = Math.ceil(o.runs / o.tenants)
  const started = nowMs()
  for (let t = 0; t < o.tenants; t++) buildTenant(tenantDirOf(agentDir, `t${t}`), `t${t}`, { runs: Math.min(perTenant, o.runs - t * perTenant), filesPerRun: 2 }, t + 1)
  o.log(`dashboard: ${o.runs} runs in ${o.tenants} tenants built in ${Math.round(nowMs() - started)} ms`)

  const endpoints = [
    "/api/status",
    "/api/map?node=root",
    `/api/map?node=${encodeURIComponent(`a:work/${BENCH_CATEGORY}`)}`,
    `/api/map?node=${encodeURIComponent(`a:work/${BENCH_CATEGORY}/t0`)}`,
    "/api/runs",
    `/api/prune-plan?category=${BENCH_CATEGORY}&tenant=t0`,
    "/api/growth?days=30",
    "/api/protection",
    "/api/doctor"
  ]
  const latency = new Map<string, Array<number>>(endpoints.map((e) => [e, []]))
  const render: Array<number> = []
  const haveBrowser = fs.existsSync(CHROMIUM)
  const { chromium } = await import("playwright-core")
  const browser = haveBrowser ? await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu"] }) : undefined
  try {
    for (let rep = 0; rep < o.reps; rep++) {
      const ui = await startUi(agentDir)
      try {
        if (browser !== undefined) {
          const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
          const page = await context.newPage()
          const t0 = nowMs()
          await page.goto(ui.url)
          await page.waitForFunction(() => {
            const main = (globalThis as unknown as InPage).document.querySelector("main")
            return main !== null && main.getAttribute("data-ready") !== null && main.getAttribute("aria-busy") === "false"
          }, undefined, { timeout: 600_000 })
          render.push(nowMs() - t0)
          await context.close()
        }
        for (const e of endpoints) latency.get(e)!.push(await timedGet(ui, e))
      } finally {
        await ui.stop()
      }
      o.log(`dashboard: rep ${rep + 1}/${o.reps}${render.length > 0 ? `, first render ${Math.round(render.at(-1)!)} ms` : ""}`)
    }
  } finally {
    await browser?.close()
  }
  const rows: Array<Row> = [
    ...(render.length > 0 ? [{ label: "time to first render (new server, chromium)", unit: "ms", ours: summarize(render) }] : []),
    ...endpoints.map((e): Row => ({ label: `GET ${e}`, unit: "ms", ours: summarize(latency.get(e)!) }))
  ]
  return { name: "dashboard", rows, notes: { runs: o.runs, tenants: o.tenants, filesPerRun: 2, browser: haveBrowser ? CHROMIUM : "none: /usr/bin/chromium missing, render not measured" } }
}
