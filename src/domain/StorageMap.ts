/**
 * Where the bytes are (docs/dashboard.md "Dashboard"): the tier of each top-level entry of the agent dir and of the web
 * host's extension data root, the ids of the treemap's nodes, and which nodes the doctor's findings mark.
 * Pure. The walk is services/StorageMap.ts; the usage history sums the same top-level items per tier, so
 * the chart and the treemap can never disagree on what a tier holds.
 */
import * as NodePath from "node:path"
import { canonicalEntry, type EntryClass } from "./AgentPaths.js"
import type { Severity } from "./Findings.js"
import type { UsageRoot, UsageTier } from "./UsageHistory.js"
import { TIER_NAMES } from "./WebPaths.js"

const TIER_OF_CLASS: Record<EntryClass, UsageTier> = {
  config: "config",
  // What a state snapshot protects: state and memory (docs/snapshots.md "State snapshots").
  memory: "state",
  state: "state",
  cache: "cache",
  transient: "work",
  // Resources a person installs and managed downloads are neither: "other".
  resource: "other",
  managed: "other"
}

/** The tier of a root entry of the agent dir (unknown and legacy entries are "other"). */
export const tierOfRootEntry = (name: string): UsageTier => {
  const entry = canonicalEntry(name)
  return entry === undefined ? "other" : TIER_OF_CLASS[entry.class]
}

/** The tier of an entry of `data/<extId>/` (TD2): its three tier directories, anything else is "other". */
export const tierOfExtensionEntry = (name: string, isDirectory: boolean): UsageTier =>
  isDirectory && (TIER_NAMES as ReadonlyArray<string>).includes(name) ? (name as UsageTier) : "other"

/** Agent dir entries shown one level down in the treemap (and extensions one more level): `state/`, `cache/`, `work/`. */
export const EXPANDED_ROOT_DIRS: ReadonlySet<string> = new Set(["state", "cache", "work"])

/** A measured top-level item: what the one scan measures and both the treemap and the usage history read. */
export interface TopLevelItem {
  readonly root: UsageRoot
  readonly tier: UsageTier
  /** Path below its root, `/`-separated (`state/extensions/todo`, `todo/state`). */
  readonly rel: string
  readonly isDirectory: boolean
}

// ---------------------------------------------------------------------------------------------------------
// Node ids

/**
 * A node of the treemap: the whole (`root`), a tier (`tier:state`), or an entry below one of the two roots
 * (`a:work/tools/bash` in the agent dir, `w:todo/state` in the web data root). Ids come back from the page:
 * `parseNodeId` refuses anything that could leave its root (`..`, `.`, empty segments, NUL, absolute).
 */
export type NodeAddress =
  | { readonly _tag: "Root" }
  | { readonly _tag: "Tier"; readonly tier: UsageTier }
  | { readonly _tag: "Path"; readonly root: UsageRoot; readonly segments: ReadonlyArray<string> }

const TIERS: ReadonlyArray<string> = ["config", "state", "cache", "work", "other"]
const MAX_ID_LENGTH = 8192
const MAX_SEGMENTS = 256

export const ROOT_ID = "root"
export const tierId = (tier: UsageTier): string => `tier:${tier}`
export const pathId = (root: UsageRoot, rel: string): string => `${root === "agent" ? "a" : "w"}:${rel}`

export const parseNodeId = (id: string): NodeAddress | undefined => {
  if (id.length > MAX_ID_LENGTH) return undefined
  if (id === ROOT_ID) return { _tag: "Root" }
  if (id.startsWith("tier:")) {
    const tier = id.slice("tier:".length)
    return TIERS.includes(tier) ? { _tag: "Tier", tier: tier as UsageTier } : undefined
  }
  const prefix = id.slice(0, 2)
  if (prefix !== "a:" && prefix !== "w:") return undefined
  const segments = id.slice(2).split("/")
  if (segments.length > MAX_SEGMENTS) return undefined
  if (segments.some((s) => s === "" || s === "." || s === ".." || s.includes("\u0000"))) return undefined
  return { _tag: "Path", root: prefix === "a:" ? "agent" : "web", segments }
}

/** The absolute path of a path node under its root. */
export const nodePath = (rootDir: string, segments: ReadonlyArray<string>): string => NodePath.join(rootDir, ...segments)

/** What kind of node a path in the agent dir is for the treemap: a work category, tenant or run, or any entry. */
export type PathKind = "category" | "tenant" | "run" | "entry"

export const agentPathKind = (segments: ReadonlyArray<string>): PathKind => {
  if (segments[0] !== "work") return "entry"
  return segments.length === 2 ? "category" : segments.length === 3 ? "tenant" : segments.length === 4 ? "run" : "entry"
}

// ---------------------------------------------------------------------------------------------------------
// Doctor marks

export interface FindingMark {
  readonly count: number
  /** The worst severity among them. */
  readonly severity: Severity
}

const RANK: Record<Severity, number> = { error: 0, warning: 1, info: 2 }

/**
 * The findings at or below a node: `findingPaths` are the doctor's (relative to the agent dir, `/`-separated,
 * or absolute for the web data root); `nodeRel` is the node's path below `rootDir`. `null` when none.
 */
export const markOf = (
  findings: ReadonlyArray<{ readonly path: string; readonly severity: Severity }>,
  node: { readonly root: UsageRoot; readonly rel: string },
  roots: { readonly agentDir: string; readonly webDataRoot: string | null }
): FindingMark | null => {
  let count = 0
  let severity: Severity = "info"
  for (const f of findings) {
    const rel = findingRel(f.path, node.root, roots)
    if (rel === undefined) continue
    if (rel === node.rel || rel.startsWith(node.rel + "/")) {
      count++
      if (RANK[f.severity] < RANK[severity]) severity = f.severity
    }
  }
  return count === 0 ? null : { count, severity }
}

/** A finding's path below `root` (`/`-separated), or `undefined` when it is not below it. */
const findingRel = (path: string, root: UsageRoot, roots: { readonly agentDir: string; readonly webDataRoot: string | null }): string | undefined => {
  if (!NodePath.isAbsolute(path)) return root === "agent" ? path.replace(/\/+$/, "") : undefined
  const base = root === "agent" ? roots.agentDir : roots.webDataRoot
  if (base === null) return undefined
  const rel = NodePath.relative(base, path)
  return rel === "" || rel.startsWith("..") || NodePath.isAbsolute(rel) ? undefined : rel.split(NodePath.sep).join("/")
}

/** Two marks as one (a tier's mark from its children's). */
export const mergeMarks = (marks: ReadonlyArray<FindingMark | null>): FindingMark | null => {
  let count = 0
  let severity: Severity = "info"
  for (const m of marks) {
    if (m === null) continue
    count += m.count
    if (RANK[m.severity] < RANK[severity]) severity = m.severity
  }
  return count === 0 ? null : { count, severity }
}
