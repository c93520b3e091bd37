/**
 * The config red lines (docs/tiers.md "Extension data tiers (web host)": red lines; "Doctor"; "Config history"), in one place: what never belongs in a config tier.
 * The config tier refuses these writes, the doctor flags them, the config history skips them: all three call
 * the functions here, so a name can never be refused by one and let through by another. Pure.
 */

/** The config size budget (docs/tiers.md "Extension data tiers (web host)"): the whole config/ tier, and so any single file in it. */
export const DEFAULT_CONFIG_BUDGET_BYTES = 1024 * 1024

/** SQLite, LevelDB, Access and friends, with SQLite's side files (`-wal`, `-shm`, `-journal`). */
const DATABASE_NAME = /\.(db|db3|sqlite|sqlite3|s3db|sl3|mdb|ldb)(-wal|-shm|-journal)?$/i
/** Logs, rotated logs (`.log.1`, `.log.3.gz`, `.log.gz`) and captured process output (`.out`, `.err`). */
const LOG_NAME = /(\.log(\.\d+)?(\.gz)?|\.out|\.err)$/i
/** Directories that are rebuildable environments. */
const ENVIRONMENT_DIRS = new Set([".venv", "venv", "virtualenv", ".virtualenv", "node_modules", "__pycache__", "site-packages"])

export const isDatabaseFileName = (name: string): boolean => DATABASE_NAME.test(name)
export const isLogFileName = (name: string): boolean => LOG_NAME.test(name)
export const isEnvironmentDir = (name: string): boolean => ENVIRONMENT_DIRS.has(name)

export type ConfigRedLineRule = "database" | "log" | "virtualenv" | "size-budget"

export interface ConfigViolation {
  readonly rule: ConfigRedLineRule
  /** The tier the data belongs in instead. */
  readonly rightTier: "state" | "cache"
  readonly detail: string
}

const DATABASE: ConfigViolation = {
  rule: "database",
  rightTier: "state",
  detail: "databases do not belong in config/ (they enter the config backup); use state/, or cache/ if it is " +
    "fully reloadable from a source that still exists"
}

const LOG: ConfigViolation = {
  rule: "log",
  rightTier: "cache",
  detail: "logs do not belong in config/; a debugging log goes to cache/, an audit log to state/"
}

const VIRTUALENV: ConfigViolation = {
  rule: "virtualenv",
  rightTier: "cache",
  detail: "a virtualenv / node_modules tree is rebuildable and does not belong in config/; put it in cache/"
}

/** A file's red line by its name alone: databases and logs never live in config/. */
export const configFileNameViolation = (name: string): ConfigViolation | null =>
  isDatabaseFileName(name) ? DATABASE : isLogFileName(name) ? LOG : null

/** A file larger than the whole budget can never fit a config tier. */
export const configFileSizeViolation = (size: number, budgetBytes: number = DEFAULT_CONFIG_BUDGET_BYTES): ConfigViolation | null =>
  size > budgetBytes
    ? {
      rule: "size-budget",
      rightTier: "state",
      detail: `${size} bytes, over the config budget of ${budgetBytes} bytes (large files drag the config backup ` +
        "down); use state/, or cache/ if it can be rebuilt"
    }
    : null

/**
 * One entry found inside a config tier (or among the config files history tracks): directories by name
 * (environments), files by name then by size. `size` is only looked at when the name passes, so a caller may
 * stat lazily. Other entry types (symlinks, sockets) are the caller's to judge.
 */
export const configEntryViolation = (
  entry: { readonly name: string; readonly type: "File" | "Directory"; readonly size?: number | undefined },
  budgetBytes: number = DEFAULT_CONFIG_BUDGET_BYTES
): ConfigViolation | null => {
  if (entry.type === "Directory") return isEnvironmentDir(entry.name) ? VIRTUALENV : null
  return configFileNameViolation(entry.name) ?? (entry.size === undefined ? null : configFileSizeViolation(entry.size, budgetBytes))
}

/**
 * The tier-wide size red line: would config/ exceed its budget after replacing `replacedBytes` with `newBytes`?
 * `complete: false` means the measure was cut short, so its byte count is only a lower bound: refuse.
 */
export const configBudgetViolation = (input: {
  readonly currentBytes: number
  readonly complete: boolean
  readonly replacedBytes: number
  readonly newBytes: number
  readonly budgetBytes: number
}): ConfigViolation | null => {
  if (!input.complete) {
    return {
      rule: "size-budget",
      rightTier: "state",
      detail: "config/ holds too many entries to measure; it is meant for KB-scale settings"
    }
  }
  const projected = input.currentBytes - input.replacedBytes + input.newBytes
  if (projected > input.budgetBytes) {
    return {
      rule: "size-budget",
      rightTier: "state",
      detail: `config/ would hold ${projected} bytes, over its budget of ${input.budgetBytes} bytes (large files drag the ` +
        "config backup down); use state/, or cache/ if it can be rebuilt"
    }
  }
  return null
}
