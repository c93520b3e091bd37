/**
 * The first thing `pi-storage` does, in main.ts (from src/) and bin.ts (the bundle): split off the global
 * flags and `--`, so an argv mistake is reported before anything heavy loads, and answer `--version` (or
 * `-v`) alone before effect loads at all. Everything else goes to the program `load` returns. Imports
 * nothing heavy (docs/install.md "Installing").
 */
import { splitArgv } from "./argv.js"
import { displayText } from "../domain/Display.js"
import { ExitCode } from "./exitCodes.js"
import { problemLine, tagOfExitCode } from "./problem.js"
import type { runProgram } from "./program.js"
import { quietOnClosedPipes, writeErr, writeOut } from "./streams.js"
import { isVersionRequest, versionLine } from "./version.js"

export const launch = async (argv: ReadonlyArray<string>, load: () => Promise<{ readonly runProgram: typeof runProgram }>): Promise<void> => {
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
    await (await load()).runProgram(split.value)
  }
}
