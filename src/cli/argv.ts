/**
 * What happens to argv before `@effect/cli` sees it: global flags are taken out wherever they appear
 * (`--agent-dir DIR`, `--no-color`) and the `work run` command line after `--` is split off untouched; once
 * the command tree is loaded, `flagValueProblem` checks that the flags needing a value have one.
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

/**
 * The flags of the command tree that take a value, each with what to give it, for the "needs a value"
 * message: derived from the tree's own descriptors (a flag with a placeholder takes a value; its placeholder
 * and the example its description gives say what), so a new valued flag is checked without being listed.
 */
export interface ValuedFlagSource {
  readonly flags: ReadonlyArray<{ readonly names: ReadonlyArray<string>; readonly placeholder: string | undefined; readonly description: string }>
  readonly children: ReadonlyArray<ValuedFlagSource>
}

/** `e.g. --budget 8KiB` / `Example: --max-runs 10` in a description: the value shown. */
const exampleIn = (description: string, names: ReadonlyArray<string>): string | undefined => {
  for (const name of names) {
    const at = description.match(new RegExp(`(?:e\\.g\\.|Example:)[^;)]*?${name.replace(/[-]/g, "\\-")}[ =]("[^"]*"|[^\\s,;)]+)`))
    const shown = at?.[1]?.replace(/(.)\.$/, "$1")
    if (shown !== undefined) return shown
  }
  return undefined
}

export const valuedFlagsOf = (root: ValuedFlagSource): ReadonlyMap<string, string> => {
  const out = new Map<string, string>()
  const visit = (node: ValuedFlagSource) => {
    for (const flag of node.flags) {
      if (flag.placeholder === undefined) continue
      const example = exampleIn(flag.description, flag.names)
      const hint = example === undefined ? flag.placeholder : `${flag.placeholder}, e.g. ${example}`
      for (const name of flag.names) if (!out.has(name)) out.set(name, hint)
    }
    node.children.forEach(visit)
  }
  visit(root)
  return out
}

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
      args.push(arg)
    }
  }
  const isWorkRun = args[0] === "work" && args[1] === "run"
  if (command !== undefined && !isWorkRun) return { ok: false, message: "'--' is only used by 'work run CATEGORY/TENANT -- CMD [ARGS...]'" }
  return { ok: true, value: { globals: { agentDir, noColor }, args, command } }
}

/**
 * With the command tree's valued flags (`valuedFlagsOf`): a valued flag must have a value (otherwise
 * `@effect/cli` would take the next flag as the value, or the flag as a positional argument), and `work run`
 * takes its command after `--` only. `undefined` when the arguments pass.
 */
export const flagValueProblem = (split: SplitArgv, valued: ReadonlyMap<string, string>): string | undefined => {
  const { args, command } = split
  for (let i = 0; i < args.length; i++) {
    const hint = valued.get(args[i]!)
    if (hint === undefined) continue
    const value = args[i + 1]
    if (value === undefined || value.startsWith("--")) return `${args[i]} needs a value: ${hint}`
  }
  const isWorkRun = args[0] === "work" && args[1] === "run"
  if (isWorkRun && command === undefined && !args.includes("--help") && !args.includes("-h")) {
    // `work run tools/bash make report`: the command must come after `--` (so its flags stay its own).
    const positionals: Array<string> = []
    for (let i = 2; i < args.length; i++) {
      if (valued.has(args[i]!)) i++
      else if (!args[i]!.startsWith("-")) positionals.push(args[i]!)
    }
    if (positionals.length > 1) {
      const [target, ...rest] = positionals
      return `put the command after '--': pi-storage work run ${target} -- ${rest.join(" ")}`
    }
  }
  return undefined
}
