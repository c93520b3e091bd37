/**
 * The user-preference archive on disk (docs/user-profile.md "User preference archive"), pure: OKF documents (YAML front matter between `---`
 * lines, a blank line, the body), shard names derived from content only, the index, splitting a body into
 * bounded shards, and the pending-write journal.
 *
 * Front matter is read and written with `yaml` 2.9.1 (eemeli/yaml): a complete YAML 1.2 parser with no
 * dependencies of its own, typed, maintained, strict about errors (a broken block is reported, never half
 * read) and it tolerates any extra keys Pi or a person adds.
 */
import * as Schema from "effect/Schema"
import { isCollection, isPair, parseDocument, stringify } from "yaml"
import { sha256Hex } from "./Digest.js"
import { utf8Bytes } from "./Bytes.js"
import { bodyEntries, renderBody } from "./UserProfileText.js"

export const DEFAULT_SHARD_BUDGET_BYTES = 64 * 1024
export const INDEX_FILE = "index.okf.md"
export const SHARD_NAME_RE = /^user-preferences-[0-9a-f]{16}\.okf\.md$/
/** Shards or indexes larger than this are not parsed (a profile archive is small text). */
export const ARCHIVE_FILE_MAX_BYTES = 4 * 1024 * 1024

/** A shard's file name from its body only: the same entries give the same name anywhere, at any time. */
export const shardName = (entries: ReadonlyArray<string>): string =>
  `user-preferences-${sha256Hex(renderBody(entries)).slice(0, 16)}.okf.md`

/** A stable id of an entry (entries are unique in a profile, so their text identifies them). */
export const entryId = (text: string): string => sha256Hex(text).slice(0, 12)

export type OkfKind = "archived" | "index"

export interface OkfDocument {
  readonly frontMatter: Readonly<Record<string, unknown>>
  readonly body: string
}

/** Why a document does not parse, or the document. */
export type OkfParse = { readonly ok: true; readonly doc: OkfDocument } | { readonly ok: false; readonly why: string }

/** Front matter larger than this is refused unparsed (Pi writes a dozen short keys). */
export const FRONT_MATTER_MAX_BYTES = 64 * 1024
/** Deeper nesting than this is refused before it is converted (the keys Pi writes are two levels deep). */
export const FRONT_MATTER_MAX_DEPTH = 32
/** Alias expansions allowed while converting (`yaml`'s `maxAliasCount`): a "billion laughs" block stops here. */
export const FRONT_MATTER_MAX_ALIASES = 100

type Decoded = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly why: string }

