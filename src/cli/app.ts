/**
 * The `pi-storage` command tree on `@effect/cli`, and the program `main.ts` runs. Usage errors are ours to
 * print: `@effect/cli`'s own error printing is silenced and every ValidationError becomes one clean line on
 * stderr with exit code 2.
 *
 * Adding a command: build it in its own file under `src/cli/commands/` and register it with one line in the
 * `withSubcommands` list of `commands` below. Help is ours, generated from the tree (`help.ts`): `--help` /
 * `-h` anywhere before `--` prints the page of the command named by the leading words (`pi-storage work
 * prune --help`), `pi-storage` alone the program's page. The command line is read first by the one rule of
 * argv.ts (flags anywhere before `--`, data after it, unknown flags refused with "did you mean"), against
 * the shape of this tree; `@effect/cli` then parses the values of what passed. A new command or flag gets its
 * page, its place in the program's command list and that rule for free; what the page says comes from
 * its descriptions: `Command.withDescription` (first line = the summary in lists, then e.g. `Example: …`),
 * `Options.withDescription` / `Args.withDescription` (say the default and give one example) and
 * `Options.withPseudoName` (the value's placeholder). `-v` / `--version` print the version; `@effect/cli`'s
 * built-ins (`--wizard`, `--completions`, `--log-level`) are not in the tree, so they are unknown flags.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { readCommandLine, type SplitArgv } from "./argv.js"
import { configCommand, webDataRoot } from "./commands/config.js"
import { backupCommand } from "./commands/backup.js"
import { doctor } from "./commands/doctor.js"
import { ls } from "./commands/ls.js"
import { memoryCommand } from "./commands/memory.js"
import { migrate } from "./commands/migrate.js"
import { prune } from "./commands/prune.js"
import { rm } from "./commands/rm.js"
import { run } from "./commands/run.js"
import { status } from "./commands/status.js"
import { ui } from "./commands/ui.js"
import { type CliContext, colorAllowed, complain, err, makeContext, out, usageError } from "./context.js"
import { ExitCode, type ExitStatus } from "./exit.js"
import { unexpectedFailures } from "./guard.js"
import { ownText, stripAnsi } from "./format.js"
import { findCommand, type HelpNode, helpTree, renderHelp } from "./help.js"
import { dryRun, inventoryLimits, json, parsedOption, scanBounds, value } from "./options.js"
import { parseCount, parseDuration, parsePort, parseSize } from "./parse.js"
import { isVersionRequest, VERSION, versionLine } from "./version.js"

export { VERSION }


const lines = (...text: ReadonlyArray<string>) => text.join("\n")

const commands = (ctx: CliContext) => {
  const statusCommand = Command.make("status", { json, webDataRoot, ...scanBounds }, (o) =>
    status(ctx, { json: o.json, webDataRoot: value(o.webDataRoot), limits: inventoryLimits(o) })).pipe(
    Command.withDescription(lines(
      "The agent dir, its work runs (entries and bytes per tenant), extension data and the doctor's finding count.",
      "Example: pi-storage status --json"
    ))
  )
  const lsCommand = Command.make(
    "ls",
    {
      filter: Args.text({ name: "CATEGORY[/TENANT]" }).pipe(
        Args.withDescription("Only this category or tenant (default: every tenant). Example: tools/bash"),
        Args.optional
      ),
      json,
      ...scanBounds
    },
    (o) => ls(ctx, { filter: value(o.filter), json: o.json, limits: inventoryLimits(o) })
  ).pipe(Command.withDescription(lines(
    "List work runs: id, kind, state, who holds an active one, last use, entries and size.",
    "Example: pi-storage work ls tools"
  )))
  const pruneCommand = Command.make(
    "prune",
    {
      target: Args.text({ name: "CATEGORY/TENANT" }).pipe(Args.withDescription("The tenant to prune (or --all). Example: tools/bash"), Args.optional),
      all: Options.boolean("all").pipe(Options.withDescription("Prune every tenant under the work root, then print a grand total. Default: off.")),
      dryRun,
      maxAge: parsedOption("max-age", "DURATION", parseDuration,
        "Remove inactive runs unused for longer: 30d, 12h, 1.5d, 2h30m, 0 (s m h d w). Default: 30d."),
      maxRuns: parsedOption("max-runs", "N", parseCount, "Keep at most N inactive runs per tenant. Default: 64. Example: --max-runs 10"),
      maxBytes: parsedOption("max-bytes", "SIZE", parseSize,
        "Keep each tenant under SIZE: K/KiB = 1024, kB = 1000 (also M/MiB/MB, G/GiB/GB). Default: 512MiB. Example: 2GiB"),
      maxScannedRuns: scanBounds.maxScannedRuns,
      maxEntries: scanBounds.maxEntries,
      maxDepth: scanBounds.maxDepth,
      quiet: Options.boolean("quiet").pipe(Options.withDescription("With --all: only tenants where something was removed or went wrong, and the total. Default: off.")),
      json
    },
    (o) =>
      prune(ctx, {
        all: o.all,
        target: value(o.target),
        dryRun: o.dryRun,
        maxAgeMs: value(o.maxAge),
        maxRuns: value(o.maxRuns),
        maxBytes: value(o.maxBytes),
        maxScannedRuns: value(o.maxScannedRuns),
        maxEntries: value(o.maxEntries),
        maxDepth: value(o.maxDepth),
        quiet: o.quiet,
        json: o.json
      })
  ).pipe(Command.withDescription(lines(
    "Remove inactive work runs past their retention (never active or unowned ones).",
    "Example: pi-storage work prune tools/bash --max-age 7d --dry-run"
  )))
  const runCommand = Command.make(
    "run",
    {
      target: Args.text({ name: "CATEGORY/TENANT" }).pipe(Args.withDescription("The tenant the run belongs to. Example: tools/bash")),
      name: Options.text("name").pipe(
        Options.withPseudoName("RUN"),
        Options.withDescription("Join or create the named run RUN (default: a fresh generated run). Example: --name nightly"),
        Options.optional
      ),
      cwd: Options.text("cwd").pipe(
        Options.withPseudoName("DIR"),
        Options.withDescription("The command's working directory (default: the run directory). Example: --cwd ."),
        Options.optional
      ),
      delete: Options.boolean("delete").pipe(Options.withDescription("Delete the run when the command exits (unless another holder is live). Default: off."))
    },
    (o) => run(ctx, { target: o.target, name: value(o.name), cwd: value(o.cwd), delete: o.delete })
  ).pipe(Command.withDescription(lines(
    "Run a command inside a leased work run: the run directory is its working directory, PI_WORK_* describe the run.",
    "The command goes after '--'.",
    "Example: pi-storage work run tools/bash --delete -- make report"
  )))
  const rmCommand = Command.make(
    "rm",
    {
      target: Args.text({ name: "CATEGORY/TENANT" }).pipe(Args.withDescription("The tenant of the runs. Example: tools/bash")),
      runs: Args.text({ name: "RUN" }).pipe(Args.withDescription("Run ids to delete (see work ls). Example: 20261130t125426123z-00000007-1a2b3c4d"), Args.atLeast(1)),
      json
    },
    (o) => rm(ctx, { target: o.target, runs: o.runs, json: o.json })
  ).pipe(Command.withDescription(lines(
    "Delete chosen runs under the cleanup protocol; a run with a live lease is refused (exit 3, naming the holder).",
    "Example: pi-storage work rm tools/bash 20261130t125426123z-00000007-1a2b3c4d"
  )))
  const work = Command.make("work", {}, () => usageError(ctx, "work needs a subcommand: ls, prune, run or rm (see pi-storage work --help)")).pipe(
    Command.withDescription("Leased transient work runs."),
    Command.withSubcommands([lsCommand, pruneCommand, runCommand, rmCommand])
  )
  const doctorCommand = Command.make(
    "doctor",
    {
      webDataRoot,
      json,
      maxScanEntries: scanBounds.maxScanEntries
    },
    (o) => doctor(ctx, { webDataRoot: value(o.webDataRoot), json: o.json, maxScanEntries: value(o.maxScanEntries) })
  ).pipe(Command.withDescription(lines(
    "Read-only check of the agent dir; exit 1 when something is a warning or worse.",
    "Example: pi-storage doctor --json"
  )))
  const migrateCommand = Command.make(
    "migrate",
    {
      plan: Options.text("plan").pipe(
        Options.withPseudoName("FILE"),
        Options.withDescription("Run the per-entry plan in FILE (YAML or JSON, docs/migrations.md \"Migrations\") instead of the layout migration (default: none). Example: --plan migrate-state-tier.yaml"),
        Options.optional
      ),
      webDataRoot,
      dryRun,
      json
    },
    (o) => migrate(ctx, { dryRun: o.dryRun, json: o.json, plan: value(o.plan), webDataRoot: value(o.webDataRoot) })
  ).pipe(
    Command.withDescription(lines(
      "Move legacy entries of the agent dir to their canonical places, or run a per-entry migration plan (--plan).",
      "Example: pi-storage migrate --plan migrate-state-tier.yaml --dry-run"
    ))
  )
  const uiCommand = Command.make(
    "ui",
    {
      port: parsedOption("port", "N", parsePort, "Listen on 127.0.0.1 port N (default: 0, any free port). Example: --port 8377"),
      open: Options.boolean("open").pipe(Options.withDescription("Open the dashboard in the desktop's browser (default: off).")),
      readOnly: Options.boolean("read-only").pipe(Options.withDescription("Show everything, offer no action: every POST is refused (default: off).")),
      webDataRoot,
      root: Options.text("root").pipe(
        Options.withPseudoName("DIR"),
        Options.withDescription("The state backup root (default: $PI_STATE_BACKUP_DIR, else beside the agent dir). Example: --root /mnt/usb/pi-state"),
        Options.optional
      )
    },
    (o) => ui(ctx, { port: value(o.port) ?? 0, open: o.open, readOnly: o.readOnly, webDataRoot: value(o.webDataRoot), backupRoot: value(o.root) })
  ).pipe(Command.withDescription(lines(
    "A local dashboard: where the bytes are, growth, work runs and the prune plan, snapshots and config history, doctor.",
    "Serves 127.0.0.1 only and prints a URL with a one-time token; Ctrl-C stops it.",
    "Example: pi-storage ui --open"
  )))
  // Shown in help only: these two are taken out of argv before parsing, wherever they appear.
  const globals = {
    agentDir: Options.text("agent-dir").pipe(
      Options.withPseudoName("DIR"),
      Options.withDescription("The agent dir (default: $PI_ADAPTATIVE_CODING_AGENT_DIR, else ~/.pi/agent)."),
      Options.optional
    ),
    noColor: Options.boolean("no-color").pipe(Options.withDescription("No colour (also NO_COLOR=1; colour is only used on a TTY)."))
  }
  // Bare `pi-storage`: the program's page on stderr, exit 2 (a usage error, not a request for help).
  return Command.make("pi-storage", globals, () => Effect.zipRight(err(ownText(helpText(ctx, []))), Effect.sync(() => ctx.status.raise(ExitCode.usage)))).pipe(
    Command.withDescription("See and manage what the coding agent keeps under its agent dir."),
    Command.withSubcommands([statusCommand, work, doctorCommand, migrateCommand, backupCommand(ctx), configCommand(ctx), memoryCommand(ctx), uiCommand])
  )
}

/** The help tree of the whole program (descriptions only: building it runs nothing). */
const programTree = (ctx: CliContext): HelpNode => treeOf(commands(ctx))

