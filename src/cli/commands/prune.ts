/**
 * `pi-storage work prune (--all | CATEGORY/TENANT) [--dry-run] [--max-age D] [--max-runs N] [--max-bytes S] [--quiet]`.
 * `--all` goes through `Inventory.pruneTargets` (a root WR10 finds unsafe is a refused outcome, exit 3) and ends with
 * a grand total.
 * The pruner decides; this prints its plan or report. Limits given here may be looser than the library
 * defaults (the person at the shell owns the harness), so the ceiling is raised to whatever was asked.
 */
import * as Effect from "effect/Effect"
import type { PruneReport } from "../../domain/PruneReport.js"
import { withArticle } from "../../domain/Article.js"
import { decodeRetentionInput, resolvePolicy, type RetentionInput, type RetentionPolicy } from "../../domain/Retention.js"
import type { RefusedTarget } from "../../services/Inventory.js"
import { type CliContext, notADirectory, out, printJson, reportError, usageError, withStack } from "../context.js"
import { ExitCode, exitCodeForError } from "../exit.js"
import { writeErr } from "../streams.js"
import { formatBytes, formatCount, formatDuration, indent, joinShown, type Paint, type Shown, stoppedLines, table, txt } from "../format.js"
import { parseTenantTarget, type TenantTarget } from "../parse.js"

export interface PruneFlags {
  readonly all: boolean
  readonly target: string | undefined
  readonly dryRun: boolean
  readonly maxAgeMs: number | undefined
  readonly maxRuns: number | undefined
  readonly maxBytes: number | undefined
  /** The scan bounds (docs/work-runs.md "Retention"): raised by a person who wants a prune to see more. */
  readonly maxScannedRuns?: number | undefined
  readonly maxEntries?: number | undefined
  readonly maxDepth?: number | undefined
  /** Only tenants where something was removed or went wrong (and, with --all, the total). */
  readonly quiet: boolean
  readonly json: boolean
}

export type TenantOutcome =
  | { readonly category: string; readonly tenant: string; readonly report: PruneReport }
  | { readonly category: string; readonly tenant: string; readonly error: { readonly _tag: string; readonly message: string } }
  /** A directory where a category or tenant belongs whose name the library never makes: nothing under it pruned (exit 3). */
  | { readonly category: string; readonly tenant: string; readonly notPruned: { readonly _tag: "MisnamedDirectory"; readonly path: string; readonly message: string } }

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

/**
 * A removed run's size as the table shows it: its size, a lower bound (`≥`) when its walk was cut short and its
 * removal did not count it whole (`cutShort.bytesAtLeast`), or `?` when it was never measured.
 */
const removedSize = (removed: PruneReport["removed"][number], cut: PruneReport["cutShort"][number] | undefined, field: "bytes" | "apparentBytes"): string => {
  const known = removed[field]
  if (known !== null) return formatBytes(known)
  return cut === undefined ? "?" : `≥ ${formatBytes(field === "bytes" ? cut.bytesAtLeast : cut.apparentBytesAtLeast)}`
}

/** What the removals free on disk: a lower bound naming the sizes it leaves out, never a bare "≥ 0 B". */
const freed = (report: PruneReport): string => {
  const cutShort = new Map(report.cutShort.map((c) => [c.runId, c.bytesAtLeast]))
  const known = report.removed.reduce((sum, r) => sum + (r.bytes ?? cutShort.get(r.runId) ?? 0), 0)
  const bounded = report.removed.filter((r) => r.bytes === null && cutShort.has(r.runId)).length
  const unknown = report.removed.filter((r) => r.bytes === null && !cutShort.has(r.runId)).length
  if (unknown === 0) return bounded === 0 ? formatBytes(known) : `≥ ${formatBytes(known)}`
  if (unknown === report.removed.length) return unknown === 1 ? "size unknown" : "sizes unknown"
  return `≥ ${formatBytes(known)}, ${unknown} size${unknown === 1 ? "" : "s"} unknown`
}

