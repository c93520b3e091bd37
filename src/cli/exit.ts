/**
 * Exit codes (issue 6) and the per-invocation exit status the handlers raise. `work run` passes its child's
 * code through, so the status can hold any value; the named codes are the tool's own.
 */
import * as Exit from "effect/Exit"

export const ExitCode = {
  ok: 0,
  /** Doctor findings at warning or above, or a partial failure (errors in a report, a partial migration). */
  findings: 1,
  /** A bad flag, value or command. */
  usage: 2,
  /** Refused: an unsafe root, a busy run or tenant, a directory the library does not own. */
  refused: 3,
  /** Interrupted by SIGINT with no child status to pass on. */
  interrupted: 130
} as const

/** Which typed library errors are refusals (3) or the caller's mistake (2); anything else is a failure (1). */
export const exitCodeForError = (tag: string): number => {
  switch (tag) {
    case "InvalidSegment":
    case "InvalidArgument":
    case "SnapshotNotFound":
      return ExitCode.usage
    case "UnsafeRoot":
    case "RunBusy":
    case "UnownedRun":
    case "ManifestMismatch":
    case "UnsafeBackupRoot":
    case "BackupBusy":
    case "SnapshotCorrupt":
      return ExitCode.refused
    default:
      return ExitCode.findings
  }
}

export class ExitStatus {
  private code: number | undefined

  /** Record the outcome; the most serious of the tool's own codes wins, a child's code always stands. */
  raise(code: number): void {
    this.code = this.code === undefined ? code : Math.max(this.code, code)
  }

  /** A child's exit status is passed on exactly. */
  set(code: number): void {
    this.code = code
  }

  get current(): number {
    return this.code ?? ExitCode.ok
  }

  /** For `NodeRuntime.runMain`: exit with the recorded status; an interruption without one is 130. */
  readonly teardown = <E, A>(exit: Exit.Exit<E, A>, onExit: (code: number) => void): void => {
    if (Exit.isSuccess(exit)) return onExit(this.current)
    onExit(this.code ?? (Exit.isInterrupted(exit) ? ExitCode.interrupted : ExitCode.findings))
  }
}
