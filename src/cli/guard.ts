/**
 * What every command's program ends with, on the command tree (app.ts) and on the short route
 * (direct.ts): a failure nobody reported becomes one clean line on stderr with exit code 1; an interruption
 * (SIGINT) stays one, so the runtime's teardown exits 130.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import { type CliContext, complain } from "./context.js"
import { ExitCode } from "./exitCodes.js"

export const unexpectedFailures = (ctx: CliContext) => <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A | void, E, R> =>
  Effect.catchAllCause(program, (cause) =>
    Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : complain(ctx, `unexpected failure: ${Cause.pretty(cause).split("\n")[0]}`, ExitCode.findings, { tag: "UnexpectedFailure" })
  )
