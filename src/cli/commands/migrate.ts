/**
 * `pi-storage migrate [--dry-run]`: run (or preview) the agent-dir layout migration (MG1). The dry run prints
 * `Migration.plan`'s decisions, which are the ones `migrate` executes (planned again under the marker).
 * Exit 1 when an entry failed or the call was partial (run it again to continue).
 */
import * as Effect from "effect/Effect"
import type { LayoutPlan, LayoutReport } from "../../domain/LayoutMigration.js"
import { type CliContext, notADirectory, out, printJson, withStack } from "../context.js"
import { ExitCode } from "../exit.js"
import { joinShown, type Paint, type Shown, txt } from "../format.js"

const PARTIAL = "Partial: the entry budget ran out; run `pi-storage migrate` again to continue."

/** One decision per line (`ACTION  FROM → TO`), its why on the next. */
export const renderPlan = (paint: Paint, plan: LayoutPlan): Shown => {
  if (!plan.exists) return txt`The agent dir ${plan.agentDir} does not exist: nothing to migrate.\n`
  if (plan.decisions.length === 0) return txt`Nothing to migrate: the layout is current.\n`
  const width = Math.max(...plan.decisions.map((d) => d.action.length))
  const lines = [txt`Would migrate (${plan.decisions.length} decision${plan.decisions.length === 1 ? "" : "s"}; nothing was changed):\n`]
  for (const d of plan.decisions) {
    const action = d.action === "refuse" ? paint("red", d.action.padEnd(width)) : d.action === "preserve-conflict" ? paint("yellow", d.action.padEnd(width)) : d.action.padEnd(width)
    lines.push(txt`  ${action}  ${d.from} → ${d.to}\n`, txt`  ${" ".repeat(width)}  ${d.why}\n`)
  }
  if (plan.partial) lines.push(txt`${paint("yellow", PARTIAL)}\n`)
  return joinShown(lines)
}

export const renderLayoutReport = (paint: Paint, report: LayoutReport): Shown => {
  const lines: Array<Shown> = []
  if (report.moved.length + report.merged.length + report.conflicts.length + report.errors.length === 0 && !report.partial) {
    return txt`Nothing to migrate: the layout is current.\n`
  }
  for (const m of report.moved) lines.push(txt`moved      ${m}\n`)
  for (const m of report.merged) lines.push(txt`merged     ${m}\n`)
  for (const c of report.conflicts) lines.push(txt`${paint("yellow", "conflict")}   ${c.from} kept as ${c.to}\n`)
  for (const e of report.errors) lines.push(txt`${paint("red", "failed")}     ${e.path}: ${e.message}\n`)
  if (report.partial) lines.push(txt`${paint("yellow", PARTIAL)}\n`)
  return joinShown(lines)
}

export const migrateExitCode = (report: LayoutReport): number =>
  report.errors.length > 0 || report.partial ? ExitCode.findings : ExitCode.ok

export const migrate = (ctx: CliContext, options: { readonly dryRun: boolean; readonly json: boolean }) =>
  withStack(ctx, (s) =>
    Effect.gen(function*() {
      const migration = yield* s.Migration
      const plan = yield* migration.plan()
      if (plan.notADirectory !== null) return yield* notADirectory(ctx, plan.agentDir, plan.notADirectory)
      if (options.dryRun) {
        yield* options.json ? printJson(plan) : out(renderPlan(ctx.paint, plan))
        if (plan.decisions.some((d) => d.action === "refuse")) ctx.status.raise(ExitCode.findings)
        return
      }
      const report = yield* migration.run()
      yield* options.json ? printJson(report) : out(renderLayoutReport(ctx.paint, report))
      ctx.status.raise(migrateExitCode(report))
    }))
