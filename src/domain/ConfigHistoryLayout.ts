/**
 * Where the config history keeps its files (docs/config-history.md "Config history"), alone so a reader that
 * only needs the names (the CLI's clean-scan check, cli/configFast.ts) loads nothing else. Pure.
 */

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
export const WEB_MIRROR = "web"

/** The stat cache's scope: the mirror roots and the web data root it describes (another scope's cache proves nothing). */
export const statCacheScope = (webRoot: string): string => `${[AGENT_MIRROR, WEB_MIRROR].join(",")}:${webRoot}`
/** A stat cache larger than this is not read (a config tree's is a few hundred KiB at most). */
export const STAT_CACHE_MAX_BYTES = 8 << 20
