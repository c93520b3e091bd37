/**
 * `pi-storage status`: the agent dir and where it came from, the web data root, the work root, per-tenant
 * runs and sizes, extension tier sizes (agent and web-host extensions) and the doctor's finding count, all
 * from one `Status` call (the doctor's count is the `doctor` verb's own report on the same roots). Read-only;
 * a missing agent dir is not an error, and status exits 0 whatever the doctor finds (`doctor` exits 1).
 */
import * as Effect from "effect/Effect"
import type { AgentDirSource } from "../../domain/AgentPaths.js"
import type { WebDataRootSource } from "../../domain/WebPaths.js"
import { walkerInUse } from "../../layers/node/walkers.js"
import type { InventoryOptions, Size } from "../../services/Inventory.js"
import { type StatusDocument, statusDocument } from "../../services/internal/statusDocument.js"
import { type CliContext, notADirectory, out, printJson, withStack } from "../context.js"
import { countOf, formatAge, formatApparent, formatEntries, formatSize, joinShown, type Shown, stoppedLines, trimEnd, severitySummary, table, txt } from "../format.js"

export type { StatusDocument }

const SOURCE_LABEL: Record<AgentDirSource, string> = {
  option: "from --agent-dir",
  env: "from $PI_ADAPTATIVE_CODING_AGENT_DIR",
  default: "default"
}

const WEB_SOURCE_LABEL: Record<WebDataRootSource, string> = {
  option: "from --web-data-root",
  env: "from $PI_WEB_DATA_DIR",
  "dev-instance": "the dev instance's",
  default: "default"
}

/** An extension tier's size: disk usage, then apparent size and entries; "-" when the tier is absent. */
const tierCell = (size: Size | null): string =>
  size === null ? "-" : size.measured === false ? formatSize(size) : `${formatSize(size)} (${formatApparent(size)} apparent, ${formatEntries(size)})`

export const renderStatus = (ctx: CliContext, doc: StatusDocument): Shown => {
  const { paint } = ctx
  const lines: Array<Shown> = []
  const blank = txt``
  // A symlinked agent dir is shown as the link and the directory read (AgentDir resolved it once).
  const where = doc.linkedFrom === null ? txt`${doc.agentDir}` : txt`${doc.linkedFrom} -> ${doc.agentDir}`
  lines.push(txt`${paint("bold", "Agent dir")}  ${where} (${SOURCE_LABEL[doc.source]})`)
  lines.push(txt`${paint("bold", "Web data")}   ${doc.webDataRoot} (${WEB_SOURCE_LABEL[doc.webDataRootSource]})`)
  if (doc.exists) {
    lines.push(txt`${paint("bold", "Work root")}  ${doc.workRoot}`)
    lines.push(doc.walker.why === undefined
      ? txt`${paint("bold", "Walker")}     ${doc.walker.kind}`
      : txt`${paint("bold", "Walker")}     ${paint("yellow", doc.walker.kind)} (${doc.walker.why})`)
  }
  const d = doc.doctor
  // A doctor its scan budget stopped counted what it read: the count is a lower bound.
  const summary = d.findings === 0 ? "no findings" : `${d.truncated ? "at least " : ""}${countOf(d.findings, "finding")} (${severitySummary(d.bySeverity)}); see pi-storage doctor`
  const tint = d.bySeverity.error > 0 ? "red" : d.bySeverity.warning > 0 ? "yellow" : "green"
  lines.push(txt`${paint("bold", "Doctor")}     ${paint(tint, summary)}${d.truncated ? " (scan truncated)" : ""}`)
  if (!doc.exists) {
    lines.push(blank, txt`The agent dir does not exist: nothing is stored yet.`)
    lines.push(...webExtensionLines(ctx, doc))
    return txt`${joinShown(lines, "\n")}\n`
  }
  lines.push(blank)
  if (doc.tenants.length === 0) {
    lines.push(txt`No work runs.`)
  } else {
    lines.push(paint("bold", "Work runs"))
    lines.push(trimEnd(table(
      [
        { header: "TENANT" },
        { header: "RUNS", align: "right" },
        { header: "ACTIVE", align: "right" },
        { header: "INACTIVE", align: "right" },
        { header: "UNOWNED", align: "right" },
        { header: "ENTRIES", align: "right" },
        { header: "DISK", align: "right" },
        { header: "APPARENT", align: "right" },
        { header: "OLDEST USE" }
      ],
      doc.tenants.map((t) => [
        `${t.category}/${t.tenant}${t.truncated ? " (truncated)" : ""}`,
        t.runs,
        t.active > 0 ? paint("green", t.active) : 0,
        t.inactive,
        t.unowned > 0 ? paint("yellow", t.unowned) : 0,
        formatEntries(t.size),
        formatSize(t.size),
        formatApparent(t.size),
        t.oldestLastUsedAt === null ? "-" : formatAge(t.oldestLastUsedAt, doc.scannedAt)
      ])
    )))
  }
  if (doc.extensions.length > 0) {
    lines.push(blank, txt`${paint("bold", "Agent extensions")} (config/, state/, cache/ extensions/<ns>/ of the agent dir)`)
    lines.push(trimEnd(table(
      [{ header: "NAMESPACE" }, { header: "CONFIG", align: "right" }, { header: "STATE", align: "right" }, { header: "CACHE", align: "right" }],
      doc.extensions.map((e) => [e.namespace, tierCell(e.config), tierCell(e.state), tierCell(e.cache)])
    )))
  }
  lines.push(...webExtensionLines(ctx, doc))
  if (doc.errors.length > 0) {
    lines.push(blank, paint("yellow", `${doc.errors.length} entr${doc.errors.length === 1 ? "y" : "ies"} could not be read:`))
    for (const e of doc.errors) lines.push(txt`  ${e.message}`)
  }
  // Set apart from the tables above, as in `work ls`.
  if (doc.stoppedBy.length > 0) lines.push(blank, ...stoppedLines(paint, doc.stoppedBy))
  return txt`${joinShown(lines, "\n")}\n`
}

/** The web-host extensions under the web data root (the ones the doctor checks), as a table. */
const webExtensionLines = (ctx: CliContext, doc: StatusDocument): ReadonlyArray<Shown> =>
  doc.webExtensions.length === 0 ? [] : [
    txt``,
    txt`${ctx.paint("bold", "Web extensions")} (data/<extId>/ under the web data root)`,
    trimEnd(table(
      [{ header: "EXTENSION" }, { header: "CONFIG", align: "right" }, { header: "STATE", align: "right" }, { header: "CACHE", align: "right" }],
      doc.webExtensions.map((e) => [e.extId, tierCell(e.config), tierCell(e.state), tierCell(e.cache)])
    ))
  ]

export const status = (
  ctx: CliContext,
  options: { readonly json: boolean; readonly webDataRoot?: string | undefined; readonly limits?: InventoryOptions | undefined }
) =>
  withStack(ctx, (s) =>
    Effect.gen(function*() {
      const report = yield* (yield* s.Status).status({ ...options.limits, ...(options.webDataRoot === undefined ? {} : { webDataRoot: options.webDataRoot }) })
      if (report.notADirectory !== null) return yield* notADirectory(ctx, report.agentDir, report.notADirectory)
      const doc = statusDocument(report, walkerInUse((yield* s.StorageConfig).walker))
      yield* options.json ? printJson(doc) : out(renderStatus(ctx, doc))
    }))
