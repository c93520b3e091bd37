/**
 * The web data root a read of the whole picture looks at (the doctor, the dashboard): the one configured
 * (an explicit option or flag, else `$PI_WEB_DATA_DIR`), else the web host's default root when it exists;
 * `undefined` when there is none to look at. Node edge: it asks the disk whether the default exists.
 */
import * as NodeFs from "node:fs"
import { configuredWebDataRoot, defaultWebDataRoot } from "../../domain/WebPaths.js"

export const webDataRootFor = (flag: string | undefined, env: (name: string) => string | undefined, home: string, cwd: string): string | undefined => {
  const configured = configuredWebDataRoot({ explicit: flag, env, cwd })
  if (configured !== undefined) return configured
  const fallback = defaultWebDataRoot(home)
  return NodeFs.existsSync(fallback) ? fallback : undefined
}
