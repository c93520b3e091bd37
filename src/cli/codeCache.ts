/**
 * Loading a CommonJS bundle with a V8 code cache (docs/install.md "Installing"). Compiling the CLI's ~800 KiB program cost
 * `pi-storage status` more than a third of its start-up; with the bytecode V8 saved from an earlier run
 * (`<bundle>.v8cache`, written by `npm run build`, scripts/bundle.mjs) it deserializes instead. Node 20
 * has no compile cache for ES modules (`module.enableCompileCache` is Node 22), hence CommonJS and
 * `vm.Script`. The cache file starts with the SHA-256 of the source it was made from: V8's own check compares
 * the source's length, not its bytes, so a same-length edit of the bundle would otherwise run stale bytecode.
 * A cache for other bytes, or one V8 refuses (another Node or V8 version, other flags), is not used: the
 * source compiles as it would without one (only slower, so nothing is said). Reads only at run time.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import * as v8 from "node:v8"
import * as vm from "node:vm"

/** Where the cache of `bundle` lives. */
export const codeCachePath = (bundle: string): string => `${bundle}.v8cache`

/** The function wrapper Node puts around a CommonJS module, so the cache matches what Node itself would compile. */
const wrap = (source: string) => `(function (exports, require, module, __filename, __dirname) { ${source}\n});`

export interface Compiled {
  readonly script: vm.Script
  /** True when a cache was found and not used (made from other bytes, or refused by V8). */
  readonly cacheRejected: boolean
  readonly cacheUsed: boolean
}

const DIGEST_BYTES = 32
const digestOf = (source: Buffer): Buffer => createHash("sha256").update(source).digest()

/** The cache file for `source`: its SHA-256, then V8's data. */
export const encodeCodeCache = (source: Buffer, data: Buffer): Buffer => Buffer.concat([digestOf(source), data])

/**
 * The CLI's young generation stays at its first size: a view makes tens of thousands of short-lived objects a
 * run, and V8 growing the young generation for them (up to 3 × 16 MiB) was a fifth of a view's peak RSS
 * (BENCHMARKS.md "Views"). It holds for every command of the process (a prune, `ui`'s server too: more
 * frequent scavenges, a few percent of a view's time). Set before the program compiles, here, where the cache
 * is made too: V8 refuses a code cache made under other flags. Only on Node 20, whose V8 has the flag for
 * sure: a V8 without it would print an error on every run.
 *
 * And its functions are optimised later (an interrupt budget of 264 KiB of bytecode, four times V8's
 * default): a command lives a second or two, and V8's optimising compiler, on the core the reads and the main
 * thread share, spent more on the functions it picked early than they gave back. A view at 20,000 runs
 * takes 10–17 % less CPU, its wall time the same or a little less (BENCHMARKS.md "Views: later optimisation, larger batches").
 */
export const CLI_V8_FLAGS = process.versions.node.split(".")[0] === "20" ? "--semi-space-growth-factor=1 --interrupt-budget=270336" : ""

/** Compile `bundle`, with the V8 data of `cache` when the cache was made from exactly these bytes. */
export const compileCommonJs = (bundle: string, cache: Buffer | undefined): Compiled => {
  if (CLI_V8_FLAGS !== "") v8.setFlagsFromString(CLI_V8_FLAGS)
  const source = fs.readFileSync(bundle)
  const cachedData = cache !== undefined && cache.length > DIGEST_BYTES && cache.subarray(0, DIGEST_BYTES).equals(digestOf(source))
    ? cache.subarray(DIGEST_BYTES)
    : undefined
  const script = new vm.Script(wrap(source.toString("utf8")), {
    // No `importModuleDynamically`: Node 20 drops it for a script compiled from a cache, so the bundle
    // must hold no `import()` (scripts/bundle.mjs turns those of Node built-ins into `require` and checks).
    filename: bundle,
    ...(cachedData === undefined ? {} : { cachedData })
  })
  const cacheRejected = cache !== undefined && (cachedData === undefined || script.cachedDataRejected === true)
  return { script, cacheRejected, cacheUsed: cache !== undefined && !cacheRejected }
}

/** Run a compiled bundle as a CommonJS module; its `module.exports`. */
export const runCommonJs = (bundle: string, compiled: Compiled): unknown => {
  const module = { exports: {} as unknown }
  const fn = compiled.script.runInThisContext() as (e: unknown, r: NodeRequire, m: { exports: unknown }, f: string, d: string) => void
  fn(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle))
  return module.exports
}

const readCache = (bundle: string): Buffer | undefined => {
  try {
    return fs.readFileSync(codeCachePath(bundle))
  } catch {
    // No cache (never built, or removed): compile from source, as Node would.
    return undefined
  }
}

/** `require(bundle)`, through its code cache when V8 accepts it. */
export const requireWithCodeCache = (bundle: string): unknown => runCommonJs(bundle, compileCommonJs(bundle, readCache(bundle)))
