/**
 * The one rule for putting a string the library did not write itself (a file name, a profile entry, a
 * manifest field, an error detail naming either) in front of a person. Human output passes every such string
 * through `displayText`; `--json` output stays exact.
 *
 * Nothing that steers a terminal gets through: C0 controls (newline and tab included: a newline in a name
 * would forge a report line), DEL, the C1 controls (U+0080–U+009F, among them the 8-bit CSI and OSC), the
 * bidirectional overrides and isolates (which reorder what is shown), and stray surrogates. A byte that is not
 * UTF-8 (`domain/NameBytes.ts`) shows as `\xNN`, other code points as `\u{N}`; a backslash shows as `\\` so
 * that an escape on screen always means an escape.
 */

// Code units that never reach a terminal raw. Surrogates are matched singly and pairs let through below.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\\]|[\ud800-\udfff]/g

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0")

const escapeUnit = (unit: string, at: number, whole: string): string => {
  const c = unit.charCodeAt(0)
  if (unit === "\\") return "\\\\"
  if (c >= 0xd800 && c <= 0xdbff) {
    const next = whole.charCodeAt(at + 1)
    if (next >= 0xdc00 && next <= 0xdfff) return unit // first half of a pair: the pair is one character
  }
  if (c >= 0xdc00 && c <= 0xdfff) {
    const prev = whole.charCodeAt(at - 1)
    if (prev >= 0xd800 && prev <= 0xdbff) return unit // second half of a pair
    if (c >= 0xdc80 && c <= 0xdcff) return `\\x${hex(c - 0xdc00, 2)}` // a byte that is not UTF-8
  }
  if (c === 0x0a) return "\\n"
  if (c === 0x09) return "\\t"
  if (c === 0x0d) return "\\r"
  if (c < 0x100) return `\\x${hex(c, 2)}`
  return `\\u{${hex(c, 4)}}`
}

/** `text` made safe to print: every control, override, stray surrogate and backslash escaped. */
export const displayText = (text: string): string => {
  UNSAFE.lastIndex = 0
  return UNSAFE.test(text) ? text.replace(UNSAFE, escapeUnit) : text
}

/** A letter, digit, punctuation mark or symbol: a character that shows as itself, alone, between quotes. */
const VISIBLE = /^[\p{L}\p{N}\p{P}\p{S}]$/u

/**
 * One character named in a message the library writes (what a rule found): `"x"` when it shows as itself,
 * else its code point (`U+0001`, and `U+200B` for one a reader would not see: a space, a zero-width or
 * formatting character, a combining mark alone), with no backslash that `displayText` would escape a second
 * time on screen.
 */
export const characterWords = (ch: string): string => {
  const point = ch.codePointAt(0) ?? 0
  return VISIBLE.test(ch) && ch !== "\"" && displayText(ch) === ch ? `"${ch}"` : `U+${point.toString(16).toUpperCase().padStart(4, "0")}`
}
