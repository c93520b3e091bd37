/**
 * Web-host extension data root and tier paths (SPEC TD1, TD2 path parts). Pure.
 */
import * as NodePath from "node:path"

export const WEB_DATA_DIR_ENV = "PI_WEB_DATA_DIR"

export type WebInstance = "prod" | "dev"

/** TD1: `$PI_WEB_DATA_DIR` when set, else `~/.pi/web/data`; a dev instance isolates under `~/.pi/web-dev/data`. */
export const resolveWebDataRoot = (input: {
  readonly explicit?: string | undefined
  readonly instance?: WebInstance | undefined
  readonly env: (name: string) => string | undefined
  readonly home: string
  readonly cwd: string
}): string => {
  if (input.explicit !== undefined && input.explicit !== "") return NodePath.resolve(input.cwd, input.explicit)
  if (input.instance === "dev") return NodePath.join(input.home, ".pi", "web-dev", "data")
  const fromEnv = input.env(WEB_DATA_DIR_ENV)
  if (fromEnv !== undefined && fromEnv !== "") return NodePath.resolve(input.cwd, fromEnv)
  return NodePath.join(input.home, ".pi", "web", "data")
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