const treeOf = (program: ReturnType<typeof commands>): HelpNode => {
  const tree = helpTree(program as unknown as { readonly descriptor?: unknown })
  if (tree === undefined) throw new Error("pi-storage: the command tree has no descriptor")
  return tree
}

/** The shape of the whole command tree, for `readCommandLine` (a test reads every verb and flag from it). */
export const programShape = (ctx: CliContext): HelpNode => programTree(ctx)

/** The page of the command `path` names; the root's own flags are the global flags of every page. */
export const helpText = (ctx: CliContext, path: ReadonlyArray<string>): string => helpPage(programTree(ctx), path)

const helpPage = (root: HelpNode, args: ReadonlyArray<string>): string => {
  const { node, path } = findCommand(root, args)
  const globalFlags = [
    ...root.flags.map((f) => [f.names.join(", ") + (f.placeholder === undefined ? "" : ` ${f.placeholder}`), f.description] as const),
    ["-h, --help", "This help."] as const,
    ...(path.length === 0 ? [["-v, --version", "Print the version."] as const] : [])
  ]
  return renderHelp({ program: "pi-storage", globalFlags }, path.length === 0 ? { ...node, flags: [] } : node, path)
}

/** `@effect/cli` needs the platform FileSystem, Path and Terminal; subpath imports keep start-up quick. */
const cliEnvironment = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)

