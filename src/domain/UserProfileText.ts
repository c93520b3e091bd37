/**
 * USER.md as text (docs/user-profile.md "User profile (USER.md)"), pure: what an entry is, Pi's pointer, the budget, and how `replace`/`remove`
 * pick the entry they act on.
 *
 * An entry is one non-blank line of a profile body, kept byte for byte (minus a CR before the newline).
 * `USER.md` is either a plain body (every non-blank line an entry) or Pi's pointer followed by the hot
 * entries added since the last archive.
 */
import * as Either from "effect/Either"
import { invalidUtf8At } from "./NameBytes.js"
import { AmbiguousEntry, EntryNotFound, InvalidEntry } from "./UserProfileErrors.js"
import { utf8Bytes } from "./Bytes.js"
import { kindOfValue } from "./Values.js"

export const DEFAULT_PROFILE_BUDGET_BYTES = 8 * 1024

/** Relative to the agent dir: where USER.md links to (Pi writes exactly this). */
export const ARCHIVE_INDEX_LINK = "okf-memory/user-preferences/index.okf.md"
const POINTER_LINK_LINE = `Archived preferences: [User preference archive](${ARCHIVE_INDEX_LINK}).`
/** Pi's pointer, recognised exactly and written the same. */
export const PROFILE_POINTER = `# User profile\n\n${POINTER_LINK_LINE}\n`

const strict = new TextDecoder("utf-8", { fatal: true })

/**
 * A profile file's bytes as text, only when they are valid UTF-8: a replacement character in place of a
 * Latin-1 or binary byte would be written back by the next edit, and the original bytes lost. Else the offset
 * of the first byte that is not UTF-8 (the file is refused, never rewritten).
 */
export const decodeProfileText = (bytes: Uint8Array): { readonly ok: true; readonly text: string } | { readonly ok: false; readonly offset: number } => {
  try {
    return { ok: true, text: strict.decode(bytes) }
  } catch {
    return { ok: false, offset: Math.max(0, invalidUtf8At(bytes)) }
  }
}

/** Why a file is refused as not UTF-8, in words. */
export const notUtf8Detail = (offset: number): string => `it is not valid UTF-8 (first bad byte at offset ${offset}); it is left exactly as it is`

/**
 * Characters an entry may not hold: C0/C1 controls (a tab is fine), the soft hyphen, the line and paragraph
 * separators, and the invisible or bidirectional formatting characters (zero-width spaces and joiners, the
 * combining grapheme joiner, LRM/RLM/ALM, embeddings, overrides, isolates, invisible operators, the BOM,
 * interlinear annotation marks, the Hangul fillers, the musical and shorthand format controls, and the tag
 * characters U+E0000–U+E007F, which spell hidden ASCII a model reads and a person does not see): text a reader
 * cannot see is text a prompt should not carry.
 */
const INVISIBLE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e007f}]/u

const codePoint = (c: string) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`

/** Validate one entry given by a caller (`add`, the new text of `replace`). */
export const parseEntry = (text: string, maxBytes?: number): Either.Either<string, InvalidEntry> => {
  // A plain JavaScript caller's null or number: a typed refusal, not a TypeError from `trim`.
  if (typeof text !== "string") return Either.left(new InvalidEntry({ text: String(text), reason: "not-a-string", detail: `an entry is a string, not ${kindOfValue(text)}` }))
  const invalid = (reason: InvalidEntry["reason"], detail: string) => Either.left(new InvalidEntry({ text, reason, detail }))
  if (/[\n\r]/.test(text)) return invalid("newline", "an entry is one line; add each line as its own entry")
  if (text.trim() === "") return invalid("blank", "an entry must have visible text")
  const bad = INVISIBLE.exec(text)
  if (bad !== null) return invalid("invisible-character", `it holds the invisible or control character ${codePoint(bad[0])} at ${bad.index}`)
  if (text === POINTER_LINK_LINE) return invalid("pointer-line", "that line is USER.md's link to the archive")
  if (maxBytes !== undefined && utf8Bytes(text) > maxBytes) {
    return invalid("too-large", `it is ${utf8Bytes(text)} bytes; one entry must fit in one shard (${maxBytes} bytes)`)
  }
  return Either.right(text)
}

/** The entries of a body: its non-blank lines, as written (a CR before a newline is not part of a line). */
export const bodyEntries = (body: string): Array<string> =>
  body.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l)).filter((l) => l.trim() !== "")

/** A body of entries: one per line, each ending in a newline. */
export const renderBody = (entries: ReadonlyArray<string>): string => entries.map((e) => `${e}\n`).join("")

export interface UserText {
  /** Whether the text starts with Pi's pointer (the profile is sharded). */
  readonly pointer: boolean
  /** The hot entries (all entries for a plain profile). */
  readonly entries: ReadonlyArray<string>
}

/** Pi's pointer as an editor that writes CRLF line endings saves it (Windows, git's autocrlf). */
const PROFILE_POINTER_CRLF = PROFILE_POINTER.replace(/\n/g, "\r\n")

/**
 * USER.md's pointer and hot entries. The pointer is recognised with either line ending: read as a plain body, its
 * heading and link line became entries the next archive kept as facts. (Written back, it is Pi's own, with LF.)
 */
export const parseUserText = (text: string): UserText => {
  const pointer = text.startsWith(PROFILE_POINTER) ? PROFILE_POINTER : text.startsWith(PROFILE_POINTER_CRLF) ? PROFILE_POINTER_CRLF : undefined
  return pointer !== undefined
    ? { pointer: true, entries: bodyEntries(text.slice(pointer.length)) }
    : { pointer: false, entries: bodyEntries(text) }
}

/** USER.md as written: the pointer, a blank line and the hot entries; or the plain body. */
export const renderUserText = (user: UserText): string =>
  user.pointer
    ? PROFILE_POINTER + (user.entries.length > 0 ? `\n${renderBody(user.entries)}` : "")
    : renderBody(user.entries)

export const fitsBudget = (user: UserText, budgetBytes: number): boolean => utf8Bytes(renderUserText(user)) <= budgetBytes

/**
 * Which entry an edit means: the one whose text is exactly `query`, else the only one containing it.
 * Returns the index in `entries`; none is `EntryNotFound`, several `AmbiguousEntry` listing them all.
 */
export const matchEntry = (
  entries: ReadonlyArray<string>,
  query: string
): Either.Either<number, EntryNotFound | AmbiguousEntry> => {
  if (typeof query !== "string") return Either.left(new EntryNotFound({ query: String(query) }))
  const exact = entries.indexOf(query)
  if (exact !== -1) return Either.right(exact)
  // A query of nothing but spaces is no text to look for: it would match whichever entry holds a space.
  const containing = query.trim() === "" ? [] : entries.flatMap((e, i) => (e.includes(query) ? [i] : []))
  if (containing.length === 1) return Either.right(containing[0]!)
  if (containing.length === 0) return Either.left(new EntryNotFound({ query }))
  return Either.left(new AmbiguousEntry({ query, candidates: containing.map((i) => entries[i]!) }))
}
