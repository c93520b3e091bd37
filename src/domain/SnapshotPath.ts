/**
 * A state snapshot's manifest paths as untrusted input (docs/snapshots.md "State snapshots"). A backup root may sit on a
 * shared disk or a USB stick, and the manifest's own hash is no signature: whoever edits a manifest can
 * recompute it. So every path is decoded here, by this one rule, before anything reads or writes by it
 * (restore, verify, list, the next create's link base): relative, normalised, inside the snapshot's scope.
 */
import { CANONICAL_ROOT_ENTRIES, STATE_BACKUPS_DIR, STATE_RESTORE_ASIDE_DIR } from "./AgentPaths.js"
import { withArticle } from "./Article.js"
import { segmentViolation } from "./Segment.js"

/** Under `state/`: config history (BK1 has its own backups) and data a restore moved aside. */
export const STATE_EXCLUDED: ReadonlyArray<string> = [STATE_BACKUPS_DIR, STATE_RESTORE_ASIDE_DIR]

/** The agent dir's entries a snapshot holds: those the canonical table classes state or memory. */
export const SNAPSHOT_AGENT_ENTRIES: ReadonlyArray<string> = CANONICAL_ROOT_ENTRIES
  .filter((e) => e.class === "state" || e.class === "memory")
  .map((e) => e.name)

const AGENT_ENTRIES: ReadonlySet<string> = new Set(SNAPSHOT_AGENT_ENTRIES)

/**
 * Longest path (UTF-16 units) a snapshot can hold: each of them is at least as many bytes, and a snapshot is
 * built through paths that the kernel refuses beyond PATH_MAX (4096 bytes).
 */
export const SNAPSHOT_PATH_MAX = 4096

/** A manifest path that decoded: where it lies in the snapshot's scope. */
export interface SnapshotPath {
  readonly path: string
  readonly segments: ReadonlyArray<string>
  /** How many leading segments name its scope root: 2 for `agent/<entry>`, 3 for `web/<extId>/state`. */
  readonly rootDepth: 2 | 3
  /** The extension whose state it is: `agent/state/extensions/<ns>/…` or `web/<extId>/state/…`. */
  readonly extension: string | undefined
}

export type SnapshotPathDecoded = { readonly ok: true; readonly value: SnapshotPath } | { readonly ok: false; readonly why: string }

const refused = (why: string): SnapshotPathDecoded => ({ ok: false, why })

/**
 * Decode one manifest path: `agent/<a state or memory entry>[/…]` (never `agent/state/backups` or
 * `agent/state/restore-aside`) or `web/<valid extId>/state[/…]`, segments separated by single slashes, none
 * empty, `.` or `..`, no NUL, not absolute.
 */
export const decodeSnapshotPath = (path: string): SnapshotPathDecoded => {
  if (path.length === 0) return refused("is empty")
  if (path.length > SNAPSHOT_PATH_MAX) return refused(`is longer than ${SNAPSHOT_PATH_MAX} characters`)
  if (path.includes("\0")) return refused("holds a NUL character")
  if (path.startsWith("/")) return refused("is absolute")
  const segments = path.split("/")
  for (const segment of segments) {
    if (segment === "") return refused("has an empty segment")
    if (segment === "." || segment === "..") return refused(`has a "${segment}" segment`)
  }
  const [top, second, third] = segments
  if (top === "agent") {
    if (second === undefined) return refused("is the agent tree itself, not an entry of it")
    if (!AGENT_ENTRIES.has(second)) return refused(`lies outside the snapshot's scope (agent/${second} is not a state or memory entry of the agent dir)`)
    if (second === "state" && third !== undefined && STATE_EXCLUDED.includes(third)) {
      return refused(`lies outside the snapshot's scope (agent/state/${third} is never snapshotted)`)
    }
    const extension = second === "state" && third === "extensions" ? segments[3] : undefined
    return { ok: true, value: { path, segments, rootDepth: 2, extension } }
  }
  if (top === "web") {
    if (second === undefined || segmentViolation(second) !== null) return refused("lies outside the snapshot's scope (web/ holds only valid extension ids)")
    if (third !== "state") return refused(`lies outside the snapshot's scope (only web/${second}/state is snapshotted)`)
    return { ok: true, value: { path, segments, rootDepth: 3, extension: second } }
  }
  return refused("lies outside the snapshot's scope (neither agent/ nor web/)")
}

/**
 * Why a manifest may record `p` only as a directory, or `undefined` when it may be anything. `agent/state`: a
 * restore keeps that directory in place (its `backups/` and `restore-aside/` are not the snapshot's) and
 * replaces what is in it, so as a link or file it could only be put back by moving the live `state/` away
 * first. `web/<id>/state` and `agent/state/extensions/<ns>`: an extension's state, where its tiers write;
 * restored as a link it would send every later write wherever the manifest's author chose. (A snapshot never
 * records any of them otherwise; an older build recorded an extension's linked state as a link.)
 */
export const directoryOnlyWhy = (p: SnapshotPath): string | undefined =>
  isKeptInPlace(p)
    ? "a restore keeps state/ itself in place and can put back only a directory there"
    : (p.segments.length === 3 && p.segments[0] === "web") || isAgentExtensionDir(p.path)
    ? "an extension's state is restored only as a directory: as a link it would send the tiers' writes wherever it points"
    : undefined

/** Whether a path is `agent/state` itself, which a restore keeps in place (`directoryOnlyWhy`). Pure. */
export const isKeptInPlace = (p: SnapshotPath): boolean => p.segments.length === 2 && p.segments[0] === "agent" && p.segments[1] === "state"

/** Whether a snapshot-relative path is an agent extension's state directory, `agent/state/extensions/<ns>`. Pure. */
export const isAgentExtensionDir = (rel: string): boolean => {
  const segments = rel.split("/")
  return segments.length === 4 && segments[0] === "agent" && segments[1] === "state" && segments[2] === "extensions"
}

/** Whether a decoded path lies in what a restore of `extension` (or, undefined, of everything) replaces. */
export const inRestoreScope = (p: SnapshotPath, extension: string | undefined): boolean =>
  extension === undefined || p.extension === extension

/**
 * The tree a manifest describes must be one a walk could have made: each path once, and each entry below
 * its scope root inside a directory the manifest records. An entry below a recorded symlink is the attack
 * that makes a restore write through the link it restored a moment earlier; below a file, or below nothing
 * recorded, it is corruption too. The first problem as `{ index, why }`, or `undefined`.
 */
export const snapshotTreeProblem = (
  entries: ReadonlyArray<{ readonly type: "file" | "directory" | "symlink" }>,
  paths: ReadonlyArray<SnapshotPath>
): { readonly index: number; readonly why: string } | undefined => {
  const types = new Map<string, "file" | "directory" | "symlink">()
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i]!.path
    if (types.has(path)) return { index: i, why: "is recorded twice" }
    types.set(path, entries[i]!.type)
  }
  for (let i = 0; i < paths.length; i++) {
    const p = paths[i]!
    if (p.segments.length <= p.rootDepth) continue
    const parent = p.path.slice(0, p.path.lastIndexOf("/"))
    const type = types.get(parent)
    if (type === "directory") continue
    return {
      index: i,
      why: type === undefined
        ? `lies in ${JSON.stringify(parent)}, which the manifest does not record as a directory`
        : `lies below ${JSON.stringify(parent)}, which the manifest records as ${withArticle(type)}`
    }
  }
  return undefined
}
