/**
 * Pure rules of the migrations (SPEC MG1, MG2) and of the doctor (DR1, DR2): which root entries move where,
 * where a collision is preserved, how split ledgers and trust files merge, the journal record format, and the
 * doctor's finding codes. No I/O: the programs in src/services/Migration.ts and src/services/Doctor.ts do that.
 */
import * as NodePath from "node:path"
import * as Schema from "effect/Schema"
import {
  CANONICAL_ROOT_ENTRIES,
  type CanonicalEntry,
  LEGACY_ROOT_ENTRIES,
  type LegacyEntry,
  sidecarDestination,
  ZONE_IDENTIFIER_SUFFIX
} from "./AgentPaths.js"
import { isDatabaseFileName, isLogFileName } from "./ConfigRedLines.js"

// ---------------------------------------------------------------------------------------------------------
// The exclusive migration marker
// ---------------------------------------------------------------------------------------------------------

/**
 * One marker serialises every migration of an agent dir (the layout migration and toolkit plans). It lives at
 * the agent dir root, not under `state/`, so that its place never depends on whether `state/` exists yet (two
 * processes must always race for the same path). It is only created when there is something to migrate.
 */
export const MIGRATION_MARKER = ".pi-migration.lock"
/** A dead owner's marker is renamed to `<marker>.reclaim-<pid>-<n>` before removal; leftovers start with this. */
export const MIGRATION_MARKER_RECLAIM_PREFIX = `${MIGRATION_MARKER}.reclaim-`
export const MIGRATION_MARKER_PURPOSE = "migrate-agent-dir"

/** Cross-device copies land at this temp name beside the destination, then are renamed into place. */
export const COPY_TEMP_SUFFIX = ".pi-migrate-partial"
export const copyTempName = (name: string): string => `.${name}${COPY_TEMP_SUFFIX}`

// ---------------------------------------------------------------------------------------------------------
// MG1: the layout plan
// ---------------------------------------------------------------------------------------------------------

/** One top-level legacy root entry and where it goes (paths relative to the agent dir, as segments). */
export interface LayoutUnit {
  readonly name: string
  readonly kind: "legacy" | "sidecar"
  readonly destination: ReadonlyArray<string>
  /** Where a colliding entry is preserved: `state/migration-conflicts/<legacy-root>` (+ relative path). */
  readonly conflictBase: ReadonlyArray<string>
  /** Only `trust.json` merges as a JSON object when both copies exist. */
  readonly mergeJson: boolean
}

export const MIGRATION_CONFLICTS: ReadonlyArray<string> = ["state", "migration-conflicts"]
export const MIGRATIONS_JOURNAL_DIR: ReadonlyArray<string> = ["state", "migrations"]

export const isZoneIdentifierSidecar = (name: string): boolean =>
  name.endsWith(ZONE_IDENTIFIER_SUFFIX) && name.length > ZONE_IDENTIFIER_SUFFIX.length

const legacyByName = new Map<string, LegacyEntry>(LEGACY_ROOT_ENTRIES.map((e) => [e.name, e]))

/** The JSON-merge rule applies to legacy file entries whose name ends in `.json` (today: `trust.json`). */
const mergesAsJson = (entry: LegacyEntry): boolean => entry.kind === "file" && entry.name.endsWith(".json")

/** Classify one root name for the layout migration; `undefined` when the migration leaves it alone. */
export const layoutUnit = (name: string): LayoutUnit | undefined => {
  const legacy = legacyByName.get(name)
  if (legacy !== undefined) {
    return {
      name,
      kind: "legacy",
      destination: legacy.destination,
      conflictBase: [...MIGRATION_CONFLICTS, name],
      mergeJson: mergesAsJson(legacy)
    }
  }
  if (isZoneIdentifierSidecar(name)) {
    const destination = sidecarDestination(name)
    // The colon is what we migrate away from, so the conflict copy uses the destination name too.
    return {
      name,
      kind: "sidecar",
      destination,
      conflictBase: [...MIGRATION_CONFLICTS, "sidecars", destination[destination.length - 1]!],
      mergeJson: false
    }
  }
  return undefined
}

