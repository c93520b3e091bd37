/**
 * The one rule for reading a `pi-storage` command line (docs/cli.md "CLI quick tour"), for the command tree and
 * the short route alike. Imports nothing heavy: `launch.ts` splits argv before anything loads.
 *
 * - `--` ends the flags (as in git): what follows is data, the arguments of the command (`memory add --
 *   --literal`), or for `work run` the command it runs, untouched.
 * - Before it, a token that looks like a flag (`-x`, `--x…`; not `-` alone, not `- x`) is a flag, wherever it
 *   stands, before or after the arguments: never data. A flag the command does not take is a usage error naming
 *   it, with "did you mean" for a near miss (`status --jsn` → `--json`); so is a flag given twice, a value
 *   given to a flag that takes none, and a flag that takes a value and has none (`--budget needs a value:
 *   SIZE, e.g. 8KiB`). `--flag=value` is the same as `--flag value`.
 * - The global flags (`--agent-dir DIR`, `--no-color`) are taken out wherever they stand; `--json` also
 *   asks for errors and warnings on stderr as JSON.
 *
 * What each command takes is read from the command tree (`CommandShape`, built from `@effect/cli`'s
 * descriptors by help.ts), so a new command or flag gets this rule without being listed anywhere.
 */
import { didYouMean } from "./suggest.js"

export interface Globals {
  readonly agentDir: string | undefined
  readonly noColor: boolean
  /** `--json` was given (before `--`): errors and warnings on stderr are JSON too. Absent: text. */
  readonly json?: boolean
}

export interface SplitArgv {
  readonly globals: Globals
  /** The tokens before `--`, without the global flags. */
  readonly args: ReadonlyArray<string>
  /** The tokens after the first `--` (`undefined` when there is none): data, or `work run`'s command. */
  readonly afterDashes: ReadonlyArray<string> | undefined
}

export type ArgvResult =
  | { readonly ok: true; readonly value: SplitArgv }
  | { readonly ok: false; readonly message: string; readonly json: boolean }

/** A flag, by the rule above: `-x`, `--x…`, `-5`; not `-`, `--`, `- x` (a Markdown list item). */
export const looksLikeFlag = (token: string): boolean => token.length >= 2 && token[0] === "-" && token !== "--" && !/\s/.test(token[1]!)

const PROGRAM = "pi-storage"

export const splitArgv = (argv: ReadonlyArray<string>): ArgvResult => {
  const dashes = argv.indexOf("--")
  const head = dashes === -1 ? argv : argv.slice(0, dashes)
  const afterDashes = dashes === -1 ? undefined : argv.slice(dashes + 1)
  const json = head.includes("--json")
  let agentDir: string | undefined
  let noColor = false
  const args: Array<string> = []
  for (let i = 0; i < head.length; i++) {
    const arg = head[i]!
    if (arg === "--no-color") {
      noColor = true
    } else if (arg.startsWith("--no-color=")) {
      return { ok: false, message: `--no-color takes no value (got "${arg.slice("--no-color=".length)}")`, json }
    } else if (arg === "--agent-dir" || arg.startsWith("--agent-dir=")) {
      // Read before the command is known, `--help` included: without its value it is an error even beside `--help`.
      const value = arg === "--agent-dir" ? head[++i] : arg.slice("--agent-dir=".length)
      if (value === undefined || value === "" || value.startsWith("--")) {
        return { ok: false, message: "--agent-dir needs a value: the agent directory", json }
      }
      agentDir = value
    } else {
      args.push(arg)
    }
  }
  return { ok: true, value: { globals: { agentDir, noColor, json }, args, afterDashes } }
}

// ---------------------------------------------------------------------------------------------- the tree's shape

export interface ShapeFlag {
  /** `--message`, `-m`. */
  readonly names: ReadonlyArray<string>
  /** The value's placeholder (`SIZE`); `undefined` for a flag that takes no value. */
  readonly placeholder: string | undefined
  readonly description: string
}

export interface ShapeArg {
  readonly name: string
  readonly min: number
  readonly max: number
}

