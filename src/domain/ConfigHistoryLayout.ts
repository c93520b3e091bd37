/**
 * Where the config history keeps its files (docs/config-history.md "Config history"), alone so a reader that
 * only needs the names (the CLI's clean-scan check, cli/configFast.ts) loads nothing else. Pure.
 */

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
/** In the git dir (never content): which web data root `WEB_MIRROR` holds (domain/ConfigHistory.ts `WebRootRecord`). */
export const WEB_ROOT_RECORD = "pi-web-root.json"

/** The stat cache's scope: the mirror roots and the web data root it describes (another scope's cache proves nothing). */
export const statCacheScope = (webRoot: string): string => `${[AGENT_MIRROR, WEB_MIRROR].join(",")}:${webRoot}`
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
