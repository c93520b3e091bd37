/**
 * `pi-storage backup create | list | verify | forget | restore`: state snapshots (docs/snapshots.md "State snapshots") as a thin edge
 * over the `StateBackups` service. Exit 1 when verify finds damage; typed refusals keep their exit codes.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { CreateResult, ForgetResult, RestoreResult, SnapshotSummary, StateBackups, VerifyResult } from "../../services/StateBackups.js"
import { type CliContext, err, out, printJson, reportError, usageError, withAgentDirStack } from "../context.js"
import { ExitCode } from "../exit.js"
import { countOf, formatBytes, joinShown, type Shown, table, txt } from "../format.js"
import { writeErr } from "../streams.js"
import { dryRun, json, parsedOption, value } from "../options.js"
import { parseCount, parsePositiveCount, parsePositiveSize } from "../parse.js"
import { webDataRoot } from "./config.js"
import { isMissingProblem } from "../../domain/ReportProblems.js"

// ---------------------------------------------------------------------------------------------- rendering

export const renderCreate = (root: string, r: CreateResult): Shown => {
  const linked = `${r.linkedFiles} hard-linked to the previous snapshot` + (r.linkFallbacks > 0 ? `, ${r.linkFallbacks} copied because link() failed` : "")
  const lines = [
    txt`Created snapshot ${r.id} in ${root}\n`,
    txt`  ${countOf(r.files, "file")} (${formatBytes(r.bytes)}): ${r.copiedFiles} copied (${formatBytes(r.copiedBytes)}), ${linked}\n`,
    renderCovered(r.scope)
  ]
  for (const s of r.skipped) lines.push(txt`  skipped ${s.path}: ${s.reason}\n`)
  for (const p of r.changedDuringBackup) lines.push(txt`  changed while copied (twice): ${p}\n`)
  for (const p of r.sqliteLive) lines.push(txt`  live SQLite database, copied with its -wal/-shm as a group (may be inconsistent): ${p}\n`)
  for (const p of r.removedLeftovers) lines.push(txt`  removed a dead writer's incomplete snapshot ${p}\n`)
  return joinShown(lines)
}

/** Which roots a snapshot covered: the agent dir, and the web data root with the extensions found there. */
export const renderCovered = (scope: CreateResult["scope"]): Shown => {
  const extensions = scope.roots.flatMap((r) => (r.startsWith("web/") ? [r.split("/")[1]!] : []))
  const found = extensions.length === 0 ? "no extension there" : `${countOf(extensions.length, "extension")}: ${extensions.join(", ")}`
  return txt`  covered: the agent dir ${scope.agentDir}; the web data root ${scope.webDataRoot} (${found})\n`
}

export const renderList = (root: string, snapshots: ReadonlyArray<SnapshotSummary>): Shown => {
  if (snapshots.length === 0) return txt`No snapshots in ${root}.\n`
  return txt`Snapshots in ${root} (newest first):\n\n${table(
    [
      { header: "ID" },
      { header: "FILES", align: "right" },
      { header: "DISK", align: "right" },
      { header: "APPARENT", align: "right" },
      { header: "UNIQUE", align: "right" },
      { header: "LABEL" }
    ],
    snapshots.map((s) => [s.id, s.files, formatBytes(s.bytes), formatBytes(s.apparentBytes), formatBytes(s.uniqueBytes), s.label ?? ""])
  )}`
}

const entries = (n: number) => countOf(n, "entry", "entries")

export const renderVerify = (r: VerifyResult): Shown => {
  const head = txt`Checked ${entries(r.checked)} (${formatBytes(r.checkedBytes)} re-hashed)${r.complete ? "" : "; a slice: the next run goes on from here"}`
  if (r.ok) return txt`${head}: OK.\n`
  // Corrupt first, then missing, each with why (the problem's message names the path).
  const lines = [
    ...r.problems.filter((p) => !isMissingProblem(p)).map((p) => txt`  corrupt  ${p.message}\n`),
    ...r.problems.filter(isMissingProblem).map((p) => txt`  missing  ${p.message}\n`)
  ]
  return txt`${head}: DAMAGED.\n${joinShown(lines)}`
}