/** The layout units among root names, in name order (deterministic, so a partial call resumes in order). */
export const layoutUnits = (rootNames: ReadonlyArray<string>): ReadonlyArray<LayoutUnit> =>
  [...rootNames].sort().flatMap((name) => {
    const unit = layoutUnit(name)
    return unit === undefined ? [] : [unit]
  })

/** The k-th candidate for a preserved conflict: the base path itself, then `<base>.1`, `<base>.2`, … */
export const conflictCandidate = (base: string, k: number): string => (k === 0 ? base : `${base}.${k}`)

/** Relative display path (always `/`-separated) of an absolute path under the agent dir. */
export const displayPath = (agentDir: string, path: string): string => {
  const rel = NodePath.relative(agentDir, path)
  return rel === "" ? "." : rel.split(NodePath.sep).join("/")
}

export interface LayoutReport {
  /** Legacy entries (relative to the agent dir) now at their canonical place. */
  readonly moved: ReadonlyArray<string>
  /** Legacy entries merged into an existing destination (entry by entry, or a JSON object merge). */
  readonly merged: ReadonlyArray<string>
  /** Colliding entries preserved under `state/migration-conflicts/` (relative paths). */
  readonly conflicts: ReadonlyArray<{ readonly from: string; readonly to: string }>
  /** True when the entry budget cut the call short; call again to continue. */
  readonly partial: boolean
  readonly errors: ReadonlyArray<LayoutProblem>
}

/**
 * A layout migration's problem, tagged beside its words (fields only added): the agent dir could not be read
 * (`AgentDirUnreadable`), another live migration holds the marker (`MigrationBusy`), or one unit failed
 * (`UnitFailed`; nothing of it was lost, a rerun retries).
 */
export interface LayoutProblem {
  readonly _tag: "AgentDirUnreadable" | "MigrationBusy" | "UnitFailed"
  readonly path: string
  readonly message: string
}

export const emptyLayoutReport: LayoutReport = { moved: [], merged: [], conflicts: [], partial: false, errors: [] }

// ---------------------------------------------------------------------------------------------------------
// JSON merge (trust.json): canonical values win; report which legacy values lost
// ---------------------------------------------------------------------------------------------------------

type JsonObject = { readonly [key: string]: unknown }

const isJsonObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

/** Structural equality of JSON values (key order ignored). */
export const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]))
  if (isJsonObject(a) && isJsonObject(b)) {
    const ka = Object.keys(a)
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]))
  }
  return false
}

const utf8 = new TextDecoder("utf-8", { fatal: true })
const utf8Encoder = new TextEncoder()

const parseJsonObject = (bytes: Uint8Array): JsonObject | undefined => {
  try {
    const value: unknown = JSON.parse(utf8.decode(bytes))
    return isJsonObject(value) ? value : undefined
  } catch {
    return undefined
  }
}

export type JsonMerge =
  | { readonly _tag: "Unparsable"; readonly which: "legacy" | "canonical" }
  | {
    readonly _tag: "Merged"
    readonly merged: JsonObject
    /** True when the canonical object already equals the merge (nothing to write). */
    readonly canonicalUnchanged: boolean
    /** Legacy keys whose value differs from the canonical one (the legacy copy must then be preserved). */
    readonly overridden: ReadonlyArray<string>
  }

/** Merge two JSON objects, canonical values winning; both inputs raw bytes. */
export const mergeJsonObjects = (legacy: Uint8Array, canonical: Uint8Array): JsonMerge => {
  const l = parseJsonObject(legacy)
  if (l === undefined) return { _tag: "Unparsable", which: "legacy" }
  const c = parseJsonObject(canonical)
  if (c === undefined) return { _tag: "Unparsable", which: "canonical" }
  const merged: Record<string, unknown> = { ...l, ...c }
  const overridden = Object.keys(l).filter((k) => Object.hasOwn(c, k) && !jsonEqual(l[k], c[k]))
  return { _tag: "Merged", merged, canonicalUnchanged: jsonEqual(merged, c), overridden }
}

