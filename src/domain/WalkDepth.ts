/**
 * The depth rule of the tree walks (docs/architecture.md "Walkers"; DESIGN "A walk's cost in descriptors and memory is
 * bounded whatever the depth"), which the native walks (native/fsat.c "Depth") and the portable ones
 * (layers/node/pathWalk.ts) both follow. No imports: the Node layer's remover thread loads it.
 *
 * - A walk holds a descriptor and a listing only for the `WALK_WINDOW` deepest directories of its path.
 *   Above those, a directory keeps its identity (device, inode), its name and where its listing goes on.
 * - Coming back up to a directory that left the window re-opens it as the finished child's `..` and goes on
 *   only if it is the very directory left (same device and inode; the portable walk compares its mount id
 *   too). `..` is the directory the child's inode sits in, never a link: a name swapped meanwhile is never
 *   looked at, and a walk never goes back down by name. Anything else there (the directory moved, or the
 *   child moved out of it) ends the walk with `MOVED_DIRECTORY_ERRNO`, nothing done through the other
 *   directory; the next walk starts again from the root (a quarantined run stays in `.trash/` until then).
 *   Without that check a walk would climb out of its tree through a moved directory's `..` and empty
 *   whatever lies above (the race cases in walkerRace.test.ts show it).
 * - A removal that continued a directory's listing after a re-open lists it once more from the start
 *   before its rmdir (a file system whose offsets move as earlier entries go cannot make it skip one).
 *
 * So a walk holds at most `WALK_WINDOW + 1` descriptors and, per level above the window, a few dozen bytes
 * and a name: a tree of any depth is measured and removed (the measure's `maxDepth` still cuts it).
 */

/** Directories of its path a walk holds open (native/fsat.c `WALK_WINDOW` is the same number). */
export const WALK_WINDOW = 16

/** The errno a walk fails with when a directory it re-opens is not the one it left. */
export const MOVED_DIRECTORY_ERRNO = "ESTALE"

/** The syscall name that failure is reported under (the Node walkers' errors carry one). */
export const MOVED_DIRECTORY_SYSCALL = "reopen"

/** The detail of that failure, the same from every walker. */
export const MOVED_DIRECTORY_DETAIL =
  "a directory the walk had left to go deeper is no longer where it was (moved, or its child moved out of it): the walk never goes on through another directory, so it stopped here; the next walk starts again from the root"
