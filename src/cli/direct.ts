/**
 * The short route (`route.ts`): a command the tree does not need to parse, run with the handler, the context and the
 * error handling app.ts gives it, without loading `@effect/cli` (docs/install.md "Installing").
 */
import * as Effect from "effect/Effect"
import type { SplitArgv } from "./argv.js"
import { configSnapshot } from "./commands/configHistory.js"
import { doctor } from "./commands/doctor.js"
import { ls } from "./commands/ls.js"
import { status } from "./commands/status.js"
import { complain, makeContext } from "./context.js"
import type { ExitStatus } from "./exit.js"
import { ExitCode } from "./exitCodes.js"
import { unexpectedFailures } from "./guard.js"
import type { DirectRoute } from "./route.js"

export const direct = (route: DirectRoute, split: SplitArgv, exitStatus: ExitStatus): Effect.Effect<void> => {
  const ctx = makeContext(split.globals, exitStatus, split.afterDashes)
  // The same handler and options the tree's command gives it (app.ts).
  const run: Effect.Effect<unknown, unknown> = route.command === "status"
    ? status(ctx, { json: route.json, webDataRoot: route.webDataRoot, limits: route.limits })
    : route.command === "doctor"
    ? doctor(ctx, { webDataRoot: route.webDataRoot, json: route.json, maxScanEntries: route.maxScanEntries })
    : route.command === "work ls"
    ? ls(ctx, { filter: route.filter, json: route.json, limits: route.limits })
    : configSnapshot(ctx, route)
  return run.pipe(
    Effect.asVoid,
    Effect.catchAll((error) => complain(ctx, String(error), ExitCode.findings, { tag: "UnexpectedFailure" })),
    unexpectedFailures(ctx),
    Effect.orDie
  )
}
