/**
 * Pure rules of the migrations (docs/migrations.md "Migrations"): which root entries move where, where a collision is preserved,
 * how split ledgers and trust files merge, the journal record format. No I/O: src/services/Migration.ts does
 * that. (The doctor's finding codes are in Findings.ts, the root-entry classifier in RootEntries.ts.)
 */
import * as NodePath from "node:path"
import * as Schema from "effect/Schema"
import { type LayoutAction, MIGRATION_CONFLICTS } from "./LayoutMigration.js"
import { decodePlanPath, type PlanPath, pathsNest } from "./PlanPath.js"
import { segmentViolation } from "./Segment.js"
import { countOf } from "./Count.js"
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

export const MIGRATIONS_JOURNAL_DIR: ReadonlyArray<string> = ["state", "migrations"]

/**
 * The migration's own directories, relative to an entry's root: the root's conflicts directory (below its state
 * tier, which for an agent extension's root is the root itself) and, in the agent dir, the journal's.
 */
const libraryDirsOf = (root: PlanRoot): ReadonlyArray<{ readonly dir: ReadonlyArray<string>; readonly what: string }> =>
  root === "agent"
    ? [{ dir: MIGRATION_CONFLICTS, what: "what collides" }, { dir: MIGRATIONS_JOURNAL_DIR, what: "its journal" }]
    : "web" in root
    ? [{ dir: MIGRATION_CONFLICTS, what: "what collides" }]
    : [{ dir: MIGRATION_CONFLICTS.slice(1), what: "what collides" }]

/** Whether a path of these names is `dir` or above it. */
const holds = (segments: ReadonlyArray<string>, dir: ReadonlyArray<string>): boolean =>
  segments.length <= dir.length && segments.every((name, i) => name === dir[i])

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

/** What follows an entry id in the names its conflict copies take: a candidate of its base or of its ledger's replaced copy. */
const CONFLICT_SUFFIX = /^(\.replaced)?(\.[1-9][0-9]*)?$/

/**
 * The entry of `entryIds` (a plan's, sharing one conflicts directory) whose conflict copy a name in that
 * directory is: `<id>`, `<id>.<k>`, `<id>.replaced`, `<id>.replaced.<k>` (`conflictCandidate`). Where two ids could
 * have made it (`a` and `a.1`), the longer one; `undefined`: no entry's.
 */
export const conflictOwner = (name: string, entryIds: ReadonlyArray<string>): string | undefined => {
  let owner: string | undefined
  for (const id of entryIds) {
    if (name.startsWith(id) && CONFLICT_SUFFIX.test(name.slice(id.length)) && (owner === undefined || id.length > owner.length)) owner = id
  }
  return owner
}

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

/**
 * The directory a step's paths are relative to (docs/migrations.md "Migrations"): the agent dir; a web-host extension's
 * data directory `<web data root>/<extId>/` (its `config/`, `state/`, `cache/`); or an agent-side
 * extension's state directory `state/extensions/<ns>/`. A step never reaches outside its root.
 */
export type PlanRoot = "agent" | { readonly web: string } | { readonly agentExtension: string }

export interface MoveEntry {
  readonly id: string
  /** Relative to the entry's root: normalised, no `..`, never absolute (`PlanPath.ts`). */
  readonly from: string
  readonly to: string
  readonly kind: "move"
  /** Default: the plan's root, else the agent dir. */
  readonly root?: PlanRoot
}

export type LedgerFormat = "jsonl" | "json-array"

export interface MergeLedgerEntry {
  readonly id: string
  readonly from: string
  readonly to: string
  readonly kind: "merge-ledger"
  readonly root?: PlanRoot
  readonly format: LedgerFormat
  /**
   * Identity of a row: rows with the same key are the same fact. `undefined` means the row has no key: the
   * entry is refused (rows without a key cannot be merged without losing one of them).
   */
  readonly key: (row: unknown) => string | undefined
  /** Which side's row is kept when both sides hold a row with the same key. */
  readonly winner: "from" | "to"
}

export type PlanEntry = MoveEntry | MergeLedgerEntry

export interface MigrationPlan {
  /** A portable segment (it names the journal `state/migrations/<id>.jsonl`). */
  readonly id: string
  /** The root of every entry that names none (default: the agent dir). */
  readonly root?: PlanRoot
  readonly entries: ReadonlyArray<PlanEntry>
}

