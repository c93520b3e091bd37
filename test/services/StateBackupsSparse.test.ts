/**
 * Sparse files in state snapshots (Node layer, real files; docs/snapshots.md "State snapshots"): a 1 GiB file with a few
 * KiB of data at both ends allocates about what its source allocates in the snapshot and again on restore,
 * with the same bytes and SHA-256; a dense file stays dense. With the native addon the holes are found with
 * SEEK_DATA/SEEK_HOLE; with the portable walker the all-zero blocks of a sparse source are not written.
 */
import { spawnSync } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import * as nfs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { nodeFileSystemWith, type Walker } from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { StateBackups } from "../../src/services/StateBackups.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

const GiB = 1 << 30
const HEAD = randomBytes(4096)
const TAIL = randomBytes(3000)

/** ftruncate to `size`, then the data at both ends: everything between is a hole. */
const writeSparse = (path: string, size: number) => {
  nfs.mkdirSync(NodePath.dirname(path), { recursive: true })
  const fd = nfs.openSync(path, "wx", 0o640)
  try {
    nfs.ftruncateSync(fd, size)
    nfs.writeSync(fd, HEAD, 0, HEAD.byteLength, 0)
    nfs.writeSync(fd, TAIL, 0, TAIL.byteLength, size - TAIL.byteLength)
  } finally {
    nfs.closeSync(fd)
  }
}

/** SHA-256 of what `writeSparse` wrote, from memory (the zeros hashed, never read). */
const sparseSha256 = (size: number) => {
  const hash = createHash("sha256").update(HEAD)
  const zeros = Buffer.alloc(1 << 20)
  for (let left = size - HEAD.byteLength - TAIL.byteLength; left > 0; left -= zeros.byteLength) hash.update(zeros.subarray(0, Math.min(left, zeros.byteLength)))
  return hash.update(TAIL).digest("hex")
}

/** Allocated KiB of a tree, as `du` counts them. */
const du = (path: string) => {
  const result = spawnSync("du", ["-sk", path], { encoding: "utf8" })
  assert.strictEqual(result.status, 0, result.stderr)
  return Number(result.stdout.split("\t")[0])
}

const allocated = (path: string) => nfs.statSync(path).blocks * 512

/** Both ends of a file equal what was written there, and its length. */
const assertEnds = (path: string, size: number) => {
  const fd = nfs.openSync(path, "r")
  try {
    assert.strictEqual(nfs.fstatSync(fd).size, size)
    const head = Buffer.alloc(HEAD.byteLength)
    const tail = Buffer.alloc(TAIL.byteLength)
    nfs.readSync(fd, head, 0, head.byteLength, 0)
    nfs.readSync(fd, tail, 0, tail.byteLength, size - TAIL.byteLength)
    assert.isTrue(head.equals(HEAD) && tail.equals(TAIL), `${path}: the data at its ends differs`)
  } finally {
    nfs.closeSync(fd)
  }
}

const withBackups = <A, E>(walker: Walker, agent: string, root: string, use: (b: StateBackups["Type"]) => Effect.Effect<A, E>) =>
  Effect.provide(
    Effect.flatMap(StateBackups, use),
    StateBackups.layerWith({ root }).pipe(Layer.provideMerge(AgentDir.layerWith(agent)), Layer.provideMerge(Layer.merge(nodeFileSystemWith(walker), NodeHost.layer)))
  )

describe("state snapshots keep holes (Node layer)", () => {
  // The native walker over 1 GiB (SEEK_DATA/SEEK_HOLE: the holes are never read); the portable one over
  // 64 MiB (it reads every block to find the zero ones: the same rule, at a size that stays quick).
  for (const [walker, size] of [["native", GiB], ["portable", 64 << 20]] as const) {
    it.live(`${walker} walker: a ${size / (1 << 20)} MiB sparse file is a few KiB in the snapshot and after restore, with its bytes and hash; a dense file stays dense`, () =>
      Effect.gen(function*() {
        const base = scratch("pi-snap-sparse-")
        const agent = NodePath.join(base, "agent")
        const root = NodePath.join(base, "backups")
        const live = NodePath.join(agent, "state/disk.img")
        writeSparse(live, size)
        const dense = NodePath.join(agent, "state/dense.bin")
        // Written whole, zeros included: a dense file with a zero run is copied as it is, allocated.
        nfs.writeFileSync(dense, Buffer.concat([randomBytes(100_000), Buffer.alloc(300_000), randomBytes(100_000)]))
        const sourceAllocated = allocated(live)
        assert.isBelow(sourceAllocated, 1 << 20, "the file system made the source dense; nothing to test here")
        const sha256 = sparseSha256(size)

        const created = yield* withBackups(walker, agent, root, (b) => b.create())
        const copy = NodePath.join(root, created.id, "agent/state/disk.img")
        const entry = JSON.parse(nfs.readFileSync(NodePath.join(root, created.id, "manifest.json"), "utf8")).entries
          .find((e: { path: string }) => e.path === "agent/state/disk.img")
        assert.strictEqual(entry.size, size)
        assert.strictEqual(entry.sha256, sha256)
        assertEnds(copy, size)
        // About what the source allocates: a block of slack per piece of data.
        assert.isAtMost(allocated(copy), sourceAllocated + 2 * 4096)
        assert.isBelow(du(NodePath.join(root, created.id)), 2048)
        assert.isAtLeast(allocated(NodePath.join(root, created.id, "agent/state/dense.bin")), 500_000)
        assert.isTrue((yield* withBackups(walker, agent, root, (b) => b.verify())).ok)

        nfs.unlinkSync(live)
        nfs.writeFileSync(dense, "changed")
        const restored = yield* withBackups(walker, agent, root, (b) => b.restore(created.id))
        assert.include(restored.restored, live)
        assertEnds(live, size)
        assert.isAtMost(allocated(live), sourceAllocated + 2 * 4096)
        assert.isBelow(du(NodePath.join(agent, "state")), 2048 + du(NodePath.join(agent, "state/restore-aside")))
        assert.isAtLeast(allocated(dense), 500_000)
        assert.strictEqual(createHash("sha256").update(nfs.readFileSync(dense)).digest("hex"), JSON.parse(nfs.readFileSync(NodePath.join(root, created.id, "manifest.json"), "utf8")).entries.find((e: { path: string }) => e.path === "agent/state/dense.bin").sha256)
      }), 120_000)
  }
})
