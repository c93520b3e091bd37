/**
 * The common tree every config format is read into for redaction (docs/config-history.md "Config history"): a document's scalar
 * leaves, each with its key path, its value and the span of its source text. A rewrite replaces a value's span
 * and leaves every other character (comments, layout, quoting elsewhere) as it was. The parsers
 * (`ConfigTreeJson.ts`, `ConfigTreeYaml.ts`, `ConfigTreeToml.ts`, `ConfigTreeIni.ts`, `ConfigTreeEnv.ts`) are
 * strict: what they do not fully understand is refused with a reason, never guessed. Pure.
 */

/** An object key, or an array index. */
export type PathSegment = string | number

export type LeafValue =
  | { readonly type: "string"; readonly value: string }
  | { readonly type: "number"; readonly raw: string }
  /** `canonical`: written `true` / `false` (a YAML 1.1 `yes` is a boolean that is not). */
  | { readonly type: "boolean"; readonly value: boolean; readonly canonical: boolean }
  | { readonly type: "null" }
  /** A scalar of another type (a TOML date, a tagged YAML scalar …), by its source text. */
  | { readonly type: "other"; readonly raw: string }

export interface Leaf {
  readonly path: ReadonlyArray<PathSegment>
  readonly value: LeafValue
  /** The value's source text is `text.slice(start, end)`. */
  readonly start: number
  readonly end: number
  /** Met through a YAML alias: its text is the anchored node's, which also sits under another path. */
  readonly aliased: boolean
}

export interface ConfigTree {
  readonly leaves: ReadonlyArray<Leaf>
  /** Source spans that are neither values nor text to read (YAML anchors, tags and aliases). */
  readonly opaque: ReadonlyArray<readonly [number, number]>
}

export type TreeParse = { readonly ok: true; readonly tree: ConfigTree } | { readonly ok: false; readonly why: string }

export interface ConfigFormat {
  /** For people: `JSON`, `YAML` … */
  readonly label: string
  readonly parse: (text: string) => TreeParse
  /** Source text that `parse` reads back as the string `s` in a value's place, or `null` when it cannot be written. */
  readonly quote: (s: string) => string | null
}

/** Files larger than this are not read at all (the config budget is 1 MiB; this bounds a caller that passes more). */
export const MAX_TREE_BYTES = 4 << 20
/** Nesting deeper than this is refused (a config file is shallow; the parsers recurse). */
export const MAX_TREE_DEPTH = 64
/** Values (scalars and containers, aliases expanded) a document may hold before it is refused. */
export const MAX_TREE_NODES = 100_000

export const refused = (why: string): TreeParse => ({ ok: false, why })

/** One string per path, for maps keyed by path. */
export const pathKey = (path: ReadonlyArray<PathSegment>): string => JSON.stringify(path)

/** A JSON pointer (RFC 6901) of a path: what reports name a value by. */
export const pointerOf = (path: ReadonlyArray<PathSegment>): string =>
  path.map((p) => "/" + String(p).replace(/~/g, "~0").replace(/\//g, "~1")).join("")

/** 1-based line of an offset. */
export const lineOf = (text: string, offset: number): number => {
  let line = 1
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) line++
  return line
}

/** Same value (type and source-independent content; numbers and other scalars by their text). */
export const sameLeafValue = (a: LeafValue, b: LeafValue): boolean => {
  switch (a.type) {
    case "string":
      return b.type === "string" && a.value === b.value
    case "number":
      return b.type === "number" && a.raw === b.raw
    case "boolean":
      return b.type === "boolean" && a.value === b.value
    case "null":
      return b.type === "null"
    case "other":
      return b.type === "other" && a.raw === b.raw
  }
}

/**
 * `"…"` with `"`, `\`, and every code unit `mustEscape` names escaped (`\n`, `\t` … or `\uXXXX`): the one
 * double-quoted form JSON, JSON5, YAML, TOML and npm's INI all read back. A lone surrogate is `null` where
 * `surrogates` is false (TOML cannot escape one).
 */
export const doubleQuoted = (s: string, mustEscape: (code: number) => boolean, surrogates: boolean): string | null => {
  const parts: Array<string> = ["\""]
  let from = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    let escaped: string | null = null
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = s.charCodeAt(i + 1)
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
      if (!surrogates) return null
      escaped = "\\u" + c.toString(16).padStart(4, "0")
    } else if (c === 0x22) escaped = "\\\""
    else if (c === 0x5c) escaped = "\\\\"
    else if (c === 0x0a) escaped = "\\n"
    else if (c === 0x09) escaped = "\\t"
    else if (c === 0x0d) escaped = "\\r"
    else if (mustEscape(c)) escaped = "\\u" + c.toString(16).padStart(4, "0")
    if (escaped === null) continue
    parts.push(s.slice(from, i), escaped)
    from = i + 1
  }
  parts.push(s.slice(from), "\"")
  return parts.join("")
}

/** Split a text into lines with their offsets (`\n` ends a line; a `\r` before it is not part of the line). */
export const linesWithOffsets = (text: string): ReadonlyArray<{ readonly text: string; readonly start: number }> => {
  const out: Array<{ text: string; start: number }> = []
  let start = 0
  while (start <= text.length) {
    const nl = text.indexOf("\n", start)
    const end = nl === -1 ? text.length : nl
    const lineEnd = end > start && text[end - 1] === "\r" ? end - 1 : end
    out.push({ text: text.slice(start, lineEnd), start })
    if (nl === -1) break
    start = nl + 1
  }
  return out
}
