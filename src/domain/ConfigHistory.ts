/**
 * Pure rules of the config history (docs/config-history.md "Config history"): what is versioned and under which name, the denylist, the
 * redaction of literal credentials and its reverse for a rollback (`Redaction.ts`, re-exported here), the crash
 * sentinel's format, and the display of git's paths (git's answers are parsed in domain/GitFormats.ts). No I/O:
 * src/services/ConfigHistory.ts runs git and touches files.
 */
import * as Schema from "effect/Schema"
import { CANONICAL_ROOT_ENTRIES } from "./AgentPaths.js"
import { atomicTempName } from "./AtomicWrite.js"
import { decodeJsonBytes } from "./Formats.js"
import { gitBlobId } from "./Digest.js"
import { quoteGitName, readQuotedName } from "./GitFormats.js"
import { nameOfBytes } from "./NameBytes.js"
import { markerFileNames } from "./MarkerFiles.js"

// ---------------------------------------------------------------------------------------------------------
// Layout

export { AGENT_MIRROR, CHANGE_SENTINEL, HISTORY_DIR_NAME, HISTORY_LOCK, PENDING_MARKER, RACY_MARGIN_MS, STAT_CACHE, STAT_CACHE_MAX_BYTES, statCacheFits, statCacheScope, WEB_MIRROR, WEB_ROOT_RECORD, WEB_ROOT_RECORD_MAX_BYTES, webMirrorOf, webRootRecordOf } from "./ConfigHistoryLayout.js"
import { AGENT_MIRROR, CHANGE_SENTINEL, HISTORY_LOCK, PENDING_MARKER, WEB_MIRROR, webMirrorPrefixOf, webRootRecordOf, type WebRootRecordParsed } from "./ConfigHistoryLayout.js"

/**
 * The web-root record's bytes as the history and the doctor read them (`webRootRecordOf`): one reading, so the
 * doctor says damaged exactly when the history refuses. (The CLI's clean-scan check reads the text with
 * `parseWebRootRecord`, trusting only what parses, and leaves the rest to the program.)
 */
export const decodeWebRootRecord = (bytes: Uint8Array): WebRootRecordParsed => {
  const json = decodeJsonBytes(Schema.Unknown, bytes)
  return json.ok ? webRootRecordOf(json.value) : json
}

/** What a refusal over the web-root record, and the doctor's finding of it, tell a person to do. */
export const writeWebRootRecordFix = (path: string): string =>
  `write {"version":1,"webRoot":"<the web data root whose extension config web/ holds>"} to ${path}`
/**
 * Our files in the work tree, which git must never see as content (`.git/info/exclude` patterns, anchored at
 * the top): the writer lock and the files the marker rule brings with it (its reclaim lock, where a clock probe
 * is made too: `MarkerFiles.ts`), the crash sentinel, the pending marker, and the temp files of their atomic writes.
 */
export const HISTORY_OWN_FILES: ReadonlyArray<string> = [
  ...markerFileNames(HISTORY_LOCK),
  CHANGE_SENTINEL,
  PENDING_MARKER,
  atomicTempName(CHANGE_SENTINEL, "*"),
  atomicTempName(PENDING_MARKER, "*")
]

/** The bytes of the repository's `.git/info/exclude`: each of `HISTORY_OWN_FILES` at the work tree's top. */
export const historyExcludeBytes = (): Uint8Array => new TextEncoder().encode(HISTORY_OWN_FILES.map((f) => `/${f}`).join("\n") + "\n")


/**
 * Agent-dir files considered: the root files the canonical table classes `config`. Directory overlays
 * `profiles/directories/<id>/settings.json` come on top (AgentPaths: `DIRECTORY_PROFILES_DIR`).
 */
export const AGENT_CONFIG_FILES: ReadonlyArray<string> = CANONICAL_ROOT_ENTRIES
  .filter((e) => e.class === "config" && e.kind === "file")
  .map((e) => e.name)
/** Never versioned, whatever the denylist says (a caller's own denylist cannot let credentials in). */
export const NEVER_VERSIONED: ReadonlyArray<string> = ["auth.json"]

export type Source = { readonly _tag: "agent" } | { readonly _tag: "web"; readonly extId: string }

/** Repository path (`agent/settings.json`, `web/<extId>/config/x`, `web-<id>/<extId>/config/x`) → the path a person knows. */
export const displayOfRepoPath = (repoPath: string): string => {
  if (repoPath.startsWith(`${AGENT_MIRROR}/`)) return repoPath.slice(AGENT_MIRROR.length + 1)
  const web = webMirrorPrefixOf(repoPath)
  return web === undefined ? repoPath : repoPath.slice(web.length)
}

