/**
 * A count and its noun in a generated message (`1 entry`, `3 entries`, `1 row`, `2 rows`): the one rule the
 * CLI's and the library's messages count with, so none says "1 entries"; and a count's digits grouped by
 * thousands (`20,000`), for the CLI's tables and the stop lines alike. Pure.
 */

const noun = (n: number, one: string, many: string): string => (n === 1 ? one : many)

/** `n` and `one` or `many` (`one` + "s" unless given: `entry` needs `entries`). */
export const countOf = (n: number, one: string, many = `${one}s`): string => `${n} ${noun(n, one, many)}`

/** `n` with its digits grouped by thousands (`20,000`). */
export const groupedDigits = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",")

/** `countOf` with the digits grouped (`1 entry`, `2,000 entries`). */
export const groupedCountOf = (n: number, one: string, many = `${one}s`): string => `${groupedDigits(n)} ${noun(n, one, many)}`
