/**
 * Where the config history keeps its files (docs/config-history.md "Config history"), alone so a reader that
 * only needs the names (the CLI's clean-scan check, cli/configFast.ts) loads nothing else. Pure.
 */

import * as NodePath from "node:path"
import { sha256Hex } from "./Digest.js"
import { REDACTION_RULE } from "./RedactionRule.js"

/** Under `configBackupsDir`: the repository and its own work tree (never a `.git` at the agent root). */
export const HISTORY_DIR_NAME = "history"
/** Our writer lock (a marker with the markers' liveness rules). */
export const HISTORY_LOCK = ".pi-history.lock"
/** The crash sentinel of `change()`. */
export const CHANGE_SENTINEL = ".pi-change.json"
/** Present while the mirror may differ from HEAD (between the first mirror write and the commit). */
export const PENDING_MARKER = ".pi-pending"
/** The stat cache, in the git dir (so it is never content). */
export const STAT_CACHE = "pi-stat-cache.json"

/** Mirror roots, laid out by source so several roots fit one history. */
export const AGENT_MIRROR = "agent"
/** The web data root the history recorded first (`WEB_ROOT_RECORD`) is mirrored here; any other under `web-<id>`. */
export const WEB_MIRROR = "web"
/** In the git dir (never content): which web data root `WEB_MIRROR` holds (`parseWebRootRecord`). */
export const WEB_ROOT_RECORD = "pi-web-root.json"
export const WEB_ROOT_RECORD_MAX_BYTES = 64 * 1024

/**
 * `WEB_ROOT_RECORD`'s text, read back as hostile input: `{"version":1,"webRoot":"<absolute path>"}` gives the
 * root, anything else why not. One reader for the service and the CLI's clean-scan check.
 */
export const parseWebRootRecord = (text: string): WebRootRecordParsed => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return { ok: false, why: `not valid JSON (${e instanceof Error ? e.message : String(e)})` }
  }
  return webRootRecordOf(value)
}

/** `webRoot` undefined: the record says no root yet (`"webRoot":null`: no revision touched `web/`, checked). */
export type WebRootRecordParsed = { readonly ok: true; readonly webRoot: string | undefined } | { readonly ok: false; readonly why: string }

/** `parseWebRootRecord` of a value already parsed from JSON. */
export const webRootRecordOf = (value: unknown): WebRootRecordParsed => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, why: "not a JSON object" }
  const record = value as Record<string, unknown>
  if (record.version !== 1) return { ok: false, why: `version ${JSON.stringify(record.version)}, not 1` }
  if (record.webRoot !== null && (typeof record.webRoot !== "string" || !NodePath.isAbsolute(record.webRoot))) {
    return { ok: false, why: "webRoot is not an absolute path (nor null)" }
  }
  const extra = Object.keys(record).filter((k) => k !== "version" && k !== "webRoot")
  if (extra.length > 0) return { ok: false, why: `unknown field ${JSON.stringify(extra[0])}` }
  // The root as a path names it (`/data/web/` and `/data/web` are one root), as the callers' roots are resolved.
  return { ok: true, webRoot: record.webRoot === null ? undefined : NodePath.resolve(record.webRoot) }
}

/**
 * Where extension config under `webRoot` is mirrored, given the root the history recorded: `web` for that one,
 * `web-<the first 12 hex digits of the SHA-256 of its path>` for any other. So two web hosts that share one
 * agent dir (a dev instance beside prod) each keep their own files: a snapshot of one never records the
 * other's as deleted, and a rollback of one never writes the other's files into it.
 */
export const webMirrorOf = (webRoot: string, recordedWebRoot: string): string =>
  webRoot === recordedWebRoot ? WEB_MIRROR : `${WEB_MIRROR}-${sha256Hex(webRoot).slice(0, WEB_MIRROR_ID_DIGITS)}`

const WEB_MIRROR_ID_DIGITS = 12

/** A repository path's web mirror prefix (`web/`, `web-<id>/`), as `webMirrorOf` names them; `undefined` for any other path. */
export const webMirrorPrefixOf = (repoPath: string): string | undefined =>
  new RegExp(`^${WEB_MIRROR}(?:-[0-9a-f]{${WEB_MIRROR_ID_DIGITS}})?/`).exec(repoPath)?.[0]

/** The stat cache's scope: the mirror roots and the web data root it describes (another scope's cache proves nothing). */
export const statCacheScope = (webRoot: string, webMirror: string): string => `${AGENT_MIRROR},${webMirror}:${webRoot}`

/**
 * Racy git: a stat cache vouches for a file, and a clean scan is recorded, only when the times it saw are older
 * than the scan by this much (coarser than any clock a local file system keeps), so a later change has a later time.
 */
export const RACY_MARGIN_MS = 2_000
/** A stat cache of this version, scope and redaction rule describes the mirror for `scopeKey`; any other proves nothing. */
export const statCacheFits = (cache: { readonly version?: unknown; readonly scope?: unknown; readonly rule?: unknown }, scopeKey: string): boolean =>
  cache.version === 1 && cache.scope === scopeKey && cache.rule === REDACTION_RULE
/** A stat cache larger than this is not read (a config tree's is a few hundred KiB at most). */
export const STAT_CACHE_MAX_BYTES = 8 << 20
