/**
 * The short route (`route.ts`): a command the tree does not need to parse, run with the context and the
 * error handling app.ts gives it, without loading `@effect/cli` (docs/install.md "Installing").
 */
import * as Effect from "effect/Effect"
import type { SplitArgv } from "./argv.js"
import { configSnapshot } from "./commands/configHistory.js"
import { status } from "./commands/status.js"
import { complain, makeContext } from "./context.js"
import type { ExitStatus } from "./exit.js"
import { ExitCode } from "./exitCodes.js"
import { unexpectedFailures } from "./guard.js"
import type { DirectRoute } from "./route.js"

export const direct = (route: DirectRoute, split: SplitArgv, exitStatus: ExitStatus): Effect.Effect<void> => {
  const ctx = makeContext(split.globals, exitStatus, split.afterDashes)
  const run: Effect.Effect<unknown, unknown> = route.command === "status" ? status(ctx, { json: route.json }) : configSnapshot(ctx, route)
  return run.pipe(
    Effect.asVoid,
    Effect.catchAll((error) => complain(ctx, String(error), ExitCode.findings, { tag: "UnexpectedFailure" })),
    unexpectedFailures(ctx),
    Effect.orDie
  )
}
