/**
 * TOML read into the common config tree (`ConfigTree.ts`) by a small line-oriented reader of the common subset:
 * comments, `[table]` and `[[array of tables]]` headers, `key = value` with bare, quoted and dotted keys, basic
 * and literal one-line strings, numbers, booleans, dates and times, and arrays (across lines too). It refuses
 * what it does not fully read rather than guess: multi-line strings (`"""`, `'''`), inline tables (`{ … }`),
 * a key or table defined twice, a value where a table is (or the reverse). Pure.
 */
import {
  type ConfigFormat,
  doubleQuoted,
  type Leaf,
  type LeafValue,
  MAX_TREE_DEPTH,
  MAX_TREE_NODES,
  type PathSegment,
  pathKey,
  refused,
  type TreeParse
} from "./ConfigTree.js"

const HEX = /^[0-9A-Fa-f]+$/

class Refused {
  constructor(readonly why: string) {}
}

const BARE_KEY = /[A-Za-z0-9_-]+/y
const DATE_TIME = /(?:\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})?)?|\d{2}:\d{2}:\d{2}(?:\.\d+)?)/y
const NUMBER = /[+-]?(?:inf|nan|0x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*|0o[0-7](?:_?[0-7])*|0b[01](?:_?[01])*|(?:0|[1-9](?:_?\d)*)(?:\.\d(?:_?\d)*)?(?:[eE][+-]?\d(?:_?\d)*)?)/y
/** Where a value may end: space, a comma or bracket of an array, a comment, the line's end. */
const VALUE_END = /[ \t,\]#\r\n]/

/** What a path is, so a redefinition is caught. */
type Kind = "table" | "implicit" | "dotted" | "array" | "value"

