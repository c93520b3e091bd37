/**
 * The sliced directory listing (src/layers/node/listing.ts): whatever slices it is cut into, it answers what
 * one `readdir` in name order answers (names lossless, types as lstat sees them), and the port's
 * `readDirectory` of a large directory, which takes it, agrees with the batched form, which does not.
 */
import * as fs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { nameOfBytes } from "../../../src/domain/NameBytes.js"
import { nodeFileSystemWith } from "../../../src/layers/NodeFileSystem.js"
import { startListing } from "../../../src/layers/node/listing.js"
import { type DirEntry, FileSystem } from "../../../src/services/FileSystem.js"
import { scratchDirs } from "../../support/scratchDirs.js"

const scratch = scratchDirs()

/** `count` entries with long names (a large directory: past the port's threshold), every fifth a directory, a few links. */
const largeDirectory = (count: number): string => {
  const dir = scratch("pi-listing-")
  for (let i = 0; i < count; i++) {
    // Not in name order on disk: the hash order of ext4 and the creation order of tmpfs both differ from it.
    const name = `entry-${String((i * 7919) % count).padStart(6, "0")}-${"x".repeat(40)}`
    if (i % 5 === 0) fs.mkdirSync(`${dir}/${name}`)
    else if (i % 97 === 0) fs.symlinkSync("elsewhere", `${dir}/${name}`)
    else fs.writeFileSync(`${dir}/${name}`, "")
  }
  return dir
}

/** One readdir, the way the port types entries, in name order. */
const expected = (dir: string): Array<DirEntry> =>
  fs.readdirSync(dir, { withFileTypes: true })
    .map((d): DirEntry => ({ name: d.name, type: d.isFile() ? "File" : d.isDirectory() ? "Directory" : d.isSymbolicLink() ? "SymbolicLink" : "Other" }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

/** Drive a listing to its end, each step given a deadline already past (the smallest slices it makes). */
const inSmallestSlices = (dir: string) => {
  const listing = startListing(dir)
  let steps = 1
  try {
    while (!listing.step(Number.NEGATIVE_INFINITY)) steps++
    return { entries: listing.result(), steps }
  } finally {
    listing.close()
  }
}

describe("the sliced directory listing", () => {
  it("answers one readdir's entries in name order, however small its slices", () => {
    const dir = largeDirectory(5000)
    const { entries, steps } = inSmallestSlices(dir)
    assert.deepStrictEqual(entries, expected(dir))
    // Read a few dozen entries per slice, then merged a slice at a time: many slices, none of them the whole.
    assert.isAbove(steps, 5000 / 64)
    const straight = startListing(dir)
    while (!straight.step(Number.POSITIVE_INFINITY));
    assert.deepStrictEqual(straight.result(), entries)
    straight.close()
  })

  it("lists an empty directory, and fails to open a missing one as readdir does", () => {
    const dir = scratch("pi-listing-")
    assert.deepStrictEqual(inSmallestSlices(dir).entries, [])
    assert.throws(() => startListing(`${dir}/absent`), /ENOENT/)
  })

  it("keeps a name that is not UTF-8 (listed again as bytes) beside one that really holds U+FFFD", () => {
    const dir = largeDirectory(300)
    const lossy = Buffer.from([0x6e, 0xff, 0x6d])
    fs.writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), lossy]), "")
    fs.writeFileSync(`${dir}/real-\ufffd`, "")
    const names = inSmallestSlices(dir).entries.map((e) => e.name)
    const onDisk = fs.readdirSync(dir, { encoding: "buffer" }).map((b) => nameOfBytes(b))
    assert.deepStrictEqual(names, [...onDisk].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
    assert.include(names, nameOfBytes(lossy))
    assert.include(names, "real-\ufffd")
  })

  it.effect("is what the port's readDirectory answers for a large directory, as its batched form does", () =>
    Effect.gen(function*() {
      const port = yield* FileSystem
      const dir = largeDirectory(5000)
      assert.isAbove(fs.lstatSync(dir).size, 64 * 1024, "large enough for the sliced listing")
      const listed = yield* port.readDirectory(dir)
      assert.deepStrictEqual(listed, expected(dir))
      const batched = yield* port.readDirectoryEach!([dir])
      assert.deepStrictEqual(batched, [Either.right(listed)])
      fs.symlinkSync(dir, `${dir}-link`)
      const refused = yield* Effect.flip(port.readDirectory(`${dir}-link`))
      assert.strictEqual(refused.errno, "ENOTDIR")
      fs.unlinkSync(`${dir}-link`)
    }).pipe(Effect.provide(nodeFileSystemWith("portable"))))
})
