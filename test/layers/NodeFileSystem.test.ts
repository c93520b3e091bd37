import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Scope } from "effect"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import { nodeFileSystemWith, type Walker } from "../../src/layers/NodeFileSystem.js"
import { fsatAddon } from "../../src/layers/node/fsat.js"
import { availableWalkerKind, walkerKindOf } from "../../src/layers/node/walkers.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { StorageConfig } from "../../src/services/StorageConfig.js"
import { bindMount, bindMountSupport } from "../support/bindMount.js"
import { type ConformanceSetup, fileSystemConformance, Scratch } from "./conformance.js"

/** A second filesystem for the EXDEV case: /dev/shm when it is a writable directory on another device. */
const detectSecondFilesystem = (): { readonly parent: string } | { readonly why: string } => {
  const candidate = "/dev/shm"
  try {
    const tmp = fs.statSync(os.tmpdir())
    const other = fs.statSync(candidate)
    if (!other.isDirectory()) return { why: `${candidate} is not a directory` }
    if (other.dev === tmp.dev) return { why: `${candidate} is on the same device as ${os.tmpdir()}` }
    fs.accessSync(candidate, fs.constants.W_OK)
    return { parent: candidate }
  } catch (cause) {
    return { why: `no second filesystem mounted (${candidate}: ${cause instanceof Error ? cause.message : String(cause)})` }
  }
}

const second = detectSecondFilesystem()

/** A fresh temp directory, removed (with everything in it) when the test's scope closes. */
const tempDirectory = (parent: string) =>
  Effect.acquireRelease(
    Effect.promise(() => fsp.mkdtemp(NodePath.join(parent, "pi-fs-conformance-"))),
    (dir) => Effect.promise(() => fsp.rm(dir, { recursive: true, force: true }))
  )

const mounting = bindMountSupport()

const ScratchLive = Layer.scoped(
  Scratch,
  Effect.gen(function*() {
    const root = yield* tempDirectory(os.tmpdir())
    const otherDevice = "parent" in second ? yield* tempDirectory(second.parent) : null
    const scope = yield* Effect.scope
    // A mount point holding what `dir` held: its entries move to a tree outside `root`, bind-mounted at `dir`
    // until the test's scope closes (finalizers run last-first: unmounted before the temp dirs go).
    const mount = (dir: string) =>
      Effect.gen(function*() {
        const source = yield* tempDirectory(os.tmpdir())
        for (const name of fs.readdirSync(dir)) fs.renameSync(NodePath.join(dir, name), NodePath.join(source, name))
        yield* bindMount(source, dir)
      }).pipe(Scope.extend(scope), Effect.orDie)
    // ftruncate first, then each piece at its offset: everything between stays a hole.
    const sparseFile = (path: string, size: number, pieces: ReadonlyArray<readonly [number, Uint8Array]>) =>
      Effect.sync(() => {
        const fd = fs.openSync(path, "wx", 0o600)
        try {
          fs.ftruncateSync(fd, size)
          for (const [offset, piece] of pieces) fs.writeSync(fd, piece, 0, piece.byteLength, offset)
        } finally {
          fs.closeSync(fd)
        }
      })
    return { root, otherDevice, mount: mounting.available ? mount : null, sparseFile }
  })
)

const setupWith = (walker: Walker): ConformanceSetup => ({
  layer: () => Layer.merge(nodeFileSystemWith(walker), ScratchLive),
  crossDevice: "parent" in second ? { available: true } : { available: false, why: second.why },
  mountPoints: mounting
})

// Both walkers: the native one (built by `npm install`; its absence fails here, loudly) and the portable one.
fileSystemConformance("Node, native walker", setupWith("native"))
fileSystemConformance("Node, portable walker", setupWith("portable"))

describe("the Node FileSystem layer reads its settings when it is built", () => {
  it.scoped("the umask in force when the layer is built, not at import, decides whether a mode is fixed up", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory(os.tmpdir())
      // Imported long ago under the usual 022; built now under 077, which strips group read from 0740.
      const before = process.umask(0o077)
      try {
        const service = yield* Effect.provide(FileSystem, NodeFileSystem.layer)
        yield* service.makeDirectory(`${dir}/d`, { mode: 0o740 })
        yield* service.writeFileExclusive(`${dir}/f`, new TextEncoder().encode("x"), { mode: 0o640 })
        assert.strictEqual(fs.statSync(`${dir}/d`).mode & 0o777, 0o740)
        assert.strictEqual(fs.statSync(`${dir}/f`).mode & 0o777, 0o640)
      } finally {
        process.umask(before)
      }
    }))

  it.scoped("StorageConfig.walker picks the walks; `native` where the addon is missing would be a defect, never a silent swap", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory(os.tmpdir())
      fs.mkdirSync(`${dir}/t/a`, { recursive: true })
      fs.writeFileSync(`${dir}/t/a/f`, "xyz")
      for (const walker of ["portable", "auto"] as const) {
        const service = yield* Effect.provide(FileSystem, NodeFileSystem.layer.pipe(Layer.provide(StorageConfig.layerWith({ walker }))))
        const measure = yield* service.measureTree(`${dir}/t`, { maxEntries: 100, maxDepth: 8 })
        assert.deepStrictEqual([measure.fileBytes, measure.entries, measure.complete], [3, 2, true])
      }
      assert.strictEqual(walkerKindOf("auto"), availableWalkerKind())
      assert.strictEqual(walkerKindOf("portable"), "portable")
    }))
})

