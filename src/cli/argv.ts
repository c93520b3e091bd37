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
 *   SIZE, e.g. 8KiB`). `--flag=value` is the same as `--flag value`, and the only way to give a value that
 *   looks like a flag (`--label=-j`): a flag never takes the next token as its value when that token looks
 *   like a flag (`--label -j` is `--label` given none).
 * - The global flags (`--agent-dir DIR`, `--no-color`) are taken out wherever they stand, each at most once;
 *   `--json` also asks for errors and warnings on stderr as JSON. `--help` is given at most once, and
 *   `--version` is the program's own flag (launch.ts answers it alone; beside anything else, that is named).
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

/**
 * `--label needs a value: LABEL, e.g. x`; when the token after the flag looks like a flag (`--label -j`), the
 * message says so and how a value that starts with "-" is given: joined by `=` (`--label=-j`), the one form
 * in which a value is never read as a flag.
 */
export const needsValue = (name: string, hint: string, next: string | undefined): string =>
  `${name} needs a value: ${hint}` +
  (next !== undefined && looksLikeFlag(next) ? `; "${next}" is a flag (a value that starts with "-" is given as ${name}=${next})` : "")

/** `--json is given twice (see pi-storage status --help)`: for the globals and the command's flags alike. */
const givenTwice = (name: string, see: string): string => `${name} is given twice ${see}`

export const splitArgv = (argv: ReadonlyArray<string>): ArgvResult => {
  const dashes = argv.indexOf("--")
  const head = dashes === -1 ? argv : argv.slice(0, dashes)
  const afterDashes = dashes === -1 ? undefined : argv.slice(dashes + 1)
  const json = head.includes("--json")
  const fail = (message: string): ArgvResult => ({ ok: false, message, json })
  // Read before the command is known: the program's page is the one that lists them.
  const see = `(see ${PROGRAM} --help)`
  let agentDir: string | undefined
  let noColor = false
  const args: Array<string> = []
  for (let i = 0; i < head.length; i++) {
    const arg = head[i]!
    if (arg === "--no-color") {
      if (noColor) return fail(givenTwice(arg, see))
      noColor = true
    } else if (arg.startsWith("--no-color=")) {
      return fail(`--no-color takes no value (got "${arg.slice("--no-color=".length)}")`)
    } else if (arg === "--agent-dir" || arg.startsWith("--agent-dir=")) {
      if (agentDir !== undefined) return fail(givenTwice("--agent-dir", see))
      // Read before the command is known, `--help` included: without its value it is an error even beside `--help`.
      const next = head[i + 1]
      const value = arg !== "--agent-dir" ? arg.slice("--agent-dir=".length) : next !== undefined && !looksLikeFlag(next) ? head[++i] : undefined
      if (value === undefined || value === "") return fail(needsValue("--agent-dir", "the agent directory", arg === "--agent-dir" ? next : undefined))
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

/** The program's own flag beside `--help`: `pi-storage --version` (launch.ts answers it alone before this runs). */
const VERSION_FLAG: ShapeFlag = { names: ["--version", "-v"], placeholder: undefined, description: "" }

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
  /** `--version` / `-v` was given to the program itself (and nothing else, `--help` aside): print the version. */
  readonly version: boolean
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
      // A valued flag's value, unless what follows looks like a flag (then the flag has none: reported below).
      const next = tokens[i + 1]
      if (valued.has(token) && next !== undefined && !looksLikeFlag(next)) i++
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

  // The program's own flags beside help: `--version`, at the top only.
  const programFlags = path.length === 0 ? [VERSION_FLAG] : []
  const flags: Array<string> = []
  const given = new Set<ShapeFlag>()
  let helpGiven = false
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
    if (help && isHelp(token)) {
      if (helpGiven) return fail(givenTwice(token, see))
      helpGiven = true
      continue
    }
    const eq = token.indexOf("=")
    const name = eq > 1 ? token.slice(0, eq) : token
    const inline = eq > 1 ? token.slice(eq + 1) : undefined
    // `--help=yes`: help is a flag that takes no value, like any other.
    const flag = node.flags.find((f) => f.names.includes(name)) ?? (isHelp(name) ? HELP_FLAG : undefined) ??
      programFlags.find((f) => f.names.includes(name))
    if (flag === undefined) {
      const near = didYouMean(name, [...node.flags.flatMap((f) => f.names), ...GLOBAL_FLAGS, ...programFlags.flatMap((f) => f.names)])
      return fail(`unknown flag ${name} for ${named}${near === "" ? ` ${see}` : near}`)
    }
    if (given.has(flag) && (!help || flag === VERSION_FLAG)) return fail(givenTwice(name, see))
    given.add(flag)
    if (flag.placeholder === undefined) {
      if (inline !== undefined) return fail(`${name} takes no value (got "${inline}")`)
      if (flag !== VERSION_FLAG) flags.push(name)
      continue
    }
    let value = inline
    const next = tokens[i + 1]
    if (value === undefined) {
      // The next token is the value, unless it looks like a flag (`--label --json`, `--label -j`): a flag
      // wherever it stands. A value that starts with "-" is given with `=` (`--label=-j`).
      if (next !== undefined && !looksLikeFlag(next) && !words.has(i + 1)) {
        value = next
        i++
      }
    }
    if (value === undefined || value === "") {
      if (help) continue
      return fail(needsValue(name, valueHint(flag), inline === undefined ? next : undefined))
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
  if (help) return extraWord() ?? { ok: true, value: { path, help: true, version: false, argv: [], command: undefined } }
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
      version: given.has(VERSION_FLAG),
      argv: [...path, ...flags, ...(positionals.length > 0 ? ["--", ...positionals] : [])],
      command: runsCommand ? split.afterDashes : undefined
    }
  }
}
