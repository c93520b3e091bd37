/**
 * YAML read into the common config tree (`ConfigTree.ts`) with `yaml` 2.9.1's document API: every scalar with
 * the source range the parser gives it. A stream of several documents is one tree (then the document's index is
 * the first path segment). Refused: any parse error or warning (an unknown tag …), a key that is not a scalar,
 * two keys that read the same, more than `MAX_ALIASES` aliases; aliases are expanded under the path that uses
 * them, within the depth and node limits (so a "billion laughs" stream is refused, not expanded). Pure.
 */
import { CST, isAlias, isMap, isScalar, isSeq, Lexer, parseAllDocuments, type Document, type Node } from "yaml"
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

export const MAX_ALIASES = 1000

class Refused {
  constructor(readonly why: string) {}
}

/** YAML 1.2 core's spellings of a boolean; a 1.1 `yes` / `on` is a boolean that is not written as one. */
const CANONICAL_BOOLEAN = /^(true|false|True|False|TRUE|FALSE)$/

/** Anchors, tags and aliases by their source spans (the lexer's tokens laid end to end are the text). */
const propSpans = (text: string): Array<readonly [number, number]> | null => {
  const spans: Array<readonly [number, number]> = []
  let at = 0
  for (const token of new Lexer().lex(text)) {
    // The lexer's own control tokens (document, scalar, flow-error-end) are not source text.
    if (token === "\x02" || token === "\x1f" || token === "\x18") continue
    const type = CST.tokenType(token)
    if (type === "anchor" || type === "tag" || type === "alias") spans.push([at, at + token.length])
    at += token.length
  }
  return at === text.length ? spans : null
}

const parse = (text: string): TreeParse => {
  const opaque = propSpans(text)
  if (opaque === null) return refused("its tokens do not cover the text")
  // Duplicate keys are caught below, per map, in one pass: yaml's own check compares each key with every other.
  const docs = parseAllDocuments(text, { uniqueKeys: false, prettyErrors: false, merge: false, logLevel: "silent", strict: true })
  const leaves: Array<Leaf> = []
  const paths = new Set<string>()
  let nodes = 0
  let aliases = 0
  const walk = (doc: Document, node: unknown, path: ReadonlyArray<PathSegment>, depth: number, aliased: boolean): void => {
    if (++nodes > MAX_TREE_NODES) throw new Refused(`more than ${MAX_TREE_NODES} values (aliases expanded)`)
    if (depth > MAX_TREE_DEPTH) throw new Refused(`nested deeper than ${MAX_TREE_DEPTH} (aliases expanded)`)
    if (node === null || node === undefined) return
    if (isAlias(node)) {
      if (++aliases > MAX_ALIASES) throw new Refused(`more than ${MAX_ALIASES} aliases`)
      const target = node.resolve(doc)
      if (target === undefined) throw new Refused(`the alias *${node.source} names no anchor`)
      return walk(doc, target, path, depth + 1, true)
    }
    if (isMap(node)) {
      const keys = new Set<string>()
      for (const pair of node.items) {
        const key = pair.key
        if (!isScalar(key)) throw new Refused("a key that is not a scalar")
        const name = String(key.value)
        if (keys.has(name)) throw new Refused(`a duplicate key ${JSON.stringify(name)}`)
        keys.add(name)
        walk(doc, pair.value, [...path, name], depth + 1, aliased)
      }
      return
    }
    if (isSeq(node)) {
      node.items.forEach((item, i) => walk(doc, item, [...path, i], depth + 1, aliased))
      return
    }
    if (isScalar(node)) {
      const range = node.range
      if (range === undefined || range === null) throw new Refused("a scalar without a source range")
      const start = range[0]
      let end = range[1]
      // A block scalar's range takes in its final line break(s): the break belongs to the layout, not the value.
      while (end > start && (text[end - 1] === "\n" || text[end - 1] === "\r")) end--
      const source = text.slice(start, end)
      const v = node.value
      const value: LeafValue = typeof v === "string" ? { type: "string", value: v }
        : typeof v === "number" || typeof v === "bigint" ? { type: "number", raw: source }
        : typeof v === "boolean" ? { type: "boolean", value: v, canonical: CANONICAL_BOOLEAN.test(source) }
        : v === null ? { type: "null" }
        : { type: "other", raw: source }
      const key = pathKey(path)
      if (paths.has(key)) throw new Refused(`two keys read as ${JSON.stringify(path[path.length - 1])}`)
      paths.add(key)
      leaves.push({ path, value, start, end, aliased })
      return
    }
    throw new Refused("a node of an unknown kind")
  }
  try {
    docs.forEach((doc, i) => {
      const problem = doc.errors[0] ?? doc.warnings[0]
      if (problem !== undefined) throw new Refused(problem.message.split("\n")[0]!)
      walk(doc as Document, doc.contents as Node | null, docs.length > 1 ? [i] : [], 0, false)
    })
  } catch (e) {
    if (e instanceof Refused) return refused(e.why)
    throw e
  }
  return { ok: true, tree: { leaves, opaque } }
}

/** Double-quoted, escaping what YAML does not allow raw in one (C0, DEL, C1, line and paragraph separators, BOM). */
const quote = (s: string): string | null =>
  doubleQuoted(s, (c) => c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029 || c === 0xfeff, true)

export const YAML_FORMAT: ConfigFormat = { label: "YAML", parse, quote }
