/**
 * The parsers' shared shape and the count parser, in a module of their own that imports nothing: the short
 * route (route.ts) checks a count flag's value with it before anything heavy loads; parse.ts has the rest.
 */

export type Parsed<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly message: string }

export const ok = <A>(value: A): Parsed<A> => ({ ok: true, value })
export const fail = (message: string): Parsed<never> => ({ ok: false, message })

/** A value as given, in quotes (the printer escapes what it holds: docs/cli.md "CLI quick tour"). */
export const quoted = (text: string): string => `"${text}"`

export const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)

/** A non-negative whole number. */
export const parseCount = (text: string): Parsed<number> => {
  if (!/^\d+$/.test(text.trim())) return fail(`expected a whole number (0 or more), got ${quoted(text)}`)
  const n = BigInt(text.trim())
  return n <= MAX_SAFE ? ok(Number(n)) : fail(`${quoted(text)} is too large`)
}