// ---------------------------------------------------------------------------------------------------------
// The denylist

/**
 * Never committed, whatever they hold (case-insensitive globs on the file name; a `/` matches the display path).
 * `.netrc` and `.pgpass` are credential stores whose lines (`machine h login u password p`, `h:5432:db:u:p`) the
 * line-by-line reading of files of no known format would not recognise.
 */
export const DEFAULT_DENYLIST: ReadonlyArray<string> = [
  "auth.json", "*.pem", "*.key", "id_*", ".env*", "*secret*", "*token*", "*credential*", ".netrc", "_netrc", ".pgpass"
]

const compiled = new Map<string, RegExp>()
const globRegExp = (pattern: string): RegExp => {
  let re = compiled.get(pattern)
  if (re === undefined) {
    re = new RegExp(`^${pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`, "i")
    compiled.set(pattern, re)
  }
  return re
}

/** The first denylist pattern a file matches, or null. */
export const deniedBy = (displayPath: string, patterns: ReadonlyArray<string>): string | null => {
  const name = displayPath.slice(displayPath.lastIndexOf("/") + 1)
  for (const pattern of patterns) {
    if (globRegExp(pattern).test(pattern.includes("/") ? displayPath : name)) return pattern
  }
  return null
}

/**
 * What a rollback never writes over: a live entry history could not store. The live scan's skips (a file over
 * the size budget or another red line, one whose credentials cannot be redacted, a name git refuses, a
 * directory left out whole as `dir/` …) name what is on disk and in no revision, so writing a revision's file
 * there would lose it. The skip covering `display` (that path, or a skipped directory it lies in), or `undefined`.
 */
export const unstoredLiveCover = <S extends { readonly path: string }>(skipped: ReadonlyArray<S>, display: string): S | undefined =>
  skipped.find((s) => s.path === display || (s.path.endsWith("/") && display.startsWith(s.path)))

// ---------------------------------------------------------------------------------------------------------
// Credentials: the one redaction rule (src/domain/Redaction.ts), what history stores and what a rollback writes

export {
  configFormatOf,
  credentialRanges,
  type HistoryContent,
  historyContent,
  isCredentialKey,
  isLiteralCredential,
  REDACTED,
  REDACTION_RULE,
  type RollbackContent,
  rollbackContent
} from "./Redaction.js"

// ---------------------------------------------------------------------------------------------------------
// The crash sentinel of change()

export const ChangeSentinel = Schema.Struct({
  version: Schema.Literal(1),
  message: Schema.String,
  startedAt: Schema.Number,
  lastGoodRevision: Schema.NullOr(Schema.String),
  host: Schema.String,
  bootId: Schema.optional(Schema.String),
  pid: Schema.Number,
  processStartedAt: Schema.optional(Schema.Number),
  /** The web data root the change covered (a sentinel written before this field has none). */
  webRoot: Schema.optional(Schema.String)
})
export type ChangeSentinel = typeof ChangeSentinel.Type

// ---------------------------------------------------------------------------------------------------------
// git output

export interface LogEntry {
  readonly revision: string
  /** ISO 8601, UTC. */
  readonly date: string
  readonly message: string
  /** Display paths of the files the revision changed. */
  readonly changed: ReadonlyArray<string>
}

/**
 * A header's name as a patch shows it: the name itself, unless it holds a line break (a newline or CR would split
 * the header line, and what follows it could pass for patch lines): then C-quoted as git writes it.
 */
export const patchHeaderName = (name: string): string => (/[\n\r]/.test(name) ? quoteGitName(name) : name)

/** A header's name as a person knows it: `a/agent/x` → `a/x`, `b/web/e/config/x` → `b/e/config/x`; `/dev/null` as is. */
const displayHeaderName = (name: string): string =>
  patchHeaderName(name.startsWith("a/") || name.startsWith("b/") ? `${name.slice(0, 2)}${displayOfRepoPath(name.slice(2))}` : name)

/** One name as a header writes it: C-quoted (the name it stands for) or as is; `undefined`: broken quoting. */
const headerName = (token: string): string | undefined => {
  if (!token.startsWith("\"")) return token
  const quoted = readQuotedName(token, 0)
  return quoted !== undefined && quoted.end === token.length ? quoted.name : undefined
}

/**
 * The two names of `diff --git A B` or `Binary files A and B differ`, split at the `sep` where they name the same
 * file (`a/P` and `b/P`, or `/dev/null` on one side): a name may hold the separator itself (`a b.json`).
 */