/** One line from a ValidationError (a value our parsers refused): its text without ANSI codes, whitespace collapsed. */
export const validationMessage = (error: ValidationError.ValidationError): string => {
  const doc = "error" in error ? error.error : HelpDoc.empty
  return stripAnsi(HelpDoc.toAnsiText(doc)).replace(/\s+/g, " ").trim() || error._tag
}

/**
 * The whole program for one invocation (argv already split by `splitArgv`): read the command line by the
 * one rule (argv.ts), then parse its values, dispatch and record the exit status.
 */
export const main = (split: SplitArgv, exitStatus: ExitStatus): Effect.Effect<void> => {
  const { globals, args, afterDashes } = split
  const ctx = makeContext(globals, exitStatus, afterDashes)
  if (afterDashes === undefined && isVersionRequest(args)) return out(ownText(versionLine))
  const program = commands(ctx)
  const tree = treeOf(program)
  const line = readCommandLine(split, tree)
  if (!line.ok) return usageError(ctx, line.message)
  if (line.value.help) return out(ownText(helpPage(tree, line.value.path)))
  if (line.value.version) return out(ownText(versionLine))
  const see = `(see ${["pi-storage", ...line.value.path].join(" ")} --help)`
  const color = colorAllowed(globals)
  const cli = Command.run(program, { name: "pi-storage", version: VERSION })
  // Silence @effect/cli's own error printing; strip ANSI from help unless colour is allowed.
  const withQuietConsole = Effect.consoleWith((console) =>
    Effect.withConsole(
      cli(["node", "pi-storage", ...line.value.argv]),
      new Proxy(console, {
        get: (target, key, receiver) => {
          if (key === "error") return () => Effect.void
          if (key === "log" && !color) {
            return (...items: ReadonlyArray<unknown>) => target.log(...items.map((i) => (typeof i === "string" ? stripAnsi(i) : i)))
          }
          return Reflect.get(target, key, receiver)
        }
      })
    )
  )
  return withQuietConsole.pipe(
    Effect.catchAll((error) =>
      ValidationError.isValidationError(error)
        ? usageError(ctx, `${validationMessage(error)} ${see}`)
        : complain(ctx, String(error), ExitCode.findings, { tag: "UnexpectedFailure" })
    ),
    unexpectedFailures(ctx),
    Effect.provide(cliEnvironment),
    Effect.orDie
  )
}
