import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, FastCheck, Layer } from "effect"
import type { FileSystemErrorReason } from "../../src/domain/Errors.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import * as MemoryFileSystem from "../../src/layers/MemoryFileSystem.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { fileSystemConformance, Scratch } from "./conformance.js"

/** A fresh world with /scratch on device 1 and /mnt/b on device 2; `mount` gives devices 3, 4 … */
const conformanceLayer = () =>
  Layer.effectContext(Effect.gen(function*() {
    const world = MemoryWorld.make()
    yield* world.mkdirFixture("/scratch", { mode: 0o700 })
    yield* world.mkdirFixture("/mnt/b", { mode: 0o700 })
    world.mount("/mnt/b", 2)
    let nextDevice = 3
    const mount = (dir: string) => Effect.sync(() => world.mount(dir, nextDevice++))
    // The simulated disk has no holes: the same bytes, dense.
    const sparseFile = (path: string, size: number, pieces: ReadonlyArray<readonly [number, Uint8Array]>) => {
      const data = new Uint8Array(size)
      for (const [offset, piece] of pieces) data.set(piece, offset)
      return world.writeFixture(path, data, { mode: 0o600 })
    }
    return Context.make(FileSystem, MemoryFileSystem.make(world)).pipe(
      Context.add(Scratch, { root: "/scratch", otherDevice: "/mnt/b", mount, sparseFile })
    )
  }))

fileSystemConformance("Memory", { layer: conformanceLayer, crossDevice: { available: true }, mountPoints: { available: true } })

const bytes = (text: string) => new TextEncoder().encode(text)

const setup = Effect.sync(() => {
  const world = MemoryWorld.make()
  return { world, fs: MemoryFileSystem.make(world) }
})

const failsWith = <A>(effect: Effect.Effect<A, { reason: FileSystemErrorReason; errno: string; path: string }>, errno: string) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.strictEqual(error.errno, errno)
    return error
  })