export const renderForget = (r: ForgetResult): Shown =>
  joinShown([
    ...r.kept.map((k) => txt`keep    ${k.id}  (${k.reasons.join(", ")})\n`),
    ...r.removed.map((id) => txt`${r.dryRun ? "would remove" : "removed"} ${id}\n`),
    ...(r.removed.length === 0 ? [txt`Nothing to remove.\n`] : [])
  ])

export const renderRestore = (r: RestoreResult): Shown => {
  const verb = r.dryRun ? "Would restore" : "Restored"
  const aside = r.dryRun
    ? r.movedAsidePaths.map((p) => txt`  would move aside ${p}\n`)
    : r.asideDirs.length === 0 ? [] : [txt`Moved the live data it replaced to ${joinShown(r.asideDirs.map((d) => txt`${d}`), " and ")}\n`]
  const notRestored = r.notRestored.map((n) => txt`Not restored ${n.path}: ${n.why}\n`)
  return joinShown([...aside, ...notRestored, txt`${verb} ${entries(r.restored.length)}:\n`, ...r.restored.map((p) => txt`  ${p}\n`)])
}

// ---------------------------------------------------------------------------------------------- flags

const flags = {
  root: Options.text("root").pipe(
    Options.withPseudoName("DIR"),
    Options.withDescription(
      "The backup root (default: $PI_STATE_BACKUP_DIR, else <parent of agent dir>/backups/<agent dir name>, " +
        "i.e. ~/.pi/backups/agent; e.g. --root /mnt/usb/pi-state)."
    ),
    Options.optional
  ),
  webDataRoot,
  json,
  dryRun
}


/** The `--root` and `--web-data-root` a backup verb was given. */
interface Roots {
  readonly root: Option.Option<string>
  readonly webDataRoot: Option.Option<string>
}

/** Run `use` with a StateBackups service for `--root` and `--web-data-root`; typed failures become one line and their exit code. */
const withBackups = <A>(
  ctx: CliContext,
  roots: Roots,
  use: (b: StateBackups["Type"]) => Effect.Effect<A, { readonly _tag: string; readonly message: string }>
) =>
  withAgentDirStack(ctx, () =>
    Effect.flatMap(Effect.promise(() => import("../../services/StateBackups.js")), (m) =>
      Effect.flatMap(m.StateBackups.make({ root: value(roots.root), webDataRoot: value(roots.webDataRoot) }), use)).pipe(
        Effect.catchAll((e) => reportError(ctx, e))
      ))

/** Progress where the context allows it (a terminal, no --json): one rewritten line on stderr, every 250 files. */
const progress = (ctx: CliContext) => {
  if (!ctx.progress) return { onProgress: undefined, done: Effect.void }
  return {
    onProgress: (p: { files: number; bytes: number }) => {
      if (p.files % 250 === 0) writeErr(`\r  ${p.files} files, ${formatBytes(p.bytes)} …`)
    },
    done: Effect.sync(() => writeErr("\r\u001b[K"))
  }
}

