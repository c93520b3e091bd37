/**
 * `npm run build`, after tsc: the self-contained esbuild bundles (docs/install.md "Installing"). Node loading hundreds of
 * separate ESM files of `effect` cost a Promise caller 0.4–0.6 s at import and every CLI call 0.6–1 s;
 * one minified file each costs a fraction. Everything reachable from the two entry points is bundled
 * (effect, yaml, the CLI stack), so a new service or command needs no entry here; only Node's built-ins
 * stay outside. The Effect API ("." → dist/index.js) is not bundled: it stays plain tsc ESM, so an Effect
 * caller's own copy of effect is the one used.
 *
 *   dist/bundle/promise.mjs  `import "pi-agent-storage/promise"`; split (ESM chunks under chunks/) so
 *                            what it imports lazily (the store stack, the tier runtime) is only read
 *                            on the first `openAgentStorage` / `openTiers`
 *   dist/bundle/promise.cjs  `require("pi-agent-storage/promise")` (one file; the same modules are
 *                            evaluated lazily)
 *   dist/bundle/cli/main.mjs the `pi-storage` bin (src/cli/bin.ts, a few KiB: argv, `--version`), which
 *                            loads the rest from
 *   dist/bundle/cli/configFast.mjs `config snapshot`'s clean-scan answer (src/cli/configFast.ts, no effect), read
 *                            by main.mjs only for that command, before the program (docs/config-history.md)
 *   dist/bundle/cli/program.cjs + program.cjs.v8cache  the program and its V8 code cache
 *                            (src/cli/codeCache.ts: Node 20 can cache CommonJS compiled by vm.Script,
 *                            not ES modules)
 *   dist/bundle/cli/ui.cjs   `pi-storage ui`'s server (src/cli/uiServer.ts, the dashboard library and its
 *                            @effect/platform HTTP API), required by the program only for that command,
 *                            so no other command reads it (docs/dashboard.md "Dashboard")
 *   dist/dashboard/assets/   the dashboard's page: app.js (web/, d3-hierarchy, uPlot) and app.css, for the
 *                            browser; shipped, served by the dashboard, never fetched from elsewhere
 *
 * Files loaded by path at run time (the native addon, the remover thread) are found from the package root
 * (src/layers/node/packageRoot.ts), so they load from a bundle as from dist/. No source maps (they would
 * point at src/, which the package does not ship, and Node reads them only under --enable-source-maps):
 * lines are kept short instead (`lineLimit`), so the line a stack trace prints is readable.
 */
import * as esbuild from "esbuild"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const outdir = path.join(root, "dist", "bundle")

