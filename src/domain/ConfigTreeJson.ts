/**
 * JSON (RFC 8259), JSONC (JSON with `//` and `/* *\/` comments and trailing commas, as VS Code reads it) and
 * JSON5 read into the common config tree (`ConfigTree.ts`): one recursive-descent reader, the dialect saying
 * what it accepts beyond JSON. Duplicate keys are refused (a rollback could not tell which one a live value
 * belongs to), and so is nesting deeper than `MAX_TREE_DEPTH`. Pure.
 */
import {
  type ConfigFormat,
  type ConfigTree,
  doubleQuoted,
  type Leaf,
  MAX_TREE_DEPTH,
  MAX_TREE_NODES,
  type PathSegment,
  refused,
  type TreeParse
} from "./ConfigTree.js"

type Dialect = "json" | "jsonc" | "json5"

const HEX = /^[0-9A-Fa-f]+$/

class Refused {
  constructor(readonly why: string) {}
}

const JSON5_SPACE = /[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/
const ID_START = /[\p{ID_Start}$_]/u
const ID_CONTINUE = /[\p{ID_Continue}$\u200c\u200d]/u
const JSON_NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const JSON5_NUMBER = /[+-]?(?:Infinity|NaN|0[xX][0-9a-fA-F]+|(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)/y

const parseWith = (dialect: Dialect) => (text: string): TreeParse => {
  const leaves: Array<Leaf> = []
  const comments = dialect !== "json"
  const json5 = dialect === "json5"
  let pos = text.startsWith("\ufeff") ? 1 : 0
  let nodes = 0

  const fail = (what: string): never => {
    throw new Refused(`${what} at offset ${pos}`)
  }
  const skipSpace = () => {
    for (;;) {
      const c = text[pos]
      if (c === undefined) return
      if (c === " " || c === "\t" || c === "\n" || c === "\r" || (json5 && JSON5_SPACE.test(c))) {
        pos++
        continue
      }
      if (comments && c === "/" && text[pos + 1] === "/") {
        const nl = text.indexOf("\n", pos)
        pos = nl === -1 ? text.length : nl
        continue
      }
      if (comments && c === "/" && text[pos + 1] === "*") {
        const end = text.indexOf("*/", pos + 2)
        if (end === -1) fail("an unclosed comment")
        pos = end + 2
        continue
      }
      return
    }
  }

  const hex = (n: number): number => {
    const digits = text.slice(pos, pos + n)
    if (digits.length !== n || !HEX.test(digits)) fail("a bad escape")
    pos += n
    return parseInt(digits, 16)
  }

  const readString = (): string => {
    const quote = text[pos]!
    pos++
    let out = ""
    for (;;) {
      const c = text[pos]
      if (c === undefined) return fail("an unclosed string")
      if (c === quote) {
        pos++
        return out
      }
      if (c === "\\") {
        pos++
        const e = text[pos]
        if (e === undefined) return fail("an unclosed string")
        pos++
        switch (e) {
          case "\"": out += "\""; break
          case "\\": out += "\\"; break
          case "/": out += "/"; break
          case "b": out += "\b"; break
          case "f": out += "\f"; break
          case "n": out += "\n"; break
          case "r": out += "\r"; break
          case "t": out += "\t"; break
          case "u": out += String.fromCharCode(hex(4)); break
          default: {
            if (!json5) return fail("a bad escape")
            if (e === "'") out += "'"
            else if (e === "v") out += "\v"
            else if (e === "x") out += String.fromCharCode(hex(2))
            else if (e === "0" && !/[0-9]/.test(text[pos] ?? "")) out += "\0"
            else if (/[1-9]/.test(e) || e === "0") return fail("a bad escape")
            else if (e === "\r") {
              if (text[pos] === "\n") pos++
            } else if (e === "\n" || e === "\u2028" || e === "\u2029") {
              // A line continuation: nothing.
            } else out += e
          }
        }
        continue
      }
      if (c === "\n" || c === "\r" || (!json5 && c.charCodeAt(0) < 0x20)) return fail("a control character in a string")
      // A run of plain characters in one slice (one string, not one per character).
      let end = pos + 1
      for (; end < text.length; end++) {
        const d = text.charCodeAt(end)
        if (d === 0x5c || d === quote.charCodeAt(0) || d === 0x0a || d === 0x0d || (!json5 && d < 0x20)) break
      }
      out += text.slice(pos, end)
      pos = end
    }
  }

  const readKey = (): string => {
    const c = text[pos]
    if (c === "\"" || (json5 && c === "'")) return readString()
    if (json5 && c !== undefined && ID_START.test(c)) {
      const start = pos
      pos++
      while (text[pos] !== undefined && ID_CONTINUE.test(text[pos]!)) pos++
      // A surrogate pair is two code units: the `u` regexes see each half alone and stop; a key may not hold one.
      return text.slice(start, pos)
    }
    return fail("a key was expected")
  }

  const value = (path: ReadonlyArray<PathSegment>, depth: number): void => {
    if (++nodes > MAX_TREE_NODES) fail(`more than ${MAX_TREE_NODES} values`)
    if (depth > MAX_TREE_DEPTH) fail(`nested deeper than ${MAX_TREE_DEPTH}`)
    skipSpace()
    const c = text[pos]
    const start = pos
    const leaf = (v: Leaf["value"]) => leaves.push({ path, value: v, start, end: pos, aliased: false })
    if (c === "{") {
      pos++
      const seen = new Set<string>()
      skipSpace()
      if (text[pos] === "}") {
        pos++
        return
      }
      for (;;) {
        skipSpace()
        if (dialect !== "json" && text[pos] === "}" && seen.size > 0) {
          pos++
          return
        }
        const key = readKey()
        if (seen.has(key)) fail(`a duplicate key ${JSON.stringify(key)}`)
        seen.add(key)
        skipSpace()
        if (text[pos] !== ":") fail("':' was expected")
        pos++
        value([...path, key], depth + 1)
        skipSpace()
        if (text[pos] === ",") {
          pos++
          continue
        }
        if (text[pos] === "}") {
          pos++
          return
        }
        fail("',' or '}' was expected")
      }
    }
    if (c === "[") {
      pos++
      skipSpace()
      if (text[pos] === "]") {
        pos++
        return
      }
      for (let i = 0; ; i++) {
        skipSpace()
        if (dialect !== "json" && text[pos] === "]" && i > 0) {
          pos++
          return
        }
        value([...path, i], depth + 1)
        skipSpace()
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
    if (c === "\"" || (json5 && c === "'")) return void leaf({ type: "string", value: readString() })
    for (const [word, v] of [["true", true], ["false", false]] as const) {
      if (text.startsWith(word, pos) && !isWordChar(text[pos + word.length])) {
        pos += word.length
        return void leaf({ type: "boolean", value: v, canonical: true })
      }
    }
    if (text.startsWith("null", pos) && !isWordChar(text[pos + 4])) {
      pos += 4
      return void leaf({ type: "null" })
    }
    const number = json5 ? JSON5_NUMBER : JSON_NUMBER
    number.lastIndex = pos
    const m = number.exec(text)
    if (m !== null && !isWordChar(text[pos + m[0].length])) {
      pos += m[0].length
      return void leaf({ type: "number", raw: m[0] })
    }
    fail("a value was expected")
  }

  try {
    value([], 0)
    skipSpace()
    if (pos !== text.length) fail("text after the value")
    return { ok: true, tree: { leaves, opaque: [] } satisfies ConfigTree }
  } catch (e) {
    if (e instanceof Refused) return refused(e.why)
    throw e
  }
}

const isWordChar = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}$_.]/u.test(c)

/** JSON.stringify's escapes (control characters), which every dialect reads. */
const quoteJson = (s: string): string | null => doubleQuoted(s, (c) => c < 0x20, true)

export const JSON_FORMAT: ConfigFormat = { label: "JSON", parse: parseWith("json"), quote: quoteJson }
export const JSONC_FORMAT: ConfigFormat = { label: "JSONC", parse: parseWith("jsonc"), quote: quoteJson }
export const JSON5_FORMAT: ConfigFormat = { label: "JSON5", parse: parseWith("json5"), quote: quoteJson }
