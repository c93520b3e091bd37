/**
 * Work runs (README "Dashboard"): every tenant with its runs, the active ones with their holders (host, pid,
 * since), and for the tenant chosen what a prune would remove now, each run with its reason (the dry-run
 * plan and its id). "Prune this tenant" applies exactly that plan: a plan that changed since it was shown is
 * refused by the server and shown again, as it is now.
 */
import { get, post, session } from "../api.js"
import { h, show } from "../dom.js"
import { formatAge, formatBytes, formatSize } from "../format.js"
import type { PrunePlanView, PruneResult, RunList } from "../types.js"

const REASONS: Record<string, string> = {
  age: "unused for longer than the retention's maximum age",
  count: "beyond the newest inactive runs the retention keeps",
  bytes: "the tenant is over its byte budget",
  unmeasured: "size unknown (counts as over budget)"
}

type Tenant = { readonly category: string; readonly tenant: string; readonly runs: RunList["runs"] }

const tenantsOf = (list: RunList): ReadonlyArray<Tenant> => {
  const out = new Map<string, Tenant>()
  for (const run of list.runs) {
    const key = `${run.category}/${run.tenant}`
    const t = out.get(key) ?? { category: run.category, tenant: run.tenant, runs: [] }
    out.set(key, { ...t, runs: [...t.runs, run] })
  }
  for (const u of list.unowned) {
    const key = `${u.category}/${u.tenant}`
    if (!out.has(key)) out.set(key, { category: u.category, tenant: u.tenant, runs: [] })
  }
  return [...out.values()].sort((a, b) => (`${a.category}/${a.tenant}` < `${b.category}/${b.tenant}` ? -1 : 1))
}

const planPanel = (plan: PrunePlanView, note: HTMLElement | null, apply: (plan: PrunePlanView) => void): HTMLElement => {
  const r = plan.report
  const freed = r.removed.reduce((n, x) => n + (x.bytes ?? 0), 0)
  return h(
    "section",
    { class: "plan", "data-plan-id": plan.planId, "data-tenant": `${plan.category}/${plan.tenant}` },
    h("h3", {}, `Prune plan for ${plan.category}/${plan.tenant}`),
    note,
    r.busy ? h("p", { class: "warning" }, `Another prune of this tenant is running${r.busyHolder === undefined ? "" : ` (${r.busyHolder})`}.`) : null,
    h("p", { class: "plan-summary" }, r.removed.length === 0
      ? "A prune now would remove nothing."
      : `A prune now would remove ${r.removed.length} run${r.removed.length === 1 ? "" : "s"} (${r.removed.some((x) => x.bytes === null) ? "≥ " : ""}${formatBytes(freed)}), keeping ${r.kept.length} inactive and ${r.active.length} active.`),
    r.removed.length === 0 ? null : h(
      "table",
      { class: "plan-runs" },
      h("thead", {}, h("tr", {}, ["Run", "Size", "Why"].map((c) => h("th", {}, c)))),
      h("tbody", {}, r.removed.map((x) => h("tr", { "data-run": x.runId }, h("td", {}, h("code", {}, x.runId)), h("td", { class: "num" }, x.bytes === null ? "?" : formatBytes(x.bytes)), h("td", {}, REASONS[x.reason] ?? x.reason))))
    ),
    r.unowned.length === 0 ? null : h("p", { class: "note" }, `${r.unowned.length} entr${r.unowned.length === 1 ? "y is" : "ies are"} not owned by the library and never pruned.`),
    h("p", { class: "plan-id" }, "Plan ", h("code", {}, plan.planId)),
    session.readOnly || r.removed.length === 0 || r.busy
      ? null
      : h("button", { type: "button", class: "action danger", "data-action": "prune", onclick: () => apply(plan) }, `Prune this tenant (${r.removed.length} run${r.removed.length === 1 ? "" : "s"})`)
  )
}

