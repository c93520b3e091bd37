/**
 * What git prints and what it accepts, as pure rules (docs/config-history.md "Config history"). Every answer of git the config
 * history reads is hostile input: it is parsed here strictly, with limits, and anything unexpected is a `why`
 * the caller reports as corruption before it writes anything. Paths cross the process boundary as bytes
 * (`domain/NameBytes.ts`): read NUL-separated and decoded with `nameOfBytes`, given to git NUL-separated on
 * stdin with `bytesOfName`, never as arguments. `gitRefusesPath` says which names git would silently leave
 * out of its index, so they are reported rather than lost.
 */
import { bytesOfName, nameOfBytes } from "./NameBytes.js"
import { withArticle } from "./Article.js"

export type Parsed<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly why: string }

const ok = <A>(value: A): Parsed<A> => ({ ok: true, value })
const bad = (why: string): { readonly ok: false; readonly why: string } => ({ ok: false, why })

/** A SHA-1 object id as git prints it (the history is created SHA-1; any other length is not ours). */
const OBJECT_ID = /^[0-9a-f]{40}$/
export const isObjectId = (s: string): boolean => OBJECT_ID.test(s)

const NUL = 0
const LF = 0x0a

/** Bytes that must be printable ASCII (a header git writes itself): the text, or `undefined`. */
const asciiOf = (bytes: Uint8Array): string | undefined => {
  let s = ""
  for (const b of bytes) {
    if (b < 0x20 || b > 0x7e) return undefined
    s += String.fromCharCode(b)
  }
  return s
}

/** A short, safe rendering of bytes for a `why` (never the raw bytes of a hostile answer). */
const shown = (bytes: Uint8Array): string => JSON.stringify(nameOfBytes(bytes.subarray(0, 80)))

// ---------------------------------------------------------------------------------------------------------
// Paths

/**
 * Whether a path git prints is one it could have stored: non-empty components joined by `/`, none `.` or
 * `..` (git's trees and index never hold another; a tree that does is damaged).
 */
export const isStoredPath = (path: string): boolean =>
  path !== "" && path.split("/").every((c) => c !== "" && c !== "." && c !== "..")

/** `.git` or its NTFS synonyms (`git~1`, trailing spaces and dots, an alternate data stream), up to a separator. */
const NTFS_DOT_GIT = /^(\.git|git~1)[ .]*(?:$|[\\:])/i

/**
 * Why git would refuse a path into its index (`update-index` answers "Ignoring path" and goes on, exit 0), or
 * `null`. Git's own rule (`verify_path` with `core.protectNTFS=true`, `core.protectHFS=false`, both set by the
 * runner) for a regular file: an empty, `.` or `..` component, a component that is `.git` in any case, or an
 * NTFS synonym of it at the start of a component or after a backslash in one (but its first character).
 */
export const gitRefusesPath = (path: string): string | null => {
  for (const component of path.split("/")) {
    if (component === "" || component === "." || component === "..") return `an empty, . or .. component in ${JSON.stringify(path)}`
    if (component.toLowerCase() === ".git") return "git refuses a file or directory named .git"
    // Git looks again after each backslash but one that starts the component.
    const starts = [component]
    for (let i = component.indexOf("\\", 1); i !== -1; i = component.indexOf("\\", i + 1)) starts.push(component.slice(i + 1))
    if (starts.some((s) => NTFS_DOT_GIT.test(s))) return `git refuses ${JSON.stringify(component)}: another name of .git on NTFS`
  }
  return null
}

/** Git's C-style escapes in a quoted name (`quote_c_style`): the byte each stands for. */
const C_ESCAPES: Readonly<Record<string, number>> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, "\"": 0x22, "\\": 0x5c }

/**
 * A name as a patch header writes it, read from `text` at `at`: a C-quoted `"a/x\ty"` (what git writes for a name
 * holding a control character, `"` or `\\`) is the name it stands for; `undefined` where the quoting is broken.
 * Returns the name and where the quoted text ended.
 */
export const readQuotedName = (text: string, at: number): { readonly name: string; readonly end: number } | undefined => {
  if (text[at] !== "\"") return undefined
  const bytes: Array<number> = []
  for (let i = at + 1; i < text.length; i++) {
    const c = text[i]!
    if (c === "\"") return { name: nameOfBytes(Uint8Array.from(bytes)), end: i + 1 }
    if (c !== "\\") {
      // What git left as it is, to its bytes by the one rule (a byte that is not UTF-8 is that byte again).
      const plain = /^[^"\\]+/.exec(text.slice(i))![0]
      bytes.push(...bytesOfName(plain))
      i += plain.length - 1
      continue
    }
    const next = text[++i]
    if (next === undefined) return undefined
    const octal = /^[0-3][0-7]{2}/.exec(text.slice(i, i + 3))
    if (octal !== null) {
      bytes.push(parseInt(octal[0], 8))
      i += 2
    } else if (next in C_ESCAPES) {
      bytes.push(C_ESCAPES[next]!)
    } else {
      return undefined
    }
  }
  return undefined
}

const C_ESCAPE_OF: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(C_ESCAPES).map(([k, v]) => [v, `\\${k}`]))

