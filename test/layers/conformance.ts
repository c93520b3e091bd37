/**
 * The FileSystem conformance suite, written once and run against every layer (DESIGN "The same conformance
 * suite runs against both layers"). When Node and Memory disagree, one of them fails here.
 *
 * Usage, from a `*.test.ts` file:
 *
 *   fileSystemConformance("Memory", {
 *     // A FRESH world for every test: a FileSystem plus a Scratch naming an empty, writable directory
 *     // (and, when crossDevice is available, an empty writable directory on another device).
 *     layer: () => Layer.merge(MemoryFileSystemLayer, Layer.succeed(Scratch, { root: "/scratch", otherDevice: "/mnt/b", mount })),
 *     crossDevice: { available: true },             // or { available: false, why: "no second filesystem" }
 *     mountPoints: { available: true }              // or { available: false, why: "mount is refused" }
 *   })
 *
 * Paths are POSIX strings built with "/". Modes are exact (no umask). Timestamps set by the suite are whole
 * seconds, so every layer can represent them exactly. Tests run under `it.effect`, so a layer that takes
 * mtimes from `Clock` sees the TestClock; the suite never compares against the wall clock.
 */
import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, FastCheck, type Layer } from "effect"
import type { FileSystemError, FileSystemErrorReason } from "../../src/domain/Errors.js"
import { CROSSED_MOUNT_DETAIL } from "../../src/domain/OneFileSystem.js"
import { WALK_WINDOW } from "../../src/domain/WalkDepth.js"
import { type FileInfo, FileSystem } from "../../src/services/FileSystem.js"
import * as Each from "../../src/services/internal/each.js"

/**
 * Where a test may write. `otherDevice` is `null` unless the setup says cross-device is available; `mount`
 * is `null` unless it says mount points are.
 */
export class Scratch extends Context.Tag("pi-agent-storage/test/Scratch")<Scratch, {
  readonly root: string
  readonly otherDevice: string | null
  /**
   * Make the existing directory `dir` a mount point of another file system that holds what `dir` held (Node:
   * its entries move to a tree outside the scratch root, bind-mounted at `dir`; unmounted when the test ends).
   */
  readonly mount: ((dir: string) => Effect.Effect<void>) | null
  /**
   * Create the new file `path` (mode 0600) of `size` bytes holding `pieces` at their offsets and zeros
   * elsewhere: with holes where the layer has them (Node: ftruncate, then writes at offsets), dense otherwise.
   */
  readonly sparseFile: (path: string, size: number, pieces: ReadonlyArray<readonly [offset: number, data: Uint8Array]>) => Effect.Effect<void>
}>() {}

type Availability = { readonly available: true } | { readonly available: false; readonly why: string }

export interface ConformanceSetup {
  /** Called once per test; must build a fresh, isolated world. */
  readonly layer: () => Layer.Layer<FileSystem | Scratch, unknown>
  readonly crossDevice: Availability
  readonly mountPoints: Availability
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const bytes = (text: string): Uint8Array => encoder.encode(text)
const text = (data: Uint8Array): string => decoder.decode(data)

/** Fixture writes skip fsync: durability is not what these tests check. */
const put = (path: string, content: string, mode?: number) =>
  Effect.flatMap(FileSystem, (fs) =>
    fs.writeFileExclusive(path, bytes(content), mode === undefined ? { sync: false } : { sync: false, mode }))

const read = (path: string) => Effect.flatMap(FileSystem, (fs) => Effect.map(fs.readFile(path), text))

/** Run `effect`, expecting it to fail with this reason and raw errno. */
const expectFailure = <A, R>(
  effect: Effect.Effect<A, FileSystemError, R>,
  reason: FileSystemErrorReason,
  errno: string
) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(effect)
    assert.strictEqual(error._tag, "FileSystemError")
    assert.strictEqual(error.reason, reason, error.message)
    assert.strictEqual(error.errno, errno, error.message)
    return error
  })

const expectMissing = (path: string) => Effect.flatMap(FileSystem, (fs) => expectFailure(fs.lstat(path), "NotFound", "ENOENT"))

const names = (path: string) =>
  Effect.flatMap(FileSystem, (fs) => Effect.map(fs.readDirectory(path), (entries) => entries.map((entry) => entry.name)))

const T1 = 1_600_000_000_000
const T2 = 1_650_000_000_000

const WIDE: { maxEntries: number; maxDepth: number } = { maxEntries: 1_000_000, maxDepth: 64 }

/**
 * A small tree under `root` (7 entries below it, 110 bytes in regular files), plus an `outside` directory
 * holding 5000 bytes that `root/link` points at, and a canary file that `root/fileLink` points at.
 *
 *   root/a.txt (3)  root/d1/b.bin (100)  root/d1/d2/c (7)  root/link -> outside  root/dangling -> nowhere
 *   root/fileLink -> outside/canary.txt
 */
const buildTree = (root: string, outside: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    yield* fs.makeDirectory(outside)
    yield* put(`${outside}/big`, "x".repeat(5000))
    yield* put(`${outside}/canary.txt`, "keep me")
    yield* fs.makeDirectory(`${outside}/sub`)
    yield* put(`${outside}/sub/inner`, "inner")
    yield* fs.utimes(`${outside}/canary.txt`, T1, T1)
    yield* fs.utimes(outside, T1, T1)

    yield* fs.makeDirectory(root)
    yield* put(`${root}/a.txt`, "abc")
    yield* fs.makeDirectory(`${root}/d1`)
    yield* put(`${root}/d1/b.bin`, "b".repeat(100))
    yield* fs.makeDirectory(`${root}/d1/d2`)
    yield* put(`${root}/d1/d2/c`, "ccccccc")
    yield* fs.symlink(outside, `${root}/link`)
    yield* fs.symlink(`${root}/nowhere`, `${root}/dangling`)
    yield* fs.symlink(`${outside}/canary.txt`, `${root}/fileLink`)
  })
const TREE_ENTRIES = 8
const TREE_BYTES = 110

/**
 * What `du -s` says of a tree, from the layer's own `lstat` and listings (FileSystem `TreeSizes`): every
 * entry's blocks × 512 and size, the root's too, an inode of several links once. `naive` counts every name.
 */
export const duOf = (root: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    const seen = new Set<string>()
    const total = { bytes: 0, apparentBytes: 0 }
    const naive = { bytes: 0, apparentBytes: 0 }
    const visit = (path: string): Effect.Effect<void, FileSystemError> =>
      Effect.gen(function*() {
        const info = yield* fs.lstat(path)
        naive.bytes += info.blocks! * 512
        naive.apparentBytes += info.size
        const key = `${info.dev}:${info.ino}`
        if (info.type !== "Directory" && seen.has(key)) return
        if (info.type !== "Directory" && info.nlink > 1) seen.add(key)
        total.bytes += info.blocks! * 512
        total.apparentBytes += info.size
        if (info.type === "Directory") for (const entry of yield* fs.readDirectory(path)) yield* visit(`${path}/${entry.name}`)
      })
    yield* visit(root)
    return { ...total, naive }
  })

/** `duOf` without the naive count: what `measureTree` and a whole `removeTree` answer. */
const sizesOf = (root: string) => Effect.map(duOf(root), ({ bytes, apparentBytes }) => ({ bytes, apparentBytes }))

/** A removal's sizes under the measure's names. */
const removedSizes = (r: { readonly removedBytes: number; readonly removedApparentBytes: number }) => ({ bytes: r.removedBytes, apparentBytes: r.removedApparentBytes })

/** Batched removal answers as comparable data. */
const plainRemovals = (answers: ReadonlyArray<{ readonly _tag: "Left"; readonly left: FileSystemError } | { readonly _tag: "Right"; readonly right: { readonly removedEntries: number; readonly removedBytes: number; readonly removedApparentBytes: number; readonly complete: boolean } }>) =>
  answers.map((a) => (a._tag === "Left" ? { failed: `${a.left.reason} ${a.left.errno}` } : { value: { removedEntries: a.right.removedEntries, removedBytes: a.right.removedBytes, removedApparentBytes: a.right.removedApparentBytes, complete: a.right.complete } }))

/** The outside world is exactly as buildTree left it: content, entries and timestamps. */
const assertOutsideUntouched = (outside: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    assert.deepStrictEqual(yield* names(outside), ["big", "canary.txt", "sub"])
    assert.strictEqual(yield* read(`${outside}/canary.txt`), "keep me")
    assert.strictEqual(yield* read(`${outside}/sub/inner`), "inner")
    assert.strictEqual((yield* read(`${outside}/big`)).length, 5000)
    assert.strictEqual((yield* fs.lstat(`${outside}/canary.txt`)).mtimeMs, T1)
    assert.strictEqual((yield* fs.lstat(outside)).mtimeMs, T1)
  })

/** One entry of a random tree: its parent is an earlier directory (index modulo the directories so far). */
const treeItem = FastCheck.record({
  parent: FastCheck.nat(),
  kind: FastCheck.constantFrom("file", "dir", "link", "hardLink"),
  size: FastCheck.nat(9000)
})

