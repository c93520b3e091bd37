/**
 * `npm run build`, after tsc: the self-contained esbuild bundles (issue 18). Node loading hundreds of
 * separate ESM files of `effect` cost a Promise caller 0.4–0.6 s at import and every CLI call 0.6–1 s;
 * one minified file each costs a fraction. Everything reachable from the two entry points is bundled
 * (effect, yaml, the CLI stack), so a new service or command needs no entry here; only Node's built-ins
 * stay outside. The Effect API ("." → dist/index.js) is not bundled: it stays plain tsc ESM, so an Effect
 * caller's own copy of effect is the one used.
 *
 *   dist/bundle/promise.mjs  `import "pi-agent-storage/promise"`
 *   dist/bundle/promise.cjs  `require("pi-agent-storage/promise")`
 *   dist/bundle/cli/main.mjs the `pi-storage` bin; split (ESM chunks under cli/chunks/) so what main.ts
 *                            imports lazily (the command tree) is only read when a command needs it
 *
 * Files loaded by path at run time (the native addon, the remover thread) are found from the package root
 * (src/layers/node/packageRoot.ts), so they load from a bundle as from dist/. No source maps: they would
 * point at src/, which the package does not ship.
 */
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const outdir = path.join(root, "dist", "bundle")

const common = {
  bundle: true,
  platform: "node",
  target: "node20.19",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
  absWorkingDir: root
}

/** ESM bundles: bundled CommonJS dependencies (yaml) may `require` Node built-ins, so give them one. */
const esm = {
  ...common,
  format: "esm",
  banner: { js: "import{createRequire as __piRequire}from\"node:module\";const require=__piRequire(import.meta.url);" }
}

/**
 * ESM bundles split at each dynamic `import()`: what an entry imports lazily (the facade's store stack, the
 * CLI's command tree) is its own chunk, read only when that import runs (issue 18).
 */
const split = { splitting: true, chunkNames: "chunks/[name]-[hash]", outExtension: { ".js": ".mjs" } }

/** CommonJS has no `import.meta`: our modules' `import.meta.url` becomes this file's URL. */
const cjs = {
  ...common,
  format: "cjs",
  define: { "import.meta.url": "__piImportMetaUrl" },
  banner: { js: "const __piImportMetaUrl=require(\"node:url\").pathToFileURL(__filename).href;" }
}

fs.rmSync(outdir, { recursive: true, force: true })
const started = performance.now()
await Promise.all([
  esbuild.build({ ...esm, ...split, entryPoints: { promise: "src/promise.ts" }, outdir }),
  esbuild.build({ ...cjs, entryPoints: ["src/promise.ts"], outfile: path.join(outdir, "promise.cjs") }),
  esbuild.build({ ...esm, ...split, entryPoints: { main: "src/cli/main.ts" }, outdir: path.join(outdir, "cli") })
])
fs.chmodSync(path.join(outdir, "cli", "main.mjs"), 0o755)
const sizes = fs.readdirSync(outdir, { recursive: true })
  .filter((f) => /\.(mjs|cjs)$/.test(f))
  .map((f) => `${f} ${Math.round(fs.statSync(path.join(outdir, f)).size / 1024)} KiB`)
process.stderr.write(`bundles (${Math.round(performance.now() - started)} ms): ${sizes.join(", ")}\n`)
