/**
 * Web-host extension data root and tier paths (docs/tiers.md "Extension data tiers (web host)"). Pure.
 */
import * as NodePath from "node:path"

export const WEB_DATA_DIR_ENV = "PI_WEB_DATA_DIR"

export type WebInstance = "prod" | "dev"

/** Where the web data root came from: an option or flag, `$PI_WEB_DATA_DIR`, a dev instance's own root, the default. */
export type WebDataRootSource = "option" | "env" | "dev-instance" | "default"

export interface WebDataRootResolution {
  readonly path: string
  readonly source: WebDataRootSource
}

const given = (text: string | undefined): string | undefined => (text === undefined || text === "" ? undefined : text)

/**
 * TD1, the one resolution of the web data root, for the tiers (`extensionContext`), the state snapshots, the
 * config history, the doctor and `status` alike: `explicit` (an option or `--web-data-root`) when given, else
 * a dev instance's own `~/.pi/web-dev/data` (it ignores `$PI_WEB_DATA_DIR`, so a dev host never shares the
 * production root), else `$PI_WEB_DATA_DIR` when set and non-empty, else `~/.pi/web/data`. Relative values
 * resolve against `cwd`; the environment is read through `env` (`Host.env`). There is always a root: data an
 * extension writes at the default is protected with no wiring.
 */
export const resolveWebDataRoot = (input: {
  readonly explicit?: string | undefined
  readonly instance?: WebInstance | undefined
  readonly env: (name: string) => string | undefined
  readonly home: string
  readonly cwd: string
}): WebDataRootResolution => {
  const explicit = given(input.explicit)
  if (explicit !== undefined) return { path: NodePath.resolve(input.cwd, explicit), source: "option" }
  if (input.instance === "dev") return { path: NodePath.join(input.home, ".pi", "web-dev", "data"), source: "dev-instance" }
  const fromEnv = given(input.env(WEB_DATA_DIR_ENV))
  if (fromEnv !== undefined) return { path: NodePath.resolve(input.cwd, fromEnv), source: "env" }
  return { path: NodePath.join(input.home, ".pi", "web", "data"), source: "default" }
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