describe("MemoryFileSystem (Linux details beyond the conformance suite)", () => {
  it.effect("intermediate symlinks resolve like the OS, relative to the link's directory", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setup
      yield* world.writeFixture("/real/dir/file", "content")
      yield* fs.symlink("real/dir", "/rel")
      yield* fs.symlink("/real", "/abs")
      yield* fs.symlink("../dir", "/real/dir/up")
      assert.strictEqual(new TextDecoder().decode(yield* fs.readFile("/rel/file")), "content")
      assert.strictEqual((yield* fs.lstat("/abs/dir/file")).type, "File")
      assert.strictEqual((yield* fs.lstat("/rel/up/up/up/file")).type, "File")
      assert.strictEqual((yield* fs.lstat("/real/dir/..")).type, "Directory")
      // A trailing slash follows the final link.
      assert.strictEqual((yield* fs.lstat("/rel/")).type, "Directory")
      yield* failsWith(fs.lstat("/real/dir/file/"), "ENOTDIR")
      yield* failsWith(fs.lstat("/real/dir/file/x"), "ENOTDIR")
    }))

  it.effect("ELOOP after 40 hops; 40 hops still resolve", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setup
      yield* world.mkdirFixture("/d")
      yield* fs.symlink("/d", "/l0")
      for (let i = 1; i <= 40; i++) yield* fs.symlink(`/l${i - 1}`, `/l${i}`)
      assert.deepStrictEqual(yield* fs.readDirectory("/l39/"), [])
      const error = yield* failsWith(fs.lstat("/l40/x"), "ELOOP")
      assert.strictEqual(error.reason, "IsSymlink")
      yield* fs.symlink("/self", "/self")
      yield* failsWith(fs.lstat("/self/x"), "ELOOP")
    }))

  it.effect("rename: into itself EINVAL, onto an ancestor ENOTEMPTY, hard links to one inode do nothing", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setup
      yield* world.writeFixture("/a/b/f", "x")
      yield* failsWith(fs.rename("/a", "/a/b/c"), "EINVAL")
      yield* failsWith(fs.rename("/a/b", "/a"), "ENOTEMPTY")
      yield* fs.link("/a/b/f", "/a/g")
      yield* fs.rename("/a/b/f", "/a/g")
      assert.strictEqual((yield* fs.lstat("/a/b/f")).nlink, 2)
      yield* failsWith(fs.rename("/", "/x"), "EBUSY")
      // A moved directory resolves ".." through its new parent.
      yield* world.mkdirFixture("/other")
      yield* fs.rename("/a/b", "/other/b")
      assert.strictEqual((yield* fs.lstat("/other/b/../b/f")).type, "File")
    }))

  it.effect("link of a directory is EPERM; unlink of a directory EISDIR; rmdir of the root EBUSY", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setup
      yield* world.mkdirFixture("/d")
      yield* failsWith(fs.link("/d", "/e"), "EPERM")
      yield* failsWith(fs.removeFile("/d"), "EISDIR")
      yield* failsWith(fs.removeDirectory("/"), "EBUSY")
      yield* failsWith(fs.removeDirectory("/d/."), "EINVAL")
      yield* failsWith(fs.symlink("", "/empty-target"), "ENOENT")
    }))

  it.effect("directory link counts and sizes follow Linux", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setup
      yield* world.mkdirFixture("/d/a")
      yield* world.mkdirFixture("/d/b")
      yield* world.writeFixture("/d/f", "12")
      const dir = yield* fs.lstat("/d")
      assert.strictEqual(dir.nlink, 4)
      assert.strictEqual(dir.size, 4096)
      assert.strictEqual((yield* fs.lstat("/d/f")).size, 2)
      yield* fs.rename("/d/a", "/a")
      assert.strictEqual((yield* fs.lstat("/d")).nlink, 3)
      assert.strictEqual((yield* fs.lstat("/")).nlink, 4)
    }))

  const paths = ["/a", "/b", "/a/c", "/b/c", "/a/c/d"]
  const operation = FastCheck.record({
    kind: FastCheck.constantFrom("mkdir", "write", "link", "rename", "unlink", "rmdir", "symlink", "removeTree"),
    from: FastCheck.constantFrom(...paths),
    to: FastCheck.constantFrom(...paths)
  })

  it.effect.prop(
    "after any sequence of operations, link counts match the tree (files: names, directories: 2 + subdirectories)",
    [FastCheck.array(operation, { maxLength: 30 })],
    ([operations]) =>
      Effect.gen(function*() {
        const { world, fs } = yield* setup
        for (const { kind, from, to } of operations) {
          const effect = kind === "mkdir" ? fs.makeDirectory(from)
            : kind === "write" ? fs.writeFileExclusive(from, bytes(from))
            : kind === "link" ? fs.link(from, to)
            : kind === "rename" ? fs.rename(from, to)
            : kind === "unlink" ? fs.removeFile(from)
            : kind === "rmdir" ? fs.removeDirectory(from)
            : kind === "symlink" ? fs.symlink(to, from)
            : fs.removeTree(from, { maxEntries: 2, maxDepth: 2 })
          yield* Effect.ignore(effect)
        }
        const tree = world.tree("/")
        const namesPerIno = new Map<number, number>()
        for (const entry of Object.values(tree)) namesPerIno.set(entry.ino, (namesPerIno.get(entry.ino) ?? 0) + 1)
        for (const [path, entry] of Object.entries(tree)) {
          if (entry.type === "Directory") {
            const prefix = path === "/" ? "/" : `${path}/`
            const subdirs = Object.entries(tree).filter(([other, e]) =>
              e.type === "Directory" && other !== path && other.startsWith(prefix) && !other.slice(prefix.length).includes("/")
            ).length
            assert.strictEqual(entry.nlink, 2 + subdirs, path)
          } else {
            assert.strictEqual(entry.nlink, namesPerIno.get(entry.ino), path)
          }
        }
      }),
    { fastCheck: { numRuns: 40 } }
  )

  it.effect("relative paths resolve against cwd; umask applies when set", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture("/home/me")
      const fs = MemoryFileSystem.make(world, { cwd: "/home/me", umask: 0o077 })
      yield* fs.writeFileExclusive("note", bytes("hi"), { mode: 0o644 })
      yield* fs.makeDirectory("sub", { mode: 0o755 })
      assert.strictEqual(world.readFixtureText("/home/me/note"), "hi")
      assert.strictEqual((yield* fs.lstat("/home/me/note")).mode, 0o600)
      assert.strictEqual((yield* fs.lstat("sub")).mode, 0o700)
    }))

  it.effect("files carry the uid of the process that created them", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const alice = MemoryFileSystem.make(world, { uid: 1001 })
      yield* alice.makeDirectory("/a")
      yield* alice.writeFileAtomic("/a/f", bytes("x"))
      yield* MemoryFileSystem.make(world, { uid: 1002 }).copyFile("/a/f", "/a/g")
      assert.strictEqual((yield* alice.lstat("/a")).uid, 1001)
      assert.strictEqual((yield* alice.lstat("/a/f")).uid, 1001)
      assert.strictEqual((yield* alice.lstat("/a/g")).uid, 1002)
      world.chown("/a/f", 0)
      assert.strictEqual((yield* alice.lstat("/a/f")).uid, 0)
    }))

  it.effect("removeTree never enters a mount point (EXDEV naming it) and removes the rest", () =>
    Effect.gen(function*() {
      const { world, fs } = yield* setup
      yield* world.writeFixture("/t/a", "a")
      yield* world.writeFixture("/t/mnt/inside/file", "mounted")
      world.mount("/t/mnt", 7)
      const mounted = world.tree("/t/mnt")
      const error = yield* failsWith(fs.removeTree("/t", { maxEntries: 100, maxDepth: 10 }), "EXDEV")
      assert.deepStrictEqual([error.reason, error.path], ["CrossDevice", "/t/mnt"])
      assert.deepStrictEqual(world.tree("/t/mnt"), mounted)
      assert.deepStrictEqual(Object.keys(world.tree("/t")), ["/t", ...Object.keys(mounted)])
    }))

  it.effect("measureTree and removeTree walk a tree deeper than any path (10,000 levels, nested by renames) whole", () =>
    Effect.gen(function*() {
      const { fs } = yield* setup
      // Chains of 1,000 levels (a path stays below PATH_MAX), each renamed into the bottom of the one before.
      const PIECES = 10
      const LEVELS = 1000
      for (let piece = 0; piece < PIECES; piece++) {
        let dir = `/p${piece}`
        yield* fs.makeDirectory(dir)
        for (let level = 0; level < LEVELS; level++) yield* fs.makeDirectory((dir = `${dir}/d`))
        yield* fs.writeFileExclusive(`${dir}/f`, bytes("x"), { sync: false })
      }
      for (let piece = PIECES - 1; piece > 0; piece--) yield* fs.rename(`/p${piece}`, `/p${piece - 1}${"/d".repeat(LEVELS)}/n`)
      const entries = PIECES * (LEVELS + 1) + (PIECES - 1)
      // Sizes as du counts them: every directory (the root too) one 4 KiB block, every 1-byte file one block.
      const directories = PIECES * (LEVELS + 1)
      const sizes = { bytes: 4096 * (directories + PIECES), apparentBytes: 4096 * directories + PIECES }
      assert.deepStrictEqual(yield* fs.measureTree("/p0", { maxEntries: 1e9, maxDepth: 1e9 }), { ...sizes, fileBytes: PIECES, entries, complete: true })
      assert.deepStrictEqual(yield* fs.removeTree("/p0", { maxEntries: 1e9, maxDepth: 1e9 }), { removedEntries: entries, complete: true, removedBytes: sizes.bytes, removedApparentBytes: sizes.apparentBytes })
    }))
})

