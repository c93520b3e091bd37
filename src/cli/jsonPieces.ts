/**
 * `JSON.stringify(value, null, 2) + "\n"` in pieces: the document a `--json` command prints, cut between the
 * elements of its top-level arrays, so 40,000 runs are written a few hundred at a time and the whole text
 * never exists at once (as one string it was 20 MiB, with as much again for its copy on the way out). The
 * pieces joined are exactly that one string. Pure.
 *
 * Each part is stringified inside a wrapper that puts it at the depth it has in the document, and the
 * wrapper's own text cut off: `JSON.stringify` does the indenting, no text is rewritten.
 */

/** How many elements of an array one piece holds. */
const ELEMENTS_PER_PIECE = 256

/** What `JSON.stringify` leaves out of an object (and writes as `null` in an array). */
const omitted = (v: unknown): boolean => v === undefined || typeof v === "function" || typeof v === "symbol"

/** A plain object or array: anything else (a `toJSON`, a primitive) is stringified whole. */
const splittable = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON !== "function"

/** `{"x": v}` pretty: `{\n  "x": ` + v as at depth 1 + `\n}`. */
const KEY_HEAD = '{\n  "x": '.length
const KEY_TAIL = "\n}".length

/** A property's value, indented as a value of the document's top-level object. */
const atDepthOne = (v: unknown): string => {
  const text = JSON.stringify({ x: v }, null, 2)
  return text.slice(KEY_HEAD, text.length - KEY_TAIL)
}

/** `{"x": [a, b]}` pretty: `{\n  "x": [\n` + the elements as at depth 2, one per line + `\n  ]\n}`. */
const NESTED_HEAD = '{\n  "x": [\n'.length
const NESTED_TAIL = "\n  ]\n}".length

/** `[a, b]` pretty: `[\n` + the elements as at depth 1 + `\n]`. */
const TOP_HEAD = "[\n".length
const TOP_TAIL = "\n]".length

/** The elements of `items` (not empty), one per line as at depth 1 (a top-level array) or 2, a few hundred per piece. */
function* elementLines(items: ReadonlyArray<unknown>, depth: 1 | 2): Generator<string> {
  for (let start = 0; start < items.length; start += ELEMENTS_PER_PIECE) {
    const slice = items.slice(start, start + ELEMENTS_PER_PIECE)
    const text = depth === 1 ? JSON.stringify(slice, null, 2) : JSON.stringify({ x: slice }, null, 2)
    const [head, tail] = depth === 1 ? [TOP_HEAD, TOP_TAIL] : [NESTED_HEAD, NESTED_TAIL]
    yield (start === 0 ? "" : ",\n") + text.slice(head, text.length - tail)
  }
}

/** The pretty-printed document of `value` with a final newline, in pieces whose concatenation is exactly it. */
export function* jsonPieces(value: unknown): Generator<string> {
  if (!splittable(value)) return yield `${JSON.stringify(value, null, 2)}\n`
  if (Array.isArray(value)) {
    if (value.length === 0) return yield "[]\n"
    yield "[\n"
    yield* elementLines(value, 1)
    return yield "\n]\n"
  }
  const keys = Object.keys(value).filter((k) => !omitted(value[k]))
  if (keys.length === 0) return yield "{}\n"
  let first = true
  for (const key of keys) {
    const v = value[key]
    const head = `${first ? "{" : ","}\n  ${JSON.stringify(key)}: `
    first = false
    if (Array.isArray(v) && v.length > 0 && splittable(v)) {
      yield `${head}[\n`
      yield* elementLines(v, 2)
      yield "\n  ]"
    } else {
      yield head + atDepthOne(v)
    }
  }
  yield "\n}\n"
}