/** Entries the prune scanned, and of how many when `maxScannedRuns` stopped it. */
const scannedOf = (r: PruneReport): string => {
  const cut = r.stoppedBy.find((s) => s._tag === "MaxScannedRuns")
  return cut === undefined ? formatCount(r.scannedRuns) : `${formatCount(r.scannedRuns)} of ${formatCount(r.scannedRuns + cut.left)}`
}

export const renderTenantReport = (paint: Paint, policy: RetentionPolicy, outcome: TenantOutcome): Shown => {
  const name = paint("bold", `${outcome.category}/${outcome.tenant}`)
  if ("error" in outcome) return txt`${name}: ${paint("red", outcome.error.message)}\n`
  if ("notPruned" in outcome) return txt`${name}: ${paint("yellow", outcome.notPruned.message)}\n`
  const r = outcome.report
  if (r.busy) {
    const holder = r.busyHolder === undefined ? "" : ` (${r.busyHolder})`
    return txt`${name}: ${paint("yellow", `busy: another prune of this tenant is running${holder}; nothing was done`)}\n`
  }
  if (r.tenantMissing === true) return txt`${name}: no such tenant (nothing to prune)\n`
  const verb = r.dryRun ? "would remove" : "removed"
  const head = txt`${name}: ${verb} ${r.removed.length} run${r.removed.length === 1 ? "" : "s"} (${freed(r)}), kept ${r.kept.length}, active ${r.active.length}, scanned ${scannedOf(r)}\n`
  const body: Array<Shown> = []
  const list = (title: Shown, items: ReadonlyArray<readonly [string, string]>) =>
    txt`${title}\n${joinShown(items.map(([what, why]) => txt`  ${what}: ${why}\n`))}`
  if (r.removed.length > 0) {
    // By run id once: a prune may remove thousands.
    const cutShort = new Map(r.cutShort.map((c) => [c.runId, c]))
    body.push(table(
      [{ header: "RUN" }, { header: "DISK", align: "right" }, { header: "APPARENT", align: "right" }, { header: "WHY" }],
      r.removed.map((x) => [
        x.runId,
        removedSize(x, cutShort.get(x.runId), "bytes"),
        removedSize(x, cutShort.get(x.runId), "apparentBytes"),
        reasonText(x.reason, policy)
      ])
    ))
  }
  if (r.skipped.length > 0) body.push(list(paint("yellow", "Skipped:"), r.skipped.map((x) => [x.runId, x.why])))
  if (r.unowned.length > 0) body.push(list(paint("yellow", "Not owned by the library (never deleted):"), r.unowned.map((x) => [x.name, x.why])))
  if (r.errors.length > 0) body.push(list(paint("red", "Errors:"), r.errors.map((x) => [x.path, x.message])))
  const size = (n: number | null) => (n === null ? "unknown" : formatBytes(n))
  body.push(txt`Disk usage ${size(r.bytesBefore)} before, ${size(r.bytesAfter)} after (apparent ${size(r.apparentBytesBefore)} before, ${size(r.apparentBytesAfter)} after).\n`)
  const stopped = stoppedLines(paint, r.stoppedBy)
  if (stopped.length > 0) body.push(txt`${joinShown(stopped, "\n")}\n`)
  return joinShown([head, ...body.map((b) => indent(b, "  "))])
}

/**
 * Nothing happened worth a line under `--quiet`: no removal, no error, not busy, not refused, and the tenant
 * exists (a tenant named on the command line that is not there is said so: a typo is not silence).
 */
const uneventful = (o: TenantOutcome): boolean =>
  "report" in o && !o.report.busy && o.report.tenantMissing !== true && o.report.removed.length === 0 && o.report.errors.length === 0 &&
  o.report.skipped.length === 0