/** The nesting depth of a parsed YAML node, walked without recursion (a hostile block cannot exhaust the stack). */
const depthOf = (root: unknown): number => {
  let deepest = 0
  const stack: Array<readonly [unknown, number]> = [[root, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (depth > FRONT_MATTER_MAX_DEPTH) return depth
    deepest = Math.max(deepest, depth)
    if (isCollection(node)) for (const item of node.items) stack.push([item, depth + 1])
    else if (isPair(node)) stack.push([node.key, depth], [node.value, depth])
  }
  return deepest
}

/**
 * The one guarded decoder of an OKF front-matter block (DESIGN "Safety rules": strict parser with limits on
 * size, depth and aliases). Every failure is a reason, never a throw: `yaml` parses an alias bomb without
 * complaint and only its conversion throws, so the conversion runs with `maxAliasCount` inside a guard.
 */
export const decodeFrontMatter = (yamlText: string): Decoded => {
  const size = utf8Bytes(yamlText)
  if (size > FRONT_MATTER_MAX_BYTES) return { ok: false, why: `front matter is ${size} bytes, over the ${FRONT_MATTER_MAX_BYTES}-byte limit` }
  try {
    // logLevel "error": no process warnings on stderr for odd keys; errors are reported below.
    const doc = parseDocument(yamlText, { prettyErrors: false, uniqueKeys: false, logLevel: "error" })
    if (doc.errors.length > 0) return { ok: false, why: `front matter is not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}` }
    if (depthOf(doc.contents) > FRONT_MATTER_MAX_DEPTH) return { ok: false, why: `front matter nests deeper than ${FRONT_MATTER_MAX_DEPTH} levels` }
    return { ok: true, value: doc.toJS({ maxAliasCount: FRONT_MATTER_MAX_ALIASES }) }
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    return { ok: false, why: `front matter is refused (${detail.split("\n")[0]}; at most ${FRONT_MATTER_MAX_ALIASES} alias expansions)` }
  }
}

/** Parse an OKF document: `---`, a YAML mapping, `---`, then the body (one blank line after the block is not body). */
export const parseOkf = (text: string): OkfParse => {
  const normal = text.replace(/\r\n/g, "\n")
  if (!normal.startsWith("---\n")) return { ok: false, why: "no front matter (the file must start with a --- line)" }
  const end = normal.indexOf("\n---\n", 3)
  const endAtEof = end === -1 && normal.endsWith("\n---") ? normal.length - 4 : -1
  const close = end !== -1 ? end : endAtEof
  if (close === -1) return { ok: false, why: "the front matter block is not closed by a --- line" }
  const decoded = decodeFrontMatter(normal.slice(4, close + 1))
  if (!decoded.ok) return decoded
  const value = decoded.value
  if (value !== null && (typeof value !== "object" || Array.isArray(value))) {
    return { ok: false, why: "front matter is not a YAML mapping" }
  }
  const rest = normal.slice(close + 5)
  return { ok: true, doc: { frontMatter: (value ?? {}) as Record<string, unknown>, body: rest.startsWith("\n") ? rest.slice(1) : rest } }
}

const frontMatter = (kind: OkfKind, title: string, description: string, timestamp: string) => ({
  type: "User Preference",
  title,
  description,
  tags: ["user-preferences", kind],
  timestamp,
  pi: { scope: "user" }
})

const renderOkf = (fields: Record<string, unknown>, body: string): string => `---\n${stringify(fields, { lineWidth: 0 })}---\n\n${body}`

export const renderShard = (entries: ReadonlyArray<string>, timestamp: string): string =>
  renderOkf(
    frontMatter("archived", "Archived user preferences", `${entries.length} archived entr${entries.length === 1 ? "y" : "ies"} of the user profile (USER.md)`, timestamp),
    renderBody(entries)
  )

export const renderIndex = (shards: ReadonlyArray<string>, timestamp: string): string =>
  renderOkf(
    frontMatter("index", "User preference archive", "Index of the archived user preferences of USER.md, oldest first", timestamp),
    `# User preference archive\n\n${shards.map((s) => `- [${s.slice(0, -".okf.md".length)}](${s})\n`).join("")}`
  )

export interface ShardDocument {
  readonly entries: ReadonlyArray<string>
  /** The front matter's timestamp, when it has a readable one (orders shards the index does not list). */
  readonly timestamp: string | null
}

export const parseShard = (text: string): { readonly ok: true; readonly shard: ShardDocument } | { readonly ok: false; readonly why: string } => {
  const parsed = parseOkf(text)
  if (!parsed.ok) return parsed
  const ts = parsed.doc.frontMatter["timestamp"]
  const timestamp = typeof ts === "string" ? ts : ts instanceof Date ? ts.toISOString() : null
  return { ok: true, shard: { entries: bodyEntries(parsed.doc.body), timestamp } }
}

/** The shards an index lists, in its order: every link to a shard file name, each once. */
export const parseIndex = (text: string): { readonly ok: true; readonly shards: ReadonlyArray<string> } | { readonly ok: false; readonly why: string } => {
  const parsed = parseOkf(text)
  if (!parsed.ok) return parsed
  const shards: Array<string> = []
  for (const m of parsed.doc.body.matchAll(/\]\((?:\.\/)?(user-preferences-[0-9a-f]{16}\.okf\.md)\)/g)) {
    if (!shards.includes(m[1]!)) shards.push(m[1]!)
  }
  return { ok: true, shards }
}

/**
 * Split entries into shards of at most `budgetBytes` of body each, on entry boundaries only (so never inside
 * a UTF-8 sequence), greedily in order. An entry larger than the budget gets a shard of its own.
 */
export const splitIntoShards = (entries: ReadonlyArray<string>, budgetBytes: number): Array<Array<string>> => {
  const shards: Array<Array<string>> = []
  let current: Array<string> = []
  let bytes = 0
  for (const entry of entries) {
    const size = utf8Bytes(entry) + 1
    if (current.length > 0 && bytes + size > budgetBytes) {
      shards.push(current)
      current = []
      bytes = 0
    }
    current.push(entry)
    bytes += size
  }
  if (current.length > 0) shards.push(current)
  return shards
}

/**
 * The pending-write journal, written (durably) before the first file of a mutation and removed after the
 * last. A crash leaves it behind; the next writer finishes the mutation when every shard it creates is on
 * disk (the index may already name them), or undoes it otherwise (the index cannot name them yet).
 */
export const ProfileJournal = Schema.Struct({
  version: Schema.Literal(1),
  /** The index of the new layout, in order (empty: no archive, the index is removed). */
  shards: Schema.Array(Schema.String),
  /** Shards this mutation writes (absent when it began). */
  created: Schema.Array(Schema.String),
  /** Shards the new layout no longer has (every fact in them is in the new layout or was deliberately edited). */
  obsolete: Schema.Array(Schema.String),
  /** The new USER.md (`null`: leave it as it is). */
  user: Schema.NullOr(Schema.String),
  /**
   * SHA-256 of the files as the writer read them (`null`: missing), so finishing the write never replaces a
   * file a person changed since. Absent in journals written before it existed (then nothing is compared).
   */
  read: Schema.optional(Schema.Struct({
    user: Schema.NullOr(Schema.String),
    index: Schema.NullOr(Schema.String),
    obsolete: Schema.Record({ key: Schema.String, value: Schema.String })
  }))
})
export type ProfileJournal = typeof ProfileJournal.Type
