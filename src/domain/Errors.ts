/**
 * Every typed error the library fails with. Each is an `Error` with a `_tag` and a message that names the
 * offending value, so Promise callers can switch on `_tag` and people can read `message`.
 */
import * as Schema from "effect/Schema"

/**
 * The platform-style reason, kept beside the raw errno so callers can decide on EXDEV, ENOTEMPTY, ELOOP …
 * Only what a port operation met on disk: a program's own judgement (a bad settings file, a removal that made
 * no progress) is a program error of its own below, never a `FileSystemError`. The Memory world's simulated
 * crash is a defect (`SimulatedCrash` in `layers/MemoryWorld.ts`), not a reason.
 */
export const FileSystemErrorReason = Schema.Literal(
  "NotFound",
  "AlreadyExists",
  "PermissionDenied",
  "NotEmpty",
  "CrossDevice",
  "IsSymlink",
  "NotADirectory",
  "IsADirectory",
  "TooLarge",
  "Busy",
  "InvalidData",
  /** `replaceFileIfUnchanged`: the entry is no longer what the caller read (errno ""; `detail` says how). */
  "Changed",
  /** The device (ENOSPC) or the user's disk quota (EDQUOT) is full: nothing is wrong with the data. */
  "NoSpace",
  "Unknown"
)
export type FileSystemErrorReason = typeof FileSystemErrorReason.Type

/**
 * errno → reason, the one table every layer maps with (docs/errors.md "Errors" prints it; a test keeps the two
 * equal). An errno not listed is `Unknown`, its raw code kept in `errno`.
 */
export const ERRNO_REASONS: Readonly<Record<string, FileSystemErrorReason>> = Object.freeze({
  ENOENT: "NotFound",
  EEXIST: "AlreadyExists",
  EACCES: "PermissionDenied",
  EPERM: "PermissionDenied",
  ENOTEMPTY: "NotEmpty",
  EXDEV: "CrossDevice",
  ELOOP: "IsSymlink",
  ENOTDIR: "NotADirectory",
  EISDIR: "IsADirectory",
  EFBIG: "TooLarge",
  EBUSY: "Busy",
  ENOSPC: "NoSpace",
  EDQUOT: "NoSpace"
})

/** errno → reason by `ERRNO_REASONS` (own keys only: "constructor" is no errno). */
export const reasonOfErrno = (errno: string): FileSystemErrorReason =>
  Object.hasOwn(ERRNO_REASONS, errno) ? ERRNO_REASONS[errno]! : "Unknown"

export class FileSystemError extends Schema.TaggedError<FileSystemError>()("FileSystemError", {
  reason: FileSystemErrorReason,
  /** Raw errno code such as "ENOENT", "EXDEV", "ELOOP"; "" when none applies. */
  errno: Schema.String,
  /** The port operation, e.g. "rename". */
  method: Schema.String,
  path: Schema.String,
  detail: Schema.optional(Schema.String),
  /** The platform's own error (a Node `ErrnoException`), when there is one. */
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    const code = this.errno === "" ? this.reason : `${this.errno} (${this.reason})`
    const detail = this.detail ?? REASON_WORDS[this.reason]
    return `${this.method} ${this.path}: ${code}${detail ? `: ${detail}` : ""}`
  }
}

/** What a reason means to a person who cannot tell it from its name alone (a full disk must say so). */
const REASON_WORDS: Partial<Record<FileSystemErrorReason, string>> = {
  NoSpace: "no space left: the disk (or the user's disk quota) is full"
}

/** `writeFileInPlace` met a file whose length is not the data's. */
export const lengthMismatch = (path: string, found: number, wanted: number): FileSystemError =>
  new FileSystemError({
    reason: "InvalidData",
    errno: "",
    method: "writeFileInPlace",
    path,
    detail: `is ${found} bytes, not ${wanted}: an in-place write never changes a file's length`
  }, { disableValidation: true })

export class InvalidSegment extends Schema.TaggedError<InvalidSegment>()("InvalidSegment", {
  /** Which argument: "category", "tenant", "runId", "namespace" … */
  field: Schema.String,
  value: Schema.String,
  /** The WR2 rule broken (see `SegmentRule`). */
  rule: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    // A non-string is named by its detail ("must be a string (got a number: 5)"), not quoted as if it were one.
    return this.rule === "not-a-string"
      ? `invalid ${this.field}: ${this.detail}`
      : `invalid ${this.field} ${JSON.stringify(this.value)}: ${this.detail}`
  }
}