/** What a command takes, as help.ts reads it from the tree (`HelpNode` is one). */
export interface CommandShape {
  readonly name: string
  readonly flags: ReadonlyArray<ShapeFlag>
  readonly args: ReadonlyArray<ShapeArg>
  readonly children: ReadonlyArray<CommandShape>
}

/** The commands that run a command line given after `--` instead of taking it as data. */
const RUNS_A_COMMAND: ReadonlyArray<string> = ["work run"]

/** The global flags, for "did you mean" (splitArgv takes them out before the tree is consulted). */
const GLOBAL_FLAGS: ReadonlyArray<string> = ["--agent-dir", "--no-color", "--help"]

/** `e.g. --budget 8KiB` / `Example: --max-runs 10` in a description: the value shown. */
const exampleIn = (description: string, names: ReadonlyArray<string>): string | undefined => {
  for (const name of names) {
    const at = description.match(new RegExp(`(?:e\\.g\\.|Example:)[^;)]*?${name.replace(/[-]/g, "\\-")}[ =]("[^"]*"|[^\\s,;)]+)`))
    const shown = at?.[1]?.replace(/(.)\.$/, "$1")
    if (shown !== undefined) return shown
  }
  return undefined
}

/** What to give a valued flag, for "needs a value": its placeholder and the example its description gives. */
export const valueHint = (flag: ShapeFlag): string => {
  const example = exampleIn(flag.description, flag.names)
  return example === undefined ? flag.placeholder ?? "a value" : `${flag.placeholder}, e.g. ${example}`
}

// ---------------------------------------------------------------------------------------------- reading a command line

export interface CommandLine {
  /** The command words (`["work", "prune"]`; empty: the program itself). */
  readonly path: ReadonlyArray<string>
  /** `--help` / `-h` was given: print the page of `path`. */
  readonly help: boolean
  /** What `@effect/cli` parses: the command words, the flags (with their values), then `--` and the arguments. */
  readonly argv: ReadonlyArray<string>
  /** `work run`'s command (what followed `--`); `undefined` for every other command. */
  readonly command: ReadonlyArray<string> | undefined
}

export type CommandLineResult = { readonly ok: true; readonly value: CommandLine } | { readonly ok: false; readonly message: string }

const fail = (message: string): CommandLineResult => ({ ok: false, message })

const isHelp = (token: string): boolean => token === "--help" || token === "-h"
const HELP_FLAG: ShapeFlag = { names: ["--help", "-h"], placeholder: undefined, description: "" }

/**
 * Read `split` against the command tree `root`: which command it names, whether it asks for help, and the
 * argv to parse, with every flag known to that command and every argument after `--`; or the usage error.
 */
