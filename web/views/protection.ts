/**
 * Protection (README "Dashboard"): how well each tier is covered, the snapshots on a timeline with their size
 * and the bytes unique to each, the last verify and its age, the config history's log with a side-by-side
 * diff viewer (a redacted credential shows as "redacted"); actions "Snapshot now", "Verify", "Record config
 * now". Restore and rollback stay in the CLI: the page shows the exact command.
 */
import { get, post, session } from "../api.js"
import { REDACTED, sideBySide } from "../diff.js"
import { type Child, h, show } from "../dom.js"
import { formatAge, formatBytes, formatCount, formatDate } from "../format.js"
import type { ConfigSnapshotResult, ConfigView, CreateResult, DiffResult, ProtectionView, VerifyResult } from "../types.js"

/** A line of a config file, with the redaction marker shown as a "redacted" badge. */
const withRedactions = (text: string): Array<Child> => {
  const parts: Array<Child> = []
  let rest = text
  for (let at = rest.indexOf(REDACTED); at >= 0; at = rest.indexOf(REDACTED)) {
    parts.push(rest.slice(0, at), h("span", { class: "redacted", title: "a credential: never stored in the history" }, "redacted"))
    rest = rest.slice(at + REDACTED.length)
  }
  parts.push(rest)
  return parts
}

const diffViewer = (diff: DiffResult, title: string): HTMLElement => {
  const files = sideBySide(diff.patch, diff.files)
  return h(
    "section",
    { class: "diff", "data-files": diff.files.length },
    h("h4", {}, title),
    files.length === 0 ? h("p", { class: "empty" }, "No differences.") : files.map((f) =>
      h(
        "table",
        { class: "side-by-side", "data-path": f.path },
        h("caption", {}, f.path),
        h("colgroup", {}, h("col", { class: "ln" }), h("col", {}), h("col", { class: "ln" }), h("col", {})),
        h("tbody", {}, f.rows.map((row) =>
          "header" in row
            ? h("tr", { class: "hunk" }, h("td", { colspan: 4 }, row.header))
            : h(
              "tr",
              { class: `row-${row.kind}` },
              h("td", { class: "ln" }, row.left?.line ?? ""),
              h("td", { class: row.left === null ? "side empty" : row.kind === "context" ? "side" : "side old" }, row.left === null ? "" : withRedactions(row.left.text)),
              h("td", { class: "ln" }, row.right?.line ?? ""),
              h("td", { class: row.right === null ? "side empty" : row.kind === "context" ? "side" : "side new" }, row.right === null ? "" : withRedactions(row.right.text))
            )))
      ))
  )
}

const timeline = (view: ProtectionView, now: number): HTMLElement => {
  const box = h("div", { class: "timeline", role: "list", "data-snapshots": view.snapshots.length })
  if (view.snapshots.length === 0) return h("p", { class: "empty" }, "No snapshots yet.")
  const times = view.snapshots.map((s) => s.createdAt)
  const first = Math.min(...times)
  const span = Math.max(1, now - first)
  const biggest = Math.max(1, ...view.snapshots.map((s) => s.bytes))
  for (const s of [...view.snapshots].reverse()) {
    const dot = h("div", { class: "snapshot-dot", role: "listitem", "data-id": s.id, title: `${s.id}\n${formatBytes(s.bytes)}, ${formatBytes(s.uniqueBytes)} unique` },
      h("span", { class: "dot-label" }, `${formatBytes(s.bytes)} · ${formatBytes(s.uniqueBytes)} unique`))
    dot.style.left = `${3 + ((s.createdAt - first) / span) * 90}%`
    const size = 10 + Math.round(Math.sqrt(s.bytes / biggest) * 22)
    dot.style.width = `${size}px`
    dot.style.height = `${size}px`
    box.append(dot)
  }
  box.append(h("span", { class: "axis-start" }, formatDate(first)), h("span", { class: "axis-end" }, "now"))
  return box
}

