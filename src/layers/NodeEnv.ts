/**
 * The process environment, the Host port's `env` (NodeHost.ts) and the one place the library reads
 * `process.env` (the storage tunables are read through Effect's `Config` instead, `StorageConfig.layerFromEnv`).
 * Alone, importing nothing, so the Node edges that need a variable before any layer exists (the Promise
 * facade's `extensionContext`, its shared-store key, the CLI's `NO_COLOR`, `doctor --web-data-root` default and
 * its clean-scan check, cli/configFast.ts, which loads no effect) read it here; only the CLI's `work run` also
 * hands the whole environment to the child it starts.
 */
export const nodeEnv = (name: string): string | undefined => process.env[name]

/** The names set in the environment (the CLI's clean-scan check leaves any `PI_STORAGE_*` setting to the program). */
export const nodeEnvNames = (): ReadonlyArray<string> => Object.keys(process.env)
