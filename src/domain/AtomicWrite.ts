/**
 * The temp file an atomic write (`FileSystem.writeFileAtomic`: write the temp, fsync, rename it over the
 * target) puts beside its target: `.<name>.tmp-<hex>`. One rule for the layers that write it (Node and
 * Memory) and for the doctor, which names a torn one as the library's own: a crash between the write and the
 * rename leaves it behind, and the target is still the file it was. Pure.
 */

/**
 * Hex digits of a temp name's unique part, exactly: what the library writes (6 random bytes in Node; the pid and
 * a counter in the Memory world), so a person's file that merely looks like one (`.draft.tmp-1`) is not taken
 * for the library's.
 */
export const ATOMIC_TEMP_DIGITS = 12

const TEMP = new RegExp(`^\\.(.+)\\.tmp-[0-9a-f]{${ATOMIC_TEMP_DIGITS}}$`)

/** The temp name beside `name` for one write; `unique` is `ATOMIC_TEMP_DIGITS` lower-case hex digits. */
export const atomicTempName = (name: string, unique: string): string => `.${name}.tmp-${unique}`

/** The name `entry` is an atomic-write temp of, or `undefined` when it is not one. */
export const atomicTempTarget = (entry: string): string | undefined => TEMP.exec(entry)?.[1]
