#!/usr/bin/env node
/**
 * The `pi-storage` executable. Global flags and `--` are split off first, so an argv mistake is reported
 * before anything heavy loads. NodeRuntime is imported by subpath: the platform-node barrel alone costs more
 * start-up time than a whole command. `--version` (or `-v`) alone is answered before any of that loads (the bundle
 * splits app.ts into a chunk of its own that only then is read: README "Installing").
 */
import { splitArgv } from "./argv.js"
import { ExitCode, ExitStatus } from "./exit.js"
import { isVersionRequest, versionLine } from "./version.js"

const split = splitArgv(process.argv.slice(2))
if (!split.ok) {
  process.stderr.write(`pi-storage: ${split.message}\n`)
  process.exitCode = ExitCode.usage
} else if (split.value.command === undefined && isVersionRequest(split.value.args)) {
  // The same answer app.ts gives, without loading it.
  process.stdout.write(versionLine)
} else {
  const [NodeRuntime, { main }] = await Promise.all([import("@effect/platform-node/NodeRuntime"), import("./app.js")])
  const exitStatus = new ExitStatus()
  NodeRuntime.runMain(main(split.value, exitStatus), {
    disableErrorReporting: true,
    disablePrettyLogger: true,
    teardown: exitStatus.teardown
  })
}
