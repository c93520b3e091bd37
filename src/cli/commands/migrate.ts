/**
 * `pi-storage migrate [--dry-run]`: run (or preview) the agent-dir layout migration (MG1).
 * Exit 1 when an entry failed or the call was partial (run it again to continue).
 */
import * as Effect from "effect/Effect"
import type { LayoutReport } from "../../domain/MigrationPlan.js"
import type { MigrationPreview } from "../../services/Inventory.js"
import { type CliContext, notADirectory, out, printJson, withStack } from "../context.js"
import { ExitCode } from "../exit.js"
import type { Paint } from "../format.js"

export const renderPreview = (preview: MigrationPreview): string => {
  if (!preview.exists) return `The agent dir ${preview.agentDir} does not exist: nothing to migrate.\n`
  if (preview.entries.length === 0) return "Nothing to migrate: the layout is current.\n"
  const width = Math.max(...preview.entries.map((e) => e.from.length))
  return "Would migrate:\n" +
    preview.entries.map((e) => `  ${e.from.padEnd(width)}  → ${e.to}${e.action === "merge" ? " (merge into the existing copy)" : ""}\n`).join("")
}

export const renderLayoutReport = (paint: Paint, report: LayoutReport): string => {
  const lines: Array<string> = []
  if (report.moved.length + report.merged.length + report.conflicts.length + report.errors.length === 0 && !report.partial) {
    return "Nothing to migrate: the layout is current.\n"
  }
  for (const m of report.moved) lines.push(`moved      ${m}`)
  for (const m of report.merged) lines.push(`merged     ${m}`)
  for (const c of report.conflicts) lines.push(`${paint("yellow", "conflict")}   ${c.from} kept as ${c.to}`)
  for (const e of report.errors) lines.push(`${paint("red", "failed")}     ${e.path}: ${e.message}`)
  if (report.partial) lines.push(paint("yellow", "Partial: the entry budget ran out; run `pi-storage migrate` again to continue."))
  return lines.join("\n") + "\n"
}

export const migrateExitCode = (report: LayoutReport): number =>
  report.errors.length > 0 || report.partial ? ExitCode.findings : ExitCode.ok

export const migrate = (ctx: CliContext, options: { readonly dryRun: boolean; readonly json: boolean }) =>
  withStack(ctx, (s) =>
    Effect.gen(function*() {
      const preview = yield* (yield* s.Inventory).migrationPreview
      if (preview.notADirectory !== null) return yield* notADirectory(ctx, preview.agentDir, preview.notADirectory)
      if (options.dryRun) return yield* options.json ? printJson(preview) : out(renderPreview(preview))
      const agentDir = yield* s.AgentDir
      const report = yield* (yield* s.Migration).migrateAgentDirLayout(agentDir.path)
      yield* options.json ? printJson(report) : out(renderLayoutReport(ctx.paint, report))
      ctx.status.raise(migrateExitCode(report))
    }))
