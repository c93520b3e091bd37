/**
 * Growth (README "Dashboard"): bytes per tier over the last 30 or 90 days, from the usage history that the
 * writing operations append to (at most one record an hour per root), drawn with uPlot; the recorded points
 * are listed below the chart too.
 */
import uPlot from "uplot"
import { get } from "../api.js"
import { h, show } from "../dom.js"
import { formatBytes, formatDate } from "../format.js"
import type { GrowthView } from "../types.js"

const TIERS = ["config", "state", "cache", "work", "other"] as const
const COLORS: Record<(typeof TIERS)[number], string> = { config: "#7b61ff", state: "#1f9d55", cache: "#3b82f6", work: "#e08a00", other: "#8a8f98" }

const chartFor = (records: GrowthView["records"], width: number, window: { readonly from: number; readonly to: number }): HTMLElement => {
  const box = h("div", { class: "chart", "data-points": records.length })
  const data: uPlot.AlignedData = [
    records.map((r) => r.at / 1000),
    ...TIERS.map((t) => records.map((r) => r.tiers[t]))
  ]
  const options: uPlot.Options = {
    width,
    height: 320,
    series: [
      {},
      ...TIERS.map((t): uPlot.Series => ({ label: t, stroke: COLORS[t], width: 2, points: { show: true, size: 6 }, value: (_u, v) => (v === null ? "–" : formatBytes(v)) }))
    ],
    axes: [{}, { values: (_u, ticks) => ticks.map((v) => formatBytes(v)), size: 80 }],
    // The whole window asked for, whatever the points cover (one point alone would make its own range).
    scales: { x: { time: true, range: [window.from / 1000, window.to / 1000] } }
  }
  // uPlot draws on a canvas and sets its own layout through the style object (allowed by the CSP).
  new uPlot(options, data, box)
  return box
}

export const renderGrowth = async (root: HTMLElement, days: number, choose: (days: number) => void): Promise<void> => {
  const view = await get<GrowthView>("growth", { days: String(days) })
  const width = Math.max(320, Math.min((document.getElementById("view")?.clientWidth ?? 1000) - 60, 1100))
  const windows = h("div", { class: "windows" }, [30, 90].map((d) =>
    h("button", { type: "button", class: d === days ? "window current" : "window", "aria-pressed": d === days ? "true" : "false", onclick: () => choose(d) }, `${d} days`)))
  const sections = (["agent", "web"] as const).map((rootName) => {
    const records = view.records.filter((r) => r.root === rootName)
    if (records.length === 0 && rootName === "web") return null
    return h(
      "section",
      { class: "growth-root", "data-root": rootName },
      h("h3", {}, rootName === "agent" ? "Agent dir" : "Web data root"),
      records.length === 0
        ? h("p", { class: "empty" }, "No usage recorded yet: a prune, a snapshot or a config snapshot records one (at most one an hour).")
        : chartFor(records, width, { from: view.now - view.days * 24 * 60 * 60 * 1000, to: view.now }),
      records.length === 0 ? null : h(
        "table",
        { class: "points" },
        h("thead", {}, h("tr", {}, ["When", "Recorded by", ...TIERS].map((c) => h("th", {}, c)))),
        h("tbody", {}, records.map((r) =>
          h("tr", { "data-at": r.at }, h("td", {}, formatDate(r.at)), h("td", {}, r.cause), TIERS.map((t) => h("td", { class: "num" }, `${r.complete ? "" : "≥ "}${formatBytes(r.tiers[t])}`)))))
      )
    )
  })
  show(
    root,
    h("h2", {}, "Growth"),
    windows,
    view.problem === null ? null : h("p", { class: "warning" }, `The usage history ${view.path} does not read from line ${view.problem.line} on (${view.problem.why}); it is left as it is.`),
    sections
  )
}
