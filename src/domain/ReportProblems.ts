/**
 * Report problems of the inventory, the state snapshots, the config history and the user profile: what a call
 * carried on through and reports beside its result, as tagged values with a message (the prune report's own
 * are in `PruneReport.ts`, the same pattern). `_tag` says which kind (for scripts and `switch`), `message` says
 * it in words; the fields a report had before stay (`reason`, `why`, the path lists), so `--json` readers keep
 * working. Pure: shapes and their constructors, no I/O.
 */
import * as Schema from "effect/Schema"
import { type FileSystemError, FileSystemErrorReason } from "./Errors.js"

/** One `TaggedStruct` per tag over the same fields: a new kind is one more literal. */
const tagged = <const Tags extends ReadonlyArray<string>, Fields extends Schema.Struct.Fields>(tags: Tags, fields: Fields) =>
  Schema.Union(...tags.map((tag) => Schema.TaggedStruct(tag as Tags[number], fields)))

// ---------------------------------------------------------------------------------------------------------
// Inventory (`summary().errors`, `listRuns().errors`)

export const InventoryProblemTag = [
  /** An entry's `lstat` (or read) failed: the scan went on without it. */
  "Unreadable",
  /** A directory could not be listed: what is below it is not counted. */
  "NotListed",
  /** A size walk failed: the size shown is an incomplete zero. */
  "SizeUnmeasured"
] as const
export type InventoryProblemTag = typeof InventoryProblemTag[number]
/** `reason` is the port error's (`PermissionDenied`, `NotADirectory` …); `message` names the call and the path. */
export const InventoryProblem = tagged(InventoryProblemTag, { path: Schema.String, reason: FileSystemErrorReason, message: Schema.String })
export type InventoryProblem = typeof InventoryProblem.Type

/** A scan problem (the read model's `lstat` or listing failure) as a report problem. */
export const scanProblem = (path: string, error: FileSystemError): InventoryProblem => ({
  _tag: error.method === "readDirectory" ? "NotListed" : "Unreadable",
  path,
  reason: error.reason,
  message: error.message
})

/** A failed size walk as a report problem. */
export const sizeUnmeasured = (path: string, error: FileSystemError): InventoryProblem => ({
  _tag: "SizeUnmeasured",
  path,
  reason: error.reason,
  message: `size of ${path} not measured: ${error.message}`
})

// ---------------------------------------------------------------------------------------------------------
// State snapshots: `create` (`skipped`, `problems`) and `verify` (`problems`)

/** Why a live entry is not in a snapshot. `reason` (the words without the path) is kept from before. */
export const SnapshotSkipTag = [
  /** A FIFO, socket or device. */
  "SpecialFile",
  /** It disappeared between the listing and the copy. */
  "Vanished",
  /** It could not be read (permissions …). */
  "Unreadable"
] as const
export type SnapshotSkipTag = typeof SnapshotSkipTag[number]
export const SnapshotSkip = tagged(SnapshotSkipTag, { path: Schema.String, reason: Schema.String, message: Schema.String })
export type SnapshotSkip = typeof SnapshotSkip.Type

export const snapshotSkip = (tag: SnapshotSkipTag, path: string, reason: string): SnapshotSkip => ({
  _tag: tag,
  path,
  reason,
  message: `not in the snapshot: ${path}: ${reason}`
})

/** A file that moved during both copy attempts: its copy may mix two versions. */
export const ChangedDuringBackup = Schema.TaggedStruct("ChangedDuringBackup", { path: Schema.String, message: Schema.String })
export type ChangedDuringBackup = typeof ChangedDuringBackup.Type

export const changedDuringBackup = (path: string): ChangedDuringBackup => ({
  _tag: "ChangedDuringBackup",
  path,
  message: `${path} changed while it was copied (twice): the copy may mix two versions`
})

/** Everything a `create` carried on through, in the order met. */
export const SnapshotCreateProblem = Schema.Union(SnapshotSkip, ChangedDuringBackup)
export type SnapshotCreateProblem = typeof SnapshotCreateProblem.Type

/** What `verify` found wrong with one entry (`path` is `<id>/<path>`, as in `corrupt` and `missing`). */
export const VerifyProblemTag = [
  /** The entry is gone (counted in `missing`). */
  "Missing",
  /** The snapshot's `manifest.json` is gone (counted in `missing`). */
  "ManifestMissing",
  /** The manifest does not decode, its own hash does not match, or it names another snapshot. */
  "ManifestUnusable",
  /** A file's SHA-256 or size differs from the manifest. */
  "ContentMismatch",
  /** A symlink's target differs from the manifest. */
  "TargetMismatch",
  /** The entry is of another type than the manifest records. */
  "TypeMismatch",
  /** The entry could not be read (a hash or readlink failed for another reason than "missing"). */
  "Unreadable"
] as const
export type VerifyProblemTag = typeof VerifyProblemTag[number]
export const VerifyProblem = tagged(VerifyProblemTag, { path: Schema.String, message: Schema.String })
export type VerifyProblem = typeof VerifyProblem.Type

