/**
 * An error or a warning as `--json` puts it on stderr: one JSON object on one line (docs/cli.md "CLI quick tour").
 * An error is `{ "_tag", "message", "exit" }` (and what else it names, such as `candidates`); a warning
 * `{ "_tag", "message", "level": "warning" }`. Imports nothing heavy (launch.ts prints argv mistakes with it).
 */
import { ExitCode } from "./exitCodes.js"
import { txt } from "./format.js"

export interface ProblemObject {
  readonly _tag: string
  readonly message: string
  readonly [field: string]: unknown
}

/** One line of JSON. */
export const problemLine = (problem: ProblemObject): string => `${JSON.stringify(problem)}\n`

/** The `_tag` of an error the CLI found itself (not a library error, which has its own). */
export const tagOfExitCode = (code: number): string =>
  code === ExitCode.usage ? "UsageError" : code === ExitCode.refused ? "Refused" : "Failure"

/** One warning on stderr: `pi-storage: warning: …` (escaped), or with `--json` its JSON object. */
export const warningLine = (json: boolean, tag: string, message: string): string =>
  json ? problemLine({ _tag: tag, message, level: "warning" }) : txt`pi-storage: warning: ${message}\n`.text
