/**
 * What a tenant directory (`work/<category>/<tenant>/`) holds besides runs, and the age rule for runs left in
 * its staging area. Pure; shared by the read model (Doctor, Inventory) and the pruner.
 */
import {
  TENANT_CLEANUP_DIR,
  TENANT_PRUNE_MARKER,
  TENANT_PRUNE_STAMP,
  TENANT_STAGING_DIR,
  TENANT_TRASH_DIR
} from "./AgentPaths.js"
import { markerFileNames } from "./MarkerFiles.js"

export { isReclaimLockName, reclaimLockPath } from "./MarkerFiles.js"

/** Entries of a tenant directory that belong to the library itself, never runs. */
export const TENANT_LIBRARY_ENTRIES: ReadonlySet<string> = new Set([
  TENANT_CLEANUP_DIR,
  TENANT_TRASH_DIR,
  ...markerFileNames(TENANT_PRUNE_MARKER),
  TENANT_PRUNE_STAMP,
  TENANT_STAGING_DIR
])

export const isTenantLibraryEntry = (name: string): boolean => TENANT_LIBRARY_ENTRIES.has(name)

/** A staged run older than this without a lease was abandoned by a crashed acquirer. */
export const STALE_STAGING_MS = 60 * 60 * 1000

/**
 * Whether a staged run without a lease (a run being created, before its creator's lease is written) was
 * abandoned: its directory untouched for `STALE_STAGING_MS`, its mtime read against now on the same file
 * system's clock (a probe's mtime), never against the pruner's wall clock, so a pruner whose clock is ahead
 * never removes another host's run being created. Unknown now (`null`): not abandoned (kept).
 */
export const isAbandonedStaging = (staged: { readonly mtimeMs: number; readonly fsNowMs: number | null }): boolean =>
  staged.fsNowMs !== null && staged.fsNowMs - staged.mtimeMs >= STALE_STAGING_MS
