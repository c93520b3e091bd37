/**
 * Doctor (README "Dashboard"): the read-only doctor's findings, worst first, each with the command or step that
 * fixes it; and the USER.md budget as a gauge.
 */
import { get } from "../api.js"
import { type Child, h, show } from "../dom.js"
import { formatBytes } from "../format.js"
import type { DoctorReport, ProfileView } from "../types.js"

const RANK = { error: 0, warning: 1, info: 2 } as const

/** A fix's `backticked` commands as code. */
const fixText = (fix: string): Array<Child> => fix.split("`").map((part, i) => (i % 2 === 1 ? h("code", {}, part) : part))

const gauge = (profile: ProfileView): HTMLElement => {
  const share = profile.budgetBytes === 0 ? 1 : profile.bytes / profile.budgetBytes
  const bar = h("div", { class: "gauge-fill" })
  bar.style.width = `${Math.min(100, Math.round(share * 100))}%`
  const level = share > 1 ? "over" : share > 0.8 ? "high" : "ok"
  return h(
    "section",
    { class: `gauge gauge-${level}`, "data-bytes": profile.bytes, "data-budget": profile.budgetBytes },
    h("h3", {}, "USER.md budget"),
    h("div", { class: "gauge-track", role: "meter", "aria-valuemin": 0, "aria-valuemax": profile.budgetBytes, "aria-valuenow": profile.bytes }, bar),
    h("p", {}, `${formatBytes(profile.bytes)} of ${formatBytes(profile.budgetBytes)} (${Math.round(share * 100)}%); ${profile.entries.length} entr${profile.entries.length === 1 ? "y" : "ies"}${profile.sharded ? ", older ones archived in shards" : ""}.`),
    profile.unparsable.length === 0 ? null : h("p", { class: "error" }, `${profile.unparsable.length} shard(s) cannot be read.`)
  )
}

export const renderDoctor = async (root: HTMLElement): Promise<void> => {
  const [report, profile] = await Promise.all([get<DoctorReport>("doctor"), get<ProfileView>("profile").catch((e: Error) => e)])
  const findings = [...report.findings].sort((a, b) => RANK[a.severity] - RANK[b.severity] || (a.path < b.path ? -1 : 1))
  show(
    root,
    h("h2", {}, "Doctor"),
    h("p", { class: "note" }, `${report.scanned} entries checked${report.truncated ? " (the scan budget ran out: not everything was checked)" : ""}.`),
    findings.length === 0
      ? h("p", { class: "ok", "data-findings": 0 }, "No findings.")
      : h(
        "table",
        { class: "findings", "data-findings": findings.length },
        h("thead", {}, h("tr", {}, ["Severity", "Code", "Where", "What", "Fix"].map((c) => h("th", {}, c)))),
        h("tbody", {}, findings.map((f) =>
          h("tr", { class: `sev-${f.severity}`, "data-code": f.code },
            h("td", {}, h("span", { class: `badge badge-${f.severity}` }, f.severity)),
            h("td", {}, h("code", {}, f.code)),
            h("td", {}, h("code", {}, f.path)),
            h("td", {}, f.message),
            h("td", {}, f.fix === undefined ? "" : fixText(f.fix)))))
      ),
    profile instanceof Error ? h("p", { class: "error" }, `USER.md cannot be read: ${profile.message}`) : gauge(profile)
  )
}
