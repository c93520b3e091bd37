/**
 * Pure rules of the config history (README "Config history"): what is versioned and under which name, the denylist, the
 * redaction of literal credentials in JSON config and its reverse for a rollback, the crash sentinel's format,
 * and the display of git's paths (git's answers are parsed in domain/GitFormats.ts). No I/O:
 * src/services/ConfigHistory.ts runs git and touches files.
 */
import * as Schema from "effect/Schema"
import { CANONICAL_ROOT_ENTRIES } from "./AgentPaths.js"
import { jsonEqual } from "./MigrationPlan.js"

// ---------------------------------------------------------------------------------------------------------
// Layout

/** Under `configBackupsDir`: the repository and its own work tree (never a `.git` at the agent root). */
export const HISTORY_DIR_NAME = "history"
/** Our writer lock (a marker with the markers' liveness rules). */
export const HISTORY_LOCK = ".pi-history.lock"
/** The crash sentinel of `change()`. */
export const CHANGE_SENTINEL = ".pi-change.json"
/** Present while the mirror may differ from HEAD (between the first mirror write and the commit). */
export const PENDING_MARKER = ".pi-pending"
/** Our files in the work tree, which git must never see as content. */
export const HISTORY_OWN_FILES: ReadonlyArray<string> = [HISTORY_LOCK, `${HISTORY_LOCK}.reclaim-*`, CHANGE_SENTINEL, PENDING_MARKER]

/** Mirror roots, laid out by source so several roots fit one history. */
export const AGENT_MIRROR = "agent"
export const WEB_MIRROR = "web"

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

/** Repository path (`agent/settings.json`, `web/<extId>/config/x`) → the path a person knows. */
export const displayOfRepoPath = (repoPath: string): string => {
  if (repoPath.startsWith(`${AGENT_MIRROR}/`)) return repoPath.slice(AGENT_MIRROR.length + 1)
  if (repoPath.startsWith(`${WEB_MIRROR}/`)) return repoPath.slice(WEB_MIRROR.length + 1)
  return repoPath
}

// ---------------------------------------------------------------------------------------------------------
// The denylist

