/**
 * The typed errors of the USER.md profile (docs/user-profile.md "User profile (USER.md)"). Kept beside the profile's domain rather than in
 * Errors.ts so the profile is one self-contained unit; exported with the others from the package index.
 */
import * as Schema from "effect/Schema"

export const InvalidEntryReason = Schema.Literal("not-a-string", "newline", "blank", "invisible-character", "pointer-line", "too-large")
export type InvalidEntryReason = typeof InvalidEntryReason.Type

/** Text safe to print: control and format characters (bidi overrides, zero-width …) shown as `\u{…}` escapes. */
const printable = (text: string): string =>
  text.replace(/\p{C}/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16).toUpperCase()}}`)

/** An entry the profile cannot hold: it must be one visible, non-blank line. */
export class InvalidEntry extends Schema.TaggedError<InvalidEntry>()("InvalidEntry", {
  text: Schema.String,
  reason: InvalidEntryReason,
  detail: Schema.String
}) {
  override get message(): string {
    const shown = printable(this.text.length > 80 ? `${this.text.slice(0, 77)}...` : this.text)
    return `invalid profile entry "${shown}": ${this.detail}`
  }
}

/** No entry is, or contains, the text given to `replace`/`remove`. */
export class EntryNotFound extends Schema.TaggedError<EntryNotFound>()("EntryNotFound", {
  query: Schema.String
}) {
  override get message(): string {
    return `no profile entry is or contains ${JSON.stringify(this.query)}`
  }
}

/** Several entries contain the text: the edit is refused rather than applied to the first one. */
export class AmbiguousEntry extends Schema.TaggedError<AmbiguousEntry>()("AmbiguousEntry", {
  query: Schema.String,
  candidates: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `${this.candidates.length} profile entries contain ${JSON.stringify(this.query)}; give the exact text of one: ` +
      this.candidates.map((c) => JSON.stringify(c)).join(", ")
  }
}

export const UnsafeProfileReason = Schema.Literal(
  "symlink",
  "not-a-directory",
  "not-a-regular-file",
  /** A directory the profile goes through is another user's: they could swap what the library reads and writes. */
  "foreign-owner",
  /** A directory of the profile's every user may write in: a shard planted there would read as the user's facts. */
  "world-writable",
  "unparsable-shard",
  "unreadable-journal",
  /** USER.md or the index is not valid UTF-8 (a Latin-1 or binary file): refused, never rewritten. */
  "not-utf8",
  /** USER.md is larger than the library reads (4 MiB): refused, never rewritten. */
  "too-large",
  /** A file the edit read kept changing (a person saving it) through every retry; what they saved is kept. */
  "changed-meanwhile"
)
export type UnsafeProfileReason = typeof UnsafeProfileReason.Type

/** The profile's files are not what the library can safely read or write through; nothing was changed. */
export class UnsafeProfile extends Schema.TaggedError<UnsafeProfile>()("UnsafeProfile", {
  path: Schema.String,
  reason: UnsafeProfileReason,
  detail: Schema.String
}) {
  override get message(): string {
    return `refusing the user profile at ${this.path} (${this.reason}): ${this.detail}; nothing was changed`
  }
}

/** The profile lock is held by a marker nobody can read (a live holder is waited for, as long as it lives). */
export class ProfileBusy extends Schema.TaggedError<ProfileBusy>()("ProfileBusy", {
  path: Schema.String,
  holder: Schema.String
}) {
  override get message(): string {
    return `the user profile lock ${this.path} is held (${this.holder}); delete it if no writer is running`
  }
}