/** Which rule a refused retention policy broke (docs/work-runs.md "Retention": policies are data). */
export const PolicyRule = Schema.Literal(
  "not-an-object",
  "unknown-key",
  "not-a-number",
  "not-finite",
  "not-an-integer",
  "negative",
  "unreadable"
)
export type PolicyRule = typeof PolicyRule.Type

/** A retention policy that is not data the pruner can trust (WR8a); nothing was deleted. */
export class InvalidPolicy extends Schema.TaggedError<InvalidPolicy>()("InvalidPolicy", {
  /** The policy field ("maxBytes" …), the unknown key, or "policy" for the value as a whole. */
  field: Schema.String,
  /** The offending value as text (`NaN`, `-5`, `"2"`, …). */
  value: Schema.String,
  rule: PolicyRule,
  detail: Schema.String
}) {
  override get message(): string {
    return `invalid retention policy: ${this.field} = ${this.value}: ${this.detail}; nothing was deleted`
  }
}

export class InvalidArgument extends Schema.TaggedError<InvalidArgument>()("InvalidArgument", {
  field: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `invalid ${this.field}: ${this.detail}`
  }
}

/** A directory the library did not create (or cannot prove it created) where an owned run was expected. */
export class UnownedRun extends Schema.TaggedError<UnownedRun>()("UnownedRun", {
  path: Schema.String,
  why: Schema.String
}) {
  override get message(): string {
    return `refusing to use ${this.path}: not an owned work run (${this.why})`
  }
}

export class ManifestMismatch extends Schema.TaggedError<ManifestMismatch>()("ManifestMismatch", {
  path: Schema.String,
  expected: Schema.String,
  found: Schema.String
}) {
  override get message(): string {
    return `manifest of ${this.path} names ${this.found}, expected ${this.expected}`
  }
}

export class RunBusy extends Schema.TaggedError<RunBusy>()("RunBusy", {
  path: Schema.String,
  attempts: Schema.Number
}) {
  override get message(): string {
    return `work run ${this.path} is being cleaned up (still busy after ${this.attempts} attempts)`
  }
}

export const UnsafeRootReason = Schema.Literal("symlink", "not-a-directory", "foreign-owner", "group-or-world-writable")
export type UnsafeRootReason = typeof UnsafeRootReason.Type

export class UnsafeRoot extends Schema.TaggedError<UnsafeRoot>()("UnsafeRoot", {
  path: Schema.String,
  reason: UnsafeRootReason,
  detail: Schema.String
}) {
  override get message(): string {
    return `unsafe directory ${this.path} (${this.reason}): ${this.detail}; nothing was deleted`
  }
}

/** An extension's storage view was used after `unload()`. */
export class StorageUnloaded extends Schema.TaggedError<StorageUnloaded>()("StorageUnloaded", {
  namespace: Schema.String
}) {
  override get message(): string {
    return `storage for extension "${this.namespace}" was unloaded; it hands out no new work runs`
  }
}

/** A Promise-facade store used after `close()`. */
export class StorageClosed extends Schema.TaggedError<StorageClosed>()("StorageClosed", {
  agentDir: Schema.String
}) {
  override get message(): string {
    return `the store for ${this.agentDir} was closed; open a new one with openAgentStorage()`
  }
}

/** Reading the removed `ctx.dataDir` (TD2). */
export class DataDirRemoved extends Schema.TaggedError<DataDirRemoved>()("DataDirRemoved", {
  extId: Schema.String
}) {
  override get message(): string {
    return `ctx.dataDir was removed for "${this.extId}": choose a tier — configDir (small user-set settings), ` +
      `stateDir (data that cannot be regenerated) or cacheDir (data that rebuilds itself); see chooseTier()`
  }
}

export class StateMissing extends Schema.TaggedError<StateMissing>()("StateMissing", {
  path: Schema.String
}) {
  override get message(): string {
    return `expected state ${this.path} is missing (state is never rebuilt or defaulted)`
  }
}

/**
 * Bytes that were read but are not what was expected: not JSON (`stage: "json"`), or JSON the schema refuses
 * (`stage: "schema"`). Never a failure on its own: it is the `cause` of the program error that met it
 * (`StateUnreadable`, `ConfigUnreadable`, `SnapshotCorrupt` …), saying that reading again will not help.
 */