describe("replaceFileIfUnchanged against a concurrent writer (Memory world: the check and the rename are one step)", () => {
  /**
   * A person saves edits (read, append their mark, blind atomic write) while the library keeps editing the
   * same file (read, append its mark, conditional replace, re-read on `Changed`). Every mark the person
   * saved must be in the final file: the library's replace either failed or was based on a read that
   * already held the person's last save.
   */
  const race = (seed: number, maxYields: number, conditional: boolean) =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ jitter: { seed, maxYields } })
      yield* world.writeFixture("/f", "")
      const person = MemoryFileSystem.make(world, { pid: 2 })
      const library = MemoryFileSystem.make(world, { pid: 3 })
      const decode = (b: Uint8Array) => new TextDecoder().decode(b)
      const saves = 12
      const personLoop = Effect.forEach(Array.from({ length: saves }, (_, i) => i), (i) =>
        Effect.gen(function*() {
          const current = decode(yield* person.readFile("/f"))
          yield* person.writeFileAtomic("/f", bytes(`${current}P${i};`), { sync: false })
        }), { discard: true })
      const libraryEdit = (n: number): Effect.Effect<void, unknown> =>
        Effect.gen(function*() {
          const info = yield* library.lstat("/f")
          const read = yield* library.readFile("/f")
          const next = bytes(`${decode(read)}L${n};`)
          if (!conditional) return yield* library.writeFileAtomic("/f", next, { sync: false })
          yield* library.replaceFileIfUnchanged("/f", { dev: info.dev, ino: info.ino, bytes: read }, next, { sync: false }).pipe(
            Effect.catchIf((e) => e.reason === "Changed", () => libraryEdit(n))
          )
        })
      const libraryLoop = Effect.forEach([0, 1, 2, 3, 4, 5, 6, 7], libraryEdit, { discard: true })
      yield* Effect.all([personLoop, libraryLoop], { concurrency: "unbounded", discard: true })
      const final = decode(yield* person.readFile("/f"))
      return Array.from({ length: saves }, (_, i) => `P${i};`).filter((mark) => !final.includes(mark))
    })

  it.effect.prop(
    "no save of the person is ever lost, whatever the interleaving",
    [FastCheck.integer({ min: 0, max: 2 ** 31 - 1 }), FastCheck.integer({ min: 0, max: 6 })],
    ([seed, maxYields]) => Effect.map(race(seed, maxYields, true), (lost) => assert.deepStrictEqual(lost, [])),
    { fastCheck: { numRuns: 40 } }
  )

  it.effect("the same race with a blind writeFileAtomic does lose saves (the property can fail)", () =>
    Effect.gen(function*() {
      let lostSomewhere = false
      for (let seed = 1; seed <= 30 && !lostSomewhere; seed++) lostSomewhere = (yield* race(seed, 4, false)).length > 0
      assert.isTrue(lostSomewhere)
    }))
})
