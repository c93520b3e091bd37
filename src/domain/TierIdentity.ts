/**
 * "Compare directories by identity (device + inode after resolving links), never by string": the one
 * identity rule (`sameFile`) and the one containment rule (`resolvedWithin`). docs/tiers.md "Extension data tiers (web host)" compares tier
 * directories this way, BK2 the state-backup root against the trees every snapshot copies. A path's
 * location is what it resolves to on disk (links and mounts included): the identities of its deepest
 * existing prefix and of that directory's physical ancestors up to "/", nearest first, plus the names below
 * that prefix that do not exist yet. Pure: `services/internal/locate.ts` gathers locations with `stat`.
 */
import type { TierName } from "./Tiers.js"

export interface FileIdentity {
  readonly dev: number
  readonly ino: number
}

export interface ResolvedLocation {
  /** The deepest existing prefix of the path, then its physical parent, and so on up to "/". */
  readonly chain: ReadonlyArray<FileIdentity>
  /** Names below that prefix that do not exist (yet), outermost first; empty when the path exists. */
  readonly missing: ReadonlyArray<string>
}

/** The identity part of a stat result. */
export const identityOf = (info: FileIdentity): FileIdentity => ({ dev: info.dev, ino: info.ino })

/** Two stat results name the same file: same device and same inode. */
export const sameFile = (a: FileIdentity, b: FileIdentity): boolean => a.dev === b.dev && a.ino === b.ino

/**
 * Whether `x` resolves to `y` or to somewhere inside it. An existing `y` contains `x` when `y` is one of the
 * directories `x` resolves through; a `y` that does not exist yet contains `x` only when both lead to the
 * same existing directory and `y`'s missing names start `x`'s (below a missing name nothing exists, so `x`
 * cannot have reached it by another way).
 */
export const resolvedWithin = (x: ResolvedLocation, y: ResolvedLocation): boolean => {
  const yTop = y.chain[0]
  if (yTop === undefined) return false
  if (y.missing.length === 0) return x.chain.some((id) => sameFile(id, yTop))
  const xTop = x.chain[0]
  return xTop !== undefined && sameFile(xTop, yTop) && y.missing.length <= x.missing.length &&
    y.missing.every((name, i) => x.missing[i] === name)
}

export type TierRelation = "same" | "inside" | "contains"

export interface TierOverlapFinding {
  readonly tier: TierName
  readonly path: string
  readonly relation: TierRelation
  readonly otherTier: TierName
  readonly otherPath: string
}

export interface LocatedTier {
  readonly path: string
  readonly location: ResolvedLocation
}

/**
 * The same rules as the string check (`resolveTierDirs`), on resolved locations: cache/ may be wiped at any
 * time, so it must not be, contain or lie inside another tier; config and state must not be the same
 * directory (state inside config is the old-host fallback, docs/tiers.md `resolveStateDir`, and allowed). The first overlap, or null.
 */
export const findTierOverlap = (
  tiers: { readonly config: LocatedTier; readonly state: LocatedTier; readonly cache: LocatedTier }
): TierOverlapFinding | null => {
  const pairs: ReadonlyArray<readonly [TierName, TierName, boolean]> = [
    ["cache", "config", true],
    ["cache", "state", true],
    ["state", "config", false]
  ]
  for (const [a, b, nestingRefused] of pairs) {
    const x = tiers[a]
    const y = tiers[b]
    const inside = resolvedWithin(x.location, y.location)
    const contains = resolvedWithin(y.location, x.location)
    const relation: TierRelation | null = inside && contains
      ? "same"
      : !nestingRefused
      ? null
      : inside
      ? "inside"
      : contains
      ? "contains"
      : null
    if (relation !== null) return { tier: a, path: x.path, relation, otherTier: b, otherPath: y.path }
  }
  return null
}