export const renderRuns = async (root: HTMLElement, selected: string | undefined, select: (tenant: string) => void): Promise<void> => {
  const list = await get<RunList>("runs")
  const tenants = tenantsOf(list)
  const planBox = h("div", { class: "plan-box" })
  const table = h(
    "table",
    { class: "tenants" },
    h("thead", {}, h("tr", {}, ["Tenant", "Runs", "Active (holders)", "Size", ""].map((c) => h("th", {}, c)))),
    h("tbody", {}, tenants.map((t) => {
      const key = `${t.category}/${t.tenant}`
      const active = t.runs.filter((r) => r.state === "active")
      const bytes = t.runs.reduce((n, r) => n + r.size.bytes, 0)
      return h(
        "tr",
        { "data-tenant": key, class: key === selected ? "selected" : undefined },
        h("td", {}, h("code", {}, key)),
        h("td", { class: "num" }, t.runs.length),
        h("td", {}, active.length === 0 ? "none" : active.map((r) =>
          h("div", { class: "holder" }, h("code", {}, r.runId), " — ", r.holders.length === 0 ? "held (holder unknown)" : r.holders.map((x) => `${x.host} pid ${x.pid}${x.since === null ? "" : ` since ${formatAge(x.since, list.scannedAt)}`}`).join(", ")))),
        h("td", { class: "num" }, formatSize({ bytes, complete: t.runs.every((r) => r.size.complete) })),
        h("td", {}, h("button", { type: "button", class: "link", "data-action": "plan", onclick: () => select(key) }, "Prune plan"))
      )
    }))
  )
  const runsTable = h(
    "details",
    { class: "all-runs" },
    h("summary", {}, `All ${list.runs.length} runs`),
    h("table", {}, h("thead", {}, h("tr", {}, ["Tenant", "Run", "State", "Last use", "Size"].map((c) => h("th", {}, c)))),
      h("tbody", {}, list.runs.map((r) => h("tr", { "data-run": r.runId }, h("td", {}, `${r.category}/${r.tenant}`), h("td", {}, h("code", {}, r.runId)), h("td", { class: `state-${r.state}` }, r.state), h("td", {}, formatAge(r.lastUsedAt, list.scannedAt)), h("td", { class: "num" }, formatSize(r.size))))))
  )
  show(
    root,
    h("h2", {}, "Work runs"),
    tenants.length === 0 ? h("p", { class: "empty" }, "No work runs.") : table,
    list.truncated ? h("p", { class: "warning" }, "The listing was truncated: a tenant holds more entries than one scan reads.") : null,
    planBox,
    list.runs.length === 0 ? null : runsTable
  )
  if (selected === undefined) return
  const [category, tenant] = selected.split("/")
  const showPlan = (plan: PrunePlanView, note: HTMLElement | null) => show(planBox, planPanel(plan, note, apply))
  const apply = async (plan: PrunePlanView) => {
    try {
      const applied = await post<PruneResult>("prune", { category: plan.category, tenant: plan.tenant, planId: plan.planId })
      if (applied._tag === "PlanChanged") {
        showPlan(applied.plan, h("p", { class: "warning", role: "alert", "data-result": "plan-changed" }, applied.message))
        return
      }
      await renderRuns(root, selected, select)
      const removed = applied.outcomes.filter((o) => o._tag === "Removed").length
      const result = h("div", { class: "result", role: "status", "data-result": "pruned" },
        h("p", {}, `Applied plan ${applied.planId}: removed ${removed} of ${applied.outcomes.length} run${applied.outcomes.length === 1 ? "" : "s"}.`),
        h("ul", {}, applied.outcomes.map((o) => h("li", { "data-run": o.runId, "data-outcome": o._tag }, `${o.runId}: ${o._tag}${"why" in o ? ` (${o.why})` : ""}`))))
      root.querySelector(".plan-box")?.prepend(result)
    } catch (e) {
      planBox.prepend(h("p", { class: "error", role: "alert" }, e instanceof Error ? e.message : String(e)))
    }
  }
  if (category !== undefined && tenant !== undefined) {
    showPlan(await get<PrunePlanView>("prune-plan", { category, tenant }), null)
  }
}