const parse = (text: string): TreeParse => {
  const leaves: Array<Leaf> = []
  const kinds = new Map<string, Kind>()
  const arrayLengths = new Map<string, number>()
  let pos = text.startsWith("\ufeff") ? 1 : 0
  let nodes = 0
  let table: ReadonlyArray<PathSegment> = []

  const fail = (what: string): never => {
    throw new Refused(`${what} at offset ${pos}`)
  }
  const skipBlank = () => {
    while (text[pos] === " " || text[pos] === "\t") pos++
  }
  /** A comment (if any), then the end of the line or of the text. */
  const endOfLine = () => {
    skipBlank()
    if (text[pos] === "#") {
      while (pos < text.length && text[pos] !== "\n") {
        const c = text.charCodeAt(pos)
        if ((c < 0x20 && c !== 0x09 && c !== 0x0d) || c === 0x7f) fail("a control character in a comment")
        pos++
      }
    }
    if (text[pos] === "\r" && text[pos + 1] === "\n") pos++
    if (pos < text.length && text[pos] !== "\n") fail("more after a value")
    pos++
  }
  /** Blank lines, comments and line breaks inside an array. */
  const skipArraySpace = () => {
    for (;;) {
      skipBlank()
      if (text[pos] === "#") {
        const nl = text.indexOf("\n", pos)
        pos = nl === -1 ? text.length : nl
        continue
      }
      if (text[pos] === "\n" || (text[pos] === "\r" && text[pos + 1] === "\n")) {
        pos += text[pos] === "\r" ? 2 : 1
        continue
      }
      return
    }
  }

  const basicString = (): string => {
    if (text.startsWith("\"\"\"", pos)) fail("a multi-line string (not read)")
    pos++
    let out = ""
    for (;;) {
      const c = text[pos]
      if (c === undefined || c === "\n") return fail("an unclosed string")
      pos++
      if (c === "\"") return out
      if (c === "\\") {
        const e = text[pos++]
        const hex = (n: number) => {
          const digits = text.slice(pos, pos + n)
          if (digits.length !== n || !HEX.test(digits)) fail("a bad escape")
          pos += n
          const code = parseInt(digits, 16)
          if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) fail("an escape that is not a character")
          return String.fromCodePoint(code)
        }
        switch (e) {
          case "b": out += "\b"; break
          case "t": out += "\t"; break
          case "n": out += "\n"; break
          case "f": out += "\f"; break
          case "r": out += "\r"; break
          case "\"": out += "\""; break
          case "\\": out += "\\"; break
          case "u": out += hex(4); break
          case "U": out += hex(8); break
          default: fail("an escape TOML 1.0 does not have")
        }
        continue
      }
      const code = c.charCodeAt(0)
      if ((code < 0x20 && code !== 0x09) || code === 0x7f) fail("a control character in a string")
      // A run of plain characters in one slice.
      let end = pos
      for (; end < text.length; end++) {
        const d = text.charCodeAt(end)
        if (d === 0x22 || d === 0x5c || (d < 0x20 && d !== 0x09) || d === 0x7f) break
      }
      out += c + text.slice(pos, end)
      pos = end
    }
  }

  const literalString = (): string => {
    if (text.startsWith("'''", pos)) fail("a multi-line string (not read)")
    const close = text.indexOf("'", pos + 1)
    const nl = text.indexOf("\n", pos + 1)
    if (close === -1 || (nl !== -1 && nl < close)) fail("an unclosed string")
    const s = text.slice(pos + 1, close)
    if (/[\x00-\x08\x0a-\x1f\x7f]/.test(s)) fail("a control character in a string")
    pos = close + 1
    return s
  }

  const key = (): Array<string> => {
    const parts: Array<string> = []
    for (;;) {
      skipBlank()
      const c = text[pos]
      if (c === "\"") parts.push(basicString())
      else if (c === "'") parts.push(literalString())
      else {
        BARE_KEY.lastIndex = pos
        const m = BARE_KEY.exec(text)
        if (m === null) return fail("a key was expected")
        parts.push(m[0])
        pos += m[0].length
      }
      skipBlank()
      if (text[pos] !== ".") return parts
      pos++
    }
  }

  const value = (path: ReadonlyArray<PathSegment>, depth: number): void => {
    if (++nodes > MAX_TREE_NODES) fail(`more than ${MAX_TREE_NODES} values`)
    if (depth > MAX_TREE_DEPTH) fail(`nested deeper than ${MAX_TREE_DEPTH}`)
    const start = pos
    const c = text[pos]
    const leaf = (v: LeafValue) => {
      if (pos < text.length && !VALUE_END.test(text[pos]!)) fail("more after a value")
      leaves.push({ path, value: v, start, end: pos, aliased: false })
    }
    if (c === "\"") return leaf({ type: "string", value: basicString() })
    if (c === "'") return leaf({ type: "string", value: literalString() })
    if (c === "{") return fail("an inline table (not read)")
    if (c === "[") {
      pos++
      for (let i = 0; ; i++) {
        skipArraySpace()
        if (text[pos] === "]") {
          pos++
          return
        }
        value([...path, i], depth + 1)
        skipArraySpace()
        if (text[pos] === ",") {
          pos++
          continue
        }
        if (text[pos] === "]") {
          pos++
          return
        }
        fail("',' or ']' was expected")
      }
    }
    for (const [word, v] of [["true", true], ["false", false]] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length
        return leaf({ type: "boolean", value: v, canonical: true })
      }
    }
    DATE_TIME.lastIndex = pos
    const date = DATE_TIME.exec(text)
    if (date !== null) {
      pos += date[0].length
      return leaf({ type: "other", raw: date[0] })
    }
    NUMBER.lastIndex = pos
    const number = NUMBER.exec(text)
    if (number !== null) {
      pos += number[0].length
      return leaf({ type: "number", raw: number[0] })
    }
    fail("a value was expected")
  }

  /** A header's path, with each array of tables on the way standing for its last element. */
  const resolve = (parts: ReadonlyArray<string>): Array<PathSegment> => {
    const out: Array<PathSegment> = []
    for (const part of parts) {
      out.push(part)
      const length = arrayLengths.get(pathKey(out))
      if (length !== undefined) out.push(length - 1)
    }
    return out
  }
  const claim = (path: ReadonlyArray<PathSegment>, kind: Kind) => {
    const key = pathKey(path)
    const was = kinds.get(key)
    const ok = was === undefined ||
      (kind === "implicit" && (was === "implicit" || was === "table" || was === "dotted" || was === "array")) ||
      (kind === "dotted" && (was === "dotted" || was === "implicit")) ||
      (kind === "table" && was === "implicit")
    if (!ok) fail(`${JSON.stringify(path.join("."))} is defined twice`)
    if (was === undefined || kind === "table") kinds.set(key, kind)
  }

  try {
    while (pos < text.length) {
      skipBlank()
      const c = text[pos]
      if (c === undefined) break
      if (c === "\n" || c === "\r" || c === "#") {
        endOfLine()
        continue
      }
      if (c === "[") {
        const array = text[pos + 1] === "["
        pos += array ? 2 : 1
        const parts = key()
        if (!text.startsWith(array ? "]]" : "]", pos)) fail("a header was not closed")
        pos += array ? 2 : 1
        const parent = resolve(parts.slice(0, -1))
        for (let i = 1; i <= parent.length; i++) if (typeof parent[i - 1] === "string") claim(parent.slice(0, i), "implicit")
        const path = [...parent, parts[parts.length - 1]!]
        if (array) {
          const key = pathKey(path)
          const was = kinds.get(key)
          if (was !== undefined && was !== "array") fail(`${JSON.stringify(parts.join("."))} is not an array of tables`)
          kinds.set(key, "array")
          const length = (arrayLengths.get(key) ?? 0) + 1
          arrayLengths.set(key, length)
          table = [...path, length - 1]
        } else {
          claim(path, "table")
          table = path
        }
        endOfLine()
        continue
      }
      const parts = key()
      if (text[pos] !== "=") fail("'=' was expected")
      pos++
      skipBlank()
      for (let i = 1; i < parts.length; i++) claim([...table, ...parts.slice(0, i)], "dotted")
      const path = [...table, ...parts]
      claim(path, "value")
      value(path, path.length)
      endOfLine()
    }
  } catch (e) {
    if (e instanceof Refused) return refused(e.why)
    throw e
  }
  return { ok: true, tree: { leaves, opaque: [] } }
}

/** A basic string: `"`, `\`, control characters and DEL escaped; a lone surrogate cannot be written. */
const quote = (s: string): string | null => doubleQuoted(s, (c) => c < 0x20 || c === 0x7f, false)

export const TOML_FORMAT: ConfigFormat = { label: "TOML", parse, quote }
