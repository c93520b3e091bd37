/**
 * The `pi-storage` command tree on `@effect/cli`, and the program `main.ts` runs. Usage errors are ours to
 * print: `@effect/cli`'s own error printing is silenced and every ValidationError becomes one clean line on
 * stderr with exit code 2. Help goes through, without ANSI codes unless colour is allowed.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { SplitArgv } from "./argv.js"
import { backupCommand } from "./commands/backup.js"
import { doctor } from "./commands/doctor.js"
import { ls } from "./commands/ls.js"
import { migrate } from "./commands/migrate.js"
import { prune } from "./commands/prune.js"
import { run } from "./commands/run.js"
import { status } from "./commands/status.js"
import { type CliContext, colorAllowed, complain, err, makeContext, usageError } from "./context.js"
import { ExitCode, type ExitStatus } from "./exit.js"
import { stripAnsi } from "./format.js"
import { parseCount, parseDuration, type Parsed, parseSize } from "./parse.js"

export const VERSION = "0.1.0"

export const USAGE = `usage: pi-storage [--agent-dir DIR] [--no-color] <command>

  status [--json]                               what the agent keeps, per tenant and extension
  work ls [CATEGORY[/TENANT]] [--json]          runs with kind, state, last use and size
  work prune (--all | CATEGORY/TENANT) [--dry-run] [--max-age 30d] [--max-runs N] [--max-bytes 512MiB] [--json]
  work run CATEGORY/TENANT [--name RUN] [--delete] -- CMD [ARGS...]
  doctor [--json]                               read-only check of the agent dir
  migrate [--dry-run] [--json]                  move legacy entries to their canonical places
  backup create | list | verify [ID] [--max-bytes N] [--sample N] | forget --keep-last N --keep-daily N --keep-weekly N [--dry-run]
         | restore ID [--extension NS] [--dry-run]   [--root DIR] [--json]   state snapshots

Run 'pi-storage <command> --help' for details.
`

/** A flag whose value goes through one of our parsers; a bad value names the flag and the value. */
const parsedOption = <A>(name: string, parse: (text: string) => Parsed<A>, description: string) =>
  Options.text(name).pipe(
    Options.mapEffect((text) => {
      const parsed = parse(text)
      return parsed.ok ? Effect.succeed(parsed.value) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: ${parsed.message}`)))
    }),
    Options.withDescription(description),
    Options.optional
  )

const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON document instead of tables."))
const dryRun = Options.boolean("dry-run").pipe(Options.withDescription("Show what would happen; change nothing."))
const value = <A>(o: Option.Option<A>): A | undefined => Option.getOrUndefined(o)

const commands = (ctx: CliContext) => {
  const statusCommand = Command.make("status", { json }, (o) => status(ctx, o)).pipe(
    Command.withDescription("The agent dir, its work runs and extension data, and the doctor's finding count.")
  )
  const lsCommand = Command.make(
    "ls",
    { filter: Args.text({ name: "CATEGORY[/TENANT]" }).pipe(Args.optional), json },
    (o) => ls(ctx, { filter: value(o.filter), json: o.json })
  ).pipe(Command.withDescription("List work runs: id, kind, state, last use, size."))
  const pruneCommand = Command.make(
    "prune",
    {
      target: Args.text({ name: "CATEGORY/TENANT" }).pipe(Args.optional),
      all: Options.boolean("all").pipe(Options.withDescription("Prune every tenant under the work root.")),
      dryRun,
      maxAge: parsedOption("max-age", parseDuration, "Remove inactive runs unused for longer than this (30d, 12h, 90m)."),
      maxRuns: parsedOption("max-runs", parseCount, "Keep at most this many inactive runs per tenant."),
      maxBytes: parsedOption("max-bytes", parseSize, "Keep each tenant under this size (512MiB, 2GiB, 1000)."),
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
        json: o.json
      })
  ).pipe(Command.withDescription("Remove inactive work runs past their retention (never active or unowned ones)."))
  const runCommand = Command.make(
    "run",
    {
      target: Args.text({ name: "CATEGORY/TENANT" }),
      name: Options.text("name").pipe(Options.withDescription("Join or create the named run RUN instead of a fresh one."), Options.optional),
      delete: Options.boolean("delete").pipe(Options.withDescription("Delete the run when the command exits."))
    },
    (o) => run(ctx, { target: o.target, name: value(o.name), delete: o.delete })
  ).pipe(Command.withDescription("Run a command inside a leased work run: pi-storage work run CATEGORY/TENANT -- CMD [ARGS...]"))
  const work = Command.make("work", {}, () => usageError(ctx, "work needs a subcommand: ls, prune or run")).pipe(
    Command.withDescription("Leased transient work runs."),
    Command.withSubcommands([lsCommand, pruneCommand, runCommand])
  )
  const doctorCommand = Command.make("doctor", { json }, (o) => doctor(ctx, o)).pipe(
    Command.withDescription("Read-only check of the agent dir; exit 1 when something is a warning or worse.")
  )
  const migrateCommand = Command.make("migrate", { dryRun, json }, (o) => migrate(ctx, o)).pipe(
    Command.withDescription("Move legacy entries of the agent dir to their canonical places.")
  )
  // Shown in help only: these two are taken out of argv before parsing, wherever they appear.
  const globals = {
    agentDir: Options.text("agent-dir").pipe(
      Options.withDescription("The agent dir (else $PI_ADAPTATIVE_CODING_AGENT_DIR, else ~/.pi/agent)."),
      Options.optional
    ),
    noColor: Options.boolean("no-color").pipe(Options.withDescription("No colour (also NO_COLOR=1; colour is only used on a TTY)."))
  }
  return Command.make("pi-storage", globals, () => Effect.zipRight(err(USAGE), Effect.sync(() => ctx.status.raise(ExitCode.usage)))).pipe(
    Command.withDescription("See and manage what the coding agent keeps under its agent dir."),
    Command.withSubcommands([statusCommand, work, doctorCommand, migrateCommand, backupCommand(ctx)])
  )
}

/** `@effect/cli` needs the platform FileSystem, Path and Terminal; subpath imports keep start-up quick. */
const cliEnvironment = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)

const COMMAND_WORDS = new Set(["status", "work", "ls", "prune", "run", "doctor", "migrate", "backup", "create", "list", "verify", "forget", "restore"])

/** One line from a ValidationError: its text without ANSI codes, whitespace collapsed; a bad command is named. */
export const validationMessage = (error: ValidationError.ValidationError, args: ReadonlyArray<string>): string => {
  if (ValidationError.isCommandMismatch(error)) {
    const unknown = args.find((a) => !a.startsWith("-") && !COMMAND_WORDS.has(a))
    if (unknown !== undefined) return `unknown command ${JSON.stringify(unknown)}`
  }
  const doc = "error" in error ? error.error : HelpDoc.empty
  return stripAnsi(HelpDoc.toAnsiText(doc)).replace(/\s+/g, " ").trim() || error._tag
}

/** The whole program for one invocation (argv already split by `splitArgv`): parse, dispatch, record the exit status. */
export const main = (split: SplitArgv, exitStatus: ExitStatus): Effect.Effect<void> => {
  const { globals, args, command } = split
  const ctx = makeContext(globals, exitStatus, command)
  const color = colorAllowed(globals)
  const cli = Command.run(commands(ctx), { name: "pi-storage", version: VERSION })
  // Silence @effect/cli's own error printing; strip ANSI from help unless colour is allowed.
  const withQuietConsole = Effect.consoleWith((console) =>
    Effect.withConsole(
      cli(["node", "pi-storage", ...args]),
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
        ? usageError(ctx, `${validationMessage(error, args)} (see pi-storage --help)`)
        : complain(ctx, String(error), ExitCode.findings)
    ),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : complain(ctx, `unexpected failure: ${Cause.pretty(cause).split("\n")[0]}`, ExitCode.findings)
    ),
    Effect.provide(cliEnvironment),
    Effect.orDie
  )
}
