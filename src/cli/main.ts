#!/usr/bin/env node
/**
 * The `pi-storage` executable. NodeRuntime is imported by subpath: the platform-node barrel costs more
 * start-up time than the whole command.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { main } from "./app.js"
import { ExitStatus } from "./exit.js"

const exitStatus = new ExitStatus()
NodeRuntime.runMain(main(process.argv.slice(2), exitStatus), {
  disableErrorReporting: true,
  disablePrettyLogger: true,
  teardown: exitStatus.teardown
})
