/**
 * TierStorage on real disk (Node layer, temp dir): every write asserts the exact file it landed in.
 * Through the service (`TierStorage.layer`), as TierOverlap, TrashDepth and ConfigRedLinesAgreement open it too
 * (test/support/tiers.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer, ParseResult, Ref, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import {
  ConfigRedLine,
  ConfigUnreadable,
  DecodeFailure,
  FileSystemError,
  InvalidArgument,
  StateMissing,
  StateUnreadable
} from "../../src/domain/Errors.js"
import { makeExtensionContext } from "../../src/domain/Tiers.js"
import { Host } from "../../src/services/Host.js"
import { type OpenTiersOptions, TierStorage, type Tiers } from "../../src/services/TierStorage.js"
import type { ExtensionContextOptions, TierDirs } from "../../src/domain/Tiers.js"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { layerMemory } from "../../src/layers/MemoryFileSystem.js"
import { MemoryDriver } from "../../src/layers/MemoryWorld.js"
import { FileSystem } from "../../src/services/FileSystem.js"

const openTiers = (ctx: TierDirs, options?: OpenTiersOptions) => Effect.flatMap(TierStorage, (t) => t.open(ctx, options))
const extensionContext = (extId: string, options?: ExtensionContextOptions) =>
  Effect.flatMap(TierStorage, (t) => t.extensionContext(extId, options))
/** The service over the Node world, with the FileSystem beside it for the tests' own looks. */
const TiersLive = TierStorage.layer.pipe(Layer.provideMerge(Layer.merge(NodeFileSystem.layer, NodeHost.layer)))

