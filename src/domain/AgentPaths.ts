/**
 * The agent directory (docs/architecture.md "Architecture"): resolution, the one typed path module, and the canonical root table.
 * Pure: string arithmetic only, no I/O. Every reader and writer of a datum calls the same function here.
 */
import * as NodePath from "node:path"

export const AGENT_DIR_ENV = "PI_ADAPTATIVE_CODING_AGENT_DIR"

export type AgentDirSource = "option" | "env" | "default"

export interface AgentDirResolution {
  readonly path: string
  readonly source: AgentDirSource
}

/**
 * LA1: an explicit option wins; else a non-empty `$PI_ADAPTATIVE_CODING_AGENT_DIR` (relative values resolve
 * against `cwd`); else `<home>/.pi/agent`. An explicit relative option resolves against `cwd` too.
 */
export const resolveAgentDir = (input: {
  readonly explicit?: string | undefined
  readonly env: (name: string) => string | undefined
  readonly home: string
  readonly cwd: string
}): AgentDirResolution => {
  if (input.explicit !== undefined && input.explicit !== "") {
    return { path: NodePath.resolve(input.cwd, input.explicit), source: "option" }
  }
  const fromEnv = input.env(AGENT_DIR_ENV)
  if (fromEnv !== undefined && fromEnv !== "") {
    return { path: NodePath.resolve(input.cwd, fromEnv), source: "env" }
  }
  return { path: NodePath.join(input.home, ".pi", "agent"), source: "default" }
}

/** The class of a canonical root entry: what the user loses when it is deleted. */
export type EntryClass = "config" | "memory" | "resource" | "state" | "cache" | "transient" | "managed"
export type EntryKind = "file" | "directory"

export interface CanonicalEntry {
  readonly name: string
  readonly kind: EntryKind
  readonly class: EntryClass
  readonly description: string
}

/** LA3: every canonical root entry, as data. The doctor and the migration read this; nothing else lists root names. */
export const CANONICAL_ROOT_ENTRIES: ReadonlyArray<CanonicalEntry> = [
  { name: "auth.json", kind: "file", class: "config", description: "credentials (never versioned)" },
  { name: "settings.json", kind: "file", class: "config", description: "user settings" },
  { name: "models.json", kind: "file", class: "config", description: "model configuration" },
  { name: "keybindings.json", kind: "file", class: "config", description: "key bindings" },
  { name: "config", kind: "directory", class: "config", description: "agent extensions' settings (config/extensions/<ns>/, versioned)" },
  { name: "MEMORY.md", kind: "file", class: "memory", description: "agent memory" },
  { name: "USER.md", kind: "file", class: "memory", description: "bounded hot user profile" },
  { name: "SYSTEM.md", kind: "file", class: "memory", description: "system prompt additions" },
  { name: "okf-memory", kind: "directory", class: "memory", description: "authored and indexed memory" },
  { name: "skills", kind: "directory", class: "resource", description: "user skills" },
  { name: "extensions", kind: "directory", class: "resource", description: "user extensions" },
  { name: "prompts", kind: "directory", class: "resource", description: "user prompts" },
  { name: "themes", kind: "directory", class: "resource", description: "user themes" },
  { name: "profiles", kind: "directory", class: "resource", description: "profiles and directory overlays" },
  { name: "state", kind: "directory", class: "state", description: "durable machine state (never auto-cleaned)" },
  { name: "sessions", kind: "directory", class: "state", description: "session history" },
  { name: "cache", kind: "directory", class: "cache", description: "rebuildable data, safe to delete" },
  { name: "work", kind: "directory", class: "transient", description: "leased transient work runs" },
  { name: "bin", kind: "directory", class: "managed", description: "managed executable helpers" },
  { name: "runtimes", kind: "directory", class: "managed", description: "managed runtimes" },
  { name: "models", kind: "directory", class: "managed", description: "managed models" },
  { name: "npm", kind: "directory", class: "managed", description: "managed npm packages" },
  { name: "git", kind: "directory", class: "managed", description: "managed git checkouts" },
  { name: "worktrees", kind: "directory", class: "managed", description: "managed git worktrees" }
]

