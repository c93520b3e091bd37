/**
 * The dashboard in a real browser (docs/dashboard.md "Dashboard"): the built `pi-storage ui` on a seeded agent dir, Debian's
 * chromium driven by playwright-core. What a person sees is checked against what is on disk: the treemap's top
 * rectangles and labels against the files' sizes, drill-down and back, the growth chart's points against the
 * usage history, the prune plan's runs and what applying it removes, a stale plan refused, snapshot and verify
 * updating the timeline, the config diff showing a redacted credential as "redacted", the doctor's findings and
 * the USER.md gauge; no console error anywhere. Each view's screenshot is written to docs/ui/ (docs/ui/README.md shows
 * them, so they are true). One browser for the file.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { Browser, Page } from "playwright-core"
import { CHROMIUM, CLI, launchBrowser, type RunningUi, type Seeded, seedAgentDir, seedRun, startUi } from "../support/dashboard.js"
import { scratchDirs } from "../support/scratchDirs.js"
import { du } from "../support/du.js"
import { EXPANDED_ROOT_DIRS } from "../../src/domain/StorageMap.js"

const DOCS = fileURLToPath(new URL("../../docs/ui/", import.meta.url))
const HOLDER = fileURLToPath(new URL("../fixtures/holder.mjs", import.meta.url))
const scratch = scratchDirs()

let seeded: Seeded
let ui: RunningUi
let browser: Browser
let page: Page
let holder: ChildProcess
let heldRun: string
const consoleErrors: Array<string> = []

/**
 * The page's globals, for the functions run in it (passed as functions: the page's CSP forbids evaluating
 * strings, and this file is typed without the DOM library).
 */
interface InPage {
  readonly document: { querySelector(s: string): { getAttribute(n: string): string | null } | null }
  readonly location: { hash: string }
}
/** Wait for the view to be drawn again after `act` (the page numbers each finished drawing in `data-ready`). */
const redraw = async (act: () => Promise<unknown>) => {
  const before = await page.getAttribute("main", "data-ready")
  await act()
  await page.waitForFunction(
    (b) => {
      const m = (globalThis as unknown as InPage).document.querySelector("main")
      return m !== null && m.getAttribute("data-ready") !== b && m.getAttribute("aria-busy") === "false"
    },
    before,
    { timeout: 60_000 }
  )
}

/** Show a view, read afresh (the Refresh button when it is already shown). */
const open = async (hash: string) => {
  const current = await page.evaluate(() => (globalThis as unknown as InPage).location.hash)
  await redraw(() => (current === hash ? page.click('button[data-action="refresh"]') : page.evaluate((h) => void ((globalThis as unknown as InPage).location.hash = h), hash)))
}

/** The view as a person sees it (the pointer moved off, so no tooltip hides it), written to docs/ui/. */
const shoot = async (name: string) => {
  await page.mouse.move(1270, 850)
  await page.screenshot({ path: Path.join(DOCS, `${name}.png`), fullPage: true })
}

/** The tiles of the treemap as drawn: id, the label a person reads, the size text, the bytes it stands for, its area. */
const tiles = () =>
  page.$$eval(".treemap .tile", (els) =>
    els.map((el) => {
      const box = el.getBoundingClientRect()
      return {
        id: el.getAttribute("data-id")!,
        name: el.querySelector(".tile-name")?.textContent ?? "",
        size: el.querySelector(".tile-size")?.textContent ?? "",
        bytes: Number(el.getAttribute("data-bytes")),
        area: box.width * box.height,
        classes: el.className,
        mark: el.querySelector(".mark")?.textContent ?? null
      }
    }))

const KIB = (n: number) => (n < 1024 ? `${n} B` : n / 1024 < 10 ? `${(n / 1024).toFixed(1)} KiB` : `${Math.round(n / 1024)} KiB`)

