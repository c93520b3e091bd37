/**
 * Exit codes (docs/cli.md "CLI quick tour") and the per-invocation exit status the handlers raise. `work run` passes its child's
 * code through, so the status can hold any value; the named codes are the tool's own.
 */
import * as Exit from "effect/Exit"
import * as Match from "effect/Match"
import { isStorageError, type StorageError } from "../domain/StorageErrors.js"
import { ExitCode } from "./exitCodes.js"
import { exitCodeAfterOutput, whenOutputWritten } from "./streams.js"

export { ExitCode }

/**
 * The exit code of each typed library error: the caller's mistake (2), a refusal to touch what is not
 * provably safe (3), else a failure (1). One exhaustive match over the error union (no default branch), so a
 * new error does not compile until it is placed here.
 */
export const exitCodeOf: (error: StorageError) => number = Match.type<StorageError>().pipe(
  Match.tagsExhaustive({
    InvalidSegment: () => ExitCode.usage,
    InvalidPolicy: () => ExitCode.usage,
    InvalidArgument: () => ExitCode.usage,
    InvalidMigrationPlan: () => ExitCode.usage,
    InvalidEntry: () => ExitCode.usage,
    UnknownRevision: () => ExitCode.usage,
    SnapshotNotFound: () => ExitCode.usage,
    ExtensionNotInSnapshot: () => ExitCode.usage,
    UnsafeRoot: () => ExitCode.refused,
    RunBusy: () => ExitCode.refused,
    UnownedRun: () => ExitCode.refused,
    ManifestMismatch: () => ExitCode.refused,
    UnsafeProfile: () => ExitCode.refused,
    ProfileBusy: () => ExitCode.refused,
    ConfigHistoryBusy: () => ExitCode.refused,
    UnsafeBackupRoot: () => ExitCode.refused,
    BackupBusy: () => ExitCode.refused,
    SnapshotCorrupt: () => ExitCode.refused,
    UnsafeRestoreTarget: () => ExitCode.refused,
    TiersOverlap: () => ExitCode.refused,
    TierUnresolvable: () => ExitCode.refused,
    ConfigRedLine: () => ExitCode.refused,
    EntryNotFound: () => ExitCode.findings,
    AmbiguousEntry: () => ExitCode.findings,
    FileSystemError: () => ExitCode.findings,
    StorageUnloaded: () => ExitCode.findings,
    StorageClosed: () => ExitCode.findings,
    DataDirRemoved: () => ExitCode.findings,
    StateMissing: () => ExitCode.findings,
    StateUnreadable: () => ExitCode.findings,
    ConfigUnreadable: () => ExitCode.findings,
    RemovalStalled: () => ExitCode.findings,
    MigrationStepFailed: () => ExitCode.findings,
    GitFailed: () => ExitCode.findings,
    ConfigHistoryCorrupt: () => ExitCode.findings
  })
)

/**
 * The exit code for anything a command failed with: a typed library error by `exitCodeOf`; anything else
 * (not one of ours: a defect that reached the edge) is a failure.
 */
export const exitCodeForError = (error: { readonly _tag: string }): number =>
  isStorageError(error) ? exitCodeOf(error) : ExitCode.findings

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

  /**
   * For `NodeRuntime.runMain`: once the output is written, exit with the recorded status; an interruption
   * without one is 130; 141 when stdout's reader went away (streams.ts).
   */
  readonly teardown = <E, A>(exit: Exit.Exit<E, A>, onExit: (code: number) => void): void => {
    const code = Exit.isSuccess(exit) ? this.current : this.code ?? (Exit.isInterrupted(exit) ? ExitCode.interrupted : ExitCode.findings)
    // The output first: `onExit` may end the process at once (streams.ts).
    whenOutputWritten(() => onExit(exitCodeAfterOutput(code)))
  }
}
