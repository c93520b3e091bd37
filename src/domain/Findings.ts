/**
 * The doctor's vocabulary (docs/migrations.md "Doctor"): every finding code, its severity and what it means (the
 * docs/migrations.md table, which test/docs/findingCodes.test.ts holds to `FINDING_CODES`), and the report shape. Pure. Prose that names a bound is built from
 * the constant that sets it, so the two cannot drift.
 */
import { DEFAULT_CONFIG_BUDGET_BYTES } from "./ConfigRedLines.js"
import type { StoppedBy } from "./StoppedBy.js"
import { durationWords } from "./DurationWords.js"
import { DEFAULT_STALE_UNREADABLE_MS } from "./Liveness.js"
import { STALE_STAGING_MS } from "./TenantEntries.js"

export type Severity = "info" | "warning" | "error"

export interface Finding {
  readonly severity: Severity
  readonly code: FindingCode
  readonly path: string
  readonly message: string
  readonly fix?: string
}

export interface DoctorReport {
  readonly findings: ReadonlyArray<Finding>
  /** Entries examined (lstat/readDirectory results), bounded by `maxEntries`. */
  readonly scanned: number
  /** True when the budget stopped the scan before it had looked everywhere. */
  readonly truncated: boolean
  /** What stopped the scan early (its entry budget: `MaxScanEntries`, how much it left, how to raise it); empty when nothing did. */
  readonly stoppedBy: ReadonlyArray<StoppedBy>
  /** The web data root whose extension data was checked (TD1; a symlink at its own path resolved). */
  readonly webDataRoot: string
}

/** Findings per severity. */
export const severityCounts = (findings: ReadonlyArray<{ readonly severity: Severity }>): Record<Severity, number> => {
  const counts: Record<Severity, number> = { error: 0, warning: 0, info: 0 }
  for (const f of findings) counts[f.severity]++
  return counts
}

/** A doctor report in numbers, as `status` shows it. */
export interface DoctorSummary {
  readonly findings: number
  readonly bySeverity: Record<Severity, number>
  readonly truncated: boolean
  /** Some finding is a warning or worse: what makes `pi-storage doctor` exit 1. */
  readonly needsAttention: boolean
}

export const summarizeDoctor = (report: DoctorReport): DoctorSummary => ({
  findings: report.findings.length,
  bySeverity: severityCounts(report.findings),
  truncated: report.truncated,
  needsAttention: report.findings.some((f) => f.severity !== "info")
})

