/**
 * `pi-storage config status | snapshot [-m MSG] | log [--limit N] | diff [REV [REV]] | rollback REV`: the
 * config history (BK1). Human output by default, `--json` on each, a coloured diff on a TTY. The service is
 * loaded lazily, so `--help` never pays for it.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type {
  ConfigHistoryOptions,
  DiffResult,
  HistoryStatus,
  LogEntry,
  RollbackResult
} from "../../services/ConfigHistory.js"
import { type CliContext, out, printJson, usageError } from "../context.js"
import { configSnapshot, short, withHistory } from "./configHistory.js"
import { ExitCode } from "../exit.js"
import { countOf, joinShown, type Paint, type Shown, table, txt } from "../format.js"
import { json, parsedOption, value } from "../options.js"
import { agentDirFlag, webDataRootFlag } from "../../domain/FixCommands.js"
import { parsePositiveCount } from "../parse.js"

export { renderSnapshot } from "./configHistory.js"

/**
 * `config status` in words. An interrupted change's suggested commands name the agent dir and the change's web
 * data root, so they work on its files from any directory and environment (domain/FixCommands.ts).
 */
export const renderStatus = (paint: Paint, dir: string, s: HistoryStatus, agentDir: string): Shown => {
  const lines = [
    txt`Config history: ${dir}\n`,
    txt`Head:           ${short(s.head)}\n`,
    txt`Live files:     ${s.dirty ? paint("yellow", "changed since the head (pi-storage config diff)") : "as in the head"}\n`
  ]
  if (s.interrupted !== null) {
    const i = s.interrupted
    const cmd = `pi-storage ${agentDirFlag(agentDir)}${i.webRoot === undefined ? "" : ` ${webDataRootFlag(i.webRoot)}`} config`
    lines.push(
      txt`${paint("red", txt`Interrupted change: "${i.message}" (started ${new Date(i.startedAt).toISOString()})`)}\n`,
      i.blocked === true
        ? txt`  A directory stands where the sentinel belongs: move it away by hand; config snapshot and rollback are refused until then.\n`
        : i.unknown === true
        ? txt`  Its sentinel cannot be read: what it changed and the last good revision are unknown. Look at \`${cmd} log\` and the files, then keep them with \`${cmd} snapshot\` (or roll back to a revision the log shows).\n`
        : i.lastGoodRevision === null
        ? txt`  The history was empty before it; check the files, then \`${cmd} snapshot\`.\n`
        : txt`  Undo it with \`${cmd} rollback ${short(i.lastGoodRevision)}\`, or keep the files with \`${cmd} snapshot\`.\n`
    )
  }
  return joinShown(lines)
}

export const renderLog = (paint: Paint, entries: ReadonlyArray<LogEntry>): Shown =>
  entries.length === 0
    ? txt`No revisions yet (pi-storage config snapshot makes the first).\n`
    : table(
      [{ header: "REVISION" }, { header: "DATE" }, { header: "FILES", align: "right" }, { header: "MESSAGE" }],
      entries.map((e) => [short(e.revision), e.date.replace("T", " ").replace(/\.\d+Z$/, "Z"), e.changed.length, e.message]),
      paint
    )

/**
 * Colour a unified diff line by line (only when `paint` paints: on a TTY). The diff's lines are the files'
 * own: each is escaped (a control character in a settings file shows as `\x1b`, a tab as `\t`).
 */
export const renderPatch = (paint: Paint, d: DiffResult): Shown => {
  if (d.files.length === 0) return txt`No differences.\n`
  const body = d.patch.endsWith("\n") ? d.patch.slice(0, -1) : d.patch
  return joinShown(body.split("\n").map((line) =>
    txt`${
      /^(diff --git|index |--- |\+\+\+ |new file|deleted file)/.test(line) ? paint("bold", line)
      : line.startsWith("@@") ? paint("cyan", line)
      : line.startsWith("+") ? paint("green", line)
      : line.startsWith("-") ? paint("red", line)
      : line
    }\n`
  ))
}