export const renderProtection = async (root: HTMLElement, refresh: () => Promise<void>): Promise<void> => {
  const [view, config] = await Promise.all([get<ProtectionView>("protection"), get<ConfigView>("config").catch((e: Error) => e)])
  const now = Date.now()
  const status = h("div", { class: "action-status", role: "status" })
  const act = (label: string, name: string, run: () => Promise<string>) =>
    session.readOnly ? null : h("button", {
      type: "button",
      class: "action",
      "data-action": name,
      onclick: async (e: Event) => {
        const button = e.currentTarget as HTMLButtonElement
        button.disabled = true
        show(status, `${label}…`)
        try {
          const done = await run()
          await refresh()
          // The view was redrawn: say what happened in the new one.
          document.querySelector(".action-status")?.replaceChildren(done)
        } catch (err) {
          show(status, h("span", { class: "error" }, err instanceof Error ? err.message : String(err)))
          button.disabled = false
        }
      }
    }, label)
  const last = view.lastVerify.last
  const verifyLine = last === null
    ? h("p", { class: "verify never", "data-verify": "never" }, view.lastVerify.problem === null ? "Never verified." : `Last verify unreadable: ${view.lastVerify.problem}`)
    : h("p", { class: `verify ${last.ok ? "ok" : "damaged"}`, "data-verify": last.ok ? "ok" : "damaged" },
      `Last verify: ${last.ok ? "OK" : `DAMAGED (${last.corrupt} corrupt, ${last.missing} missing)`}, ${formatAge(last.at, now)} — ${formatCount(last.checked)} entries, ${formatBytes(last.checkedBytes)} re-hashed${last.complete ? "" : " (a slice)"}.`)
  const coverage = h("div", { class: "coverage" }, view.coverage.map((c) =>
    h("div", { class: `cover cover-${c.status}`, "data-tier": c.tier },
      h("strong", {}, c.tier),
      h("span", {}, c.summary, c.newestAt === null ? "" : `, newest ${formatAge(c.newestAt, now)}`),
      c.uncovered.length === 0 ? null : h("ul", {}, c.uncovered.map((u) => h("li", {}, u))))))
  const snapshots = h(
    "table",
    { class: "snapshots" },
    h("thead", {}, h("tr", {}, ["Snapshot", "Made", "Files", "Size", "Unique", "Label"].map((c) => h("th", {}, c)))),
    h("tbody", {}, view.snapshots.map((s) =>
      h("tr", { "data-id": s.id }, h("td", {}, h("code", {}, s.id)), h("td", {}, formatAge(s.createdAt, now)), h("td", { class: "num" }, formatCount(s.files)),
        h("td", { class: "num" }, formatBytes(s.bytes)), h("td", { class: "num" }, formatBytes(s.uniqueBytes)), h("td", {}, s.label ?? ""))))
  )
  const diffBox = h("div", { class: "diff-box" })
  const openDiff = async (title: string, params: Record<string, string | undefined>) => {
    show(diffBox, h("p", {}, "Loading the diff…"))
    try {
      show(diffBox, diffViewer(await get<DiffResult>("config/diff", params), title))
    } catch (e) {
      show(diffBox, h("p", { class: "error" }, e instanceof Error ? e.message : String(e)))
    }
  }
  const configSection = config instanceof Error
    ? h("p", { class: "error" }, `The config history cannot be read: ${config.message}`)
    : h(
      "div",
      {},
      h("p", { class: "config-status" }, config.status.head === null ? "No revision yet." : `Newest revision ${config.status.head.slice(0, 12)}; live files ${config.status.dirty ? "changed since" : "as in it"}.`,
        config.status.dirty && config.status.head !== null ? h("button", { type: "button", class: "link", "data-action": "live-diff", onclick: () => openDiff("Live files against the newest revision", {}) }, " Show the changes") : null),
      config.status.interrupted === null ? null : h("p", { class: "warning" }, `Interrupted change "${config.status.interrupted.message}".`),
      act("Record config now", "record-config", async () => {
        const r = await post<ConfigSnapshotResult>("config/snapshot")
        return r.revision === null ? "Nothing changed: no new revision." : `Recorded revision ${r.revision.slice(0, 12)} (${r.changed.length} file(s)).`
      }),
      h("table", { class: "config-log" },
        h("thead", {}, h("tr", {}, ["Revision", "Date", "Files", "Message", ""].map((c) => h("th", {}, c)))),
        h("tbody", {}, config.log.map((e, i) =>
          h("tr", { "data-revision": e.revision },
            h("td", {}, h("code", {}, e.revision.slice(0, 12))), h("td", {}, e.date.replace("T", " ").replace(/\.\d+Z$/, "Z")), h("td", { class: "num" }, e.changed.length), h("td", {}, e.message),
            h("td", {}, config.log[i + 1] === undefined
              ? h("span", { class: "note" }, "first revision")
              : h("button", { type: "button", class: "link", "data-action": "diff", onclick: () => openDiff(`Changes in ${e.revision.slice(0, 12)}`, { from: config.log[i + 1]!.revision, to: e.revision }) }, "Diff")))))),
      h("p", { class: "cli-only" }, "Roll back in the CLI: ", h("code", {}, config.rollbackCommand)),
      diffBox
    )
  show(
    root,
    h("h2", {}, "Protection"),
    status,
    h("h3", {}, "Coverage"),
    coverage,
    h("h3", {}, "State snapshots"),
    h("p", { class: "note" }, `Backup root ${view.backupRoot}`),
    view.snapshotsProblem === null ? null : h("p", { class: "error" }, view.snapshotsProblem),
    h("div", { class: "actions" },
      act("Snapshot now", "snapshot", async () => {
        const r = await post<CreateResult>("snapshots")
        return `Created snapshot ${r.id}: ${formatCount(r.files)} files, ${r.linkedFiles} hard-linked to the previous one.`
      }),
      act("Verify", "verify", async () => {
        const r = await post<VerifyResult>("verify")
        return r.ok ? `Verify OK: ${formatCount(r.checked)} entries checked.` : `Verify found damage: ${r.corrupt.length} corrupt, ${r.missing.length} missing.`
      })),
    verifyLine,
    timeline(view, now),
    snapshots,
    h("p", { class: "cli-only" }, "Restore in the CLI: ", h("code", {}, view.restoreCommand)),
    h("h3", {}, "Config history"),
    configSection
  )
}
