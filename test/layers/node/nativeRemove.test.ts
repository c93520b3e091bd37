/**
 * The native removal (fsat.c `removeTree` on the thread pool) beyond the shared conformance suite, which
 * already runs it for every budget, link and mount-point rule: no descriptor outlives a removal, errors come
 * back typed with the failing path, the event loop keeps turning, and at most `size` removals run at once.
 * (A directory swapped for a link while the walk runs: walkerRace.test.ts, for every walker.)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { type Fsat, loadFsat } from "../../../src/layers/node/fsat.js"
import { makeNativeRemover } from "../../../src/layers/node/nativeRemove.js"
import { openDescriptorsUnder } from "../../support/descriptors.js"
import { du } from "../../support/du.js"
import { capturing, warningsOf } from "../../support/logs.js"
import { nativeRemovalOrPortable } from "../../../src/layers/node/walkers.js"

const loaded = loadFsat()
const fsat = (): Fsat => {
  if (!("fsat" in loaded)) throw new Error(`native walker ${loaded.why}`)
  return loaded.fsat
}

const WIDE = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }
const scratch = () => fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-native-remove-"))

const plantTree = (root: string, dirs: number, files: number) => {
  for (let d = 0; d < dirs; d++) {
    fs.mkdirSync(`${root}/d${d}`, { recursive: true })
    for (let f = 0; f < files; f++) fs.writeFileSync(`${root}/d${d}/f${f}`, "x")
  }
}

describe("native removal (fsat removeTree on the thread pool)", () => {
  it.effect("errors are typed, name the failing entry, and no descriptor outlives a removal", () =>
    Effect.gen(function*() {
      const remove = makeNativeRemover(fsat())
      const root = scratch()
      plantTree(`${root}/tree`, 4, 5)
      const whole = du(`${root}/tree`)
      const before = openDescriptorsUnder(root)
      const first = yield* remove(`${root}/tree`, { maxEntries: 7, maxDepth: 64 })
      assert.deepStrictEqual([first.removedEntries, first.complete], [7, false])
      const rest = yield* remove(`${root}/tree`, WIDE)
      assert.deepStrictEqual([rest.removedEntries, rest.complete], [4 * 6 - 7, true])
      // Together, the tree's disk usage as du says it (a directory keeps its blocks as its entries go).
      assert.strictEqual(first.removedBytes + rest.removedBytes, whole.bytes)
      assert.deepStrictEqual(yield* remove(`${root}/absent`, WIDE), { removedEntries: 0, complete: true, removedBytes: 0, removedApparentBytes: 0 })
      fs.writeFileSync(`${root}/file`, "f")
      const below = yield* Effect.flip(remove(`${root}/file/x`, WIDE))
      assert.deepStrictEqual([below.reason, below.errno, below.method, below.path], ["NotADirectory", "ENOTDIR", "removeTree", `${root}/file/x`])
      // A real failure mid-walk, even for root: procfs refuses to unlink its entries (the walk's descriptor on
      // it reads as /proc/<pid>/fdinfo).
      const fdinfo = `/proc/${process.pid}/fdinfo`
      const onFdinfo = openDescriptorsUnder(fdinfo)
      const refused = yield* Effect.flip(remove("/proc/self/fdinfo", WIDE))
      assert.deepStrictEqual([refused.reason, refused.method], ["PermissionDenied", "removeTree"])
      assert.match(refused.path, /^\/proc\/self\/fdinfo\/\d+$/)
      assert.strictEqual(openDescriptorsUnder(root), before)
      assert.strictEqual(openDescriptorsUnder(fdinfo), onFdinfo)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("the event loop keeps turning while a large tree is deleted", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/big`, 40, 100)
      const whole = du(`${root}/big`)
      let ticks = 0
      const timer = setInterval(() => ticks++, 1)
      const removal = yield* makeNativeRemover(fsat())(`${root}/big`, WIDE)
      clearInterval(timer)
      assert.deepStrictEqual(removal, { removedEntries: 40 * 101, complete: true, removedBytes: whole.bytes, removedApparentBytes: whole.apparentBytes })
      // A 4,040-entry deletion takes many milliseconds; an event loop blocked by it would tick once.
      assert.isAbove(ticks, 1)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("at most `size` removals run at once; the rest queue", () =>
    Effect.gen(function*() {
      let running = 0
      let most = 0
      // The addon's queueing, with a removal that takes a few milliseconds.
      // (No removeTrees: one removal per call, the path of an addon built before batches existed.)
      const { removeTrees: _batches, ...single } = fsat()
      const slow: Fsat = {
        ...single,
        removeTree: (_path, _maxEntries, _maxDepth, callback) => {
          running++
          most = Math.max(most, running)
          setTimeout(() => {
            running--
            callback(0, 1, true, 0, 0)
          }, 5)
          return 0
        }
      }
      const remove = makeNativeRemover(slow, 2)
      const results = yield* Effect.forEach(Array.from({ length: 7 }, (_, i) => `/nowhere/${i}`), (p) => remove(p, WIDE), { concurrency: "unbounded" })
      assert.strictEqual(results.length, 7)
      assert.strictEqual(most, 2)
    }))

  it.effect("removals that waited go to C together, each answered as if it were alone", () =>
    Effect.gen(function*() {
      const remove = makeNativeRemover(fsat(), 1)
      const root = scratch()
      // The first removal starts alone and takes milliseconds; the rest queue behind it meanwhile.
      plantTree(`${root}/big`, 20, 50)
      plantTree(`${root}/small`, 2, 3)
      plantTree(`${root}/cut`, 4, 5)
      fs.writeFileSync(`${root}/file`, "f")
      fs.mkdirSync(`${root}/deep/a/b`, { recursive: true })
      const [bigSizes, smallSizes] = [du(`${root}/big`), du(`${root}/small`)]
      const before = openDescriptorsUnder(root)
      // A path too long for the addon fails alone, as it would outside a batch; the batch's other walks run.
      const tooLong = `${root}/${"n".repeat(4100)}`
      const [big, small, cut, below, absent, deep, long] = yield* Effect.all([
        remove(`${root}/big`, WIDE),
        remove(`${root}/small`, WIDE),
        remove(`${root}/cut`, { maxEntries: 7, maxDepth: 64 }),
        Effect.flip(remove(`${root}/file/x`, WIDE)),
        remove(`${root}/absent`, WIDE),
        remove(`${root}/deep`, { maxEntries: 100, maxDepth: 1 }),
        Effect.flip(remove(tooLong, WIDE))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(big, { removedEntries: 20 * 51, complete: true, removedBytes: bigSizes.bytes, removedApparentBytes: bigSizes.apparentBytes })
      assert.deepStrictEqual(small, { removedEntries: 2 * 4, complete: true, removedBytes: smallSizes.bytes, removedApparentBytes: smallSizes.apparentBytes })
      assert.deepStrictEqual([cut.removedEntries, cut.complete], [7, false])
      assert.deepStrictEqual([below.reason, below.errno, below.path], ["NotADirectory", "ENOTDIR", `${root}/file/x`])
      assert.deepStrictEqual(absent, { removedEntries: 0, complete: true, removedBytes: 0, removedApparentBytes: 0 })
      assert.deepStrictEqual([deep.complete, fs.existsSync(`${root}/deep/a/b`)], [false, true])
      assert.deepStrictEqual([long.errno, long.method, long.path], ["ENAMETOOLONG", "removeTree", tooLong])
      assert.deepStrictEqual([fs.existsSync(`${root}/big`), fs.existsSync(`${root}/small`), fs.existsSync(`${root}/cut`)], [false, false, true])
      // Seven removals in two pieces of work: the first alone, the six that waited behind it together.
      assert.deepStrictEqual(remove.counts, { batches: 2, removals: 7 })
      assert.strictEqual(openDescriptorsUnder(root), before)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("a batch holds one slot: at most `size` batches run at once, at most BATCH_MAX removals each", () =>
    Effect.gen(function*() {
      let running = 0
      let most = 0
      const sizes: Array<number> = []
      const slow: Fsat = {
        ...fsat(),
        removeTrees: (paths, _maxEntries, _maxDepths, callback) => {
          running++
          most = Math.max(most, running)
          sizes.push(paths.length)
          setTimeout(() => {
            running--
            paths.forEach((_, i) => callback(i, 0, 1, true, i, i))
          }, 5)
          return 0
        },
        removeTree: (_path, _maxEntries, _maxDepth, callback) => {
          running++
          most = Math.max(most, running)
          sizes.push(1)
          setTimeout(() => {
            running--
            callback(0, 1, true, 0, 0)
          }, 5)
          return 0
        }
      }
      const remove = makeNativeRemover(slow, 2, 4)
      const results = yield* Effect.forEach(Array.from({ length: 13 }, (_, i) => `/nowhere/${i}`), (p) => remove(p, WIDE), { concurrency: "unbounded" })
      assert.strictEqual(results.length, 13)
      assert.isTrue(results.every((r) => r.complete && r.removedEntries === 1))
      assert.strictEqual(most, 2)
      assert.strictEqual(sizes.reduce((a, b) => a + b, 0), 13)
      assert.isTrue(sizes.every((n) => n <= 4))
      assert.isAbove(sizes.filter((n) => n > 1).length, 0)
    }))
  it.effect("removeTreeEach queues a whole batch at once: answered in order, in batches of BATCH_MAX, and an interrupted one leaves the queue", () =>
    Effect.gen(function*() {
      const answered: Array<string> = []
      let release: (() => void) | undefined
      const slow: Fsat = {
        ...fsat(),
        removeTrees: (paths, _maxEntries, _maxDepths, callback) => {
          answered.push(...paths.map(String))
          // The first batch is held until the test lets it go; later ones answer at once.
          const done = () => paths.forEach((p, i) => callback(i, 0, p.length, true, i, i))
          if (release === undefined && answered.length === paths.length) release = done
          else setTimeout(done, 0)
          return 0
        },
        removeTree: (path, _maxEntries, _maxDepth, callback) => {
          answered.push(String(path))
          setTimeout(() => callback(0, path.length, true, 0, 0), 0)
          return 0
        }
      }
      const remove = makeNativeRemover(slow, 1, 4)
      const roots = Array.from({ length: 10 }, (_, i) => `/nowhere/${String(i).padStart(2, "0")}`)
      // While one removal holds the only slot, a batch of ten waits; interrupted, it leaves the queue untouched.
      const first = yield* Effect.fork(remove.removeTreeEach(["/first/a", "/first/b"], WIDE))
      yield* Effect.yieldNow()
      const waiting = yield* Effect.fork(remove.removeTreeEach(roots, WIDE))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(waiting)
      yield* Effect.yieldNow()
      release!()
      const firstAnswers = yield* Fiber.join(first)
      assert.deepStrictEqual(firstAnswers.map((a) => a._tag === "Right" && a.right.removedEntries), [8, 8])
      assert.deepStrictEqual(answered, ["/first/a", "/first/b"], "the interrupted batch never reached C")
      const answers = yield* remove.removeTreeEach(roots, WIDE)
      assert.deepStrictEqual(answers.map((a) => a._tag === "Right" && a.right.removedEntries), roots.map((r) => r.length), "in order")
      assert.deepStrictEqual(answered.slice(2), roots)
      // Ten queued at once: batches of at most four (one piece of work for the two first ones).
      assert.deepStrictEqual(remove.counts, { batches: 4, removals: 12 })
      assert.deepStrictEqual(yield* remove.removeTreeEach([], WIDE), [])
    }))

  it.scoped("an addon whose removal answers file bytes only (built from other sources) is never called: the portable removal, with a NativeAddonStale warning", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const root = scratch()
        plantTree(`${root}/tree`, 3, 4)
        const whole = du(`${root}/tree`)
        let called = 0
        const { removeVersion: _version, removeTrees: _batches, ...before } = fsat()
        const stale: Fsat = { ...before, removeTree: (...args) => (called++, fsat().removeTree(...args)) }
        const { removeTree } = yield* nativeRemovalOrPortable(stale, 1)
        assert.deepStrictEqual(yield* removeTree(`${root}/tree`, WIDE), { removedEntries: 3 * 5, complete: true, removedBytes: whole.bytes, removedApparentBytes: whole.apparentBytes })
        assert.strictEqual(called, 0)
        const warnings = warningsOf(logged, "NativeAddonStale")
        assert.strictEqual(warnings.length, 1)
        assert.match(warnings[0]!.message, /removeTree version 2.*npm rebuild pi-agent-storage/)
        yield* nativeRemovalOrPortable(fsat(), 1)
        assert.strictEqual(warningsOf(logged, "NativeAddonStale").length, 1, "the current addon warns nothing")
        fs.rmSync(root, { recursive: true, force: true })
      })
    ))
})
