/**
 * `JSON.stringify(value, null, 2) + "\n"` in pieces: the document a `--json` command prints, cut between the
 * elements of its top-level arrays, so 40,000 runs are written a few hundred at a time and the whole text
 * never exists at once (as one string it was 20 MiB, with as much again for its copy on the way out). The
 * pieces joined are exactly that one string. Pure.
 *
 * Each part is stringified inside a wrapper that puts it at the depth it has in the document, under its own
 * key, and the wrapper's own text cut off: `JSON.stringify` does the indenting and decides what is left out,
 * no text is rewritten. Only plain data is cut (an object or array made by a literal or `JSON.parse`); a value
 * with a `toJSON` of its own, a boxed primitive or a class instance is stringified whole.
 */

/** How many elements of an array one piece holds. */
const ELEMENTS_PER_PIECE = 256

/** An object or array literal's kind of value, without a `toJSON`: what may be cut. */
const plain = (value: unknown): value is Record<string, unknown> => {
  if (value === null || typeof value !== "object") return false
  const proto = Object.getPrototypeOf(value) as unknown
  const literal = Array.isArray(value) ? proto === Array.prototype : proto === Object.prototype || proto === null
  return literal && typeof (value as { toJSON?: unknown }).toJSON !== "function"
}

/** `{"key": [a, b]}` pretty: `{\n  "key": [\n` + the elements as at depth 2, one per line + `\n  ]\n}`. */
const NESTED_TAIL = "\n  ]\n}".length

/** `[a, b]` pretty: `[\n` + the elements as at depth 1 + `\n]`. */
const TOP_HEAD = "[\n".length
const TOP_TAIL = "\n]".length

/** The elements of `items` (not empty), one per line at depth 1 (a top-level array) or 2 (under `key`), a few hundred a piece. */
function* elementLines(items: ReadonlyArray<unknown>, key: string | undefined): Generator<string> {
  const head = key === undefined ? TOP_HEAD : `{\n  ${JSON.stringify(key)}: [\n`.length
  const tail = key === undefined ? TOP_TAIL : NESTED_TAIL
  for (let start = 0; start < items.length; start += ELEMENTS_PER_PIECE) {
    const slice = items.slice(start, start + ELEMENTS_PER_PIECE)
    const text = key === undefined ? JSON.stringify(slice, null, 2) : JSON.stringify({ [key]: slice }, null, 2)
    yield (start === 0 ? "" : ",\n") + text.slice(head, text.length - tail)
  }
}

/** A property as a line of the document's top-level object (`"key": value`); `undefined` when JSON leaves it out. */
const property = (key: string, value: unknown): string | undefined => {
  const text = JSON.stringify({ [key]: value }, null, 2)
  // `{\n  "key": value\n}`, or `{}` for a value JSON leaves out (undefined, a function, a toJSON answering so).
  return text === "{}" ? undefined : text.slice("{\n  ".length, text.length - "\n}".length)
}

/** The pretty-printed document of `value` with a final newline, in pieces whose concatenation is exactly it. */
export function* jsonPieces(value: unknown): Generator<string> {
  if (!plain(value)) return yield `${JSON.stringify(value, null, 2)}\n`
  if (Array.isArray(value)) {
    if (value.length === 0) return yield "[]\n"
    yield "[\n"
    yield* elementLines(value, undefined)
    return yield "\n]\n"
  }
  let first = true
  for (const key of Object.keys(value)) {
    const v = value[key]
    const lead = first ? "{\n  " : ",\n  "
    if (Array.isArray(v) && v.length > 0 && plain(v)) {
      yield `${lead}${JSON.stringify(key)}: [\n`
      yield* elementLines(v, key)
      yield "\n  ]"
    } else {
      const line = property(key, v)
      if (line === undefined) continue
      yield lead + line
    }
    first = false
  }
  yield first ? "{}\n" : "\n}\n"
}