/**
 * A name C-quoted as git writes it in a header (`quote_c_style` with `core.quotepath=false`): between quotes,
 * `"`, `\\` and the controls escaped (`\\n`, `\\t` …, else octal), everything else as it is. The inverse of
 * `readQuotedName`.
 */
export const quoteGitName = (name: string): string => {
  let out = "\""
  for (const ch of name) {
    const c = ch.codePointAt(0)!
    if (c in C_ESCAPE_OF) out += C_ESCAPE_OF[c]
    else if (c < 0x20 || c === 0x7f) out += `\\${c.toString(8).padStart(3, "0")}`
    else out += ch
  }
  return `${out}"`
}

/** Paths for `-z --stdin` (`update-index`): each one's bytes, NUL-terminated. */
export const nulPathsInput = (paths: Iterable<string>): Uint8Array => {
  const parts: Array<Uint8Array> = []
  let length = 0
  for (const p of paths) {
    const b = bytesOfName(p)
    if (b.length === 0 || b.includes(NUL)) throw new Error(`not a path git can be given: ${JSON.stringify(p)}`)
    parts.push(b)
    length += b.length + 1
  }
  const out = new Uint8Array(length)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length + 1
  }
  return out
}

/** Object ids for `cat-file --batch`, one a line. */
export const objectIdsInput = (oids: ReadonlyArray<string>): Uint8Array => new TextEncoder().encode(oids.map((o) => `${o}\n`).join(""))

/** NUL-terminated records, each non-empty (the last byte is a NUL, or there is no record at all). */
const nulRecords = (bytes: Uint8Array, max: number): Parsed<ReadonlyArray<Uint8Array>> => {
  const records: Array<Uint8Array> = []
  let at = 0
  while (at < bytes.length) {
    const end = bytes.indexOf(NUL, at)
    if (end === -1) return bad(`an unterminated record at byte ${at} (${shown(bytes.subarray(at))})`)
    if (end === at) return bad(`an empty record at byte ${at}`)
    if (records.length >= max) return bad(`more than ${max} records`)
    records.push(bytes.subarray(at, end))
    at = end + 1
  }
  return ok(records)
}

/** `ls-files -z`, `diff --name-only -z`: paths, NUL-terminated, each a path git can store. */
export const parseNulPaths = (bytes: Uint8Array, max: number): Parsed<ReadonlyArray<string>> => {
  const records = nulRecords(bytes, max)
  if (!records.ok) return records
  const paths: Array<string> = []
  for (const r of records.value) {
    const path = nameOfBytes(r)
    if (!isStoredPath(path)) return bad(`not a path git stores: ${shown(r)}`)
    paths.push(path)
  }
  return ok(paths)
}

// ---------------------------------------------------------------------------------------------------------
// Object ids, trees, blobs

/** `rev-parse --verify` and the like: exactly one object id and a newline. */
export const parseObjectIdLine = (bytes: Uint8Array): Parsed<string> => {
  const text = bytes.length === 41 && bytes[40] === LF ? asciiOf(bytes.subarray(0, 40)) : undefined
  return text !== undefined && isObjectId(text) ? ok(text) : bad(`not an object id: ${shown(bytes)}`)
}

export interface TreeFile {
  readonly path: string
  readonly oid: string
}

/**
 * `ls-tree -r -z <rev> -- <scopes>`: `<mode> SP <type> SP <oid> TAB <path> NUL` per entry. Only regular files
 * (100644, 100755) under one of the scopes, each path once: the history never stores anything else, so a
 * link, a submodule or a path outside the scopes is damage, not content to restore.
 */
