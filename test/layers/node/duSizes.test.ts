/**
 * One byte count (docs/work-runs.md "Retention"): on a real tree, the Node layer's measure and removal say what GNU `du`
 * says: disk usage as `du -s -B1` (and `du -sk` × 1024 rounded the same way), apparent size as `du -sb`,
 * each walker alike. The tree holds what a run may hold: files of assorted sizes (empty, below, at and above a
 * block, a sparse one), directories (one large enough to take more than a block), symlinks (short, and one
 * whose target is too long to live in its inode), a FIFO, a file with a second name inside the tree and one
 * linked from outside (each counted once, as du counts an inode once per walk).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { nodeFileSystemWith } from "../../../src/layers/NodeFileSystem.js"
import { availableWalkerKind } from "../../../src/layers/node/walkers.js"
import { FileSystem } from "../../../src/services/FileSystem.js"
import { du, duKiB } from "../../support/du.js"
import { scratchDirs } from "../../support/scratchDirs.js"

const scratch = scratchDirs()
const walkers = availableWalkerKind() === "native" ? (["native", "portable"] as const) : (["portable"] as const)
const WIDE = { maxEntries: 1_000_000, maxDepth: 64 }

/** A run-like tree under `root`/tree, and `root`/outside holding a file the tree links to. */
const plant = (root: string) => {
  const tree = `${root}/tree`
  fs.mkdirSync(`${tree}/src/deep/er`, { recursive: true })
  fs.mkdirSync(`${root}/outside`)
  const sizes = [0, 1, 100, 4095, 4096, 4097, 65_537, 1_048_576]
  sizes.forEach((size, i) => fs.writeFileSync(`${tree}/src/f${i}`, Buffer.alloc(size, i + 1)))
  fs.writeFileSync(`${tree}/src/deep/er/last`, "x".repeat(12_345))
  // A sparse file: 10 MiB long, 4 KiB of data.
  const fd = fs.openSync(`${tree}/sparse`, "w")
  fs.ftruncateSync(fd, 10 * 1024 * 1024)
  fs.writeSync(fd, Buffer.alloc(4096, 7), 0, 4096, 5 * 1024 * 1024)
  fs.closeSync(fd)
  // A directory with enough names to take more than one block.
  fs.mkdirSync(`${tree}/many`)
  for (let i = 0; i < 400; i++) fs.writeFileSync(`${tree}/many/entry-with-a-longish-name-${i}`, "")
  fs.symlinkSync("src/f1", `${tree}/short-link`)
  fs.symlinkSync(`${root}/outside/${"t".repeat(200)}`, `${tree}/long-link`)
  fs.symlinkSync("nowhere", `${tree}/dangling`)
  // Three names of one file inside the tree, and one of a file outside it.
  fs.linkSync(`${tree}/src/f7`, `${tree}/hard`)
  fs.linkSync(`${tree}/src/f7`, `${tree}/src/deep/hard-too`)
  fs.writeFileSync(`${root}/outside/big`, Buffer.alloc(200_000, 3))
  fs.linkSync(`${root}/outside/big`, `${tree}/from-outside`)
  const mkfifo = spawnSync("mkfifo", [`${tree}/fifo`])
  assert.strictEqual(mkfifo.status, 0, String(mkfifo.stderr))
  return tree
}

describe("the Node layer's sizes are du's (one byte count)", () => {
  for (const walker of walkers) {
    it.effect(`${walker} walker: measureTree and removeTree say du -s -B1 and du -sb, hard links once`, () =>
      Effect.gen(function*() {
        const files = yield* FileSystem
        const root = scratch("pi-du-sizes-")
        const tree = plant(root)
        const expected = du(tree)
        // Disk usage is what fills a disk: here far below the apparent size (the sparse file), and above the
        // files' bytes for the small ones (whole blocks).
        assert.isBelow(expected.bytes, expected.apparentBytes)
        const measure = yield* files.measureTree(tree, WIDE)
        assert.deepStrictEqual({ bytes: measure.bytes, apparentBytes: measure.apparentBytes }, expected)
        assert.isTrue(measure.complete)
        // `du -sk` rounds the same blocks up to KiB.
        assert.strictEqual(Math.ceil(measure.bytes / 1024) * 1024, duKiB(tree))
        // Every name a walk meets, f7's other names included: 9 at the top, src's 9, deep's 2, er's 1, many's 400.
        assert.strictEqual(measure.entries, 9 + 9 + 2 + 1 + 400)
        // The removal counts what it removed the same way.
        const removal = yield* files.removeTree(tree, WIDE)
        assert.deepStrictEqual(removal, { removedEntries: measure.entries, complete: true, removedBytes: expected.bytes, removedApparentBytes: expected.apparentBytes })
        assert.isFalse(fs.existsSync(tree))
        assert.strictEqual(fs.statSync(`${root}/outside/big`).nlink, 1)
      }).pipe(Effect.provide(nodeFileSystemWith(walker))))
  }
})