const headerPair = (text: string, sep: string): readonly [string, string] | undefined => {
  const pathOf = (name: string, prefix: string) => (name === "/dev/null" ? null : name.startsWith(prefix) ? name.slice(2) : undefined)
  for (let i = text.indexOf(sep); i !== -1; i = text.indexOf(sep, i + 1)) {
    const left = headerName(text.slice(0, i))
    const right = headerName(text.slice(i + sep.length))
    if (left === undefined || right === undefined) continue
    const l = pathOf(left, "a/")
    const r = pathOf(right, "b/")
    if (l === undefined || r === undefined || (l === null && r === null)) continue
    if (l === null || r === null || l === r) return [left, right]
  }
  return undefined
}

/**
 * Rewrite the names in a patch's file headers to display paths (`a/agent/x` → `a/x`), and a name git quoted
 * (`"a/web/e/config/t\tb.json"`) or marked with a trailing tab (a name with a space) to the name itself, so the
 * screen escapes it once, as it does every other name; one holding a line break stays quoted (`patchHeaderName`).
 * Only the headers: between `diff --git` and the first `@@`, so a content line that looks like one (`--- a/x`
 * removed) is left as it is. A header that cannot be read is left as it is.
 */
export const displayPatch = (patch: string): string => {
  let inHeader = false
  return patch.split("\n").map((line) => {
    if (line.startsWith("diff --git ")) {
      inHeader = true
      const pair = headerPair(line.slice(11), " ")
      return pair === undefined ? line : `diff --git ${displayHeaderName(pair[0])} ${displayHeaderName(pair[1])}`
    }
    if (!inHeader) return line
    if (line.startsWith("@@")) {
      inHeader = false
      return line
    }
    if (line.startsWith("--- ") || line.startsWith("+++ ")) {
      const rest = line.slice(4)
      // Git ends the name with a tab when it holds a space (for GNU patch), quoted or not: not part of the name (a
      // tab in the name itself is always quoted).
      const name = headerName(rest.replace(/\t$/, ""))
      return name === undefined ? line : `${line.slice(0, 4)}${displayHeaderName(name)}`
    }
    // `[^]`: a name may hold U+2028/U+2029, which git leaves as they are and `.` does not match.
    const binary = /^Binary files ([^]+) differ$/.exec(line)
    if (binary !== null) {
      const pair = headerPair(binary[1]!, " and ")
      return pair === undefined ? line : `Binary files ${displayHeaderName(pair[0])} and ${displayHeaderName(pair[1])} differ`
    }
    return line
  }).join("\n")
}

/** Git's test for a binary file (`buffer_is_binary`): a NUL among the first 8,000 bytes. */
const looksBinary = (bytes: Uint8Array): boolean => bytes.subarray(0, 8000).includes(0)

/**
 * The patch git shows for files that are new (against no revision: before the first snapshot), in display names as
 * `displayPatch` leaves git's: so a diff before the history exists needs no repository (and makes none). `files`
 * in git's order (byte order of their repository paths).
 */
export const newFilesPatch = (files: ReadonlyArray<{ readonly display: string; readonly bytes: Uint8Array }>): string => {
  const out: Array<string> = []
  for (const { bytes, display } of files) {
    const [a, b] = [patchHeaderName(`a/${display}`), patchHeaderName(`b/${display}`)]
    out.push(`diff --git ${a} ${b}`, "new file mode 100644", `index 0000000..${gitBlobId(bytes).slice(0, 7)}`)
    if (bytes.length === 0) continue
    if (looksBinary(bytes)) {
      out.push(`Binary files /dev/null and ${b} differ`)
      continue
    }
    const lines = nameOfBytes(bytes).split("\n")
    const ended = lines[lines.length - 1] === ""
    if (ended) lines.pop()
    out.push("--- /dev/null", `+++ ${b}`, `@@ -0,0 +1${lines.length === 1 ? "" : `,${lines.length}`} @@`)
    for (const line of lines) out.push(`+${line}`)
    if (!ended) out.push("\\ No newline at end of file")
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`
}

/** Revisions a caller may name: hex ids, refs and `HEAD~n`-style expressions, never an option. */
export const revisionViolation = (revision: string): string | null =>
  typeof revision !== "string" || revision === "" ? "must be a non-empty revision" :
  revision.startsWith("-") ? "must not start with '-'" :
  !/^[A-Za-z0-9._~^/@{}-]+$/.test(revision) ? "may hold only letters, digits and . _ ~ ^ / @ { } -" : null
