/**
 * DR1: how one agent-dir root entry is seen (canonical, legacy, the migration marker, the temp file of a torn
 * atomic write of a canonical file, or unknown with a hint of what it holds). Reads the canonical and legacy tables (AgentPaths.ts) and the layout rule (MigrationPlan.ts);
 * lists no root names of its own. The database/log hints are the config red lines' name rules (ConfigRedLines.ts).
 */
import { type CanonicalEntry, CANONICAL_ROOT_ENTRIES } from "./AgentPaths.js"
import { atomicTempTarget } from "./AtomicWrite.js"
import { isDatabaseFileName, isLogFileName } from "./ConfigRedLines.js"
import { reclaimLockPath } from "./MarkerFiles.js"
import { type LayoutUnit, layoutUnit, MIGRATION_MARKER } from "./MigrationPlan.js"

export type RootClassification =
  | { readonly _tag: "Canonical"; readonly entry: CanonicalEntry }
  | { readonly _tag: "Legacy"; readonly unit: LayoutUnit }
  /**
   * The migration marker, or its reclaim lock (`role`): the files `domain/MarkerFiles.ts` names for it, both
   * judged by the markers' liveness rule.
   */
  | { readonly _tag: "MigrationMarker"; readonly role: "marker" | "reclaim-lock" }
  /** The library's own: the temp file of an atomic write of a canonical file that a crash left (AtomicWrite.ts). */
  | { readonly _tag: "AtomicWriteLeftover"; readonly entry: CanonicalEntry }
  | { readonly _tag: "Unknown"; readonly hint: UnknownHint }

export type UnknownHint = "database" | "log" | "temp" | "other"

const TEMP_RE = /(\.tmp|\.temp|\.swp|~|\.part)$/i

export const fileHint = (name: string): UnknownHint =>
  isDatabaseFileName(name) ? "database" : isLogFileName(name) ? "log" : TEMP_RE.test(name) ? "temp" : "other"

/** DR1: how every reader (the doctor, the read model) sees one root entry. */
export const classifyRootEntry = (name: string): RootClassification => {
  const canonical = CANONICAL_ROOT_ENTRIES.find((e) => e.name === name)
  if (canonical !== undefined) return { _tag: "Canonical", entry: canonical }
  const unit = layoutUnit(name)
  if (unit !== undefined) return { _tag: "Legacy", unit }
  if (name === MIGRATION_MARKER) return { _tag: "MigrationMarker", role: "marker" }
  if (name === reclaimLockPath(MIGRATION_MARKER)) return { _tag: "MigrationMarker", role: "reclaim-lock" }
  const target = atomicTempTarget(name)
  const written = target === undefined ? undefined : CANONICAL_ROOT_ENTRIES.find((e) => e.name === target && e.kind === "file")
  if (written !== undefined) return { _tag: "AtomicWriteLeftover", entry: written }
  return { _tag: "Unknown", hint: fileHint(name) }
}
