/**
 * Env files (`.env`, `*.env`) read into the common config tree (`ConfigTree.ts`), line by line: `# comments`,
 * `[export ]KEY=value` with the value bare, `'single-quoted'` or `"double-quoted"`, and a `# comment` after
 * it. Where dotenv, a shell and other readers would read a value differently it is refused, not guessed:
 * escapes, `$` expansion (except a value that is exactly `$NAME` / `${NAME}`, a reference), backquotes, a value
 * running over several lines, a bare value with a space or `#` inside, a key given twice. Pure.
 */
import { type ConfigFormat, type Leaf, linesWithOffsets, MAX_TREE_NODES, refused, type TreeParse } from "./ConfigTree.js"

const ASSIGNMENT = /^([ \t]*(?:export[ \t]+)?)([A-Za-z_][A-Za-z0-9_.-]*)([ \t]*=[ \t]*)/
const REFERENCE = /^\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})$/
/** What ends a value: nothing, or blanks and a comment. */
const TAIL = /^(?:[ \t]+#.*|[ \t]*)$/

const parse = (text: string): TreeParse => {
  const leaves: Array<Leaf> = []
  const seen = new Set<string>()
  const bom = text.startsWith("\ufeff") ? 1 : 0
  for (const [n, line] of linesWithOffsets(text).entries()) {
    const at = (why: string) => refused(`${why} on line ${n + 1}`)
    const lineText = n === 0 ? line.text.slice(bom) : line.text
    const lineStart = n === 0 ? line.start + bom : line.start
    const trimmed = lineText.trim()
    if (trimmed === "" || trimmed.startsWith("#")) continue
    const m = ASSIGNMENT.exec(lineText)
    if (m === null) return at("a line that is not KEY=value")
    const key = m[2]!
    const offset = m[0].length
    const rest = lineText.slice(offset)
    let value: string
    let length: number
    const q = rest[0]
    if (q === "\"" || q === "'") {
      const close = rest.indexOf(q, 1)
      if (close === -1) return at("a quoted value that does not close on its line")
      value = rest.slice(1, close)
      length = close + 1
      if (q === "\"" && /[\\`]/.test(value)) return at("an escape or backquote in a double-quoted value")
      if (q === "\"" && value.includes("$") && !REFERENCE.test(value)) return at("a '$' expansion in a double-quoted value")
    } else {
      const bare = /^[^ \t]*/.exec(rest)![0]
      value = bare
      length = bare.length
      if (/["'`\\#]/.test(bare)) return at("a quote, backquote, '\\' or '#' inside a bare value")
      if (bare.includes("$") && !REFERENCE.test(bare)) return at("a '$' expansion in a bare value")
    }
    if (!TAIL.test(rest.slice(length))) return at("more after the value (a bare value with a space, or text after quotes)")
    if (seen.has(key)) return at(`${key} given twice`)
    seen.add(key)
    if (leaves.length >= MAX_TREE_NODES) return at(`more than ${MAX_TREE_NODES} values`)
    const start = lineStart + offset
    leaves.push({ path: [key], value: { type: "string", value }, start, end: start + length, aliased: false })
  }
  return { ok: true, tree: { leaves, opaque: [] } }
}

/** Double quotes where no reader expands anything in them, else single quotes; else it cannot be written. */
const quote = (s: string): string | null =>
  /[\r\n]/.test(s) ? null : !/["\\$`]/.test(s) ? `"${s}"` : !s.includes("'") ? `'${s}'` : null

export const ENV_FORMAT: ConfigFormat = { label: "env", parse, quote }
