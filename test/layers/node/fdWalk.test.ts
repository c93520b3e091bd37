/**
 * What only the native measuring walk promises beyond the shared conformance suite: a directory swapped for
 * a symlink between listing and descending is never followed, and no descriptor outlives a walk (budget
 * stop, failure, interruption). The addon's calls answer errnos, never throw. (Native removal:
 * nativeRemove.test.ts.)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { makeFdMeasure } from "../../../src/layers/node/fdWalk.js"
import { type Fsat, loadFsat } from "../../../src/layers/node/fsat.js"
import { runWalk } from "../../../src/layers/node/support.js"
import type { WalkBudget } from "../../../src/services/FileSystem.js"

const loaded = loadFsat()
const fsat = (): Fsat => {
  if (!("fsat" in loaded)) throw new Error(`native walker ${loaded.why}`)
  return loaded.fsat
}

/** The measure as the Node layer runs it on the event loop: sliced, closed however it ends. */
const measureWith = (native: Fsat) => {
  const start = makeFdMeasure(native)
  return (root: string, budget: WalkBudget) => runWalk("measureTree", root, () => start(root, budget))
}

const WIDE = { maxEntries: 1_000_000, maxDepth: 64 }

const scratch = () => fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-fdwalk-"))

const openDescriptors = () => fs.readdirSync("/proc/self/fd").length

/** run/ holds sub/ with files; outside/ holds a canary. */
const plant = (root: string) => {
  fs.mkdirSync(`${root}/run/sub/deeper`, { recursive: true })
  for (let i = 0; i < 20; i++) fs.writeFileSync(`${root}/run/sub/f${i}`, "x".repeat(i))
  fs.writeFileSync(`${root}/run/sub/deeper/g`, "g")
  fs.mkdirSync(`${root}/outside`)
  fs.writeFileSync(`${root}/outside/canary`, "keep me")
}

/** The real addon, except that listing `run/` first swaps `run/sub` for a link to `outside/`. */
const swappingFsat = (root: string): Fsat => {
  const real = fsat()
  let swapped = false
  return {
    ...real,
    list: (fd, types) => {
      const names = real.list(fd, types)
      if (!swapped && Array.isArray(names) && names.includes("sub")) {
        swapped = true
        fs.renameSync(`${root}/run/sub`, `${root}/moved`)
        fs.symlinkSync(`${root}/outside`, `${root}/run/sub`)
      }
      return names
    }
  }
}

describe("native measuring walk (fsat)", () => {
  it.effect("measuring never descends a directory swapped for a link after its parent was listed", () =>
    Effect.gen(function*() {
      const root = scratch()
      plant(root)
      fs.writeFileSync(`${root}/outside/big`, "y".repeat(10_000))
      const measure = yield* measureWith(swappingFsat(root))(`${root}/run`, WIDE)
      assert.deepStrictEqual(measure, { bytes: 0, entries: 1, complete: true }) // the link itself, 0 bytes
      fs.rmSync(root, { recursive: true })
    }))

  it.effect("no descriptor outlives a measure: completed, budget-stopped, failed or interrupted", () =>
    Effect.gen(function*() {
      const root = scratch()
      plant(root)
      const measure = measureWith(fsat())
      const before = openDescriptors()
      assert.isTrue((yield* measure(`${root}/run`, WIDE)).complete)
      assert.isFalse((yield* measure(`${root}/run`, { maxEntries: 3, maxDepth: 64 })).complete)
      assert.strictEqual(openDescriptors(), before)

      // An lstat failing mid-walk (EIO after a few files).
      let stats = 0
      const failing: Fsat = { ...fsat(), statAt: (fd, name, out) => (++stats > 3 ? -os.constants.errno.EIO : fsat().statAt(fd, name, out)) }
      const failed = yield* Effect.either(measureWith(failing)(`${root}/run`, WIDE))
      assert.strictEqual(failed._tag === "Left" ? failed.left.errno : "none", "EIO")
      assert.strictEqual(openDescriptors(), before)

      // Interrupted between slices (a 6,000-entry tree takes far longer than one slice).
      for (let i = 0; i < 2000; i++) fs.mkdirSync(`${root}/run/wide${i}/x/y`, { recursive: true })
      const fiber = yield* Effect.fork(measure(`${root}/run`, WIDE))
      yield* Effect.yieldNow()
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.strictEqual(openDescriptors(), before)
      fs.rmSync(root, { recursive: true })
    }))

  it("answers errnos instead of throwing, and never opens through a link", () => {
    const root = scratch()
    plant(root)
    fs.symlinkSync(`${root}/outside`, `${root}/link`)
    const native = fsat()
    const dirFd = native.openDir(root)
    assert.isAtLeast(dirFd, 0)
    assert.isBelow(native.openDirAt(dirFd, "link"), 0)
    assert.isBelow(native.openDirAt(dirFd, "absent"), 0)
    assert.isBelow(native.openDir(`${root}/link`), 0)
    const out = new Float64Array(2)
    assert.strictEqual(native.statAt(dirFd, "link", out), 0)
    assert.strictEqual(out[0], 3) // a symbolic link, not its target
    assert.strictEqual(native.statAt(dirFd, "absent", out), -os.constants.errno.ENOENT)
    // Malformed arguments are EINVAL answers, never a crash.
    const EINVAL = -os.constants.errno.EINVAL
    assert.strictEqual(native.statAt(dirFd, "outside", new Float64Array(1)), EINVAL)
    assert.strictEqual(native.openDirAt(dirFd, "n".repeat(5000)), EINVAL)
    assert.strictEqual(native.removeTree(root, "many" as unknown as number, 64, () => {}), EINVAL)
    assert.strictEqual(native.removeTree(root, 10, 64, "not a function" as unknown as () => void), EINVAL)
    assert.strictEqual(native.close(dirFd), 0)
    fs.rmSync(root, { recursive: true })
  })
})