beforeAll(async () => {
  if (!Fs.existsSync(CLI) || !Fs.existsSync(fileURLToPath(new URL("../../dist/dashboard/assets/app.js", import.meta.url)))) {
    throw new Error("the built CLI or the dashboard's page is missing: `npm run build` first (npm test does)")
  }
  if (!Fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`)
  Fs.mkdirSync(DOCS, { recursive: true })
  const root = scratch("pi-storage-ui-browser-")
  seeded = seedAgentDir(root)
  // A run held by a live process: active, with its holder.
  holder = spawn(process.execPath, [HOLDER, seeded.agentDir, "tools", "bash", "hold"], { stdio: ["ignore", "pipe", "inherit"] })
  heldRun = await new Promise<string>((resolve, reject) => {
    holder.stdout!.setEncoding("utf8").once("data", (d: string) => resolve(JSON.parse(d.split("\n")[0]!).runId))
    holder.once("exit", (code) => reject(new Error(`holder exited ${code}`)))
  })
  // Two config revisions (the second changes the model and the credential).
  const cli = (...args: Array<string>) =>
    new Promise<void>((resolve, reject) => {
      const c = spawn(process.execPath, [CLI, "--agent-dir", seeded.agentDir, ...args], { stdio: "ignore" })
      c.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(" ")}: exit ${code}`))))
    })
  await cli("config", "snapshot", "-m", "first settings")
  Fs.writeFileSync(Path.join(seeded.agentDir, "settings.json"), JSON.stringify({ model: "careful", apiKey: "sk-live-fedcba9876543210" }, null, 2) + "\n")
  await cli("config", "snapshot", "-m", "switch to the careful model")
  ui = await startUi(["--agent-dir", seeded.agentDir, "ui", "--root", seeded.backupRoot])
  browser = await launchBrowser()
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } })
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text())
  })
  page.on("pageerror", (e) => consoleErrors.push(e.message))
  await page.goto(ui.url)
  // The token left the address (exchanged for the session cookie).
  assert.notInclude(page.url(), "token=")
  await page.waitForSelector("main[data-ready]", { timeout: 60_000 })
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await ui?.stop()
  holder?.kill("SIGTERM")
})

