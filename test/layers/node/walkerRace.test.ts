/**
 * No walker the package can use follows a directory swapped for a symlink (docs/safety.md "How runs stay safe":
 * which walkers may delete). The removal race runs against every walker (native: C on the thread pool;
 * portable: /proc/self/fd on the remover thread), the native measure's race on the thread pool, each with a
 * real concurrent swap, and each proves the window was hit: a swapped directory had been listed by the walk
 * as a directory and was met as a link. Then the portable walker's own cases: the same swap made at the
 * exact point (after its parent's listing), for removal and measuring, and its refusal without /proc.
 * Every walker and measure also runs beside a real `rm -rf` of the same tree: a directory the other remover
 * takes between the walk's open and its listing is gone (or empty), never a failure. Last, the way back up
 * through a chain deeper than the walks' window of descriptors (domain/WalkDepth.ts): a directory the walk
 * left is swapped while it works below it; the walk stops (ESTALE) rather than go on through another one.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import { MOVED_DIRECTORY_DETAIL, WALK_WINDOW } from "../../../src/domain/WalkDepth.js"
import { type Fsat, loadFsat } from "../../../src/layers/node/fsat.js"
import { makeNativeMeasure } from "../../../src/layers/node/nativeMeasure.js"
import { makePathWalker } from "../../../src/layers/node/pathWalk.js"
import { runWalk } from "../../../src/layers/node/support.js"
import { makeWalks } from "../../../src/layers/node/walkers.js"
import { du } from "../../support/du.js"

/** Whether this process has a descriptor open on `path` (the walk's thread, say). */
const holdsDescriptorOn = (path: string): boolean =>
  fs.readdirSync("/proc/self/fd").some((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`) === path
    } catch {
      return false // closed since the listing
    }
  })

const loadedFsat = (): Fsat => {
  const loaded = loadFsat()
  if (!("fsat" in loaded)) throw new Error(`native walker ${loaded.why}`)
  return loaded.fsat
}

const WIDE = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }
const DIRS = 20
const FILES = 25

const scratch = () => fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-walker-race-"))

/** What a measure says of entries, files and completeness (its sizes depend on what each race made of a directory). */
const shape = (m: { readonly fileBytes: number; readonly entries: number; readonly complete: boolean }) => ({ fileBytes: m.fileBytes, entries: m.entries, complete: m.complete })

/** run/d0…d19 with 40 files each; outside/ with canaries (and a nested one), which must never change. */
const plant = (root: string) => {
  for (let d = 0; d < DIRS; d++) {
    fs.mkdirSync(`${root}/run/d${d}`, { recursive: true })
    for (let f = 0; f < FILES; f++) fs.writeFileSync(`${root}/run/d${d}/f${f}`, "x")
  }
  fs.mkdirSync(`${root}/outside/deep`, { recursive: true })
  for (let f = 0; f < FILES; f++) fs.writeFileSync(`${root}/outside/f${f}`, "outside")
  fs.writeFileSync(`${root}/outside/deep/canary`, "keep me")
}

const assertOutsideUntouched = (root: string) => {
  for (let f = 0; f < FILES; f++) assert.strictEqual(fs.readFileSync(`${root}/outside/f${f}`, "utf8"), "outside")
  assert.strictEqual(fs.readFileSync(`${root}/outside/deep/canary`, "utf8"), "keep me")
}

/** Whether a directory of the run still holds all its files (false once the walk began on it, or it is gone). */
const isWhole = (dir: string): boolean => {
  try {
    return fs.readdirSync(dir).length === FILES
  } catch {
    return false
  }
}

/** Swap run/<name> for a link to outside/ (the directory moves beside the run). */
const swap = (root: string, name: string) => {
  fs.renameSync(`${root}/run/${name}`, `${root}/moved-${name}`)
  fs.symlinkSync(`${root}/outside`, `${root}/run/${name}`)
}

/**
 * The order each walker visits a directory in: the C walk in `readdir` order (what `opendir` yields), the
 * portable one in `readdirSync` order, which libuv sorts by name.
 */
const listingOrder = {
  native: (dir: string): Array<string> => {
    const handle = fs.opendirSync(dir)
    const names: Array<string> = []
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) names.push(entry.name)
    handle.closeSync()
    return names
  },
  portable: (dir: string): Array<string> => fs.readdirSync(dir)
}

describe.each(["native", "portable"] as const)("the %s walker under a racing symlink swap", (kind) => {
  // Live clock: the race is against a real thread.
  it.live("a directory swapped for a link after the walk listed it: the link goes, nothing outside is touched", () =>
    Effect.scoped(Effect.gen(function*() {
      const { removeTree } = yield* makeWalks(kind, 1)
      let windowHits = 0
      for (let round = 0; round < 4 && windowHits === 0; round++) {
        const root = scratch()
        plant(root)
        // The walk lists run/ in this order (the same directory, unchanged) and deletes in it.
        const order = listingOrder[kind](`${root}/run`)
        const removal = yield* Effect.fork(removeTree(`${root}/run`, WIDE))
        yield* Effect.yieldNow() // the fiber hands the walk to its thread
        // Wait here (busy: the walk runs on another thread) until it has begun deleting in the first
        // directory of its listing: from then on it holds its listing of run/. At once, swap the directories
        // it reaches last, last first, while it works on the first.
        const late = yield* Effect.sync(() => {
          const deadline = performance.now() + 10_000
          while (performance.now() < deadline && isWhole(`${root}/run/${order[0]}`)) {
            // spin
          }
          const swapped: Array<string> = []
          for (const name of order.slice(-8).reverse()) {
            try {
              swap(root, name)
              swapped.push(name)
            } catch {
              // The walk got there first.
            }
          }
          return swapped
        })
        const done = yield* removal.await
        if (done._tag === "Success") {
          // The walk visited every listed entry; a late directory still whole was never entered: the walk met
          // the link where its listing had a directory (the window), and unlinked the link only.
          for (const name of late) if (isWhole(`${root}/moved-${name}`)) windowHits++
        } else {
          // The walk was inside a directory when it was swapped (its rmdir meets the link): it fails like for
          // any concurrent change, and the next removal finishes.
          assert.match(String(done.cause), /ENOTDIR|ENOTEMPTY/)
          yield* removeTree(`${root}/run`, WIDE)
        }
        assert.isFalse(fs.existsSync(`${root}/run`), "the run, links included, is gone")
        assertOutsideUntouched(root)
        fs.rmSync(root, { recursive: true, force: true })
      }
      assert.isAbove(windowHits, 0, "some swap landed between the walk's listing and its reaching the directory")
    })))
})

/** Directories of the tree a concurrent `rm -rf` races for: run/d<i>/e/f, three entries each, a 1-byte file. */
const RACED = 600

/**
 * Plant the raced tree, start `rm -rf` on it and, once rm has begun (a top directory gone), run `walk` on
 * the same tree; its outcome after rm has exited. The scratch root is removed whatever happens.
 */
const beside = <A, E>(walk: (run: string) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const root = scratch()
    try {
      for (let d = 0; d < RACED; d++) {
        fs.mkdirSync(`${root}/run/d${d}/e`, { recursive: true })
        fs.writeFileSync(`${root}/run/d${d}/e/f`, "x")
      }
      const whole = du(`${root}/run`)
      const rm = spawn("rm", ["-rf", `${root}/run`])
      // Listening from the start; rm's own exit status is not ours to judge (a racing rm may complain).
      const exited = new Promise<void>((resolve, reject) => {
        rm.on("exit", () => resolve())
        rm.on("error", reject)
      })
      const begun = () => {
        try {
          return fs.readdirSync(`${root}/run`).length < RACED
        } catch {
          return true
        }
      }
      const deadline = performance.now() + 10_000
      while (!begun() && performance.now() < deadline) {
        // spin: rm runs in its own process
      }
      const outcome = yield* Effect.either(walk(`${root}/run`))
      yield* Effect.promise(() => exited)
      return { outcome, gone: !fs.existsSync(`${root}/run`), whole }
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

describe.each(["native", "portable"] as const)("the %s walker beside a concurrent rm -rf of the same tree", (kind) => {
  // Live clock: the race is against a real process.
  it.live("directories the other remover takes between their open and their listing are gone, not a failure", () =>
    Effect.scoped(Effect.gen(function*() {
      const { removeTree } = yield* makeWalks(kind, 1)
      let shared = 0
      for (let round = 0; round < 12 && shared < 3; round++) {
        const { outcome, gone, whole } = yield* beside((run) => removeTree(run, WIDE))
        assert.strictEqual(outcome._tag, "Right", `round ${round}: ${outcome._tag === "Left" ? outcome.left.message : ""}`)
        assert.isTrue(gone)
        if (outcome._tag !== "Right") continue
        // Never more than was there; each entry counted by the remover that took it.
        assert.isAtMost(outcome.right.removedEntries, RACED * 3)
        assert.isAtMost(outcome.right.removedBytes, whole.bytes)
        assert.isAtMost(outcome.right.removedApparentBytes, whole.apparentBytes)
        assert.isTrue(outcome.right.complete)
        // Both removers had a share of the tree: the walk ran while rm did.
        if (outcome.right.removedEntries > 0 && outcome.right.removedEntries < RACED * 3) shared++
      }
      assert.isAtLeast(shared, 3, "rounds where the walk and rm -rf both removed part of the tree")
    })))
})

describe.each(["native", "portable"] as const)("the %s measure beside a concurrent rm -rf of the same tree", (kind) => {
  // Live clock: the race is against a real process.
  it.live("directories removed between their open and their listing count as the empty directories they were", () =>
    Effect.scoped(Effect.gen(function*() {
      // The native measure on the thread pool (the calling-thread pass answers "too big"), where rm runs beside it.
      const measure = kind === "native" ? makeNativeMeasure({ ...loadedFsat(), measureTreeSync: () => 1 })! : (yield* makeWalks(kind, 1)).measureTree
      let shared = 0
      for (let round = 0; round < 12 && shared < 3; round++) {
        const { outcome, whole } = yield* beside((run) => measure(run, WIDE))
        if (outcome._tag === "Left") {
          // Only the root itself gone before the walk opened it may fail (nothing was there to measure).
          assert.match(outcome.left.message, /ENOENT.*\/run'/, `round ${round}: ${outcome.left.message}`)
          continue
        }
        // Never more than was there, each file one byte; less when rm got there first.
        assert.isAtMost(outcome.right.entries, RACED * 3)
        assert.isAtMost(outcome.right.fileBytes, RACED)
        assert.isAtMost(outcome.right.bytes, whole.bytes)
        assert.isAtMost(outcome.right.apparentBytes, whole.apparentBytes)
        if (outcome.right.entries > 0 && outcome.right.entries < RACED * 3) shared++
      }
      assert.isAtLeast(shared, 3, "rounds where the measure saw part of the tree while rm -rf removed the rest")
    })))
})

describe("the native measure under a racing symlink swap", () => {
  // Live clock: the race is against a real thread.
  it.live("a directory swapped for a link after the walk listed its parent counts as the link, never its target's contents", () =>
    Effect.gen(function*() {
      // Every tree on the thread pool (the calling-thread pass always answers "too big"): the swaps run beside it.
      const measure = makeNativeMeasure({ ...loadedFsat(), measureTreeSync: () => 1 })!
      let windowHits = 0
      for (let round = 0; round < 4 && windowHits === 0; round++) {
        const root = scratch()
        plant(root)
        fs.writeFileSync(`${root}/outside/big`, "y".repeat(10_000))
        const order = listingOrder.native(`${root}/run`)
        // The walk lingers in the first directory it enters; it holds a descriptor on it only after it read
        // its listing of run/ (seen in /proc/self/fd).
        const first = `${root}/run/${order[0]}`
        for (let f = 0; f < 3000; f++) fs.writeFileSync(`${first}/g${f}`, "")
        const walk = yield* Effect.fork(measure(`${root}/run`, WIDE))
        yield* Effect.yieldNow() // the fiber hands the walk to its thread
        const late = yield* Effect.sync(() => {
          const deadline = performance.now() + 10_000
          while (performance.now() < deadline && !holdsDescriptorOn(first)) {
            // spin
          }
          const swapped: Array<string> = []
          for (const name of order.slice(-8).reverse()) {
            swap(root, name)
            swapped.push(name)
          }
          return swapped
        })
        assert.strictEqual(late.length, 8)
        const result = yield* Fiber.join(walk)
        // Each late directory was met either as the directory it was (the walk got there before its swap,
        // or inside it: its own files) or as the link (the window): one entry, nothing behind it counted.
        const all = DIRS * (FILES + 1) + 3000
        const asLinks = (all - result.entries) / FILES
        assert.isTrue(Number.isInteger(asLinks) && asLinks >= 0 && asLinks <= late.length, `entries ${result.entries}`)
        assert.deepStrictEqual(shape(result), { fileBytes: (DIRS - asLinks) * FILES, entries: all - asLinks * FILES, complete: true })
        windowHits += asLinks
        assertOutsideUntouched(root)
        fs.rmSync(root, { recursive: true, force: true })
      }
      assert.isAbove(windowHits, 0, "some swap landed between the walk's listing and its reaching the directory")
    }))
})

describe("the portable walker", () => {
  /** A walker whose listing of run/ swaps `name` right after reading it: the window, every time. */
  const swappingAfterListing = (root: string, name: string) => {
    let swapped = false
    return makePathWalker({
      list: (path) => {
        const entries = fs.readdirSync(path, { withFileTypes: true })
        if (!swapped && entries.some((e) => e.name === name && e.isDirectory())) {
          swapped = true
          swap(root, name)
        }
        return entries
      }
    })
  }

  it.effect("removal: a directory swapped for a link after its parent's listing is unlinked, never followed", () =>
    Effect.gen(function*() {
      const root = scratch()
      plant(root)
      const before = du(`${root}/run`)
      const walker = swappingAfterListing(root, "d3")
      const removal = yield* runWalk("removeTree", `${root}/run`, () => walker.startRemoval(`${root}/run`, WIDE))
      // Every entry but d3's files (never reached: d3 was a link by then), the link counted as one; the
      // sizes are those of what was unlinked (no more than the tree's without d3's files: never the link's target).
      assert.deepStrictEqual([removal.removedEntries, removal.complete], [DIRS * (FILES + 1) - FILES, true])
      assert.isAtLeast(removal.removedApparentBytes, (DIRS - 1) * FILES)
      assert.isAtMost(removal.removedApparentBytes, before.apparentBytes)
      assert.isFalse(fs.existsSync(`${root}/run`))
      assert.strictEqual(fs.readdirSync(`${root}/moved-d3`).length, FILES)
      assertOutsideUntouched(root)
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("measuring: the swapped directory counts as the link it became, never its target's contents", () =>
    Effect.gen(function*() {
      const root = scratch()
      plant(root)
      fs.writeFileSync(`${root}/outside/big`, "y".repeat(10_000))
      const before = du(`${root}/run`)
      const walker = swappingAfterListing(root, "d3")
      const measure = yield* runWalk("measureTree", `${root}/run`, () => walker.startMeasure(`${root}/run`, WIDE))
      assert.deepStrictEqual(shape(measure), { fileBytes: (DIRS - 1) * FILES, entries: DIRS * (FILES + 1) - FILES, complete: true })
      assert.isAtMost(measure.apparentBytes, before.apparentBytes, "never what the link points at")
      fs.rmSync(root, { recursive: true, force: true })
    }))

  it.effect("without /proc/self/fd it refuses to remove (typed, nothing deleted) and still measures", () =>
    Effect.gen(function*() {
      const root = scratch()
      plant(root)
      const walker = makePathWalker({ procFd: false })
      const refused = yield* Effect.flip(runWalk("removeTree", `${root}/run`, () => walker.startRemoval(`${root}/run`, WIDE)))
      assert.deepStrictEqual([refused._tag, refused.errno, refused.method, refused.path], ["FileSystemError", "ENOTSUP", "removeTree", `${root}/run`])
      assert.match(refused.message, /no walker here can delete a tree safely/)
      assert.strictEqual(fs.readdirSync(`${root}/run`).length, DIRS)
      const measure = yield* runWalk("measureTree", `${root}/run`, () => walker.startMeasure(`${root}/run`, WIDE))
      assert.deepStrictEqual(measure, { ...du(`${root}/run`), fileBytes: DIRS * FILES, entries: DIRS * (FILES + 1), complete: true })
      fs.rmSync(root, { recursive: true, force: true })
    }))
})

/**
 * The way back up through a chain deeper than the walks' window (domain/WalkDepth.ts): run/c1/…/c<LEVELS>, a
 * file in each level, files b0… in the last. While the walk works in the bottom, run/c1/c2/c3 has long
 * left its window (no descriptor, no listing: it is re-opened as its child's ".." on the way back up).
 */
const LEVELS = 2 * WALK_WINDOW + 4
const BOTTOM = 2000
/** The level swapped while the walk is below it. */
const LEFT = 3

const chainLevel = (root: string, depth: number) => [`${root}/run`, ...Array.from({ length: depth }, (_, k) => `c${k + 1}`)].join("/")

/** The chain with `bottom` files in its last level (the native walk lingers there while the swap is made). */
const plantChain = (root: string, bottomFiles = BOTTOM): string => {
  const bottom = chainLevel(root, LEVELS)
  fs.mkdirSync(bottom, { recursive: true })
  for (let depth = 0; depth <= LEVELS; depth++) fs.writeFileSync(`${chainLevel(root, depth)}/f`, "x")
  for (let b = 0; b < bottomFiles; b++) fs.writeFileSync(`${bottom}/b${b}`, "")
  // outside/ (whose names sort after "c3", where a listing of run/c1/c2 would go on) must never change.
  fs.mkdirSync(`${root}/outside/deep`, { recursive: true })
  for (let f = 0; f < FILES; f++) fs.writeFileSync(`${root}/outside/f${f}`, "outside")
  fs.writeFileSync(`${root}/outside/deep/canary`, "keep me")
  return bottom
}

/**
 * Move run/c1/c2/c3 into outside/ (as outside/moved) and put a link to outside/, or another directory holding a
 * canary, where it was. Coming back up from it, ".." is outside/ now, not run/c1/c2.
 */
const swapLeft = (root: string, into: "link" | "directory") => {
  const left = chainLevel(root, LEFT)
  fs.renameSync(left, `${root}/outside/moved`)
  if (into === "link") {
    fs.symlinkSync(`${root}/outside`, left)
  } else {
    fs.mkdirSync(left)
    fs.writeFileSync(`${left}/canary`, "keep me")
  }
}

/**
 * Where these chains go: `root` two levels below a scratch directory, beside a canary. A walk that went back
 * up through the wrong ".." (the defect these tests guard against) climbs one level per directory above c3
 * (c2, c1, run): from outside/ to `root` and its parent `jail/`, never higher, so even that defect cannot
 * reach anything but this test's own scratch directory. `done` removes it all.
 */
const jailed = () => {
  const top = scratch()
  const root = `${top}/jail/root`
  fs.mkdirSync(root, { recursive: true })
  fs.writeFileSync(`${top}/jail/canary`, "keep me")
  return {
    root,
    assertJailUntouched: () => assert.deepStrictEqual([fs.readdirSync(`${top}/jail`).sort(), fs.readFileSync(`${top}/jail/canary`, "utf8")], [["canary", "root"], "keep me"]),
    done: () => fs.rmSync(top, { recursive: true, force: true })
  }
}

/** What the swap put at run/c1/c2/c3 is as it was put there. */
const assertSwappedInUntouched = (root: string, into: "link" | "directory") => {
  const left = chainLevel(root, LEFT)
  if (into === "link") assert.strictEqual(fs.readlinkSync(left), `${root}/outside`)
  else assert.deepStrictEqual(fs.readdirSync(left), ["canary"])
}

/** The walk stopped where it came back up to a directory that was not the one it left, naming it. */
const assertStoppedAtMove = (error: { readonly errno: string; readonly method: string; readonly path: string }, root: string, method: string) =>
  assert.deepStrictEqual([error.errno, error.method, error.path], ["ESTALE", method, chainLevel(root, LEFT - 1)])

describe("the portable walker coming back up to a directory that left its window", () => {
  /** A walker that swaps run/c1/c2/c3 as it lists the bottom of the chain: deep below it, every time. */
  const swappingAtBottom = (root: string, into: "link" | "directory") => {
    let swapped = false
    return makePathWalker({
      list: (path) => {
        const entries = fs.readdirSync(path, { withFileTypes: true })
        if (!swapped && entries.some((e) => e.name === "b0")) {
          swapped = true
          swapLeft(root, into)
        }
        return entries
      }
    })
  }

  for (const into of ["link", "directory"] as const) {
    it.effect(`removal: swapped for a ${into} meanwhile, it is never entered nor removed, nor is the directory ".." leads to now`, () =>
      Effect.gen(function*() {
        const { root, assertJailUntouched, done } = jailed()
        plantChain(root, 1)
        const walker = swappingAtBottom(root, into)
        const failed = yield* Effect.flip(runWalk("removeTree", `${root}/run`, () => walker.startRemoval(`${root}/run`, WIDE)))
        assertJailUntouched()
        assertOutsideUntouched(root)
        assertStoppedAtMove(failed, root, "removeTree")
        assert.strictEqual(failed.detail, MOVED_DIRECTORY_DETAIL)
        assertSwappedInUntouched(root, into)
        // What it did remove is what was below the directory it left, wherever that went.
        assert.deepStrictEqual(fs.readdirSync(`${root}/outside/moved`), [])
        // The next walk starts again from the root: the run goes (a link unlinked, never followed).
        assert.isTrue((yield* runWalk("removeTree", `${root}/run`, () => makePathWalker().startRemoval(`${root}/run`, WIDE))).complete)
        assert.isFalse(fs.existsSync(`${root}/run`))
        assertOutsideUntouched(root)
        done()
      }))
  }

  it.effect("measuring: the directory \"..\" leads to now is never counted", () =>
    Effect.gen(function*() {
      const { root, done } = jailed()
      plantChain(root, 1)
      const walker = swappingAtBottom(root, "link")
      const failed = yield* Effect.flip(runWalk("measureTree", `${root}/run`, () => walker.startMeasure(`${root}/run`, WIDE)))
      assertStoppedAtMove(failed, root, "measureTree")
      assertSwappedInUntouched(root, "link")
      done()
    }))
})

/**
 * Look for `ready` between turns of the event loop while `walk` runs on the thread pool, then `act` (its answer:
 * whether the swap was made); false when the walk ended first or 10 s passed. The loop turns (never a blocking
 * spin): the forked fiber hands its walk to the thread pool on a turn of its own, and a spin that held the
 * loop could start before it did and wait out its deadline with nothing running.
 */
const untilWhileRunning = (
  walk: Fiber.RuntimeFiber<unknown, unknown>,
  ready: () => boolean,
  act: () => boolean | void
): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const deadline = performance.now() + 10_000
    while (performance.now() < deadline && walk.unsafePoll() === null) {
      if (ready()) return act() !== false
      yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
    }
    return false
  })

describe("the native walker coming back up to a directory that left its window", () => {
  // Live clock: the race is against a real thread.
  for (const into of ["link", "directory"] as const) {
    it.live(`removal: swapped for a ${into} meanwhile, it is never entered nor removed, nor is the directory ".." leads to now`, () =>
      Effect.scoped(Effect.gen(function*() {
        const { removeTree } = yield* makeWalks("native", 1)
        let hits = 0
        for (let round = 0; round < 4 && hits === 0; round++) {
          const { root, assertJailUntouched, done } = jailed()
          const bottom = plantChain(root)
          const removal = yield* Effect.fork(removeTree(`${root}/run`, WIDE))
          // Once it deletes in the bottom (16 levels below c3, which has left its window), swap c3; a walk that got
          // past the bottom first (the bottom gone or empty) is tried again.
          const remaining = () => {
            try {
              return fs.readdirSync(bottom).length
            } catch {
              return 0
            }
          }
          const swapped = yield* untilWhileRunning(removal, () => remaining() < BOTTOM, () => {
            if (remaining() === 0) return false
            swapLeft(root, into)
            return true
          })
          const outcome = yield* Effect.either(Fiber.join(removal))
          assertJailUntouched()
          if (swapped) {
            assert.strictEqual(outcome._tag, "Left", "the walk came back up to c2 through the moved c3")
            if (outcome._tag === "Left") assertStoppedAtMove(outcome.left, root, "removeTree")
            assertOutsideUntouched(root)
            assertSwappedInUntouched(root, into)
            assert.deepStrictEqual(fs.readdirSync(`${root}/outside/moved`), [])
            assert.isTrue((yield* removeTree(`${root}/run`, WIDE)).complete)
            assert.isFalse(fs.existsSync(`${root}/run`))
            assertOutsideUntouched(root)
            hits++
          }
          done()
        }
        assert.isAbove(hits, 0, "a swap landed while the walk was below the level it swapped")
      })))
  }

  it.live("measuring: the directory \"..\" leads to now is never counted", () =>
    Effect.gen(function*() {
      // On the thread pool (the calling-thread pass always answers "too big"): the swap runs beside it.
      const measure = makeNativeMeasure({ ...loadedFsat(), measureTreeSync: () => 1 })!
      let hits = 0
      for (let round = 0; round < 5 && hits === 0; round++) {
        const { root, done } = jailed()
        const bottom = plantChain(root)
        const walk = yield* Effect.fork(measure(`${root}/run`, WIDE))
        // Once it holds the bottom open (it lingers there, on BOTTOM files), swap c3; a walk already gone past
        // the bottom measures whole, and that round is tried again.
        const swapped = yield* untilWhileRunning(walk, () => holdsDescriptorOn(bottom), () => swapLeft(root, "link"))
        const outcome = yield* Effect.either(Fiber.join(walk))
        if (swapped) {
          // Below c3 when it moved, the walk comes back up through it.
          assert.strictEqual(outcome._tag, "Left", "the walk came back up to c2 through the moved c3")
          if (outcome._tag === "Left") assertStoppedAtMove(outcome.left, root, "measureTree")
          assertSwappedInUntouched(root, "link")
          hits++
        } else {
          assert.deepStrictEqual(Either.map(outcome, shape), Either.right({ fileBytes: LEVELS + 1, entries: 2 * LEVELS + 1 + BOTTOM, complete: true }))
        }
        done()
      }
      assert.isAbove(hits, 0, "a swap landed while the walk was below the level it swapped")
    }))
})
