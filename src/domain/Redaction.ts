/**
 * The one redaction rule of the config history (docs/config-history.md "Config history", SPEC BK1): no literal credential enters
 * any revision, whatever the file's format. Pure.
 *
 * A file of a format read here (JSON, JSONC, JSON5, YAML, TOML, INI / `.npmrc`, env files; by its name) is
 * parsed into the common tree of `ConfigTree.ts`, and a leaf is a secret when
 * - it sits under a key that names a credential (`isCredentialKey`, at any depth: a credential key's whole
 *   subtree is credential), follows a credential flag in an array (`["--token", "x"]`) or is the `value` beside
 *   a `name` that names one (`{ name: "API_TOKEN", value: "x" }`), and is a literal:
 *   any string but a reference resolved at request time (`isLiteralCredential`), any number or date, a boolean
 *   not written `true` / `false`; such a value is replaced whole by `REDACTED`;
 * - or, anywhere, a string holds one in its text (`credentialRanges`): a password inside a URL
 *   (`https://user:pass@host`), a credential assignment (`--api-key=x`, `token: x`, `?access_token=x`), a
 *   credential flag's value (`--token x`) or a PEM private key; only those characters are replaced.
 * Only the secret values' source spans are rewritten (comments and layout stay), and the result is read back to
 * prove it. Text outside the values (comments) is read line by line with `credentialRanges`; so is a file of no
 * known format, whole. What holds a credential that cannot be redacted in place (a file that does not parse, a
 * comment that looks like `apiKey = …`, a credential reached through a YAML alias) is skipped with the reason.
 *
 * A rollback merges back, for each redacted value, the live value at the same path (`rollbackContent`).
 */
import {
  type ConfigFormat,
  type ConfigTree,
  type Leaf,
  lineOf,
  MAX_TREE_BYTES,
  pathKey,
  pointerOf,
  sameLeafValue
} from "./ConfigTree.js"
import { ENV_FORMAT } from "./ConfigTreeEnv.js"
import { withArticle } from "./Article.js"
import { INI_FORMAT } from "./ConfigTreeIni.js"
import { JSON5_FORMAT, JSON_FORMAT, JSONC_FORMAT } from "./ConfigTreeJson.js"
import { TOML_FORMAT } from "./ConfigTreeToml.js"
import { YAML_FORMAT } from "./ConfigTreeYaml.js"

/** What history holds instead of a literal credential. */
export const REDACTED = "[redacted by pi-storage]"

/** The rule's version: raise it (RedactionRule.ts) whenever the rule redacts more. */
export { REDACTION_RULE } from "./RedactionRule.js"

// ---------------------------------------------------------------------------------------------------------
// Which keys name a credential

