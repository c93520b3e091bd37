/**
 * `npm run build`, between tsc and the bundles: remove what tsc emitted for a source file that no longer
 * exists. tsc's incremental build never deletes its old outputs, and `npm pack` ships `dist/`, so a module
 * removed from src/ would otherwise still be shipped (and importable) from an old checkout's build.
 * Only tsc's outputs (`.js`, `.d.ts`) outside `dist/bundle/` (rebuilt whole by bundle.mjs) are considered.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

// The package root; a test passes another one.
const root = process.argv[2] ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const dist = path.join(root, "dist")
const src = path.join(root, "src")

const sourceOf = (rel) => {
  const stem = rel.endsWith(".d.ts") ? rel.slice(0, -".d.ts".length) : rel.endsWith(".js") ? rel.slice(0, -".js".length) : undefined
  return stem === undefined ? undefined : path.join(src, `${stem}.ts`)
}

// Only `.ts` sources are mapped: another kind in src/ (.tsx, .mts, a .js under allowJs) would have its
// outputs taken for stale, so the build stops instead until this script learns it.
const unknownSources = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? unknownSources(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [] : [path.join(dir, e.name)]
  )
const unknown = fs.existsSync(src) ? unknownSources(src) : []
if (unknown.length > 0) {
  process.stderr.write(`pruneDist: sources of a kind it does not map (${unknown.join(", ")}): nothing removed\n`)
  process.exit(1)
}

const removed = []
const visit = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    const rel = path.relative(dist, full)
    if (entry.isDirectory()) {
      if (rel !== "bundle") visit(full)
      continue
    }
    const source = sourceOf(rel)
    if (source !== undefined && !fs.existsSync(source)) {
      fs.rmSync(full)
      removed.push(rel)
    }
  }
}
if (fs.existsSync(dist)) visit(dist)
if (removed.length > 0) process.stdout.write(`dist: removed ${removed.length} output(s) of deleted sources: ${removed.join(", ")}\n`)
