#!/usr/bin/env node
/**
 * The `pi-storage` executable. Global flags and `--` are split off first, so an argv mistake is reported
 * before anything heavy loads. NodeRuntime is imported by subpath: the platform-node barrel alone costs more
 * start-up time than a whole command. What this file imports statically imports nothing else (issue 18: the
 * bundle splits the rest into chunks read only when needed): `--version` (or `-v`) alone is answered before
 * effect loads at all; `status` and `status --json` take the short route (route.ts), without `@effect/cli`;
 * everything else loads the command tree (app.ts).
 */
import { type SplitArgv, splitArgv } from "./argv.js"
import type { ExitStatus as Status } from "./exit.js"
import { ExitCode } from "./exitCodes.js"
import { directRoute } from "./route.js"
import { isVersionRequest, versionLine } from "./version.js"

const split = splitArgv(process.argv.slice(2))
if (!split.ok) {
  process.stderr.write(`pi-storage: ${split.message}\n`)
  process.exitCode = ExitCode.usage
} else if (split.value.command === undefined && isVersionRequest(split.value.args)) {
  // The same answer app.ts gives, without loading it.
  process.stdout.write(versionLine)
} else {
  const route = directRoute(split.value)
  const [NodeRuntime, { ExitStatus }, program] = await Promise.all([
    import("@effect/platform-node/NodeRuntime"),
    import("./exit.js"),
    route === undefined
      ? import("./app.js").then(({ main }) => main)
      : import("./direct.js").then(({ direct }) => (argv: SplitArgv, status: Status) => direct(route, argv, status))
  ])
  const exitStatus = new ExitStatus()
  NodeRuntime.runMain(program(split.value, exitStatus), {
    disableErrorReporting: true,
    disablePrettyLogger: true,
    teardown: exitStatus.teardown
  })
}