const common = {
  bundle: true,
  platform: "node",
  target: "node20.19",
  minify: true,
  // Minified, but no line longer than this: a stack trace prints the line it points at, and one 600 KiB line
  // printed 16 KB of code for an uncaught rejection. Short lines cost a few KiB and no start-up time.
  lineLimit: 160,
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
 * CLI's command tree) is its own chunk, read only when that import runs (docs/install.md "Installing").
 */
const split = { splitting: true, chunkNames: "chunks/[name]-[hash]", outExtension: { ".js": ".mjs" } }

/** CommonJS has no `import.meta`: our modules' `import.meta.url` becomes this file's URL. */
const cjs = {
  ...common,
  format: "cjs",
  define: { "import.meta.url": "__piImportMetaUrl" },
  banner: { js: "const __piImportMetaUrl=require(\"node:url\").pathToFileURL(__filename).href;" }
}

/**
 * In the CLI program, `await import("node:fs")` (a lazily loaded built-in) becomes a `require`: Node 20
 * cannot run an `import()` in a script compiled from a code cache (src/cli/codeCache.ts).
 */
const builtinImportsAsRequire = {
  name: "builtin-imports-as-require",
  setup(build) {
    build.onResolve({ filter: /^node:/ }, (args) => (args.kind === "dynamic-import" ? { path: args.path, namespace: "builtin" } : undefined))
    build.onLoad({ filter: /.*/, namespace: "builtin" }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)})`, loader: "js" }))
  }
}

/**
 * In the CLI program, the `ui` command's server (src/cli/uiServer.ts) is not bundled: its import becomes a
 * `require` of `ui.cjs` beside the program, a bundle of its own (docs/dashboard.md "Dashboard": only `pi-storage ui` reads it).
 */
const uiServerAsOwnBundle = {
  name: "ui-server-as-own-bundle",
  setup(build) {
    build.onResolve({ filter: /\/uiServer\.js$/ }, (args) => (args.kind === "dynamic-import" ? { path: "ui.cjs", namespace: "ui-bundle" } : undefined))
    build.onLoad({ filter: /.*/, namespace: "ui-bundle" }, () => ({
      contents: `module.exports = require(require("node:path").join(__dirname, "ui.cjs"))`,
      loader: "js"
    }))
  }
}

/** The dashboard's page, for browsers: one script (ES2020, minified) and one stylesheet, nothing remote. */
const page = {
  bundle: true,
  platform: "browser",
  target: "es2020",
  minify: true,
  lineLimit: 160,
  legalComments: "none",
  logLevel: "warning",
  absWorkingDir: root
}
const assetsDir = path.join(root, "dist", "dashboard", "assets")

/**
 * The CLI program's V8 code cache (src/cli/codeCache.ts): compiled and run once here, as `pi-storage
 * status` on a small temp agent dir, so the functions a command runs are in it too, then saved when that
 * process exits. Made with this Node: another one refuses it and compiles from source.
 */
const writeCodeCache = async (bundle) => {
  const temp = fs.mkdtempSync(path.join(os.tmpdir(), "pi-storage-codecache-"))
  try {
    // Owned runs, more than one batch of the views' read (64), released and with an empty lease directory, and
    // a directory the library does not own: the functions a view runs per run are compiled into the cache too,
    // not compiled again on every command's main thread.
    const tenant = path.join(temp, "agent", "work", "tools", "build")
    fs.mkdirSync(path.join(tenant, "left-behind"), { recursive: true })
    fs.writeFileSync(path.join(tenant, "left-behind", "out.txt"), "x")
    const createdAt = Date.now() - 2 * 24 * 60 * 60 * 1000
    for (let i = 0; i < 80; i++) {
      const runId = `run-${String(i).padStart(4, "0")}`
      fs.mkdirSync(path.join(tenant, runId, ".leases"), { recursive: true })
      const manifest = { version: 2, category: "tools", tenant: "build", runId, kind: "generated", createdAt: createdAt + i, createdBy: { host: "elsewhere", pid: 1 }, releasedAt: createdAt + i + 1000 }
      fs.writeFileSync(runManifestPath(path.join(tenant, runId)), encodeManifest(manifest))
      fs.writeFileSync(path.join(tenant, runId, "out.txt"), "x")
    }
    const script = `
import * as fs from "node:fs"
import { codeCachePath, compileCommonJs, encodeCodeCache, runCommonJs } from ${JSON.stringify(codeCacheModule)}
const bundle = ${JSON.stringify(bundle)}
const compiled = compileCommonJs(bundle, undefined)
process.once("exit", () => {
  const target = codeCachePath(bundle)
  fs.writeFileSync(target + ".tmp", encodeCodeCache(fs.readFileSync(bundle), compiled.script.createCachedData()))
  fs.renameSync(target + ".tmp", target)
})
await runCommonJs(bundle, compiled).runProgram({ globals: { agentDir: ${JSON.stringify(path.join(temp, "agent"))}, noColor: true }, args: ["status"], command: undefined })
`
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: temp, stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" })
    if (!fs.existsSync(codeCachePath(bundle))) throw new Error(`no code cache for ${bundle} (exit ${r.status}): ${r.stderr}`)
  } finally {
    fs.rmSync(temp, { recursive: true, force: true })
  }
}
/** tsc has just built it: the same loader the bin uses makes the cache. */
const codeCacheModule = pathToFileURL(path.join(root, "dist", "cli", "codeCache.js")).href
const { codeCachePath } = await import(codeCacheModule)
/** The library's own manifest format and run layout, for the runs the cache is made on. */
const { encodeManifest } = await import(pathToFileURL(path.join(root, "dist", "domain", "Formats.js")).href)
const { runManifestPath } = await import(pathToFileURL(path.join(root, "dist", "domain", "AgentPaths.js")).href)

fs.rmSync(outdir, { recursive: true, force: true })
fs.rmSync(assetsDir, { recursive: true, force: true })
const started = performance.now()
await Promise.all([
  esbuild.build({ ...esm, ...split, entryPoints: { promise: "src/promise.ts" }, outdir }),
  esbuild.build({ ...cjs, entryPoints: ["src/promise.ts"], outfile: path.join(outdir, "promise.cjs") }),
  esbuild.build({ ...esm, entryPoints: ["src/cli/bin.ts"], outfile: path.join(outdir, "cli", "main.mjs") }),
  esbuild.build({ ...esm, entryPoints: ["src/cli/configFast.ts"], outfile: path.join(outdir, "cli", "configFast.mjs") }),
  esbuild.build({ ...cjs, plugins: [builtinImportsAsRequire, uiServerAsOwnBundle], entryPoints: ["src/cli/program.ts"], outfile: path.join(outdir, "cli", "program.cjs") }),
  esbuild.build({ ...cjs, plugins: [builtinImportsAsRequire], entryPoints: ["src/cli/uiServer.ts"], outfile: path.join(outdir, "cli", "ui.cjs") }),
  esbuild.build({ ...page, format: "iife", entryPoints: ["web/main.ts"], outfile: path.join(assetsDir, "app.js") }),
  esbuild.build({ ...page, entryPoints: ["web/styles.css"], outfile: path.join(assetsDir, "app.css") })
])
if (/\bimport\(/.test(fs.readFileSync(path.join(outdir, "cli", "program.cjs"), "utf8"))) {
  throw new Error("dist/bundle/cli/program.cjs holds an import(): a script compiled from a code cache cannot run it on Node 20")
}
// V8 keeps a script's source as its program text; one character past Latin-1 (an arrow in a template
// literal, which esbuild leaves as written) makes the whole text two bytes a character: 1 MiB more in every
// process that loads it.
for (const f of fs.readdirSync(outdir, { recursive: true }).filter((f) => /\.(mjs|cjs)$/.test(f))) {
  const at = fs.readFileSync(path.join(outdir, f), "latin1").search(/[^\x00-\x7f]/)
  if (at !== -1) throw new Error(`dist/bundle/${f} holds a character past ASCII at offset ${at}: write it as an escape (\\u2192) in the source`)
}
await writeCodeCache(path.join(outdir, "cli", "program.cjs"))
fs.chmodSync(path.join(outdir, "cli", "main.mjs"), 0o755)
const sizes = [
  ...fs.readdirSync(outdir, { recursive: true }).filter((f) => /\.(mjs|cjs|v8cache)$/.test(f)).map((f) => path.join(outdir, f)),
  ...fs.readdirSync(assetsDir).map((f) => path.join(assetsDir, f))
].map((f) => `${path.relative(path.join(root, "dist"), f)} ${Math.round(fs.statSync(f).size / 1024)} KiB`)
process.stderr.write(`bundles (${Math.round(performance.now() - started)} ms): ${sizes.join(", ")}\n`)
