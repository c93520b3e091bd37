/**
 * Which invocations skip the `@effect/cli` command tree (docs/install.md "Installing"): loading `@effect/cli` and building and
 * checking the whole tree cost `pi-storage status` about a third of its start-up, `doctor` and `work ls` about
 * 100 ms each (BENCHMARKS.md "Views and start-up: the short route"), and `pi-storage config snapshot`
 * (run by hooks after every config edit) about 40% of its own. Only the exact spellings below take the short
 * route (`direct.ts`), and they run the same handler the tree would, with the same error handling; anything
 * else (`status --help`, a typo, a repeated flag, a `--`, `--flag=value`, a value that looks like a flag, a
 * count that does not parse) goes through the tree, which reads it by the one rule of argv.ts and reports it.
 * (test/cli/route.test.ts holds the two equal: whatever this takes, that rule reads as the same command with
 * the same flags.) Imports nothing heavy: only argv.ts's flag rule, the count parser and the scan-bound flags' table.
 */
import { looksLikeFlag, type SplitArgv } from "./argv.js"
import { parseCount } from "./parseCount.js"
import { boundFlag, SCAN_BOUNDS, type ScanLimits } from "./scanBoundFlags.js"


export interface DirectStatus {
  readonly command: "status"
  readonly json: boolean
  readonly webDataRoot: string | undefined
  readonly limits: ScanLimits
}

export interface DirectDoctor {
  readonly command: "doctor"
  readonly json: boolean
  readonly webDataRoot: string | undefined
  readonly maxScanEntries: number | undefined
}

export interface DirectWorkLs {
  readonly command: "work ls"
  readonly json: boolean
  readonly filter: string | undefined
  readonly limits: ScanLimits
}

export interface DirectConfigSnapshot {
  readonly command: "config snapshot"
  readonly json: boolean
  readonly message: string
  readonly webDataRoot: string | undefined
}

export type DirectRoute = DirectStatus | DirectDoctor | DirectWorkLs | DirectConfigSnapshot

/** A flag's value the route takes as it is: not empty, not a flag by the rule the tree reads (argv.ts). */
const plainValue = (v: string | undefined): v is string => v !== undefined && v !== "" && !looksLikeFlag(v)

interface FlagSpec {
  /** Flags without a value. */
  readonly switches: ReadonlyArray<string>
  /** Flags whose value is taken as it is (a path, a message). */
  readonly texts: ReadonlyArray<string>
  /** Flags whose value is a count (parseCount): one that does not parse goes to the tree, which names it. */
  readonly counts: ReadonlyArray<string>
}

/**
 * `rest` as flags of `spec`, each at most once, each value in the next token; `undefined` for anything else
 * (an unknown flag, a repeat, `--flag=value`, a missing or flag-like value, a count that does not parse).
 */
const takeFlags = (rest: ReadonlyArray<string>, spec: FlagSpec): Map<string, string | number | true> | undefined => {
  const taken = new Map<string, string | number | true>()
  for (let i = 0; i < rest.length; i++) {
    const token = rest[i]!
    if (taken.has(token)) return undefined
    if (spec.switches.includes(token)) {
      taken.set(token, true)
    } else if (spec.texts.includes(token) || spec.counts.includes(token)) {
      const value = rest[i + 1]
      if (!plainValue(value)) return undefined
      i++
      if (spec.texts.includes(token)) {
        taken.set(token, value)
      } else {
        const count = parseCount(value)
        if (!count.ok) return undefined
        taken.set(token, count.value)
      }
    } else {
      return undefined
    }
  }
  return taken
}

const textOf = (taken: Map<string, string | number | true>, flag: string): string | undefined => {
  const v = taken.get(flag)
  return typeof v === "string" ? v : undefined
}

const limitsOf = (taken: Map<string, string | number | true>): ScanLimits => {
  const limits: { -readonly [K in keyof ScanLimits]: number } = {}
  for (const bound of SCAN_BOUNDS) {
    const v = taken.get(`--${bound.flag}`)
    if (typeof v === "number") limits[bound.limit] = v
  }
  return limits
}

const ALL_BOUNDS: ReadonlyArray<string> = SCAN_BOUNDS.map((b) => `--${b.flag}`)
const MAX_SCAN_ENTRIES = `--${boundFlag("maxScanEntries")}`

/** `config snapshot`, then each of `--json`, `-m MSG` / `--message MSG`, `--web-data-root DIR` at most once. */
const configSnapshotRoute = (rest: ReadonlyArray<string>): DirectConfigSnapshot | undefined => {
  const taken = takeFlags(rest, { switches: ["--json"], texts: ["-m", "--message", "--web-data-root"], counts: [] })
  // `-m` and `--message` are one flag: both given is the flag given twice, which the tree reports.
  if (taken === undefined || (taken.has("-m") && taken.has("--message"))) return undefined
  const message = textOf(taken, "-m") ?? textOf(taken, "--message") ?? "snapshot"
  return { command: "config snapshot", json: taken.has("--json"), message, webDataRoot: textOf(taken, "--web-data-root") }
}

/** `status` with any of `--json`, `--web-data-root DIR` and the scan bounds, each once. */
const statusRoute = (rest: ReadonlyArray<string>): DirectStatus | undefined => {
  const taken = takeFlags(rest, { switches: ["--json"], texts: ["--web-data-root"], counts: ALL_BOUNDS })
  return taken === undefined ? undefined : { command: "status", json: taken.has("--json"), webDataRoot: textOf(taken, "--web-data-root"), limits: limitsOf(taken) }
}

/** `doctor` with any of `--json`, `--web-data-root DIR` and `--max-scan-entries N`, each once. */
const doctorRoute = (rest: ReadonlyArray<string>): DirectDoctor | undefined => {
  const taken = takeFlags(rest, { switches: ["--json"], texts: ["--web-data-root"], counts: [MAX_SCAN_ENTRIES] })
  if (taken === undefined) return undefined
  const bound = taken.get(MAX_SCAN_ENTRIES)
  return { command: "doctor", json: taken.has("--json"), webDataRoot: textOf(taken, "--web-data-root"), maxScanEntries: typeof bound === "number" ? bound : undefined }
}

/** `work ls`, optionally `CATEGORY[/TENANT]` right after it, then any of `--json` and the scan bounds, each once. */
const workLsRoute = (rest: ReadonlyArray<string>): DirectWorkLs | undefined => {
  const filter = plainValue(rest[0]) ? rest[0] : undefined
  const taken = takeFlags(filter === undefined ? rest : rest.slice(1), { switches: ["--json"], texts: [], counts: ALL_BOUNDS })
  return taken === undefined ? undefined : { command: "work ls", json: taken.has("--json"), filter, limits: limitsOf(taken) }
}

/** The short route of `split`; `undefined` for everything the tree must parse. */
export const directRoute = (split: SplitArgv): DirectRoute | undefined => {
  if (split.afterDashes !== undefined) return undefined
  const [command, sub] = split.args
  if (command === "config" && sub === "snapshot") return configSnapshotRoute(split.args.slice(2))
  if (command === "work" && sub === "ls") return workLsRoute(split.args.slice(2))
  if (command === "status") return statusRoute(split.args.slice(1))
  if (command === "doctor") return doctorRoute(split.args.slice(1))
  return undefined
}