/** How a root is written in a plan file and in reports: `agent`, `web:<extId>`, `agent-extension:<ns>`. */
export const planRootText = (root: PlanRoot): string =>
  root === "agent" ? "agent" : "web" in root ? `web:${root.web}` : `agent-extension:${root.agentExtension}`

/**
 * The key of a plan file's `merge-ledger` step: the named fields of a row, which must be a JSON object whose
 * every key field holds a string, a finite number or a boolean (`1` and `"1"` stay different keys).
 */
export const keyOfFields = (fields: ReadonlyArray<string>) => (row: unknown): string | undefined => {
  if (typeof row !== "object" || row === null || Array.isArray(row)) return undefined
  const values: Array<unknown> = []
  for (const field of fields) {
    const value: unknown = Object.hasOwn(row, field) ? (row as Record<string, unknown>)[field] : undefined
    const scalar = typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))
    if (!scalar) return undefined
    values.push(value)
  }
  return JSON.stringify(values)
}

/** The first row (1-based, counting rows, not blank lines) whose key cannot be taken, or `undefined`. */
export const keylessRow = (rows: ReadonlyArray<unknown>, key: (row: unknown) => string | undefined): number | undefined => {
  const i = rows.findIndex((row) => key(row) === undefined)
  return i === -1 ? undefined : i + 1
}

/** Where a plan is wrong: the entry (by index, and id when it has one), the field, and why. */
export interface PlanProblem {
  readonly index?: number
  readonly id?: string
  readonly field: string
  readonly detail: string
}

const rootProblem = (root: unknown): string | undefined => {
  if (root === "agent") return undefined
  if (typeof root === "object" && root !== null && !Array.isArray(root)) {
    const keys = Object.keys(root)
    if (keys.length === 1 && keys[0] === "web") {
      const v = segmentViolation((root as { web: unknown }).web)
      return v === null ? undefined : `the extension id ${v.message}`
    }
    if (keys.length === 1 && keys[0] === "agentExtension") {
      const v = segmentViolation((root as { agentExtension: unknown }).agentExtension)
      return v === null ? undefined : `the extension namespace ${v.message}`
    }
  }
  return "must be \"agent\", { web: <extId> } or { agentExtension: <namespace> }"
}

/**
 * The one check of a plan before anything is read (the plan file's decoder and `Migration.runPlan` both run
 * it): portable ids, no id twice, valid roots, and every path decoded by `decodePlanPath`, `from` and `to`
 * never one inside the other. The first problem, or `undefined`.
 */
