/**
 * `pi-storage memory show|add|replace|remove`: the bounded USER.md profile (docs/user-profile.md "User profile (USER.md)").
 * Exit codes: 0 done (a duplicate add too), 1 `EntryNotFound`/`AmbiguousEntry` (the candidates are listed),
 * 2 usage (a bad flag or `InvalidEntry`), 3 refused (`UnsafeProfile`, `ProfileBusy`).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { DEFAULT_PROFILE_BUDGET_BYTES } from "../../domain/UserProfileText.js"
import type { ProfileChange, ProfileView, UserProfile } from "../../services/UserProfile.js"
import { type CliContext, out, printJson, reportError, usageError, withAgentDirStack } from "../context.js"
import { joinShown, type Paint, type Shown, table, txt } from "../format.js"
import { warningLine } from "../problem.js"
import { writeErr } from "../streams.js"
import { json } from "../options.js"
import { parseSize } from "../parse.js"

export const renderProfile = (paint: Paint, view: ProfileView): Shown => {
  const shards = new Set(view.entries.flatMap((e) => (e.shard === null ? [] : [e.shard]))).size
  const over = view.bytes > view.budgetBytes ? paint("yellow", " (over budget)") : ""
  const entries = `${view.entries.length} entr${view.entries.length === 1 ? "y" : "ies"}` +
    (view.sharded ? `, ${shards} archived shard${shards === 1 ? "" : "s"}` : "")
  const head = txt`USER.md: ${view.bytes} of ${view.budgetBytes} bytes${over}; ${entries}\n`
  const rows = view.entries.map((e) => [e.id, e.shard ?? paint("dim", "USER.md"), e.text])
  const problems = view.unparsable.map((u) => txt`${paint("red", "unparsable")} ${u.shard}: ${u.why}\n`)
  return txt`${head}${rows.length > 0 ? txt`\n${table([{ header: "ID" }, { header: "IN" }, { header: "ENTRY" }], rows, paint)}` : ""}${joinShown(problems)}`
}

export const renderChange = (change: ProfileChange): Shown => {
  const moved = change.archived ? "; the hot entries moved into the archive (USER.md is now the pointer)" : ""
  switch (change.outcome) {
    case "added":
      return txt`added: ${change.entry}${moved}\n`
    case "duplicate":
      return txt`already there (nothing added): ${change.entry}\n`
    case "replaced":
      return txt`replaced: ${change.matched ?? "?"}\n    with: ${change.entry}${moved}\n`
    case "unchanged":
      return txt`unchanged (same text): ${change.entry}\n`
    case "removed":
      return txt`removed: ${change.entry}\n`
  }
}

const budget = Options.text("budget").pipe(
  Options.withPseudoName("SIZE"),
  Options.mapEffect((text) => {
    const parsed = parseSize(text)
    return parsed.ok && parsed.value > 0
      ? Effect.succeed(parsed.value)
      : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--budget: ${parsed.ok ? "must be more than 0 bytes" : parsed.message}`)))
  }),
  Options.withDescription(`USER.md budget in UTF-8 bytes, pointer included (default ${DEFAULT_PROFILE_BUDGET_BYTES}, e.g. --budget 8KiB or --budget 4000).`),
  Options.optional
)

type Use<A, E> = (profile: UserProfile["Type"]) => Effect.Effect<A, E>

/**
 * Warnings (a crashed write finished, an index rebuilt) go to stderr: stdout stays the document asked for.
 * With `--json`, one JSON object each (problem.ts).
 */
const stderrLogger = (json: boolean) =>
  Logger.replace(
    Logger.defaultLogger,
    json
      ? Logger.make(({ message }) => void writeErr(warningLine(true, "Warning", Array.isArray(message) ? message.map(String).join(" ") : String(message))))
      : Logger.map(Logger.logfmtLogger, (line) => void writeErr(txt`pi-storage: ${line}\n`.text))
  )

/** Run against the profile; typed failures become their message and exit code, ambiguity lists the candidates. */
const withProfile = <A, E extends { readonly _tag: string; readonly message: string }>(
  ctx: CliContext,
  budgetBytes: Option.Option<number>,
  use: Use<A, E>,
  show: (a: A) => Effect.Effect<void>
) =>
  withAgentDirStack(ctx, (s) =>
    Effect.flatMap(s.UserProfile.make({ budgetBytes: Option.getOrUndefined(budgetBytes) }), use).pipe(
      Effect.matchEffect({
        onFailure: (e) => {
          if (e._tag !== "AmbiguousEntry" || !("candidates" in e)) return reportError(ctx, e)
          const candidates = e.candidates as ReadonlyArray<string>
          return reportError(ctx, { _tag: e._tag, message: `${candidates.length} entries match; give the exact text of one:` }, {
            fields: { candidates },
            lines: joinShown(candidates.map((c) => txt`  ${c}\n`))
          })
        },
        onSuccess: show
      }),
      Effect.provide(stderrLogger(ctx.globals.json === true))
    ))

export const memoryCommand = (ctx: CliContext) => {
  const show = Command.make("show", { json, budget }, (o) =>
    withProfile(ctx, o.budget, (p) => p.read, (view) => (o.json ? printJson(view) : out(renderProfile(ctx.paint, view))))).pipe(
      Command.withDescription("Show USER.md's entries (archived ones first, with their shard) and its size against the budget.")
    )
  const change = (c: ProfileChange, asJson: boolean) => (asJson ? printJson(c) : out(renderChange(c)))
  const add = Command.make("add", { text: Args.text({ name: "TEXT" }), json, budget }, (o) =>
    withProfile(ctx, o.budget, (p) => p.add(o.text), (c) => change(c, o.json))).pipe(
      Command.withDescription("Add one entry (one line); a duplicate is a no-op. Over the budget the hot entries move into the archive.")
    )
  const replace = Command.make("replace", { old: Args.text({ name: "OLD" }), text: Args.text({ name: "NEW" }), json, budget }, (o) =>
    withProfile(ctx, o.budget, (p) => p.replace(o.old, o.text), (c) => change(c, o.json))).pipe(
      Command.withDescription("Replace the entry that is OLD, else the only one containing OLD (several: exit 1, candidates listed).")
    )
  const remove = Command.make("remove", { old: Args.text({ name: "OLD" }), json, budget }, (o) =>
    withProfile(ctx, o.budget, (p) => p.remove(o.old), (c) => change(c, o.json))).pipe(
      Command.withDescription("Remove the entry that is OLD, else the only one containing OLD; a shard left empty goes.")
    )
  return Command.make("memory", {}, () => usageError(ctx, "memory needs a subcommand: show, add, replace or remove")).pipe(
    Command.withDescription("The bounded USER.md profile and its archive (okf-memory/user-preferences/)."),
    Command.withSubcommands([show, add, replace, remove])
  )
}
