/**
 * The tool's own exit codes (README "CLI quick tour"), in a module that imports nothing: main.ts needs `usage` before
 * anything heavy loads (README "Installing"). `exit.ts` re-exports them beside the per-error mapping.
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
