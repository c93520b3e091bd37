/**
 * `pi-storage work rm CATEGORY/TENANT RUN...`: delete chosen runs now, under the cleanup protocol
 * (`WorkRuns.removeRuns`). A run with a live lease is never deleted: exit 3, naming the holder. A run that is
 * not there, cannot be examined (`Unreadable`, with the file system's reason) or not the library's is reported (exit 1); the rest are deleted.
 */
import * as Effect from "effect/Effect"
import type { RemoveRunOutcome } from "../../services/WorkRuns.js"
import { type CliContext, out, printJson, reportError, usageError, withStack } from "../context.js"
import { ExitCode } from "../exit.js"
import { joinShown, type Paint, type Shown, txt } from "../format.js"
import { parseRunName, parseTenantTarget } from "../parse.js"

export const renderRemoval = (paint: Paint, tenant: string, outcomes: ReadonlyArray<RemoveRunOutcome>): Shown =>
  joinShown(outcomes.map((o) => {
    const name = `${tenant}/${o.runId}`
    switch (o._tag) {
      case "Removed":
        return txt`removed  ${name}\n`
      case "Held":
        return txt`${paint("yellow", "kept")}     ${name}: ${o.why} (a live lease; never deleted)\n`
      case "Missing":
        return txt`${paint("yellow", "missing")}  ${name}: no such run\n`
      case "Unreadable":
        return txt`${paint("yellow", "kept")}     ${name}: ${o.why} (${o.reason}; left alone, it may be there)\n`
      case "Unowned":
        return txt`${paint("yellow", "kept")}     ${name}: not owned by the library (${o.why})\n`
      case "Skipped":
        return txt`${paint("yellow", "kept")}     ${name}: ${o.why}\n`
    }
  }))

/** Held runs are refusals (3); missing, unowned or skipped ones failures (1). */
export const rmExitCode = (outcomes: ReadonlyArray<RemoveRunOutcome>): number =>
  outcomes.some((o) => o._tag === "Held") ? ExitCode.refused : outcomes.some((o) => o._tag !== "Removed") ? ExitCode.findings : ExitCode.ok

export const rm = (ctx: CliContext, options: { readonly target: string; readonly runs: ReadonlyArray<string>; readonly json: boolean }) =>
  Effect.gen(function*() {
    const target = parseTenantTarget(options.target)
    if (!target.ok) return yield* usageError(ctx, target.message)
    for (const run of options.runs) {
      const parsed = parseRunName(run)
      if (!parsed.ok) return yield* usageError(ctx, parsed.message.replace("run name", "run id"))
    }
    const { category, tenant } = target.value
    yield* withStack(ctx, (s) =>
      Effect.gen(function*() {
        const outcomes = yield* (yield* s.WorkRuns).removeRuns({ category, tenant, runIds: options.runs })
        yield* options.json ? printJson({ category, tenant, runs: outcomes }) : out(renderRemoval(ctx.paint, `${category}/${tenant}`, outcomes))
        ctx.status.raise(rmExitCode(outcomes))
      }).pipe(Effect.catchAll((e) => reportError(ctx, e))))
  })