export const fileSystemConformance = (name: string, setup: ConformanceSetup): void => {
  const test = (title: string, body: Effect.Effect<void, unknown, FileSystem | Scratch>) =>
    it.effect(title, () => body.pipe(Effect.provide(setup.layer())))

  const context = Effect.all({ fs: FileSystem, scratch: Scratch })

  describe(`FileSystem conformance: ${name}`, () => {
    describe("lstat", () => {
      test("describes a file, a directory, a symlink and a dangling link without following links", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/f`, "hello", 0o640)
        yield* fs.makeDirectory(`${root}/d`, { mode: 0o750 })
        yield* fs.symlink(`${root}/d`, `${root}/l`)
        yield* fs.symlink("missing-target", `${root}/dangling`)

        const file = yield* fs.lstat(`${root}/f`)
        assert.strictEqual(file.type, "File")
        assert.strictEqual(file.size, 5)
        assert.strictEqual(file.mode, 0o640)
        assert.strictEqual(file.nlink, 1)
        const dir = yield* fs.lstat(`${root}/d`)
        assert.strictEqual(dir.type, "Directory")
        assert.strictEqual(dir.mode, 0o750)
        const link = yield* fs.lstat(`${root}/l`)
        assert.strictEqual(link.type, "SymbolicLink")
        assert.strictEqual(link.size, `${root}/d`.length)
        assert.notStrictEqual(link.ino, dir.ino)
        const dangling = yield* fs.lstat(`${root}/dangling`)
        assert.strictEqual(dangling.type, "SymbolicLink")
        assert.strictEqual(yield* fs.readLink(`${root}/dangling`), "missing-target")
        yield* expectMissing(`${root}/absent`)
        yield* expectFailure(fs.readLink(`${root}/f`), "Unknown", "EINVAL")
      }))
    })

    describe("statFollowingLinks", () => {
      test("follows final and intermediate links; a dangling link is ENOENT; x/.. is the physical parent", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/real`)
        yield* fs.makeDirectory(`${root}/real/inner`, { mode: 0o750 })
        yield* put(`${root}/real/inner/f`, "hello")
        yield* fs.makeDirectory(`${root}/elsewhere`)
        yield* fs.symlink(`${root}/real/inner`, `${root}/elsewhere/toInner`)
        yield* fs.symlink("../real", `${root}/elsewhere/relative`)
        yield* fs.symlink("missing-target", `${root}/dangling`)
        const inner = yield* fs.lstat(`${root}/real/inner`)
        const real = yield* fs.lstat(`${root}/real`)
        const viaLink = yield* fs.statFollowingLinks(`${root}/elsewhere/toInner`)
        assert.deepStrictEqual([viaLink.type, viaLink.ino, viaLink.dev, viaLink.mode], ["Directory", inner.ino, inner.dev, 0o750])
        assert.strictEqual((yield* fs.lstat(`${root}/elsewhere/toInner`)).type, "SymbolicLink", "lstat still describes the link")
        assert.strictEqual((yield* fs.statFollowingLinks(`${root}/elsewhere/relative/inner`)).ino, inner.ino)
        const file = yield* fs.statFollowingLinks(`${root}/elsewhere/toInner/f`)
        assert.deepStrictEqual([file.type, file.size], ["File", 5])
        // ".." after a link is the parent of its target, not of the link (what identity chains rely on).
        assert.strictEqual((yield* fs.statFollowingLinks(`${root}/elsewhere/toInner/..`)).ino, real.ino)
        assert.strictEqual((yield* fs.statFollowingLinks(`${root}/real/..`)).ino, (yield* fs.lstat(root)).ino)
        yield* expectFailure(fs.statFollowingLinks(`${root}/dangling`), "NotFound", "ENOENT")
        yield* expectFailure(fs.statFollowingLinks(`${root}/absent`), "NotFound", "ENOENT")
        yield* expectFailure(fs.statFollowingLinks(`${root}/real/inner/f/x`), "NotADirectory", "ENOTDIR")
      }))
    })

    describe("readDirectory", () => {
      test("lists typed entries sorted by name and does not descend through links", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/target`)
        yield* put(`${root}/target/inside`, "x")
        yield* fs.makeDirectory(`${root}/top`)
        yield* put(`${root}/top/b.txt`, "b")
        yield* fs.makeDirectory(`${root}/top/a`)
        yield* fs.symlink(`${root}/target`, `${root}/top/c`)
        yield* fs.symlink(`${root}/nowhere`, `${root}/top/B`)
        assert.deepStrictEqual(yield* fs.readDirectory(`${root}/top`), [
          { name: "B", type: "SymbolicLink" },
          { name: "a", type: "Directory" },
          { name: "b.txt", type: "File" },
          { name: "c", type: "SymbolicLink" }
        ])
        assert.deepStrictEqual(yield* fs.readDirectory(`${root}/top/a`), [])
        yield* expectFailure(fs.readDirectory(`${root}/top/c`), "NotADirectory", "ENOTDIR")
        yield* expectFailure(fs.readDirectory(`${root}/top/b.txt`), "NotADirectory", "ENOTDIR")
        yield* expectFailure(fs.readDirectory(`${root}/absent`), "NotFound", "ENOENT")
      }))
    })

    describe("readDirectoryInfo", () => {
      test("lists every entry with what lstat says of it, never through a link", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/target`)
        yield* put(`${root}/target/inside`, "x".repeat(50))
        yield* fs.makeDirectory(`${root}/top`)
        yield* put(`${root}/top/b.txt`, "bb", 0o640)
        yield* fs.utimes(`${root}/top/b.txt`, T1, T1)
        yield* fs.makeDirectory(`${root}/top/a`, { mode: 0o750 })
        yield* fs.symlink(`${root}/target`, `${root}/top/c`)
        const listed = yield* fs.readDirectoryInfo(`${root}/top`)
        assert.deepStrictEqual(listed.map((e) => e.name), ["a", "b.txt", "c"])
        // The same answer as lstat's, but for the ctime, which only lstat and stat keep (FileInfo.ctimeMs).
        const withoutCtime = ({ ctimeMs: _ctime, ...info }: FileInfo) => info
        for (const entry of listed) assert.deepStrictEqual(withoutCtime(entry.info), withoutCtime(yield* fs.lstat(`${root}/top/${entry.name}`)), entry.name)
        assert.deepStrictEqual(listed.map((e) => e.info.type), ["Directory", "File", "SymbolicLink"])
        assert.strictEqual(listed[1]!.info.mode, 0o640)
        assert.strictEqual(listed[1]!.info.size, 2)
        assert.strictEqual(listed[1]!.info.mtimeMs, T1)
        // A trailing slash names the same directory.
        assert.deepStrictEqual((yield* fs.readDirectoryInfo(`${root}/top/`)).map((e) => e.name), ["a", "b.txt", "c"])
        assert.deepStrictEqual(yield* fs.readDirectoryInfo(`${root}/top/a`), [])
        yield* expectFailure(fs.readDirectoryInfo(`${root}/top/c`), "NotADirectory", "ENOTDIR")
        yield* expectFailure(fs.readDirectoryInfo(`${root}/top/b.txt`), "NotADirectory", "ENOTDIR")
        yield* expectFailure(fs.readDirectoryInfo(`${root}/absent`), "NotFound", "ENOENT")
      }))
    })

    describe("writeFileExclusive", () => {
      test("creates with the exact mode (default 0o600) and refuses any existing entry", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.writeFileExclusive(`${root}/default`, bytes("one"))
        assert.strictEqual((yield* fs.lstat(`${root}/default`)).mode, 0o600)
        yield* fs.writeFileExclusive(`${root}/shared`, bytes("two"), { mode: 0o644, sync: true })
        assert.strictEqual((yield* fs.lstat(`${root}/shared`)).mode, 0o644)

        yield* expectFailure(fs.writeFileExclusive(`${root}/default`, bytes("clobber")), "AlreadyExists", "EEXIST")
        assert.strictEqual(yield* read(`${root}/default`), "one")
        yield* fs.makeDirectory(`${root}/dir`)
        yield* expectFailure(fs.writeFileExclusive(`${root}/dir`, bytes("x")), "AlreadyExists", "EEXIST")
      }))

      test("fails on a dangling symlink without creating its target", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.symlink(`${root}/target`, `${root}/lease`)
        yield* expectFailure(fs.writeFileExclusive(`${root}/lease`, bytes("x")), "AlreadyExists", "EEXIST")
        yield* expectMissing(`${root}/target`)
        assert.strictEqual((yield* fs.lstat(`${root}/lease`)).type, "SymbolicLink")
      }))

      test("fails when the parent is missing", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* expectFailure(fs.writeFileExclusive(`${root}/no/file`, bytes("x")), "NotFound", "ENOENT")
      }))
    })

    describe("readFile", () => {
      test("never reads through a symlink", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/secret`, "secret")
        yield* fs.symlink(`${root}/secret`, `${root}/link`)
        yield* expectFailure(fs.readFile(`${root}/link`), "IsSymlink", "ELOOP")
        yield* expectFailure(fs.readFile(`${root}/absent`), "NotFound", "ENOENT")
        yield* fs.makeDirectory(`${root}/dir`)
        yield* expectFailure(fs.readFile(`${root}/dir`), "IsADirectory", "EISDIR")
      }))

      test("honours maxBytes exactly", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/ten`, "0123456789")
        yield* put(`${root}/empty`, "")
        assert.strictEqual(text(yield* fs.readFile(`${root}/ten`, { maxBytes: 10 })), "0123456789")
        yield* expectFailure(fs.readFile(`${root}/ten`, { maxBytes: 9 }), "TooLarge", "EFBIG")
        assert.strictEqual((yield* fs.readFile(`${root}/empty`, { maxBytes: 0 })).length, 0)
      }))

      it.effect.prop("returns exactly the bytes written", [FastCheck.uint8Array({ maxLength: 3000 })], ([data]) =>
        Effect.gen(function*() {
          const { fs, scratch: { root } } = yield* context
          yield* fs.writeFileAtomic(`${root}/blob`, data, { sync: false })
          assert.deepStrictEqual(yield* fs.readFile(`${root}/blob`), data)
          // Capped (Node: the synchronous small-file read, its buffer sized to the file): the same bytes.
          assert.deepStrictEqual(yield* fs.readFile(`${root}/blob`, { maxBytes: data.length }), data)
          assert.deepStrictEqual(yield* fs.readFile(`${root}/blob`, { maxBytes: 4096 }), data)
        }).pipe(Effect.provide(setup.layer())), { fastCheck: { numRuns: 20 } })
    })

    describe("writeFileInPlace", () => {
      test("overwrites a file of the same length in place: same inode, mode and length", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.writeFileExclusive(`${root}/m.json`, bytes('{"a":1}        '), { mode: 0o640 })
        const before = yield* fs.lstat(`${root}/m.json`)
        yield* fs.writeFileInPlace(`${root}/m.json`, bytes('{"a":1,"b":223}'))
        const after = yield* fs.lstat(`${root}/m.json`)
        assert.strictEqual(yield* read(`${root}/m.json`), '{"a":1,"b":223}')
        assert.deepStrictEqual([after.ino, after.mode, after.size], [before.ino, 0o640, 15])
        assert.deepStrictEqual(yield* names(root), ["m.json"])
      }))

      test("refuses another length, leaving the file as it was", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/f`, "0123456789")
        const longer = yield* expectFailure(fs.writeFileInPlace(`${root}/f`, bytes("0123456789+")), "InvalidData", "")
        assert.include(longer.message, "10 bytes, not 11")
        yield* expectFailure(fs.writeFileInPlace(`${root}/f`, bytes("short")), "InvalidData", "")
        assert.strictEqual(yield* read(`${root}/f`), "0123456789")
      }))

      test("never writes through a symlink, a directory or a missing path", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/target`, "original")
        yield* fs.symlink(`${root}/target`, `${root}/link`)
        yield* expectFailure(fs.writeFileInPlace(`${root}/link`, bytes("replaced")), "IsSymlink", "ELOOP")
        assert.strictEqual(yield* read(`${root}/target`), "original")
        yield* fs.makeDirectory(`${root}/dir`)
        yield* expectFailure(fs.writeFileInPlace(`${root}/dir`, bytes("x")), "IsADirectory", "EISDIR")
        yield* expectFailure(fs.writeFileInPlace(`${root}/missing`, bytes("x")), "NotFound", "ENOENT")
        yield* expectMissing(`${root}/missing`)
      }))
    })

    describe("writeFileAtomic", () => {
      test("creates, then replaces content, leaving no temp file behind", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.writeFileAtomic(`${root}/state.json`, bytes("v1"))
        assert.strictEqual((yield* fs.lstat(`${root}/state.json`)).mode, 0o600)
        yield* fs.writeFileAtomic(`${root}/state.json`, bytes("version two"), { mode: 0o640 })
        assert.strictEqual(yield* read(`${root}/state.json`), "version two")
        assert.strictEqual((yield* fs.lstat(`${root}/state.json`)).mode, 0o640)
        assert.deepStrictEqual(yield* names(root), ["state.json"])
      }))

      test("replaces a symlink at the path and leaves its target unchanged", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/target`, "original")
        yield* fs.symlink(`${root}/target`, `${root}/file`)
        yield* fs.writeFileAtomic(`${root}/file`, bytes("new"))
        assert.strictEqual((yield* fs.lstat(`${root}/file`)).type, "File")
        assert.strictEqual(yield* read(`${root}/file`), "new")
        assert.strictEqual(yield* read(`${root}/target`), "original")
        assert.deepStrictEqual(yield* names(root), ["file", "target"])
      }))

      test("fails over a directory and cleans up its temp file", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/dir`)
        yield* expectFailure(fs.writeFileAtomic(`${root}/dir`, bytes("x")), "IsADirectory", "EISDIR")
        assert.deepStrictEqual(yield* names(root), ["dir"])
      }))
    })

    describe("replaceFileIfUnchanged (replace a file only if it is still what was read)", () => {
      /** A file as a program reads it before a conditional replace: its inode's identity and its bytes. */
      const versionOf = (path: string) =>
        Effect.gen(function*() {
          const fs = yield* FileSystem
          const info = yield* fs.lstat(path)
          return { dev: info.dev, ino: info.ino, bytes: yield* fs.readFile(path) }
        })
      const expectChanged = <A, R>(effect: Effect.Effect<A, FileSystemError, R>, detail: RegExp) =>
        Effect.map(expectFailure(effect, "Changed", ""), (error) => assert.match(error.detail ?? "", detail))

      test("replaces the file still as read (mode kept as asked, no temp file left)", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/USER.md`, "read")
        const version = yield* versionOf(`${root}/USER.md`)
        yield* fs.replaceFileIfUnchanged(`${root}/USER.md`, version, bytes("written"), { mode: 0o640 })
        assert.strictEqual(yield* read(`${root}/USER.md`), "written")
        assert.strictEqual((yield* fs.lstat(`${root}/USER.md`)).mode, 0o640)
        assert.deepStrictEqual(yield* names(root), ["USER.md"])
      }))

      test("refuses, leaving every byte, when the file was edited in place, replaced (even by the same bytes), removed or made a link", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        const path = `${root}/f`
        yield* put(path, "abc")
        const version = yield* versionOf(path)
        yield* fs.writeFileInPlace(path, bytes("abd"))
        yield* expectChanged(fs.replaceFileIfUnchanged(path, version, bytes("mine")), /modified/)
        assert.strictEqual(yield* read(path), "abd")
        const edited = yield* versionOf(path)
        yield* fs.writeFileAtomic(path, bytes("abd"), { sync: false })
        yield* expectChanged(fs.replaceFileIfUnchanged(path, edited, bytes("mine")), /replaced by another file/)
        const renewed = yield* versionOf(path)
        yield* fs.writeFileAtomic(path, bytes("abd plus more"), { sync: false })
        yield* expectChanged(fs.replaceFileIfUnchanged(path, { ...renewed, bytes: bytes("abd plus more") }, bytes("mine")), /replaced by another file/)
        const grown = yield* versionOf(path)
        yield* fs.removeFile(path)
        yield* expectChanged(fs.replaceFileIfUnchanged(path, grown, bytes("mine")), /removed/)
        yield* expectMissing(path)
        yield* put(`${root}/target`, "keep")
        yield* fs.symlink(`${root}/target`, path)
        yield* expectChanged(fs.replaceFileIfUnchanged(path, grown, bytes("mine")), /replaced by a symlink/)
        assert.strictEqual((yield* fs.lstat(path)).type, "SymbolicLink")
        assert.strictEqual(yield* read(`${root}/target`), "keep")
        assert.deepStrictEqual(yield* names(root), ["f", "target"])
      }))

      test("expected missing: creates exclusively; whoever created it meanwhile (a file, a dangling link) wins", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.replaceFileIfUnchanged(`${root}/new`, null, bytes("first"))
        assert.strictEqual(yield* read(`${root}/new`), "first")
        yield* expectChanged(fs.replaceFileIfUnchanged(`${root}/new`, null, bytes("second")), /regular file was created/)
        assert.strictEqual(yield* read(`${root}/new`), "first")
        yield* fs.symlink(`${root}/nowhere`, `${root}/dangling`)
        yield* expectChanged(fs.replaceFileIfUnchanged(`${root}/dangling`, null, bytes("x")), /symlink was created/)
        yield* expectMissing(`${root}/nowhere`)
        assert.deepStrictEqual(yield* names(root), ["dangling", "new"])
        yield* expectFailure(fs.replaceFileIfUnchanged(`${root}/no-dir/f`, null, bytes("x")), "NotFound", "ENOENT")
      }))

      test("data null removes the file only while it is still as read (one already gone is success)", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/a`, "one")
        yield* put(`${root}/b`, "two")
        const a = yield* versionOf(`${root}/a`)
        const b = yield* versionOf(`${root}/b`)
        yield* fs.writeFileInPlace(`${root}/b`, bytes("TWO"))
        yield* fs.replaceFileIfUnchanged(`${root}/a`, a, null)
        yield* expectChanged(fs.replaceFileIfUnchanged(`${root}/b`, b, null), /modified/)
        assert.deepStrictEqual(yield* names(root), ["b"])
        assert.strictEqual(yield* read(`${root}/b`), "TWO")
        yield* fs.replaceFileIfUnchanged(`${root}/a`, a, null)
        yield* fs.replaceFileIfUnchanged(`${root}/a`, null, null)
        yield* expectChanged(fs.replaceFileIfUnchanged(`${root}/b`, null, null), /regular file was created/)
        assert.deepStrictEqual(yield* names(root), ["b"])
      }))

      it.effect.prop(
        "whatever happens between the read and the replace, it succeeds exactly when nothing did, and an edit is never lost",
        [
          FastCheck.uint8Array({ maxLength: 64 }),
          FastCheck.constantFrom("nothing", "in-place", "same-bytes-new-file", "other-bytes-new-file", "removed", "link"),
          FastCheck.uint8Array({ minLength: 1, maxLength: 64 })
        ],
        ([original, edit, mine]) =>
          Effect.gen(function*() {
            const { fs, scratch: { root } } = yield* context
            const path = `${root}/f`
            yield* fs.writeFileExclusive(path, original)
            const version = yield* versionOf(path)
            const theirs = original.length === 0 ? Uint8Array.of(1) : original.map((x, i) => (i === 0 ? x ^ 0xff : x))
            if (edit === "in-place" && original.length > 0) yield* fs.writeFileInPlace(path, theirs)
            if (edit === "same-bytes-new-file") yield* fs.writeFileAtomic(path, original, { sync: false })
            if (edit === "other-bytes-new-file") yield* fs.writeFileAtomic(path, theirs, { sync: false })
            if (edit === "removed") yield* fs.removeFile(path)
            if (edit === "link") {
              yield* fs.removeFile(path)
              yield* fs.symlink("elsewhere", path)
            }
            const before = yield* Effect.either(versionOf(path))
            const result = yield* Effect.either(fs.replaceFileIfUnchanged(path, version, mine, { sync: false }))
            const unchanged = edit === "nothing" || (edit === "in-place" && original.length === 0)
            assert.strictEqual(result._tag === "Right", unchanged, `${edit}: ${result._tag === "Left" ? result.left.message : "replaced"}`)
            if (unchanged) assert.deepStrictEqual(yield* fs.readFile(path), mine)
            else if (edit === "removed") yield* expectMissing(path)
            else if (edit === "link") assert.strictEqual((yield* fs.lstat(path)).type, "SymbolicLink")
            else if (before._tag === "Right") assert.deepStrictEqual(yield* fs.readFile(path), before.right.bytes, "their bytes are kept")
            assert.deepStrictEqual(yield* names(root), ["f"].filter(() => edit !== "removed"))
          }).pipe(Effect.provide(setup.layer())),
        { fastCheck: { numRuns: 40 } }
      )
    })

    describe("rename", () => {
      test("moves a file over a file", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/from`, "new")
        yield* put(`${root}/to`, "old")
        const before = yield* fs.lstat(`${root}/from`)
        yield* fs.rename(`${root}/from`, `${root}/to`)
        assert.strictEqual(yield* read(`${root}/to`), "new")
        assert.strictEqual((yield* fs.lstat(`${root}/to`)).ino, before.ino)
        yield* expectMissing(`${root}/from`)
      }))

      test("moves a directory over an empty directory but not over a non-empty one", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/run`)
        yield* put(`${root}/run/data`, "data")
        yield* fs.makeDirectory(`${root}/empty`)
        yield* fs.rename(`${root}/run`, `${root}/empty`)
        assert.strictEqual(yield* read(`${root}/empty/data`), "data")
        yield* expectMissing(`${root}/run`)

        yield* fs.makeDirectory(`${root}/full`)
        yield* put(`${root}/full/keep`, "keep")
        yield* expectFailure(fs.rename(`${root}/empty`, `${root}/full`), "NotEmpty", "ENOTEMPTY")
        assert.strictEqual(yield* read(`${root}/full/keep`), "keep")
        assert.strictEqual(yield* read(`${root}/empty/data`), "data")
      }))

      test("refuses mixing files and directories, and a missing source", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/file`, "f")
        yield* fs.makeDirectory(`${root}/dir`)
        yield* expectFailure(fs.rename(`${root}/file`, `${root}/dir`), "IsADirectory", "EISDIR")
        yield* expectFailure(fs.rename(`${root}/dir`, `${root}/file`), "NotADirectory", "ENOTDIR")
        yield* expectFailure(fs.rename(`${root}/absent`, `${root}/x`), "NotFound", "ENOENT")
        assert.deepStrictEqual(yield* names(root), ["dir", "file"])
      }))

      test("renames a symlink itself, not its target", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/target`)
        yield* fs.symlink(`${root}/target`, `${root}/link`)
        yield* fs.rename(`${root}/link`, `${root}/moved`)
        assert.strictEqual((yield* fs.lstat(`${root}/moved`)).type, "SymbolicLink")
        assert.strictEqual((yield* fs.lstat(`${root}/target`)).type, "Directory")
      }))
    })

    describe("removeFile and removeDirectory", () => {
      test("removeDirectory removes only empty directories, never through a link", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/full`)
        yield* put(`${root}/full/x`, "x")
        yield* expectFailure(fs.removeDirectory(`${root}/full`), "NotEmpty", "ENOTEMPTY")
        assert.strictEqual(yield* read(`${root}/full/x`), "x")
        yield* fs.makeDirectory(`${root}/empty`)
        yield* fs.symlink(`${root}/empty`, `${root}/link`)
        yield* expectFailure(fs.removeDirectory(`${root}/link`), "NotADirectory", "ENOTDIR")
        yield* expectFailure(fs.removeDirectory(`${root}/full/x`), "NotADirectory", "ENOTDIR")
        yield* fs.removeDirectory(`${root}/empty`)
        yield* expectMissing(`${root}/empty`)
        yield* expectFailure(fs.removeDirectory(`${root}/empty`), "NotFound", "ENOENT")
      }))

      test("removeFile unlinks a symlink and leaves its target; refuses a directory", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/target`, "target")
        yield* fs.symlink(`${root}/target`, `${root}/link`)
        yield* fs.removeFile(`${root}/link`)
        yield* expectMissing(`${root}/link`)
        assert.strictEqual(yield* read(`${root}/target`), "target")
        yield* fs.makeDirectory(`${root}/dir`)
        yield* expectFailure(fs.removeFile(`${root}/dir`), "IsADirectory", "EISDIR")
        yield* expectFailure(fs.removeFile(`${root}/absent`), "NotFound", "ENOENT")
      }))
    })

    describe("link", () => {
      test("hard links share the inode and count links", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/a`, "shared")
        yield* fs.link(`${root}/a`, `${root}/b`)
        const a = yield* fs.lstat(`${root}/a`)
        const b = yield* fs.lstat(`${root}/b`)
        assert.strictEqual(a.nlink, 2)
        assert.strictEqual(b.nlink, 2)
        assert.strictEqual(a.ino, b.ino)
        assert.strictEqual(yield* read(`${root}/b`), "shared")
        yield* fs.removeFile(`${root}/b`)
        assert.strictEqual((yield* fs.lstat(`${root}/a`)).nlink, 1)
        yield* put(`${root}/c`, "c")
        yield* expectFailure(fs.link(`${root}/a`, `${root}/c`), "AlreadyExists", "EEXIST")
      }))

      test("linkEach links every name it can, in one call, and answers each failure without stopping", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/from`)
        yield* fs.makeDirectory(`${root}/to`)
        yield* put(`${root}/from/a`, "a")
        yield* put(`${root}/from/b`, "b")
        yield* put(`${root}/from/c`, "c")
        yield* fs.symlink(`${root}/from/a`, `${root}/from/l`)
        yield* put(`${root}/to/b`, "taken")
        const answers = yield* fs.linkEach(`${root}/from`, `${root}/to`, ["a", "b", "missing", "l", "c"])
        assert.strictEqual(answers.length, 5)
        assert.isUndefined(answers[0])
        assert.strictEqual(answers[1]?.errno, "EEXIST")
        assert.strictEqual(answers[1]?.reason, "AlreadyExists")
        assert.strictEqual(answers[2]?.errno, "ENOENT")
        assert.strictEqual(answers[2]?.reason, "NotFound")
        assert.isUndefined(answers[3])
        assert.isUndefined(answers[4], "a failure does not stop the names after it")
        for (const name of ["a", "c"]) {
          assert.strictEqual((yield* fs.lstat(`${root}/to/${name}`)).ino, (yield* fs.lstat(`${root}/from/${name}`)).ino)
          assert.strictEqual((yield* fs.lstat(`${root}/from/${name}`)).nlink, 2)
        }
        assert.strictEqual(yield* read(`${root}/to/b`), "taken", "an occupied name is left as it was")
        // The symlink itself is linked, never what it points at.
        const l = yield* fs.lstat(`${root}/to/l`)
        assert.strictEqual(l.type, "SymbolicLink")
        assert.strictEqual(l.ino, (yield* fs.lstat(`${root}/from/l`)).ino)
        assert.strictEqual((yield* fs.lstat(`${root}/from/a`)).nlink, 2)
        assert.deepStrictEqual(yield* names(`${root}/to`), ["a", "b", "c", "l"])
        assert.deepStrictEqual(yield* fs.linkEach(`${root}/from`, `${root}/to`, []), [])
        const gone = yield* fs.linkEach(`${root}/nowhere`, `${root}/to`, ["a", "x"])
        assert.deepStrictEqual(gone.map((e) => e?.errno), ["ENOENT", "ENOENT"])
      }))
    })

    describe("batched calls (the …Each forms, through services/internal/each.ts)", () => {
      /** An answer as comparable data: the value, or the error's reason and errno. */
      const plain = <A>(answers: ReadonlyArray<{ readonly _tag: "Left"; readonly left: FileSystemError } | { readonly _tag: "Right"; readonly right: A }>) =>
        answers.map((a) => (a._tag === "Left" ? { failed: `${a.left.reason} ${a.left.errno}` } : { value: a.right }))

      test("lstat, readFile and readDirectory of each path answer what the single calls answer, item by item", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/small`, "ab")
        yield* put(`${root}/big`, "abcdefgh")
        yield* fs.makeDirectory(`${root}/dir`)
        yield* put(`${root}/dir/x`, "x")
        yield* fs.makeDirectory(`${root}/dir/y`)
        yield* fs.symlink(`${root}/dir`, `${root}/link`)
        const paths = ["small", "big", "dir", "dir/x", "link", "missing", "small/under", "missing/under", ""].map((p) => `${root}/${p}`)
        const singles = <A>(call: (path: string) => Effect.Effect<A, FileSystemError>) => Effect.forEach(paths, (p) => Effect.either(call(p)))
        const lstats = plain(yield* Each.lstatEach(fs, paths))
        assert.deepStrictEqual(lstats, plain(yield* singles(fs.lstat)))
        assert.deepStrictEqual(lstats.map((a) => ("value" in a ? a.value.type : a.failed)), [
          "File", "File", "Directory", "File", "SymbolicLink", "NotFound ENOENT", "NotADirectory ENOTDIR", "NotFound ENOENT", "Directory"
        ])
        const reads = plain(yield* Each.readFileEach(fs, paths, { maxBytes: 4 }))
        assert.deepStrictEqual(reads, plain(yield* singles((p) => fs.readFile(p, { maxBytes: 4 }))))
        assert.deepStrictEqual(reads.map((a) => ("value" in a ? text(a.value) : a.failed)), [
          "ab", "TooLarge EFBIG", "IsADirectory EISDIR", "x", "IsSymlink ELOOP", "NotFound ENOENT", "NotADirectory ENOTDIR", "NotFound ENOENT", "IsADirectory EISDIR"
        ])
        const listings = plain(yield* Each.readDirectoryEach(fs, paths))
        assert.deepStrictEqual(listings, plain(yield* singles(fs.readDirectory)))
        assert.deepStrictEqual(listings[2], { value: [{ name: "x", type: "File" }, { name: "y", type: "Directory" }] })
        assert.deepStrictEqual(listings[4], { failed: "NotADirectory ENOTDIR" }, "a link is never listed through")
        assert.deepStrictEqual(listings[5], { failed: "NotFound ENOENT" })
        assert.deepStrictEqual(yield* Each.lstatEach(fs, []), [])
      }))

      test("a directory's parts (a capped file, a listing, a measure) answer what the single calls answer; a linked directory is never gone through", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        const dir = (name: string) => `${root}/${name}`
        yield* fs.makeDirectory(dir("run"))
        yield* put(`${dir("run")}/manifest`, "ab")
        yield* fs.makeDirectory(`${dir("run")}/.leases`)
        yield* put(`${dir("run")}/.leases/x`, "lease")
        yield* put(`${dir("run")}/.leases/.tmp`, "")
        yield* fs.makeDirectory(`${dir("run")}/.leases/y`)
        yield* fs.symlink(dir("run"), `${dir("run")}/.leases/l`)
        yield* fs.makeDirectory(dir("big"))
        yield* put(`${dir("big")}/manifest`, "abcdefgh")
        yield* fs.makeDirectory(`${dir("mdir")}/manifest`, { recursive: true })
        yield* fs.makeDirectory(dir("mlink"))
        yield* fs.symlink(`${dir("run")}/manifest`, `${dir("mlink")}/manifest`)
        yield* fs.makeDirectory(dir("lfile"))
        yield* put(`${dir("lfile")}/.leases`, "not a directory")
        yield* fs.makeDirectory(dir("llink"))
        yield* fs.symlink(`${dir("run")}/.leases`, `${dir("llink")}/.leases`)
        yield* fs.makeDirectory(dir("empty"))
        yield* put(dir("file"), "a file where a run belongs")
        yield* fs.symlink(dir("run"), dir("link"))
        const names = ["run", "big", "mdir", "mlink", "lfile", "llink", "empty", "missing", "file"]
        const budget = { maxEntries: 100, maxDepth: 8 }
        const parts = { file: "manifest", maxBytes: 4, listing: ".leases" }
        const answers = yield* Each.readDirectoryPartsEach(fs, [...names, "link"].map(dir), { ...parts, measure: budget })
        const plainOne = <A>(a: { readonly _tag: "Left"; readonly left: FileSystemError } | { readonly _tag: "Right"; readonly right: A }) => plain([a])[0]
        for (const [k, name] of names.entries()) {
          const answer = answers[k]!
          assert.deepStrictEqual(plainOne(answer.file), plainOne(yield* Effect.either(fs.readFile(`${dir(name)}/manifest`, { maxBytes: 4 }))), `${name}: the file`)
          assert.deepStrictEqual(plainOne(answer.listing), plainOne(yield* Effect.either(fs.readDirectory(`${dir(name)}/.leases`))), `${name}: the listing`)
          assert.deepStrictEqual(plainOne(answer.measure!), plainOne(yield* Effect.either(fs.measureTree(dir(name), budget))), `${name}: the measure`)
        }
        const summary = answers.map((a) => [
          a.file._tag === "Right" ? text(a.file.right) : `${a.file.left.reason} ${a.file.left.errno}`,
          a.listing._tag === "Right" ? a.listing.right.map((e) => `${e.name}:${e.type}`).join(",") : `${a.listing.left.reason} ${a.listing.left.errno}`
        ])
        assert.deepStrictEqual(summary, [
          ["ab", ".tmp:File,l:SymbolicLink,x:File,y:Directory"],
          ["TooLarge EFBIG", "NotFound ENOENT"],
          ["IsADirectory EISDIR", "NotFound ENOENT"],
          ["IsSymlink ELOOP", "NotFound ENOENT"],
          ["NotFound ENOENT", "NotADirectory ENOTDIR"],
          ["NotFound ENOENT", "NotADirectory ENOTDIR"],
          ["NotFound ENOENT", "NotFound ENOENT"],
          ["NotFound ENOENT", "NotFound ENOENT"],
          ["NotADirectory ENOTDIR", "NotADirectory ENOTDIR"],
          // The single calls would read the linked run's manifest and leases: never through a link.
          ["NotADirectory ENOTDIR", "NotADirectory ENOTDIR"]
        ])
        const linkMeasure = answers[names.length]!.measure!
        assert.deepStrictEqual(plainOne(linkMeasure), plainOne(yield* Effect.either(fs.measureTree(dir("link"), budget))), "a linked directory measures the link")
        assert.strictEqual(linkMeasure._tag === "Right" ? linkMeasure.right.entries : -1, 0)
        const unmeasured = yield* Each.readDirectoryPartsEach(fs, [dir("run")], parts)
        assert.strictEqual(unmeasured[0]!.measure, undefined, "no measure unless asked")
        assert.deepStrictEqual(yield* Each.readDirectoryPartsEach(fs, [], parts), [])
      }))

      test("exclusive writes, renames and unlinks of each item: a failure answers its item and the rest still happen", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/taken`, "old")
        yield* fs.symlink(`${root}/nowhere`, `${root}/dangling`)
        yield* fs.makeDirectory(`${root}/dir`)
        const written = plain(yield* Each.writeFileExclusiveEach(fs, ["a", "taken", "missing/a", "dangling", "b"].map((p) => `${root}/${p}`), bytes("marker")))
        assert.deepStrictEqual(written.map((a) => ("failed" in a ? a.failed : "ok")), ["ok", "AlreadyExists EEXIST", "NotFound ENOENT", "AlreadyExists EEXIST", "ok"])
        for (const name of ["a", "b"]) {
          assert.strictEqual(yield* read(`${root}/${name}`), "marker")
          assert.strictEqual((yield* fs.lstat(`${root}/${name}`)).mode, 0o600)
        }
        assert.strictEqual(yield* read(`${root}/taken`), "old", "an existing file is never written")
        assert.strictEqual((yield* fs.lstat(`${root}/dangling`)).type, "SymbolicLink")
        yield* expectMissing(`${root}/nowhere`)

        const moved = plain(yield* Each.renameEach(fs, [["a", "dir/a"], ["missing", "dir/m"], ["b", "dir/b"]].map(([from, to]) => [`${root}/${from}`, `${root}/${to}`] as const)))
        assert.deepStrictEqual(moved.map((a) => ("failed" in a ? a.failed : "ok")), ["ok", "NotFound ENOENT", "ok"])
        assert.deepStrictEqual(yield* names(`${root}/dir`), ["a", "b"])

        const removed = plain(yield* Each.removeFileEach(fs, ["dir/a", "dir", "missing", "dangling", "dir/b"].map((p) => `${root}/${p}`)))
        assert.deepStrictEqual(removed.map((a) => ("failed" in a ? a.failed : "ok")), ["ok", "IsADirectory EISDIR", "NotFound ENOENT", "ok", "ok"])
        assert.deepStrictEqual(yield* names(root), ["dir", "taken"])
        assert.deepStrictEqual(yield* names(`${root}/dir`), [])
      }))
    })

    describe("removeTreeEach (through services/internal/each.ts)", () => {
      test("removes each tree as removeTree would, answers each, and never leaves the trees", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildTree(`${root}/one`, `${root}/outside`)
        yield* fs.makeDirectory(`${root}/two`)
        yield* put(`${root}/two/f`, "12345")
        yield* put(`${root}/file`, "a file root")
        const [one, two, file] = [yield* sizesOf(`${root}/one`), yield* sizesOf(`${root}/two`), yield* sizesOf(`${root}/file`)]
        const answers = yield* Each.removeTreeEach(fs, ["one", "missing", "two", "file"].map((p) => `${root}/${p}`), WIDE)
        assert.deepStrictEqual(plainRemovals(answers), [
          { value: { removedEntries: TREE_ENTRIES, removedBytes: one.bytes, removedApparentBytes: one.apparentBytes, complete: true } },
          { value: { removedEntries: 0, removedBytes: 0, removedApparentBytes: 0, complete: true } },
          { value: { removedEntries: 1, removedBytes: two.bytes, removedApparentBytes: two.apparentBytes, complete: true } },
          { value: { removedEntries: 0, removedBytes: file.bytes, removedApparentBytes: 11, complete: true } }
        ])
        assert.deepStrictEqual(yield* names(root), ["outside"])
        yield* assertOutsideUntouched(`${root}/outside`)
        // A budget cut answers that tree's partial removal; the next call finishes it.
        yield* buildTree(`${root}/again`, `${root}/outside2`)
        const cut = yield* Each.removeTreeEach(fs, [`${root}/again`], { maxEntries: 3, maxDepth: 64 })
        assert.deepStrictEqual(plainRemovals(cut).map((a) => "value" in a && a.value.complete), [false])
        const rest = yield* Each.removeTreeEach(fs, [`${root}/again`], WIDE)
        assert.deepStrictEqual(plainRemovals(rest).map((a) => "value" in a && a.value.complete), [true])
        yield* expectMissing(`${root}/again`)
        assert.deepStrictEqual(yield* Each.removeTreeEach(fs, [], WIDE), [])
      }))
    })

    describe("utimes and chmod", () => {
      test("utimes sets the entry's own times; on a link it leaves the target alone", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/target`, "t")
        yield* fs.utimes(`${root}/target`, T1, T1)
        assert.strictEqual((yield* fs.lstat(`${root}/target`)).mtimeMs, T1)
        yield* fs.symlink(`${root}/target`, `${root}/link`)
        yield* fs.utimes(`${root}/link`, T2, T2)
        assert.strictEqual((yield* fs.lstat(`${root}/link`)).mtimeMs, T2)
        assert.strictEqual((yield* fs.lstat(`${root}/target`)).mtimeMs, T1)
      }))

      test("chmod changes mode bits of files and directories but refuses a link", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/file`, "f", 0o600)
        yield* fs.chmod(`${root}/file`, 0o640)
        assert.strictEqual((yield* fs.lstat(`${root}/file`)).mode, 0o640)
        yield* fs.makeDirectory(`${root}/dir`)
        yield* fs.chmod(`${root}/dir`, 0o755)
        assert.strictEqual((yield* fs.lstat(`${root}/dir`)).mode, 0o755)

        yield* fs.symlink(`${root}/file`, `${root}/link`)
        yield* expectFailure(fs.chmod(`${root}/link`, 0o777), "IsSymlink", "ELOOP")
        assert.strictEqual((yield* fs.lstat(`${root}/file`)).mode, 0o640)
        yield* expectFailure(fs.chmod(`${root}/absent`, 0o600), "NotFound", "ENOENT")
      }))
    })

    describe("copyFile", () => {
      test("copies content and mode to a new path and nothing else", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        const content = "line\n".repeat(30_000) // larger than one copy chunk
        yield* put(`${root}/src`, content, 0o640)
        yield* fs.copyFile(`${root}/src`, `${root}/dst`)
        assert.strictEqual(yield* read(`${root}/dst`), content)
        const src = yield* fs.lstat(`${root}/src`)
        const dst = yield* fs.lstat(`${root}/dst`)
        assert.strictEqual(dst.mode, 0o640)
        assert.notStrictEqual(dst.ino, src.ino)
        assert.strictEqual(src.nlink, 1)
        yield* fs.copyFile(`${root}/src`, `${root}/unsynced`, { sync: false })
        assert.strictEqual(yield* read(`${root}/unsynced`), content)
      }))

      test("refuses an existing destination and a symlink source", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/src`, "src")
        yield* put(`${root}/dst`, "dst")
        yield* expectFailure(fs.copyFile(`${root}/src`, `${root}/dst`), "AlreadyExists", "EEXIST")
        assert.strictEqual(yield* read(`${root}/dst`), "dst")
        yield* fs.symlink(`${root}/src`, `${root}/link`)
        yield* expectFailure(fs.copyFile(`${root}/link`, `${root}/copy`), "IsSymlink", "ELOOP")
        yield* expectMissing(`${root}/copy`)
        yield* fs.symlink(`${root}/elsewhere`, `${root}/trap`)
        yield* expectFailure(fs.copyFile(`${root}/src`, `${root}/trap`), "AlreadyExists", "EEXIST")
        yield* expectMissing(`${root}/elsewhere`)
      }))
    })

    describe("copyFileHashed and hashFile", () => {
      // sha256 of the content below, from `sha256sum`; and of the empty file.
      const content = "0123456789abcdef".repeat(20_000) // several chunks
      const expected = createHash("sha256").update(content).digest("hex")
      const EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

      test("copies like copyFile and returns the digest of the bytes copied", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/src`, content, 0o640)
        const digest = yield* fs.copyFileHashed(`${root}/src`, `${root}/dst`)
        assert.deepStrictEqual(digest, { sha256: expected, bytes: content.length })
        assert.strictEqual(yield* read(`${root}/dst`), content)
        const dst = yield* fs.lstat(`${root}/dst`)
        assert.strictEqual(dst.mode, 0o640)
        assert.notStrictEqual(dst.ino, (yield* fs.lstat(`${root}/src`)).ino)
        assert.deepStrictEqual(yield* fs.hashFile(`${root}/dst`), digest)
        yield* put(`${root}/empty`, "")
        assert.deepStrictEqual(yield* fs.copyFileHashed(`${root}/empty`, `${root}/empty2`, { sync: true }), { sha256: EMPTY, bytes: 0 })
        assert.deepStrictEqual(yield* fs.hashFile(`${root}/empty2`), { sha256: EMPTY, bytes: 0 })
      }))

      test("never through a symlink, never over an existing entry, never a directory", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/src`, "src")
        yield* put(`${root}/dst`, "dst")
        yield* expectFailure(fs.copyFileHashed(`${root}/src`, `${root}/dst`), "AlreadyExists", "EEXIST")
        assert.strictEqual(yield* read(`${root}/dst`), "dst")
        yield* fs.symlink(`${root}/src`, `${root}/link`)
        yield* expectFailure(fs.copyFileHashed(`${root}/link`, `${root}/copy`), "IsSymlink", "ELOOP")
        yield* expectFailure(fs.hashFile(`${root}/link`), "IsSymlink", "ELOOP")
        yield* expectMissing(`${root}/copy`)
        yield* fs.makeDirectory(`${root}/dir`)
        yield* expectFailure(fs.hashFile(`${root}/dir`), "IsADirectory", "EISDIR")
        yield* expectFailure(fs.hashFile(`${root}/absent`), "NotFound", "ENOENT")
      }))
    })

    describe("copyFileStamped", () => {
      const small = "snapshot me"
      const large = "0123456789abcdef".repeat(80_000) // above the Node layer's 1 MiB synchronous path
      for (const [label, content] of [["a small file", small], ["a large file", large]] as const) {
        test(`copies ${label} with its mode and mtime, hashes it, and describes its source`, Effect.gen(function*() {
          const { fs, scratch: { root } } = yield* context
          yield* put(`${root}/src`, content, 0o640)
          yield* fs.utimes(`${root}/src`, T1, T1)
          const copy = yield* fs.copyFileStamped(`${root}/src`, `${root}/dst`)
          assert.strictEqual(copy.sha256, createHash("sha256").update(content).digest("hex"))
          assert.strictEqual(copy.bytes, content.length)
          const src = yield* fs.lstat(`${root}/src`)
          assert.deepStrictEqual(copy.source, src)
          assert.strictEqual(yield* read(`${root}/dst`), content)
          const dst = yield* fs.lstat(`${root}/dst`)
          assert.strictEqual(dst.mode, 0o640)
          assert.strictEqual(dst.mtimeMs, T1)
          assert.strictEqual(dst.nlink, 1)
          assert.notStrictEqual(dst.ino, src.ino)
          assert.deepStrictEqual(yield* fs.hashFile(`${root}/dst`), { sha256: copy.sha256, bytes: copy.bytes })
        }))
      }

      test("never through a symlink, never over an existing entry, never a directory; errors name the path at fault", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/src`, "src")
        yield* put(`${root}/dst`, "dst")
        const taken = yield* expectFailure(fs.copyFileStamped(`${root}/src`, `${root}/dst`), "AlreadyExists", "EEXIST")
        assert.strictEqual(taken.path, `${root}/dst`)
        assert.strictEqual(yield* read(`${root}/dst`), "dst")
        yield* fs.symlink(`${root}/src`, `${root}/link`)
        const link = yield* expectFailure(fs.copyFileStamped(`${root}/link`, `${root}/copy`), "IsSymlink", "ELOOP")
        assert.strictEqual(link.path, `${root}/link`)
        yield* fs.makeDirectory(`${root}/dir`)
        yield* expectFailure(fs.copyFileStamped(`${root}/dir`, `${root}/copy`), "IsADirectory", "EISDIR")
        const absent = yield* expectFailure(fs.copyFileStamped(`${root}/absent`, `${root}/copy`), "NotFound", "ENOENT")
        assert.strictEqual(absent.path, `${root}/absent`)
        yield* expectFailure(fs.copyFileStamped(`${root}/src`, `${root}/no-dir/copy`), "NotFound", "ENOENT")
        yield* expectMissing(`${root}/copy`)
        assert.strictEqual(yield* read(`${root}/src`), "src")
      }))
    })

    describe("copies and hashes of a file with holes", () => {
      const piece = (seed: number, length: number) => Uint8Array.from({ length }, (_, i) => ((i * 31 + seed) % 251) + 1)
      const MiB = 1 << 20
      // Holes at the start, in the middle, at the end, everywhere; pieces at offsets no block boundary meets.
      const layouts: ReadonlyArray<readonly [string, number, ReadonlyArray<readonly [number, Uint8Array]>]> = [
        ["data at both ends (large)", 3 * MiB, [[0, piece(1, 5000)], [3 * MiB - 4000, piece(2, 4000)]]],
        ["data in the middle only, a hole to its end (large)", 3 * MiB + 17, [[MiB + 123, piece(3, 70_000)]]],
        ["nothing but a hole (large)", 2 * MiB, []],
        ["a hole, then data at the end (small)", 300_000, [[299_000, piece(4, 1000)]]],
        ["data, a hole, data, a hole (small)", 200_001, [[10, piece(5, 100)], [100_000, piece(6, 9000)]]]
      ]
      for (const [label, size, pieces] of layouts) {
        test(`${label}: every copy has the same bytes and hash, and allocates no more than its source`, Effect.gen(function*() {
          const { fs, scratch: { root, sparseFile } } = yield* context
          const expected = new Uint8Array(size)
          for (const [offset, data] of pieces) expected.set(data, offset)
          const sha256 = createHash("sha256").update(expected).digest("hex")
          yield* sparseFile(`${root}/src`, size, pieces)
          const source = yield* fs.lstat(`${root}/src`)
          assert.strictEqual(source.size, size)
          assert.isNumber(source.blocks)
          assert.deepStrictEqual(yield* fs.hashFile(`${root}/src`), { sha256, bytes: size })
          yield* fs.copyFile(`${root}/src`, `${root}/plain`)
          assert.deepStrictEqual(yield* fs.copyFileHashed(`${root}/src`, `${root}/hashed`, { sync: true }), { sha256, bytes: size })
          const stamped = yield* fs.copyFileStamped(`${root}/src`, `${root}/stamped`)
          assert.deepStrictEqual({ sha256: stamped.sha256, bytes: stamped.bytes }, { sha256, bytes: size })
          assert.deepStrictEqual(stamped.source, yield* fs.lstat(`${root}/src`))
          for (const copy of ["plain", "hashed", "stamped"]) {
            const info = yield* fs.lstat(`${root}/${copy}`)
            assert.strictEqual(info.size, size, copy)
            assert.deepStrictEqual(yield* fs.readFile(`${root}/${copy}`), expected, copy)
            assert.deepStrictEqual(yield* fs.hashFile(`${root}/${copy}`), { sha256, bytes: size }, copy)
            // A block's slack for each piece: a piece a block boundary cuts allocates both blocks.
            assert.isAtMost(info.blocks!, source.blocks! + 8 * pieces.length, copy)
          }
        }))
      }
    })

    describe("syncFileSystem", () => {
      test("syncs a directory's tree and changes nothing in it; refuses what is not a directory", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/tree`)
        yield* fs.makeDirectory(`${root}/tree/sub`)
        yield* put(`${root}/tree/sub/f`, "data")
        yield* fs.utimes(`${root}/tree/sub/f`, T1, T1)
        yield* fs.symlink(`${root}/tree/sub/f`, `${root}/tree/link`)
        const before = yield* fs.readDirectoryInfo(`${root}/tree/sub`)
        yield* fs.syncFileSystem(`${root}/tree`)
        yield* fs.syncFileSystem(`${root}/tree/`)
        assert.deepStrictEqual(yield* fs.readDirectoryInfo(`${root}/tree/sub`), before)
        assert.strictEqual(yield* read(`${root}/tree/sub/f`), "data")
        yield* expectFailure(fs.syncFileSystem(`${root}/tree/sub/f`), "NotADirectory", "ENOTDIR")
        yield* expectFailure(fs.syncFileSystem(`${root}/absent`), "NotFound", "ENOENT")
        const link = yield* Effect.flip(fs.syncFileSystem(`${root}/tree/link`))
        assert.include(["ELOOP", "ENOTDIR"], link.errno)
      }))
    })

    describe("makeDirectory", () => {
      test("is exclusive with an exact mode (default 0o700)", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/private`)
        assert.strictEqual((yield* fs.lstat(`${root}/private`)).mode, 0o700)
        yield* fs.makeDirectory(`${root}/shared`, { mode: 0o755 })
        assert.strictEqual((yield* fs.lstat(`${root}/shared`)).mode, 0o755)
        yield* expectFailure(fs.makeDirectory(`${root}/private`), "AlreadyExists", "EEXIST")
        yield* expectFailure(fs.makeDirectory(`${root}/no/parent`), "NotFound", "ENOENT")
      }))

      test("recursive creates parents with the mode and accepts an existing directory only", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/a/b/c`, { recursive: true, mode: 0o750 })
        for (const path of [`${root}/a`, `${root}/a/b`, `${root}/a/b/c`]) {
          const info = yield* fs.lstat(path)
          assert.strictEqual(info.type, "Directory")
          assert.strictEqual(info.mode, 0o750)
        }
        yield* fs.makeDirectory(`${root}/a/b/c`, { recursive: true })
        yield* fs.makeDirectory(`${root}/a/b`, { recursive: true, mode: 0o700 })
        assert.strictEqual((yield* fs.lstat(`${root}/a/b`)).mode, 0o750) // existing directories keep their mode

        yield* put(`${root}/file`, "f")
        yield* expectFailure(fs.makeDirectory(`${root}/file`, { recursive: true }), "AlreadyExists", "EEXIST")
        yield* fs.symlink(`${root}/a`, `${root}/link`)
        yield* expectFailure(fs.makeDirectory(`${root}/link`, { recursive: true }), "AlreadyExists", "EEXIST")
        yield* expectFailure(fs.makeDirectory(`${root}/file/sub`, { recursive: true }), "NotADirectory", "ENOTDIR")
      }))
    })

    describe("measureTree", () => {
      test("sums the tree as du does and counts entries without following links", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildTree(`${root}/tree`, `${root}/outside`)
        const measure = yield* fs.measureTree(`${root}/tree`, WIDE)
        // Disk usage and apparent size of every entry (the root, directories and links too), never a link's target.
        assert.deepStrictEqual(measure, { ...(yield* sizesOf(`${root}/tree`)), fileBytes: TREE_BYTES, entries: TREE_ENTRIES, complete: true })
        assert.isAbove(measure.apparentBytes, TREE_BYTES)
        yield* assertOutsideUntouched(`${root}/outside`)
      }))

      test("a file of several hard links counts once per walk, as du counts it", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildTree(`${root}/tree`, `${root}/outside`)
        yield* put(`${root}/tree/d1/big`, "h".repeat(9000))
        yield* fs.link(`${root}/tree/d1/big`, `${root}/tree/again`)
        yield* fs.link(`${root}/tree/d1/big`, `${root}/tree/d1/d2/third`)
        // Linked from outside too: the tree's walk meets it, so it counts (du does).
        yield* fs.link(`${root}/outside/big`, `${root}/tree/fromOutside`)
        const du = yield* duOf(`${root}/tree`)
        const big = yield* fs.lstat(`${root}/tree/d1/big`)
        // Three names, one inode: every name but one is left out.
        assert.deepStrictEqual([du.naive.bytes - du.bytes, du.naive.apparentBytes - du.apparentBytes], [2 * big.blocks! * 512, 2 * 9000])
        const measure = yield* fs.measureTree(`${root}/tree`, WIDE)
        assert.deepStrictEqual(measure, { bytes: du.bytes, apparentBytes: du.apparentBytes, fileBytes: TREE_BYTES + 9000 + 5000, entries: TREE_ENTRIES + 4, complete: true })
        const removal = yield* fs.removeTree(`${root}/tree`, WIDE)
        assert.deepStrictEqual(removal, { removedEntries: TREE_ENTRIES + 4, complete: true, removedBytes: du.bytes, removedApparentBytes: du.apparentBytes })
        yield* expectMissing(`${root}/tree`)
        assert.strictEqual((yield* fs.lstat(`${root}/outside/big`)).nlink, 1)
        yield* assertOutsideUntouched(`${root}/outside`)
      }))

      test("a cut by entries or depth says incomplete", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildTree(`${root}/tree`, `${root}/outside`)
        const whole = yield* sizesOf(`${root}/tree`)
        const cut = yield* fs.measureTree(`${root}/tree`, { maxEntries: 3, maxDepth: 64 })
        assert.strictEqual(cut.entries, 3)
        assert.isFalse(cut.complete)
        assert.isAtMost(cut.fileBytes, TREE_BYTES)
        assert.isBelow(cut.apparentBytes, whole.apparentBytes)
        assert.isAtMost(cut.bytes, whole.bytes)
        const exact = yield* fs.measureTree(`${root}/tree`, { maxEntries: TREE_ENTRIES, maxDepth: 3 })
        assert.strictEqual(exact.entries, TREE_ENTRIES)
        assert.isTrue(exact.complete)

        // Depth 1: a.txt, d1, link, dangling, fileLink; d1 is not opened.
        // The sizes of what it visited: the root, its five entries (d1 itself, not what it holds).
        const shallow = yield* fs.measureTree(`${root}/tree`, { maxEntries: 100, maxDepth: 1 })
        assert.deepStrictEqual([shallow.entries, shallow.fileBytes, shallow.complete], [5, 3, false])
        const visited = (yield* Effect.forEach(["", "/a.txt", "/d1", "/link", "/dangling", "/fileLink"], (p) => fs.lstat(`${root}/tree${p}`)))
        assert.deepStrictEqual([shallow.bytes, shallow.apparentBytes], [
          visited.reduce((t, i) => t + i.blocks! * 512, 0),
          visited.reduce((t, i) => t + i.size, 0)
        ])
        // Depth 2 adds b.bin and d2; d2 is not opened.
        const two = yield* fs.measureTree(`${root}/tree`, { maxEntries: 100, maxDepth: 2 })
        assert.deepStrictEqual([two.entries, two.fileBytes, two.complete], [7, 103, false])
      }))

      test("a file or link root measures itself; a missing root fails", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/file`, "12345")
        const file = yield* fs.lstat(`${root}/file`)
        assert.deepStrictEqual(yield* fs.measureTree(`${root}/file`, WIDE), { bytes: file.blocks! * 512, apparentBytes: 5, fileBytes: 5, entries: 0, complete: true })
        yield* fs.makeDirectory(`${root}/dir`)
        yield* put(`${root}/dir/big`, "x".repeat(1000))
        yield* fs.symlink(`${root}/dir`, `${root}/link`)
        // The link itself (its target's length, as du -sb says), never what it points at.
        const link = yield* fs.lstat(`${root}/link`)
        const viaLink = yield* fs.measureTree(`${root}/link`, WIDE)
        assert.deepStrictEqual(viaLink, { bytes: link.blocks! * 512, apparentBytes: `${root}/dir`.length, fileBytes: 0, entries: 0, complete: true })
        yield* expectFailure(fs.measureTree(`${root}/absent`, WIDE), "NotFound", "ENOENT")
      }))
    })

    describe("removeTree", () => {
      test("removes everything below and the root, never a link target", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildTree(`${root}/tree`, `${root}/outside`)
        // Sizes: what its measure says, every entry unlinked (a link counts itself, never its 5,000-byte target).
        const whole = yield* sizesOf(`${root}/tree`)
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/tree`, WIDE), {
          removedEntries: TREE_ENTRIES,
          complete: true,
          removedBytes: whole.bytes,
          removedApparentBytes: whole.apparentBytes
        })
        yield* expectMissing(`${root}/tree`)
        yield* assertOutsideUntouched(`${root}/outside`)
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/tree`, WIDE), { removedEntries: 0, complete: true, removedBytes: 0, removedApparentBytes: 0 })
        // Nothing to remove when a parent is missing too (a cache dir whose parent was never made).
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/absent/tree`, WIDE), { removedEntries: 0, complete: true, removedBytes: 0, removedApparentBytes: 0 })
      }))

      test("a budget stop leaves the root and a rerun completes", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildTree(`${root}/tree`, `${root}/outside`)
        const before = yield* sizesOf(`${root}/tree`)
        const first = yield* fs.removeTree(`${root}/tree`, { maxEntries: 3, maxDepth: 64 })
        assert.deepStrictEqual([first.removedEntries, first.complete], [3, false])
        assert.strictEqual((yield* fs.lstat(`${root}/tree`)).type, "Directory")
        const after = yield* fs.measureTree(`${root}/tree`, WIDE)
        assert.strictEqual(after.entries, TREE_ENTRIES - 3)
        // What the first call counted is exactly what left the tree's disk usage (a directory keeps its
        // blocks as entries go; its apparent size may shrink, as on tmpfs, so that is at most).
        assert.strictEqual(first.removedBytes, before.bytes - after.bytes)
        assert.isAtMost(first.removedApparentBytes, before.apparentBytes - after.apparentBytes)
        const rest = yield* fs.removeTree(`${root}/tree`, WIDE)
        assert.deepStrictEqual(rest, { removedEntries: TREE_ENTRIES - 3, complete: true, removedBytes: after.bytes, removedApparentBytes: after.apparentBytes })
        yield* expectMissing(`${root}/tree`)
        yield* assertOutsideUntouched(`${root}/outside`)
      }))

      test("a depth stop leaves what is deeper and says incomplete", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildTree(`${root}/tree`, `${root}/outside`)
        const before = yield* sizesOf(`${root}/tree`)
        const shallow = yield* fs.removeTree(`${root}/tree`, { maxEntries: 100, maxDepth: 2 })
        assert.isFalse(shallow.complete)
        assert.strictEqual(yield* read(`${root}/tree/d1/d2/c`), "ccccccc")
        assert.deepStrictEqual(yield* names(`${root}/tree`), ["d1"])
        assert.deepStrictEqual(yield* names(`${root}/tree/d1`), ["d2"])
        assert.strictEqual(shallow.removedEntries, TREE_ENTRIES - 3)
        // The five removed entries' sizes: the root, d1 and d2 (with c) stay.
        const left = yield* Effect.forEach(["", "/d1", "/d1/d2", "/d1/d2/c"], (p) => fs.lstat(`${root}/tree${p}`))
        const after = yield* sizesOf(`${root}/tree`)
        assert.deepStrictEqual(after, { bytes: left.reduce((t, i) => t + i.blocks! * 512, 0), apparentBytes: left.reduce((t, i) => t + i.size, 0) })
        assert.strictEqual(shallow.removedBytes, before.bytes - after.bytes)
        assert.isAbove(shallow.removedApparentBytes, TREE_BYTES - "ccccccc".length)
        yield* assertOutsideUntouched(`${root}/outside`)
      }))

      test("a link root is unlinked, its target kept", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildTree(`${root}/tree`, `${root}/outside`)
        yield* fs.symlink(`${root}/outside`, `${root}/rootLink`)
        // The link's own sizes count (as its measure says), never its target's.
        const link = yield* sizesOf(`${root}/rootLink`)
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/rootLink`, WIDE), { removedEntries: 0, complete: true, removedBytes: link.bytes, removedApparentBytes: `${root}/outside`.length })
        yield* expectMissing(`${root}/rootLink`)
        yield* assertOutsideUntouched(`${root}/outside`)
        // A file root is unlinked too, and its sizes count (as its measure does).
        yield* put(`${root}/file`, "12345")
        const file = yield* sizesOf(`${root}/file`)
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/file`, WIDE), { removedEntries: 0, complete: true, removedBytes: file.bytes, removedApparentBytes: 5 })
        yield* expectMissing(`${root}/file`)
      }))

      it.effect.prop(
        "on random trees measure counts every entry and byte, and budgeted removal converges, counting the same bytes",
        [FastCheck.array(treeItem, { maxLength: 25 }), FastCheck.integer({ min: 1, max: 6 })],
        ([items, chunk]) =>
          Effect.gen(function*() {
            const { fs, scratch: { root } } = yield* context
            const tree = `${root}/tree`
            yield* fs.makeDirectory(tree)
            const dirs = [tree]
            const files: Array<{ readonly path: string; readonly size: number }> = []
            let bytesWritten = 0
            let hardLinks = 0
            for (const [index, item] of items.entries()) {
              const path = `${dirs[item.parent % dirs.length]}/e${index}`
              const linked = files[item.parent % Math.max(1, files.length)]
              if (item.kind === "file" || (item.kind === "hardLink" && linked === undefined)) {
                yield* put(path, "z".repeat(item.size))
                files.push({ path, size: item.size })
                bytesWritten += item.size
              } else if (item.kind === "hardLink") {
                yield* fs.link(linked!.path, path) // another name of a file of the tree: counted once
                hardLinks++
              } else if (item.kind === "dir") {
                yield* fs.makeDirectory(path)
                dirs.push(path)
              } else {
                yield* fs.symlink(root, path) // a link to an ancestor: following it would loop
              }
            }
            const du = yield* sizesOf(tree)
            const measure = yield* fs.measureTree(tree, WIDE)
            assert.deepStrictEqual(measure, { ...du, fileBytes: bytesWritten, entries: items.length, complete: true })

            let removed = 0
            const removedSizes = { bytes: 0, apparentBytes: 0 }
            for (let round = 0; round <= items.length; round++) {
              const step = yield* fs.removeTree(tree, { maxEntries: chunk, maxDepth: 64 })
              removed += step.removedEntries
              removedSizes.bytes += step.removedBytes
              removedSizes.apparentBytes += step.removedApparentBytes
              if (step.complete) break
              assert.strictEqual(step.removedEntries, chunk)
            }
            assert.strictEqual(removed, items.length)
            // Slices add up to the tree's disk usage (a file whose other name went in an earlier slice may
            // count again: each call is its own walk); apparent sizes at most that much (directories may
            // shrink as entries go).
            if (hardLinks === 0) assert.strictEqual(removedSizes.bytes, du.bytes)
            else assert.isAtLeast(removedSizes.bytes, du.bytes)
            if (chunk >= items.length) assert.deepStrictEqual(removedSizes, du)
            yield* expectMissing(tree)
            assert.deepStrictEqual(yield* names(root), [])
          }).pipe(Effect.provide(setup.layer())),
        { fastCheck: { numRuns: 25 } }
      )
    })

    describe("trees deeper than a walk's window of descriptors", () => {
      // Every level: a (1 byte), b (the spine, one level deeper), c (2 bytes), d/e (3 bytes). The walk goes
      // down b long past its window (domain/WalkDepth.ts) and, coming back up, must go on with what each
      // level had left (c, d: after b in name order), nothing twice, nothing skipped.
      const LEVELS = 3 * WALK_WINDOW
      const ENTRIES = 5 * LEVELS + 4
      const BYTES = 6 * (LEVELS + 1)
      const buildDeep = (root: string) =>
        Effect.gen(function*() {
          const { fs } = yield* context
          let dir = root
          for (let level = 0; level <= LEVELS; level++) {
            yield* fs.makeDirectory(dir)
            yield* put(`${dir}/a`, "a")
            yield* put(`${dir}/c`, "cc")
            yield* fs.makeDirectory(`${dir}/d`)
            yield* put(`${dir}/d/e`, "eee")
            dir = `${dir}/b`
          }
        })

      test("measureTree counts every entry once, and maxDepth cuts it exactly as deep as it says", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildDeep(`${root}/deep`)
        assert.deepStrictEqual(yield* fs.measureTree(`${root}/deep`, WIDE), { ...(yield* sizesOf(`${root}/deep`)), fileBytes: BYTES, entries: ENTRIES, complete: true })
        // Depth D past the window: the levels above D listed (a, b, c, d each), d/e in all but the last.
        const D = WALK_WINDOW + 8
        const cut = yield* fs.measureTree(`${root}/deep`, { maxEntries: 1_000_000, maxDepth: D })
        assert.deepStrictEqual([cut.fileBytes, cut.entries, cut.complete], [6 * D - 3, 5 * D - 1, false])
      }))

      test("removeTree removes it whole, in budget slices too, and a depth stop leaves exactly what is deeper", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* buildDeep(`${root}/deep`)
        const whole = yield* sizesOf(`${root}/deep`)
        assert.deepStrictEqual(removedSizes(yield* fs.removeTree(`${root}/deep`, WIDE)), whole)
        yield* expectMissing(`${root}/deep`)

        yield* buildDeep(`${root}/sliced`)
        let removed = 0
        let removedBytes = 0
        for (let round = 0; round <= ENTRIES; round++) {
          const slice = yield* fs.removeTree(`${root}/sliced`, { maxEntries: 7, maxDepth: 1_000_000 })
          removed += slice.removedEntries
          removedBytes += slice.removedBytes
          if (slice.complete) break
          assert.strictEqual(slice.removedEntries, 7)
        }
        assert.deepStrictEqual([removed, removedBytes], [ENTRIES, whole.bytes])
        yield* expectMissing(`${root}/sliced`)

        // Depth D: levels 0…D-1 lose a, c and (but the last) d/e; b at depth D and everything below stays.
        yield* buildDeep(`${root}/cut`)
        const D = WALK_WINDOW + 8
        const cut = yield* fs.removeTree(`${root}/cut`, { maxEntries: 1_000_000, maxDepth: D })
        assert.deepStrictEqual([cut.removedEntries, cut.complete], [4 * D - 2, false])
        const left = yield* fs.measureTree(`${root}/cut`, WIDE)
        assert.deepStrictEqual([left.fileBytes, left.entries, left.complete], [BYTES - (6 * D - 3), ENTRIES - (4 * D - 2), true])
        assert.strictEqual(cut.removedBytes, whole.bytes - left.bytes)
        const rest = yield* fs.removeTree(`${root}/cut`, WIDE)
        assert.deepStrictEqual(rest, { removedEntries: ENTRIES - (4 * D - 2), complete: true, removedBytes: left.bytes, removedApparentBytes: left.apparentBytes })
        assert.deepStrictEqual(yield* names(root), [])
      }))
    })

    describe("names are bytes (DESIGN \"Names are bytes\", domain/NameBytes.ts)", () => {
      // Bytes 0xe9 and 0xff are not UTF-8: each rides in the name as its escaped lone surrogate.
      const RAW = "caf\udce9-\udcff"
      // What a lossy decoding makes of it: another name, never created or found in its place.
      const LOSSY = "caf\ufffd-\ufffd"
      // Valid UTF-8 holding U+FFFD itself: stays itself.
      const REAL = "r\ufffd.txt"

      test("a file so named is created, listed, read, described, renamed, replaced and removed under that exact name", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* put(`${root}/${RAW}`, "raw bytes", 0o640)
        yield* put(`${root}/${REAL}`, "real")
        const sorted = [RAW, REAL].sort()
        assert.deepStrictEqual(yield* fs.readDirectory(root), sorted.map((name) => ({ name, type: "File" })))
        assert.strictEqual(yield* read(`${root}/${RAW}`), "raw bytes")
        assert.strictEqual(yield* read(`${root}/${REAL}`), "real")
        const info = yield* fs.lstat(`${root}/${RAW}`)
        assert.deepStrictEqual([info.type, info.size, info.mode], ["File", 9, 0o640])
        const missing = yield* expectMissing(`${root}/${LOSSY}`)
        assert.strictEqual(missing.path, `${root}/${LOSSY}`)
        // A failure names the escaped path, never a lossy one.
        const absent = yield* expectMissing(`${root}/${RAW}-dir/${RAW}`)
        assert.strictEqual(absent.path, `${root}/${RAW}-dir/${RAW}`)
        const listed = yield* fs.readDirectoryInfo(root)
        assert.deepStrictEqual(listed.map((e) => e.name), sorted)
        assert.strictEqual(listed.find((e) => e.name === RAW)?.info.ino, info.ino)
        const [each] = yield* Each.lstatEach(fs, [`${root}/${RAW}`])
        assert.strictEqual(each?._tag === "Right" ? each.right.ino : undefined, info.ino)
        const [content] = yield* Each.readFileEach(fs, [`${root}/${RAW}`], { maxBytes: 64 })
        assert.strictEqual(content?._tag === "Right" ? text(content.right) : undefined, "raw bytes")
        yield* fs.chmod(`${root}/${RAW}`, 0o600)
        yield* fs.utimes(`${root}/${RAW}`, T1, T1)
        const touched = yield* fs.lstat(`${root}/${RAW}`)
        assert.deepStrictEqual([touched.mode, touched.mtimeMs], [0o600, T1])
        yield* fs.rename(`${root}/${RAW}`, `${root}/${RAW}.moved`)
        yield* expectMissing(`${root}/${RAW}`)
        assert.strictEqual((yield* fs.lstat(`${root}/${RAW}.moved`)).ino, info.ino)
        yield* fs.rename(`${root}/${RAW}.moved`, `${root}/${RAW}`, { sync: false })
        yield* fs.writeFileAtomic(`${root}/${RAW}`, bytes("replaced"))
        yield* fs.writeFileInPlace(`${root}/${RAW}`, bytes("REPLACED"))
        assert.strictEqual(yield* read(`${root}/${RAW}`), "REPLACED")
        assert.deepStrictEqual(yield* names(root), sorted)
        const [listing] = yield* Each.readDirectoryEach(fs, [root])
        assert.deepStrictEqual(listing?._tag === "Right" ? listing.right.map((e) => e.name) : undefined, sorted)
        yield* fs.removeFile(`${root}/${RAW}`)
        yield* fs.removeFile(`${root}/${REAL}`)
        assert.deepStrictEqual(yield* names(root), [])
      }))

      test("a run directory so named, and lease names so named, are read in parts as the single calls read them", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        for (const [run, lease] of [[RAW, RAW], [RAW, "plain"], ["plain", RAW], ["plain", REAL]] as const) {
          const dir = `${root}/${run}-run`
          yield* fs.makeDirectory(`${dir}/.leases`, { recursive: true })
          yield* put(`${dir}/manifest`, `manifest of ${lease.length}`)
          yield* put(`${dir}/.leases/${lease}`, "lease")
          const [parts] = yield* Each.readDirectoryPartsEach(fs, [dir], { file: "manifest", maxBytes: 64, listing: ".leases", measure: { maxEntries: 10, maxDepth: 4 } })
          assert.strictEqual(parts?.file._tag === "Right" ? text(parts.file.right) : undefined, `manifest of ${lease.length}`)
          assert.deepStrictEqual(parts?.listing._tag === "Right" ? parts.listing.right : undefined, [{ name: lease, type: "File" }])
          assert.deepStrictEqual(parts?.measure, Either.right(yield* fs.measureTree(dir, { maxEntries: 10, maxDepth: 4 })))
          yield* fs.removeTree(dir, { maxEntries: 100, maxDepth: 8 })
        }
      }))

      test("a directory so named is made (recursively too), listed, synced, measured and removed whole", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        yield* fs.makeDirectory(`${root}/${RAW}/sub/${RAW}`, { recursive: true, mode: 0o750 })
        yield* put(`${root}/${RAW}/sub/${RAW}/${RAW}`, "12345")
        yield* put(`${root}/${RAW}/${REAL}`, "xy")
        yield* fs.makeDirectory(`${root}/${RAW}/empty-${RAW}`)
        assert.strictEqual((yield* fs.lstat(`${root}/${RAW}/sub/${RAW}`)).mode, 0o750)
        assert.deepStrictEqual(yield* names(`${root}/${RAW}/sub/${RAW}`), [RAW])
        yield* fs.syncFileSystem(`${root}/${RAW}`)
        // sub, sub/RAW, sub/RAW/RAW, REAL, empty-RAW
        assert.deepStrictEqual(yield* fs.measureTree(`${root}/${RAW}`, WIDE), { ...(yield* sizesOf(`${root}/${RAW}`)), fileBytes: 7, entries: 5, complete: true })
        assert.deepStrictEqual(yield* fs.measureTree(root, WIDE), { ...(yield* sizesOf(root)), fileBytes: 7, entries: 6, complete: true })
        yield* fs.removeDirectory(`${root}/${RAW}/empty-${RAW}`)
        const named = yield* sizesOf(`${root}/${RAW}`)
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/${RAW}`, WIDE), { removedEntries: 4, complete: true, removedBytes: named.bytes, removedApparentBytes: named.apparentBytes })
        assert.deepStrictEqual(yield* names(root), [])
        // A root so named that is a file is removed as itself.
        yield* put(`${root}/${RAW}`, "x")
        const file = yield* sizesOf(`${root}/${RAW}`)
        assert.deepStrictEqual(yield* fs.measureTree(`${root}/${RAW}`, WIDE), { ...file, fileBytes: 1, entries: 0, complete: true })
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/${RAW}`, WIDE), { removedEntries: 0, complete: true, removedBytes: file.bytes, removedApparentBytes: 1 })
        assert.deepStrictEqual(yield* names(root), [])
        // Directories so named holding plain names: listed with their lstat, linked between, removed together.
        for (const dir of [`${RAW}-a`, `${RAW}-b`]) {
          yield* fs.makeDirectory(`${root}/${dir}`)
          yield* put(`${root}/${dir}/x`, dir.endsWith("a") ? "x" : "yy")
        }
        const listed = yield* fs.readDirectoryInfo(`${root}/${RAW}-a`)
        assert.deepStrictEqual(listed.map((e) => [e.name, e.info.size]), [["x", 1]])
        yield* fs.makeDirectory(`${root}/${RAW}-a/to`)
        assert.deepStrictEqual(yield* fs.linkEach(`${root}/${RAW}-a`, `${root}/${RAW}-a/to`, ["x"]), [undefined])
        // x and to/x are one inode: counted once.
        const [a, b] = [yield* sizesOf(`${root}/${RAW}-a`), yield* sizesOf(`${root}/${RAW}-b`)]
        const removals = yield* Each.removeTreeEach(fs, [`${root}/${RAW}-a`, `${root}/${RAW}-b`], WIDE)
        assert.deepStrictEqual(plainRemovals(removals), [
          { value: { removedEntries: 3, removedBytes: a.bytes, removedApparentBytes: a.apparentBytes, complete: true } },
          { value: { removedEntries: 1, removedBytes: b.bytes, removedApparentBytes: b.apparentBytes, complete: true } }
        ])
        assert.deepStrictEqual(yield* names(root), [])
      }))

      test("copies, hard links and symlinks: to and from such names, and a link's target read back exactly", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        const digest = createHash("sha256").update("content").digest("hex")
        yield* fs.makeDirectory(`${root}/${RAW}`)
        yield* put(`${root}/${RAW}/${RAW}`, "content", 0o640)
        yield* fs.copyFile(`${root}/${RAW}/${RAW}`, `${root}/copy-${RAW}`)
        assert.deepStrictEqual(yield* fs.copyFileHashed(`${root}/${RAW}/${RAW}`, `${root}/hashed-${RAW}`), { sha256: digest, bytes: 7 })
        const stamped = yield* fs.copyFileStamped(`${root}/${RAW}/${RAW}`, `${root}/stamped-${RAW}`)
        assert.deepStrictEqual([stamped.sha256, stamped.bytes, stamped.source.ino], [digest, 7, (yield* fs.lstat(`${root}/${RAW}/${RAW}`)).ino])
        assert.deepStrictEqual(yield* fs.hashFile(`${root}/stamped-${RAW}`), { sha256: digest, bytes: 7 })
        for (const copy of [`copy-${RAW}`, `hashed-${RAW}`, `stamped-${RAW}`]) {
          assert.strictEqual(yield* read(`${root}/${copy}`), "content", copy)
          assert.strictEqual((yield* fs.lstat(`${root}/${copy}`)).mode, 0o640, copy)
        }
        yield* fs.link(`${root}/${RAW}/${RAW}`, `${root}/link-${RAW}`)
        assert.strictEqual((yield* fs.lstat(`${root}/link-${RAW}`)).ino, (yield* fs.lstat(`${root}/${RAW}/${RAW}`)).ino)
        yield* fs.makeDirectory(`${root}/to-${RAW}`)
        assert.deepStrictEqual(yield* fs.linkEach(`${root}/${RAW}`, `${root}/to-${RAW}`, [RAW, LOSSY]).pipe(Effect.map((a) => a.map((e) => e?.errno))), [undefined, "ENOENT"])
        assert.strictEqual((yield* fs.lstat(`${root}/to-${RAW}/${RAW}`)).nlink, 3)
        // Symlinks whose targets hold such bytes: read back exactly, followed to the file they name.
        yield* fs.symlink(`${root}/${RAW}/${RAW}`, `${root}/abs-${RAW}`)
        yield* fs.symlink(`${RAW}/${RAW}`, `${root}/rel`)
        yield* fs.symlink(LOSSY, `${root}/${RAW}/dangling`)
        assert.strictEqual(yield* fs.readLink(`${root}/abs-${RAW}`), `${root}/${RAW}/${RAW}`)
        assert.strictEqual(yield* fs.readLink(`${root}/rel`), `${RAW}/${RAW}`)
        assert.strictEqual(yield* fs.readLink(`${root}/${RAW}/dangling`), LOSSY)
        yield* fs.symlink(REAL, `${root}/real-link`)
        assert.strictEqual(yield* fs.readLink(`${root}/real-link`), REAL)
        const file = yield* fs.lstat(`${root}/${RAW}/${RAW}`)
        assert.strictEqual((yield* fs.statFollowingLinks(`${root}/rel`)).ino, file.ino)
        assert.strictEqual((yield* fs.statFollowingLinks(`${root}/abs-${RAW}`)).ino, file.ino)
        yield* expectFailure(fs.statFollowingLinks(`${root}/${RAW}/dangling`), "NotFound", "ENOENT")
        // The walks unlink the links, never their targets.
        const linked = yield* sizesOf(`${root}/to-${RAW}`)
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/to-${RAW}`, WIDE), { removedEntries: 1, complete: true, removedBytes: linked.bytes, removedApparentBytes: linked.apparentBytes })
        assert.strictEqual(yield* read(`${root}/${RAW}/${RAW}`), "content")
      }))

      test("a tree deeper than a walk's window with such names: every listing taken up again in byte order, nothing skipped", Effect.gen(function*() {
        const { fs, scratch: { root } } = yield* context
        // At each level the spine (U+E000, bytes EE 80 80) lists before the file of byte 0xff, though its
        // code point (U+DCFF) is lower: a walk coming back past its window must go on after the spine by bytes.
        const LEVELS = WALK_WINDOW + 4
        let dir = `${root}/deep`
        for (let level = 0; level <= LEVELS; level++) {
          yield* fs.makeDirectory(dir)
          yield* put(`${dir}/\udcff`, "ff")
          yield* put(`${dir}/a`, "a")
          dir = `${dir}/\ue000`
        }
        const entries = 3 * LEVELS + 2
        const bytes = 3 * (LEVELS + 1)
        const whole = yield* sizesOf(`${root}/deep`)
        assert.deepStrictEqual(yield* fs.measureTree(`${root}/deep`, WIDE), { ...whole, fileBytes: bytes, entries, complete: true })
        assert.deepStrictEqual(yield* fs.removeTree(`${root}/deep`, WIDE), { removedEntries: entries, complete: true, removedBytes: whole.bytes, removedApparentBytes: whole.apparentBytes })
        assert.deepStrictEqual(yield* names(root), [])
      }))
    })

    describe("one file system (mount points)", () => {
      /**
       * tree/a.txt (3), tree/d1/b.bin (100), tree/link -> outside, and tree/keep/m: a mount point holding
       * big (5000), inner/deep (4) and a link to outside.
       */
      const buildMounted = (root: string) =>
        Effect.gen(function*() {
          const { fs, scratch } = yield* context
          yield* buildTree(`${root}/tree`, `${root}/outside`)
          yield* fs.makeDirectory(`${root}/tree/keep`)
          yield* fs.makeDirectory(`${root}/tree/keep/m`)
          yield* put(`${root}/tree/keep/m/big`, "m".repeat(5000))
          yield* fs.makeDirectory(`${root}/tree/keep/m/inner`)
          yield* put(`${root}/tree/keep/m/inner/deep`, "deep")
          yield* fs.symlink(`${root}/outside`, `${root}/tree/keep/m/link`)
          yield* scratch.mount!(`${root}/tree/keep/m`)
        })

      /** The mounted tree is exactly as buildMounted left it. */
      const assertMountedUntouched = (m: string) =>
        Effect.gen(function*() {
          const { fs } = yield* context
          assert.deepStrictEqual(yield* names(m), ["big", "inner", "link"])
          assert.strictEqual((yield* read(`${m}/big`)).length, 5000)
          assert.strictEqual(yield* read(`${m}/inner/deep`), "deep")
          assert.strictEqual((yield* fs.lstat(`${m}/link`)).type, "SymbolicLink")
        })

      if (setup.mountPoints.available) {
        test("removeTree never enters or unlinks a mount point: the rest goes, EXDEV names it, a rerun too", Effect.gen(function*() {
          const { fs, scratch: { root } } = yield* context
          yield* buildMounted(root)
          for (let round = 0; round < 2; round++) {
            const error = yield* expectFailure(fs.removeTree(`${root}/tree`, WIDE), "CrossDevice", "EXDEV")
            assert.strictEqual(error.path, `${root}/tree/keep/m`)
            assert.strictEqual(error.method, "removeTree")
            assert.strictEqual(error.detail, CROSSED_MOUNT_DETAIL)
            // Everything on the tree's own file system went; the mount point and its parents stayed.
            assert.deepStrictEqual(yield* names(`${root}/tree`), ["keep"])
            assert.deepStrictEqual(yield* names(`${root}/tree/keep`), ["m"])
            yield* assertMountedUntouched(`${root}/tree/keep/m`)
            yield* assertOutsideUntouched(`${root}/outside`)
          }
        }))

        test("a mount point at the top of the tree, empty or not, is never removed", Effect.gen(function*() {
          const { fs, scratch } = yield* context
          const { root } = scratch
          yield* fs.makeDirectory(`${root}/tree`)
          yield* fs.makeDirectory(`${root}/tree/empty`)
          yield* scratch.mount!(`${root}/tree/empty`)
          yield* put(`${root}/tree/z`, "z")
          const error = yield* expectFailure(fs.removeTree(`${root}/tree`, WIDE), "CrossDevice", "EXDEV")
          assert.strictEqual(error.path, `${root}/tree/empty`)
          assert.deepStrictEqual(yield* names(`${root}/tree`), ["empty"])
        }))

        test("measureTree counts a mount point as one entry, never its contents, and says incomplete", Effect.gen(function*() {
          const { fs, scratch: { root } } = yield* context
          yield* buildMounted(root)
          // a.txt, d1, d1/b.bin, d1/d2, d1/d2/c, link, dangling, fileLink, keep, keep/m
          // Its sizes are the tree's without the mount point (neither its contents nor its own: another file system's).
          const [all, mounted] = [yield* sizesOf(`${root}/tree`), yield* sizesOf(`${root}/tree/keep/m`)]
          const measure = yield* fs.measureTree(`${root}/tree`, WIDE)
          assert.deepStrictEqual(measure, {
            bytes: all.bytes - mounted.bytes,
            apparentBytes: all.apparentBytes - mounted.apparentBytes,
            fileBytes: TREE_BYTES,
            entries: TREE_ENTRIES + 2,
            complete: false
          })
          yield* assertMountedUntouched(`${root}/tree/keep/m`)
          // Measured from inside, the mounted tree is whole: the rule is relative to the walk's root.
          const inside = yield* fs.measureTree(`${root}/tree/keep/m`, WIDE)
          assert.deepStrictEqual(inside, { ...mounted, fileBytes: 5004, entries: 4, complete: true })
        }))
      } else {
        const why = setup.mountPoints.why
        test(`mount points: skipped: ${why}`, Effect.gen(function*() {
          const { scratch } = yield* context
          // The cases did not run: prove the setup really cannot mount.
          assert.isNull(scratch.mount, why)
        }))
      }
    })

    describe("cross-device", () => {
      if (setup.crossDevice.available) {
        test("EXDEV: rename and link across devices fail with CrossDevice and change nothing", Effect.gen(function*() {
          const { fs, scratch: { root, otherDevice } } = yield* context
          assert.isNotNull(otherDevice)
          if (otherDevice === null) return
          yield* put(`${root}/file`, "here")
          yield* fs.makeDirectory(`${root}/dir`)
          assert.notStrictEqual((yield* fs.lstat(root)).dev, (yield* fs.lstat(otherDevice)).dev)
          yield* expectFailure(fs.rename(`${root}/file`, `${otherDevice}/file`), "CrossDevice", "EXDEV")
          yield* expectFailure(fs.rename(`${root}/dir`, `${otherDevice}/dir`), "CrossDevice", "EXDEV")
          yield* expectFailure(fs.link(`${root}/file`, `${otherDevice}/file`), "CrossDevice", "EXDEV")
          const across = yield* fs.linkEach(root, otherDevice, ["file"])
          assert.strictEqual(across[0]?.errno, "EXDEV")
          assert.strictEqual(across[0]?.reason, "CrossDevice")
          assert.strictEqual(yield* read(`${root}/file`), "here")
          assert.strictEqual((yield* fs.lstat(`${root}/file`)).nlink, 1)
          assert.deepStrictEqual(yield* names(otherDevice), [])
        }))
      } else {
        const why = setup.crossDevice.why
        test(`EXDEV: skipped: ${why}`, Effect.gen(function*() {
          const { scratch } = yield* context
          // The case did not run: prove the setup really has no second device to offer.
          assert.isNull(scratch.otherDevice, why)
        }))
      }
    })
  })
}
