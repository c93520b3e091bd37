/**
 * The native measure (fsat.c `measureTree`: small trees on the calling thread, big ones on the thread pool)
 * beyond the shared conformance suite, which runs its calling-thread pass for every budget, link and
 * mount-point rule (its trees are small): both passes give the portable walk's answers on random real trees
 * and budgets, a tree too big or too slow for the calling thread moves to the thread pool, errors come back
 * typed from both, a chain of any depth needs no more than a window of descriptors, no descriptor outlives a
 * measure (also one failing mid-walk), and the event loop keeps turning while a big tree is measured. (A directory swapped for a link while the walk runs:
 * walkerRace.test.ts.)
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import { type Fsat, loadFsat } from "../../../src/layers/node/fsat.js"
import { WALK_WINDOW } from "../../../src/domain/WalkDepth.js"
import { makeNativeMeasure, SYNC_ENTRIES } from "../../../src/layers/node/nativeMeasure.js"
import { pathWalker } from "../../../src/layers/node/pathWalk.js"
import { nativeMeasureOrPortable } from "../../../src/layers/node/walkers.js"
import { capturing, warningsOf } from "../../support/logs.js"
import { runWalk } from "../../../src/layers/node/support.js"
import { openDescriptorsUnder } from "../../support/descriptors.js"
import { du } from "../../support/du.js"

const loaded = loadFsat()
const fsat = (): Fsat => {
  if (!("fsat" in loaded)) throw new Error(`native walker ${loaded.why}`)
  return loaded.fsat
}
const measureWith = (syncEntries?: number, native: Fsat = fsat(), syncMs?: number) => {
  const measure = makeNativeMeasure(native, syncEntries, syncMs)
  if (measure === undefined) throw new Error("the addon has no measureTree (a stale build/: npm run install)")
  return measure
}

/** The real addon, counting the measures it is asked to queue on the thread pool. */
const countingPool = () => {
  const real = fsat()
  const counted = { pool: 0 }
  const native: Fsat = { ...real, measureTree: (...args) => (counted.pool++, real.measureTree!(...args)) }
  return { native, counted }
}

/** The real addon whose calling-thread pass always says "too big": every measure goes to the thread pool. */
const poolOnly = (): Fsat => ({ ...fsat(), measureTreeSync: () => 1 })

const WIDE = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }
/** Descriptors a walk holds only once it is inside a chain: a whole window of them (domain/WalkDepth.ts). */
const INSIDE_CHAIN = WALK_WINDOW
const scratch = () => fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-native-measure-"))
/** `depth` nested directories under `root`/chain, a file at the bottom. */
const plantChain = (root: string, depth: number) => {
  const deepest = `${root}/chain/${Array.from({ length: depth }, (_, i) => `c${i}`).join("/")}`
  fs.mkdirSync(deepest, { recursive: true })
  fs.writeFileSync(`${deepest}/leaf`, "leaf")
  return deepest
}

const plantTree = (root: string, dirs: number, files: number) => {
  for (let d = 0; d < dirs; d++) {
    fs.mkdirSync(`${root}/d${d}`, { recursive: true })
    for (let f = 0; f < files; f++) fs.writeFileSync(`${root}/d${d}/f${f}`, "x".repeat(f))
  }
}

/** What a measure says of entries, files and completeness (its sizes: the conformance suite's and duSizes.test.ts's cases). */
const shape = (m: { readonly fileBytes: number; readonly entries: number; readonly complete: boolean }) => ({ fileBytes: m.fileBytes, entries: m.entries, complete: m.complete })

/**
 * A random tree: nested directories, files of random sizes, links (to a directory outside, and dangling), empty
 * dirs, hard links to one file outside (counted once per walk however many the tree holds).
 */
type Node =
  | { readonly kind: "file"; readonly size: number }
  | { readonly kind: "link" }
  | { readonly kind: "hardLink" }
  | { readonly kind: "dir"; readonly children: ReadonlyArray<Node> }
const node: FastCheck.Arbitrary<Node> = FastCheck.letrec<{ node: Node }>((tie) => ({
  node: FastCheck.oneof(
    { depthSize: "small", withCrossShrink: true },
    FastCheck.record({ kind: FastCheck.constant("file" as const), size: FastCheck.nat(300) }),
    FastCheck.record({ kind: FastCheck.constant("link" as const) }),
    FastCheck.record({ kind: FastCheck.constant("hardLink" as const) }),
    FastCheck.record({ kind: FastCheck.constant("dir" as const), children: FastCheck.array(tie("node"), { maxLength: 6 }) })
  )
})).node

