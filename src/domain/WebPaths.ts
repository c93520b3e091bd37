/**
 * Web-host extension data root and tier paths (README "Extension data tiers (web host)"). Pure.
 */
import * as NodePath from "node:path"

export const WEB_DATA_DIR_ENV = "PI_WEB_DATA_DIR"

export type WebInstance = "prod" | "dev"

const given = (text: string | undefined): string | undefined => (text === undefined || text === "" ? undefined : text)

/**
 * The web data root the caller asked for, or none: `explicit` (an option or flag), else `$PI_WEB_DATA_DIR`
 * when set (read through `env`, i.e. `Host.env`), resolved against `cwd`; an empty value counts as unset.
 * The backups (config history, state snapshots) and the doctor take this; they have no default root.
 */
export const configuredWebDataRoot = (input: {
  readonly explicit?: string | undefined
  readonly env: (name: string) => string | undefined
  readonly cwd: string
}): string | undefined => {
  const chosen = given(input.explicit) ?? given(input.env(WEB_DATA_DIR_ENV))
  return chosen === undefined ? undefined : NodePath.resolve(input.cwd, chosen)
}

/** The web host's own data root when nothing is configured (TD1). */
export const defaultWebDataRoot = (home: string, instance?: WebInstance): string =>
  NodePath.join(home, ".pi", instance === "dev" ? "web-dev" : "web", "data")

/**
 * TD1, the tiers' root: `explicit` when given, else a dev instance's own `~/.pi/web-dev/data` (it ignores
 * `$PI_WEB_DATA_DIR`, so a dev host never shares the production root), else `configuredWebDataRoot`, else
 * `~/.pi/web/data`.
 */
export const resolveWebDataRoot = (input: {
  readonly explicit?: string | undefined
  readonly instance?: WebInstance | undefined
  readonly env: (name: string) => string | undefined
  readonly home: string
  readonly cwd: string
}): string => {
  if (input.instance === "dev" && given(input.explicit) === undefined) return defaultWebDataRoot(input.home, "dev")
  return configuredWebDataRoot(input) ?? defaultWebDataRoot(input.home)
}

/** The tiers of an extension's data directory; anything else in `data/<extId>/` is outside them. */
export const TIER_NAMES = ["config", "state", "cache"] as const

export interface TierPaths {
  readonly extId: string
  readonly extensionDir: string
  readonly configDir: string
  readonly stateDir: string
  readonly cacheDir: string
}

/** TD2: `data/<extId>/{config,state,cache}`. */
export const tierPaths = (dataRoot: string, extId: string): TierPaths => {
  const extensionDir = NodePath.join(dataRoot, extId)
  return {
    extId,
    extensionDir,
    configDir: NodePath.join(extensionDir, "config"),
    stateDir: NodePath.join(extensionDir, "state"),
    cacheDir: NodePath.join(extensionDir, "cache")
  }
}
