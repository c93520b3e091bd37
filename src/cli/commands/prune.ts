/**
 * `pi-storage work prune (--all | CATEGORY/TENANT) [--dry-run] [--max-age D] [--max-runs N] [--max-bytes S]`.
 * The pruner decides; this prints its plan or report. Limits given here may be looser than the library
 * defaults (the person at the shell owns the harness), so the ceiling is raised to whatever was asked.
 */
import * as Effect from "effect/Effect"
import type { PruneReport } from "../../domain/PruneReport.js"
import { decodeRetentionInput, resolvePolicy, type RetentionInput, type RetentionPolicy } from "../../domain/Retention.js"
import { type CliContext, out, printJson, reportError, usageError, withStack } from "../context.js"
import { ExitCode, exitCodeForError } from "../exit.js"
import { formatBytes, formatDuration, type Paint, table } from "../format.js"
import { parseTenantTarget, type TenantTarget } from "../parse.js"

export interface PruneFlags {
  readonly all: boolean
  readonly target: string | undefined
  readonly dryRun: boolean
  readonly maxAgeMs: number | undefined
  readonly maxRuns: number | undefined
  readonly maxBytes: number | undefined
  readonly json: boolean
}

export type TenantOutcome =
  | { readonly category: string; readonly tenant: string; readonly report: PruneReport }
  | { readonly category: string; readonly tenant: string; readonly error: { readonly _tag: string; readonly message: string } }

const reasonText = (reason: string, policy: RetentionPolicy): string => {
  switch (reason) {
    case "age":
      return `unused for over ${formatDuration(policy.maxAgeMs)}`
    case "count":
      return `beyond the newest ${policy.maxInactiveRuns} inactive runs`
    case "bytes":
      return `tenant over ${formatBytes(policy.maxBytes)}`
    case "unmeasured":
      return "size unknown (counts as over budget)"
    default:
      return reason
  }
}

const freed = (report: PruneReport): string => {
  const known = report.removed.reduce((sum, r) => sum + (r.bytes ?? 0), 0)
  return (report.removed.some((r) => r.bytes === null) ? "≥ " : "") + formatBytes(known)
}

export const renderTenantReport = (paint: Paint, policy: RetentionPolicy, outcome: TenantOutcome): string => {
  const name = paint("bold", `${outcome.category}/${outcome.tenant}`)
  if ("error" in outcome) return `${name}: ${paint("red", outcome.error.message)}\n`
  const r = outcome.report
  if (r.busy) return `${name}: ${paint("yellow", "busy: another prune of this tenant is running; nothing was done")}\n`
  const verb = r.dryRun ? "would remove" : "removed"
  const lines: Array<string> = [
    `${name}: ${verb} ${r.removed.length} run${r.removed.length === 1 ? "" : "s"} (${freed(r)}), ` +
    `kept ${r.kept.length}, active ${r.active.length}, scanned ${r.scannedRuns}${r.truncated ? " (truncated)" : ""}`
  ]
  const body: Array<string> = []
  if (r.removed.length > 0) {
    body.push(table(
      [{ header: "RUN" }, { header: "SIZE", align: "right" }, { header: "WHY" }],
      r.removed.map((x) => [x.runId, x.bytes === null ? "?" : formatBytes(x.bytes), reasonText(x.reason, policy)])
    ))
  }
  if (r.skipped.length > 0) {
    body.push(`${paint("yellow", "Skipped:")}\n` + r.skipped.map((x) => `  ${x.runId}: ${x.why}\n`).join(""))
  }
  if (r.unowned.length > 0) {
    body.push(`${paint("yellow", "Not owned by the library (never deleted):")}\n` + r.unowned.map((x) => `  ${x.name}: ${x.why}\n`).join(""))
  }
  if (r.errors.length > 0) {
    body.push(`${paint("red", "Errors:")}\n` + r.errors.map((x) => `  ${x.path}: ${x.message}\n`).join(""))
  }
  const size = (n: number | null) => (n === null ? "unknown" : formatBytes(n))
  body.push(`Size ${size(r.bytesBefore)} before, ${size(r.bytesAfter)} after${r.incomplete ? " (some sizes are lower bounds)" : ""}.\n`)
  return lines.join("\n") + "\n" + body.map((b) => b.replace(/^(?=.)/gm, "  ")).join("")
}

