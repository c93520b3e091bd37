/**
 * The first thing `pi-storage` does, in main.ts (from src/) and bin.ts (the bundle): split off the global
 * flags and `--`, so an argv mistake is reported before anything heavy loads, and answer `--version` (or
 * `-v`) alone before effect loads at all; `config snapshot` first asks the clean scan (`loadFast`, configFast.ts)
 * whether nothing changed. Everything else goes to the program `load` returns. Imports nothing heavy (docs/install.md "Installing").
 */
import { splitArgv } from "./argv.js"
import { displayText } from "../domain/Display.js"
import { ExitCode } from "./exitCodes.js"
import { problemLine, tagOfExitCode } from "./problem.js"
import type { runProgram } from "./program.js"
import { quietOnClosedPipes, writeErr, writeOut } from "./streams.js"
import { isVersionRequest, versionLine } from "./version.js"
import type { fastConfigSnapshot } from "./configFast.js"
import { directRoute } from "./route.js"

export const launch = async (
  argv: ReadonlyArray<string>,
  load: () => Promise<{ readonly runProgram: typeof runProgram }>,
  /** The clean-scan answer of `config snapshot` (configFast.ts): loaded only for that command. */
  loadFast: () => Promise<{ readonly fastConfigSnapshot: typeof fastConfigSnapshot }>
): Promise<void> => {
  // First: a reader that goes away (`| head -1`) ends any command quietly (streams.ts).
  quietOnClosedPipes()
  const split = splitArgv(argv)
  if (!split.ok) {
    // The message may quote an argument: escaped, as every string in human output (docs/cli.md "CLI quick tour");
    // with --json, exact in the one JSON object the error printer (context.ts) writes.
    writeErr(split.json
      ? problemLine({ _tag: tagOfExitCode(ExitCode.usage), message: split.message, exit: ExitCode.usage })
      : `pi-storage: ${displayText(split.message)}\n`)
    process.exitCode = ExitCode.usage
  } else if (split.value.afterDashes === undefined && isVersionRequest(split.value.args)) {
    // The same answer app.ts gives, without loading it.
    writeOut(versionLine)
  } else {
    const route = directRoute(split.value)
    // `config snapshot` with nothing changed: proven by the stat cache's clean scan, answered without effect or git.
    if (route?.command === "config snapshot" && await loadFast().then((m) => m.fastConfigSnapshot(split.value, route), () => false)) return
    await (await load()).runProgram(split.value)
  }
}
