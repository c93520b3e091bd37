/**
 * What every command handler gets: the global flags, where colour is allowed, the exit status, and the
 * writers. Output goes straight to the process streams (synchronous for files and pipes on Linux), so a
 * document is complete before the process exits.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nodeEnv } from "../layers/NodeHost.js"
import { displayStrayBytes } from "../domain/Display.js"
import { fileTypeWord } from "../domain/FileTypeWords.js"
import type { Globals } from "./argv.js"
import { ExitCode, exitCodeForError, type ExitStatus } from "./exit.js"
import { type Paint, painter } from "./format.js"
import type { StackOptions } from "./services.js"

export interface CliContext {
  readonly globals: Globals
  readonly status: ExitStatus
  /** The command after `--` (for `work run`). */
  readonly command: ReadonlyArray<string> | undefined
  /** Colour for stdout / stderr: only on a TTY, never with `--no-color` or a non-empty `NO_COLOR`. */
  readonly paint: Paint
  readonly paintErr: Paint
  readonly stderrIsTTY: boolean
}

/** Colour only on a TTY, and never with `--no-color` or a non-empty `NO_COLOR` (no-color.org). */
export const useColor = (input: { readonly noColorFlag: boolean; readonly noColorEnv: string | undefined; readonly isTTY: boolean | undefined }): boolean =>
  !input.noColorFlag && (input.noColorEnv ?? "") === "" && input.isTTY === true

export const colorAllowed = (globals: Globals, stream: { readonly isTTY?: boolean } = process.stdout): boolean =>
  useColor({ noColorFlag: globals.noColor, noColorEnv: nodeEnv("NO_COLOR"), isTTY: stream.isTTY })

export const makeContext = (globals: Globals, status: ExitStatus, command: ReadonlyArray<string> | undefined): CliContext => ({
  globals,
  status,
  command,
  paint: painter(colorAllowed(globals, process.stdout)),
  paintErr: painter(colorAllowed(globals, process.stderr)),
  stderrIsTTY: process.stderr.isTTY === true
})

// A byte that is not UTF-8 left raw in text shows as \xNN, never as U+FFFD (README "Names are bytes").
export const out = (text: string): Effect.Effect<void> => Effect.sync(() => void process.stdout.write(displayStrayBytes(text)))
export const err = (text: string): Effect.Effect<void> => Effect.sync(() => void process.stderr.write(displayStrayBytes(text)))

export const printJson = (value: unknown): Effect.Effect<void> => out(JSON.stringify(value, null, 2) + "\n")

/** One clean line on stderr and the exit code to go with it. */
export const complain = (ctx: CliContext, message: string, code: number): Effect.Effect<void> =>
  Effect.zipRight(err(`${ctx.paintErr("red", "pi-storage:")} ${message}\n`), Effect.sync(() => ctx.status.raise(code)))

/** The agent dir path is a regular file (or another non-directory): say so, exit 1. */
export const notADirectory = (ctx: CliContext, agentDir: string, type: string): Effect.Effect<void> =>
  complain(ctx, `the agent dir ${agentDir} is a ${type}, not a directory (see pi-storage doctor)`, ExitCode.findings)

export const usageError = (ctx: CliContext, message: string): Effect.Effect<void> => complain(ctx, message, ExitCode.usage)

/** Report a typed library error (anything with `_tag` and `message`) with its exit code. */
export const reportError = (ctx: CliContext, error: { readonly _tag: string; readonly message: string }): Effect.Effect<void> =>
  complain(ctx, error.message, exitCodeForError(error))

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
    (stack) => Effect.provide(use(stack), stack.cliLayer({ agentDir: ctx.globals.agentDir, ...options }))
  )