/** Never committed, whatever they hold (case-insensitive globs on the file name; a `/` matches the display path). */
export const DEFAULT_DENYLIST: ReadonlyArray<string> = [
  "auth.json", "*.pem", "*.key", "id_*", ".env*", "*secret*", "*token*", "*credential*"
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

// ---------------------------------------------------------------------------------------------------------
// Credentials in JSON config

/** What history holds instead of a literal credential. */
export const REDACTED = "[redacted by pi-storage]"

/** camelCase, snake_case, kebab-case and spaced keys as lower-case words. */
const keyWords = (key: string): ReadonlyArray<string> =>
  key.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase().split(/[^a-z0-9]+/).filter((w) => w !== "")

const CREDENTIAL_WORDS = new Set([
  "token", "secret", "password", "passwd", "passphrase", "authorization", "credential", "credentials", "cookie",
  "apikey", "bearer", "pat"
])
const CREDENTIAL_JOINED = ["apikey", "accesskey", "privatekey", "secretkey", "clientsecret", "accesstoken", "authtoken"]

/**
 * Whether an object key names a credential: `apiKey`, `api_key`, `x-api-key`, `token`, `accessToken`,
 * `secret`, `password`, `Authorization` … Word-based, so `maxTokens` or `tokenizer` are not credentials.
 */
export const isCredentialKey = (key: string): boolean => {
  const words = keyWords(key)
  if (words.some((w) => CREDENTIAL_WORDS.has(w))) return true
  const joined = words.join("")
  return CREDENTIAL_JOINED.some((j) => joined.includes(j))
}

/**
 * Whether a credential value is a literal (to redact) rather than a reference resolved at request time: an
 * environment variable name (`OPENAI_API_KEY`, `$X`, `${X}`) or a `!command`. Only strings are literals.
 */
export const isLiteralCredential = (value: unknown): value is string =>
  typeof value === "string" && value !== "" && value !== REDACTED && !value.startsWith("!") &&
  !ENV_REFERENCE.test(value) && !ENV_NAME.test(value)

/** `$NAME` or `${NAME}`. */
const ENV_REFERENCE = /^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$/
/**
 * A bare variable name the harness looks up (`OPENAI_API_KEY`): upper case words joined by `_`. At least one
 * `_` is required, so an upper-case literal key (`AKIAIOSFODNN7EXAMPLE`) is still redacted.
 */
const ENV_NAME = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

const isObject = (u: unknown): u is { readonly [key: string]: Json } => typeof u === "object" && u !== null && !Array.isArray(u)

/** A JSON pointer segment (RFC 6901). */
const pointer = (path: ReadonlyArray<string>): string => path.map((p) => "/" + p.replace(/~/g, "~0").replace(/\//g, "~1")).join("")

/** Replace every literal credential (a string under a credential key, at any depth) by `REDACTED`. */
export const redactJson = (value: unknown): { readonly value: unknown; readonly redacted: ReadonlyArray<string> } => {
  const redacted: Array<string> = []
  const walk = (v: unknown, path: ReadonlyArray<string>, credential: boolean): unknown => {
    if (credential && isLiteralCredential(v)) {
      redacted.push(pointer(path))
      return REDACTED
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...path, String(i)], credential))
    if (isObject(v)) {
      const out: Record<string, unknown> = {}
      for (const [k, x] of Object.entries(v)) {
        Object.defineProperty(out, k, { value: walk(x, [...path, k], credential || isCredentialKey(k)), enumerable: true, writable: true, configurable: true })
      }
      return out
    }
    return v
  }
  return { value: walk(value, [], false), redacted }
}

/**
 * The reverse merge for a rollback: the revision's value, with every `REDACTED` placeholder replaced by the
 * live value at the same place. A placeholder with no live string there is dropped (its key removed, its array
 * slot kept as null) and reported: a placeholder is never written into a live file.
 */
export const restoreRedacted = (
  fromHistory: unknown,
  live: unknown
): { readonly value: unknown; readonly unresolved: ReadonlyArray<string> } => {
  const unresolved: Array<string> = []
  const DROP = Symbol("drop")
  const walk = (v: unknown, l: unknown, path: ReadonlyArray<string>): unknown => {
    if (v === REDACTED) {
      if (typeof l === "string" && l !== REDACTED) return l
      unresolved.push(pointer(path))
      return DROP
    }
    if (Array.isArray(v)) {
      return v.map((x, i) => {
        const r = walk(x, Array.isArray(l) ? l[i] : undefined, [...path, String(i)])
        return r === DROP ? null : r
      })
    }
    if (isObject(v)) {
      const out: Record<string, unknown> = {}
      for (const [k, x] of Object.entries(v)) {
        const r = walk(x, isObject(l) && Object.hasOwn(l, k) ? l[k] : undefined, [...path, k])
        if (r !== DROP) Object.defineProperty(out, k, { value: r, enumerable: true, writable: true, configurable: true })
      }
      return out
    }
    return v
  }
  const value = walk(fromHistory, live, [])
  return { value: value === DROP ? null : value, unresolved }
}

const textDecoder = new TextDecoder("utf-8", { fatal: true })
const textEncoder = new TextEncoder()

export const isJsonName = (name: string): boolean => name.toLowerCase().endsWith(".json")

export type HistoryContent =
  | { readonly _tag: "Keep"; readonly bytes: Uint8Array; readonly redacted: ReadonlyArray<string> }
  | { readonly _tag: "Skip"; readonly reason: string }

/**
 * What history stores for a file's live bytes: JSON files with credentials re-serialised with them redacted
 * (two-space indent), every other file as it is. A `.json` file that does not parse is skipped: its
 * credentials cannot be found, so it cannot be proven safe to commit.
 */
export const historyContent = (name: string, bytes: Uint8Array): HistoryContent => {
  if (!isJsonName(name)) return { _tag: "Keep", bytes, redacted: [] }
  let parsed: unknown
  try {
    parsed = JSON.parse(textDecoder.decode(bytes))
  } catch (e) {
    return { _tag: "Skip", reason: `not valid JSON, so its credentials cannot be redacted (${e instanceof Error ? e.message : String(e)})` }
  }
  const { redacted, value } = redactJson(parsed)
  if (redacted.length === 0) return { _tag: "Keep", bytes, redacted }
  return { _tag: "Keep", bytes: textEncoder.encode(JSON.stringify(value, null, 2) + "\n"), redacted }
}

/** Whether stored history bytes hold a placeholder (and so need the live values merged back in). */
export const holdsPlaceholder = (bytes: Uint8Array): boolean => {
  try {
    return textDecoder.decode(bytes).includes(JSON.stringify(REDACTED))
  } catch {
    return false
  }
}

/**
 * The bytes a rollback writes: a revision's bytes, with the live credentials merged back when the revision holds
 * placeholders. `live` is the live file's bytes (`undefined` when there is none).
 */
export const rollbackContent = (
  historyBytes: Uint8Array,
  live: Uint8Array | undefined
): { readonly bytes: Uint8Array; readonly unresolved: ReadonlyArray<string> } => {
  if (!holdsPlaceholder(historyBytes)) return { bytes: historyBytes, unresolved: [] }
  const parse = (b: Uint8Array | undefined): unknown => {
    if (b === undefined) return undefined
    try {
      return JSON.parse(textDecoder.decode(b))
    } catch {
      return undefined
    }
  }
  const liveValue = parse(live)
  const merged = restoreRedacted(parse(historyBytes), liveValue)
  // The same JSON as the live file: keep its bytes (and its formatting) rather than rewrite it.
  if (live !== undefined && merged.unresolved.length === 0 && jsonEqual(merged.value, liveValue)) return { bytes: live, unresolved: [] }
  return { bytes: textEncoder.encode(JSON.stringify(merged.value, null, 2) + "\n"), unresolved: merged.unresolved }
}

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
  processStartedAt: Schema.optional(Schema.Number)
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

/** Rewrite the repository paths in a patch's header lines to display paths (`a/agent/x` → `a/x`). */
export const displayPatch = (patch: string): string =>
  patch.split("\n").map((line) => {
    const m = /^(diff --git a\/)(\S+)( b\/)(\S+)$/.exec(line)
    if (m !== null) return `${m[1]}${displayOfRepoPath(m[2]!)}${m[3]}${displayOfRepoPath(m[4]!)}`
    const h = /^(--- a\/|\+\+\+ b\/)(.+)$/.exec(line)
    if (h !== null) return `${h[1]}${displayOfRepoPath(h[2]!)}`
    return line
  }).join("\n")

/** Revisions a caller may name: hex ids, refs and `HEAD~n`-style expressions, never an option. */
export const revisionViolation = (revision: string): string | null =>
  typeof revision !== "string" || revision === "" ? "must be a non-empty revision" :
  revision.startsWith("-") ? "must not start with '-'" :
  !/^[A-Za-z0-9._~^/@{}-]+$/.test(revision) ? "may hold only letters, digits and . _ ~ ^ / @ { } -" : null
