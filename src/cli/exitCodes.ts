/**
 * The tool's own exit codes and what each means: the one table `--help` prints and docs/errors.md "Exit
 * codes" lists (a test holds them equal). In a module that imports nothing: main.ts needs `usage` before
 * anything heavy loads (docs/install.md "Installing"). `exit.ts` re-exports them beside the per-error mapping.
 */
export const ExitCode = {
  ok: 0,
  /** Doctor findings at warning or above, or a partial failure (errors in a report, a partial migration). */
  findings: 1,
  /** A bad flag, value or command. */
  usage: 2,
  /** Refused: an unsafe root, a busy run or tenant, a directory the library does not own. */
  refused: 3,
  /** Interrupted by SIGINT with no child status to pass on. */
  interrupted: 130,
  /** stdout's reader went away before the output was written (128 + SIGPIPE, as a tool killed by it). */
  closedPipe: 141
} as const

/** What each code means, in a line (every named code has one: the type says so). */
const MEANING: { readonly [K in keyof typeof ExitCode]: string } = {
  ok: "done",
  findings: "doctor findings (warning or worse), or a partial failure (errors in a report, a partial migration)",
  usage: "usage error: a bad flag, value or command (one line on stderr naming it)",
  refused: "refused: an unsafe root, a busy run or tenant, something the library does not own",
  interrupted: "interrupted (SIGINT)",
  closedPipe: "stdout's reader went away before the output was written (… | head -1)"
}

/** `work run`'s own row: it ends with its command's code. */
const PASSED_ON = ["other", "work run: the command's own exit code (128+signal when killed, 127 not found)"] as const

/** The exit-code table, in code order: `[code, meaning]` rows, `work run`'s pass-through last. */
export const EXIT_CODE_TABLE: ReadonlyArray<readonly [string, string]> = [
  ...(Object.keys(ExitCode) as Array<keyof typeof ExitCode>)
    .sort((a, b) => ExitCode[a] - ExitCode[b])
    .map((k) => [String(ExitCode[k]), MEANING[k]] as const),
  PASSED_ON
]
