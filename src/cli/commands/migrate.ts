/**
 * `pi-storage migrate [--dry-run]`: run (or preview) the agent-dir layout migration (MG1). The dry run prints
 * `Migration.plan`'s decisions, which are the ones `migrate` executes (planned again under the marker).
 * Exit 1 when an entry failed or the call was partial (run it again to continue).
 *
 * `pi-storage migrate --plan FILE [--web-data-root DIR]`: a per-entry plan from the deployment flow (MG2,
 * docs/migrations.md "Migrations"), decoded by `decodeMigrationPlanFile` and run by `Migration.runPlan` (or previewed by
 * `Migration.previewPlan` with `--dry-run`).
 */
import * as NodeFs from "node:fs"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { LayoutPlan, LayoutReport } from "../../domain/LayoutMigration.js"
import type { PlanPreview, PlanReport } from "../../domain/MigrationPlan.js"
import { decodeMigrationPlanFile, PLAN_FILE_MAX_BYTES } from "../../domain/MigrationPlanFile.js"
import {
  type CliContext,
  complain,
  notADirectory,
  out,
  printJson,
  reportError,
  usageError,
  withAgentDirStack,
  withStack
} from "../context.js"
import { ExitCode } from "../exit.js"
import { countOf, joinShown, type Paint, type Shown, txt } from "../format.js"

const PARTIAL = "Partial: the entry budget ran out; run `pi-storage migrate` again to continue."

