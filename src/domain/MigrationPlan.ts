/**
 * Pure rules of the migrations (README "Migrations"): which root entries move where, where a collision is preserved,
 * how split ledgers and trust files merge, the journal record format. No I/O: src/services/Migration.ts does
 * that. (The doctor's finding codes are in Findings.ts, the root-entry classifier in RootEntries.ts.)
 */
import * as NodePath from "node:path"
import * as Schema from "effect/Schema"
import {
  LEGACY_ROOT_ENTRIES,
  type LegacyEntry,
  sidecarDestination,
  ZONE_IDENTIFIER_SUFFIX
} from "./AgentPaths.js"

// ---------------------------------------------------------------------------------------------------------
// The exclusive migration marker
// ---------------------------------------------------------------------------------------------------------

/**
 * One marker serialises every migration of an agent dir (the layout migration and toolkit plans). It lives at
 * the agent dir root, not under `state/`, so that its place never depends on whether `state/` exists yet (two
 * processes must always race for the same path). It is only created when there is something to migrate.
 */
export const MIGRATION_MARKER = ".pi-migration.lock"
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

/** The layout migration's decisions, plan and report: src/domain/LayoutMigration.ts. */

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
 * Merge split writes by key (README: the `merge-ledger` plan entry): `to`'s rows keep their order, rows only `from` has follow in
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