export interface PruneTotal {
  /** Tenants pruned; those busy, refused or failed are counted in `busy`, `refused` and `errors`, not here. */
  readonly tenants: number
  readonly removed: number
  /** Disk usage freed by removals whose size is known; `lowerBound` when some were not measured. */
  readonly bytes: number
  /** The same in apparent size. */
  readonly apparentBytes: number
  readonly lowerBound: boolean
  /** Tenants whose prune stopped early (a bound in its `stoppedBy`: see each tenant's report). */
  readonly stopped: number
  readonly kept: number
  readonly active: number
  readonly errors: number
  readonly refused: number
  readonly busy: number
}

export const pruneTotal = (outcomes: ReadonlyArray<TenantOutcome>): PruneTotal => {
  const total = { tenants: 0, removed: 0, bytes: 0, apparentBytes: 0, lowerBound: false, stopped: 0, kept: 0, active: 0, errors: 0, refused: 0, busy: 0 }
  for (const o of outcomes) {
    if ("notPruned" in o) {
      total.refused++
      continue
    }
    if ("error" in o) {
      if (exitCodeForError(o.error) === ExitCode.refused) total.refused++
      else total.errors++
      continue
    }
    const r = o.report
    // A busy tenant (another pruner holds it) was not pruned: it counts as busy only.
    if (!r.busy) total.tenants++
    total.removed += r.removed.length
    for (const x of r.removed) {
      if (x.bytes === null || x.apparentBytes === null) total.lowerBound = true
      else {
        total.bytes += x.bytes
        total.apparentBytes += x.apparentBytes
      }
    }
    if (r.stoppedBy.length > 0) total.stopped++
    total.kept += r.kept.length
    total.active += r.active.length
    total.errors += r.errors.length
    if (r.busy) total.busy++
  }
  return total
}

export const renderTotal = (dryRun: boolean, t: PruneTotal): Shown => {
  const extra = [
    t.stopped > 0 ? `${t.stopped} stopped early (see above)` : "",
    t.busy > 0 ? `${t.busy} busy` : "",
    t.refused > 0 ? `${t.refused} refused` : "",
    t.errors > 0 ? `${t.errors} error${t.errors === 1 ? "" : "s"}` : ""
  ].filter((x) => x !== "")
  const runs = `${t.removed} run${t.removed === 1 ? "" : "s"}`
  const tenants = `${t.tenants} tenant${t.tenants === 1 ? "" : "s"}`
  const bound = t.lowerBound ? "≥ " : ""
  // No size known at all is said so, never "≥ 0 B".
  const sizes = t.lowerBound && t.bytes === 0 && t.apparentBytes === 0
    ? "sizes unknown"
    : `${bound}${formatBytes(t.bytes)} on disk, ${bound}${formatBytes(t.apparentBytes)} apparent`
  return txt`Total: ${dryRun ? "would remove" : "removed"} ${runs} (${sizes}) in ${tenants}; kept ${t.kept}, active ${t.active}${extra.length > 0 ? `; ${extra.join(", ")}` : ""}.\n`
}

/** The exit code a set of outcomes earns: refused (3) over failures (1) over ok. */
export const pruneExitCode = (outcomes: ReadonlyArray<TenantOutcome>): number => {
  let code: number = ExitCode.ok
  for (const o of outcomes) {
    const c = "notPruned" in o
      ? ExitCode.refused
      : "error" in o
      ? exitCodeForError(o.error)
      : o.report.busy
      ? ExitCode.refused
      : o.report.errors.length > 0
      ? ExitCode.findings
      : ExitCode.ok
    code = Math.max(code, c)
  }
  return code
}

/** A progress line on stderr, redrawn in place; only where the context allows it (a terminal, no --json). */
const progressLine = (ctx: CliContext, label: string) => {
  if (!ctx.progress) return { onProgress: undefined, clear: Effect.void }
  let drawn = false
  /** The last count drawn per phase: a line is drawn each time a hundredth of the work is crossed (removals report per batch). */
  const last = { scan: -1, remove: -1 }
  const onProgress = (p: { readonly phase: "scan" | "remove"; readonly done: number; readonly total: number }) => {
    const step = Math.max(1, Math.floor(p.total / 100))
    if (last[p.phase] >= 0 && Math.floor(p.done / step) === Math.floor(last[p.phase] / step) && p.done !== p.total) return
    last[p.phase] = p.done
    drawn = true
    writeErr(`\r\u001b[K${txt`${label}: ${p.phase === "scan" ? "scanning" : "removing"} ${p.done}/${p.total}`.text}`)
  }
  return { onProgress, clear: Effect.sync(() => { if (drawn) writeErr("\r\u001b[K") }) }
}

