/**
 * The one-file-system rule of the tree walks (docs/safety.md "One file system (I3)"), as
 * `rm --one-file-system` and `find -xdev`: a removal or measuring walk never descends into a directory of
 * another file system than the walk root's. "Another file system" is another device *or* the root of another
 * mount (a bind mount of a tree on the same disk has the same device number, and it is exactly what a tool
 * leaves in a run). Every layer answers a crossing the same way, described here; no imports, so the Node
 * layer's remover thread loads it too.
 *
 * - Removal: everything on the root's file system is deleted; the mount point is neither descended nor
 *   unlinked, so it and the directories above it stay; the walk then fails with `EXDEV` (reason
 *   `CrossDevice`) naming the first mount point met. A quarantined run stays in `.trash/` and every later
 *   prune tries again and reports it again.
 * - Measuring: the mount point counts as one entry, its contents are not visited, and the measure is
 *   `complete: false` (a lower bound, never taken as a whole size).
 */

/** The errno a removal fails with when it met a mount point. */
export const CROSSED_MOUNT_ERRNO = "EXDEV"

/** The syscall name a crossing is reported under (the Node walkers' errors carry one). */
export const CROSSED_MOUNT_SYSCALL = "mount"

/** The detail of that failure, the same from every layer. */
export const CROSSED_MOUNT_DETAIL =
  "another file system is mounted here: a walk never crosses into one (one-file-system rule), so it and the directories above it were left in place"
