/**
 * The package's own root directory, wherever this code runs from: `src/` (tests, tsx), `dist/` (the plain
 * ESM Effect API), or one of the esbuild bundles (`dist/bundle/*.mjs|cjs`, docs/install.md "Installing"). Files the package
 * loads by path at run time (the native addon, the remover thread) are resolved from here, never relative
 * to the importing module, whose depth differs between those three.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The nearest directory at or above `from` holding a `package.json` (our own: src/ and dist/ hold none). */
export const findPackageRoot = (from: string): string | undefined => {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return dir
    if (path.dirname(dir) === dir) return undefined
  }
}

let cached: string | undefined

/** The package root; looked up once, on first use (a few `existsSync` calls). */
export const packageRoot = (): string => {
  if (cached !== undefined) return cached
  const here = path.dirname(fileURLToPath(import.meta.url))
  const found = findPackageRoot(here)
  if (found === undefined) throw new Error(`pi-agent-storage: no package.json above ${here}`)
  return (cached = found)
}

/** A file of the package, by its path from the package root. */
export const packageFile = (...segments: ReadonlyArray<string>): string => path.join(packageRoot(), ...segments)
