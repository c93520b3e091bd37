/**
 * `pi-storage status`: the agent dir and where it came from, the work root, per-tenant runs and sizes,
 * extension tier sizes and the doctor's finding count. Read-only; a missing agent dir is not an error.
 */
import * as Effect from "effect/Effect"
import type { AgentDirSource } from "../../domain/AgentPaths.js"
import type { Severity } from "../../domain/Findings.js"
import { walkerInUse } from "../../layers/node/walkers.js"
import type { InventoryOptions, InventoryReport } from "../../services/Inventory.js"
import { type CliContext, notADirectory, out, printJson, withStack } from "../context.js"
import { countOf, formatAge, formatApparent, formatEntries, formatSize, joinShown, type Shown, severityCounts, stoppedLines, trimEnd, severitySummary, table, txt } from "../format.js"

export interface StatusDocument extends InventoryReport {
  readonly source: AgentDirSource
  /** `null` when the agent dir does not exist. */
  readonly doctor: { readonly findings: number; readonly bySeverity: Record<Severity, number>; readonly truncated: boolean } | null
  /** The tree walker in use: `native` (the C addon) or `portable`, with why (an install without a C compiler). */
  readonly walker: { readonly kind: "native" | "portable"; readonly why?: string }
}

const SOURCE_LABEL: Record<AgentDirSource, string> = {
  option: "from --agent-dir",
  env: "from $PI_ADAPTATIVE_CODING_AGENT_DIR",
  default: "default"
}

export const renderStatus = (ctx: CliContext, doc: StatusDocument): Shown => {
  const { paint } = ctx
  const lines: Array<Shown> = []
  const blank = txt``
  // A symlinked agent dir is shown as the link and the directory read (AgentDir resolved it once).
  const where = doc.linkedFrom === null ? txt`${doc.agentDir}` : txt`${doc.linkedFrom} -> ${doc.agentDir}`
  lines.push(txt`${paint("bold", "Agent dir")}  ${where} (${SOURCE_LABEL[doc.source]})`)
  if (!doc.exists) {
    lines.push(blank, txt`The agent dir does not exist: nothing is stored yet.`)
    return txt`${joinShown(lines, "\n")}\n`
  }
  lines.push(txt`${paint("bold", "Work root")}  ${doc.workRoot}`)
  lines.push(doc.walker.why === undefined
    ? txt`${paint("bold", "Walker")}     ${doc.walker.kind}`
    : txt`${paint("bold", "Walker")}     ${paint("yellow", doc.walker.kind)} (${doc.walker.why})`)
  if (doc.doctor !== null) {
    const d = doc.doctor
    const summary = d.findings === 0 ? "no findings" : `${countOf(d.findings, "finding")} (${severitySummary(d.bySeverity)}); see pi-storage doctor`
    const tint = d.bySeverity.error > 0 ? "red" : d.bySeverity.warning > 0 ? "yellow" : "green"
    lines.push(txt`${paint("bold", "Doctor")}     ${paint(tint, summary)}${d.truncated ? " (scan truncated)" : ""}`)
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
    lines.push(blank, paint("bold", "Extension data"))
    lines.push(trimEnd(table(
      [{ header: "NAMESPACE" }, { header: "STATE", align: "right" }, { header: "CACHE", align: "right" }],
      doc.extensions.map((e) => [
        e.namespace,
        e.state === null ? "-" : tierCell(e.state),
        e.cache === null ? "-" : tierCell(e.cache)
      ])
    )))
  }
  if (doc.errors.length > 0) {
    lines.push(blank, paint("yellow", `${doc.errors.length} entr${doc.errors.length === 1 ? "y" : "ies"} could not be read:`))
    for (const e of doc.errors) lines.push(txt`  ${e.message}`)
  }
  lines.push(...stoppedLines(paint, doc.stoppedBy))
  return txt`${joinShown(lines, "\n")}\n`
}

/** An extension tier's size: disk usage, then apparent size and entries. */
const tierCell = (size: InventoryReport["tenants"][number]["size"]): string =>
  size.measured === false ? formatSize(size) : `${formatSize(size)} (${formatApparent(size)} apparent, ${formatEntries(size)})`

export const status = (ctx: CliContext, options: { readonly json: boolean; readonly limits?: InventoryOptions }) =>
  withStack(ctx, (s) =>
    Effect.gen(function*() {
      const agentDir = yield* s.AgentDir
      const inventory = yield* s.Inventory
      const report = yield* inventory.summary(options.limits)
      if (report.notADirectory !== null) return yield* notADirectory(ctx, report.agentDir, report.notADirectory)
      let doctor: StatusDocument["doctor"] = null
      if (report.exists) {
        const found = yield* (yield* s.Doctor).doctor()
        doctor = { findings: found.findings.length, bySeverity: severityCounts(found.findings), truncated: found.truncated }
      }
      const doc: StatusDocument = { ...report, source: agentDir.source, doctor, walker: walkerInUse((yield* s.StorageConfig).walker) }
      yield* options.json ? printJson(doc) : out(renderStatus(ctx, doc))
    }))
