/**
 * Warnings: things the library chose to carry on through, which a caller should still hear about (docs/errors.md "Errors").
 * Programs log them with `Effect.logWarning`, the fields as log annotations (`warning` = the tag), so an Effect
 * caller routes them with its own logger; the facade turns such a log entry back into the typed object for
 * `onWarning`, and the CLI prints the message on stderr. Pure: building and reading the annotations.
 */

export type StorageWarning =
  /** The native addon was built before a call this version uses (a stale `build/`): that walk runs portably. */
  | { readonly _tag: "NativeAddonStale"; readonly missing: string; readonly message: string }
  /** A heartbeat could not refresh a held lease: after the remote TTL other hosts judge it stale. */
  | { readonly _tag: "HeartbeatFailed"; readonly leasePath: string; readonly message: string }
  /** The background prune an acquire started was refused (UnsafeRoot) or failed; nothing was deleted by it. */
  | {
    readonly _tag: "BackgroundPruneFailed"
    readonly category: string
    readonly tenant: string
    /** The error's `_tag` (`UnsafeRoot`, `FileSystemError`). */
    readonly reason: string
    readonly message: string
  }
  /** Releasing could not remove this holder's lease file: the run counts as held until the lease is judged dead. */
  | { readonly _tag: "LeaseNotRemoved"; readonly leasePath: string; readonly message: string }
  /** The config history removed a git lock file (`index.lock` …) a dead git left, while holding its own writer lock. */
  | { readonly _tag: "StaleGitLockRemoved"; readonly path: string; readonly message: string }
  /** A config rollback (or a failed change's restore) left a live path alone: a link or a file on its way, or at it. */
  | { readonly _tag: "ConfigPathSkipped"; readonly path: string; readonly reason: string; readonly message: string }
  /** The config history's `info/attributes` held something else (a filter or diff driver could be chosen by it): it is ours again. */
  | { readonly _tag: "ConfigGitAttributesReset"; readonly path: string; readonly message: string }
  /** The config history's stat cache could not be written: only a speed-up, the next snapshot reads the files. */
  | { readonly _tag: "ConfigStatCacheNotWritten"; readonly reason: string; readonly message: string }
  /** The config history's stat cache could not be decoded (garbage, truncated, another program's): no cache, every file is read. */
  | { readonly _tag: "ConfigStatCacheIgnored"; readonly path: string; readonly message: string }
  /** After a failed `change()` the files could not be restored: the crash sentinel stays and names the last good revision. */
  | { readonly _tag: "ConfigChangeNotRestored"; readonly change: string; readonly reason: string; readonly message: string }
  /** A heartbeat found the run directory is not the one acquired (a link or another directory): it wrote nothing. */
  | { readonly _tag: "HeartbeatSkipped"; readonly runDir: string; readonly reason: string; readonly message: string }
  /** A release found the run is not what was acquired: it touched nothing (the lease stays, judged by its age). */
  | { readonly _tag: "ReleaseRefused"; readonly runDir: string; readonly leasePath: string; readonly reason: string; readonly message: string }
  /** A marker (cleanup, prune, lock) was not removed on release: it is no longer ours, or unlink failed. */
  | { readonly _tag: "MarkerLeftInPlace"; readonly path: string; readonly reason: string; readonly message: string }
  /** A library directory (`.staging/`, `.cleanup/`) could not be listed: its leftovers wait for the next prune. */
  | { readonly _tag: "DirectoryNotListed"; readonly path: string; readonly reason: string; readonly message: string }
  /** A failed acquire could not remove its staging directory: it is left for a later prune (abandoned staging). */
  | { readonly _tag: "StagingNotRemoved"; readonly path: string; readonly reason: string; readonly message: string }
  /** A migration journal's temp file (a crash mid-append) could not be settled: the next migration retries. */
  | { readonly _tag: "JournalNotSettled"; readonly path: string; readonly reason: string; readonly message: string }
  /** A user-profile write interrupted by a crash was finished (`completed`) or rolled back (`undone`). */
  | { readonly _tag: "ProfileWriteRecovered"; readonly journal: string; readonly direction: string; readonly message: string }
  /** The user preference index did not parse: it is rebuilt from the shards present. */
  | { readonly _tag: "ProfileIndexRebuilt"; readonly path: string; readonly message: string }
  /** A profile file someone changed after a profile edit read it is kept as they saved it (not replaced, not removed). */
  | { readonly _tag: "ProfileEditKept"; readonly path: string; readonly reason: string; readonly message: string }
  /** Release could not stamp `releasedAt` on the manifest: age falls back to the heartbeat or createdAt (a torn manifest reads as unowned: kept and reported). */
  | { readonly _tag: "ReleaseStampFailed"; readonly runDir: string; readonly reason: string; readonly message: string }
  /** A state-backup cleanup left an incomplete snapshot whose owner looks alive. */
  | { readonly _tag: "SnapshotOwnerAlive"; readonly path: string; readonly holder: string; readonly message: string }
  /** A snapshot whose manifest is unusable is skipped as a link base and in listings (verify reports it). */
  | { readonly _tag: "SnapshotManifestUnusable"; readonly id: string; readonly detail: string; readonly message: string }
  /** A writing operation's usage record (docs/dashboard.md "Dashboard") was not added: the history could not be read, decoded or written. */
  | { readonly _tag: "UsageHistoryNotRecorded"; readonly path: string; readonly message: string }