export const parseLsTree = (
  bytes: Uint8Array,
  options: { readonly scopes: ReadonlyArray<string>; readonly max: number }
): Parsed<ReadonlyArray<TreeFile>> => {
  const records = nulRecords(bytes, options.max)
  if (!records.ok) return records
  const files: Array<TreeFile> = []
  const seen = new Set<string>()
  for (const r of records.value) {
    const tab = r.indexOf(0x09)
    const header = tab === -1 ? undefined : asciiOf(r.subarray(0, tab))
    const m = header === undefined ? null : /^(\d{6}) ([a-z]+) ([0-9a-f]{40})$/.exec(header)
    if (m === null) return bad(`not a tree entry: ${shown(r)}`)
    const path = nameOfBytes(r.subarray(tab + 1))
    if (!isStoredPath(path)) return bad(`not a path git stores: ${shown(r.subarray(tab + 1))}`)
    if (!options.scopes.some((s) => path.startsWith(`${s}/`))) return bad(`${JSON.stringify(path)} is outside ${options.scopes.join(", ")}`)
    const [, mode, type] = m
    if (type !== "blob" || (mode !== "100644" && mode !== "100755")) {
      const what = mode === "120000" ? "a symbolic link" : mode === "160000" ? "a submodule" : `${withArticle(type ?? "entry")} of mode ${mode}`
      return bad(`${JSON.stringify(path)} is ${what}, not a regular file`)
    }
    if (seen.has(path)) return bad(`${JSON.stringify(path)} is listed twice`)
    seen.add(path)
    files.push({ path, oid: m[3]! })
  }
  return ok(files)
}

/** A header line of `cat-file --batch` is short: an id, a type and a size. */
const BATCH_HEADER_MAX = 128

/**
 * `cat-file --batch` given `oids` (one a line): for each, in order, `<oid> blob <size> LF`, exactly `size`
 * bytes, `LF`; then nothing. A missing or other object, a size that is not an exact decimal within `maxBlob`,
 * a short answer or trailing bytes: the revision cannot be read whole.
 */
export const parseCatFileBatch = (
  bytes: Uint8Array,
  oids: ReadonlyArray<string>,
  maxBlob: number
): Parsed<ReadonlyArray<Uint8Array>> => {
  const blobs: Array<Uint8Array> = []
  let at = 0
  for (const oid of oids) {
    const nl = bytes.subarray(at, at + BATCH_HEADER_MAX).indexOf(LF)
    if (nl === -1) return bad(`the answer for object ${oid} is cut short or garbled at byte ${at}`)
    const header = asciiOf(bytes.subarray(at, at + nl))
    if (header === `${oid} missing`) return bad(`object ${oid} is missing`)
    const m = header === undefined ? null : /^([0-9a-f]{40}) ([a-z]+) (0|[1-9]\d{0,15})$/.exec(header)
    if (m === null) return bad(`the answer for object ${oid} is not a header: ${shown(bytes.subarray(at, at + nl))}`)
    if (m[1] !== oid) return bad(`asked for object ${oid}, got ${m[1]}`)
    if (m[2] !== "blob") return bad(`object ${oid} is a ${m[2]}, not a blob`)
    const size = Number(m[3])
    if (!Number.isSafeInteger(size) || size > maxBlob) return bad(`object ${oid} is ${m[3]} bytes, more than ${maxBlob}`)
    const start = at + nl + 1
    if (start + size + 1 > bytes.length) return bad(`object ${oid} is cut short (${bytes.length - start} of ${size + 1} bytes)`)
    if (bytes[start + size] !== LF) return bad(`object ${oid} is not followed by its newline`)
    blobs.push(bytes.slice(start, start + size))
    at = start + size + 1
  }
  if (at !== bytes.length) return bad(`${bytes.length - at} bytes after the last object`)
  return ok(blobs)
}

// ---------------------------------------------------------------------------------------------------------
// log

/**
 * The format of `log -z --name-only`: a header record `/<H>/<ct>/<subject>` (a stored path never starts with
 * `/`, so a header cannot be taken for a path, and the subject never holds a NUL or a newline), then, when the
 * commit changed files, a newline and the paths, each NUL-terminated.
 */
export const LOG_FORMAT = "--format=/%H/%ct/%s"

export interface LogRecord {
  readonly revision: string
  readonly seconds: number
  readonly subject: string
  readonly paths: ReadonlyArray<string>
}

/** The latest date `Date` can hold, in seconds. */
const MAX_SECONDS = 8.64e12

