/**
 * What happens to argv before `@effect/cli` sees it: global flags are taken out wherever they appear
 * (`--agent-dir DIR`, `--no-color`), the `work run` command line after `--` is split off untouched, and
 * flags that need a value are checked for one (otherwise `@effect/cli` would take the next flag as the
 * value, or the flag as a positional argument).
 */
export interface Globals {
  readonly agentDir: string | undefined
  readonly noColor: boolean
}

export interface SplitArgv {
  readonly globals: Globals
  /** What `@effect/cli` parses (without the node and script paths). */
  readonly args: ReadonlyArray<string>
  /** The command after `--` (for `work run`), or `undefined` when there was no `--`. */
  readonly command: ReadonlyArray<string> | undefined
}

/** Flags of the subcommands that take a value, and an example of one for the error message. */
const VALUED_FLAGS: Readonly<Record<string, string>> = {
  "--max-age": "a duration such as 30d",
  "--max-runs": "a number such as 20",
  "--max-bytes": "a size such as 512MiB",
  "--name": "a run name",
  "--budget": "a size in bytes such as 8KiB or 4000",
  "--cwd": "a directory",
  "--web-data-root": "a directory",
  "--root": "a directory",
  "--label": "a label for the snapshot",
  "--message": "a commit message",
  "-m": "a commit message",
  "--limit": "a number such as 20",
  "--extension": "an extension namespace",
  "--sample": "a number such as 500",
  "--keep-last": "a number such as 3",
  "--keep-daily": "a number such as 7",
  "--keep-weekly": "a number such as 4"
}

/** Flags of `work run` that take a value (their value is not a positional argument). */
const RUN_VALUED = new Set(["--name", "--cwd"])

export type ArgvResult = { readonly ok: true; readonly value: SplitArgv } | { readonly ok: false; readonly message: string }

export const splitArgv = (argv: ReadonlyArray<string>): ArgvResult => {
  const dashes = argv.indexOf("--")
  const head = dashes === -1 ? argv : argv.slice(0, dashes)
  const command = dashes === -1 ? undefined : argv.slice(dashes + 1)
  let agentDir: string | undefined
  let noColor = false
  const args: Array<string> = []
  for (let i = 0; i < head.length; i++) {
    const arg = head[i]!
    if (arg === "--no-color") {
      noColor = true
    } else if (arg === "--agent-dir" || arg.startsWith("--agent-dir=")) {
      const value = arg === "--agent-dir" ? head[++i] : arg.slice("--agent-dir=".length)
      if (value === undefined || value === "" || value.startsWith("--")) {
        return { ok: false, message: "--agent-dir needs a value: the agent directory" }
      }
      agentDir = value
    } else {
      const example = VALUED_FLAGS[arg]
      if (example !== undefined) {
        const value = head[i + 1]
        if (value === undefined || value.startsWith("--")) return { ok: false, message: `${arg} needs a value: ${example}` }
      }
      args.push(arg)
    }
  }
  const isWorkRun = args[0] === "work" && args[1] === "run"
  if (command !== undefined && !isWorkRun) return { ok: false, message: "'--' is only used by 'work run CATEGORY/TENANT -- CMD [ARGS...]'" }
  if (isWorkRun && command === undefined && !args.includes("--help") && !args.includes("-h")) {
    // `work run tools/bash make report`: the command must come after `--` (so its flags stay its own).
    const positionals: Array<string> = []
    for (let i = 2; i < args.length; i++) {
      if (RUN_VALUED.has(args[i]!)) i++
      else if (!args[i]!.startsWith("-")) positionals.push(args[i]!)
    }
    if (positionals.length > 1) {
      const [target, ...rest] = positionals
      return { ok: false, message: `put the command after '--': pi-storage work run ${target} -- ${rest.join(" ")}` }
    }
  }
  return { ok: true, value: { globals: { agentDir, noColor }, args, command } }
}
