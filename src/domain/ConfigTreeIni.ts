/**
 * INI and `.npmrc` read into the common config tree (`ConfigTree.ts`), line by line, as npm's `ini` reads them
 * (`[section]`, `key = value`, `key[] = value` for a list, `;` and `#` comment lines, `"…"` values JSON-decoded,
 * `true` / `false` / `null`), refusing where INI readers disagree rather than pick one: a line without `=`, a
 * value holding `;`, `#` or `\` outside quotes (an inline comment to one reader, text to another), a quoted key,
 * a single-quoted value that is also JSON, an indented line, a key given twice. Pure.
 */
import { type ConfigFormat, doubleQuoted, type Leaf, type LeafValue, linesWithOffsets, MAX_TREE_NODES, type PathSegment, pathKey, refused, type TreeParse } from "./ConfigTree.js"

const SECTION = /^\[([^\]]*)\]$/

const parse = (text: string): TreeParse => {
  const leaves: Array<Leaf> = []
  const seen = new Set<string>()
  const lists = new Map<string, number>()
  let section: string | null = null
  const bom = text.startsWith("\ufeff") ? 1 : 0
  for (const [n, line] of linesWithOffsets(text).entries()) {
    const at = (why: string) => refused(`${why} on line ${n + 1}`)
    const lineText = n === 0 ? line.text.slice(bom) : line.text
    const lineStart = n === 0 ? line.start + bom : line.start
    const trimmed = lineText.trim()
    if (trimmed === "" || trimmed.startsWith(";") || trimmed.startsWith("#")) continue
    if (/^\s/.test(lineText)) return at("an indented line (a continuation of the value above to some readers)")
    const header = SECTION.exec(trimmed)
    if (header !== null) {
      section = header[1]!
      continue
    }
    const eq = lineText.indexOf("=")
    if (eq === -1) return at("a line without '='")
    const rawKey = lineText.slice(0, eq).trim()
    if (rawKey === "" || /["'\\]/.test(rawKey)) return at("an empty or quoted key")
    const list = rawKey.endsWith("[]")
    const name = list ? rawKey.slice(0, -2) : rawKey
    const afterEq = lineText.slice(eq + 1)
    const lead = afterEq.length - afterEq.trimStart().length
    const raw = afterEq.trim()
    const start = lineStart + eq + 1 + lead
    let value: LeafValue
    if (raw.startsWith("\"")) {
      let decoded: unknown
      try {
        decoded = raw.length >= 2 && raw.endsWith("\"") ? JSON.parse(raw) : undefined
      } catch {
        decoded = undefined
      }
      if (typeof decoded !== "string") return at("a double-quoted value that is not a JSON string")
      value = { type: "string", value: decoded }
    } else if (raw.startsWith("'")) {
      const inner = raw.slice(1, -1)
      if (raw.length < 2 || !raw.endsWith("'") || inner.includes("'")) return at("a single-quoted value that is not closed")
      let json = true
      try {
        JSON.parse(inner)
      } catch {
        json = false
      }
      // npm's reader JSON-decodes what is inside single quotes when it can: a value it reads two ways.
      if (json) return at("a single-quoted value that is also JSON")
      value = { type: "string", value: inner }
    } else {
      if (/[;#\\"']/.test(raw)) return at("a ';', '#', '\\' or quote inside a value (an inline comment to some readers)")
      value = raw === "true" || raw === "false" ? { type: "boolean", value: raw === "true", canonical: true }
        : raw === "null" ? { type: "null" }
        : { type: "string", value: raw }
    }
    const base: ReadonlyArray<PathSegment> = section === null ? [name] : [section, name]
    const baseKey = pathKey(base)
    let path: ReadonlyArray<PathSegment> = base
    if (list) {
      if (seen.has(baseKey)) return at(`${JSON.stringify(name)} given both as a value and a list`)
      const i = lists.get(baseKey) ?? 0
      lists.set(baseKey, i + 1)
      path = [...base, i]
    } else {
      if (seen.has(baseKey) || lists.has(baseKey)) return at(`${JSON.stringify(name)} given twice`)
      seen.add(baseKey)
    }
    if (leaves.length >= MAX_TREE_NODES) return at(`more than ${MAX_TREE_NODES} values`)
    leaves.push({ path, value, start, end: start + raw.length, aliased: false })
  }
  return { ok: true, tree: { leaves, opaque: [] } }
}

/** A JSON string, which npm's reader decodes back. */
const quote = (s: string): string | null => doubleQuoted(s, (c) => c < 0x20, true)

export const INI_FORMAT: ConfigFormat = { label: "INI", parse, quote }