export class DecodeFailure extends Schema.TaggedError<DecodeFailure>()("DecodeFailure", {
  stage: Schema.Literal("json", "schema"),
  detail: Schema.String,
  /**
   * What the decoder met: the JSON parser's `SyntaxError`, or the schema's `ParseError` (a Promise caller's
   * decode function that threw is one too, its words in `detail`).
   */
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * A state record that is there but cannot be read as the record asked for. `cause` says which: a
 * `FileSystemError` (the read failed: a link, a directory, EACCES, EIO … — reading again may help) or a
 * `DecodeFailure` (the bytes are not the record: reading again will not).
 */
export class StateUnreadable extends Schema.TaggedError<StateUnreadable>()("StateUnreadable", {
  path: Schema.String,
  detail: Schema.String,
  cause: Schema.Union(FileSystemError, DecodeFailure)
}) {
  override get message(): string {
    return `state ${this.path} is unreadable: ${this.detail}`
  }
}

export class ConfigRedLine extends Schema.TaggedError<ConfigRedLine>()("ConfigRedLine", {
  path: Schema.String,
  rule: Schema.Literal("database", "log", "virtualenv", "size-budget"),
  /** The tier the data belongs in instead. */
  rightTier: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `refusing to write ${this.path} into config/ (${this.rule}): ${this.detail}; put it in ${this.rightTier}/`
  }
}

/** A program the library runs (git) could not be started, was killed by a signal, or printed past its cap. */
export class ProcessFailed extends Schema.TaggedError<ProcessFailed>()("ProcessFailed", {
  command: Schema.String,
  reason: Schema.Literal("Spawn", "Signal", "OutputTooLarge"),
  detail: Schema.String,
  /** The platform's own error when the program could not be started (its `code`: ENOENT, EACCES …). */
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `${this.command}: ${this.detail}`
  }
}

/** A `git` call of the config history failed: the command (without the isolation flags) and git's own words. */
export class GitFailed extends Schema.TaggedError<GitFailed>()("GitFailed", {
  command: Schema.String,
  /** git's exit code; -1 when git did not run to an exit (then `cause` says why). */
  exitCode: Schema.Number,
  stderr: Schema.String,
  /** The `ProcessFailed` when git could not be started, died of a signal or printed past its cap. */
  cause: Schema.optional(ProcessFailed)
}) {
  override get message(): string {
    const said = this.stderr.trim().split("\n").slice(0, 3).join("; ")
    return `${this.command} failed (exit ${this.exitCode})${said === "" ? "" : `: ${said}`}`
  }
}

/** A revision the config history does not have. */
export class UnknownRevision extends Schema.TaggedError<UnknownRevision>()("UnknownRevision", {
  revision: Schema.String
}) {
  override get message(): string {
    return `unknown config history revision ${JSON.stringify(this.revision)}`
  }
}

/**
 * The config history's repository cannot be read as it must be: HEAD or a ref that is neither a branch nor a
 * commit, an object missing, an answer of git that does not parse. Nothing was written.
 */
export class ConfigHistoryCorrupt extends Schema.TaggedError<ConfigHistoryCorrupt>()("ConfigHistoryCorrupt", {
  /** The repository (its git dir). */
  path: Schema.String,
  detail: Schema.String,
  /**
   * What met the damage, when it was an error: the `FileSystemError` of a ref file that cannot be read, or
   * git's own `GitFailed`. Absent when an answer was read but does not parse (`detail` says which).
   */
  cause: Schema.optional(Schema.Union(FileSystemError, GitFailed))
}) {
  override get message(): string {
    return `the config history at ${this.path} is damaged: ${this.detail}; nothing was changed`
  }
}

/** Another process held the config history's writer lock for longer than the wait allowed. */
export class ConfigHistoryBusy extends Schema.TaggedError<ConfigHistoryBusy>()("ConfigHistoryBusy", {
  holder: Schema.String,
  waitedMs: Schema.Number
}) {
  override get message(): string {
    return `the config history is busy (held by ${this.holder}; waited ${this.waitedMs} ms); try again`
  }
}

/**
 * TD5: two tier directories resolve (through a link or a mount) to the same place or one inside the other,
 * found when the tiers are opened or re-checked right before a destructive cache operation. Nothing was changed.
 */
export class TiersOverlap extends Schema.TaggedError<TiersOverlap>()("TiersOverlap", {
  tier: Schema.String,
  path: Schema.String,
  relation: Schema.Literal("same", "inside", "contains"),
  otherTier: Schema.String,
  otherPath: Schema.String,
  /** When it was found: "open", or the cache operation refused ("cache.clear", "cache.ensure"). */
  during: Schema.String
}) {
  override get message(): string {
    const how = this.relation === "same" ? "resolves to the same directory as" : this.relation === "inside" ? "resolves inside" : "resolves around"
    return `${this.tier} dir ${this.path} ${how} the ${this.otherTier} dir ${this.otherPath} (compared by device and inode, links followed); ` +
      `refusing ${this.during === "open" ? "to open these tiers" : this.during}: nothing was changed`
  }
}

/**
 * `config/settings.json` is there but is not a JSON object the config tier can read, or (with `key`) the value
 * stored under one key is not what the caller's schema decodes; either way it is left as it is. `cause` is the
 * `DecodeFailure` (a read that failed is a `FileSystemError` of its own, never this).
 */
export class ConfigUnreadable extends Schema.TaggedError<ConfigUnreadable>()("ConfigUnreadable", {
  path: Schema.String,
  /** The key whose value did not decode; absent when settings.json as a whole is unreadable. */
  key: Schema.optional(Schema.String),
  detail: Schema.String,
  /** As `StateUnreadable`'s: the read failed (a link, a directory, over the budget …) or the bytes are not settings. */
  cause: Schema.Union(FileSystemError, DecodeFailure)
}) {
  override get message(): string {
    const what = this.key === undefined ? `config ${this.path}` : `config key ${JSON.stringify(this.key)} in ${this.path}`
    return `${what} is unreadable: ${this.detail}; it was left as it is`
  }
}

/** Removing a tree the library owns (the cache tier) stopped removing anything: something keeps it there. */
export class RemovalStalled extends Schema.TaggedError<RemovalStalled>()("RemovalStalled", {
  path: Schema.String,
  /** The port's error for the entry that could not go, when the walk said why. */
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `removing ${this.path} made no progress (an entry cannot be removed: a mount point, or one that keeps coming back)`
  }
}

/**
 * A migration plan that cannot be run (docs/migrations.md "Migrations"): not valid YAML/JSON, not the plan Schema, a path
 * that leaves its root, a duplicate id … `at` names where (`steps[2] ("usage").from`; empty for the file as a
 * whole). Refused before anything is read or moved.
 */
export class InvalidMigrationPlan extends Schema.TaggedError<InvalidMigrationPlan>()("InvalidMigrationPlan", {
  /** The plan file as given, or `plan` for a plan passed to the API. */
  source: Schema.String,
  at: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `invalid migration plan ${this.source}: ${this.at === "" ? "" : `${this.at}: `}${this.detail}; nothing was moved`
  }
}

/** Which migration step refused to go on (the entry stays where it was; a rerun retries). */
export const MigrationStep = Schema.Literal("temp-path-taken", "copy-not-verified", "special-file", "changed-since-planned", "refused")
export type MigrationStep = typeof MigrationStep.Type

/** A migration step that could not be carried out safely; the source is left in place. */
export class MigrationStepFailed extends Schema.TaggedError<MigrationStepFailed>()("MigrationStepFailed", {
  step: MigrationStep,
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `migrating ${this.path} (${this.step}): ${this.detail}; it was left in place`
  }
}

/** A tier directory whose place on disk cannot be established (too deep to compare); nothing was changed. */
export class TierUnresolvable extends Schema.TaggedError<TierUnresolvable>()("TierUnresolvable", {
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `cannot tell where ${this.path} is on disk: ${this.detail}; nothing was changed`
  }
}

/**
 * Internal program errors: they never leave a public error channel (a release, heartbeat or prune turns them
 * into its report's problem, keeping the message), so they are not in `StorageError`.
 */

/** A held run is no longer what was acquired (a link, another directory, a hard-linked manifest). */
export class RunChanged extends Schema.TaggedError<RunChanged>()("RunChanged", {
  path: Schema.String,
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return this.detail
  }
}

/** A tenant's `.cleanup/` or `.trash/` cannot be made or is not a directory: nothing is removed through it. */
export class LibraryDirUnusable extends Schema.TaggedError<LibraryDirUnusable>()("LibraryDirUnusable", {
  path: Schema.String,
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return this.detail
  }
}
