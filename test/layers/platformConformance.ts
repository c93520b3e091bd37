/**
 * The `@effect/platform` FileSystem conformance suite, written once and run against `@effect/platform-node`'s
 * `NodeFileSystem.layer` on a real scratch directory and against `platformLayer` over a fresh simulated world
 * (`pi-agent-storage/testing`). Every case asserts the same observable results and the same error reasons
 * (and errno, `cause.code`) on both: when the simulation drifts from Node, it fails here.
 *
 *   platformConformance("Memory", { layer: () => Layer.merge(platformLayer(world, …), Layer.succeed(PlatformScratch, { root: "/scratch" })) })
 *
 * The scratch root is an empty directory, its path canonical (no links in it). Tests run as root (permission
 * bits are never a reason here, as in the world). Order-free listings are compared sorted.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import type { PlatformError } from "@effect/platform/Error"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Context, Effect, Option, type Layer, type Scope, Stream } from "effect"

export class PlatformScratch extends Context.Tag("pi-agent-storage/test/PlatformScratch")<PlatformScratch, {
  /** An empty directory, canonical path. */
  readonly root: string
  /** The uid created entries get (the process's). */
  readonly uid: number
}>() {}

export interface PlatformConformanceSetup {
  /** Called once per test; must build a fresh, isolated world. */
  readonly layer: () => Layer.Layer<FileSystem.FileSystem | Path.Path | PlatformScratch, unknown>
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const bytes = (s: string) => encoder.encode(s)
const text = (data: Uint8Array) => decoder.decode(data)

/** Deterministic content of `n` bytes (not a repeating short period, so offsets are visible). */
const pattern = (n: number, seed = 7): Uint8Array => {
  const out = new Uint8Array(n)
  let x = seed
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}

const concat = (chunks: Iterable<Uint8Array>): Uint8Array => {
  const list = [...chunks]
  const out = new Uint8Array(list.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const c of list) {
    out.set(c, at)
    at += c.length
  }
  return out
}

const sameBytes = (actual: Uint8Array, expected: Uint8Array, label: string) => {
  assert.strictEqual(actual.length, expected.length, `${label}: length`)
  const first = actual.findIndex((b, i) => b !== expected[i])
  assert.strictEqual(first, -1, `${label}: first differing byte`)
}

/** Run `effect`, expecting a SystemError with this reason and errno (`cause.code`, as Node's layer sets it). */
const expectError = <A, R>(effect: Effect.Effect<A, PlatformError, R>, reason: string, code: string, method?: string) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(effect)
    assert.strictEqual(error._tag, "SystemError", error.message)
    if (error._tag !== "SystemError") return error
    assert.strictEqual(`${error.reason} ${(error.cause as { code?: unknown } | undefined)?.code}`, `${reason} ${code}`, error.message)
    assert.strictEqual(error.module, "FileSystem")
    if (method !== undefined) assert.strictEqual(error.method, method)
    return error
  })

const fixture = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const { root, uid } = yield* PlatformScratch
  return { fs, path, root, uid, at: (...parts: ReadonlyArray<string>) => path.join(root, ...parts) }
})

const typeBits = (mode: number) => mode & 0o170000

