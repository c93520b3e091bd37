/**
 * A count and its noun in a generated message (`1 entry`, `3 entries`, `1 row`, `2 rows`): the one rule the
 * CLI's and the library's messages count with, so none says "1 entries". Pure.
 */

/** `n` and `one` or `many` (`one` + "s" unless given: `entry` needs `entries`). */
export const countOf = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`
