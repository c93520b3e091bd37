/**
 * `pi-storage -v` / `--version`: one rule for what asks for the version and what it prints, used by main.ts
 * (answered before app.ts loads) and by app.ts. Imports nothing heavy.
 */
import { VERSION } from "../domain/Version.js"

export { VERSION }

/** The whole argv (after the global flags are split off) is `-v` or `--version`. */
export const isVersionRequest = (args: ReadonlyArray<string>): boolean =>
  args.length === 1 && (args[0] === "-v" || args[0] === "--version")

export const versionLine = `pi-storage ${VERSION}\n`
