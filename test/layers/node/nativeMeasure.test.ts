/**
 * The native measure (fsat.c `measureTree`: small trees on the calling thread, big ones on the thread pool)
 * beyond the shared conformance suite, which runs it for every budget, link and mount-point rule: both
 * paths give the portable walk's answers on random real trees and budgets, errors come back typed, no
 * descriptor outlives a measure, and the event loop keeps turning while a big tree is measured. (A
 * directory swapped for a link while the walk runs: walkerRace.test.ts.)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import { type Fsat, loadFsat } from "../../../src/layers/node/fsat.js"
import { makeNativeMeasure, SYNC_ENTRIES } from "../../../src/layers/node/nativeMeasure.js"
import { pathWalker } from "../../../src/layers/node/pathWalk.js"
import { runWalk } from "../../../src/layers/node/support.js"

const loaded = loadFsat()
const fsat = (): Fsat => {
  if (!("fsat" in loaded)) throw new Error(`native walker ${loaded.why}`)
  return loaded.fsat
}
const measureWith = (syncEntries?: number) => {
  const measure = makeNativeMeasure(fsat(), syncEntries)
  if (measure === undefined) throw new Error("the addon has no measureTree (a stale build/: npm run install)")
  return measure
}

const WIDE = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }
const scratch = () => fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-native-measure-"))
const openDescriptors = () => fs.readdirSync("/proc/self/fd").length

const plantTree = (root: string, dirs: number, files: number) => {
  for (let d = 0; d < dirs; d++) {
    fs.mkdirSync(`${root}/d${d}`, { recursive: true })
    for (let f = 0; f < files; f++) fs.writeFileSync(`${root}/d${d}/f${f}`, "x".repeat(f))
  }
}

/** A random tree: nested directories, files of random sizes, links (to a directory outside, and dangling), empty dirs. */
type Node = { readonly kind: "file"; readonly size: number } | { readonly kind: "link" } | { readonly kind: "dir"; readonly children: ReadonlyArray<Node> }
const node: FastCheck.Arbitrary<Node> = FastCheck.letrec<{ node: Node }>((tie) => ({
  node: FastCheck.oneof(
    { depthSize: "small", withCrossShrink: true },
    FastCheck.record({ kind: FastCheck.constant("file" as const), size: FastCheck.nat(300) }),
    FastCheck.record({ kind: FastCheck.constant("link" as const) }),
    FastCheck.record({ kind: FastCheck.constant("dir" as const), children: FastCheck.array(tie("node"), { maxLength: 6 }) })
  )
})).node

const build = (path: string, n: Node, outside: string) => {
  if (n.kind === "file") fs.writeFileSync(path, "y".repeat(n.size))
  else if (n.kind === "link") fs.symlinkSync(outside, path)
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

  it.effect("a tree bigger than the calling thread's share is measured whole on the thread pool", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/big`, 30, 40) // 1,230 entries > SYNC_ENTRIES
      assert.isAbove(30 * 41, SYNC_ENTRIES)
      const bytes = 30 * (39 * 40) / 2
      assert.deepStrictEqual(yield* measureWith()(`${root}/big`, WIDE), { bytes, entries: 30 * 41, complete: true })
      // A budget below the share stops on the calling thread; one above it, on the thread pool.
      assert.deepStrictEqual((yield* measureWith()(`${root}/big`, { maxEntries: 500, maxDepth: 64 })).entries, 500)
      assert.deepStrictEqual((yield* measureWith()(`${root}/big`, { maxEntries: 1200, maxDepth: 64 })).entries, 1200)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("errors are typed with the failing path; no descriptor outlives a measure, however it ends", () =>
    Effect.gen(function*() {
      const measure = measureWith()
      const root = scratch()
      plantTree(`${root}/tree`, 4, 5)
      fs.writeFileSync(`${root}/file`, "f")
      const before = openDescriptors()
      assert.isTrue((yield* measure(`${root}/tree`, WIDE)).complete)
      assert.isFalse((yield* measure(`${root}/tree`, { maxEntries: 3, maxDepth: 64 })).complete)
      assert.isTrue((yield* measureWith(1)(`${root}/tree`, WIDE)).complete)
      const missing = yield* Effect.flip(measure(`${root}/absent`, WIDE))
      assert.deepStrictEqual([missing.reason, missing.errno, missing.method, missing.path], ["NotFound", "ENOENT", "measureTree", `${root}/absent`])
      const below = yield* Effect.flip(measureWith(1)(`${root}/file/x`, WIDE))
      assert.deepStrictEqual([below.reason, below.errno, below.method, below.path], ["NotADirectory", "ENOTDIR", "measureTree", `${root}/file/x`])
      // Interrupted while its walk runs on the thread pool: the walk ends on its own and closes what it opened.
      plantTree(`${root}/big`, 3000, 0)
      const fiber = yield* Effect.fork(measureWith(1)(`${root}/big`, WIDE))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      yield* Effect.promise(async () => {
        for (let i = 0; i < 500 && openDescriptors() !== before; i++) await new Promise((resolve) => setTimeout(resolve, 5))
      })
      assert.strictEqual(openDescriptors(), before)
      // Malformed arguments are EINVAL answers, never a crash.
      const EINVAL = -os.constants.errno.EINVAL
      const native = fsat()
      assert.strictEqual(native.measureTreeSync!(root, 10, 64, 10, new Float64Array(2)), EINVAL)
      assert.strictEqual(native.measureTreeSync!("n".repeat(5000), 10, 64, 10, new Float64Array(3)), EINVAL)
      assert.strictEqual(native.measureTree!(root, "many" as unknown as number, 64, () => {}), EINVAL)
      assert.strictEqual(native.measureTree!(root, 10, 64, "not a function" as unknown as () => void), EINVAL)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("the event loop keeps turning while a big tree is measured", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/big`, 3000, 1)
      let ticks = 0
      const timer = setInterval(() => ticks++, 1)
      const measure = yield* measureWith()(`${root}/big`, WIDE)
      clearInterval(timer)
      assert.deepStrictEqual([measure.entries, measure.complete], [3000 * 2, true])
      // A 6,000-entry walk takes many milliseconds; an event loop held by it would not tick.
      assert.isAbove(ticks, 1)
      fs.rmSync(root, { recursive: true, force: true })
    }))
})
