/**
 * Every typed error the library's programs fail with, in one list: the Promise facade's `StorageError` union
 * and the CLI's exit codes are derived from it, so a new error fails to compile until both know it.
 */
import type * as Errors from "./Errors.js"
import type * as Snapshots from "./StateSnapshot.js"
import type * as Profile from "./UserProfileErrors.js"

export type StorageError =
  | Errors.FileSystemError
  | Errors.InvalidSegment
  | Errors.InvalidPolicy
  | Errors.InvalidArgument
  | Errors.UnownedRun
  | Errors.ManifestMismatch
  | Errors.RunBusy
  | Errors.UnsafeRoot
  | Errors.StorageUnloaded
  | Errors.StorageClosed
  | Errors.DataDirRemoved
  | Errors.StateMissing
  | Errors.StateUnreadable
  | Errors.ConfigRedLine
  | Errors.GitFailed
  | Errors.UnknownRevision
  | Errors.ConfigHistoryBusy
  | Errors.TiersOverlap
  | Snapshots.UnsafeBackupRoot
  | Snapshots.BackupBusy
  | Snapshots.SnapshotNotFound
  | Snapshots.SnapshotCorrupt
  | Profile.InvalidEntry
  | Profile.EntryNotFound
  | Profile.AmbiguousEntry
  | Profile.UnsafeProfile
  | Profile.ProfileBusy

export type StorageErrorTag = StorageError["_tag"]