describe("the dashboard in a browser (pi-storage ui on a seeded agent dir)", () => {
  it("the treemap's top rectangles and labels match the bytes on disk, largest first, and the doctor's findings are marked where they live", async () => {
    await open("#space")
    // As on disk now (the held run, the config history and the usage record are there too): disk usage as du
    // counts it, less the directories that only group the map's items (state/, state/extensions/ …: the map
    // measures the items below them, docs/dashboard.md "Dashboard").
    const own = (rel: string) => Fs.lstatSync(Path.join(seeded.agentDir, rel)).blocks * 512
    const grouping = (name: string) =>
      EXPANDED_ROOT_DIRS.has(name) && Fs.lstatSync(Path.join(seeded.agentDir, name)).isDirectory()
        ? own(name) + (name !== "work" && Fs.existsSync(Path.join(seeded.agentDir, name, "extensions")) ? own(Path.join(name, "extensions")) : 0)
        : 0
    const at = (...names: Array<string>) => names.reduce((n, name) => n + du(Path.join(seeded.agentDir, name)).bytes - grouping(name), 0)
    const expected = {
      config: at("settings.json", "models.json"),
      state: at("state", "USER.md"),
      cache: at("cache"),
      work: at("work"),
      other: at("skills", "strange.db")
    }
    const drawn = await tiles()
    assert.deepStrictEqual(drawn.map((t) => t.id).sort(), ["tier:cache", "tier:config", "tier:other", "tier:state", "tier:work"])
    for (const t of drawn) {
      const tier = t.id.slice("tier:".length) as keyof typeof expected
      assert.strictEqual(t.name, tier)
      assert.strictEqual(t.bytes, expected[tier], tier)
      assert.strictEqual(t.size, KIB(expected[tier]), tier)
    }
    // Areas follow bytes.
    const byBytes = [...drawn].sort((a, b) => b.bytes - a.bytes).map((t) => t.id)
    const byArea = [...drawn].sort((a, b) => b.area - a.area).map((t) => t.id)
    assert.deepStrictEqual(byArea, byBytes)
    // strange.db (an unknown root entry) and not-ours (a run without a manifest) are doctor warnings.
    assert.match(drawn.find((t) => t.id === "tier:other")!.mark ?? "", /⚠ 1/)
    assert.match(drawn.find((t) => t.id === "tier:work")!.mark ?? "", /⚠ \d/)
    assert.isNull(drawn.find((t) => t.id === "tier:cache")!.mark)
    // Hover: disk usage, apparent size and entries.
    await page.hover('.tile[data-id="tier:cache"]')
    const tip = await page.textContent(".treemap .tooltip")
    assert.include(tip, `disk usage: ${KIB(expected.cache)}`)
    assert.include(tip, "apparent size:")
    // cache/extensions/search and its one file.
    assert.include(tip, "entries: 2")
    await shoot("space")
  }, 120_000)

  it("drill-down to a tenant shows its runs coloured by state, and the breadcrumb and the back button go back", async () => {
    await open("#space")
    await redraw(() => page.click('.tile[data-id="tier:work"]'))
    assert.deepStrictEqual((await tiles()).map((t) => t.id), ["a:work/tools"])
    assert.deepStrictEqual(await page.$$eval(".breadcrumb .crumb", (els) => els.map((e) => e.textContent)), ["everything", "work"])
    await redraw(() => page.click('.tile[data-id="a:work/tools"]'))
    await redraw(() => page.click('.tile[data-id="a:work/tools/bash"]'))
    const runs = await tiles()
    const stateOf = (name: string) => runs.find((t) => t.name === name)?.classes.match(/state-(\w+)/)?.[1]
    for (const run of [...seeded.oldRuns, ...seeded.recentRuns]) assert.strictEqual(stateOf(run), "released", run)
    assert.strictEqual(stateOf(heldRun), "active")
    assert.strictEqual(stateOf("not-ours"), "unowned")
    for (const run of seeded.oldRuns) {
      const tile = runs.find((t) => t.name === run)!
      assert.strictEqual(tile.bytes, du(Path.join(seeded.agentDir, "work", "tools", "bash", run)).bytes)
    }
    // The holder is named in the table below.
    assert.include(await page.textContent(`tr[data-id="a:work/tools/bash/${heldRun}"]`), `:${holder.pid}`)
    await shoot("space-tenant")
    assert.deepStrictEqual(await page.$$eval(".breadcrumb .crumb", (els) => els.map((e) => e.textContent)), ["everything", "work", "work/tools", "bash"])
    await redraw(() => page.click('.breadcrumb .crumb[data-id="tier:work"]'))
    assert.deepStrictEqual((await tiles()).map((t) => t.id), ["a:work/tools"])
    await redraw(() => page.goBack())
    assert.include((await tiles()).map((t) => t.name), heldRun)
    await redraw(() => page.click('.breadcrumb .crumb[data-id="root"]'))
    assert.strictEqual((await tiles()).length, 5)
  }, 120_000)

  it("the growth chart has the recorded points: the last 30 days, then 90", async () => {
    // The three seeded records, and the one the first config snapshot above appended (at most one an hour).
    const history = Fs.readFileSync(Path.join(seeded.agentDir, "state", "usage-history.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
    assert.deepStrictEqual(history.map((r) => r.cause), ["prune", "prune", "prune", "config-snapshot"])
    await open("#growth")
    assert.strictEqual(await page.getAttribute('.growth-root[data-root="agent"] .chart', "data-points"), "3")
    assert.isAbove(await page.locator(".growth-root canvas").count(), 0)
    assert.lengthOf(await page.$$(".points tbody tr"), 3)
    await shoot("growth")
    await redraw(() => page.click("button.window >> text=90 days"))
    assert.strictEqual(await page.getAttribute('.growth-root[data-root="agent"] .chart', "data-points"), "4")
    const work = await page.$$eval(".points tbody tr", (els) => els.map((e) => e.querySelectorAll("td")[5]?.textContent))
    // The work column, oldest first: what the records say.
    assert.deepStrictEqual(work, history.map((r) => KIB(r.tiers.work)))
  }, 120_000)

  it("the prune plan lists the runs a prune would remove with why; applying it removes exactly those", async () => {
    await open("#runs/tools/bash")
    assert.include(await page.textContent('tr[data-tenant="tools/bash"]'), `pid ${holder.pid}`)
    const planned = await page.$$eval(".plan-runs tbody tr", (els) => els.map((e) => [e.getAttribute("data-run"), e.querySelectorAll("td")[2]?.textContent]))
    assert.deepStrictEqual(planned.map(([run]) => run).sort(), [...seeded.oldRuns].sort())
    for (const [, why] of planned) assert.include(why, "unused for longer")
    await shoot("runs")
    await page.click('button[data-action="prune"]')
    await page.waitForSelector('[data-result="pruned"]', { timeout: 60_000 })
    const outcomes = await page.$$eval('[data-result="pruned"] li', (els) => els.map((e) => [e.getAttribute("data-run"), e.getAttribute("data-outcome")]))
    assert.deepStrictEqual(outcomes.sort(), seeded.oldRuns.map((r) => [r, "Removed"]).sort())
    const left = Fs.readdirSync(Path.join(seeded.agentDir, "work", "tools", "bash")).filter((n) => !n.startsWith("."))
    assert.deepStrictEqual(left.sort(), [...seeded.recentRuns, heldRun, "not-ours"].sort())
    // The plan is shown again: nothing left to remove.
    await page.waitForSelector(".plan-summary >> text=would remove nothing")
  }, 120_000)

  it("a plan that changed since it was shown is refused, nothing removed, and the new plan shown", async () => {
    seedRun(seeded.agentDir, "tools", "make", "old-1", 50, 4096)
    await open("#runs/tools/make")
    assert.deepStrictEqual(await page.$$eval(".plan-runs tbody tr", (els) => els.map((e) => e.getAttribute("data-run"))), ["old-1"])
    const shownId = await page.getAttribute(".plan", "data-plan-id")
    // Meanwhile another run ages past the limit: the shown plan is stale.
    seedRun(seeded.agentDir, "tools", "make", "old-2", 50, 4096)
    await page.click('button[data-action="prune"]')
    await page.waitForSelector('[data-result="plan-changed"]', { timeout: 60_000 })
    assert.deepStrictEqual(Fs.readdirSync(Path.join(seeded.agentDir, "work", "tools", "make")).filter((n) => !n.startsWith(".")).sort(), ["old-1", "old-2"])
    assert.deepStrictEqual((await page.$$eval(".plan-runs tbody tr", (els) => els.map((e) => e.getAttribute("data-run")))).sort(), ["old-1", "old-2"])
    assert.notStrictEqual(await page.getAttribute(".plan", "data-plan-id"), shownId)
    await shoot("runs-plan-changed")
  }, 120_000)

  it("snapshot now and verify update the timeline and the last verify; the exact restore command is shown", async () => {
    await open("#protection")
    assert.strictEqual(await page.getAttribute(".verify", "data-verify"), "never")
    assert.lengthOf(await page.$$(".timeline .snapshot-dot"), 0)
    await redraw(() => page.click('button[data-action="snapshot"]'))
    await page.waitForSelector(".action-status >> text=Created snapshot")
    const ids = Fs.readdirSync(seeded.backupRoot).filter((n) => !n.startsWith("."))
    assert.lengthOf(ids, 1)
    assert.deepStrictEqual(await page.$$eval(".timeline .snapshot-dot", (els) => els.map((e) => e.getAttribute("data-id"))), ids)
    await redraw(() => page.click('button[data-action="snapshot"]'))
    assert.lengthOf(await page.$$(".timeline .snapshot-dot"), 2)
    await redraw(() => page.click('button[data-action="verify"]'))
    assert.strictEqual(await page.getAttribute(".verify", "data-verify"), "ok")
    assert.match(await page.textContent(".verify") ?? "", /Last verify: OK, \d+ s ago/)
    assert.include(await page.textContent(".cli-only"), `--agent-dir ${seeded.agentDir} backup restore ID --root ${seeded.backupRoot}`)
    // Every extension's state is in the newest snapshot.
    assert.include(await page.textContent('.cover[data-tier="state"]'), "state of 2 extensions: protected")
    await shoot("protection")
  }, 120_000)

  it("the config log's diff viewer shows the change side by side, the credential as redacted; record config now adds a revision", async () => {
    await open("#protection")
    assert.lengthOf(await page.$$(".config-log tbody tr"), 2)
    await page.click('.config-log tbody tr:first-child button[data-action="diff"]')
    await page.waitForSelector(".side-by-side")
    const old = await page.$$eval(".side-by-side td.old", (els) => els.map((e) => e.textContent))
    const now = await page.$$eval(".side-by-side td.new", (els) => els.map((e) => e.textContent))
    assert.isTrue(old.some((t) => t?.includes('"model": "fast"')))
    assert.isTrue(now.some((t) => t?.includes('"model": "careful"')))
    assert.isAbove(await page.locator(".side-by-side .redacted").count(), 0)
    const text = await page.textContent(".diff")
    assert.notInclude(text, "sk-live")
    await page.locator(".diff").scrollIntoViewIfNeeded()
    await shoot("protection-diff")
    Fs.writeFileSync(Path.join(seeded.agentDir, "models.json"), '{"default":"careful"}\n')
    await redraw(() => page.click('button[data-action="record-config"]'))
    assert.lengthOf(await page.$$(".config-log tbody tr"), 3)
    assert.include(await page.textContent(".config-log tbody tr:first-child"), "recorded from the dashboard")
  }, 120_000)

  it("the doctor's findings with their fixes, and the USER.md budget gauge", async () => {
    await open("#doctor")
    const codes = await page.$$eval(".findings tbody tr", (els) => els.map((e) => e.getAttribute("data-code")))
    assert.include(codes, "unknown-root-entry")
    assert.include(codes, "work-unowned-run")
    const bytes = Fs.statSync(Path.join(seeded.agentDir, "USER.md")).size
    assert.strictEqual(await page.getAttribute(".gauge", "data-bytes"), String(bytes))
    assert.strictEqual(await page.getAttribute(".gauge", "data-budget"), "8192")
    await shoot("doctor")
  }, 120_000)

  it("no console error on any view", () => {
    assert.deepStrictEqual(consoleErrors, [])
  })
})
