/**
 * What every command handler gets: the global flags, where colour is allowed, the exit status, and the
 * writers. Output goes to the process streams through streams.ts, which the exit waits for, so a document is
 * complete however it is read.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nodeEnv } from "../layers/NodeHost.js"
import { fileTypeWord } from "../domain/FileTypeWords.js"
import type { Globals } from "./argv.js"
import { ExitCode, exitCodeForError, type ExitStatus } from "./exit.js"
import { withArticle } from "../domain/Article.js"
import { type Paint, painter, type Shown, type Showable, shown, txt } from "./format.js"
import { problemLine, tagOfExitCode } from "./problem.js"
import type { StackOptions } from "./services.js"
import { jsonPieces } from "./jsonPieces.js"
import { writeErr, writeOut, writeOutPieces } from "./streams.js"

export interface CliContext {
  readonly globals: Globals
  readonly status: ExitStatus
  /** What followed `--`: the command `work run` runs (any other command took it as its arguments). */
  readonly command: ReadonlyArray<string> | undefined
  /** Colour for stdout / stderr: only on a TTY, never with `--no-color`, a non-empty `NO_COLOR` or `TERM=dumb`. */
  readonly paint: Paint
  readonly paintErr: Paint
  /** Progress lines may be drawn on stderr: a terminal that is not `TERM=dumb`, and no `--json` (color.ts). */
  readonly progress: boolean
}

import { showProgress, useColor } from "./color.js"

export { showProgress, useColor }

export const colorAllowed = (globals: Globals, stream: { readonly isTTY?: boolean } = process.stdout): boolean =>
  useColor({ noColorFlag: globals.noColor, noColorEnv: nodeEnv("NO_COLOR"), term: nodeEnv("TERM"), isTTY: stream.isTTY })

export const makeContext = (globals: Globals, status: ExitStatus, command: ReadonlyArray<string> | undefined): CliContext => ({
  globals,
  status,
  command,
  paint: painter(colorAllowed(globals, process.stdout)),
  paintErr: painter(colorAllowed(globals, process.stderr)),
  progress: showProgress({ json: globals.json, term: nodeEnv("TERM"), isTTY: process.stderr.isTTY })
})

/** Human output on stdout: only `Shown` text (format.ts), so every string in it went through `displayText`. */
export const out = (text: Shown): Effect.Effect<void> => Effect.sync(() => void writeOut(text.text))
/** Human output on stderr, alike. */
export const err = (text: Shown): Effect.Effect<void> => Effect.sync(() => void writeErr(text.text))

/** `--json`: the exact document (JSON escapes every control character itself), written a piece at a time (jsonPieces.ts). */
export const printJson = (value: unknown): Effect.Effect<void> => Effect.promise(() => writeOutPieces(jsonPieces(value)))

/** Human output on stdout, a piece at a time as the reader takes it (a table of 40,000 rows). */
export const outPieces = (pieces: Iterable<Shown>): Effect.Effect<void> =>
  Effect.promise(() => writeOutPieces(textOf(pieces)))

function* textOf(pieces: Iterable<Shown>): Generator<string> {
  for (const piece of pieces) yield piece.text
}

/** What an error says beyond its message: its `_tag` (default by its exit code) and more, as JSON fields and as human lines. */
export interface ComplaintDetails {
  readonly tag?: string
  /** Extra fields of the JSON object (`candidates`). */
  readonly fields?: Readonly<Record<string, unknown>>
  /** Extra lines after the human line (the same facts). */
  readonly lines?: Shown
}

/**
 * The error printer: one clean line on stderr and the exit code to go with it. A string message (a library
 * error's, naming a path or a value) is escaped like every other string, so it stays one line. With `--json`
 * it is one JSON object on one line instead (`{ "_tag", "message", "exit" }`, the message exact), so a
 * script reads stderr with the parser it reads stdout with (docs/cli.md "CLI quick tour").
 */
export const complain = (ctx: CliContext, message: Showable, code: number, details: ComplaintDetails = {}): Effect.Effect<void> =>
  Effect.zipRight(
    ctx.globals.json === true
      ? Effect.sync(() => void writeErr(problemLine({ _tag: details.tag ?? tagOfExitCode(code), message: typeof message === "string" ? message : shown(message).text, exit: code, ...details.fields })))
      : err(txt`${ctx.paintErr("red", "pi-storage:")} ${message}\n${details.lines ?? ""}`),
    Effect.sync(() => ctx.status.raise(code))
  )

/** The agent dir path is a regular file (or another non-directory): say so, exit 1. */
export const notADirectory = (ctx: CliContext, agentDir: string, type: string): Effect.Effect<void> =>
  complain(ctx, `the agent dir ${agentDir} is ${withArticle(type)}, not a directory (see pi-storage doctor)`, ExitCode.findings, { tag: "NotADirectory" })

export const usageError = (ctx: CliContext, message: Showable): Effect.Effect<void> => complain(ctx, message, ExitCode.usage)

/** Report a typed library error (anything with `_tag` and `message`) with its exit code. */
export const reportError = (ctx: CliContext, error: { readonly _tag: string; readonly message: string }, details: Omit<ComplaintDetails, "tag"> = {}): Effect.Effect<void> =>
  complain(ctx, error.message, exitCodeForError(error), { ...details, tag: error._tag })

/**
 * `withStack` for a command that reads or writes inside the agent dir: an agent dir that exists and is not
 * a directory (a regular file, or a link to one) is refused the way `status` refuses it (exit 1, "is a
 * regular file, not a directory"), before `use` runs; a link to a directory is followed (the agent dir may
 * live on another disk), an absent one is `use`'s to handle.
 */
export const withAgentDirStack = <A, E>(
  ctx: CliContext,
  use: (stack: typeof import("./services.js")) => Effect.Effect<A, E, import("./services.js").CliServices>,
  options: Omit<StackOptions, "agentDir"> = {}
): Effect.Effect<A | void, E> =>
  withStack(ctx, (s) =>
    Effect.gen(function*() {
      const agentDir = yield* s.AgentDir
      const info = yield* Effect.option((yield* s.FileSystem).statFollowingLinks(agentDir.path))
      if (Option.isSome(info) && info.value.type !== "Directory") return yield* notADirectory(ctx, agentDir.path, fileTypeWord(info.value.type))
      return yield* use(s)
    }), options)

/** Load the layer stack (lazily) and run `use` with its services. */
export const withStack = <A, E>(
  ctx: CliContext,
  use: (stack: typeof import("./services.js")) => Effect.Effect<A, E, import("./services.js").CliServices>,
  options: Omit<StackOptions, "agentDir"> = {}
): Effect.Effect<A, E> =>
  Effect.flatMap(
    Effect.promise(() => import("./services.js")),
    (stack) => Effect.provide(use(stack), stack.cliLayer({ agentDir: ctx.globals.agentDir, json: ctx.globals.json, ...options }))
  )