describe("the Node layer's port errors", () => {
  it.scoped("are built without a JavaScript stack, keep errno, path and the platform's error, and leave Error.stackTraceLimit as it was", () =>
    Effect.gen(function*() {
      const fsys = yield* FileSystem
      const dir = fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-port-errors-"))
      const limit = Error.stackTraceLimit
      const missing = yield* Effect.flip(fsys.readDirectory(`${dir}/absent`))
      assert.deepStrictEqual([missing._tag, missing.reason, missing.errno, missing.path], ["FileSystemError", "NotFound", "ENOENT", `${dir}/absent`])
      fs.writeFileSync(`${dir}/file`, "x")
      const thrown = yield* Effect.flip(fsys.makeDirectory(`${dir}/file`))
      assert.deepStrictEqual([thrown.reason, thrown.errno], ["AlreadyExists", "EEXIST"])
      // The Node error (with its syscall's stack) stays as the cause; ours has its message line only.
      assert.instanceOf(thrown.cause, Error)
      for (const e of [missing, thrown]) assert.strictEqual(e.stack?.split("\n").length, 1)
      assert.strictEqual(Error.stackTraceLimit, limit)
      fs.rmSync(dir, { recursive: true, force: true })
    }).pipe(Effect.provide(NodeFileSystem.layer.pipe(Layer.provide(StorageConfig.layerFromEnv)))))
})

describe("replaceFileIfUnchanged on Node: a save between the last check and the exchange is put back, never lost", () => {
  const loaded = fsatAddon()
  // Built by `npm install` (`npm run install` in a checkout): an addon without it fails here, loudly.
  const realExchange = "fsat" in loaded ? loaded.fsat.exchange : undefined
  it("the native addon has renameat2's exchange (else rebuild it: npm run install)", () => assert.isFunction(realExchange))
  /** A person's editor saving `path`: a temp file beside it renamed over it (a new inode). */
  const save = (path: string, text: string) => {
    fs.writeFileSync(`${path}.editor`, text)
    fs.renameSync(`${path}.editor`, path)
  }
  const versionOf = (path: string) => {
    const st = fs.lstatSync(path)
    return { dev: st.dev, ino: st.ino, bytes: new Uint8Array(fs.readFileSync(path)) }
  }
  /** The addon's exchange, with `before(call)` run just before each call (where the check has already passed). */
  const exchangeWith = (before: (call: number) => void) => {
    let calls = 0
    return {
      exchange: (a: string | Uint8Array, b: string | Uint8Array) => {
        before(++calls)
        return realExchange!(a, b)
      },
      calls: () => calls
    }
  }
  const withDir = <A>(use: (dir: string) => Effect.Effect<A, unknown>) =>
    Effect.flatMap(Effect.scoped(tempDirectory(os.tmpdir()).pipe(Effect.flatMap(use))), () => Effect.void)

  it.effect("nothing in between: the new file is exchanged in and the old one dropped", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const path = NodePath.join(dir, "USER.md")
        fs.writeFileSync(path, "read")
        const hook = exchangeWith(() => {})
        yield* NodeFileSystem.replaceFileIfUnchangedWith(hook.exchange)(path, versionOf(path), new TextEncoder().encode("mine"))
        assert.strictEqual(fs.readFileSync(path, "utf8"), "mine")
        assert.strictEqual(hook.calls(), 1)
        assert.deepStrictEqual(fs.readdirSync(dir), ["USER.md"])
      })))

  it.effect("a save just before the exchange: exchanged back, Changed, their bytes in place", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const path = NodePath.join(dir, "USER.md")
        fs.writeFileSync(path, "read")
        const hook = exchangeWith((call) => call === 1 && save(path, "theirs"))
        const error = yield* Effect.flip(NodeFileSystem.replaceFileIfUnchangedWith(hook.exchange)(path, versionOf(path), new TextEncoder().encode("mine")))
        assert.strictEqual(error.reason, "Changed")
        assert.strictEqual(fs.readFileSync(path, "utf8"), "theirs")
        assert.strictEqual(hook.calls(), 2)
        assert.deepStrictEqual(fs.readdirSync(dir), ["USER.md"])
      })))

  it.effect("a second save before the exchange back: the newest stays in place, the earlier one kept beside it", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const path = NodePath.join(dir, "USER.md")
        fs.writeFileSync(path, "read")
        const hook = exchangeWith((call) => call <= 2 && save(path, `theirs ${call}`))
        const error = yield* Effect.flip(NodeFileSystem.replaceFileIfUnchangedWith(hook.exchange)(path, versionOf(path), new TextEncoder().encode("mine")))
        assert.strictEqual(error.reason, "Changed")
        assert.strictEqual(fs.readFileSync(path, "utf8"), "theirs 2")
        const kept = fs.readdirSync(dir).filter((n) => n !== "USER.md")
        assert.strictEqual(kept.length, 1)
        assert.match(kept[0]!, /^\.USER\.md\.kept-[0-9a-f]{12}$/)
        assert.strictEqual(fs.readFileSync(NodePath.join(dir, kept[0]!), "utf8"), "theirs 1")
        assert.include(error.detail ?? "", kept[0]!)
      })))
})