/** The exit code a set of outcomes earns: refused (3) over failures (1) over ok. */
export const pruneExitCode = (outcomes: ReadonlyArray<TenantOutcome>): number => {
  let code: number = ExitCode.ok
  for (const o of outcomes) {
    const c = "error" in o ? exitCodeForError(o.error._tag) : o.report.busy ? ExitCode.refused : o.report.errors.length > 0 ? ExitCode.findings : ExitCode.ok
    code = Math.max(code, c)
  }
  return code
}

/** A progress line on stderr, redrawn in place; only on a TTY. */
const progressLine = (ctx: CliContext, label: string) => {
  if (!ctx.stderrIsTTY) return { onProgress: undefined, clear: Effect.void }
  let drawn = false
  const onProgress = (p: { readonly phase: "scan" | "remove"; readonly done: number; readonly total: number }) => {
    const step = Math.max(1, Math.floor(p.total / 100))
    if (p.done % step !== 0) return
    drawn = true
    process.stderr.write(`\r\u001b[K${label}: ${p.phase === "scan" ? "scanning" : "removing"} ${p.done}/${p.total}`)
  }
  return { onProgress, clear: Effect.sync(() => { if (drawn) process.stderr.write("\r\u001b[K") }) }
}

export const prune = (ctx: CliContext, flags: PruneFlags) =>
  Effect.gen(function*() {
    if (flags.all === (flags.target !== undefined)) {
      return yield* usageError(ctx, "work prune needs either --all or CATEGORY/TENANT (not both)")
    }
    let target: TenantTarget | undefined
    if (flags.target !== undefined) {
      const parsed = parseTenantTarget(flags.target)
      if (!parsed.ok) return yield* usageError(ctx, parsed.message)
      target = parsed.value
    }
    // WR8a: the flags' values go through the one policy Schema too (the parsers already refuse most).
    const decoded = decodeRetentionInput({
      ...(flags.maxAgeMs !== undefined ? { maxAgeMs: flags.maxAgeMs } : {}),
      ...(flags.maxRuns !== undefined ? { maxInactiveRuns: flags.maxRuns } : {}),
      ...(flags.maxBytes !== undefined ? { maxBytes: flags.maxBytes } : {})
    })
    if (decoded._tag === "Left") return yield* usageError(ctx, decoded.left.message)
    const input: RetentionInput = decoded.right
    // A person asked for these limits: they are the ceiling too (they may be looser than the WR9 defaults).
    const policy = resolvePolicy(input)
    yield* withStack(ctx, (s) =>
      Effect.gen(function*() {
        const workRuns = yield* s.WorkRuns
        const targets = target !== undefined ? [target] : yield* (yield* s.Inventory).tenants
        const outcomes: Array<TenantOutcome> = []
        for (const t of targets) {
          const progress = progressLine(ctx, `${t.category}/${t.tenant}`)
          const result = yield* workRuns.prune({
            category: t.category,
            tenant: t.tenant,
            policy: input,
            dryRun: flags.dryRun,
            ...(progress.onProgress ? { onProgress: progress.onProgress } : {})
          }).pipe(Effect.either, Effect.ensuring(progress.clear))
          outcomes.push(result._tag === "Right"
            ? { ...t, report: result.right }
            : { ...t, error: { _tag: result.left._tag, message: result.left.message } })
        }
        const code = pruneExitCode(outcomes)
        if (flags.json) {
          const only = outcomes[0]
          if (target !== undefined && only !== undefined) {
            // One tenant: exactly the facade's PruneReport; a refusal is reported on stderr.
            if ("error" in only) yield* reportError(ctx, only.error)
            else yield* printJson(only.report)
          } else {
            yield* printJson({ dryRun: flags.dryRun, tenants: outcomes })
          }
        } else if (outcomes.length === 0) {
          yield* out("No work tenants to prune.\n")
        } else {
          const single = outcomes.length === 1 ? outcomes[0] : undefined
          if (single !== undefined && "error" in single) yield* reportError(ctx, single.error)
          else yield* out(outcomes.map((o) => renderTenantReport(ctx.paint, policy, o)).join("\n"))
        }
        ctx.status.raise(code)
      }), { retentionCeiling: policy })
  })