export const encodeJsonObject = (value: JsonObject): Uint8Array =>
  utf8Encoder.encode(JSON.stringify(value, null, 2) + "\n")

// ---------------------------------------------------------------------------------------------------------
// MG2: plans, ledger merge, journal
// ---------------------------------------------------------------------------------------------------------

export interface MoveEntry {
  readonly id: string
  /** Absolute, or relative to the agent dir. */
  readonly from: string
  readonly to: string
  readonly kind: "move"
}

export type LedgerFormat = "jsonl" | "json-array"

export interface MergeLedgerEntry {
  readonly id: string
  readonly from: string
  readonly to: string
  readonly kind: "merge-ledger"
  readonly format: LedgerFormat
  /** Identity of a row: rows with the same key are the same fact. */
  readonly key: (row: unknown) => string
  /** Which side's row is kept when both sides hold a row with the same key. */
  readonly winner: "from" | "to"
}

export type PlanEntry = MoveEntry | MergeLedgerEntry

export interface MigrationPlan {
  /** A portable segment (it names the journal `state/migrations/<id>.jsonl`). */
  readonly id: string
  readonly entries: ReadonlyArray<PlanEntry>
}

export const ledgerParse = (
  format: LedgerFormat,
  bytes: Uint8Array
): { readonly ok: true; readonly rows: ReadonlyArray<unknown> } | { readonly ok: false; readonly why: string } => {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return { ok: false, why: "not valid UTF-8" }
  }
  if (format === "json-array") {
    if (text.trim() === "") return { ok: true, rows: [] }
    try {
      const value: unknown = JSON.parse(text)
      return Array.isArray(value) ? { ok: true, rows: value } : { ok: false, why: "not a JSON array" }
    } catch (e) {
      return { ok: false, why: `not valid JSON (${e instanceof Error ? e.message : String(e)})` }
    }
  }
  const rows: Array<unknown> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === "") continue
    try {
      rows.push(JSON.parse(line))
    } catch {
      // A torn last line is still refused: the merge must not silently drop a row.
      return { ok: false, why: `line ${i + 1} is not valid JSON` }
    }
  }
  return { ok: true, rows }
}

export const ledgerSerialize = (format: LedgerFormat, rows: ReadonlyArray<unknown>): Uint8Array =>
  utf8Encoder.encode(
    format === "jsonl"
      ? rows.map((r) => JSON.stringify(r) + "\n").join("")
      : JSON.stringify(rows, null, 2) + "\n"
  )

export interface LedgerMerge {
  readonly rows: ReadonlyArray<unknown>
  /** Keys only `from` had (new rows taken over). */
  readonly added: number
  /** Same-key rows where `from` won and differed. */
  readonly replaced: number
  /** True when every `from` row appears (structurally equal) in the result: `from` can be removed. */
  readonly fromFullyKept: boolean
}

/**
 * Merge split writes by key (seed 003 §5.3): `to`'s rows keep their order, rows only `from` has follow in
 * `from`'s order; a key seen twice in one file keeps its latest row; for a key on both sides the declared
 * winner's row is kept. Never "the newer file wins". Idempotent: merging `from` again changes nothing.
 */