export const planProblem = (plan: MigrationPlan): PlanProblem | undefined => {
  const idViolation = segmentViolation(plan.id)
  if (idViolation !== null) return { field: "id", detail: `${JSON.stringify(plan.id)} ${idViolation.message}` }
  if (plan.root !== undefined) {
    const bad = rootProblem(plan.root)
    if (bad !== undefined) return { field: "root", detail: bad }
  }
  const seen = new Set<string>()
  /** Where earlier entries move from, as one tree (`rootPlace`): a later entry must not put data back there. */
  const sources: Array<{ readonly index: number; readonly id: string; readonly place: PlanPath }> = []
  for (let index = 0; index < plan.entries.length; index++) {
    const entry = plan.entries[index]!
    const at = (field: string, detail: string): PlanProblem =>
      typeof entry.id === "string" ? { index, id: entry.id, field, detail } : { index, field, detail }
    const v = segmentViolation(entry.id)
    if (v !== null) return at("id", `${JSON.stringify(entry.id)} ${v.message}`)
    if (seen.has(entry.id)) return at("id", `duplicate entry id ${JSON.stringify(entry.id)}`)
    // An entry keeps its conflict copies under its id (`<id>`, `<id>.1`, `<id>.replaced` …): an id that is such a
    // name of another would make one entry's copy look like the other's.
    const shadowed = [...seen].find((other) => conflictOwner(entry.id, [other]) === other || conflictOwner(other, [entry.id]) === entry.id)
    if (shadowed !== undefined) {
      return at("id", `${JSON.stringify(entry.id)} and ${JSON.stringify(shadowed)}: one is a name the other keeps its conflict copies under (<id>.<n>, <id>.replaced); choose ids that do not extend one another so`)
    }
    seen.add(entry.id)
    const kind: unknown = entry.kind
    if (kind !== "move" && kind !== "merge-ledger") return at("kind", `must be "move" or "merge-ledger" (got ${JSON.stringify(kind)})`)
    if (entry.root !== undefined) {
      const bad = rootProblem(entry.root)
      if (bad !== undefined) return at("root", bad)
    }
    const paths: Array<PlanPath> = []
    for (const field of ["from", "to"] as const) {
      const text: unknown = entry[field]
      if (typeof text !== "string") return at(field, "must be a string")
      const decoded = decodePlanPath(text)
      if (!decoded.ok) return at(field, `${JSON.stringify(text)} ${decoded.why}`)
      paths.push(decoded.value)
    }
    if (pathsNest(paths[0]!, paths[1]!)) {
      return at("to", `${JSON.stringify(entry.to)} and from ${JSON.stringify(entry.from)} are the same or one lies inside the other`)
    }
    // The plan keeps what collides under the root's state/migration-conflicts/ (and, in the agent dir, its journal
    // under state/migrations/): a `from` holding either would carry them away with it, so the run failed midway
    // and a rerun moved again.
    const library = libraryDirsOf(entryRoot(plan, entry)).find(({ dir }) => holds(paths[0]!.segments, dir))
    if (library !== undefined) {
      return at("from", `${JSON.stringify(entry.from)} holds ${library.dir.join("/")}/, where the migration keeps ${library.what}: move the entries inside it one by one`)
    }
    // Each entry is decided by whether its source is there: an entry that fills an earlier entry's source
    // would make a rerun move that data again (the plan must move data forward only).
    const root = entryRoot(plan, entry)
    const [fromPlace, toPlace] = [rootPlace(root, paths[0]!), rootPlace(root, paths[1]!)]
    const refilled = sources.find((s) => pathsNest(s.place, toPlace))
    if (refilled !== undefined) {
      return at(
        "to",
        `${JSON.stringify(entry.to)} is where an earlier entry (${refilled.index}, ${JSON.stringify(refilled.id)}) moves from or below it: ` +
          "a rerun would move this entry's data again; order the entries so data only moves forward"
      )
    }
    sources.push({ index, id: entry.id, place: fromPlace })
    if (entry.kind === "merge-ledger") {
      if (entry.format !== "jsonl" && entry.format !== "json-array") return at("format", `must be "jsonl" or "json-array" (got ${JSON.stringify(entry.format)})`)
      if (entry.winner !== "from" && entry.winner !== "to") return at("winner", `must be "from" or "to" (got ${JSON.stringify(entry.winner)})`)
      if (typeof entry.key !== "function") return at("key", "must be a function of a row")
    }
  }
  return undefined
}

/**
 * A path's place in one tree of every root, so entries under different roots compare: an agent-side
 * extension's root lies inside the agent dir, web extensions beside each other.
 */
const rootPlace = (root: PlanRoot, path: PlanPath): PlanPath => {
  const base = root === "agent" ? ["agent"] : "web" in root ? ["web", root.web] : ["agent", "state", "extensions", root.agentExtension]
  const segments = [...base, ...path.segments]
  return { path: segments.join("/"), segments }
}

/** The root an entry's paths are relative to: its own, else the plan's, else the agent dir. */
export const entryRoot = (plan: MigrationPlan, entry: PlanEntry): PlanRoot => entry.root ?? plan.root ?? "agent"

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
  /**
   * True when every `to` row appears in the result. False when the declared winner `from` replaced a row of
   * `to`, or `to` held one key twice: its previous bytes must then be kept before it is rewritten.
   */
  readonly toFullyKept: boolean
}

/**
 * Merge split writes by key (docs/migrations.md: the `merge-ledger` plan entry): `to`'s rows keep their order, rows only `from` has follow in
 * `from`'s order; a key seen twice in one file keeps its latest row; for a key on both sides the declared
 * winner's row is kept. Never "the newer file wins". Idempotent: merging `from` again changes nothing.
 */
