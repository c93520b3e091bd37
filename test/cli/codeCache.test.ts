/**
 * The CLI program's V8 code cache (docs/install.md "Installing", src/cli/codeCache.ts) over the built bundle: the cache
 * `npm run build` wrote is accepted by the Node that built it, and one V8 refuses (made for another
 * source) is ignored: the program compiles from source and runs the same. Compiling sets the CLI's V8 flags
 * (`CLI_V8_FLAGS`): a young generation that does not grow.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { CLI_V8_FLAGS, codeCachePath, compileCommonJs, encodeCodeCache, runCommonJs } from "../../src/cli/codeCache.js"

const PROGRAM = fileURLToPath(new URL("../../dist/bundle/cli/program.cjs", import.meta.url))

/**
 * The start of a child process's module: with `flags`, the loader compiles an empty bundle first, which sets
 * the CLI's V8 flags as `pi-storage` does before its program compiles (V8 flags are per process).
 */
const loaderFlags = (flags: boolean) => `
      import * as fs from "node:fs"
      import * as os from "node:os"
      import * as path from "node:path"
      if (${flags}) {
        const { compileCommonJs } = await import(${JSON.stringify(new URL("../../dist/cli/codeCache.js", import.meta.url).href)})
        const empty = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "pi-storage-v8flags-")), "empty.cjs")
        fs.writeFileSync(empty, "")
        compileCommonJs(empty, undefined)
        fs.rmSync(path.dirname(empty), { recursive: true })
      }`

describe("cli code cache (built bundle)", () => {
  it("the shipped cache is accepted; a foreign one is refused and the program still loads", () => {
    if (!Fs.existsSync(codeCachePath(PROGRAM))) throw new Error("dist/bundle is missing: `npm run build` first (npm test does)")
    const cached = compileCommonJs(PROGRAM, Fs.readFileSync(codeCachePath(PROGRAM)))
    assert.deepStrictEqual([cached.cacheUsed, cached.cacheRejected], [true, false])
    assert.strictEqual(typeof (runCommonJs(PROGRAM, cached) as { runProgram?: unknown }).runProgram, "function")

    // A cache V8 made for other source: refused, and the bundle compiles from its source.
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-codecache-"))
    try {
      const other = Path.join(dir, "other.cjs")
      Fs.writeFileSync(other, "module.exports = { answer: 42 }\n")
      const foreign = encodeCodeCache(Fs.readFileSync(other), compileCommonJs(other, undefined).script.createCachedData())
      const refused = compileCommonJs(PROGRAM, foreign)
      assert.deepStrictEqual([refused.cacheUsed, refused.cacheRejected], [false, true])
      assert.strictEqual(typeof (runCommonJs(PROGRAM, refused) as { runProgram?: unknown }).runProgram, "function")
      // The same length, other bytes (V8 compares only the length): the cache is not used.
      const shipped = Fs.readFileSync(codeCachePath(PROGRAM))
      const edited = Path.join(dir, "program.cjs")
      const source = Fs.readFileSync(PROGRAM)
      const at = source.indexOf("runProgram")
      Fs.writeFileSync(edited, Buffer.concat([source.subarray(0, at), Buffer.from("runProgrxm"), source.subarray(at + 10)]))
      const stale = compileCommonJs(edited, shipped)
      assert.deepStrictEqual([stale.cacheUsed, stale.cacheRejected], [false, true])
      // A bare V8 cache with no digest in front (an older build's file) is not used either.
      const bare = compileCommonJs(PROGRAM, shipped.subarray(32))
      assert.deepStrictEqual([bare.cacheUsed, bare.cacheRejected], [false, true])
      const none = compileCommonJs(other, undefined)
      assert.deepStrictEqual([none.cacheUsed, none.cacheRejected], [false, false])
      assert.deepStrictEqual(runCommonJs(other, none), { answer: 42 })
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a process that compiled the program keeps its young generation at its first size", () => {
    // In a child process of its own (V8 flags are per process): the young generation's size after a churn of
    // short-lived objects with some survivors, with the loader's flags and without them.
    const script = (flags: boolean) => `
      import * as v8 from "node:v8"
      ${loaderFlags(flags)}
      const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size
      let keep = []
      for (let i = 0; i < 400000; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 50000) keep = [] }
      process.stdout.write(String(young()))
    `
    const youngAfter = (flags: boolean) => {
      // The same ceiling whatever the machine's memory (V8 sizes its default from it).
      const r = spawnSync(process.execPath, ["--max-semi-space-size=16", "--input-type=module", "-e", script(flags)], { encoding: "utf8" })
      assert.strictEqual(r.status, 0, r.stderr)
      return Number(r.stdout)
    }
    const MiB = 1024 * 1024
    // (Only Node 20's V8 is given the flag: elsewhere the loader leaves the young generation to grow.)
    if (CLI_V8_FLAGS === "") assert.isAbove(youngAfter(true), 8 * MiB)
    else assert.isAtMost(youngAfter(true), 4 * MiB)
    assert.isAbove(youngAfter(false), 8 * MiB)
  })

  it("a process that compiled the program optimises a hot function later, and its V8 knows every flag given", () => {
    // In a child process of its own: the call at which V8 first marks a small hot function for its optimising
    // compiler (anything past the interpreter and the baseline compiler in %GetOptimizationStatus), with the
    // loader's flags and without them. The interrupt budget counts bytecode run, so the call is the same each time.
    const script = (flags: boolean) => `
      ${loaderFlags(flags)}
      function hot(x) { let s = 0; for (let i = 0; i < 20; i++) s += i * x; return s }
      const EARLY_TIERS = (1 << 0) | (1 << 7) | (1 << 15) // a function, interpreted, baseline code
      let n = 0
      for (; n < 100000; n++) {
        hot(n)
        if ((%GetOptimizationStatus(hot) & ~EARLY_TIERS) !== 0) break
      }
      process.stdout.write(String(n))
    `
    const markedAt = (flags: boolean) => {
      const r = spawnSync(process.execPath, ["--allow-natives-syntax", "--input-type=module", "-e", script(flags)], { encoding: "utf8" })
      assert.strictEqual(r.status, 0, r.stderr)
      // An unknown flag is not fatal: V8 prints an error and goes on. None may be printed.
      assert.strictEqual(r.stderr, "")
      return Number(r.stdout)
    }
    const without = markedAt(false)
    assert.isAbove(without, 10)
    assert.isBelow(without, 100000)
    if (CLI_V8_FLAGS === "") assert.strictEqual(markedAt(true), without)
    else assert.isAtLeast(markedAt(true), 3 * without)
  })
})