export const renderRollback = (paint: Paint, target: string, r: RollbackResult): Shown =>
  joinShown([
    txt`Rolled back to ${paint("bold", short(target))}${r.revision === null ? "" : ` as ${short(r.revision)}`}: ${countOf(r.restored.length, "file")} restored, ${r.removed.length} removed\n`,
    ...r.restored.map((p) => txt`  restored  ${p}\n`),
    ...r.removed.map((p) => txt`  removed   ${p}\n`),
    ...r.unresolvedSecrets.map((s) => txt`  ${paint("yellow", "left out")}  ${s.path}#${s.pointer} (a redacted secret with no live value)\n`),
    ...r.skipped.map((s) => txt`  ${paint("yellow", "skipped")}   ${s.path}: ${s.reason}\n`)
  ])

/**
 * `--web-data-root DIR`: every verb that reads or writes extension data takes it (config, backup, doctor,
 * status). Without it the service resolves the root (TD1: `$PI_WEB_DATA_DIR`, else `~/.pi/web/data`).
 */
export const webDataRoot = Options.text("web-data-root").pipe(
  Options.withPseudoName("DIR"),
  Options.withDescription(
    "The web host's extension data root, data/<extId>/{config,state,cache} (default: $PI_WEB_DATA_DIR, else ~/.pi/web/data; " +
      "e.g. --web-data-root ~/.pi/web-dev/data for a dev instance)."
  ),
  Options.optional
)
const historyOptions = (o: { readonly webDataRoot: Option.Option<string> }): ConfigHistoryOptions =>
  Option.match(o.webDataRoot, { onNone: () => ({}), onSome: (root) => ({ webDataRoot: root }) })

export const configCommand = (ctx: CliContext) => {
  const status = Command.make("status", { json, webDataRoot }, (o) =>
    withHistory(ctx, historyOptions(o), (h, agentDir) =>
      Effect.gen(function*() {
        const s = yield* h.status()
        yield* o.json ? printJson(s) : out(renderStatus(ctx.paint, h.dir, s, agentDir))
        if (s.interrupted !== null) ctx.status.raise(ExitCode.findings)
      }))).pipe(Command.withDescription("The newest revision, whether live files changed since, and an interrupted change (exit 1)."))
  const snapshot = Command.make("snapshot", {
    message: Options.text("message").pipe(
      Options.withAlias("m"),
      Options.withPseudoName("MSG"),
      Options.withDescription('The revision\'s message (default: "snapshot"; e.g. -m "switch to the fast model").'),
      Options.withDefault("snapshot")
    ),
    json,
    webDataRoot
  }, (o) => configSnapshot(ctx, { message: o.message, json: o.json, webDataRoot: Option.getOrUndefined(o.webDataRoot) })).pipe(
      Command.withDescription("Record the live config files as a new revision (nothing when unchanged); lists what is never committed.")
    )
  const log = Command.make("log", {
    limit: parsedOption("limit", "N", parsePositiveCount, "Show at most N revisions, newest first (default: 20; e.g. --limit 5)."),
    json,
    webDataRoot
  }, (o) =>
    withHistory(ctx, historyOptions(o), (h) =>
      Effect.flatMap(h.log({ limit: value(o.limit) ?? 20 }), (entries) => o.json ? printJson(entries) : out(renderLog(ctx.paint, entries))))).pipe(
      Command.withDescription("Revisions, newest first: id, date, files changed, message.")
    )
  const diff = Command.make("diff", {
    revisions: Args.text({ name: "REV" }).pipe(Args.between(0, 2)),
    json,
    webDataRoot
  }, (o) =>
    withHistory(ctx, historyOptions(o), (h) => {
      const [from, to] = o.revisions
      return Effect.flatMap(h.diff({ from, to }), (d) => o.json ? printJson(d) : out(renderPatch(ctx.paint, d)))
    })).pipe(
      Command.withDescription("Differences: none given = newest revision → live files; REV = REV → live; REV REV = between the two.")
    )
  const rollback = Command.make("rollback", { revision: Args.text({ name: "REV" }), json, webDataRoot }, (o) =>
    withHistory(ctx, historyOptions(o), (h) =>
      Effect.flatMap(h.rollback(o.revision), (r) => o.json ? printJson(r) : out(renderRollback(ctx.paint, o.revision, r))))).pipe(
      Command.withDescription("Put the files of REV back in place as a new revision (live edits are saved first; live secrets are kept).")
    )
  return Command.make("config", {}, () => usageError(ctx, "config needs a subcommand: status, snapshot, log, diff or rollback")).pipe(
    Command.withDescription("Config history in git: status, snapshot, log, diff, rollback."),
    Command.withSubcommands([status, snapshot, log, diff, rollback])
  )
}