export const backupCommand = (ctx: CliContext) => {
  const create = Command.make(
    "create",
    {
      label: Options.text("label").pipe(Options.withPseudoName("LABEL"), Options.withDescription("A note stored in the manifest (default: none; e.g. --label before-upgrade)."), Options.optional),
      root: flags.root,
      webDataRoot: flags.webDataRoot,
      json: flags.json
    },
    (o) =>
      withBackups(ctx, o, (b) =>
        Effect.gen(function*() {
          const p = progress(ctx)
          const label = value(o.label)
          const r = yield* b.create({ ...(label !== undefined ? { label } : {}), ...(p.onProgress !== undefined ? { onProgress: p.onProgress } : {}) }).pipe(
            Effect.ensuring(p.done)
          )
          yield* o.json ? printJson(r) : out(renderCreate(b.root, r))
        }))
  ).pipe(Command.withDescription("Snapshot the agent's state and memory (unchanged files hard-linked to the previous snapshot)."))

  const list = Command.make("list", { root: flags.root, webDataRoot: flags.webDataRoot, json: flags.json }, (o) =>
    withBackups(ctx, o, (b) => Effect.flatMap(b.list(), (r) => (o.json ? printJson(r) : out(renderList(b.root, r)))))).pipe(
      Command.withDescription("Complete snapshots, newest first, with files, size and the bytes unique to each.")
    )

  const verify = Command.make(
    "verify",
    {
      id: Args.text({ name: "ID" }).pipe(Args.optional),
      maxBytes: parsedOption("max-bytes", "SIZE", parsePositiveSize, "Re-hash at most about this much, then stop; the next run goes on from there (default: everything; e.g. --max-bytes 1GiB)."),
      sample: parsedOption("sample", "N", parsePositiveCount, "Check at most N entries, then stop; the next run goes on from there (default: all; e.g. --sample 500)."),
      root: flags.root,
      webDataRoot: flags.webDataRoot,
      json: flags.json
    },
    (o) =>
      withBackups(ctx, o, (b) =>
        Effect.gen(function*() {
          const maxBytes = value(o.maxBytes)
          const sample = value(o.sample)
          const r = yield* b.verify(value(o.id), { ...(maxBytes !== undefined ? { maxBytes } : {}), ...(sample !== undefined ? { sample } : {}) })
          yield* o.json ? printJson(r) : out(renderVerify(r))
          if (!r.ok) ctx.status.raise(ExitCode.findings)
        }))
  ).pipe(Command.withDescription("Re-hash snapshot files against their manifests (all snapshots, or ID); exit 1 on damage."))

  const keep = (name: string, what: string, example: number) =>
    parsedOption(name, "N", parseCount, `Keep ${what} (default: not used; e.g. --${name} ${example}).`)
  const forget = Command.make(
    "forget",
    {
      keepLast: keep("keep-last", "the N newest snapshots", 3),
      keepDaily: keep("keep-daily", "the newest snapshot of each of the N newest days that have one (local time)", 7),
      keepWeekly: keep("keep-weekly", "the newest snapshot of each of the N newest ISO weeks that have one", 4),
      dryRun: flags.dryRun,
      root: flags.root,
      webDataRoot: flags.webDataRoot,
      json: flags.json
    },
    (o) => {
      const policy = { keepLast: value(o.keepLast), keepDaily: value(o.keepDaily), keepWeekly: value(o.keepWeekly) }
      if (Object.values(policy).every((n) => n === undefined || n === 0)) {
        return usageError(ctx, "forget needs --keep-last, --keep-daily or --keep-weekly above 0 (see pi-storage backup forget --help)")
      }
      return withBackups(ctx, o, (b) =>
        Effect.flatMap(b.forget({ ...policy, dryRun: o.dryRun }), (r) => (o.json ? printJson(r) : out(renderForget(r)))))
    }
  ).pipe(Command.withDescription("Remove snapshots no rule keeps (restic's rules: newest per bucket, rules OR'd; the newest is always kept)."))

  const restore = Command.make(
    "restore",
    {
      id: Args.text({ name: "ID" }),
      extension: Options.text("extension").pipe(
        Options.withPseudoName("NS"),
        Options.withDescription("Restore only this extension's state: state/extensions/NS/ and data/NS/state/ (default: everything; e.g. --extension todo)."),
        Options.optional
      ),
      dryRun: flags.dryRun,
      root: flags.root,
      webDataRoot: flags.webDataRoot,
      json: flags.json
    },
    (o) =>
      withBackups(ctx, o, (b) => {
        const extension = value(o.extension)
        return Effect.flatMap(
          b.restore(o.id, { ...(extension !== undefined ? { extension } : {}), dryRun: o.dryRun }),
          (r) => (o.json ? printJson(r) : out(renderRestore(r)))
        )
      })
  ).pipe(Command.withDescription("Move the live data aside (state/restore-aside/<time>/), then copy the snapshot back."))

  return Command.make("backup", {}, () => usageError(ctx, "backup needs a subcommand: create, list, verify, forget or restore")).pipe(
    Command.withDescription("State snapshots: hard-link increments, verify, retention, restore."),
    Command.withSubcommands([create, list, verify, forget, restore])
  )
}
