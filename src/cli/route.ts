/**
 * Which invocations skip the `@effect/cli` command tree (docs/install.md "Installing"): loading `@effect/cli` and building and
 * checking the whole tree cost `pi-storage status` about a third of its start-up, for a command that takes
 * one boolean flag. Only the exact spellings below take the short route (`direct.ts`), and they run the
 * same handler the tree would, with the same error handling; anything else (`status --help`, a typo, a
 * flag in another place, a `--`) goes through the tree, which reads it by the one rule of argv.ts and
 * reports it. (test/cli/route.test.ts holds the two equal: whatever this takes, that rule reads as the same
 * command with the same flags.) Imports nothing.
 */
import type { SplitArgv } from "./argv.js"

export interface DirectStatus {
  readonly command: "status"
  readonly json: boolean
}

/** `status` or `status --json` with nothing after `--`; `undefined` for everything the tree must parse. */
export const directRoute = (split: SplitArgv): DirectStatus | undefined => {
  if (split.afterDashes !== undefined || split.args[0] !== "status") return undefined
  if (split.args.length === 1) return { command: "status", json: false }
  if (split.args.length === 2 && split.args[1] === "--json") return { command: "status", json: true }
  return undefined
}
