/**
 * Every typed error the library's programs fail with, in one list: the Promise facade's `StorageError` union
 * and the CLI's exit codes (`cli/exit.ts`, one `Match.tagsExhaustive` over this union) are derived from it,
 * so a new error fails to compile until both know it.
 *
 * Two kinds: the port's `FileSystemError` (what a file-system call met on disk, errno and `cause` kept) and
 * program errors, one tagged class per failure a program judges for itself (a bad settings file, a removal
 * that made no progress, a busy run …).
 */
import * as Schema from "effect/Schema"
import * as Errors from "./Errors.js"
import * as Snapshots from "./StateSnapshot.js"
import * as Profile from "./UserProfileErrors.js"

export const StorageError = Schema.Union(
  Errors.FileSystemError,
  Errors.InvalidSegment,
  Errors.InvalidPolicy,
  Errors.InvalidArgument,
  Errors.UnownedRun,
  Errors.ManifestMismatch,
  Errors.RunBusy,
  Errors.UnsafeRoot,
  Errors.StorageUnloaded,
  Errors.StorageClosed,
  Errors.DataDirRemoved,
  Errors.StateMissing,
  Errors.StateUnreadable,
  Errors.ConfigUnreadable,
  Errors.ConfigRedLine,
  Errors.GitFailed,
  Errors.UnknownRevision,
  Errors.ConfigHistoryBusy,
  Errors.ConfigHistoryCorrupt,
  Errors.TiersOverlap,
  Errors.TierUnresolvable,
  Errors.RemovalStalled,
  Errors.MigrationStepFailed,
  Errors.InvalidMigrationPlan,
  Snapshots.UnsafeBackupRoot,
  Snapshots.BackupBusy,
  Snapshots.SnapshotNotFound,
  Snapshots.SnapshotCorrupt,
  Snapshots.ExtensionNotInSnapshot,
  Snapshots.UnsafeRestoreTarget,
  Profile.InvalidEntry,
  Profile.EntryNotFound,
  Profile.AmbiguousEntry,
  Profile.UnsafeProfile,
  Profile.ProfileBusy
)
export type StorageError = typeof StorageError.Type

export type StorageErrorTag = StorageError["_tag"]

const TAGS: ReadonlySet<string> = new Set(StorageError.members.map((member) => member._tag))

/** Whether a value is one of the library's typed errors (by tag: the facade and the CLI see plain objects too). */
export const isStorageError = (value: unknown): value is StorageError =>
  typeof value === "object" && value !== null && "_tag" in value && typeof value._tag === "string" && TAGS.has(value._tag)
