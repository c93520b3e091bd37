/**
 * The files the library makes for one marker (a lock with the markers' liveness rules: the migration marker,
 * the config history's writer lock, a tenant's prune marker …), named by one rule that the writers
 * (`services/internal/markers.ts`, `services/internal/fsClock.ts`) and every reader that must recognise them as
 * the library's own (the doctor's root classifier, the config history's git exclusion) share. Pure.
 *
 * Beside a marker `<m>` there is only `<m>.reclaim`: the exclusive lock that serialises the reclaimers of a dead
 * `<m>`, and the spot where a reader creates a probe of the file system's clock for a lone marker (created
 * exclusively, unlinked at once; docs/safety.md "How runs stay safe"). Both are marker files themselves, judged by the
 * same liveness verdict.
 */

/** Suffix of the lock serialising the reclaimers of a dead marker (and a lone marker's clock probe). */
const RECLAIM_LOCK_SUFFIX = ".reclaim"

/** The file serialising the reclaimers of one marker path (also where its clock probe is made). */
export const reclaimLockPath = (markerPath: string): string => `${markerPath}${RECLAIM_LOCK_SUFFIX}`

/** Whether a directory entry is a reclaim lock (never a run, never a marker of its own). */
export const isReclaimLockName = (name: string): boolean => name.endsWith(RECLAIM_LOCK_SUFFIX)

/** Every name the library creates for the marker named `marker`: the marker itself and its reclaim lock. */
export const markerFileNames = (marker: string): ReadonlyArray<string> => [marker, reclaimLockPath(marker)]

/** Whether `name` is one of the files the library creates for the marker named `marker`. */
export const isMarkerFileOf = (marker: string, name: string): boolean => markerFileNames(marker).includes(name)