export const mergeLedgerRows = (input: {
  readonly to: ReadonlyArray<unknown>
  readonly from: ReadonlyArray<unknown>
  /** Every row has a key (checked first with `keylessRow`). */
  readonly key: (row: unknown) => string | undefined
  readonly winner: "from" | "to"
}): LedgerMerge => {
  const keyOf = (row: unknown): string => input.key(row) ?? JSON.stringify(row)
  const merged = new Map<string, unknown>()
  for (const row of input.to) merged.set(keyOf(row), row)
  const fromRows = new Map<string, unknown>()
  for (const row of input.from) fromRows.set(keyOf(row), row)
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
  const fromFullyKept = input.from.every((row) => jsonEqual(merged.get(keyOf(row)), row))
  const toFullyKept = input.to.every((row) => jsonEqual(merged.get(keyOf(row)), row))
  return { rows, added, replaced, fromFullyKept, toFullyKept }
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
  /** The entry's root, absolute (absent in records written before roots existed: the agent dir). */
  root: Schema.optional(Schema.String),
  /** Relative to the root. */
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

/**
 * Whether the journal already names every copy kept for an entry (`copies`, display paths as the records write
 * them): its last record that did not fail names each one, or a path inside it. `false` after a run kept copies
 * and stopped before its line (a crash): the next run writes the line.
 */
export const copiesRecorded = (records: ReadonlyArray<JournalRecord>, entryId: string, copies: ReadonlyArray<string>): boolean => {
  const last = records.filter((r) => r.entryId === entryId && r.outcome !== "failed").at(-1)
  const named = last?.conflicts ?? []
  return copies.every((copy) => named.some((c) => c === copy || c.startsWith(`${copy}/`)))
}

export interface EntryReport {
  readonly id: string
  readonly kind: "move" | "merge-ledger"
  readonly outcome: EntryOutcome
  /** The directory `from`, `to` and `conflicts` are relative to (absolute). */
  readonly root: string
  readonly from: string
  readonly to: string
  readonly rows?: number
  readonly mergedRows?: number
  readonly conflicts?: ReadonlyArray<string>
  readonly reason?: string
  /** The decisions the run planned for this entry (as `previewPlan` gives them), its own first. */
  readonly decisions?: ReadonlyArray<StepDecision>
}

export interface PlanReport {
  readonly planId: string
  readonly journal: string
  readonly entries: ReadonlyArray<EntryReport>
  /** True when any entry failed (the CLI exits non-zero). */
  readonly failed: boolean
}

/** One decision of a plan's dry run; `merge-ledger` is the toolkit's own, the rest are the move engine's. */
export interface StepDecision {
  readonly action: LayoutAction | "merge-ledger"
  /** Relative to the step's root. */
  readonly from: string
  readonly to: string
  readonly why: string
}

/** What a run would do with one entry now (`Migration.previewPlan`, the dry run). */
export interface StepPreview {
  readonly id: string
  readonly kind: "move" | "merge-ledger"
  readonly root: string
  readonly from: string
  readonly to: string
  /**
   * The entry's decisions in the order a run takes them: the first is the entry's own (`already-done` when
   * its source is absent, `refuse` when the run would fail it); a directory merge's entries and a kept
   * conflict copy follow.
   */
  readonly decisions: ReadonlyArray<StepDecision>
}

export interface PlanPreview {
  readonly planId: string
  readonly journal: string
  readonly entries: ReadonlyArray<StepPreview>
  /** True when a run would fail some entry (a `refuse` decision). */
  readonly refused: boolean
}

/** Why a `merge-ledger` entry does what it does, from the merge of its rows. */
export const ledgerWhy = (input: {
  readonly toRows: number
  readonly fromRows: number
  readonly merge: LedgerMerge
  readonly winner: "from" | "to"
  /** Where `from` is kept (some of its rows lost), else it is removed. */
  readonly fromKeptAt: string | undefined
  /** Where `to`'s previous bytes are kept (the winner `from` replaced some of its rows), else `undefined`. */
  readonly toKeptAt: string | undefined
}): string => {
  const { merge } = input
  const head = `merged by key: ${countOf(input.fromRows, "row")} in from, ${countOf(input.toRows, "row")} in to; ` +
    `${merge.added} added, ${merge.replaced} replaced (winner: ${input.winner}), ${countOf(merge.rows.length, "row")} after`
  const fromPart = input.fromKeptAt === undefined
    ? "every row of from is in the result, so from is removed"
    : `some rows of from lost to the winner or repeat a key, so from is kept at ${input.fromKeptAt}`
  const toPart = input.toKeptAt === undefined ? "" : `; to's previous bytes are kept at ${input.toKeptAt} (some of its rows were replaced)`
  return `${head}; ${fromPart}${toPart}`
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