export const mergeLedgerRows = (input: {
  readonly to: ReadonlyArray<unknown>
  readonly from: ReadonlyArray<unknown>
  readonly key: (row: unknown) => string
  readonly winner: "from" | "to"
}): LedgerMerge => {
  const merged = new Map<string, unknown>()
  for (const row of input.to) merged.set(input.key(row), row)
  const fromRows = new Map<string, unknown>()
  for (const row of input.from) fromRows.set(input.key(row), row)
  let added = 0
  let replaced = 0
  for (const [k, row] of fromRows) {
    if (!merged.has(k)) {
      merged.set(k, row)
      added++
    } else if (input.winner === "from" && !jsonEqual(merged.get(k), row)) {
      merged.set(k, row)
      replaced++
    }
  }
  const rows = [...merged.values()]
  const fromFullyKept = input.from.every((row) => jsonEqual(merged.get(input.key(row)), row))
  return { rows, added, replaced, fromFullyKept }
}

export const EntryOutcome = Schema.Literal("moved", "already-done", "merged", "conflict-preserved", "failed")
export type EntryOutcome = typeof EntryOutcome.Type

/** One line of `state/migrations/<plan-id>.jsonl`. */
export const JournalRecord = Schema.Struct({
  version: Schema.Literal(1),
  planId: Schema.String,
  entryId: Schema.String,
  kind: Schema.Literal("move", "merge-ledger"),
  outcome: EntryOutcome,
  from: Schema.String,
  to: Schema.String,
  /** Rows in the merged ledger (merge-ledger). */
  rows: Schema.optional(Schema.Number),
  /** Rows taken over from `from` (added + replaced). */
  mergedRows: Schema.optional(Schema.Number),
  /** Where colliding data was preserved. */
  conflicts: Schema.optional(Schema.Array(Schema.String)),
  reason: Schema.optional(Schema.String),
  at: Schema.Number
})
export type JournalRecord = typeof JournalRecord.Type

export interface EntryReport {
  readonly id: string
  readonly kind: "move" | "merge-ledger"
  readonly outcome: EntryOutcome
  readonly from: string
  readonly to: string
  readonly rows?: number
  readonly mergedRows?: number
  readonly conflicts?: ReadonlyArray<string>
  readonly reason?: string
}

export interface PlanReport {
  readonly planId: string
  readonly journal: string
  readonly entries: ReadonlyArray<EntryReport>
  /** True when any entry failed (the CLI exits non-zero). */
  readonly failed: boolean
}

/** Parse a journal file; unparsable lines are skipped (and counted) rather than failing the migration. */
export const parseJournal = (bytes: Uint8Array): { readonly records: ReadonlyArray<JournalRecord>; readonly bad: number } => {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return { records: [], bad: 1 }
  }
  const records: Array<JournalRecord> = []
  let bad = 0
  const decode = Schema.decodeUnknownEither(JournalRecord)
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    let json: unknown
    try {
      json = JSON.parse(line)
    } catch {
      bad++
      continue
    }
    const r = decode(json, { onExcessProperty: "ignore" })
    if (r._tag === "Right") records.push(r.right)
    else bad++
  }
  return { records, bad }
}

export const encodeJournalLine = (record: JournalRecord): string => JSON.stringify(record) + "\n"

// ---------------------------------------------------------------------------------------------------------
// DR1, DR2: the doctor's classification rules and finding codes
// ---------------------------------------------------------------------------------------------------------

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
}