/** Every finding code, its severity and what it means (docs/migrations.md lists them; test/docs/findingCodes.test.ts holds the table to this). */
export const FINDING_CODES = {
  "agent-dir-missing": {
    severity: "info",
    meaning: "The agent directory does not exist yet (nothing to check)."
  },
  "agent-dir-not-directory": {
    severity: "error",
    meaning: "The agent directory (after resolving a symlink at its own path) is not a directory; nothing was scanned."
  },
  "legacy-entry": {
    severity: "warning",
    meaning: "A legacy root entry (trust.json, backups/, resource-profiles/, auto-learn/, tmp/) that " +
      "`Migration.run` / `pi-storage migrate` moves to its canonical place."
  },
  "legacy-sidecar": {
    severity: "warning",
    meaning: "A literal `NAME:Zone.Identifier` sidecar at the root; the migration moves it to " +
      "state/legacy-layout/sidecars/."
  },
  "canonical-kind-mismatch": {
    severity: "warning",
    meaning: "A canonical root name with the wrong kind (a file where a directory belongs or the reverse)."
  },
  "unknown-root-entry": {
    severity: "warning",
    meaning: "A root entry that is neither canonical nor legacy: a possible external writer. Databases " +
      "(*.sqlite, *.db) and logs (*.log) are called out; the doctor never moves or deletes it."
  },
  "atomic-write-leftover": {
    severity: "info",
    meaning: "The library's own temp file of an atomic write of a root file (`.USER.md.tmp-<hex>`): a crash " +
      "came between writing it and renaming it over the file, which is unchanged. Delete it once no write of that file is running."
  },
  "migration-marker": {
    severity: "warning",
    meaning: "A leftover migration marker (.pi-migration.lock, or its reclaim lock .pi-migration.lock.reclaim) whose " +
      "owner is dead or unreadable (info while its owner is alive: a migration is running, or its marker is being reclaimed)."
  },
  "migration-conflicts": {
    severity: "info",
    meaning: "state/migration-conflicts/ (the agent dir's, or a web extension's data/<id>/state/migration-conflicts/) holds " +
      "copies the migration preserved instead of overwriting; review and delete them by hand."
  },
  "work-root-unsafe": {
    severity: "error",
    meaning: "The work root, a category or a tenant directory is a symlink, not a directory, not owned by " +
      "the current user, or writable by group/others; pruning refuses it (WR10)."
  },
  "state-world-writable": {
    severity: "error",
    meaning: "state/ is writable by others: anyone on the machine can change or delete durable state."
  },
  "work-unowned-run": {
    severity: "warning",
    meaning: "A directory under work/<category>/<tenant>/ without a valid .pi-work-run.json (missing, a " +
      "symlink, oversized, invalid, or naming another run). The library never deletes it."
  },
  "work-stray-entry": {
    severity: "warning",
    meaning: "A file or symlink where only run directories belong (in work/, a category or a tenant), or " +
      "an unexpected entry inside a run's .leases/."
  },
  "work-misnamed-directory": {
    severity: "warning",
    meaning: "A category or tenant directory whose name the library never makes (WR2: lowercase a-z, 0-9, " +
      "\".\", \"_\", \"-\"). Nothing under it is a run the library made, and `work prune --all` refuses it (exit 3)."
  },
  "work-dead-lease": {
    severity: "info",
    meaning: "A lease whose holder is dead (pid gone or reused, other boot, or stale remote heartbeat); the " +
      "next prune of the tenant removes it."
  },
  "work-unreadable-lease": {
    severity: "warning",
    meaning: "A lease that cannot be read or decoded (empty, garbage, a directory or symlink): held while " +
      `younger than the stale bound (${durationWords(DEFAULT_STALE_UNREADABLE_MS)}), then dead; the next prune removes it (with its run, or alone).`
  },
  "work-unreadable-marker": {
    severity: "warning",
    meaning: "A tenant prune marker or per-run cleanup marker that is empty or does not decode (its writer " +
      "was killed between create and write): held while younger than the stale bound, then reclaimed by the next prune."
  },
  "work-squatted-marker": {
    severity: "warning",
    meaning: "A directory or symlink where a prune or cleanup marker file belongs: nobody's prune. A symlink " +
      "(never followed) or an empty directory is removed by the next prune once stale; a non-empty directory " +
      "is never deleted and blocks that prune (or that run's cleanup) until it is moved away by hand."
  },
  "work-future-timestamp": {
    severity: "warning",
    meaning: "A remote lease heartbeat beyond its own file's mtime + the remote lease TTL (its host's clock " +
      "runs far ahead), or a manifest createdAt/releasedAt beyond now + the TTL: such a lease is judged by its " +
      "file's age like any other host's, such a manifest stamp does not count for last use (the manifest's " +
      "mtime capped at now does)."
  },
  "work-dead-marker": {
    severity: "info",
    meaning: "A tenant prune marker or per-run cleanup marker left by a dead pruner; the next prune reclaims it."
  },
  "work-unfinished-trash": {
    severity: "info",
    meaning: "Entries in a tenant's .trash/: a prune was interrupted; the next prune finishes deleting them."
  },
  "work-abandoned-staging": {
    severity: "info",
    meaning: "A run in a tenant's .staging/ whose creator died before renaming it into place; the next prune " +
      `removes it once its creator's lease is proven dead or it is ${durationWords(STALE_STAGING_MS)} old.`
  },
  "extension-config-database": {
    severity: "warning",
    meaning: "A database file under an extension's config/ (a config red line): move it to state/ (unique records) " +
      "or cache/ (rebuildable index)."
  },
  "extension-config-log": {
    severity: "warning",
    meaning: "A log under an extension's config/: debug logs belong in cache/, audit logs in state/."
  },
  "extension-config-venv": {
    severity: "warning",
    meaning: "A virtualenv / node_modules tree under an extension's config/: it is rebuildable, put it in cache/."
  },
  "extension-config-large-file": {
    severity: "warning",
    meaning: `A file above the config size budget (${DEFAULT_CONFIG_BUDGET_BYTES / (1024 * 1024)} MiB) under an extension's config/: it drags the config ` +
      "backup down; put it in state/ or cache/."
  },
  "extension-name-invalid": {
    severity: "warning",
    meaning: "A directory under the web data root whose name is no extension id (WR2): state snapshots and the config " +
      "history leave it out, so nothing in it is protected."
  },
  "extension-dir-link": {
    severity: "info",
    meaning: "An extension's directory under the web data root is a symlink (kept on another disk): the tiers and state " +
      "snapshots follow it, the config history does not, and a restore of its state refuses to write through it."
  },
  "extension-outside-tiers": {
    severity: "warning",
    meaning: "An entry in data/<extId>/ other than config/, state/ and cache/ (e.g. written via the removed " +
      "ctx.dataDir)."
  },
  "extension-split-state": {
    severity: "warning",
    meaning: "Both data/<extId>/config/state/ (the old-host fallback) and data/<extId>/state/ exist: writes " +
      "are split; merge them with a merge-ledger migration plan."
  },
  "user-profile-over-budget": {
    severity: "warning",
    meaning: "USER.md is larger than its budget (8 KiB by default); the next profile mutation moves the hot entries into shards."
  },
  "user-profile-index-missing": {
    severity: "warning",
    meaning: "okf-memory/user-preferences/index.okf.md does not parse, or is missing while USER.md is Pi's pointer to it; the next profile mutation rebuilds it."
  },
  "user-profile-unlisted-shard": {
    severity: "info",
    meaning: "Shards in okf-memory/user-preferences/ that the index does not list (a crash, or Pi without an index); the next profile mutation adopts them."
  },
  "user-profile-unparsable-shard": {
    severity: "error",
    meaning: "A profile shard that cannot be read: OKF front matter that does not parse or breaks the decoder's limits (size, depth, YAML aliases), bytes that are not UTF-8, or a file too large; it is never read as empty, never rewritten, and profile edits are refused until it is fixed."
  },
  "user-profile-dead-lock": {
    severity: "info",
    meaning: "The profile lock (state/user-profile/lock) of a dead writer; the next profile mutation reclaims it."
  },
  "user-profile-interrupted-write": {
    severity: "info",
    meaning: "A profile write was interrupted (state/user-profile/pending.json is left); the next profile mutation finishes or undoes it."
  },
  "user-profile-not-utf8": {
    severity: "error",
    meaning: "USER.md or the archive index is not valid UTF-8 (a Latin-1 or binary file); the profile refuses it (UnsafeProfile, reason not-utf8) and never rewrites it."
  },
  "user-profile-unsafe": {
    severity: "error",
    meaning: "USER.md, okf-memory/, the archive directory or a shard is a symlink or not a regular file/directory, or USER.md is over the 4 MiB the library reads; the profile refuses it (UnsafeProfile)."
  },
  "library-path-blocked": {
    severity: "warning",
    meaning: "An entry that is not a directory (a regular file, a symlink to one) on the way to a directory the " +
      "library keeps below a root entry (state/user-profile, the config history): nothing below it can be read or " +
      "written; move it aside and the library makes the directory again."
  },
  "config-change-interrupted": {
    severity: "warning",
    meaning: "A config change (ConfigHistory `change()`) was interrupted: its process died between its start " +
      "and its snapshot. The finding names the change and the last good revision to roll back to."
  },
  "config-history-damaged": {
    severity: "warning",
    meaning: "The config history's record of which web data root `web/` holds (`.git/pi-web-root.json`) cannot " +
      "be read as `{\"version\":1,\"webRoot\":\"<absolute path>\"}`, or its `.git` is not a directory: every config " +
      "snapshot, rollback, diff and log is refused until it is written again naming that root (or `.git` moved away)."
  },
  "state-backup-incomplete": {
    severity: "warning",
    meaning: "An incomplete state snapshot (`.incomplete-<id>/` in the backup root) whose writer is dead; never " +
      "listed, removed by the next `pi-storage backup create`."
  },
  "state-backup-restore-aside": {
    severity: "info",
    meaning: "Live data a state restore moved aside (`state/restore-aside/<time>/`, or `.restore-aside/<time>/` in " +
      "the web data root when it is on another filesystem); the library never deletes it."
  },
  "state-backup-root-unsafe": {
    severity: "error",
    meaning: "The state backup root lies inside a snapshotted tree, or is a symlink, foreign-owned or " +
      "group/world-writable; snapshots refuse it."
  },
  "scan-error": {
    severity: "warning",
    meaning: "An entry could not be read (permission denied, vanished mid-scan …); the scan went on."
  },
  "scan-truncated": {
    severity: "info",
    meaning: "The scan's entry budget stopped it; raise it (`doctor --max-scan-entries`, `doctor({ maxEntries })`) to see everything."
  }
} as const satisfies Record<string, { readonly severity: Severity; readonly meaning: string }>

export type FindingCode = keyof typeof FINDING_CODES

export const findingSeverity = (code: FindingCode): Severity => FINDING_CODES[code].severity
