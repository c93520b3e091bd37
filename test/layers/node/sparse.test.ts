/**
 * node/sparse.ts on real files: with the native SEEK_DATA/SEEK_HOLE a hash or copy never reads a hole (the
 * bytes this process read, /proc/self/io `rchar`, stay near the data's); without it every block is read and
 * the all-zero ones are not written. Either way the bytes and SHA-256 are the source's.
 */
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { fsatAddon } from "../../../src/layers/node/fsat.js"
import { copySparse, copySparseSync, hashSparse, hashSparseSync, hasHoles, type SeekData } from "../../../src/layers/node/sparse.js"
import { scratchDirs } from "../../support/scratchDirs.js"

const scratch = scratchDirs()

const loaded = fsatAddon()
const nativeSeek: SeekData | undefined = "fsat" in loaded ? loaded.fsat.seek : undefined

/** Bytes this process has read through read(2) and friends so far. */
const readSoFar = (): number => Number(/rchar: (\d+)/.exec(fs.readFileSync("/proc/self/io", "utf8"))![1])
const procIo = fs.existsSync("/proc/self/io")

const MiB = 1 << 20

/** A file of `size` bytes: `pieces` at their offsets, holes between (ftruncate first). */
const sparseFile = (path: string, size: number, pieces: ReadonlyArray<readonly [number, Buffer]>) => {
  const fd = fs.openSync(path, "wx", 0o600)
  fs.ftruncateSync(fd, size)
  for (const [offset, data] of pieces) fs.writeSync(fd, data, 0, data.byteLength, offset)
  fs.closeSync(fd)
  const expected = Buffer.alloc(size)
  for (const [offset, data] of pieces) data.copy(expected, offset)
  return createHash("sha256").update(expected).digest("hex")
}

describe("copies and hashes that keep holes (node/sparse.ts)", () => {
  it("the native addon answers SEEK_DATA and SEEK_HOLE, -ENXIO past the last data", () => {
    assert.isDefined(nativeSeek, "the built addon has no seek: rebuild it (npm run install)")
    const path = NodePath.join(scratch("pi-sparse-"), "f")
    sparseFile(path, 10 * MiB, [[4 * MiB, randomBytes(100)]])
    const fd = fs.openSync(path, "r")
    try {
      assert.strictEqual(nativeSeek!(fd, 0, 0), 4 * MiB)
      assert.strictEqual(nativeSeek!(fd, 4 * MiB, 1), 4 * MiB + 4096)
      assert.strictEqual(nativeSeek!(fd, 5 * MiB, 0), -6) // ENXIO
      assert.strictEqual(nativeSeek!(fd, 0, 7 as 0), -22) // EINVAL: an unknown whence
      assert.isTrue(hasHoles(fs.fstatSync(fd)))
    } finally {
      fs.closeSync(fd)
    }
  })

  it.skipIf(!procIo)("with SEEK_DATA a hash and a copy read the data, never the holes; without it, everything", async () => {
    const dir = scratch("pi-sparse-")
    const path = NodePath.join(dir, "big")
    const size = 64 * MiB
    const sha256 = sparseFile(path, size, [[0, randomBytes(5000)], [size - 7000, randomBytes(7000)]])
    const fd = fs.openSync(path, "r")
    try {
      for (const [seek, readsAtMost, readsAtLeast] of [[nativeSeek, MiB, 0], [undefined, Infinity, size]] as const) {
        const before = readSoFar()
        const hash = createHash("sha256")
        assert.strictEqual(await hashSparse(fd, hash, seek), size)
        assert.strictEqual(hash.digest("hex"), sha256)
        const syncHash = createHash("sha256")
        assert.strictEqual(hashSparseSync(fd, syncHash, seek), size)
        assert.strictEqual(syncHash.digest("hex"), sha256)
        const to = NodePath.join(dir, `copy-${seek === undefined ? "portable" : "native"}`)
        const target = fs.openSync(to, "wx", 0o600)
        const copyHash = createHash("sha256")
        try {
          assert.strictEqual(await copySparse(fd, target, to, copyHash, seek), size)
        } finally {
          fs.closeSync(target)
        }
        const read = readSoFar() - before
        assert.isAtMost(read, readsAtMost)
        assert.isAtLeast(read, readsAtLeast)
        assert.strictEqual(copyHash.digest("hex"), sha256)
        assert.strictEqual(fs.statSync(to).size, size)
        assert.isAtMost(fs.statSync(to).blocks, fs.statSync(path).blocks + 16)
      }
    } finally {
      fs.closeSync(fd)
    }
  }, 60_000)

  it("without SEEK_DATA, only blocks that hold a non-zero byte are written, at their offsets", () => {
    const dir = scratch("pi-sparse-")
    const path = NodePath.join(dir, "mixed")
    // Data blocks with zeros between, a piece across a block boundary, and a written block of zeros (not kept).
    const pieces: ReadonlyArray<readonly [number, Buffer]> = [[100, randomBytes(10)], [8190, randomBytes(4)], [40_960, Buffer.alloc(4096)], [60_000, randomBytes(5000)]]
    const sha256 = sparseFile(path, 200_000, pieces)
    const source = fs.openSync(path, "r")
    const to = NodePath.join(dir, "copy")
    const target = fs.openSync(to, "wx", 0o600)
    try {
      const hash = createHash("sha256")
      assert.strictEqual(copySparseSync(source, target, to, hash, undefined), 200_000)
      assert.strictEqual(hash.digest("hex"), sha256)
    } finally {
      fs.closeSync(source)
      fs.closeSync(target)
    }
    assert.isTrue(fs.readFileSync(to).equals(fs.readFileSync(path)))
    // Blocks 0, 1, 2 (the piece at 8190 spans two), 14 and 15: five 4 KiB blocks.
    assert.isAtMost(fs.statSync(to).blocks, 5 * 8)
  })
})