export const canonicalEntry = (name: string): CanonicalEntry | undefined =>
  CANONICAL_ROOT_ENTRIES.find((e) => e.name === name)

/** Where a legacy root entry goes (MG1, the layout migration). Read by the migration and the doctor. */
export interface LegacyEntry {
  readonly name: string
  readonly kind: EntryKind
  /** Destination relative to the agent dir. */
  readonly destination: ReadonlyArray<string>
}

export const LEGACY_ROOT_ENTRIES: ReadonlyArray<LegacyEntry> = [
  { name: "trust.json", kind: "file", destination: ["state", "trust.json"] },
  { name: "backups", kind: "directory", destination: ["state", "backups", "config"] },
  { name: "resource-profiles", kind: "directory", destination: ["profiles", "directories"] },
  { name: "auto-learn", kind: "directory", destination: ["state", "legacy-layout", "auto-learn"] },
  { name: "tmp", kind: "directory", destination: ["state", "legacy-layout", "tmp"] }
]

/** Literal `NAME:Zone.Identifier` sidecars (Windows downloads copied onto a POSIX disk). */
export const ZONE_IDENTIFIER_SUFFIX = ":Zone.Identifier"
export const sidecarDestination = (name: string): ReadonlyArray<string> =>
  ["state", "legacy-layout", "sidecars", `${name.slice(0, -ZONE_IDENTIFIER_SUFFIX.length)}.Zone.Identifier`]

export const WORK_RUN_MANIFEST = ".pi-work-run.json"
export const LEASES_DIR = ".leases"
/** A run's manifest and its lease directory, from the run directory. */
export const runManifestPath = (runDir: string): string => NodePath.join(runDir, WORK_RUN_MANIFEST)
export const runLeasesDir = (runDir: string): string => NodePath.join(runDir, LEASES_DIR)
/** One lease file of a run. */
export const runLeasePath = (runDir: string, leaseName: string): string => NodePath.join(runDir, LEASES_DIR, leaseName)
export const TENANT_CLEANUP_DIR = ".cleanup"
export const TENANT_TRASH_DIR = ".trash"
/** Runs are built here (manifest and first lease) and renamed into place, so none is ever seen half-made. */
export const TENANT_STAGING_DIR = ".staging"
export const TENANT_PRUNE_MARKER = ".prune"
export const TENANT_PRUNE_STAMP = ".last-prune"

/** `profiles/directories/`: per-directory profiles, each `<id>/settings.json` an overlay of `settings.json`. */
export const DIRECTORY_PROFILES_DIR: ReadonlyArray<string> = ["profiles", "directories"]
export const DIRECTORY_PROFILE_SETTINGS = "settings.json"
/** `state/backups/`: what the backups keep inside the agent dir (config history under `config/`). */
export const STATE_BACKUPS_DIR = "backups"
/** `state/restore-aside/`: live data a state restore moved aside. */
export const STATE_RESTORE_ASIDE_DIR = "restore-aside"
/** `state/user-profile/`: the USER.md store's own state (lock, pending-write journal). */
export const STATE_USER_PROFILE_DIR = "user-profile"