/** A fresh temp data root per test, removed when the test's scope closes. */
const dataRoot = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(NodePath.join(os.tmpdir(), "tiers-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const setup = (o?: { configBudgetBytes?: number }) =>
  Effect.gen(function*() {
    const root = yield* dataRoot
    const ctx = Either.getOrThrow(
      makeExtensionContext({ extId: "notes", options: { dataRoot: root }, env: () => undefined, home: "/nohome", cwd: "/" })
    )
    const tiers = yield* openTiers(ctx, o)
    return { root, ctx, tiers, ext: NodePath.join(root, "notes") }
  })

const read = (path: string) => fs.readFileSync(path, "utf8")
const modeOf = (path: string) => fs.lstatSync(path).mode & 0o777
const exists = (path: string) => fs.existsSync(path) || isLink(path)
const isLink = (path: string) => {
  try {
    return fs.lstatSync(path).isSymbolicLink()
  } catch {
    return false
  }
}
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

const counter = Effect.gen(function*() {
  const builds = yield* Ref.make(0)
  const build = (content: string) => Ref.update(builds, (n) => n + 1).pipe(Effect.as(content))
  return { builds, build }
})

const fail = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.flip(effect)

describe("extensionContext (Effect, Host port)", () => {
  const host = (env: Record<string, string>) =>
    Layer.succeed(Host, {
      hostname: "h", bootId: null, pid: 1, selfStartTime: null, uid: null,
      homeDir: "/home/someone", cwd: "/cwd", env: (n) => env[n],
      processStartTime: () => Effect.succeed(null), pidExists: () => Effect.succeed(false)
    })

  const tiersOn = (hostLayer: Layer.Layer<Host>) => TierStorage.layer.pipe(Layer.provide(Layer.merge(hostLayer, NodeFileSystem.layer)))

  it.effect("reads PI_WEB_DATA_DIR and home from the Host port", () =>
    Effect.gen(function*() {
      const fromEnv = yield* extensionContext("x").pipe(Effect.provide(tiersOn(host({ PI_WEB_DATA_DIR: "/srv/data" }))))
      assert.strictEqual(fromEnv.configDir, "/srv/data/x/config")
      const dev = yield* extensionContext("x", { instance: "dev" }).pipe(Effect.provide(tiersOn(host({}))))
      assert.strictEqual(dev.stateDir, "/home/someone/.pi/web-dev/data/x/state")
      const bad = yield* fail(extensionContext("X").pipe(Effect.provide(tiersOn(host({})))))
      assert.strictEqual(bad._tag, "InvalidSegment")
      assert.strictEqual(bad.field, "extId")
    }))

  it.scoped("building a context and opening its tiers does no I/O", () =>
    Effect.gen(function*() {
      const { ext } = yield* setup()
      assert.isFalse(fs.existsSync(ext))
    }).pipe(Effect.provide(TiersLive)))
})

describe("cache tier", () => {
  it.scoped("ensure builds once, lands in cache/<key> (dir 0700, file 0600), then serves the file", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const { builds, build } = yield* counter
      const first = yield* tiers.cache.ensure("index.json", build("v1"))
      assert.strictEqual(text(first), "v1")
      const path = NodePath.join(ext, "cache", "index.json")
      assert.strictEqual(read(path), "v1")
      assert.strictEqual(modeOf(NodePath.join(ext, "cache")), 0o700)
      assert.strictEqual(modeOf(path), 0o600)
      const second = yield* tiers.cache.ensure("index.json", build("v2"))
      assert.strictEqual(text(second), "v1")
      assert.strictEqual(yield* Ref.get(builds), 1)
      assert.deepStrictEqual(fs.readdirSync(NodePath.join(ext, "cache")), ["index.json"])
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("everything works after rm -rf cache/ (conformance)", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const { builds, build } = yield* counter
      yield* tiers.cache.ensure("a", build("A"))
      yield* tiers.cache.ensure("b", Effect.succeed(new Uint8Array([1, 2, 3])))
      fs.rmSync(NodePath.join(ext, "cache"), { recursive: true, force: true })
      const again = yield* tiers.cache.ensure("a", build("A2"))
      assert.strictEqual(text(again), "A2")
      assert.strictEqual(yield* Ref.get(builds), 2)
      assert.strictEqual(read(NodePath.join(ext, "cache", "a")), "A2")
      const bytes = yield* tiers.cache.ensure("b", Effect.succeed(new Uint8Array([4])))
      assert.deepStrictEqual([...bytes], [4])
      assert.deepStrictEqual([...fs.readFileSync(NodePath.join(ext, "cache", "b"))], [4])
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("a cached entry that fails validation (or whose validator throws) is rebuilt", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const path = NodePath.join(ext, "cache", "model.bin")
      yield* tiers.cache.ensure("model.bin", Effect.succeed("good"))
      fs.writeFileSync(path, "corrupt")
      const isGood = (b: Uint8Array) => text(b).startsWith("good")
      const rebuilt = yield* tiers.cache.ensure("model.bin", Effect.succeed("good again"), { validate: isGood })
      assert.strictEqual(text(rebuilt), "good again")
      assert.strictEqual(read(path), "good again")
      const kept = yield* tiers.cache.ensure("model.bin", Effect.succeed("unused"), { validate: isGood })
      assert.strictEqual(text(kept), "good again")
      const thrown = yield* tiers.cache.ensure("model.bin", Effect.succeed("after throw"), {
        validate: () => {
          throw new Error("validator bug")
        }
      })
      assert.strictEqual(text(thrown), "after throw")
      assert.strictEqual(read(path), "after throw")
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("a directory or a symlink squatting on a key is replaced, and a link's target is never touched", () =>
    Effect.gen(function*() {
      const { tiers, ext, root } = yield* setup()
      const cacheDir = NodePath.join(ext, "cache")
      fs.mkdirSync(NodePath.join(cacheDir, "dir-key", "deep"), { recursive: true })
      fs.writeFileSync(NodePath.join(cacheDir, "dir-key", "deep", "f"), "x")
      const outside = NodePath.join(root, "outside.txt")
      fs.writeFileSync(outside, "precious")
      fs.symlinkSync(outside, NodePath.join(cacheDir, "link-key"))
      assert.strictEqual(text(yield* tiers.cache.ensure("dir-key", Effect.succeed("D"))), "D")
      assert.strictEqual(read(NodePath.join(cacheDir, "dir-key")), "D")
      assert.strictEqual(text(yield* tiers.cache.ensure("link-key", Effect.succeed("L"))), "L")
      assert.isFalse(fs.lstatSync(NodePath.join(cacheDir, "link-key")).isSymbolicLink())
      assert.strictEqual(read(NodePath.join(cacheDir, "link-key")), "L")
      assert.strictEqual(read(outside), "precious")
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("refuses keys that are paths, without building", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const { builds, build } = yield* counter
      for (const key of ["../escape", "a/b", "..", ".", ""]) {
        const e = yield* fail(tiers.cache.ensure(key, build("x")))
        assert.instanceOf(e, InvalidArgument, key)
      }
      assert.strictEqual(yield* Ref.get(builds), 0)
      assert.isFalse(fs.existsSync(ext))
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("a failing build fails with its own error and writes nothing", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const e = yield* fail(tiers.cache.ensure("k", Effect.fail("download failed" as const)))
      assert.strictEqual(e, "download failed")
      assert.isFalse(fs.existsSync(NodePath.join(ext, "cache", "k")))
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("clear removes cache/ entirely without following symlinks; ensure rebuilds afterwards", () =>
    Effect.gen(function*() {
      const { tiers, ext, root } = yield* setup()
      yield* tiers.cache.ensure("a", Effect.succeed("A"))
      yield* tiers.state.write("keep.json", { keep: true })
      const outsideDir = NodePath.join(root, "outside")
      fs.mkdirSync(outsideDir)
      fs.writeFileSync(NodePath.join(outsideDir, "f"), "precious")
      fs.symlinkSync(outsideDir, NodePath.join(ext, "cache", "venv-link"))
      yield* tiers.cache.clear()
      assert.isFalse(exists(NodePath.join(ext, "cache")))
      assert.strictEqual(read(NodePath.join(outsideDir, "f")), "precious")
      assert.strictEqual(read(NodePath.join(ext, "state", "keep.json")), "{\"keep\":true}\n")
      yield* tiers.cache.clear() // clearing an absent cache is fine
      assert.strictEqual(text(yield* tiers.cache.ensure("a", Effect.succeed("A again"))), "A again")
      assert.strictEqual(read(NodePath.join(ext, "cache", "a")), "A again")
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("a cache/ that is a symlink to another disk keeps working, and clear only unlinks it", () =>
    Effect.gen(function*() {
      const { tiers, ext, root } = yield* setup()
      const elsewhere = NodePath.join(root, "big-disk")
      fs.mkdirSync(elsewhere)
      fs.mkdirSync(ext)
      fs.symlinkSync(elsewhere, NodePath.join(ext, "cache"))
      yield* tiers.cache.ensure("k", Effect.succeed("via link"))
      assert.strictEqual(read(NodePath.join(elsewhere, "k")), "via link")
      yield* tiers.cache.clear()
      assert.isFalse(exists(NodePath.join(ext, "cache")))
      assert.strictEqual(read(NodePath.join(elsewhere, "k")), "via link")
    }).pipe(Effect.provide(TiersLive)))
})

describe("state tier", () => {
  it.scoped("write lands atomically in state/<name> as JSON (0600); read returns it", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const value = { history: [{ at: 1, text: "hello" }], total: 1 }
      yield* tiers.state.write("history.json", value)
      const path = NodePath.join(ext, "state", "history.json")
      assert.deepStrictEqual(JSON.parse(read(path)), value)
      assert.strictEqual(modeOf(path), 0o600)
      assert.strictEqual(modeOf(NodePath.join(ext, "state")), 0o700)
      assert.deepStrictEqual(fs.readdirSync(NodePath.join(ext, "state")), ["history.json"]) // no temp left behind
      assert.deepStrictEqual(yield* tiers.state.read("history.json"), value)
      yield* tiers.state.write("history.json", { total: 2 })
      assert.deepStrictEqual(JSON.parse(read(path)), { total: 2 })
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("a missing record is StateMissing: no default, nothing created", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const e = yield* fail(tiers.state.read("ledger.json"))
      assert.instanceOf(e, StateMissing)
      assert.strictEqual((e as StateMissing).path, NodePath.join(ext, "state", "ledger.json"))
      assert.isFalse(fs.existsSync(ext))
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("corrupt JSON, a symlink, a directory or a schema mismatch is StateUnreadable and left untouched", () =>
    Effect.gen(function*() {
      const { tiers, ext, root } = yield* setup()
      const stateDir = NodePath.join(ext, "state")
      fs.mkdirSync(stateDir, { recursive: true })
      fs.writeFileSync(NodePath.join(stateDir, "corrupt.json"), "{\"half\":")
      fs.writeFileSync(NodePath.join(root, "target.json"), "{}")
      fs.symlinkSync(NodePath.join(root, "target.json"), NodePath.join(stateDir, "link.json"))
      fs.mkdirSync(NodePath.join(stateDir, "dir.json"))
      fs.writeFileSync(NodePath.join(stateDir, "shape.json"), "{\"count\":\"many\"}")
      // The cause tells a read that failed (reading again may help) from bytes that are not the record (it will not).
      const causeOf = (e: unknown) => {
        assert.instanceOf(e, StateUnreadable)
        return (e as StateUnreadable).cause
      }
      const corrupt = causeOf(yield* fail(tiers.state.read("corrupt.json")))
      assert.instanceOf(corrupt, DecodeFailure)
      assert.strictEqual((corrupt as DecodeFailure).stage, "json")
      assert.instanceOf((corrupt as DecodeFailure).cause, SyntaxError)
      for (const [name, reason] of [["link.json", "IsSymlink"], ["dir.json", "IsADirectory"]] as const) {
        const cause = causeOf(yield* fail(tiers.state.read(name)))
        assert.instanceOf(cause, FileSystemError, name)
        assert.strictEqual((cause as FileSystemError).reason, reason, name)
      }
      const e = yield* fail(tiers.state.read("shape.json", Schema.Struct({ count: Schema.Number })))
      const mismatch = causeOf(e)
      assert.instanceOf(mismatch, DecodeFailure)
      assert.strictEqual((mismatch as DecodeFailure).stage, "schema")
      assert.isTrue(ParseResult.isParseError((mismatch as DecodeFailure).cause))
      assert.include((e as StateUnreadable).detail, "count: Expected number, actual \"many\"")
      const ok = yield* tiers.state.read("shape.json", Schema.Struct({ count: Schema.String }))
      assert.strictEqual(ok.count, "many")
      assert.strictEqual(read(NodePath.join(stateDir, "corrupt.json")), "{\"half\":")
      assert.isTrue(fs.lstatSync(NodePath.join(stateDir, "link.json")).isSymbolicLink())
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("refuses non-JSON values and path names, writing nothing; offers no cleanup", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const e1 = yield* fail(tiers.state.write("x.json", { when: new Date(0) }))
      assert.instanceOf(e1, InvalidArgument)
      const e2 = yield* fail(tiers.state.write("../x.json", {}))
      assert.instanceOf(e2, InvalidArgument)
      assert.isFalse(fs.existsSync(ext))
      assert.deepStrictEqual(Object.keys(tiers.state).sort(), ["dir", "read", "write"])
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("an old host without stateDir writes state to config/state, outside config's budget", () =>
    Effect.gen(function*() {
      const root = yield* dataRoot
      const tiers: Tiers = yield* openTiers({
        configDir: NodePath.join(root, "old", "config"),
        cacheDir: NodePath.join(root, "old", "cache")
      }, { configBudgetBytes: 100 })
      yield* tiers.state.write("big.json", "x".repeat(500))
      assert.strictEqual(read(NodePath.join(root, "old", "config", "state", "big.json")), `"${"x".repeat(500)}"\n`)
      yield* tiers.config.set("k", 1)
      assert.deepStrictEqual(JSON.parse(read(NodePath.join(root, "old", "config", "settings.json"))), { k: 1 })
    }).pipe(Effect.provide(TiersLive)))
})

describe("config tier", () => {
  it.scoped("set/get small JSON key-values in config/settings.json, pretty-printed, atomically", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      assert.isUndefined(yield* tiers.config.get("model"))
      yield* tiers.config.set("model", "sonnet")
      yield* tiers.config.set("hotWords", ["pi", "agent"])
      const path = NodePath.join(ext, "config", "settings.json")
      assert.strictEqual(read(path), JSON.stringify({ model: "sonnet", hotWords: ["pi", "agent"] }, null, 2) + "\n")
      assert.strictEqual(modeOf(path), 0o600)
      assert.deepStrictEqual(fs.readdirSync(NodePath.join(ext, "config")), ["settings.json"])
      assert.strictEqual(yield* tiers.config.get("model"), "sonnet")
      assert.deepStrictEqual(yield* tiers.config.get("hotWords"), ["pi", "agent"])
      for (const inherited of ["__proto__", "toString", "constructor"]) {
        assert.isUndefined(yield* tiers.config.get(inherited), inherited)
      }
      yield* tiers.config.set("__proto__", { polluted: true })
      assert.deepStrictEqual(yield* tiers.config.get("__proto__"), { polluted: true })
      assert.isUndefined(({} as Record<string, unknown>).polluted)
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("concurrent sets from one handle lose no key", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => i), (i) => tiers.config.set(`k${i}`, i), {
        concurrency: "unbounded"
      })
      const saved = JSON.parse(read(NodePath.join(ext, "config", "settings.json")))
      assert.strictEqual(Object.keys(saved).length, 12)
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("a value that is not JSON is the same InvalidArgument in config.set as in state.write; undefined points at delete", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      for (const bad of [undefined, NaN, new Uint8Array(2), () => 1, { nested: new Map() }, 5n]) {
        const viaConfig = yield* fail(tiers.config.set("k", bad))
        const viaState = yield* fail(tiers.state.write("k.json", bad))
        assert.instanceOf(viaConfig, InvalidArgument)
        assert.instanceOf(viaState, InvalidArgument)
        assert.strictEqual((viaConfig as InvalidArgument).field, "value")
        assert.strictEqual((viaState as InvalidArgument).field, "value")
        assert.include((viaConfig as InvalidArgument).detail, (viaState as InvalidArgument).detail)
      }
      const unset = (yield* fail(tiers.config.set("k", undefined))) as InvalidArgument
      assert.strictEqual(unset.message, "invalid value: not JSON: value is undefined, which JSON cannot hold; to unset a key, use config.delete(key)")
      assert.isFalse(fs.existsSync(ext))
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("delete removes a key and says whether it was set; settings.json stays, and nothing is created for nothing", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const path = NodePath.join(ext, "config", "settings.json")
      assert.isFalse(yield* tiers.config.delete("model"))
      assert.isFalse(fs.existsSync(ext))
      yield* tiers.config.set("model", "sonnet")
      yield* tiers.config.set("theme", "dark")
      assert.isTrue(yield* tiers.config.delete("model"))
      assert.isUndefined(yield* tiers.config.get("model"))
      assert.strictEqual(read(path), JSON.stringify({ theme: "dark" }, null, 2) + "\n")
      assert.isFalse(yield* tiers.config.delete("model"))
      assert.isFalse(yield* tiers.config.delete("toString"), "an inherited name is no key")
      assert.isTrue(yield* tiers.config.delete("theme"))
      assert.strictEqual(read(path), "{}\n")
      const bad = yield* fail(tiers.config.delete(""))
      assert.instanceOf(bad, InvalidArgument)
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("delete shrinks config/ even when other files took it over its budget; a corrupt settings.json is left as it is", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup({ configBudgetBytes: 200 })
      yield* tiers.config.set("big", "x".repeat(100))
      fs.writeFileSync(NodePath.join(ext, "config", "other.txt"), "o".repeat(300)) // another tool's file
      assert.isTrue(yield* tiers.config.delete("big"))
      const path = NodePath.join(ext, "config", "settings.json")
      fs.writeFileSync(path, "{broken")
      const e = yield* fail(tiers.config.delete("big"))
      assert.instanceOf(e, ConfigUnreadable)
      assert.strictEqual(read(path), "{broken")
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("readFile reads back what writeFile wrote: undefined when absent, never through a link, never settings.json", () =>
    Effect.gen(function*() {
      const { tiers, ext, root } = yield* setup()
      assert.isUndefined(yield* tiers.config.readFile("dictionary.txt"))
      yield* tiers.config.writeFile("dictionary.txt", "pi\nagent\n")
      assert.strictEqual(text((yield* tiers.config.readFile("dictionary.txt"))!), "pi\nagent\n")
      yield* tiers.config.writeFile("key.bin", new Uint8Array([0, 255, 7]))
      assert.deepStrictEqual([...(yield* tiers.config.readFile("key.bin"))!], [0, 255, 7])
      fs.writeFileSync(NodePath.join(root, "secret"), "outside")
      fs.symlinkSync(NodePath.join(root, "secret"), NodePath.join(ext, "config", "link.txt"))
      const link = yield* fail(tiers.config.readFile("link.txt"))
      assert.instanceOf(link, FileSystemError)
      assert.strictEqual((link as FileSystemError).reason, "IsSymlink")
      for (const name of ["settings.json", "../x", ""]) {
        const e = yield* fail(tiers.config.readFile(name))
        assert.instanceOf(e, InvalidArgument, name)
      }
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("writeFile lands in config/<name> but refuses databases and logs, naming the rule and right tier", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      yield* tiers.config.writeFile("dictionary.txt", "pi\nagent\n")
      assert.strictEqual(read(NodePath.join(ext, "config", "dictionary.txt")), "pi\nagent\n")
      for (const [name, rule, rightTier] of [
        ["usage.sqlite", "database", "state"],
        ["usage.sqlite-wal", "database", "state"],
        ["app.db", "database", "state"],
        ["debug.log", "log", "cache"]
      ] as const) {
        const e = yield* fail(tiers.config.writeFile(name, "x"))
        assert.instanceOf(e, ConfigRedLine, name)
        const red = e as ConfigRedLine
        assert.strictEqual(red.rule, rule)
        assert.strictEqual(red.rightTier, rightTier)
        assert.strictEqual(red.path, NodePath.join(ext, "config", name))
        assert.include(red.message, `put it in ${rightTier}/`)
        assert.isFalse(fs.existsSync(red.path))
      }
      const e = yield* fail(tiers.config.writeFile("settings.json", "{}"))
      assert.instanceOf(e, InvalidArgument)
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("writeFile and set refuse to take config/ over its budget; replacing a file counts only the growth", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup({ configBudgetBytes: 1000 })
      yield* tiers.config.writeFile("a.txt", "x".repeat(600))
      const over = yield* fail(tiers.config.writeFile("b.txt", "y".repeat(500)))
      assert.instanceOf(over, ConfigRedLine)
      assert.strictEqual((over as ConfigRedLine).rule, "size-budget")
      assert.strictEqual((over as ConfigRedLine).rightTier, "state")
      assert.isFalse(fs.existsSync(NodePath.join(ext, "config", "b.txt")))
      yield* tiers.config.writeFile("a.txt", "x".repeat(950)) // replaces 600 bytes: 950 in total
      assert.strictEqual(fs.statSync(NodePath.join(ext, "config", "a.txt")).size, 950)
      const setOver = yield* fail(tiers.config.set("big", "z".repeat(100)))
      assert.strictEqual((setOver as ConfigRedLine).rule, "size-budget")
      assert.isFalse(fs.existsSync(NodePath.join(ext, "config", "settings.json")))
      // Files other tools put in config/ count too.
      fs.writeFileSync(NodePath.join(ext, "config", "a.txt"), "")
      fs.mkdirSync(NodePath.join(ext, "config", "sub"))
      fs.writeFileSync(NodePath.join(ext, "config", "sub", "blob"), "b".repeat(990))
      const last = yield* fail(tiers.config.set("k", 1))
      assert.strictEqual((last as ConfigRedLine).rule, "size-budget")
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("the default budget is 1 MiB", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      yield* tiers.config.writeFile("near.bin", new Uint8Array(1024 * 1024 - 10))
      assert.strictEqual(fs.statSync(NodePath.join(ext, "config", "near.bin")).size, 1024 * 1024 - 10)
      const e = yield* fail(tiers.config.writeFile("more.bin", new Uint8Array(11)))
      assert.strictEqual((e as ConfigRedLine).rule, "size-budget")
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("a corrupt settings.json is an error, never silently reset", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      fs.mkdirSync(NodePath.join(ext, "config"), { recursive: true })
      const path = NodePath.join(ext, "config", "settings.json")
      // `1e999` parses as Infinity, which no tier write makes and the next write would turn into null.
      const cases = [["{not json", "json"], ["[1,2]", "schema"], ["null", "schema"], ['{"k":1e999,"j":1}', "json"], ['{"j":[1,-1e400]}', "json"]] as const
      for (const [content, stage] of cases) {
        fs.writeFileSync(path, content)
        const e = yield* fail(tiers.config.get("k"))
        // A program error of its own (the file read fine; its content is what is wrong), not a port error.
        assert.instanceOf(e, ConfigUnreadable)
        assert.strictEqual((e as ConfigUnreadable).path, path)
        const cause = (e as ConfigUnreadable).cause
        assert.instanceOf(cause, DecodeFailure)
        assert.strictEqual((cause as DecodeFailure).stage, stage, content)
        yield* fail(tiers.config.set("j", 2))
        yield* fail(tiers.config.delete("j"))
        assert.strictEqual(read(path), content)
      }
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("settings.json that cannot be read as a file (a link, a directory, a FIFO, over the budget) is ConfigUnreadable with the read's failure, and nothing is written", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const config = NodePath.join(ext, "config")
      fs.mkdirSync(config, { recursive: true })
      const path = NodePath.join(config, "settings.json")
      const elsewhere = NodePath.join(ext, "elsewhere.json")
      fs.writeFileSync(elsewhere, '{"k":1}')
      const shapes: ReadonlyArray<readonly [string, () => void]> = [
        ["a link", () => fs.symlinkSync(elsewhere, path)],
        ["a directory", () => fs.mkdirSync(path)],
        ["a FIFO", () => execFileSync("mkfifo", [path])],
        ["over the budget", () => fs.writeFileSync(path, `{"k":"${"x".repeat(2 * 1024 * 1024)}"}`)]
      ]
      for (const [what, make] of shapes) {
        fs.rmSync(path, { recursive: true, force: true })
        make()
        const before = fs.lstatSync(path)
        for (const call of [tiers.config.get("k"), tiers.config.set("k", 2), tiers.config.delete("k")] as const) {
          const e = yield* fail(call as Effect.Effect<unknown, unknown>)
          assert.instanceOf(e, ConfigUnreadable, what)
          assert.strictEqual((e as ConfigUnreadable).path, path, what)
          assert.strictEqual((e as ConfigUnreadable).cause._tag, "FileSystemError", what)
          assert.include((e as ConfigUnreadable).message, "it was left as it is", what)
        }
        const after = fs.lstatSync(path)
        assert.deepStrictEqual([after.ino, after.size, after.mtimeMs], [before.ino, before.size, before.mtimeMs], what)
      }
      assert.strictEqual(read(elsewhere), '{"k":1}')
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("a state record no write could have made (a number JSON cannot hold) is StateUnreadable, stage json", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      fs.mkdirSync(NodePath.join(ext, "state"), { recursive: true })
      const path = NodePath.join(ext, "state", "h.json")
      fs.writeFileSync(path, '{"total":1e999}')
      const e = yield* fail(tiers.state.read("h.json"))
      assert.instanceOf(e, StateUnreadable)
      assert.strictEqual(((e as StateUnreadable).cause as DecodeFailure).stage, "json")
      assert.include(e.message, "the record.total is Infinity")
    }).pipe(Effect.provide(TiersLive)))

  it.effect("openTiers refuses relative or overlapping directories and a bad budget", () =>
    Effect.gen(function*() {
      const field = (e: { readonly _tag: string }) => (e instanceof InvalidArgument ? e.field : e._tag)
      const e1 = yield* fail(openTiers({ configDir: "config", cacheDir: "/c" }))
      assert.strictEqual(field(e1), "configDir")
      const e2 = yield* fail(openTiers({ configDir: "/x/config", stateDir: "/x/state", cacheDir: "/x/state/cache" }))
      assert.strictEqual(field(e2), "cacheDir")
      const e3 = yield* fail(openTiers({ configDir: "/x/config", cacheDir: "/x/cache" }, { configBudgetBytes: -1 }))
      assert.strictEqual(field(e3), "configBudgetBytes")
    }).pipe(Effect.provide(TiersLive)))
})

describe("data at the edges is typed (schemas)", () => {
  const Settings = Schema.Struct({ model: Schema.String, temperature: Schema.Number })

  it.scoped("config.get(key, schema) decodes; a stored value the schema refuses is ConfigUnreadable naming the key, left as it is", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      assert.isUndefined(yield* tiers.config.get("llm", Settings))
      yield* tiers.config.set("llm", { model: "sonnet", temperature: 0.2 }, Settings)
      const llm = yield* tiers.config.get("llm", Settings)
      assert.deepStrictEqual(llm, { model: "sonnet", temperature: 0.2 })
      yield* tiers.config.set("llm", { model: "sonnet", temperature: "hot" })
      const before = read(NodePath.join(ext, "config", "settings.json"))
      const e = yield* fail(tiers.config.get("llm", Settings))
      assert.instanceOf(e, ConfigUnreadable)
      assert.strictEqual((e as ConfigUnreadable).key, "llm")
      assert.strictEqual(((e as ConfigUnreadable).cause as DecodeFailure).stage, "schema")
      assert.include(e.message, "config key \"llm\"")
      assert.include(e.message, "temperature: Expected number, actual \"hot\"")
      assert.strictEqual(read(NodePath.join(ext, "config", "settings.json")), before)
    }).pipe(Effect.provide(TiersLive)))

  it.scoped("set and write encode with the schema (a bigint, a Date) and read back decoded; what cannot be encoded is InvalidArgument", () =>
    Effect.gen(function*() {
      const { tiers, ext } = yield* setup()
      const Ledger = Schema.Struct({ total: Schema.BigInt, at: Schema.Date })
      const value = { total: 12345678901234567890n, at: new Date(0) }
      yield* tiers.state.write("ledger.json", value, Ledger)
      assert.deepStrictEqual(JSON.parse(read(NodePath.join(ext, "state", "ledger.json"))), {
        total: "12345678901234567890",
        at: "1970-01-01T00:00:00.000Z"
      })
      assert.deepStrictEqual(yield* tiers.state.read("ledger.json", Ledger), value)
      yield* tiers.config.set("limit", 7n, Schema.BigInt)
      assert.strictEqual(yield* tiers.config.get("limit", Schema.BigInt), 7n)
      const Positive = Schema.Number.pipe(Schema.positive())
      const refused = yield* fail(tiers.state.write("n.json", -1, Positive))
      assert.instanceOf(refused, InvalidArgument)
      assert.include((refused as InvalidArgument).detail, "cannot be encoded with the given schema")
      const refusedConfig = yield* fail(tiers.config.set("n", -1, Positive))
      assert.instanceOf(refusedConfig, InvalidArgument)
      assert.isFalse(fs.existsSync(NodePath.join(ext, "state", "n.json")))
      // A schema whose encoded side is not JSON is refused as any such value is.
      const Raw = Schema.declare((u): u is bigint => typeof u === "bigint")
      const raw = yield* fail(tiers.state.write("raw.json", 1n, Raw))
      assert.strictEqual((raw as InvalidArgument).detail, "not JSON: value is a bigint, which JSON cannot hold")
    }).pipe(Effect.provide(TiersLive)))
})

describe("on the Memory layer", () => {
  const ctxAt = (root: string) =>
    Either.getOrThrow(makeExtensionContext({ extId: "notes", options: { dataRoot: root }, env: () => undefined, home: "/h", cwd: "/" }))
  const ctx = ctxAt("/data")

  /** Every crash point of a second write: after recovery the record reads as the old or the new value, never neither. */
  const crashEveryStep = (
    write: (tiers: Tiers, value: number) => Effect.Effect<void, unknown>,
    readBack: (tiers: Tiers) => Effect.Effect<unknown, unknown>
  ) =>
    Effect.gen(function*() {
      const seen = new Set<string>()
      for (let step = 1; step <= 12; step++) {
        const outcome = yield* Effect.gen(function*() {
          const world = yield* MemoryDriver
          const tiers = yield* openTiers(ctx)
          yield* write(tiers, 1)
          world.crashAfter(step)
          const crashed = yield* Effect.exit(write(tiers, 2))
          world.recover()
          const after = yield* readBack(tiers)
          assert.include([1, 2], after, `crash after ${step} steps`)
          if (Exit.isSuccess(crashed)) assert.strictEqual(after, 2)
          return Exit.isSuccess(crashed) ? "done" : `crashed:${after}`
        }).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provideMerge(layerMemory()))))
        seen.add(outcome)
      }
      // The sweep really crossed the commit point: both outcomes of a crash occurred.
      assert.isTrue(seen.has("crashed:1"), [...seen].join())
      assert.isTrue(seen.has("done"), [...seen].join())
    })

  it.effect("a state write is atomic at every crash point", () =>
    crashEveryStep((t, v) => t.state.write("counter.json", v), (t) => t.state.read("counter.json")))

  it.effect("a config set is atomic at every crash point", () =>
    crashEveryStep((t, v) => t.config.set("counter", v), (t) => t.config.get("counter")))

  it.effect("a config delete is atomic at every crash point, and never loses another key", () =>
    Effect.gen(function*() {
      const seen = new Set<string>()
      for (let step = 1; step <= 12; step++) {
        const outcome = yield* Effect.gen(function*() {
          const world = yield* MemoryDriver
          const tiers = yield* openTiers(ctx)
          yield* tiers.config.set("keep", "me")
          yield* tiers.config.set("gone", 1)
          world.crashAfter(step)
          const crashed = yield* Effect.exit(tiers.config.delete("gone"))
          world.recover()
          const after = yield* tiers.config.get("gone")
          assert.include([1, undefined], after, `crash after ${step} steps`)
          assert.strictEqual(yield* tiers.config.get("keep"), "me")
          if (Exit.isSuccess(crashed)) assert.isUndefined(after)
          return Exit.isSuccess(crashed) ? "done" : `crashed:${after}`
        }).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provideMerge(layerMemory()))))
        seen.add(outcome)
      }
      assert.isTrue(seen.has("crashed:1"), [...seen].join())
      assert.isTrue(seen.has("done"), [...seen].join())
    }))

  it.effect.prop("any JSON value reads back as JSON gives it, from state and from config (and a deleted key is unset)", [
    fc.jsonValue({ maxDepth: 3 }),
    fc.string({ minLength: 1, maxLength: 12 })
  ], ([value, key]) =>
    Effect.gen(function*() {
      const tiers = yield* openTiers(ctx)
      const expected = JSON.parse(JSON.stringify(value))
      yield* tiers.state.write("value.json", value)
      assert.deepStrictEqual(yield* tiers.state.read("value.json"), expected)
      yield* tiers.config.set(key, value)
      assert.deepStrictEqual(yield* tiers.config.get(key), expected)
      assert.isTrue(yield* tiers.config.delete(key))
      assert.isUndefined(yield* tiers.config.get(key))
    }).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provideMerge(layerMemory())))), { fastCheck: { numRuns: 30 } })

  /**
   * A person editing settings.json by hand (read, add their key, blind atomic save) while the extension sets
   * keys, interleaved by a seed: `set` re-reads and replaces only what it read, so none of their keys is lost.
   */
  it.effect.prop("config.set beside a person saving settings.json: none of the person's keys is lost", [
    fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    fc.integer({ min: 1, max: 5 })
  ], ([seed, maxYields]) =>
    Effect.gen(function*() {
      const world = yield* MemoryDriver
      const tiers = yield* openTiers(ctx)
      yield* tiers.config.set("seed", 0)
      const path = "/data/notes/config/settings.json"
      const person = (yield* FileSystem)
      const keys = Array.from({ length: 6 }, (_, i) => `person${i}`)
      const personLoop = Effect.forEach(keys, (key) =>
        Effect.gen(function*() {
          const current = JSON.parse(text(yield* person.readFile(path))) as Record<string, unknown>
          yield* person.writeFileAtomic(path, new TextEncoder().encode(JSON.stringify({ ...current, [key]: true }, null, 2) + "\n"), { sync: false })
        }), { discard: true })
      const extension = Effect.forEach([0, 1, 2, 3, 4, 5], (i) => tiers.config.set(`ext${i}`, i), { discard: true })
      yield* Effect.all([personLoop, extension], { concurrency: "unbounded", discard: true })
      const final = JSON.parse(world.readFixtureText(path) ?? "{}") as Record<string, unknown>
      assert.deepStrictEqual(keys.filter((k) => final[k] !== true), [], `seed ${seed}`)
    }).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provideMerge(layerMemory({ jitter: { seed, maxYields } }))))), { fastCheck: { numRuns: 25 } })

  it.effect("a failed state write (ENOSPC) fails typed and keeps the previous record", () =>
    Effect.gen(function*() {
      const world = yield* MemoryDriver
      const tiers = yield* openTiers(ctx)
      yield* tiers.state.write("ledger.json", { rows: 1 })
      world.injectFault({ op: "writeFileAtomic", path: /ledger/, errno: "ENOSPC" })
      const e = yield* fail(tiers.state.write("ledger.json", { rows: 2 }))
      assert.instanceOf(e, FileSystemError)
      assert.deepStrictEqual(yield* tiers.state.read("ledger.json"), { rows: 1 })
      assert.strictEqual(world.readFixtureText("/data/notes/state/ledger.json"), "{\"rows\":1}\n")
    }).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provideMerge(layerMemory())))))

  it.effect("concurrent ensures of one key all return a build result that is what the file holds", () =>
    Effect.gen(function*() {
      const world = yield* MemoryDriver
      const tiers = yield* openTiers(ctx)
      const results = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, i) => i),
        (i) => tiers.cache.ensure("shared", Effect.succeed(`build ${i}`)),
        { concurrency: "unbounded" }
      )
      const onDisk = world.readFixtureText("/data/notes/cache/shared")
      assert.isDefined(onDisk)
      assert.include(results.map(text), onDisk)
      for (const r of results) assert.match(text(r), /^build \d$/)
    }).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provideMerge(layerMemory())))))

  it.effect.prop("concurrent ensures, clears and corruption, unevenly scheduled: every ensure answers its build", [
    fc.array(
      fc.oneof(
        fc.record({ op: fc.constant("ensure" as const), key: fc.constantFrom("a", "b") }),
        fc.record({ op: fc.constant("corrupt" as const), key: fc.constantFrom("a", "b") }),
        fc.record({ op: fc.constant("clear" as const) })
      ),
      { minLength: 2, maxLength: 10 }
    ),
    fc.record({ seed: fc.integer(), maxYields: fc.integer({ min: 1, max: 4 }) })
  ], ([ops, jitter]) =>
    Effect.gen(function*() {
      const world = yield* MemoryDriver
      const tiers = yield* openTiers(ctx)
      const valid = (b: Uint8Array) => text(b).startsWith("content of ")
      yield* tiers.state.write("precious.json", "keep")
      yield* Effect.forEach(ops, (step) => {
        if (step.op === "ensure") {
          return Effect.map(tiers.cache.ensure(step.key, Effect.succeed(`content of ${step.key}`), { validate: valid }), (got) =>
            assert.strictEqual(text(got), `content of ${step.key}`))
        }
        if (step.op === "corrupt") return world.writeFixture(`/data/notes/cache/${step.key}`, "bit rot").pipe(Effect.ignore)
        return tiers.cache.clear()
      }, { concurrency: "unbounded", discard: true })
      for (const key of ["a", "b"]) {
        assert.strictEqual(text(yield* tiers.cache.ensure(key, Effect.succeed(`content of ${key}`), { validate: valid })), `content of ${key}`)
      }
      assert.deepStrictEqual(yield* tiers.state.read("precious.json"), "keep")
    }).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provideMerge(layerMemory({ jitter }))))), { fastCheck: { numRuns: 100 } })

  it.effect.prop("any interleaving of ensure, clear and external deletion keeps every key answering its build", [
    fc.array(
      fc.oneof(
        fc.record({ op: fc.constant("ensure" as const), key: fc.constantFrom("a", "b", "c") }),
        fc.record({ op: fc.constant("corrupt" as const), key: fc.constantFrom("a", "b", "c") }),
        fc.record({ op: fc.constantFrom("clear" as const, "rm-rf" as const) })
      ),
      { maxLength: 25 }
    )
  ], ([ops]) =>
    Effect.gen(function*() {
      const world = yield* MemoryDriver
      const fsPort = yield* FileSystem
      const tiers = yield* openTiers(ctx)
      const valid = (b: Uint8Array) => text(b).startsWith("content of ")
      yield* tiers.state.write("precious.json", "keep")
      for (const step of ops) {
        if (step.op === "ensure") {
          const got = yield* tiers.cache.ensure(step.key, Effect.succeed(`content of ${step.key}`), { validate: valid })
          assert.strictEqual(text(got), `content of ${step.key}`)
          assert.strictEqual(world.readFixtureText(`/data/notes/cache/${step.key}`), `content of ${step.key}`)
        } else if (step.op === "corrupt") {
          yield* world.writeFixture(`/data/notes/cache/${step.key}`, "bit rot")
        } else if (step.op === "clear") {
          yield* tiers.cache.clear()
          assert.isUndefined(world.tree("/data/notes")["/data/notes/cache"])
        } else {
          yield* fsPort.removeTree("/data/notes/cache", { maxEntries: 1000, maxDepth: 10 })
        }
      }
      // Nothing the cache did ever touched state/.
      assert.deepStrictEqual(yield* tiers.state.read("precious.json"), "keep")
    }).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provideMerge(layerMemory())))), { fastCheck: { numRuns: 30 } })
})