/** One decision per line (`ACTION  FROM → TO`), its why on the next. */
export const renderPlan = (paint: Paint, plan: LayoutPlan): Shown => {
  if (!plan.exists) return txt`The agent dir ${plan.agentDir} does not exist: nothing to migrate.\n`
  if (plan.decisions.length === 0) return txt`Nothing to migrate: the layout is current.\n`
  const width = Math.max(...plan.decisions.map((d) => d.action.length))
  const lines = [txt`Would migrate (${plan.decisions.length} decision${plan.decisions.length === 1 ? "" : "s"}; nothing was changed):\n`]
  for (const d of plan.decisions) {
    const action = d.action === "refuse" ? paint("red", d.action.padEnd(width)) : d.action === "preserve-conflict" ? paint("yellow", d.action.padEnd(width)) : d.action.padEnd(width)
    lines.push(txt`  ${action}  ${d.from} \u2192 ${d.to}\n`, txt`  ${" ".repeat(width)}  ${d.why}\n`)
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

export const migrate = (
  ctx: CliContext,
  options: { readonly dryRun: boolean; readonly json: boolean; readonly plan?: string | undefined; readonly webDataRoot?: string | undefined }
) =>
  options.plan !== undefined
    ? migratePlan(ctx, { plan: options.plan, webDataRoot: options.webDataRoot, dryRun: options.dryRun, json: options.json })
    : options.webDataRoot !== undefined
    ? usageError(ctx, "--web-data-root goes with --plan FILE (the layout migration is the agent dir's own)")
    : migrateLayout(ctx, options)

const migrateLayout = (ctx: CliContext, options: { readonly dryRun: boolean; readonly json: boolean }) =>
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

// ---------------------------------------------------------------------------------------------------------
// `--plan FILE`: a per-entry plan from the deployment flow (MG2)

/** Read the plan file as given (relative to the working directory); what cannot be read is a usage error. */
const readPlanFile = (file: string): Effect.Effect<Uint8Array, string> =>
  Effect.try({
    try: () => {
      const fd = NodeFs.openSync(file, "r")
      try {
        const info = NodeFs.fstatSync(fd)
        if (!info.isFile()) throw new Error("not a regular file")
        // One byte past the cap is enough for the decoder to say "too large".
        const buffer = Buffer.alloc(Math.min(info.size, PLAN_FILE_MAX_BYTES + 1))
        const read = NodeFs.readSync(fd, buffer, 0, buffer.length, 0)
        return new Uint8Array(buffer.buffer, buffer.byteOffset, read)
      } finally {
        NodeFs.closeSync(fd)
      }
    },
    catch: (e) => `cannot read the plan ${file}: ${e instanceof Error ? e.message : String(e)}`
  })

const stepLabel = (index: number, id: string) => txt`[${index + 1}] ${id}`

/** The dry run: each entry with its root, then its decisions (`ACTION  FROM → TO`), each why on the next line. */
export const renderPlanPreview = (paint: Paint, preview: PlanPreview): Shown => {
  const lines: Array<Shown> = [
    txt`Plan ${preview.planId}: ${preview.entries.length} step${preview.entries.length === 1 ? "" : "s"} (dry run; nothing was changed; journal in the agent dir: ${preview.journal})\n`
  ]
  const width = Math.max(0, ...preview.entries.flatMap((e) => e.decisions.map((d) => d.action.length)))
  preview.entries.forEach((entry, i) => {
    lines.push(txt`${paint("bold", stepLabel(i, entry.id))}  ${entry.kind}  in ${entry.root}\n`)
    for (const d of entry.decisions) {
      const action = d.action.padEnd(width)
      const painted = d.action === "refuse" ? paint("red", action) : d.action === "preserve-conflict" ? paint("yellow", action) : action
      lines.push(txt`  ${painted}  ${d.from} \u2192 ${d.to}\n`, txt`  ${" ".repeat(width)}  ${d.why}\n`)
    }
  })
  return joinShown(lines)
}

/** The run: one line per entry with its outcome, then where colliding data was kept, or why it failed. */
export const renderPlanReport = (paint: Paint, report: PlanReport): Shown => {
  const lines: Array<Shown> = []
  const width = Math.max(0, ...report.entries.map((e) => e.outcome.length))
  report.entries.forEach((entry, i) => {
    const outcome = entry.outcome.padEnd(width)
    const painted = entry.outcome === "failed" ? paint("red", outcome) : entry.outcome === "conflict-preserved" ? paint("yellow", outcome) : outcome
    const rows = entry.rows === undefined ? "" : ` (${countOf(entry.rows, "row")}, ${entry.mergedRows ?? 0} taken from ${entry.from})`
    lines.push(txt`${painted}  ${stepLabel(i, entry.id)}: ${entry.from} \u2192 ${entry.to}${rows}  in ${entry.root}\n`)
    for (const kept of entry.conflicts ?? []) lines.push(txt`${" ".repeat(width)}  kept ${kept}\n`)
    if (entry.reason !== undefined && entry.outcome !== "conflict-preserved") lines.push(txt`${" ".repeat(width)}  ${entry.reason}\n`)
  })
  lines.push(txt`Journal (in the agent dir): ${report.journal}\n`)
  return joinShown(lines)
}

/** The failed entries, named by position and id, for stderr (the deployment flow's log). */
const failedSteps = (report: PlanReport): ReadonlyArray<Shown> =>
  report.entries.flatMap((entry, i) =>
    entry.outcome === "failed" ? [txt`step ${i + 1} of ${report.entries.length} (${JSON.stringify(entry.id)}) of plan ${report.planId} failed: ${entry.reason ?? "failed"}`] : []
  )

export interface PlanFlags {
  readonly plan: string
  readonly webDataRoot: string | undefined
  readonly dryRun: boolean
  readonly json: boolean
}

/**
 * `pi-storage migrate --plan FILE`: decode the plan (a bad one is exit 2, nothing read or moved), then preview
 * it (`--dry-run`, exit 1 when an entry would fail) or run it (exit 1 naming each failed step on stderr).
 */
export const migratePlan = (ctx: CliContext, flags: PlanFlags) =>
  Effect.gen(function*() {
    const bytes = yield* Effect.either(readPlanFile(flags.plan))
    if (Either.isLeft(bytes)) return yield* usageError(ctx, bytes.left)
    const plan = decodeMigrationPlanFile(bytes.right, flags.plan)
    if (Either.isLeft(plan)) return yield* reportError(ctx, plan.left)
    const options = flags.webDataRoot === undefined ? {} : { webDataRoot: flags.webDataRoot }
    return yield* withAgentDirStack(ctx, (s) =>
      Effect.gen(function*() {
        const migration = yield* s.Migration
        if (flags.dryRun) {
          const preview = yield* migration.previewPlan(plan.right, options)
          yield* flags.json ? printJson(preview) : out(renderPlanPreview(ctx.paint, preview))
          if (preview.refused) ctx.status.raise(ExitCode.findings)
          return
        }
        const report = yield* migration.runPlan(plan.right, options)
        yield* flags.json ? printJson(report) : out(renderPlanReport(ctx.paint, report))
        for (const line of failedSteps(report)) yield* complain(ctx, line, ExitCode.findings)
      }).pipe(Effect.catchAll((e) => reportError(ctx, e))))
  })