/** A key as lower-case words: camelCase, PascalCase, snake_case, kebab-case, dotted, `//host/:_authToken`, digits apart. */
export const keyWords = (key: string): ReadonlyArray<string> =>
  key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z])(?=[A-Z][a-z])/g, "$1 ")
    .replace(/([A-Za-z])([0-9])/g, "$1 $2")
    .replace(/([0-9])([A-Za-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "" && !/^[0-9]+$/.test(w))

/** Words that make a key a credential wherever they stand (`token`, `tokenGithub`, `clientSecret` …). */
const CREDENTIAL_WORDS = new Set([
  "token", "secret", "secrets", "password", "passwords", "passwd", "passphrase", "passcode", "credential",
  "credentials", "authorization", "cookie", "cookies", "bearer", "jwt"
])
/** One word spelling a credential (`apikey`, `authtoken`, `dbpassword`, `npmtoken`, `secretaccesskey` …). */
const CREDENTIAL_JOINED = /(token|secret|password|passwd|passphrase|(api|access|secret|private|session|auth|master|license|signing|encryption|client)key)$/
/** Words that name a credential only as a key's last word (`key`, `apiKey`, `smtp_pass`, `basicAuth`, `githubPat`). */
const LAST_WORDS = new Set(["key", "pass", "pwd", "auth", "pat"])
/** A `…Key` that is not a secret. */
const NOT_SECRET_KEYS = new Set([
  "public", "sort", "primary", "foreign", "partition", "hot", "shortcut", "cache", "modifier", "row", "composite",
  "lookup", "index", "group", "routing", "idempotency", "dedup", "dedupe", "unique"
])
/** A last word that makes the key describe a credential rather than hold one (`tokenLimit`, `passwordFile`, `secretName`). */
const DESCRIBING = new Set([
  "limit", "limits", "count", "size", "length", "len", "min", "max", "bits", "ttl", "expiry", "expires", "expiration",
  "timeout", "file", "files", "path", "paths", "dir", "directory", "name", "names", "label", "description", "hint",
  "prompt", "placeholder", "url", "uri", "urls", "endpoint", "host", "domain", "type", "types", "kind", "method",
  "mode", "format", "algorithm", "alg", "version", "id", "ids", "ref", "refs", "env", "var", "variable", "command",
  "cmd", "helper", "store", "provider", "scope", "scopes", "enabled", "enable", "disabled", "required", "stdin",
  "location", "binding", "bindings", "map", "mapping", "prefix", "pattern", "regex"
])

/** Keys already judged (a document repeats its keys on every path): a cache, so the function stays pure. */
const credentialKeys = new Map<string, boolean>()

/**
 * Whether an object key, a section or a flag name names a credential: `apiKey`, `api_key`, `X-Api-Key`, `key`,
 * `token`, `accessToken`, `_authToken`, `//registry/:_authToken`, `secret`, `password`, `pass`, `auth`,
 * `Authorization`, `sessionKey`, `cookie` … By words, so `maxTokens`, `tokenizer`, `keybindings`, `author` are
 * not; and not when the last word says the key describes one (`tokenLimit`, `passwordFile`, `secretName`,
 * `keyBindings`) or names a key that is no secret (`publicKey`, `sortKey`).
 */
export const isCredentialKey = (key: string): boolean => {
  // No config key is this long: a credential, to be safe (and the words of a megabyte are not worth reading).
  if (key.length > 512) return true
  let known = credentialKeys.get(key)
  if (known === undefined) {
    if (credentialKeys.size >= 65_536) credentialKeys.clear()
    credentialKeys.set(key, known = credentialByWords(keyWords(key)))
  }
  return known
}

const credentialByWords = (words: ReadonlyArray<string>): boolean => {
  const last = words[words.length - 1]
  if (last === undefined) return false
  // Vault's `secret_id` is one; an `accessKeyId` or a `tokenId` is a name.
  if (last === "id" && words[words.length - 2] === "secret") return true
  if (DESCRIBING.has(last)) return false
  if (words.some((w) => CREDENTIAL_WORDS.has(w) || CREDENTIAL_JOINED.test(w))) return true
  if (last === "key") return !NOT_SECRET_KEYS.has(words[words.length - 2] ?? "")
  return LAST_WORDS.has(last)
}

/** `$NAME` or `${NAME}`. */
const ENV_REFERENCE = /^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$/
/**
 * A bare variable name the harness looks up (`OPENAI_API_KEY`): upper case words joined by `_`. At least one
 * `_` is required, so an upper-case literal key (`AKIAIOSFODNN7EXAMPLE`) is still redacted.
 */
const ENV_NAME = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/

/**
 * Whether a credential's string is a literal (to redact) rather than a reference resolved at request time: an
 * environment variable name (`OPENAI_API_KEY`, `$X`, `${X}`) or a `!command with arguments`. Empty strings and
 * `REDACTED` are not literals either.
 */
export const isLiteralCredential = (value: unknown): value is string =>
  typeof value === "string" && value !== "" && value !== REDACTED && !COMMAND.test(value) &&
  !ENV_REFERENCE.test(value) && !ENV_NAME.test(value)

/** `!pass show x`, `!op read …`: a command and its arguments (a lone `!word` may be a password that starts with `!`). */
const COMMAND = /^![^\s]+\s+\S/

// ---------------------------------------------------------------------------------------------------------
// Credentials inside a text

export interface CredentialRange {
  readonly start: number
  readonly end: number
  /** What it is, for a reason: the key or flag (`apiKey`, `--token`), or `a URL's password`. */
  readonly what: string
}

/** `key = `, `key: `, `"key": `, `--key=` (not `scheme://`). Linear: a match starts only where a word does. */
const ASSIGNMENT = /(?<![A-Za-z0-9_.-])(["']?)((?:--?)?[A-Za-z_][A-Za-z0-9_.-]*)\1[ \t]*(?:=|:(?!\/\/))[ \t]*/g
/** `--key value`, `-key value`. */
const FLAG_SPACE = /(?<![A-Za-z0-9_.-])(--?[A-Za-z][A-Za-z0-9_.-]*)[ \t]+/g
/** An HTTP authentication scheme: the credential is the word after it (`Authorization: Bearer x`). */
const AUTH_SCHEME = /^(bearer|basic|token|digest|negotiate|apikey)$/i
/** A PEM private key (`-----BEGIN RSA PRIVATE KEY-----`, OpenSSH's, PGP's `… PRIVATE KEY BLOCK-----`). */
const PEM_BEGIN = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g
const PEM_END = /-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g
/** Longer values are literals without a closer look (no reference or placeholder is this long). */
const LONG_VALUE = 256

const isBlank = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0b || c === 0x0c || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0xfeff || (c >= 0x2000 && c <= 0x200a) || c === 0x3000
const TRAILING = new Set([",", ";", ")", "]", "}", ">", "\"", "'", "`"])

/**
 * Where each run of non-blank characters ends, computed once per text (so a text of many `token=token=…`
 * costs one pass, not one pass per match).
 */
const runEnds = (text: string): Int32Array => {
  const ends = new Int32Array(text.length + 1)
  ends[text.length] = text.length
  for (let i = text.length - 1; i >= 0; i--) ends[i] = isBlank(text.charCodeAt(i)) ? i : ends[i + 1]!
  return ends
}

/**
 * The credentials written inside a text: passwords in URLs, values assigned to a credential key
 * (`token=x`, `"apiKey": "x"`, `--api-key=x`, `Authorization: Bearer x`), values after a credential flag
 * (`--token x`), PEM private keys. The one reading of free text: string values, comments, files of no known
 * format. Linear in the text's length.
 *
 * `unreadable`: a credential key or flag whose value cannot be read on its line (nothing, punctuation, a
 * quote that does not close, a bracket) counts too, as `[start, start]`: in a file of no known format the
 * value may go on over the next lines (`password = \`, `token: |`, `key = """`), where no rule would see it.
 */
export const credentialRanges = (text: string, o: { readonly unreadable?: boolean } = {}): ReadonlyArray<CredentialRange> => {
  const out: Array<CredentialRange> = []
  let ends: Int32Array | undefined
  const runEnd = (i: number) => (ends ??= runEnds(text))[i]!
  const unreadable = o.unreadable === true

  /** The value written at `pos` (quoted, or up to a blank): its range when it is a literal, else null. */
  const valueAt = (pos: number, allowFlag: boolean, depth = 0): readonly [number, number] | null => {
    if (text.startsWith(REDACTED, pos)) return null
    const c = text[pos]
    const cannotRead = unreadable ? [pos, pos] as const : null
    if (c === undefined || c === "\n" || c === "\r") return cannotRead
    let start = pos
    let end: number
    let word = -1
    if (c === "\"" || c === "'") {
      start = pos + 1
      if (text.startsWith(REDACTED, start)) return null
      // Up to the closing quote, or the end of the line: a credential never runs over a line here.
      end = start
      while (end < text.length && text[end] !== c && text[end] !== "\n") end++
      // Not closed on its line, or `"""` / `'''` (a string over several lines): unreadable.
      if (text[end] !== c || (end === start && text[end + 1] === c)) {
        if (unreadable) return [pos, pos]
        if (text[end] === c) return null
      } else if (end === start) return null
    } else {
      // A delimiter or an opening bracket where the value would be: structure (`"token": ,` once the value is blanked).
      if (/[,;)\]}>{[(]/.test(c)) return cannotRead
      end = word = runEnd(pos)
      while (end > start && TRAILING.has(text[end - 1]!)) end--
      // `Bearer x`: the secret is the word after the scheme.
      if (depth === 0 && end - start <= 10 && AUTH_SCHEME.test(text.slice(start, end))) {
        let next = end
        while (text[next] === " " || text[next] === "\t") next++
        if (next > end && next < text.length && !isBlank(text.charCodeAt(next))) return valueAt(next, allowFlag, 1)
      }
    }
    if (!allowFlag && text[start] === "-") return null
    if (end - start > LONG_VALUE) return [start, end]
    const value = text.slice(start, end)
    // A value of punctuation only (`**`, `-`, `\`, `|`) is layout, not a credential: unreadable, where that counts.
    if (!/[\p{L}\p{N}]/u.test(value)) return cannotRead
    // A reference with its closing punctuation (`${TOKEN}`) is one, whether or not that punctuation is counted.
    const whole = word > end && word - start <= LONG_VALUE ? text.slice(start, word) : value
    return isLiteralCredential(value) && isLiteralCredential(whole) ? [start, end] : null
  }

  // A URL's password: `scheme://user:password@host`. Each `://` starts an authority that ends at the next
  // `/`, `?`, `#` or blank, so the authorities never overlap: one pass.
  for (let i = text.indexOf("://"); i !== -1; i = text.indexOf("://", i + 3)) {
    if (i === 0 || !/[A-Za-z0-9+.-]/.test(text[i - 1]!)) continue
    let end = i + 3
    while (end < text.length && !isBlank(text.charCodeAt(end)) && text[end] !== "/" && text[end] !== "?" && text[end] !== "#") end++
    let at = end - 1
    while (at >= i + 3 && text[at] !== "@") at--
    if (at < i + 3) continue
    let colon = i + 3
    while (colon < at && text[colon] !== ":") colon++
    if (colon === at || colon + 1 === at) continue
    const long = at - colon - 1 > LONG_VALUE
    if (long || (isLiteralCredential(text.slice(colon + 1, at)) && /[\p{L}\p{N}]/u.test(text.slice(colon + 1, at)))) {
      out.push({ start: colon + 1, end: at, what: "a URL's password" })
    }
  }
  for (const m of text.matchAll(ASSIGNMENT)) {
    const key = m[2]!
    if (!isCredentialKey(key.replace(/^-+/, ""))) continue
    const range = valueAt(m.index + m[0].length, true)
    if (range !== null) out.push({ start: range[0], end: range[1], what: key })
  }
  for (const m of text.matchAll(FLAG_SPACE)) {
    const flag = m[1]!
    if (!isCredentialKey(flag.replace(/^-+/, ""))) continue
    const range = valueAt(m.index + m[0].length, false)
    if (range !== null) out.push({ start: range[0], end: range[1], what: flag })
  }
  PEM_BEGIN.lastIndex = 0
  for (let m = PEM_BEGIN.exec(text); m !== null; m = PEM_BEGIN.exec(text)) {
    const from = m.index + m[0].length
    PEM_END.lastIndex = from
    const close = PEM_END.exec(text)
    const end = close === null ? text.length : close.index
    if (!(text.startsWith(REDACTED, from) && from + REDACTED.length === end)) out.push({ start: from, end, what: "a private key" })
    if (close === null) break
    PEM_BEGIN.lastIndex = close.index + close[0].length
  }
  return out.sort((a, b) => a.start - b.start || b.end - a.end)
}

/** `text` with each range replaced by `REDACTED` (overlapping ranges merged). */
const replaceRanges = (text: string, ranges: ReadonlyArray<CredentialRange>): string => {
  let out = ""
  let at = 0
  for (const r of ranges) {
    if (r.end <= at) continue
    out += text.slice(at, Math.max(at, r.start)) + REDACTED
    at = r.end
  }
  return out + text.slice(at)
}

// ---------------------------------------------------------------------------------------------------------
// Formats, by name

/**
 * The format a config file is read as, by its name; `null`: no known format (then it is read line by line with
 * `credentialRanges`, and committed as it is only when no line holds a credential).
 */
export const configFormatOf = (name: string): ConfigFormat | null => {
  const n = name.toLowerCase()
  if (n.endsWith(".json")) return JSON_FORMAT
  if (n.endsWith(".jsonc")) return JSONC_FORMAT
  if (n.endsWith(".json5")) return JSON5_FORMAT
  if (n.endsWith(".yaml") || n.endsWith(".yml")) return YAML_FORMAT
  if (n.endsWith(".toml")) return TOML_FORMAT
  if (n.endsWith(".ini") || n.endsWith(".npmrc")) return INI_FORMAT
  if (n === ".env" || n.startsWith(".env.") || n.endsWith(".env")) return ENV_FORMAT
  return null
}

// ---------------------------------------------------------------------------------------------------------
// The secrets of a tree

interface Secret {
  readonly leaf: Leaf
  /** The string that takes the value's place. */
  readonly replacement: string
}

/** Fields that name what their sibling `value` holds (`{ name: "API_TOKEN", value: "…" }`: env and header lists). */
const NAMING_FIELDS = new Set(["name", "key", "header", "variable", "var", "env"])

/**
 * The leaves in a credential slot: under a credential key; right after a credential flag in an array
 * (`["--token", "x"]`); the `value` beside a `name` that names a credential (`{ name: "API_TOKEN", value: "x" }`).
 */
const credentialSlots = (leaves: ReadonlyArray<Leaf>): ReadonlySet<Leaf> => {
  const slots = new Set<Leaf>()
  const byPath = new Map<string, Leaf>()
  for (const leaf of leaves) byPath.set(pathKey(leaf.path), leaf)
  for (const leaf of leaves) {
    if (leaf.path.some((p) => typeof p === "string" && isCredentialKey(p))) slots.add(leaf)
    const last = leaf.path[leaf.path.length - 1]
    if (typeof last === "string" && NAMING_FIELDS.has(last.toLowerCase()) && leaf.value.type === "string" && isCredentialKey(leaf.value.value)) {
      const value = byPath.get(pathKey([...leaf.path.slice(0, -1), "value"]))
      if (value !== undefined) slots.add(value)
    }
    if (typeof last !== "number" || leaf.value.type !== "string") continue
    const flag = /^--?([A-Za-z][A-Za-z0-9_.-]*)$/.exec(leaf.value.value)
    if (flag === null || !isCredentialKey(flag[1]!)) continue
    const next = byPath.get(pathKey([...leaf.path.slice(0, -1), last + 1]))
    if (next !== undefined) slots.add(next)
  }
  return slots
}

/** What replaces a leaf's value, or null when it holds no literal credential. */
const replacementOf = (leaf: Leaf, credentialSlot: boolean): string | null => {
  const v = leaf.value
  if (credentialSlot) {
    if (v.type === "number" || v.type === "other") return REDACTED
    if (v.type === "boolean") return v.canonical ? null : REDACTED
    if (v.type === "string" && isLiteralCredential(v.value)) return REDACTED
  }
  if (v.type !== "string") return null
  const ranges = credentialRanges(v.value)
  return ranges.length === 0 ? null : replaceRanges(v.value, ranges)
}

const secretsOf = (tree: ConfigTree): ReadonlyArray<Secret> => {
  const slots = credentialSlots(tree.leaves)
  const out: Array<Secret> = []
  for (const leaf of tree.leaves) {
    const replacement = replacementOf(leaf, slots.has(leaf))
    if (replacement !== null) out.push({ leaf, replacement })
  }
  return out
}

/** The text with every value (and YAML's anchors, tags, aliases) blanked: what is left is comments and layout. */
const residueOf = (text: string, tree: ConfigTree): string => {
  const spans = [...tree.leaves.map((l) => [l.start, l.end] as const), ...tree.opaque].sort((a, b) => a[0] - b[0])
  let out = ""
  let at = 0
  for (const [start, end] of spans) {
    if (end <= at) continue
    const from = Math.max(at, start)
    out += text.slice(at, from) + text.slice(from, end).replace(/[^\n]/g, " ")
    at = end
  }
  return out + text.slice(at)
}

const describe = (text: string, r: CredentialRange) =>
  `line ${lineOf(text, r.start)} holds what looks like a credential (${r.what.startsWith("a ") ? r.what : `${r.what} = …`})`

// ---------------------------------------------------------------------------------------------------------
// What history stores

const textDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const textEncoder = new TextEncoder()

const decodeUtf8 = (bytes: Uint8Array): string | null => {
  try {
    return textDecoder.decode(bytes)
  } catch {
    return null
  }
}

/** Bytes as text one character per byte (a file that is not UTF-8 is still read for credentials). */
const latin1 = (bytes: Uint8Array): string => {
  let s = ""
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192))
  return s
}

export type Redacted =
  | { readonly ok: true; readonly text: string; readonly redacted: ReadonlyArray<string> }
  | { readonly ok: false; readonly why: string }

/**
 * Redact a document of a known format: its secret values' spans rewritten (`REDACTED`, or the string with its
 * credentials replaced, in the format's own quoting), everything else as it was; `redacted` lists their paths
 * as JSON pointers. Refused with the reason when it does not parse, when text outside the values holds a
 * credential, when a credential is reached through a YAML alias, or when the result does not read back as the
 * same document with no credential left.
 */
export const redactDocument = (format: ConfigFormat, text: string): Redacted => {
  const parsed = format.parse(text)
  if (!parsed.ok) return { ok: false, why: `not valid ${format.label} (${parsed.why}), so its credentials cannot be redacted` }
  const tree = parsed.tree
  const outside = credentialRanges(residueOf(text, tree))
  if (outside.length > 0) return { ok: false, why: `${describe(text, outside[0]!)} outside a value (a comment?), which cannot be redacted in place` }
  const secrets = secretsOf(tree)
  const aliased = secrets.find((s) => s.leaf.aliased)
  if (aliased !== undefined) {
    return { ok: false, why: `the credential at ${pointerOf(aliased.leaf.path)} is reached through a YAML alias, and an anchor cannot be redacted in place` }
  }
  if (secrets.length === 0) return { ok: true, text, redacted: [] }
  const bySpan = new Map<number, string>()
  let out = ""
  let at = 0
  for (const s of [...secrets].sort((a, b) => a.leaf.start - b.leaf.start)) {
    const written = format.quote(s.replacement)
    if (written === null) return { ok: false, why: `the credential at ${pointerOf(s.leaf.path)} cannot be replaced by ${withArticle(format.label)} string` }
    out += text.slice(at, s.leaf.start) + written
    at = s.leaf.end
    bySpan.set(s.leaf.start, s.replacement)
  }
  out += text.slice(at)
  const check = readsBack(format, tree, out, (leaf) => {
    const replacement = bySpan.get(leaf.start)
    return replacement === undefined ? leaf.value : { type: "string", value: replacement }
  })
  const left = check.ok ? secretsOf(check.tree)[0] : undefined
  if (!check.ok || left !== undefined) {
    const why = !check.ok ? check.why : `a credential is left at ${pointerOf(left!.leaf.path)}`
    return { ok: false, why: `its redacted copy does not read back as the same ${format.label} document with no credential left (${why})` }
  }
  return { ok: true, text: out, redacted: secrets.map((s) => pointerOf(s.leaf.path)) }
}

/**
 * Whether `text` reads as `before` with each leaf's value now `expected(leaf)`: its tree when it does, else the
 * reason.
 */
const readsBack = (
  format: ConfigFormat,
  before: ConfigTree,
  text: string,
  expected: (leaf: Leaf) => Leaf["value"]
): { readonly ok: true; readonly tree: ConfigTree } | { readonly ok: false; readonly why: string } => {
  const again = format.parse(text)
  if (!again.ok) return again
  const leaves = again.tree.leaves
  if (leaves.length !== before.leaves.length) return { ok: false, why: "a different number of values" }
  for (const [i, leaf] of leaves.entries()) {
    const was = before.leaves[i]!
    if (leaf.path.length !== was.path.length || leaf.path.some((p, j) => p !== was.path[j])) return { ok: false, why: `${pointerOf(leaf.path)} moved` }
    if (!sameLeafValue(leaf.value, expected(was))) return { ok: false, why: `${pointerOf(leaf.path)} changed` }
  }
  return again
}

export type HistoryContent =
  | { readonly _tag: "Keep"; readonly bytes: Uint8Array; readonly redacted: ReadonlyArray<string> }
  | { readonly _tag: "Skip"; readonly reason: string }

/**
 * What history stores for a config file's live bytes: a file of a known format with its literal credentials
 * redacted in place (byte for byte otherwise; as it is when it holds none); a file of no known format as it
 * is, when no line of it holds a credential. Anything else is skipped with the reason: it cannot be proven safe
 * to commit.
 */
export const historyContent = (name: string, bytes: Uint8Array): HistoryContent => {
  if (bytes.length > MAX_TREE_BYTES) return { _tag: "Skip", reason: `over ${MAX_TREE_BYTES} bytes, too large to read for credentials` }
  const format = configFormatOf(name)
  const text = decodeUtf8(bytes)
  if (format === null) {
    // No known format: read line by line (as bytes when it is not UTF-8); a line that looks like
    // `secretKey = value`, `--token value` or a URL with a password keeps the whole file out, and so does a
    // credential key whose value is not on its line (it may go on over the next ones). Never rewritten.
    const lines = text ?? latin1(bytes)
    const found = credentialRanges(lines, { unreadable: true })
    if (found.length === 0) return { _tag: "Keep", bytes, redacted: [] }
    return { _tag: "Skip", reason: `${describe(lines, found[0]!)}, and a file of no known format cannot be redacted` }
  }
  if (text === null) return { _tag: "Skip", reason: `not UTF-8 text, so it cannot be read as ${format.label} and its credentials cannot be redacted` }
  const r = redactDocument(format, text)
  if (!r.ok) return { _tag: "Skip", reason: r.why }
  return { _tag: "Keep", bytes: r.redacted.length === 0 ? bytes : textEncoder.encode(r.text), redacted: r.redacted }
}

// ---------------------------------------------------------------------------------------------------------
// A rollback

export type RollbackContent =
  /** Write these bytes; `unresolved`: redacted values with no live value, left out (JSON only). */
  | { readonly _tag: "Write"; readonly bytes: Uint8Array; readonly unresolved: ReadonlyArray<string> }
  /** Leave the live file as it is (or absent): the revision's redacted values cannot all be merged back. */
  | { readonly _tag: "KeepLive"; readonly unresolved: ReadonlyArray<string>; readonly reason: string }

/**
 * The bytes a rollback writes: a revision's bytes, with each redacted value replaced by the live file's value
 * at the same path (its source text as it is), so a rollback keeps the live credentials. A whole placeholder
 * takes the live value of the same credential slot (a literal or a reference); a partly redacted string (a URL,
 * `--token=…`) takes the live string that redacts to exactly it. `live` is the live file's bytes (`undefined`
 * when there is none).
 *
 * A placeholder is never written into a live file. When one has no live value: in JSON its key is left out
 * (its array slot kept as `null`) and it is listed in `unresolved`; any other format is not rewritten around it,
 * so the live file is kept as it is (`KeepLive`, with the reason).
 */
export const rollbackContent = (name: string, historyBytes: Uint8Array, live: Uint8Array | undefined): RollbackContent => {
  const text = historyBytes.length > MAX_TREE_BYTES ? null : decodeUtf8(historyBytes)
  const format = configFormatOf(name)
  // Placeholders are only ever written into files of a known format: anything else is a person's text.
  if (text === null || format === null || !text.includes(REDACTED)) return { _tag: "Write", bytes: historyBytes, unresolved: [] }
  const keepLive = (unresolved: ReadonlyArray<string>, why: string): RollbackContent => ({
    _tag: "KeepLive",
    unresolved,
    reason: `the revision's copy holds redacted credentials that ${why}; a placeholder is never written, so the file is left as it is`
  })
  const history = format.parse(text)
  if (!history.ok) return keepLive([], `cannot be read back (${history.why})`)
  // A live file too large to read has no value to give back (as if it were absent).
  const liveText = live === undefined || live.length > MAX_TREE_BYTES ? null : decodeUtf8(live)
  const liveTree = liveText === null ? null : format.parse(liveText)
  const liveLeaves = new Map<string, Leaf>()
  const liveSlots = liveTree?.ok === true ? credentialSlots(liveTree.tree.leaves) : new Set<Leaf>()
  if (liveTree?.ok === true) for (const leaf of liveTree.tree.leaves) liveLeaves.set(pathKey(leaf.path), leaf)

  const restored = new Map<number, Leaf>()
  const unresolved: Array<string> = []
  let merged = ""
  let at = 0
  for (const leaf of history.tree.leaves) {
    if (leaf.aliased || leaf.value.type !== "string" || !leaf.value.value.includes(REDACTED)) continue
    const from = liveLeaves.get(pathKey(leaf.path))
    const fits = from !== undefined && liveText !== null && (
      leaf.value.value === REDACTED
        // The same credential slot, holding anything but a placeholder.
        ? liveSlots.has(from) && !(from.value.type === "string" && from.value.value.includes(REDACTED))
        // The live string whose credentials redact to exactly what history holds.
        : from.value.type === "string" && replacementOf(from, liveSlots.has(from)) === leaf.value.value
    )
    if (!fits) {
      unresolved.push(pointerOf(leaf.path))
      continue
    }
    merged += text.slice(at, leaf.start) + liveText!.slice(from!.start, from!.end)
    at = leaf.end
    restored.set(leaf.start, from!)
  }
  merged += text.slice(at)

  if (unresolved.length > 0) {
    if (format !== JSON_FORMAT) return keepLive(unresolved, `have no live value to merge back (${unresolved.join(", ")})`)
    return dropUnresolved(merged, unresolved)
  }
  const check = readsBack(format, history.tree, merged, (leaf) => restored.get(leaf.start)?.value ?? leaf.value)
  if (!check.ok) return keepLive([], `cannot be merged with the live values (${check.why})`)
  // The same text as the live file: its bytes, as they are.
  if (liveText !== null && merged === liveText) return { _tag: "Write", bytes: live!, unresolved: [] }
  return { _tag: "Write", bytes: textEncoder.encode(merged), unresolved: [] }
}

/** JSON with the unresolved placeholders' keys left out (array slots kept as null), re-serialised. */
const dropUnresolved = (json: string, unresolved: ReadonlyArray<string>): RollbackContent => {
  let value: unknown
  try {
    value = JSON.parse(json.replace(/^\ufeff/, ""))
  } catch {
    return { _tag: "KeepLive", unresolved, reason: "the revision's copy does not read as JSON once merged, so the file is left as it is" }
  }
  const unescape = (p: string) => p.replace(/~1/g, "/").replace(/~0/g, "~")
  for (const pointer of unresolved) {
    if (pointer === "") {
      value = null
      continue
    }
    const parts = pointer.split("/").slice(1).map(unescape)
    const last = parts.pop()!
    let parent: unknown = value
    for (const p of parts) parent = (parent as Record<string, unknown>)[p]
    if (Array.isArray(parent)) parent[Number(last)] = null
    else delete (parent as Record<string, unknown>)[last]
  }
  return { _tag: "Write", bytes: textEncoder.encode(JSON.stringify(value, null, 2) + "\n"), unresolved }
}