/** The tags `verify` counts as `missing`; every other one is `corrupt`. */
export const isMissingProblem = (p: VerifyProblem): boolean => p._tag === "Missing" || p._tag === "ManifestMissing"

export const verifyProblem = (tag: VerifyProblemTag, path: string, detail: string): VerifyProblem => ({
  _tag: tag,
  path,
  message: `${path}: ${detail}`
})

// ---------------------------------------------------------------------------------------------------------
// Config history: `snapshot().skipped`, `rollback().skipped`

export const ConfigSkipTag = [
  /** A symlink where a config file belongs (history never follows links). */
  "Symlink",
  /** A directory, FIFO … where a config file belongs, or at a path a rollback would write. */
  "NotARegularFile",
  /** A live file someone saved while a rollback ran: kept as they saved it, not rolled back. */
  "ChangedMeanwhile",
  /** `auth.json`: never versioned, whatever the denylist says. */
  "Credentials",
  /** Matched by the denylist: never committed. */
  "Denylisted",
  /** Refused by the config tier's red lines (a database, a log, over the budget …). */
  "RedLine",
  /**
   * Config whose credentials cannot be redacted (it does not parse, a comment or a line of a file of no known
   * format holds one …); in a rollback, such a live file, left as it is (it is in no revision).
   */
  "Unredactable",
  /** An old host's state tier (`config/state/`), not config. */
  "OldStateTier",
  /** A directory deeper than the walk goes. */
  "TooDeep",
  /** A rollback met a symlink or a file on the way from the managed root (nothing written through it). */
  "PathBlocked",
  /** A name history cannot hold: one git refuses (`.git` and its synonyms), or one that could not be read back as it is. */
  "UnversionableName",
  /** A rollback left a file as it is: the revision's redacted credentials could not all be merged back from it. */
  "SecretsNotRestored",
  /**
   * The tier's own machinery, not config (`isTierWorkFile`: the settings lock, a torn write's temp): never
   * recorded, and never written back from a revision an older build recorded it in.
   */
  "TierWorkFile"
] as const
export type ConfigSkipTag = typeof ConfigSkipTag[number]
/** `reason` (the words without the path) is kept from before. */
export const ConfigSkip = tagged(ConfigSkipTag, { path: Schema.String, reason: Schema.String, message: Schema.String })
export type ConfigSkip = typeof ConfigSkip.Type

export const configSkip = (tag: ConfigSkipTag, path: string, reason: string): ConfigSkip => ({
  _tag: tag,
  path,
  reason,
  message: `${path}: ${reason}`
})

/**
 * `rollback().unresolvedSecrets`: a redacted credential of the revision (at `pointer`, a JSON pointer, in the
 * JSON file `path`) that the live file has no value for, so the rollback left its key out (an array slot is
 * kept as `null`). A file of another format with such a value is not rewritten: `SecretsNotRestored` above.
 */
export const UnresolvedSecret = Schema.TaggedStruct("SecretLeftOut", { path: Schema.String, pointer: Schema.String, message: Schema.String })
export type UnresolvedSecret = typeof UnresolvedSecret.Type

export const unresolvedSecret = (path: string, pointer: string): UnresolvedSecret => ({
  _tag: "SecretLeftOut",
  path,
  pointer,
  message: `${path}#${pointer}: a redacted secret with no live value; its key was left out`
})

// ---------------------------------------------------------------------------------------------------------
// User profile: `ProfileView.unparsable`

export const UnparsableShardTag = [
  /** Its front matter or entries do not parse. */
  "ShardUnparsable",
  /** Larger than an archive file may be: not read. */
  "ShardTooLarge",
  /** Not valid UTF-8 (a Latin-1 or binary file): not read, never rewritten. */
  "ShardNotUtf8"
] as const
export type UnparsableShardTag = typeof UnparsableShardTag[number]
/** `shard` (the file name) and `why` are kept from before. */
export const UnparsableShard = tagged(UnparsableShardTag, { shard: Schema.String, why: Schema.String, message: Schema.String })
export type UnparsableShard = typeof UnparsableShard.Type

export const unparsableShard = (tag: UnparsableShardTag, shard: string, why: string): UnparsableShard => ({
  _tag: tag,
  shard,
  why,
  message: tag === "ShardUnparsable" ? `shard ${shard} does not parse: ${why}` : `shard ${shard} is not read: ${why}`
})
