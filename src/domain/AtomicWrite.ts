/**
 * The temp file an atomic write (`FileSystem.writeFileAtomic`: write the temp, fsync, rename it over the
 * target) puts beside its target: `.<name>.tmp-<hex>`. One rule for the layers that write it (Node and
 * Memory) and for the doctor, which names a torn one as the library's own: a crash between the write and the
 * rename leaves it behind, and the target is still the file it was. Pure.
 */

const TEMP = /^\.(.+)\.tmp-[0-9a-f]+$/

/** The temp name beside `name` for one write; `unique` is lower-case hex (random, or a world's counter). */
export const atomicTempName = (name: string, unique: string): string => `.${name}.tmp-${unique}`

/** The name `entry` is an atomic-write temp of, or `undefined` when it is not one. */
export const atomicTempTarget = (entry: string): string | undefined => TEMP.exec(entry)?.[1]
