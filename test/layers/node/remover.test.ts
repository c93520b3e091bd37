/**
 * The remover thread (portable walker): removals really run off the event loop (not silently on the fallback), errors come
 * back typed, a thread that cannot start hands its requests to the event-loop walk, and the event loop
 * keeps turning while a large tree is deleted. A scoped pool's threads stop when its scope closes.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { pathWalker } from "../../../src/layers/node/pathWalk.js"
import { makeRemover, scopedRemover } from "../../../src/layers/node/remover.js"
import { runWalk } from "../../../src/layers/node/support.js"
import type { WalkBudget } from "../../../src/services/FileSystem.js"
import { du } from "../../support/du.js"

const WIDE = { maxEntries: 1_000_000, maxDepth: 64 }
const onEventLoop = (root: string, budget: WalkBudget) => runWalk("removeTree", root, () => pathWalker.startRemoval(root, budget))

const plantTree = (root: string, dirs: number, files: number) => {
  for (let d = 0; d < dirs; d++) {
    fs.mkdirSync(`${root}/d${d}`, { recursive: true })
    for (let f = 0; f < files; f++) fs.writeFileSync(`${root}/d${d}/f${f}`, "x")
  }
}

const scratch = () => fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-remover-"))

describe("remover thread", () => {
  it.effect("removes on the thread, keeps budgets, reports errors typed", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/tree`, 5, 4)
      fs.mkdirSync(`${root}/outside`)
      fs.writeFileSync(`${root}/outside/canary`, "keep")
      fs.symlinkSync(`${root}/outside`, `${root}/tree/d0/link`)
      const whole = du(`${root}/tree`)
      const remover = makeRemover()
      const remove = remover.remove(onEventLoop)
      const first = yield* remove(`${root}/tree`, { maxEntries: 7, maxDepth: 64 })
      assert.deepStrictEqual([first.removedEntries, first.complete], [7, false])
      const rest = yield* remove(`${root}/tree`, WIDE)
      assert.deepStrictEqual([rest.removedEntries, rest.complete], [5 * 5 + 1 - 7, true])
      // The tree's disk usage as du says it (the link counts itself, never its target).
      assert.strictEqual(first.removedBytes + rest.removedBytes, whole.bytes)
      assert.isFalse(fs.existsSync(`${root}/tree`))
      assert.strictEqual(fs.readFileSync(`${root}/outside/canary`, "utf8"), "keep")
      // A root below a file: the thread's error comes back as the port's typed error.
      fs.writeFileSync(`${root}/file`, "f")
      const failed = yield* Effect.either(remove(`${root}/file/x`, WIDE))
      assert.deepStrictEqual(failed._tag === "Left" ? [failed.left.reason, failed.left.errno, failed.left.method] : [], ["NotADirectory", "ENOTDIR", "removeTree"])
      // A missing root is nothing to do.
      assert.deepStrictEqual(yield* remove(`${root}/absent`, WIDE), { removedEntries: 0, complete: true, removedBytes: 0, removedApparentBytes: 0 })
      assert.deepStrictEqual(remover.counts, { onThread: 4, onEventLoop: 0, threads: 1 }) // one at a time: one thread
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("concurrent requests spread over at most `size` threads and every tree goes", () =>
    Effect.gen(function*() {
      const root = scratch()
      for (let i = 0; i < 7; i++) plantTree(`${root}/t${i}`, 4, 10)
      const remover = makeRemover(undefined, 3)
      const removals = yield* Effect.forEach(
        Array.from({ length: 7 }, (_, i) => `${root}/t${i}`),
        (tree) => remover.remove(onEventLoop)(tree, WIDE),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(removals.map((r) => r.removedEntries), Array(7).fill(44))
      assert.deepStrictEqual(fs.readdirSync(root), [])
      assert.deepStrictEqual(remover.counts, { onThread: 7, onEventLoop: 0, threads: 3 })
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("a thread that cannot start hands every request to the event-loop walk", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/a`, 3, 3)
      plantTree(`${root}/b`, 3, 3)
      const sizes = du(`${root}/a`)
      const removed = { removedEntries: 12, complete: true, removedBytes: sizes.bytes, removedApparentBytes: sizes.apparentBytes }
      const remover = makeRemover(new URL("./no-such-remover-thread.js", import.meta.url))
      const remove = remover.remove(onEventLoop)
      assert.deepStrictEqual(yield* remove(`${root}/a`, WIDE), removed)
      assert.deepStrictEqual(yield* remove(`${root}/b`, WIDE), removed)
      assert.deepStrictEqual(fs.readdirSync(root), [])
      assert.deepStrictEqual(remover.counts, { onThread: 0, onEventLoop: 2, threads: 1 })
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("the event loop keeps turning while the thread deletes", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/big`, 40, 100)
      const whole = du(`${root}/big`)
      const remover = makeRemover()
      // Warm the thread so its start-up is not what we observe.
      yield* remover.remove(onEventLoop)(`${root}/absent`, WIDE)
      let ticks = 0
      const timer = setInterval(() => ticks++, 1)
      const removal = yield* remover.remove(onEventLoop)(`${root}/big`, WIDE)
      clearInterval(timer)
      assert.deepStrictEqual(removal, { removedEntries: 40 * 101, complete: true, removedBytes: whole.bytes, removedApparentBytes: whole.apparentBytes })
      assert.deepStrictEqual(remover.counts.onThread, 2)
      // A 4,040-entry deletion takes many milliseconds; an event loop blocked by it would tick once.
      assert.isAbove(ticks, 1)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.live("a scoped pool's threads stop when its scope closes; a later request runs on the event loop", () =>
    Effect.gen(function*() {
      const root = scratch()
      plantTree(`${root}/a`, 3, 3)
      plantTree(`${root}/b`, 3, 3)
      const sizes = du(`${root}/a`)
      const removed = { removedEntries: 12, complete: true, removedBytes: sizes.bytes, removedApparentBytes: sizes.apparentBytes }
      const remover = yield* Effect.scoped(Effect.gen(function*() {
        const pool = yield* scopedRemover(2)
        const removal = yield* pool.remove(onEventLoop)(`${root}/a`, WIDE)
        assert.deepStrictEqual(removal, removed)
        assert.strictEqual(pool.liveThreads(), 1, "the thread is still there while the scope is open")
        return pool
      }))
      assert.strictEqual(remover.liveThreads(), 0, "the finalizer stopped it")
      assert.deepStrictEqual(yield* remover.remove(onEventLoop)(`${root}/b`, WIDE), removed)
      assert.deepStrictEqual(remover.counts, { onThread: 1, onEventLoop: 1, threads: 1 })
      assert.strictEqual(remover.liveThreads(), 0, "no thread is started after shutdown")
      fs.rmSync(root, { recursive: true, force: true })
    }))
})
