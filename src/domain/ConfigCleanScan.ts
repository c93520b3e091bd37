/**
 * The config history's clean scan (docs/config-history.md "The stat cache"): the proof, without reading a file
 * or running git, that the live config files are exactly as the newest revision holds them. A snapshot that
 * found nothing to commit records every path its scan looked at (each file it judged, each directory it
 * listed, the two roots, and each path it found absent) with that path's identity: type, size, permission
 * bits, inode, mtime and ctime. The scan's result is a function of what those calls answered, so while every
 * path still answers the same, the same scan would find nothing to commit and the same files left out.
 *
 * - A directory's mtime and ctime change when an entry is added, removed or renamed in it; a file's ctime
 *   changes on every write, chmod or rename over it, even when a tool sets its mtime back (`cp -p`, `touch -d`).
 * - Racy git: a path changed within the file system's timestamp granularity of the scan would answer the same
 *   identity with other bytes. A scan is recorded only when every time it saw is older than the scan by
 *   `CLEAN_RACY_MARGIN_MS` (coarser than any clock a local file system keeps), so a later change has a later
 *   time.
 * - A record that cannot be decoded, or one from another agent dir, web data root, redaction rule or set of
 *   options, proves nothing: the snapshot then runs in full.
 *
 * Pure: the reading and the writing are ConfigHistory.ts (the full scan) and cli/configFast.ts (the check).
 * Imports nothing heavy: the CLI's check loads this before anything else of the library.
 */

import { RACY_MARGIN_MS } from "./ConfigHistoryLayout.js"

/** Type, size, permission bits, inode, mtime (ms), ctime (ms). `null`: the path was absent. */
export type Identity = readonly [type: string, size: number, mode: number, ino: number, mtimeMs: number, ctimeMs: number]

export type Observation = readonly [path: string, identity: Identity | null]

export interface CleanScan {
  /** The history was made with the default denylist and size budget (as every CLI call is). */
  readonly defaults: boolean
  readonly agentDir: string
  readonly webRoot: string
  readonly observed: ReadonlyArray<Observation>
  /** The scan's skipped files (`SnapshotResult.skipped`), as it reported them. */
  readonly skipped: ReadonlyArray<unknown>
}

/** What lstat answered, in the fields an identity keeps (`FileInfo`, or Node's `Stats` mapped to it). */
export interface StatLike {
  readonly type: string
  readonly size: number
  readonly mode: number
  readonly ino: number
  readonly mtimeMs: number
  readonly ctimeMs?: number | undefined
}

/** The racy-git margin a clean scan keeps: the stat cache's own (ConfigHistoryLayout.ts). */
export const CLEAN_RACY_MARGIN_MS = RACY_MARGIN_MS

/** An identity; `undefined` when the answer has no ctime (a layer that keeps none: then nothing is recorded). */
export const identityOf = (info: StatLike | undefined): Identity | null | undefined =>
  info === undefined ? null : info.ctimeMs === undefined ? undefined : [info.type, info.size, info.mode & 0o7777, info.ino, info.mtimeMs, info.ctimeMs]

export const sameIdentity = (a: Identity | null, b: Identity | null): boolean =>
  a === null || b === null ? a === b : a.length === b.length && a.every((v, i) => v === b[i])

/** A scan may be recorded when it saw every path with a ctime, and no time it saw is racy with `scannedAt`. */
export const recordableScan = (observed: ReadonlyArray<readonly [string, Identity | null | undefined]>, scannedAt: number): observed is ReadonlyArray<Observation> =>
  observed.every(([, id]) => id !== undefined && (id === null || (id[4] < scannedAt - CLEAN_RACY_MARGIN_MS && id[5] < scannedAt - CLEAN_RACY_MARGIN_MS)))

/** Two records of the same scan (a fresh scan that would record the same needs no write). */
export const sameCleanScan = (a: CleanScan | null | undefined, b: CleanScan | null | undefined): boolean =>
  a != null && b != null && JSON.stringify(a) === JSON.stringify(b)

/**
 * Whether `scan` still proves the live files unchanged: made with the defaults for these roots, and every path
 * it observed answers the same identity now (`now`: an lstat; `null` when absent, `undefined` when it cannot be
 * told). Anything else is "not proven", never "changed": the caller then runs the full snapshot.
 */
export const cleanScanHolds = (
  scan: CleanScan,
  expected: { readonly agentDir: string; readonly webRoot: string },
  now: (path: string) => Identity | null | undefined
): boolean => {
  if (!scan.defaults || scan.agentDir !== expected.agentDir || scan.webRoot !== expected.webRoot) return false
  for (const [path, recorded] of scan.observed) {
    const current = now(path)
    if (current === undefined || !sameIdentity(recorded, current)) return false
  }
  return true
}

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v)
const isIdentity = (v: unknown): v is Identity =>
  Array.isArray(v) && v.length === 6 && typeof v[0] === "string" && v.slice(1).every(isNumber)
const isObservation = (v: unknown): v is Observation =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && v[0].startsWith("/") && !v[0].includes("\0") && (v[1] === null || isIdentity(v[1]))
const isSkip = (v: unknown): boolean =>
  typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((f) => typeof f === "string") &&
  ["_tag", "path", "reason", "message"].every((k) => typeof (v as Record<string, unknown>)[k] === "string")

/** A clean scan read from the stat cache (hostile bytes: anything but exactly this shape is `undefined`). */
export const decodeCleanScan = (u: unknown): CleanScan | undefined => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return undefined
  const o = u as Record<string, unknown>
  if (typeof o.defaults !== "boolean" || typeof o.agentDir !== "string" || typeof o.webRoot !== "string") return undefined
  if (!Array.isArray(o.observed) || !o.observed.every(isObservation)) return undefined
  if (!Array.isArray(o.skipped) || !o.skipped.every(isSkip)) return undefined
  return { defaults: o.defaults, agentDir: o.agentDir, webRoot: o.webRoot, observed: o.observed, skipped: o.skipped }
}
