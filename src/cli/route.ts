/**
 * Which invocations skip the `@effect/cli` command tree (docs/install.md "Installing"): loading `@effect/cli` and building and
 * checking the whole tree cost `pi-storage status` about a third of its start-up, for a command that takes
 * one boolean flag, and `pi-storage config snapshot` (run by hooks after every config edit) about 40% of its
 * own. Only the exact spellings below take the short route (`direct.ts`), and they run the
 * same handler the tree would, with the same error handling; anything else (`status --help`, a typo, a
 * flag in another place, a `--`, `--message=MSG`, a value that looks like a flag) goes through the tree,
 * which reads it by the one rule of argv.ts and reports it. (test/cli/route.test.ts holds the two equal:
 * whatever this takes, that rule reads as the same command with the same flags.) Imports nothing.
 */
import type { SplitArgv } from "./argv.js"

export interface DirectStatus {
  readonly command: "status"
  readonly json: boolean
}

export interface DirectConfigSnapshot {
  readonly command: "config snapshot"
  readonly json: boolean
  readonly message: string
  readonly webDataRoot: string | undefined
}

export type DirectRoute = DirectStatus | DirectConfigSnapshot

/** A flag's value the route takes as it is: not empty, not something the tree might read as a flag. */
const plainValue = (v: string | undefined): v is string => v !== undefined && v !== "" && !v.startsWith("-")

/** `config snapshot`, then each of `--json`, `-m MSG` / `--message MSG`, `--web-data-root DIR` at most once. */
const configSnapshotRoute = (rest: ReadonlyArray<string>): DirectConfigSnapshot | undefined => {
  let json = false
  let message: string | undefined
  let webDataRoot: string | undefined
  for (let i = 0; i < rest.length; i++) {
    const token = rest[i]!
    if (token === "--json" && !json) json = true
    else if ((token === "-m" || token === "--message") && message === undefined && plainValue(rest[i + 1])) message = rest[++i]
    else if (token === "--web-data-root" && webDataRoot === undefined && plainValue(rest[i + 1])) webDataRoot = rest[++i]
    else return undefined
  }
  return { command: "config snapshot", json, message: message ?? "snapshot", webDataRoot }
}

/** `status`, `status --json` or a plain `config snapshot` with nothing after `--`; `undefined` for everything the tree must parse. */
export const directRoute = (split: SplitArgv): DirectRoute | undefined => {
  if (split.afterDashes !== undefined) return undefined
  const [command, sub] = split.args
  if (command === "config" && sub === "snapshot") return configSnapshotRoute(split.args.slice(2))
  if (command !== "status") return undefined
  if (split.args.length === 1) return { command: "status", json: false }
  if (split.args.length === 2 && split.args[1] === "--json") return { command: "status", json: true }
  return undefined
}