export const platformConformance = (name: string, setup: PlatformConformanceSetup) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, FileSystem.FileSystem | Path.Path | PlatformScratch | Scope.Scope>) =>
    it.scoped(title, () => Effect.provide(body(), setup.layer()))

  describe(`@effect/platform FileSystem conformance: ${name}`, () => {
    test("files and strings round-trip; stat follows the entry and reports Node's type bits, size, mode, links, owner", () =>
      Effect.gen(function*() {
        const { fs, at, uid } = yield* fixture
        yield* fs.writeFileString(at("a.txt"), "héllo")
        assert.strictEqual(yield* fs.readFileString(at("a.txt")), "héllo")
        yield* fs.writeFile(at("b.bin"), pattern(300), { mode: 0o640 })
        sameBytes(yield* fs.readFile(at("b.bin")), pattern(300), "b.bin")
        const file = yield* fs.stat(at("b.bin"))
        assert.strictEqual(file.type, "File")
        assert.strictEqual(typeBits(file.mode), 0o100000)
        assert.strictEqual(file.mode & 0o7777, 0o640)
        assert.strictEqual(file.size, FileSystem.Size(300))
        assert.deepStrictEqual([file.nlink, file.uid], [Option.some(1), Option.some(uid)])
        assert.isTrue(Option.isSome(file.mtime) && Option.isSome(file.ino))
        assert.strictEqual((yield* fs.stat(at("a.txt"))).size, FileSystem.Size(6))
        const dir = yield* fs.stat(at())
        assert.strictEqual(dir.type, "Directory")
        assert.strictEqual(typeBits(dir.mode), 0o040000)
        // A second write replaces the content (flag "w"); flag "a" appends.
        yield* fs.writeFileString(at("a.txt"), "x")
        yield* fs.writeFileString(at("a.txt"), "yz", { flag: "a" })
        assert.strictEqual(yield* fs.readFileString(at("a.txt")), "xyz")
        yield* expectError(fs.writeFileString(at("a.txt"), "no", { flag: "wx" }), "AlreadyExists", "EEXIST", "writeFile")
        yield* expectError(fs.writeFileString(at(), "no"), "BadResource", "EISDIR", "writeFile")
        yield* expectError(fs.readFile(at()), "BadResource", "EISDIR", "readFile")
      }))

    test("a missing path is NotFound (ENOENT) for every call that needs it; exists says false", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        const missing = at("missing")
        yield* fs.writeFileString(at("file"), "x")
        const cases: ReadonlyArray<readonly [string, Effect.Effect<unknown, PlatformError, Scope.Scope>]> = [
          ["readFile", fs.readFile(missing)],
          ["stat", fs.stat(missing)],
          ["open", fs.open(missing)],
          ["open", fs.open(missing, { flag: "r+" })],
          ["readDirectory", fs.readDirectory(missing)],
          ["readDirectory", fs.readDirectory(missing, { recursive: true })],
          ["remove", fs.remove(missing)],
          ["remove", fs.remove(missing, { recursive: true })],
          ["rename", fs.rename(missing, at("other"))],
          ["readLink", fs.readLink(missing)],
          ["realPath", fs.realPath(missing)],
          ["chmod", fs.chmod(missing, 0o600)],
          ["chown", fs.chown(missing, 0, 0)],
          ["utime", fs.utimes(missing, 1, 1)],
          ["truncate", fs.truncate(missing)],
          ["copyFile", fs.copyFile(missing, at("other"))],
          ["copy", fs.copy(missing, at("other"))],
          ["link", fs.link(missing, at("other"))],
          ["access", fs.access(missing)],
          ["makeDirectory", fs.makeDirectory(at("missing", "sub"))],
          ["writeFile", fs.writeFileString(at("missing", "f"), "x")],
          ["makeTempDirectory", fs.makeTempDirectory({ directory: missing })]
        ]
        for (const [method, effect] of cases) {
          const error = yield* expectError(effect, "NotFound", "ENOENT", method)
          assert.match(String(error._tag === "SystemError" ? error.pathOrDescriptor : ""), /missing/)
        }
        assert.isFalse(yield* fs.exists(missing))
        assert.isTrue(yield* fs.exists(at("file")))
        // Through a file: ENOTDIR, a BadResource; exists reports it rather than saying false.
        yield* expectError(fs.stat(at("file", "x")), "BadResource", "ENOTDIR", "stat")
        yield* expectError(fs.exists(at("file", "x")), "BadResource", "ENOTDIR", "access")
        yield* expectError(fs.readDirectory(at("file")), "BadResource", "ENOTDIR", "readDirectory")
        // force ignores a missing path only.
        yield* fs.remove(missing, { force: true })
        yield* expectError(fs.remove(at("file", "x"), { force: true }), "BadResource", "ENOTDIR", "remove")
        yield* expectError(fs.watch(missing).pipe(Stream.runDrain), "NotFound", "ENOENT", "stat")
      }))

    test("open flags: wx/ax refuse an existing name and a dangling link (EEXIST), w truncates, a directory opens for reading only", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.writeFileString(at("f"), "content")
        yield* fs.symlink(at("nowhere"), at("dangling"))
        for (const flag of ["wx", "wx+", "ax", "ax+"] as const) {
          yield* expectError(Effect.scoped(fs.open(at("f"), { flag })), "AlreadyExists", "EEXIST", "open")
          yield* expectError(Effect.scoped(fs.open(at("dangling"), { flag })), "AlreadyExists", "EEXIST", "open")
        }
        assert.isFalse(yield* fs.exists(at("nowhere")))
        // An exclusive create makes the file, with the mode asked for.
        yield* Effect.scoped(Effect.flatMap(fs.open(at("new"), { flag: "wx", mode: 0o600 }), (file) => file.writeAll(bytes("n"))))
        assert.strictEqual((yield* fs.stat(at("new"))).mode & 0o777, 0o600)
        assert.strictEqual(yield* fs.readFileString(at("new")), "n")
        // w truncates; r+ keeps and overwrites in place.
        yield* Effect.scoped(fs.open(at("f"), { flag: "w" }))
        assert.strictEqual((yield* fs.stat(at("f"))).size, FileSystem.Size(0))
        yield* fs.writeFileString(at("f"), "abcdef")
        yield* Effect.scoped(Effect.flatMap(fs.open(at("f"), { flag: "r+" }), (file) => file.writeAll(bytes("XY"))))
        assert.strictEqual(yield* fs.readFileString(at("f")), "XYcdef")
        // O_CREAT without O_EXCL follows a dangling link and creates its target.
        yield* Effect.scoped(Effect.flatMap(fs.open(at("dangling"), { flag: "a" }), (file) => file.writeAll(bytes("through"))))
        assert.strictEqual(yield* fs.readFileString(at("nowhere")), "through")
        assert.strictEqual(yield* fs.readLink(at("dangling")), at("nowhere"))
        // A directory: reading opens, then read fails EISDIR; writing refuses at open.
        const dir = yield* fs.open(at(), { flag: "r" })
        yield* expectError(dir.read(new Uint8Array(4)), "BadResource", "EISDIR", "read")
        assert.strictEqual((yield* dir.stat).type, "Directory")
        for (const flag of ["w", "a", "a+", "r+"] as const) {
          yield* expectError(Effect.scoped(fs.open(at(), { flag })), "BadResource", "EISDIR", "open")
        }
        yield* expectError(Effect.scoped(fs.open(at("f") + "/")), "BadResource", "ENOTDIR", "open")
      }))

    test("append mode: every write lands at the end whatever the position; a+ reads from its own position", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.writeFileString(at("log"), "start\n")
        const file = yield* fs.open(at("log"), { flag: "a+" })
        yield* file.writeAll(bytes("one\n"))
        yield* file.seek(0, "start")
        yield* file.writeAll(bytes("two\n"))
        const head = new Uint8Array(5)
        assert.strictEqual(yield* file.read(head), FileSystem.Size(5))
        assert.strictEqual(text(head), "start")
        assert.strictEqual((yield* file.stat).size, FileSystem.Size(14))
        assert.strictEqual(yield* fs.readFileString(at("log")), "start\none\ntwo\n")
        // Truncating in append mode leaves the position alone; the next write still goes at the end.
        yield* file.truncate(6)
        yield* file.write(bytes("three\n"))
        assert.strictEqual(yield* fs.readFileString(at("log")), "start\nthree\n")
        // A second handle in plain "a" mode, no read: EBADF (Unknown).
        const writer = yield* fs.open(at("log"), { flag: "a" })
        yield* writer.writeAll(bytes("four\n"))
        yield* expectError(writer.read(new Uint8Array(1)), "Unknown", "EBADF", "read")
        assert.strictEqual(yield* fs.readFileString(at("log")), "start\nthree\nfour\n")
      }))

    test("seek and read positions; past the end reads 0 / None; a write past the end leaves zeros", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.writeFileString(at("digits"), "0123456789")
        const file = yield* fs.open(at("digits"), { flag: "r+" })
        yield* file.seek(3, "start")
        const four = new Uint8Array(4)
        assert.strictEqual(yield* file.read(four), FileSystem.Size(4))
        assert.strictEqual(text(four), "3456")
        yield* file.seek(1, "current")
        const rest = yield* file.readAlloc(10)
        assert.strictEqual(Option.map(rest, text).pipe(Option.getOrNull), "89")
        assert.isTrue(Option.isNone(yield* file.readAlloc(10)))
        assert.strictEqual(yield* file.read(new Uint8Array(3)), FileSystem.Size(0))
        yield* file.seek(12, "start")
        yield* file.writeAll(bytes("AB"))
        sameBytes(yield* fs.readFile(at("digits")), concat([bytes("0123456789"), new Uint8Array(2), bytes("AB")]), "hole")
        // Truncating below the position pulls it back to the new end.
        yield* file.truncate(4)
        yield* file.writeAll(bytes("Z"))
        assert.strictEqual(yield* fs.readFileString(at("digits")), "0123Z")
        // A read-only handle refuses writes (EBADF) and truncation (EINVAL).
        const reader = yield* fs.open(at("digits"))
        yield* expectError(reader.write(bytes("x")), "Unknown", "EBADF", "write")
        yield* expectError(reader.writeAll(bytes("x")), "Unknown", "EBADF", "writeAll")
        yield* expectError(reader.truncate(1), "Unknown", "EINVAL", "truncate")
        yield* reader.sync
        // Once its scope has closed, a handle's descriptor is gone: EBADF.
        const closed = yield* Effect.scoped(fs.open(at("digits")))
        yield* expectError(closed.stat, "Unknown", "EBADF", "stat")
        yield* expectError(closed.readAlloc(1), "Unknown", "EBADF", "readAlloc")
      }))

    test("truncate grows with zeros and shrinks, by path (following links) and by handle", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.writeFileString(at("t"), "abcdef")
        yield* fs.truncate(at("t"), 3)
        assert.strictEqual(yield* fs.readFileString(at("t")), "abc")
        yield* fs.truncate(at("t"), 8)
        sameBytes(yield* fs.readFile(at("t")), concat([bytes("abc"), new Uint8Array(5)]), "grown")
        yield* fs.symlink("t", at("to-t"))
        yield* fs.truncate(at("to-t"))
        assert.strictEqual((yield* fs.stat(at("t"))).size, FileSystem.Size(0))
        const file = yield* fs.open(at("t"), { flag: "r+" })
        yield* file.truncate(FileSystem.KiB(4))
        assert.strictEqual((yield* file.stat).size, FileSystem.Size(4096))
        sameBytes(yield* fs.readFile(at("t")), new Uint8Array(4096), "grown by handle")
        yield* file.truncate(10)
        assert.strictEqual((yield* fs.stat(at("t"))).size, FileSystem.Size(10))
        yield* expectError(fs.truncate(at()), "BadResource", "EISDIR", "truncate")
      }))

    test("readDirectory lists names; recursive lists every path below (links to directories are entered)", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.makeDirectory(at("d", "sub", "deep"), { recursive: true })
        yield* fs.writeFileString(at("d", "a"), "a")
        yield* fs.writeFileString(at("d", "sub", "b"), "b")
        yield* fs.writeFileString(at("d", "sub", "deep", "c"), "c")
        yield* fs.symlink("sub", at("d", "lsub"))
        yield* fs.symlink("missing", at("d", "dangling"))
        const sorted = (names: ReadonlyArray<string>) => [...names].sort()
        assert.deepStrictEqual(sorted(yield* fs.readDirectory(at("d"))), ["a", "dangling", "lsub", "sub"])
        assert.deepStrictEqual(sorted(yield* fs.readDirectory(at("d"), { recursive: true })), [
          "a", "dangling", "lsub", "lsub/b", "lsub/deep", "lsub/deep/c", "sub", "sub/b", "sub/deep", "sub/deep/c"
        ])
        assert.deepStrictEqual(sorted(yield* fs.readDirectory(at("d", "lsub"))), ["b", "deep"])
        assert.deepStrictEqual(yield* fs.readDirectory(at("d", "sub", "deep", "")), ["c"])
        yield* fs.makeDirectory(at("empty"))
        assert.deepStrictEqual(yield* fs.readDirectory(at("empty"), { recursive: true }), [])
      }))

    test("makeDirectory: exclusive unless recursive; recursive accepts a directory or a link to one; modes take the umask", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.makeDirectory(at("one"), { mode: 0o700 })
        assert.strictEqual((yield* fs.stat(at("one"))).mode & 0o7777, 0o700)
        yield* expectError(fs.makeDirectory(at("one")), "AlreadyExists", "EEXIST", "makeDirectory")
        yield* fs.makeDirectory(at("one"), { recursive: true })
        yield* fs.makeDirectory(at("p", "q", "r"), { recursive: true, mode: 0o750 })
        for (const dir of [at("p"), at("p", "q"), at("p", "q", "r")]) assert.strictEqual((yield* fs.stat(dir)).mode & 0o7777, 0o750)
        yield* fs.writeFileString(at("file"), "x")
        yield* expectError(fs.makeDirectory(at("file"), { recursive: true }), "AlreadyExists", "EEXIST", "makeDirectory")
        yield* expectError(fs.makeDirectory(at("file", "x", "y"), { recursive: true }), "BadResource", "ENOTDIR", "makeDirectory")
        yield* fs.symlink("p", at("lp"))
        yield* fs.makeDirectory(at("lp"), { recursive: true })
        yield* fs.makeDirectory(at("lp", "q", "s"), { recursive: true })
        assert.strictEqual((yield* fs.stat(at("p", "q", "s"))).type, "Directory")
        yield* expectError(fs.makeDirectory(at("lp")), "AlreadyExists", "EEXIST", "makeDirectory")
        yield* fs.symlink("nowhere", at("dangling"))
        yield* expectError(fs.makeDirectory(at("dangling"), { recursive: true }), "NotFound", "ENOENT", "makeDirectory")
        yield* expectError(fs.makeDirectory(at("dangling", "x"), { recursive: true }), "BadResource", "ENOTDIR", "makeDirectory")
        // A link whose target's directory is missing too; a loop of links.
        yield* fs.symlink("nowhere/deeper", at("deep-dangling"))
        yield* expectError(fs.makeDirectory(at("deep-dangling"), { recursive: true }), "NotFound", "ENOENT", "makeDirectory")
        yield* expectError(fs.makeDirectory(at("deep-dangling", "x", "y"), { recursive: true }), "BadResource", "ENOTDIR", "makeDirectory")
        yield* fs.symlink("loop-b", at("loop-a"))
        yield* fs.symlink("loop-a", at("loop-b"))
        yield* expectError(fs.makeDirectory(at("loop-a", "x"), { recursive: true }), "BadResource", "ELOOP", "makeDirectory")
        yield* expectError(fs.makeDirectory(at("loop-a"), { recursive: true }), "BadResource", "ELOOP", "makeDirectory")
        assert.isFalse(yield* fs.exists(at("nowhere")))
      }))

    test("remove: a directory without recursive is refused even when empty; recursive removes the tree; a link goes, never its target", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.makeDirectory(at("tree", "a", "b"), { recursive: true })
        yield* fs.writeFileString(at("tree", "a", "b", "f"), "x")
        yield* fs.writeFileString(at("tree", "g"), "y")
        yield* fs.makeDirectory(at("empty"))
        yield* expectError(fs.remove(at("tree")), "Unknown", "ERR_FS_EISDIR", "remove")
        yield* expectError(fs.remove(at("empty")), "Unknown", "ERR_FS_EISDIR", "remove")
        yield* fs.makeDirectory(at("kept"))
        yield* fs.writeFileString(at("kept", "precious"), "keep")
        yield* fs.symlink(at("kept"), at("tree", "a", "link"))
        yield* fs.symlink(at("kept"), at("top-link"))
        yield* fs.remove(at("top-link"))
        yield* fs.remove(at("tree"), { recursive: true })
        yield* fs.remove(at("empty"), { recursive: true })
        assert.deepStrictEqual([...(yield* fs.readDirectory(at()))].sort(), ["kept"])
        assert.strictEqual(yield* fs.readFileString(at("kept", "precious")), "keep")
        yield* fs.remove(at("kept", "precious"))
        assert.deepStrictEqual(yield* fs.readDirectory(at("kept")), [])
      }))

    test("symlinks: stat follows, readLink gives the target as written; dangling stat is NotFound; realPath is canonical", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.makeDirectory(at("d", "sub"), { recursive: true })
        yield* fs.writeFileString(at("d", "sub", "f"), "12345")
        yield* fs.symlink("sub/f", at("d", "rel"))
        yield* fs.symlink(at("d", "sub"), at("abs"))
        const followed = yield* fs.stat(at("d", "rel"))
        assert.deepStrictEqual([followed.type, followed.size], ["File", FileSystem.Size(5)])
        assert.strictEqual((yield* fs.stat(at("abs"))).type, "Directory")
        assert.strictEqual(yield* fs.readLink(at("d", "rel")), "sub/f")
        assert.strictEqual(yield* fs.readLink(at("abs")), at("d", "sub"))
        assert.strictEqual(yield* fs.readFileString(at("abs", "f")), "12345")
        yield* fs.symlink("nowhere", at("dangling"))
        yield* expectError(fs.stat(at("dangling")), "NotFound", "ENOENT", "stat")
        assert.isFalse(yield* fs.exists(at("dangling")))
        assert.strictEqual(yield* fs.readLink(at("dangling")), "nowhere")
        yield* expectError(fs.readLink(at("d", "sub", "f")), "Unknown", "EINVAL", "readLink")
        yield* expectError(fs.symlink("x", at("d", "rel")), "AlreadyExists", "EEXIST", "symlink")
        // Node's realpath folds ".." lexically first (path.resolve), then follows the links left.
        assert.strictEqual(yield* fs.realPath(`${at("abs")}/../d/rel`), at("d", "sub", "f"))
        yield* expectError(fs.realPath(`${at("abs")}/../rel`), "NotFound", "ENOENT", "realPath")
        assert.strictEqual(yield* fs.realPath(at("abs")), at("d", "sub"))
        assert.strictEqual(yield* fs.realPath(`${at("d")}/./sub/..`), at("d"))
        yield* fs.symlink("loop-b", at("loop-a"))
        yield* fs.symlink("loop-a", at("loop-b"))
        yield* expectError(fs.stat(at("loop-a")), "BadResource", "ELOOP", "stat")
      }))

    test("hard links share the inode; a directory cannot be linked (EPERM); an existing name is EEXIST", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.writeFileString(at("f"), "one")
        yield* fs.link(at("f"), at("g"))
        assert.deepStrictEqual((yield* fs.stat(at("f"))).nlink, Option.some(2))
        assert.deepStrictEqual((yield* fs.stat(at("f"))).ino, (yield* fs.stat(at("g"))).ino)
        yield* fs.writeFileString(at("g"), "two", { flag: "a" })
        assert.strictEqual(yield* fs.readFileString(at("f")), "onetwo")
        yield* fs.remove(at("f"))
        assert.deepStrictEqual((yield* fs.stat(at("g"))).nlink, Option.some(1))
        yield* fs.makeDirectory(at("dir"))
        yield* expectError(fs.link(at("dir"), at("dir2")), "Unknown", "EPERM", "link")
        yield* fs.writeFileString(at("h"), "")
        yield* expectError(fs.link(at("g"), at("h")), "AlreadyExists", "EEXIST", "link")
      }))

    test("rename replaces a file; a non-empty directory, a file over a directory and a directory into itself are refused", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.writeFileString(at("a"), "A")
        yield* fs.writeFileString(at("b"), "B")
        yield* fs.rename(at("a"), at("b"))
        assert.strictEqual(yield* fs.readFileString(at("b")), "A")
        assert.isFalse(yield* fs.exists(at("a")))
        yield* fs.makeDirectory(at("d1", "x"), { recursive: true })
        yield* fs.makeDirectory(at("d2", "y"), { recursive: true })
        yield* expectError(fs.rename(at("d1"), at("d2")), "Unknown", "ENOTEMPTY", "rename")
        yield* expectError(fs.rename(at("b"), at("d1")), "BadResource", "EISDIR", "rename")
        yield* expectError(fs.rename(at("d1"), at("b")), "BadResource", "ENOTDIR", "rename")
        yield* expectError(fs.rename(at("d1"), at("d1", "x", "in")), "Unknown", "EINVAL", "rename")
        yield* fs.makeDirectory(at("empty"))
        yield* fs.rename(at("d1"), at("empty"))
        assert.deepStrictEqual(yield* fs.readDirectory(at("empty")), ["x"])
        // A link is renamed, not its target.
        yield* fs.symlink("b", at("lb"))
        yield* fs.rename(at("lb"), at("lc"))
        assert.strictEqual(yield* fs.readLink(at("lc")), "b")
      }))

    test("copyFile overwrites in place with the source's mode, follows links at both ends, refuses directories (losing the destination, as libuv does)", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.writeFile(at("src"), pattern(5000), { mode: 0o640 })
        yield* fs.writeFileString(at("dst"), "old content that is longer than nothing")
        const before = yield* fs.stat(at("dst"))
        yield* fs.copyFile(at("src"), at("dst"))
        sameBytes(yield* fs.readFile(at("dst")), pattern(5000), "copy")
        const after = yield* fs.stat(at("dst"))
        assert.deepStrictEqual(after.ino, before.ino)
        assert.strictEqual(after.mode & 0o7777, 0o640)
        yield* fs.copyFile(at("src"), at("fresh"))
        assert.strictEqual((yield* fs.stat(at("fresh"))).mode & 0o7777, 0o640)
        yield* fs.symlink("src", at("lsrc"))
        yield* fs.symlink("made-by-copy", at("ldst"))
        yield* fs.copyFile(at("lsrc"), at("ldst"))
        sameBytes(yield* fs.readFile(at("made-by-copy")), pattern(5000), "through links")
        yield* fs.makeDirectory(at("dir"))
        yield* expectError(fs.copyFile(at("dir"), at("c1")), "BadResource", "EISDIR", "copyFile")
        assert.isFalse(yield* fs.exists(at("c1")))
        yield* expectError(fs.copyFile(at("src"), at("dir")), "BadResource", "EISDIR", "copyFile")
        yield* expectError(fs.copyFile(at("dir"), at("missing", "x")), "NotFound", "ENOENT", "copyFile")
        // libuv opens the destination before the copy fails on a directory, then unlinks it: an existing
        // file there is gone; through a link, the link goes and its target is left empty.
        yield* expectError(fs.copyFile(at("dir"), at("fresh")), "BadResource", "EISDIR", "copyFile")
        assert.isFalse(yield* fs.exists(at("fresh")))
        yield* fs.symlink("made-by-copy", at("to-made"))
        yield* expectError(fs.copyFile(at("dir"), at("to-made")), "BadResource", "EISDIR", "copyFile")
        assert.isFalse(yield* fs.exists(at("to-made")))
        assert.strictEqual((yield* fs.stat(at("made-by-copy"))).size, FileSystem.Size(0))
      }))

    test("copy copies a tree (links made absolute); keeps or overwrites an existing file; refuses impossible shapes", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.makeDirectory(at("src", "sub"), { recursive: true, mode: 0o750 })
        yield* fs.writeFile(at("src", "a"), pattern(100), { mode: 0o600 })
        yield* fs.writeFileString(at("src", "sub", "b"), "b")
        yield* fs.symlink("sub/b", at("src", "lb"))
        yield* fs.copy(at("src"), at("out", "copy"))
        assert.deepStrictEqual([...(yield* fs.readDirectory(at("out", "copy"), { recursive: true }))].sort(), ["a", "lb", "sub", "sub/b"])
        sameBytes(yield* fs.readFile(at("out", "copy", "a")), pattern(100), "a")
        assert.strictEqual((yield* fs.stat(at("out", "copy", "a"))).mode & 0o7777, 0o600)
        assert.strictEqual((yield* fs.stat(at("out", "copy", "sub"))).mode & 0o7777, 0o750)
        assert.strictEqual(yield* fs.readLink(at("out", "copy", "lb")), at("src", "sub", "b"))
        yield* fs.writeFileString(at("src", "a"), "changed")
        yield* fs.copy(at("src", "a"), at("out", "copy", "a"))
        sameBytes(yield* fs.readFile(at("out", "copy", "a")), pattern(100), "kept without overwrite")
        yield* fs.copy(at("src", "a"), at("out", "copy", "a"), { overwrite: true })
        assert.strictEqual(yield* fs.readFileString(at("out", "copy", "a")), "changed")
        yield* fs.utimes(at("src", "sub", "b"), 1_000_000, 1_500_000)
        yield* fs.copy(at("src", "sub", "b"), at("stamped"), { preserveTimestamps: true })
        assert.deepStrictEqual(Option.map((yield* fs.stat(at("stamped"))).mtime, (d) => d.getTime()), Option.some(1_500_000_000))
        yield* expectError(fs.copy(at("src"), at("src", "a")), "Unknown", "ERR_FS_CP_DIR_TO_NON_DIR", "copy")
        yield* expectError(fs.copy(at("src"), at("src", "sub", "inside")), "Unknown", "ERR_FS_CP_EINVAL", "copy")
        yield* expectError(fs.copy(at("src", "a"), at("src", "sub")), "Unknown", "ERR_FS_CP_NON_DIR_TO_DIR", "copy")
        yield* expectError(fs.copy(at("src", "a"), at("src", "a")), "Unknown", "ERR_FS_CP_EINVAL", "copy")
      }))

    test("chmod, chown and utimes follow links; utimes takes seconds or Dates", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        yield* fs.writeFileString(at("f"), "x")
        yield* fs.symlink("f", at("lf"))
        yield* fs.chmod(at("lf"), 0o604)
        assert.strictEqual((yield* fs.stat(at("f"))).mode & 0o7777, 0o604)
        yield* fs.chown(at("lf"), 1234, 5678)
        const owned = yield* fs.stat(at("f"))
        assert.deepStrictEqual([owned.uid, owned.gid], [Option.some(1234), Option.some(5678)])
        yield* fs.utimes(at("lf"), 1000, 2000)
        const seconds = yield* fs.stat(at("f"))
        assert.deepStrictEqual([Option.map(seconds.atime, (d) => d.getTime()), Option.map(seconds.mtime, (d) => d.getTime())], [Option.some(1_000_000), Option.some(2_000_000)])
        yield* fs.utimes(at("f"), new Date(5000), new Date(6500))
        assert.deepStrictEqual(Option.map((yield* fs.stat(at("f"))).mtime, (d) => d.getTime()), Option.some(6500))
      }))

    test("streams and sinks of a few KiB and of 1 MiB; offset and bytesToRead", () =>
      Effect.gen(function*() {
        const { fs, at } = yield* fixture
        for (const [size, chunk] of [[5 * 1024 + 17, 1000], [1024 * 1024, 16 * 1024]] as const) {
          const data = pattern(size, size)
          const chunks: Array<Uint8Array> = []
          for (let i = 0; i < size; i += chunk) chunks.push(data.subarray(i, Math.min(size, i + chunk)))
          yield* Stream.fromIterable(chunks).pipe(Stream.run(fs.sink(at(`s${size}`))))
          sameBytes(yield* fs.readFile(at(`s${size}`)), data, `sink ${size}`)
          const streamed = yield* Stream.runCollect(fs.stream(at(`s${size}`), { chunkSize: 4096 }))
          sameBytes(concat(streamed), data, `stream ${size}`)
          assert.isTrue(Chunk.every(streamed, (c) => c.length <= 4096))
          const middle = yield* Stream.runCollect(fs.stream(at(`s${size}`), { offset: 1000, bytesToRead: 3000, chunkSize: 512 }))
          sameBytes(concat(middle), data.subarray(1000, 4000), `slice ${size}`)
        }
        // A sink in append mode adds to the file; an exclusive one refuses an existing file.
        yield* Stream.make(bytes("a"), bytes("b")).pipe(Stream.run(fs.sink(at("appended"), { flag: "a" })))
        yield* Stream.make(bytes("c")).pipe(Stream.run(fs.sink(at("appended"), { flag: "a" })))
        assert.strictEqual(yield* fs.readFileString(at("appended")), "abc")
        yield* expectError(Stream.make(bytes("x")).pipe(Stream.run(fs.sink(at("appended"), { flag: "wx" }))), "AlreadyExists", "EEXIST", "open")
        assert.deepStrictEqual(yield* Stream.runCollect(fs.stream(at("appended"), { offset: 10 })).pipe(Effect.map(Chunk.toArray)), [])
      }))

    test("temporary directories and files: under the directory given, prefix and suffix kept, mode 0700, scoped ones removed", () =>
      Effect.gen(function*() {
        const { fs, at, path } = yield* fixture
        const dir = yield* fs.makeTempDirectory({ directory: at(), prefix: "run-" })
        assert.match(path.basename(dir), /^run-[A-Za-z0-9]{6}$/)
        assert.strictEqual(path.dirname(dir), at())
        const info = yield* fs.stat(dir)
        assert.deepStrictEqual([info.type, info.mode & 0o7777], ["Directory", 0o700])
        const bare = yield* fs.makeTempDirectory({ directory: at() })
        assert.match(path.basename(bare), /^[A-Za-z0-9]{6}$/)
        const file = yield* fs.makeTempFile({ directory: at(), prefix: "t-", suffix: ".json" })
        assert.match(path.basename(file), /^[0-9a-f]{12}\.json$/)
        assert.match(path.basename(path.dirname(file)), /^t-[A-Za-z0-9]{6}$/)
        assert.strictEqual((yield* fs.stat(file)).size, FileSystem.Size(0))
        const scoped = yield* Effect.scoped(Effect.gen(function*() {
          const d = yield* fs.makeTempDirectoryScoped({ directory: at() })
          yield* fs.writeFileString(path.join(d, "inner"), "x")
          const f = yield* fs.makeTempFileScoped({ directory: at() })
          yield* fs.writeFileString(f, "y")
          assert.isTrue((yield* fs.exists(d)) && (yield* fs.exists(f)))
          return [d, path.dirname(f)] as const
        }))
        for (const gone of scoped) assert.isFalse(yield* fs.exists(gone))
        assert.strictEqual((yield* fs.readDirectory(at())).length, 3)
      }))
  })
}
