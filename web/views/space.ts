/**
 * Where the bytes are (README "Dashboard"): the node's children as a treemap (d3-hierarchy's squarified
 * layout, sized by the bytes the size walk counted), drill-down by click, a breadcrumb back, a table of the
 * same children below (zero-byte entries included). Runs are coloured by state; the doctor's findings are
 * marked on the tile they live in; a size the walk budget cut short says "≥" and is drawn dashed.
 */
import { hierarchy, treemap, treemapSquarify } from "d3-hierarchy"
import { get } from "../api.js"
import { h, show } from "../dom.js"
import { formatBytes, formatCount, formatSize } from "../format.js"
import type { MapLevel, MapNode } from "../types.js"

interface Datum {
  readonly node?: MapNode
  readonly children?: ReadonlyArray<Datum>
}

const describe = (n: MapNode): string => {
  const lines = [
    n.label,
    `disk usage: ${formatSize(n.size)}`,
    `apparent size: ${n.size.complete ? "" : "≥ "}${formatBytes(n.size.apparentBytes)}`,
    `entries: ${n.size.complete ? "" : "≥ "}${formatCount(n.size.entries)}`
  ]
  if (n.state !== null) lines.push(`state: ${n.state}`)
  for (const holder of n.holders) lines.push(`held by ${holder.host}:${holder.pid}`)
  if (n.mark !== null) lines.push(`doctor: ${n.mark.count} finding${n.mark.count === 1 ? "" : "s"} (${n.mark.severity})`)
  if (n.path !== null) lines.push(n.path)
  return lines.join("\n")
}

const tileClass = (n: MapNode): string =>
  ["tile", `tier-${n.tier ?? "none"}`, `kind-${n.kind}`, n.state === null ? "" : `state-${n.state}`, n.size.complete ? "" : "incomplete", n.expandable ? "expandable" : ""]
    .filter((c) => c !== "")
    .join(" ")

export const renderSpace = async (root: HTMLElement, nodeId: string, navigate: (id: string) => void, fresh: boolean): Promise<void> => {
  const level = await get<MapLevel>("map", { node: nodeId, fresh: fresh ? "1" : undefined })
  const crumbs = h(
    "nav",
    { class: "breadcrumb", "aria-label": "breadcrumb" },
    level.breadcrumb.map((c) => [h("button", { class: "crumb", type: "button", "data-id": c.id, onclick: () => navigate(c.id) }, c.label), " › "]),
    h("span", { class: "crumb current" }, level.node.label)
  )
  const head = h(
    "div",
    { class: "level-head" },
    h("h2", {}, level.node.label),
    h("span", { class: "level-size" }, `${formatSize(level.node.size)} on disk · ${formatCount(level.node.size.entries)} entries`),
    level.complete
      ? null
      : h("p", { class: "incomplete-note" }, "Incomplete: the size walk's budget ran out or an entry could not be read here; sizes marked ≥ are lower bounds, not drawn as exact.")
  )
  // The view is drawn before it is shown: its width is the main area's.
  const width = Math.max(320, Math.min((document.getElementById("view")?.clientWidth ?? 1000) - 40, 1200))
  const height = 440
  const area = h("div", { class: "treemap", role: "list" })
  area.style.width = `${width}px`
  area.style.height = `${height}px`
  const tooltip = h("div", { class: "tooltip", role: "tooltip" })
  tooltip.hidden = true
  const sized = level.children.filter((c) => c.size.bytes > 0)
  if (sized.length === 0) {
    area.append(h("p", { class: "empty" }, level.children.length === 0 ? "Nothing here." : "Nothing here takes any bytes."))
  } else {
    const tree = hierarchy<Datum>({ children: sized.map((node) => ({ node })) }, (d) => d.children as Array<Datum> | undefined)
      .sum((d) => d.node?.size.bytes ?? 0)
      .sort((a, b) => (b.value ?? 0) - (a.value ?? 0))
    const laid = treemap<Datum>().tile(treemapSquarify).size([width, height]).paddingInner(2).round(true)(tree)
    for (const leaf of laid.leaves()) {
      const n = leaf.data.node!
      const tile = h(
        "div",
        {
          class: tileClass(n),
          role: "listitem",
          tabindex: n.expandable ? 0 : undefined,
          "data-id": n.id,
          "data-bytes": n.size.bytes,
          "aria-label": describe(n)
        },
        h("span", { class: "tile-name" }, n.label),
        h("span", { class: "tile-size" }, formatSize(n.size)),
        n.mark === null ? null : h("span", { class: `mark mark-${n.mark.severity}`, title: `${n.mark.count} doctor finding(s)` }, `⚠ ${n.mark.count}`)
      )
      tile.style.left = `${leaf.x0}px`
      tile.style.top = `${leaf.y0}px`
      tile.style.width = `${Math.max(0, leaf.x1 - leaf.x0)}px`
      tile.style.height = `${Math.max(0, leaf.y1 - leaf.y0)}px`
      if (leaf.x1 - leaf.x0 < 48 || leaf.y1 - leaf.y0 < 28) tile.classList.add("small")
      if (n.expandable) {
        tile.addEventListener("click", () => navigate(n.id))
        tile.addEventListener("keydown", (e) => {
          if ((e as KeyboardEvent).key === "Enter") navigate(n.id)
        })
      }
      tile.addEventListener("mouseenter", () => {
        tooltip.textContent = describe(n)
        tooltip.hidden = false
      })
      tile.addEventListener("mousemove", (e) => {
        const me = e as MouseEvent
        const box = area.getBoundingClientRect()
        tooltip.style.left = `${Math.min(me.clientX - box.left + 14, width - 260)}px`
        tooltip.style.top = `${me.clientY - box.top + 14}px`
      })
      tile.addEventListener("mouseleave", () => {
        tooltip.hidden = true
      })
      area.append(tile)
    }
  }
  area.append(tooltip)
  const legend = h(
    "div",
    { class: "legend" },
    level.children.some((c) => c.kind === "run")
      ? ["active", "released", "idle", "quarantined", "unowned"].map((s) => h("span", { class: `swatch state-${s}` }, s))
      : ["config", "state", "cache", "work", "other"].map((t) => h("span", { class: `swatch tier-${t}` }, t))
  )
  const table = h(
    "table",
    { class: "children" },
    h("thead", {}, h("tr", {}, ["Name", "Disk usage", "Apparent size", "Entries", "State", "Doctor"].map((c) => h("th", {}, c)))),
    h(
      "tbody",
      {},
      level.children.map((n) =>
        h(
          "tr",
          { "data-id": n.id },
          h("td", {}, n.expandable ? h("button", { type: "button", class: "link", onclick: () => navigate(n.id) }, n.label) : n.label),
          h("td", { class: "num" }, formatSize(n.size)),
          h("td", { class: "num" }, `${n.size.complete ? "" : "≥ "}${formatBytes(n.size.apparentBytes)}`),
          h("td", { class: "num" }, formatCount(n.size.entries)),
          h("td", {}, n.state === null ? "" : n.state, n.holders.map((x) => h("div", { class: "holder" }, `${x.host}:${x.pid}`))),
          h("td", {}, n.mark === null ? "" : h("span", { class: `mark mark-${n.mark.severity}` }, `${n.mark.count} ${n.mark.severity}`))
        )
      )
    )
  )
  const problems = level.problems.length === 0
    ? null
    : h("details", { class: "problems" }, h("summary", {}, `${level.problems.length} entr${level.problems.length === 1 ? "y" : "ies"} could not be read`), h("ul", {}, level.problems.map((p) => h("li", {}, p.message))))
  show(root, crumbs, head, area, legend, problems, table)
}