export type StorageWarningTag = StorageWarning["_tag"]

const FIELDS: { readonly [T in StorageWarningTag]: ReadonlyArray<string> } = {
  NativeAddonStale: ["missing"],
  HeartbeatFailed: ["leasePath"],
  BackgroundPruneFailed: ["category", "tenant", "reason"],
  LeaseNotRemoved: ["leasePath"],
  StaleGitLockRemoved: ["path"],
  ConfigPathSkipped: ["path", "reason"],
  ConfigGitAttributesReset: ["path"],
  ConfigStatCacheNotWritten: ["reason"],
  ConfigStatCacheIgnored: ["path"],
  ConfigChangeNotRestored: ["change", "reason"],
  HeartbeatSkipped: ["runDir", "reason"],
  ReleaseRefused: ["runDir", "leasePath", "reason"],
  MarkerLeftInPlace: ["path", "reason"],
  DirectoryNotListed: ["path", "reason"],
  StagingNotRemoved: ["path", "reason"],
  JournalNotSettled: ["path", "reason"],
  ProfileWriteRecovered: ["journal", "direction"],
  ProfileIndexRebuilt: ["path"],
  ProfileEditKept: ["path", "reason"],
  ReleaseStampFailed: ["runDir", "reason"],
  SnapshotOwnerAlive: ["path", "holder"],
  SnapshotManifestUnusable: ["id", "detail"],
  UsageHistoryNotRecorded: ["path"]
}

/** The annotation that marks a log entry as one of ours. */
export const WARNING_ANNOTATION = "warning"

/** The log annotations for a warning: `warning` (the tag) and its fields, all strings. */
export const warningAnnotations = (w: StorageWarning): Record<string, string> => {
  const out: Record<string, string> = { [WARNING_ANNOTATION]: w._tag }
  for (const key of FIELDS[w._tag]) out[key] = String((w as unknown as Record<string, unknown>)[key])
  return out
}

/** The typed warning back from a log entry's message and annotations; `undefined` when it is not one of ours. */
export const warningFromLog = (message: string, annotations: ReadonlyMap<string, unknown>): StorageWarning | undefined => {
  const tag = annotations.get(WARNING_ANNOTATION)
  if (typeof tag !== "string" || !Object.hasOwn(FIELDS, tag)) return undefined
  const fields: Record<string, string> = {}
  for (const key of FIELDS[tag as StorageWarningTag]) {
    const value = annotations.get(key)
    if (typeof value !== "string") return undefined
    fields[key] = value
  }
  return { _tag: tag, ...fields, message } as StorageWarning
}