/** LA2: the one typed path module for an agent directory. */
export interface AgentPaths {
  readonly agentDir: string
  readonly authFile: string
  readonly settingsFile: string
  readonly modelsFile: string
  readonly keybindingsFile: string
  readonly memoryFile: string
  readonly userFile: string
  readonly systemFile: string
  readonly okfMemoryDir: string
  readonly userPreferencesDir: string
  readonly skillsDir: string
  readonly extensionsDir: string
  readonly promptsDir: string
  readonly themesDir: string
  readonly profilesDir: string
  readonly directoryProfilesDir: string
  readonly directoryProfileSettings: (dirId: string) => string
  readonly stateDir: (...segments: ReadonlyArray<string>) => string
  readonly configBackupsDir: string
  readonly restoreAsideDir: string
  readonly userProfileStateDir: string
  readonly legacyLayoutDir: string
  readonly migrationConflictsDir: string
  readonly migrationsJournalDir: string
  readonly extensionStateDir: (namespace: string) => string
  /** `config/`: settings that are not root files (agent extensions' config tiers), versioned by config history. */
  readonly configDir: (...segments: ReadonlyArray<string>) => string
  /** `config/extensions/<ns>/`: an agent extension's config tier, beside `state/extensions/<ns>/` and `cache/extensions/<ns>/`. */
  readonly extensionConfigDir: (namespace: string) => string
  readonly cacheDir: (...segments: ReadonlyArray<string>) => string
  readonly extensionCacheDir: (namespace: string) => string
  readonly binDir: string
  readonly workRoot: string
  readonly workCategoryDir: (category: string) => string
  readonly workTenantDir: (category: string, tenant: string) => string
  readonly workRunDir: (category: string, tenant: string, runId: string) => string
  readonly runtimesDir: string
  readonly modelsDir: string
  readonly sessionsDir: string
  readonly npmDir: string
  readonly gitDir: string
  readonly worktreesDir: string
}

export const agentPaths = (agentDir: string): AgentPaths => {
  const at = (...parts: ReadonlyArray<string>) => NodePath.join(agentDir, ...parts)
  const workRoot = at("work")
  return {
    agentDir,
    authFile: at("auth.json"),
    settingsFile: at("settings.json"),
    modelsFile: at("models.json"),
    keybindingsFile: at("keybindings.json"),
    memoryFile: at("MEMORY.md"),
    userFile: at("USER.md"),
    systemFile: at("SYSTEM.md"),
    okfMemoryDir: at("okf-memory"),
    userPreferencesDir: at("okf-memory", "user-preferences"),
    skillsDir: at("skills"),
    extensionsDir: at("extensions"),
    promptsDir: at("prompts"),
    themesDir: at("themes"),
    profilesDir: at("profiles"),
    directoryProfilesDir: at(...DIRECTORY_PROFILES_DIR),
    directoryProfileSettings: (dirId) => at(...DIRECTORY_PROFILES_DIR, dirId, DIRECTORY_PROFILE_SETTINGS),
    stateDir: (...segments) => at("state", ...segments),
    configBackupsDir: at("state", STATE_BACKUPS_DIR, "config"),
    restoreAsideDir: at("state", STATE_RESTORE_ASIDE_DIR),
    userProfileStateDir: at("state", STATE_USER_PROFILE_DIR),
    legacyLayoutDir: at("state", "legacy-layout"),
    migrationConflictsDir: at("state", "migration-conflicts"),
    migrationsJournalDir: at("state", "migrations"),
    extensionStateDir: (namespace) => at("state", "extensions", namespace),
    configDir: (...segments) => at("config", ...segments),
    extensionConfigDir: (namespace) => at("config", "extensions", namespace),
    cacheDir: (...segments) => at("cache", ...segments),
    extensionCacheDir: (namespace) => at("cache", "extensions", namespace),
    binDir: at("bin"),
    workRoot,
    workCategoryDir: (category) => NodePath.join(workRoot, category),
    workTenantDir: (category, tenant) => NodePath.join(workRoot, category, tenant),
    workRunDir: (category, tenant, runId) => NodePath.join(workRoot, category, tenant, runId),
    runtimesDir: at("runtimes"),
    modelsDir: at("models"),
    sessionsDir: at("sessions"),
    npmDir: at("npm"),
    gitDir: at("git"),
    worktreesDir: at("worktrees")
  }
}

/** Where the runs of an extension live: `work/extensions/<ns>/<run-id>`. */
export const EXTENSIONS_WORK_CATEGORY = "extensions"
