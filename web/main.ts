/**
 * The dashboard's page (README "Dashboard"): a header with the agent dir and its totals, five views chosen by
 * the address's fragment (`#space`, `#growth`, `#runs`, `#protection`, `#doctor`), each drawn from the typed
 * API. Plain DOM; d3-hierarchy lays out the treemap and uPlot draws the growth chart, both bundled here.
 */
import { get, session } from "./api.js"
import { h, show } from "./dom.js"
import { formatSize } from "./format.js"
import type { SessionInfo, StatusDocument } from "./types.js"
import { renderDoctor } from "./views/doctor.js"
import { renderGrowth } from "./views/growth.js"
import { renderProtection } from "./views/protection.js"
import { renderRuns } from "./views/runs.js"
import { renderSpace } from "./views/space.js"

const VIEWS = [
  ["space", "Where the bytes are"],
  ["growth", "Growth"],
  ["runs", "Work runs"],
  ["protection", "Protection"],
  ["doctor", "Doctor"]
] as const

type Route = { readonly view: (typeof VIEWS)[number][0]; readonly arg: string | undefined }

const route = (): Route => {
  const hash = decodeURIComponent(location.hash.replace(/^#/, ""))
  const at = hash.indexOf("/")
  const name = at < 0 ? hash : hash.slice(0, at)
  const arg = at < 0 ? undefined : hash.slice(at + 1)
  const view = VIEWS.find(([v]) => v === name)?.[0] ?? "space"
  return { view, arg }
}

const go = (view: string, arg?: string) => {
  location.hash = `#${view}${arg === undefined ? "" : `/${encodeURIComponent(arg)}`}`
}

const app = document.getElementById("app")!
const header = h("header", {})
const nav = h("nav", { class: "views" })
const main = h("main", { id: "view", "aria-live": "polite" })

const drawHeader = async () => {
  const [info, status] = await Promise.all([get<SessionInfo>("session"), get<StatusDocument>("status")])
  const work = status.tenants.reduce((n, t) => n + t.size.bytes, 0)
  const d = status.doctor
  show(
    header,
    h("h1", {}, "pi-storage"),
    h("span", { class: "agent-dir" }, h("code", {}, info.agentDir)),
    info.webDataRoot === null ? null : h("span", { class: "agent-dir" }, "web: ", h("code", {}, info.webDataRoot)),
    h("span", { class: "stat" }, `work runs ${formatSize({ bytes: work, complete: status.tenants.every((t) => t.size.complete) })}`),
    d === null ? null : h("span", { class: `stat doctor-${d.bySeverity.error > 0 ? "error" : d.bySeverity.warning > 0 ? "warning" : "ok"}` },
      d.findings === 0 ? "doctor: no findings" : `doctor: ${d.findings} finding${d.findings === 1 ? "" : "s"}`),
    session.readOnly ? h("span", { class: "read-only" }, "read-only") : null
  )
}

let drawing = 0
/** `fresh`: the Refresh button (the server measures again instead of reusing its recent scan). */
const draw = async (fresh = false) => {
  const mine = ++drawing
  const r = route()
  show(
    nav,
    VIEWS.map(([v, label]) => h("a", { href: `#${v}`, class: v === r.view ? "current" : undefined, "aria-current": v === r.view ? "page" : undefined }, label)),
    h("button", { type: "button", class: "refresh", "data-action": "refresh", title: "Read everything again", onclick: () => void draw(true) }, "Refresh")
  )
  main.setAttribute("data-view", r.view)
  main.setAttribute("aria-busy", "true")
  try {
    const target = h("div", { class: `view view-${r.view}` })
    switch (r.view) {
      case "space":
        await renderSpace(target, r.arg ?? "root", (id) => go("space", id), fresh)
        break
      case "growth":
        await renderGrowth(target, r.arg === "90" ? 90 : 30, (days) => go("growth", String(days)))
        break
      case "runs":
        await renderRuns(target, r.arg, (tenant) => go("runs", tenant))
        break
      case "protection":
        await renderProtection(target, () => draw())
        break
      case "doctor":
        await renderDoctor(target)
        break
    }
    if (mine === drawing) show(main, target)
  } catch (e) {
    if (mine === drawing) show(main, h("p", { class: "error", role: "alert" }, e instanceof Error ? e.message : String(e)))
  } finally {
    if (mine === drawing) {
      main.setAttribute("aria-busy", "false")
      main.setAttribute("data-ready", String(mine))
    }
  }
}

show(app, header, nav, main)
window.addEventListener("hashchange", () => void draw())
void drawHeader().catch((e: unknown) => show(header, h("p", { class: "error" }, e instanceof Error ? e.message : String(e))))
void draw()
