/**
 * Every `pi-storage` invocation past argv splitting and `--version`: the short route (route.ts) or the
 * command tree (app.ts), under `NodeRuntime.runMain`. main.ts imports it; the bundle ships it as one
 * CommonJS file (`cli/program.cjs`) that bin.ts compiles with a V8 code cache (docs/install.md "Installing"; codeCache.ts).
 * NodeRuntime is imported by subpath: the platform-node barrel alone costs more start-up time than a whole
 * command.
 */
import type { SplitArgv } from "./argv.js"
import type { ExitStatus } from "./exit.js"
import { directRoute } from "./route.js"

export const runProgram = async (split: SplitArgv): Promise<void> => {
  const route = directRoute(split)
  const [NodeRuntime, { ExitStatus: Status }, program] = await Promise.all([
    import("@effect/platform-node/NodeRuntime"),
    import("./exit.js"),
    route === undefined
      ? import("./app.js").then(({ main }) => main)
      : import("./direct.js").then(({ direct }) => (argv: SplitArgv, status: ExitStatus) => direct(route, argv, status))
  ])
  const exitStatus = new Status()
  NodeRuntime.runMain(program(split, exitStatus), {
    disableErrorReporting: true,
    disablePrettyLogger: true,
    teardown: exitStatus.teardown
  })
}