/** Why `--all` refused a directory, in words: WR10's detail (a link or a file is never followed). */
const refusedBecause = (r: RefusedTarget): string =>
  r.reason === "symlink" || r.reason === "not-a-directory" ? `it is ${withArticle(r.type)}, never followed` : r.detail

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
      ...(flags.maxBytes !== undefined ? { maxBytes: flags.maxBytes } : {}),
      ...(flags.maxScannedRuns !== undefined ? { maxScannedRuns: flags.maxScannedRuns } : {}),
      ...(flags.maxEntries !== undefined ? { maxEntries: flags.maxEntries } : {}),
      ...(flags.maxDepth !== undefined ? { maxDepth: flags.maxDepth } : {})
    })
    if (decoded._tag === "Left") return yield* usageError(ctx, decoded.left.message)
    const input: RetentionInput = decoded.right
    // A person asked for these limits: they are the ceiling too (they may be looser than the WR9 defaults).
    const policy = resolvePolicy(input)
    yield* withStack(ctx, (s) =>
      Effect.gen(function*() {
        const workRuns = yield* s.WorkRuns
        const outcomes: Array<TenantOutcome> = []
        let targets: ReadonlyArray<TenantTarget>
        if (target !== undefined) {
          targets = [target]
        } else {
          const found = yield* (yield* s.Inventory).pruneTargets
          const agentDir = yield* s.AgentDir
          if (found.notADirectory !== null) return yield* notADirectory(ctx, agentDir.path, found.notADirectory)
          targets = found.tenants
          // Never followed, never skipped in silence: each refused entry is an outcome (exit 3).
          for (const r of found.refused) {
            outcomes.push({
              category: r.category,
              tenant: r.tenant,
              error: { _tag: "UnsafeRoot", message: `refused ${r.what} (${r.path}): ${refusedBecause(r)}; nothing under it was pruned` }
            })
          }
          // A name the library never makes (WR2): never a prune target, never passed over in silence either.
          for (const m of found.misnamed) {
            outcomes.push({
              category: m.category,
              tenant: m.tenant,
              notPruned: {
                _tag: "MisnamedDirectory",
                path: m.path,
                message: `not pruned: ${m.what} (${m.path}) is no directory the library makes: ${m.detail}; nothing under it was touched`
              }
            })
          }
        }
        for (const t of targets) {
          const progress = progressLine(ctx, `${t.category}/${t.tenant}`)
          const result = yield* workRuns.prune({
            category: t.category,
            tenant: t.tenant,
            // The whole policy, the ceiling's own values: a person's bounds are raised by the flags, and the stop
            // lines say so (domain/StoppedBy.ts, `raisePolicy`).
            policy,
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
            else if ("report" in only) yield* printJson(only.report)
          } else {
            yield* printJson({ dryRun: flags.dryRun, tenants: outcomes, total: pruneTotal(outcomes) })
          }
        } else if (target === undefined && outcomes.length === 0) {
          yield* out(txt`No work tenants to prune.\n`)
        } else {
          const single = target !== undefined ? outcomes[0] : undefined
          if (single !== undefined && "error" in single) {
            yield* reportError(ctx, single.error)
          } else {
            const shown = flags.quiet ? outcomes.filter((o) => !uneventful(o)) : outcomes
            const blocks = shown.map((o) => renderTenantReport(ctx.paint, policy, o))
            if (target === undefined) blocks.push(renderTotal(flags.dryRun, pruneTotal(outcomes)))
            yield* out(joinShown(blocks, "\n"))
          }
        }
        ctx.status.raise(code)
      }), { retentionCeiling: policy })
  })