/** Every finding code, its severity and what it means (the README table is generated from this). */
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
      "`migrateAgentDirLayout` / `pi-storage migrate` moves to its canonical place."
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
  "migration-marker": {
    severity: "warning",
    meaning: "A leftover migration marker (.pi-migration.lock or a .reclaim- leftover) whose owner is dead " +
      "or unreadable (info while its owner is alive: a migration is running)."
  },
  "migration-conflicts": {
    severity: "info",
    meaning: "state/migration-conflicts/ holds copies the migration preserved instead of overwriting; review " +
      "and delete them by hand."
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
  "work-dead-lease": {
    severity: "info",
    meaning: "A lease whose holder is dead (pid gone or reused, other boot, or stale remote heartbeat); the " +
      "next prune of the tenant removes it."
  },
  "work-unreadable-lease": {
    severity: "warning",
    meaning: "A lease that cannot be read or decoded (empty, garbage, a directory or symlink): held while " +
      "younger than the stale bound (10 minutes), then dead; the next prune removes it (with its run, or alone)."
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
    meaning: "A remote lease heartbeat or a manifest createdAt/releasedAt beyond now + the remote lease TTL: " +
      "such a lease is judged by the stale bound on its file's mtime, such a manifest stamp does not count " +
      "for last use (the manifest's mtime capped at now does)."
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
    meaning: "A run in a tenant's .staging/ whose creator died before renaming it into place; the next prune removes it."
  },
  "extension-config-database": {
    severity: "warning",
    meaning: "A database file under an extension's config/ (seed 003 §6): move it to state/ (unique records) " +
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
    meaning: "A file above the config size budget (1 MiB) under an extension's config/: it drags the config " +
      "backup down; put it in state/ or cache/."
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
    meaning: "A profile shard whose OKF front matter does not parse; it is never read as empty, and profile edits are refused until it is fixed."
  },
  "user-profile-dead-lock": {
    severity: "info",
    meaning: "The profile lock (state/user-profile/lock) of a dead writer; the next profile mutation reclaims it."
  },
  "user-profile-interrupted-write": {
    severity: "info",
    meaning: "A profile write was interrupted (state/user-profile/pending.json is left); the next profile mutation finishes or undoes it."
  },
  "user-profile-unsafe": {
    severity: "error",
    meaning: "USER.md, the archive directory or a shard is a symlink or not a regular file/directory; the profile refuses it (UnsafeProfile)."
  },
  "config-change-interrupted": {
    severity: "warning",
    meaning: "A config change (ConfigHistory `change()`) was interrupted: its process died between its start " +
      "and its snapshot. The finding names the change and the last good revision to roll back to."
  },
  "state-backup-incomplete": {
    severity: "warning",
    meaning: "An incomplete state snapshot (`.incomplete-<id>/` in the backup root) whose writer is dead; never " +
      "listed, removed by the next `pi-storage backup create`."
  },
  "state-backup-restore-aside": {
    severity: "info",
    meaning: "Live data a state restore moved aside (`state/restore-aside/<time>/`); the library never deletes it."
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
    meaning: "The entry budget (maxEntries) stopped the scan; raise it to see everything."
  }
} as const satisfies Record<string, { readonly severity: Severity; readonly meaning: string }>

export type FindingCode = keyof typeof FINDING_CODES

export const findingSeverity = (code: FindingCode): Severity => FINDING_CODES[code].severity

export type RootClassification =
  | { readonly _tag: "Canonical"; readonly entry: CanonicalEntry }
  | { readonly _tag: "Legacy"; readonly unit: LayoutUnit }
  | { readonly _tag: "MigrationMarker" }
  | { readonly _tag: "Unknown"; readonly hint: UnknownHint }

export type UnknownHint = "database" | "log" | "temp" | "other"

const TEMP_RE = /(\.tmp|\.temp|\.swp|~|\.part)$/i

export const fileHint = (name: string): UnknownHint =>
  isDatabaseFileName(name) ? "database" : isLogFileName(name) ? "log" : TEMP_RE.test(name) ? "temp" : "other"

/** DR1: how the doctor sees one root entry. Reads the canonical and legacy tables; lists no names itself. */
export const classifyRootEntry = (name: string): RootClassification => {
  const canonical = CANONICAL_ROOT_ENTRIES.find((e) => e.name === name)
  if (canonical !== undefined) return { _tag: "Canonical", entry: canonical }
  const unit = layoutUnit(name)
  if (unit !== undefined) return { _tag: "Legacy", unit }
  if (name === MIGRATION_MARKER || name.startsWith(MIGRATION_MARKER_RECLAIM_PREFIX)) return { _tag: "MigrationMarker" }
  return { _tag: "Unknown", hint: fileHint(name) }
}