const build = (path: string, n: Node, outside: string) => {
  if (n.kind === "file") fs.writeFileSync(path, "y".repeat(n.size))
  else if (n.kind === "link") fs.symlinkSync(outside, path)
  else if (n.kind === "hardLink") fs.linkSync(`${outside}/big`, path)
  else {
    fs.mkdirSync(path)
    n.children.forEach((child, i) => build(`${path}/n${i}`, child, outside))
  }
}

describe("native measure (fsat measureTree)", () => {
  it.effect("on the calling thread and on the thread pool, the portable walk's answers for random trees and budgets", () =>
    Effect.gen(function*() {
      const root = scratch()
      fs.mkdirSync(`${root}/outside`)
      fs.writeFileSync(`${root}/outside/big`, "z".repeat(10_000))
      const onThread = measureWith()
      const onPool = measureWith(1) // every tree of more than one entry goes to the thread pool
      let round = 0
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(node, { maxLength: 8 }),
            FastCheck.nat(60),
            FastCheck.integer({ min: 0, max: 6 }),
            async (children, maxEntries, maxDepth) => {
              const tree = `${root}/t${round++}`
              build(tree, { kind: "dir", children }, `${root}/outside`)
              const run = (measure: typeof onThread, budget: { maxEntries: number; maxDepth: number }) => Effect.runPromise(measure(tree, budget))
              // The depth budget cuts the same entries whatever the order: the portable walk's answer exactly.
              const depthOnly = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth }
              const portable = await Effect.runPromise(runWalk("measureTree", tree, () => pathWalker.startMeasure(tree, depthOnly)))
              assert.deepStrictEqual(await run(onThread, depthOnly), portable)
              assert.deepStrictEqual(await run(onPool, depthOnly), portable)
              // The entry budget takes the first entries in readdir order (the portable walk sorts by name):
              // as many as it allows, incomplete exactly when it cut something; both threads alike.
              const budget = { maxEntries, maxDepth }
              const cut = await run(onThread, budget)
              assert.deepStrictEqual(await run(onPool, budget), cut)
              assert.strictEqual(cut.entries, Math.min(maxEntries, portable.entries))
              assert.strictEqual(cut.complete, portable.complete && portable.entries <= maxEntries)
              if (cut.complete) assert.strictEqual(cut.bytes, portable.bytes)
              else assert.isAtMost(cut.bytes, portable.bytes)
              fs.rmSync(tree, { recursive: true })
            }
          ),
          { numRuns: 60 }
        )
      )
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("a tree too big or too slow for the calling thread is measured whole on the thread pool", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/big`, 30, 40) // 1,230 entries > SYNC_ENTRIES
      assert.isAbove(30 * 41, SYNC_ENTRIES)
      const bytes = 30 * (39 * 40) / 2
      const { native, counted } = countingPool()
      // No time limit here (a loaded machine could pass 2 ms): the entry and listing limits decide alone.
      const measure = measureWith(undefined, native, 60_000)
      assert.deepStrictEqual(shape(yield* measure(`${root}/big`, WIDE)), { fileBytes: bytes, entries: 30 * 41, complete: true })
      assert.strictEqual(counted.pool, 1)
      // A budget below the share stops on the calling thread; one above it goes to the thread pool.
      assert.deepStrictEqual((yield* measure(`${root}/big`, { maxEntries: 500, maxDepth: 64 })).entries, 500)
      assert.strictEqual(counted.pool, 1)
      assert.deepStrictEqual((yield* measure(`${root}/big`, { maxEntries: 1200, maxDepth: 64 })).entries, 1200)
      assert.strictEqual(counted.pool, 2)
      // One directory of more names than the share: not even listed whole on the calling thread.
      fs.mkdirSync(`${root}/wide`)
      for (let f = 0; f <= SYNC_ENTRIES; f++) fs.writeFileSync(`${root}/wide/f${f}`, "")
      assert.deepStrictEqual(shape(yield* measure(`${root}/wide`, WIDE)), { fileBytes: 0, entries: SYNC_ENTRIES + 1, complete: true })
      assert.strictEqual(counted.pool, 3)
      // Even under a budget the calling thread could meet (5 entries): the listing alone sends it to the pool.
      assert.deepStrictEqual(shape(yield* measure(`${root}/wide`, { maxEntries: 5, maxDepth: 64 })), { fileBytes: 0, entries: 5, complete: false })
      assert.strictEqual(counted.pool, 4)
      // A root whose size says it holds more names than the share (64 bytes a name; long names here, fewer of
      // them than the share) is not listed on the calling thread at all; a small one is.
      fs.mkdirSync(`${root}/long`)
      for (let f = 0; f < 600; f++) fs.writeFileSync(`${root}/long/${String(f).padStart(200, "n")}`, "")
      const looksBig = fs.statSync(`${root}/long`).size > SYNC_ENTRIES * 64
      assert.deepStrictEqual(shape(yield* measure(`${root}/long`, WIDE)), { fileBytes: 0, entries: 600, complete: true })
      assert.strictEqual(counted.pool, looksBig ? 5 : 4, `a root of ${fs.statSync(`${root}/long`).size} bytes`)
      const poolBefore = counted.pool
      // A small tree measured no faster than the calling thread's time allows (here: none at all).
      const slow = countingPool()
      assert.deepStrictEqual(shape(yield* measureWith(undefined, slow.native, 1e-9)(`${root}/big/d1`, WIDE)), { fileBytes: (39 * 40) / 2, entries: 40, complete: true })
      assert.strictEqual(slow.counted.pool, 1)
      // A small one: the calling thread only.
      assert.deepStrictEqual(shape(yield* measure(`${root}/big/d1`, WIDE)), { fileBytes: (39 * 40) / 2, entries: 40, complete: true })
      assert.strictEqual(counted.pool, poolBefore)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("errors come back typed with the failing path from both passes; no descriptor outlives a measure", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/tree`, 4, 5)
      fs.writeFileSync(`${root}/file`, "f")
      for (const measure of [measureWith(), measureWith(undefined, poolOnly())]) {
        assert.isTrue((yield* measure(`${root}/tree`, WIDE)).complete)
        assert.isFalse((yield* measure(`${root}/tree`, { maxEntries: 3, maxDepth: 64 })).complete)
        const missing = yield* Effect.flip(measure(`${root}/absent`, WIDE))
        assert.deepStrictEqual([missing.reason, missing.errno, missing.method, missing.path], ["NotFound", "ENOENT", "measureTree", `${root}/absent`])
        const below = yield* Effect.flip(measure(`${root}/file/x`, WIDE))
        assert.deepStrictEqual([below.reason, below.errno, below.method, below.path], ["NotADirectory", "ENOTDIR", "measureTree", `${root}/file/x`])
        const long = yield* Effect.flip(measure(`${root}/${"n".repeat(5000)}`, WIDE))
        assert.deepStrictEqual([long.errno, long.method], ["ENAMETOOLONG", "measureTree"])
        assert.strictEqual(openDescriptorsUnder(root), 0)
      }
      // Malformed arguments are EINVAL answers, never a crash.
      const EINVAL = -os.constants.errno.EINVAL
      const native = fsat()
      assert.strictEqual(native.measureTreeSync!(root, 10, 64, 10, 2, new Float64Array(2)), EINVAL)
      assert.strictEqual(native.measureTreeSync!(root, 10, 64, 0, 2, new Float64Array(3)), EINVAL)
      assert.strictEqual(native.measureTreeSync!(root, 10, 64, 10, 0, new Float64Array(3)), EINVAL)
      assert.strictEqual(native.measureTree!(root, "many" as unknown as number, 64, () => {}), EINVAL)
      assert.strictEqual(native.measureTree!(root, 10, 64, "not a function" as unknown as () => void), EINVAL)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("a measure on the thread pool stops at its next entry once its cancel flag is set, answering ECANCELED", () =>
    Effect.gen(function*() {
      const root = scratch()
      // Twenty chains of 100 levels: a walk seen inside one has most of its work still ahead of it.
      for (let c = 0; c < 20; c++) fs.mkdirSync(`${root}/chain/a${c}/${Array.from({ length: 99 }, (_, i) => `c${i}`).join("/")}`, { recursive: true })
      const native = fsat()
      const answerOf = (cancel: Int32Array, whileRunning: () => Promise<void>) =>
        Effect.promise(async () => {
          let answer: Array<unknown> | undefined
          const done = new Promise<void>((resolve) => {
            assert.strictEqual(native.measureTree!(`${root}/chain`, 1e9, 1e9, (...a) => ((answer = a), resolve()), cancel), 0)
          })
          await whileRunning()
          await done
          return answer!
        })
      // Set before it starts: not one entry visited.
      const before = yield* answerOf(Int32Array.of(1), async () => {})
      assert.deepStrictEqual(before, [-os.constants.errno.ECANCELED, "measureTree", `${root}/chain`, 0, 0, 0])
      // Set while it is inside a chain: it stops there (a whole walk answers 0 and 2,000 entries). A round
      // whose poll never saw it inside a chain (a thread that ran it between two polls) is tried again.
      let stopped = 0
      for (let round = 0; round < 5 && stopped === 0; round++) {
        const cancel = new Int32Array(1)
        let seen = 0
        const answer = yield* answerOf(cancel, async () => {
          for (let i = 0; i < 5000; i++) {
            seen = openDescriptorsUnder(root)
            if (seen >= INSIDE_CHAIN) break
            await new Promise((resolve) => setImmediate(resolve))
          }
          Atomics.store(cancel, 0, 1)
        })
        // (A walk that ended between the poll and the flag answers whole: that round is tried again.)
        assert.include([0, -os.constants.errno.ECANCELED], answer[0])
        if (seen >= INSIDE_CHAIN && answer[0] === -os.constants.errno.ECANCELED) stopped++
        assert.strictEqual(openDescriptorsUnder(root), 0)
      }
      assert.strictEqual(stopped, 1, "a round set the flag while the walk was inside a chain")
      // Without a flag, or with a flag never set, the same walk answers whole.
      const whole = yield* answerOf(new Int32Array(1), async () => {})
      // Its sizes: the 2,001 directories' (the root too) as du says them, no files.
      const sizes = du(`${root}/chain`)
      assert.deepStrictEqual(whole, [0, 2000, true, sizes.bytes, sizes.apparentBytes, 0])
      assert.strictEqual(native.measureTree!(root, 10, 64, () => {}, new Float64Array(1) as unknown as Int32Array), -os.constants.errno.EINVAL)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("interrupted while its walk runs on the thread pool: the walk stops (ECANCELED) and closes what it opened", () =>
    Effect.gen(function*() {
      const root = scratch()
      for (let c = 0; c < 20; c++) fs.mkdirSync(`${root}/chain/a${c}/${Array.from({ length: 99 }, (_, i) => `c${i}`).join("/")}`, { recursive: true })
      // Every measure on the thread pool, its C answer recorded (the fiber no longer waits for it).
      const real = fsat()
      let answered: Promise<Array<unknown>> | undefined
      const native: Fsat = {
        ...poolOnly(),
        measureTree: (path, maxEntries, maxDepth, callback, cancel) => {
          let settle: (a: Array<unknown>) => void = () => {}
          answered = new Promise((resolve) => (settle = resolve))
          return real.measureTree!(path, maxEntries, maxDepth, (...a) => (settle(a), callback(...a)), cancel)
        }
      }
      let stopped = 0
      for (let round = 0; round < 5 && stopped === 0; round++) {
        const fiber = yield* Effect.fork(measureWith(undefined, native)(`${root}/chain`, WIDE))
        yield* Effect.yieldNow()
        const seen = yield* Effect.promise(async () => {
          let most = 0
          for (let i = 0; i < 5000 && most < INSIDE_CHAIN; i++) {
            most = openDescriptorsUnder(root)
            if (most < INSIDE_CHAIN) await new Promise((resolve) => setImmediate(resolve))
          }
          return most
        })
        yield* Fiber.interrupt(fiber)
        const answer = yield* Effect.promise(() => answered!)
        // Interrupted while inside a chain, the walk stops there (ECANCELED); on a loaded machine it may have
        // finished before the interrupt reached it (0, a whole answer): that round is tried again. Without the
        // canceller every round answers 0.
        assert.include([0, -os.constants.errno.ECANCELED], answer[0])
        if (seen >= INSIDE_CHAIN && answer[0] === -os.constants.errno.ECANCELED) stopped++
        assert.strictEqual(openDescriptorsUnder(root), 0)
      }
      assert.strictEqual(stopped, 1, "a round interrupted the walk inside a chain, and it stopped")
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("an addon built from other sources is never called: the portable measure, with a NativeAddonStale warning", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const root = scratch()
        plantTree(`${root}/tree`, 3, 4)
        // One with other signatures (version 1), one from before the measure calls (neither the version nor them).
        const { measureVersion: _version, measureTreeSync: _sync, measureTree: _pool, ...before } = fsat()
        for (const stale of [{ ...fsat(), measureVersion: 1 }, before]) {
          const measure = yield* nativeMeasureOrPortable(stale)
          assert.deepStrictEqual(shape(yield* measure(`${root}/tree`, WIDE)), { fileBytes: 3 * 6, entries: 3 * 5, complete: true })
        }
        const warnings = warningsOf(logged, "NativeAddonStale")
        assert.strictEqual(warnings.length, 2)
        assert.match(warnings[0]!.message, /npm rebuild pi-agent-storage/)
        assert.strictEqual(warningsOf(logged, "NativeAddonStale").length, 2)
        yield* nativeMeasureOrPortable(fsat())
        assert.strictEqual(warningsOf(logged, "NativeAddonStale").length, 2, "the current addon warns nothing")
        fs.rmSync(root, { recursive: true, force: true })
      })
    ))

  it("any depth within a window of descriptors; out of them mid-walk, a typed error naming the deep path, every descriptor closed", () => {
    const root = scratch()
    plantChain(root, 400)
    // A child takes every descriptor it may have but \`free\` (each on /dev/null), then measures the 400-deep
    // chain on both passes: with the WALK_WINDOW + 1 a walk needs at most, whole; with fewer, it fails.
    const script = `${root}/child.mjs`
    fs.writeFileSync(script, `
      import * as fs from "node:fs"
      import * as Effect from ${JSON.stringify(new URL("../../../node_modules/effect/dist/esm/Effect.js", import.meta.url).href)}
      import { loadFsat } from ${JSON.stringify(new URL("../../../dist/layers/node/fsat.js", import.meta.url).href)}
      import { makeNativeMeasure } from ${JSON.stringify(new URL("../../../dist/layers/node/nativeMeasure.js", import.meta.url).href)}
      const real = loadFsat().fsat
      const fds = () => fs.readdirSync("/proc/self/fd").length
      const out = []
      for (const free of [${WALK_WINDOW + 1}, 10]) {
        for (const native of [real, { ...real, measureTreeSync: () => 1 }]) {
          const before = fds()
          const held = []
          for (;;) {
            try {
              held.push(fs.openSync("/dev/null", "r"))
            } catch {
              break
            }
          }
          for (const fd of held.splice(0, free)) fs.closeSync(fd)
          const answer = await Effect.runPromise(Effect.either(makeNativeMeasure(native, undefined, 60000)(process.argv[2], { maxEntries: 1e9, maxDepth: 1e9 })))
          for (const fd of held) fs.closeSync(fd)
          const failed = answer._tag === "Left" ? { errno: answer.left.errno, method: answer.left.method, path: answer.left.path } : undefined
          out.push({ free, measure: answer._tag === "Right" ? answer.right : undefined, failed, before, after: fds() })
        }
      }
      process.stdout.write(JSON.stringify(out))
    `)
    const r = spawnSync("prlimit", ["--nofile=256", process.execPath, script, `${root}/chain`], { cwd: NodePath.resolve(import.meta.dirname, "../../.."), encoding: "utf8" })
    assert.strictEqual(r.status, 0, r.stderr)
    type Answer = { free: number; measure?: unknown; failed?: { errno: string; method: string; path: string }; before: number; after: number }
    const answers = JSON.parse(r.stdout) as Array<Answer>
    assert.deepStrictEqual(answers.map((a) => a.free), [WALK_WINDOW + 1, WALK_WINDOW + 1, 10, 10])
    for (const a of answers) {
      if (a.free > WALK_WINDOW) {
        assert.deepStrictEqual(shape(a.measure as Parameters<typeof shape>[0]), { fileBytes: 4, entries: 401, complete: true }, JSON.stringify(a.failed))
      } else {
        assert.deepStrictEqual([a.failed?.errno, a.failed?.method], ["EMFILE", "measureTree"])
        assert.match(a.failed!.path, new RegExp(`^${root}/chain(/c\\d+)+$`))
        assert.isAbove(a.failed!.path.split("/").length, root.split("/").length + 5, "it failed deep in the chain, descriptors open above it")
      }
      assert.strictEqual(a.after, a.before)
    }
    fs.rmSync(root, { recursive: true, force: true })
  })

  it.effect("the event loop keeps turning while a big tree is measured", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/big`, 4000, 0)
      let ticks = 0
      const timer = setInterval(() => ticks++, 1)
      const measure = yield* measureWith()(`${root}/big`, WIDE)
      clearInterval(timer)
      assert.deepStrictEqual([measure.entries, measure.complete], [4000, true])
      // A walk opening 4,000 directories takes many milliseconds; an event loop held by it would not tick.
      assert.isAbove(ticks, 1)
      fs.rmSync(root, { recursive: true, force: true })
    }))
})