/** `log -z --name-only LOG_FORMAT -n<limit>`: at most `limit` commits, at most `maxPaths` paths each. */
export const parseLog = (bytes: Uint8Array, options: { readonly limit: number; readonly maxPaths: number }): Parsed<ReadonlyArray<LogRecord>> => {
  const records = nulRecords(bytes, (options.limit + 1) * (options.maxPaths + 1))
  if (!records.ok) return records
  const out: Array<{ revision: string; seconds: number; subject: string; paths: Array<string> }> = []
  let first = false
  for (const r of records.value) {
    if (r[0] === 0x2f) {
      const slash1 = r.indexOf(0x2f, 1)
      const slash2 = slash1 === -1 ? -1 : r.indexOf(0x2f, slash1 + 1)
      const revision = slash1 === -1 ? undefined : asciiOf(r.subarray(1, slash1))
      const seconds = slash2 === -1 ? undefined : asciiOf(r.subarray(slash1 + 1, slash2))
      if (revision === undefined || !isObjectId(revision) || seconds === undefined || !/^(0|[1-9]\d{0,12})$/.test(seconds) || Number(seconds) > MAX_SECONDS) {
        return bad(`not a log header: ${shown(r)}`)
      }
      const subject = nameOfBytes(r.subarray(slash2 + 1))
      if (subject.includes("\n")) return bad(`a subject with a newline: ${shown(r)}`)
      if (out.length >= options.limit) return bad(`more than the ${options.limit} commits asked for`)
      out.push({ revision, seconds: Number(seconds), subject, paths: [] })
      first = true
      continue
    }
    const entry = out[out.length - 1]
    if (entry === undefined) return bad(`a path before the first commit: ${shown(r)}`)
    if (first && r[0] !== LF) return bad(`the paths of ${entry.revision} do not start on a new line`)
    const path = nameOfBytes(first ? r.subarray(1) : r)
    first = false
    if (!isStoredPath(path)) return bad(`not a path git stores: ${shown(r)}`)
    if (entry.paths.length >= options.maxPaths) return bad(`more than ${options.maxPaths} paths in ${entry.revision}`)
    entry.paths.push(path)
  }
  return ok(out)
}

// ---------------------------------------------------------------------------------------------------------
// HEAD and refs (read from the files git keeps, so an unborn branch is told apart from a damaged one)

export type HeadFile =
  | { readonly _tag: "Branch"; readonly ref: string }
  | { readonly _tag: "Detached"; readonly oid: string }

/** A branch name the history can hold: `refs/heads/…`, components git accepts, and safe to join to a path. */
export const isBranchRef = (ref: string): boolean => {
  if (!ref.startsWith("refs/heads/") || ref.length > 255) return false
  // Control bytes, space and git's specials (~ ^ : ? * [ \) are never in a ref; neither is "@{" or "..".
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(ref) || ref.includes("@{") || ref.includes("..")) return false
  return ref.slice("refs/heads/".length).split("/").every((c) => c !== "" && !c.startsWith(".") && !c.endsWith(".") && !c.endsWith(".lock"))
}

/** `HEAD`: `ref: refs/heads/<branch>` or a commit id, with git's newline. */
export const parseHeadFile = (bytes: Uint8Array): Parsed<HeadFile> => {
  const text = bytes.length <= 512 ? asciiOf(bytes.length > 0 && bytes[bytes.length - 1] === LF ? bytes.subarray(0, -1) : bytes) : undefined
  if (text !== undefined && text.startsWith("ref: ") && isBranchRef(text.slice(5))) return ok({ _tag: "Branch", ref: text.slice(5) })
  if (text !== undefined && isObjectId(text)) return ok({ _tag: "Detached", oid: text })
  return bad(`HEAD is neither a branch nor a commit id: ${shown(bytes)}`)
}

/** A loose ref file: a commit id and git's newline. */
export const parseLooseRef = (bytes: Uint8Array): Parsed<string> => parseObjectIdLine(bytes)

/**
 * The id `packed-refs` gives `ref`, `undefined` when it lists no such ref. Every line must be the optional
 * `# pack-refs with:` header, `<oid> SP <ref>`, or a `^<oid>` peel line after a ref line.
 */
export const findPackedRef = (bytes: Uint8Array, ref: string): Parsed<string | undefined> => {
  if (bytes.length > 0 && bytes[bytes.length - 1] !== LF) return bad("packed-refs does not end with a newline")
  const text = nameOfBytes(bytes)
  let found: string | undefined
  let afterRef = false
  const lines = text === "" ? [] : text.slice(0, -1).split("\n")
  for (const [i, line] of lines.entries()) {
    if (i === 0 && line.startsWith("# pack-refs with:")) continue
    const peel = /^\^([0-9a-f]{40})$/.exec(line)
    if (peel !== null && afterRef) {
      afterRef = false
      continue
    }
    const m = /^([0-9a-f]{40}) (refs\/\S+)$/.exec(line)
    if (m === null) return bad(`packed-refs line ${i + 1} is not a ref: ${JSON.stringify(line.slice(0, 80))}`)
    if (m[2] === ref) {
      if (found !== undefined) return bad(`packed-refs lists ${ref} twice`)
      found = m[1]
    }
    afterRef = true
  }
  return ok(found)
}
