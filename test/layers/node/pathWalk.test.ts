/**
 * What the portable walker holds since it walks by descriptor (docs/architecture.md "Layers", Node): no descriptor outlives a walk,
 * however it ends (completed, budget-stopped, failed, interrupted, or stopped at a mount point), its
 * errors name real paths, never the `/proc/self/fd/…` ones it works through, and without /proc it still
 * measures a tree deeper than its window of descriptors (domain/WalkDepth.ts). (Its races: walkerRace.test.ts;
 * its budgets, links and mount points: the conformance suite.)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { WALK_WINDOW } from "../../../src/domain/WalkDepth.js"
import { makePathWalker } from "../../../src/layers/node/pathWalk.js"
import { runWalk } from "../../../src/layers/node/support.js"
import { crossedMount, type SyncWalk } from "../../../src/layers/node/syncWalk.js"
import type { WalkBudget } from "../../../src/services/FileSystem.js"
import { openDescriptorsUnder } from "../../support/descriptors.js"
import { du } from "../../support/du.js"

const WIDE = { maxEntries: 1_000_000, maxDepth: 64 }
const WIDE_DEPTH = { maxEntries: 1_000_000, maxDepth: 1_000_000 }
const scratch = () => fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-pathwalk-"))

const plant = (root: string) => {
  fs.mkdirSync(`${root}/run/sub/deeper`, { recursive: true })
  for (let i = 0; i < 20; i++) fs.writeFileSync(`${root}/run/sub/f${i}`, "x".repeat(i))
  fs.writeFileSync(`${root}/run/sub/deeper/g`, "g")
}

describe("portable walker descriptors and errors", () => {
  it.effect("no descriptor outlives a walk: completed, budget-stopped, failed or interrupted", () =>
    Effect.gen(function*() {
      const root = scratch()
      plant(root)
      const walker = makePathWalker()
      const measure = (budget: WalkBudget) => runWalk("measureTree", `${root}/run`, () => walker.startMeasure(`${root}/run`, budget))
      const remove = (budget: WalkBudget) => runWalk("removeTree", `${root}/run`, () => walker.startRemoval(`${root}/run`, budget))
      const before = openDescriptorsUnder(root)
      assert.deepStrictEqual(yield* measure(WIDE), { ...du(`${root}/run`), fileBytes: 191, entries: 23, complete: true })
      assert.isFalse((yield* measure({ maxEntries: 3, maxDepth: 64 })).complete)
      assert.isFalse((yield* remove({ maxEntries: 3, maxDepth: 64 })).complete)
      assert.strictEqual(openDescriptorsUnder(root), before)

      // A listing failing below the root (EIO), on both walks: typed, naming the real directory.
      let lists = 0
      const failing = makePathWalker({
        list: (path) => {
          if (++lists > 1) throw Object.assign(new Error("EIO: i/o error"), { code: "EIO" })
          return fs.readdirSync(path, { withFileTypes: true })
        }
      })
      const failedMeasure = yield* Effect.flip(runWalk("measureTree", `${root}/run`, () => failing.startMeasure(`${root}/run`, WIDE)))
      assert.deepStrictEqual([failedMeasure.errno, failedMeasure.path], ["EIO", `${root}/run/sub`])
      lists = 0
      const failedRemoval = yield* Effect.flip(runWalk("removeTree", `${root}/run`, () => failing.startRemoval(`${root}/run`, WIDE)))
      assert.deepStrictEqual([failedRemoval.errno, failedRemoval.path], ["EIO", `${root}/run/sub`])
      assert.strictEqual(openDescriptorsUnder(root), before)

      // Interrupted between slices (1,200 directories to open take far longer than one 4 ms slice).
      for (let i = 0; i < 400; i++) fs.mkdirSync(`${root}/run/wide${i}/x/y`, { recursive: true })
      const walks: Array<Effect.Effect<unknown, unknown>> = [measure(WIDE), remove(WIDE)]
      for (const walk of walks) {
        const fiber = yield* Effect.fork(walk)
        yield* Effect.yieldNow()
        const exit = yield* Fiber.interrupt(fiber)
        assert.isTrue(Exit.isInterrupted(exit))
        assert.strictEqual(openDescriptorsUnder(root), before)
      }
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("without /proc/self/fd, a tree deeper than the window of descriptors is still measured whole, by path", () =>
    Effect.gen(function*() {
      const root = scratch()
      const levels = 3 * WALK_WINDOW
      fs.mkdirSync(`${root}/run/${Array.from({ length: levels }, () => "d").join("/")}`, { recursive: true })
      for (let depth = 0, dir = `${root}/run`; depth <= levels; depth++, dir += "/d") fs.writeFileSync(`${dir}/f`, "x")
      const before = openDescriptorsUnder(root)
      const measure = yield* runWalk("measureTree", `${root}/run`, () => makePathWalker({ procFd: false }).startMeasure(`${root}/run`, WIDE_DEPTH))
      assert.deepStrictEqual(measure, { ...du(`${root}/run`), fileBytes: levels + 1, entries: 2 * levels + 1, complete: true })
      assert.strictEqual(openDescriptorsUnder(root), before)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("a failing unlink names the entry's real path", () =>
    Effect.gen(function*() {
      // procfs refuses to unlink its entries, even for root.
      const refused = yield* Effect.flip(runWalk("removeTree", "/proc/self/fdinfo", () => makePathWalker().startRemoval("/proc/self/fdinfo", WIDE)))
      assert.strictEqual(refused.reason, "PermissionDenied")
      assert.match(refused.path, /^\/proc\/self\/fdinfo\/\d+$/)
    }))

  it.effect("a walk longer than one slice that ends in a failure (a mount point met) fails typed, never as a defect", () =>
    Effect.gen(function*() {
      let steps = 0
      let closed = 0
      const walk: SyncWalk<never> = {
        // The first step uses up its slice (as a big tree does), the second ends the walk.
        step: (until) => {
          if (++steps > 1) return true
          while (performance.now() <= until) {
            // a slice's worth of work
          }
          return false
        },
        result: () => {
          throw crossedMount("/somewhere/m")
        },
        close: () => void closed++
      }
      // A defect would end the test here: flip sees only a failure.
      const failed = yield* Effect.flip(runWalk("removeTree", "/somewhere", () => walk))
      assert.deepStrictEqual([failed._tag, failed.errno, failed.path], ["FileSystemError", "EXDEV", "/somewhere/m"])
      assert.strictEqual(steps, 2)
      assert.strictEqual(closed, 1)
    }))
})