export const readCommandLine = (split: SplitArgv, root: CommandShape): CommandLineResult => {
  const tokens = split.args
  // Values of flags that take one, anywhere in the tree: skipped while the command words are found.
  const valued = new Set<string>()
  const collect = (node: CommandShape) => {
    for (const f of node.flags) if (f.placeholder !== undefined) f.names.forEach((n) => valued.add(n))
    node.children.forEach(collect)
  }
  collect(root)

  // The command words: the leading words that name a subcommand (flags may stand before them).
  let node = root
  const path: Array<string> = []
  const words = new Set<number>()
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!
    if (looksLikeFlag(token)) {
      if (valued.has(token)) i++
      continue
    }
    const child = node.children.find((c) => c.name === token)
    if (child === undefined) break
    node = child
    path.push(token)
    words.add(i)
  }
  const full = [PROGRAM, ...path].join(" ")
  /** The command as messages name it after their `pi-storage:` prefix. */
  const named = path.length > 0 ? path.join(" ") : PROGRAM
  const see = `(see ${full} --help)`
  // `--help` still reads every flag: a typo beside it is the same usage error as without it (as in clap), so
  // `status --help --jsn` never looks like a page that took `--jsn`. What help does not need (values, arguments)
  // is not asked for.
  const help = tokens.some((t, i) => !words.has(i) && isHelp(t))

  const flags: Array<string> = []
  const given = new Set<ShapeFlag>()
  const positionals: Array<string> = []
  for (let i = 0; i < tokens.length; i++) {
    if (words.has(i)) continue
    const token = tokens[i]!
    if (!looksLikeFlag(token)) {
      if (node.children.length > 0) {
        // A near miss of a subcommand, else of one a level down (`pi-storage ls` → `work ls`).
        const near = didYouMean(token, node.children.map((c) => c.name)) ||
          didYouMean(token, node.children.flatMap((c) => c.children.map((g) => ({ match: g.name, shown: `${c.name} ${g.name}` }))))
        return fail(`unknown command "${token}"${path.length > 0 ? ` for ${named}` : ""}${near === "" ? ` ${see}` : near}`)
      }
      positionals.push(token)
      continue
    }
    if (help && isHelp(token)) continue
    const eq = token.indexOf("=")
    const name = eq > 1 ? token.slice(0, eq) : token
    const inline = eq > 1 ? token.slice(eq + 1) : undefined
    // `--help=yes`: help is a flag that takes no value, like any other.
    const flag = node.flags.find((f) => f.names.includes(name)) ?? (isHelp(name) ? HELP_FLAG : undefined)
    if (flag === undefined) {
      const near = didYouMean(name, [...node.flags.flatMap((f) => f.names), ...GLOBAL_FLAGS])
      return fail(`unknown flag ${name} for ${named}${near === "" ? ` ${see}` : near}`)
    }
    if (given.has(flag) && !help) return fail(`${name} is given twice ${see}`)
    given.add(flag)
    if (flag.placeholder === undefined) {
      if (inline !== undefined) return fail(`${name} takes no value (got "${inline}")`)
      flags.push(name)
      continue
    }
    let value = inline
    if (value === undefined) {
      const next = tokens[i + 1]
      // The next token is the value, unless it is a long flag or one of this command's own (`--label --json`).
      const isFlag = next !== undefined && (next.startsWith("--") || isHelp(next) || node.flags.some((f) => f.names.includes(next)))
      if (next !== undefined && !isFlag && !words.has(i + 1)) {
        value = next
        i++
      }
    }
    if (value === undefined || value === "") {
      if (help) continue
      return fail(`${name} needs a value: ${valueHint(flag)}`)
    }
    flags.push(name, value)
  }

  const runsCommand = RUNS_A_COMMAND.includes(path.join(" "))
  if (runsCommand && split.afterDashes === undefined && positionals.length > 1) {
    // `work run tools/bash make report`: the command must come after `--` (so its flags stay its own).
    const [target, ...rest] = positionals
    return fail(`put the command after '--': ${full} ${target} -- ${rest.join(" ")}`)
  }
  const max = node.args.reduce((n, a) => n + a.max, 0)
  /** A word more than the command takes (a typo, with `--help` too). */
  const extraWord = () => {
    if (node.children.length > 0 || positionals.length <= max) return undefined
    const extra = positionals[max]!
    return fail(max === 0 ? `${named} takes no arguments, got "${extra}" ${see}` : `unexpected argument "${extra}" ${see}`)
  }
  // With `--help`, what is given must still be what the command takes; what is missing is not asked for.
  if (help) return extraWord() ?? { ok: true, value: { path, help: true, argv: [], command: undefined } }
  if (!runsCommand) positionals.push(...(split.afterDashes ?? []))
  if (node.children.length === 0) {
    const extra = extraWord()
    if (extra !== undefined) return extra
    let needed = 0
    for (const a of node.args) {
      needed += a.min
      if (positionals.length < needed) return fail(`${named} needs ${a.name} ${see}`)
    }
  } else if (positionals.length > 0) {
    return fail(`unknown command "${positionals[0]}"${path.length > 0 ? ` for ${named}` : ""} ${see}`)
  }
  return {
    ok: true,
    value: {
      path,
      help: false,
      argv: [...path, ...flags, ...(positionals.length > 0 ? ["--", ...positionals] : [])],
      command: runsCommand ? split.afterDashes : undefined
    }
  }
}
