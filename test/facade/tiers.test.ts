/**
 * The Promise facade of the tiers on real disk: physical locations, typed rejections (never FiberFailure).
 */
import { afterEach, assert, beforeEach, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import {
  ConfigRedLine,
  ConfigUnreadable,
  DataDirRemoved,
  DecodeFailure,
  FileSystemError,
  InvalidArgument,
  InvalidSegment,
  StateMissing,
  StateUnreadable
} from "../../src/domain/Errors.js"
import { chooseTier, extensionContext, openTiers, resolveStateDir } from "../../src/facade/tiers.js"
import { openAgentStorage } from "../../src/promise.js"

let root = ""
beforeEach(() => {
  root = fs.mkdtempSync(NodePath.join(os.tmpdir(), "tiers-facade-"))
})
afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true })
})

const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection")
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe("extensionContext (facade)", () => {
  it("reads PI_WEB_DATA_DIR from process.env and does no I/O", () => {
    const saved = process.env.PI_WEB_DATA_DIR
    process.env.PI_WEB_DATA_DIR = NodePath.join(root, "never-created")
    try {
      const ctx = extensionContext("notes")
      assert.strictEqual(ctx.configDir, NodePath.join(root, "never-created", "notes", "config"))
      assert.strictEqual(ctx.stateDir, NodePath.join(root, "never-created", "notes", "state"))
      assert.strictEqual(ctx.cacheDir, NodePath.join(root, "never-created", "notes", "cache"))
      assert.isFalse(fs.existsSync(NodePath.join(root, "never-created")))
    } finally {
      if (saved === undefined) delete process.env.PI_WEB_DATA_DIR
      else process.env.PI_WEB_DATA_DIR = saved
    }
  })

  it("defaults to ~/.pi/web/data, and the dev instance to ~/.pi/web-dev/data", () => {
    const saved = process.env.PI_WEB_DATA_DIR
    delete process.env.PI_WEB_DATA_DIR
    try {
      assert.strictEqual(extensionContext("x").cacheDir, NodePath.join(os.homedir(), ".pi", "web", "data", "x", "cache"))
      assert.strictEqual(
        extensionContext("x", { instance: "dev" }).cacheDir,
        NodePath.join(os.homedir(), ".pi", "web-dev", "data", "x", "cache")
      )
    } finally {
      if (saved !== undefined) process.env.PI_WEB_DATA_DIR = saved
    }
  })

  it("throws DataDirRemoved on ctx.dataDir and InvalidSegment for a bad extId", () => {
    const ctx = extensionContext("notes", { dataRoot: root })
    assert.throws(() => (ctx as unknown as { dataDir: string }).dataDir, DataDirRemoved)
    assert.deepStrictEqual(Object.keys({ ...ctx }), ["extId", "configDir", "stateDir", "cacheDir"])
    assert.throws(() => extensionContext("../up", { dataRoot: root }), InvalidSegment)
  })

  it("re-exports the pure helpers", () => {
    assert.strictEqual(resolveStateDir({ configDir: "/a/config" }), "/a/config/state")
    assert.strictEqual(chooseTier({ rebuildable: false, purpose: "audit-log" }).tier, "state")
  })
})

describe("openTiers (facade, Node layer)", () => {
  it("an extension using all three tiers lands every byte in its tier", async () => {
    const ctx = extensionContext("notes", { dataRoot: root })
    const tiers = await openTiers(ctx)
    try {
      const ext = NodePath.join(root, "notes")
      await tiers.config.set("model", "sonnet")
      assert.strictEqual(await tiers.config.get<string>("model"), "sonnet")
      assert.deepStrictEqual(JSON.parse(fs.readFileSync(NodePath.join(ext, "config", "settings.json"), "utf8")), {
        model: "sonnet"
      })
      await tiers.config.writeFile("hot-words.txt", "pi\n")
      assert.strictEqual(fs.readFileSync(NodePath.join(ext, "config", "hot-words.txt"), "utf8"), "pi\n")

      await tiers.state.write("history.json", [{ q: "hi" }])
      assert.strictEqual(fs.readFileSync(NodePath.join(ext, "state", "history.json"), "utf8"), "[{\"q\":\"hi\"}]\n")
      assert.deepStrictEqual(await tiers.state.read<Array<{ q: string }>>("history.json"), [{ q: "hi" }])

      let builds = 0
      const build = async () => {
        builds++
        return `index v${builds}`
      }
      assert.strictEqual(text(await tiers.cache.ensure("index.txt", build)), "index v1")
      assert.strictEqual(text(await tiers.cache.ensure("index.txt", build)), "index v1")
      assert.strictEqual(fs.readFileSync(NodePath.join(ext, "cache", "index.txt"), "utf8"), "index v1")

      // rm -rf cache/: the extension carries on, and nothing in the other tiers moved.
      fs.rmSync(NodePath.join(ext, "cache"), { recursive: true, force: true })
      assert.strictEqual(text(await tiers.cache.ensure("index.txt", build)), "index v2")
      assert.strictEqual(fs.readFileSync(NodePath.join(ext, "cache", "index.txt"), "utf8"), "index v2")
      assert.strictEqual(builds, 2)

      // validate-fail triggers a rebuild
      fs.writeFileSync(NodePath.join(ext, "cache", "index.txt"), "garbage")
      const rebuilt = await tiers.cache.ensure("index.txt", build, { validate: (b) => text(b).startsWith("index") })
      assert.strictEqual(text(rebuilt), "index v3")
      assert.strictEqual(fs.readFileSync(NodePath.join(ext, "cache", "index.txt"), "utf8"), "index v3")

      await tiers.cache.clear()
      assert.isFalse(fs.existsSync(NodePath.join(ext, "cache")))
      assert.deepStrictEqual(fs.readdirSync(ext).sort(), ["config", "state"])
    } finally {
      await tiers.close()
    }
  })

  it("rejects with the typed errors themselves", async () => {
    const ctx = extensionContext("notes", { dataRoot: root })
    const tiers = await openTiers(ctx, { configBudgetBytes: 64 })
    try {
      const missing = await rejection(tiers.state.read("nope.json"))
      assert.instanceOf(missing, StateMissing)
      assert.strictEqual((missing as StateMissing)._tag, "StateMissing")

      fs.mkdirSync(ctx.stateDir, { recursive: true })
      fs.writeFileSync(NodePath.join(ctx.stateDir, "bad.json"), "{")
      assert.instanceOf(await rejection(tiers.state.read("bad.json")), StateUnreadable)

      const db = await rejection(tiers.config.writeFile("usage.sqlite", "x"))
      assert.instanceOf(db, ConfigRedLine)
      assert.strictEqual((db as ConfigRedLine).rule, "database")
      const log = await rejection(tiers.config.writeFile("debug.log", "x"))
      assert.strictEqual((log as ConfigRedLine).rule, "log")
      const big = await rejection(tiers.config.writeFile("notes.txt", "x".repeat(65)))
      assert.strictEqual((big as ConfigRedLine).rule, "size-budget")
      // One mistake, one error: a value that is not JSON is InvalidArgument in config and state alike.
      const invalid = await rejection(tiers.config.set("k", new Date()))
      assert.instanceOf(invalid, InvalidArgument)
      assert.strictEqual((invalid as InvalidArgument).field, "value")
      assert.instanceOf(await rejection(tiers.state.write("k.json", new Date())), InvalidArgument)
      const unset = await rejection(tiers.config.set("k", undefined))
      assert.instanceOf(unset, InvalidArgument)
      assert.include((unset as InvalidArgument).message, "config.delete(key)")
      assert.isFalse(fs.existsSync(ctx.configDir))

      assert.instanceOf(await rejection(tiers.cache.ensure("../x", async () => "x")), InvalidArgument)
      const own = new Error("network down")
      assert.strictEqual(await rejection(tiers.cache.ensure("k", () => Promise.reject(own))), own)
      assert.strictEqual(await rejection(tiers.cache.ensure("k", () => {
        throw own
      })), own)
      assert.isFalse(fs.existsSync(NodePath.join(ctx.cacheDir, "k")))
    } finally {
      await tiers.close()
    }
  })

  it("a read for every write: config.delete and config.readFile; decode functions type what is read", async () => {
    const ctx = extensionContext("notes", { dataRoot: root })
    const tiers = await openTiers(ctx)
    try {
      await tiers.config.set("model", "sonnet")
      assert.isTrue(await tiers.config.delete("model"))
      assert.isFalse(await tiers.config.delete("model"))
      assert.isUndefined(await tiers.config.get("model"))
      assert.deepStrictEqual(JSON.parse(fs.readFileSync(NodePath.join(ctx.configDir, "settings.json"), "utf8")), {})

      assert.isUndefined(await tiers.config.readFile("words.txt"))
      await tiers.config.writeFile("words.txt", "pi\n")
      assert.strictEqual(text((await tiers.config.readFile("words.txt"))!), "pi\n")

      // A decode function (here a hand-written one; a zod `parse` or Effect's `Schema.decodeUnknownSync` fit).
      const asCount = (json: unknown): { count: number } => {
        if (typeof json !== "object" || json === null || typeof (json as { count?: unknown }).count !== "number") {
          throw new TypeError("expected { count: number }")
        }
        return json as { count: number }
      }
      await tiers.state.write("tally.json", { count: 3 })
      const tally: { count: number } = await tiers.state.read("tally.json", asCount)
      assert.strictEqual(tally.count, 3)
      await tiers.state.write("tally.json", { count: "three" })
      const refused = await rejection(tiers.state.read("tally.json", asCount))
      assert.instanceOf(refused, StateUnreadable)
      const cause = (refused as StateUnreadable).cause
      assert.instanceOf(cause, DecodeFailure)
      assert.strictEqual((cause as DecodeFailure).stage, "schema")
      assert.include((refused as StateUnreadable).message, "expected { count: number }")

      await tiers.config.set("tally", { count: "x" })
      const badKey = await rejection(tiers.config.get("tally", asCount))
      assert.instanceOf(badKey, ConfigUnreadable)
      assert.strictEqual((badKey as ConfigUnreadable).key, "tally")
      await tiers.config.set("tally", { count: 1 })
      assert.deepStrictEqual(await tiers.config.get("tally", asCount), { count: 1 })
      assert.isUndefined(await tiers.config.get("unset", asCount), "an unset key is undefined, never decoded")

      // An I/O cause stays an I/O cause: a directory where the record belongs.
      fs.mkdirSync(NodePath.join(ctx.stateDir, "dir.json"))
      const io = await rejection(tiers.state.read("dir.json"))
      assert.instanceOf((io as StateUnreadable).cause, FileSystemError)
    } finally {
      await tiers.close()
    }
  })

  it("a name of up to 237 UTF-8 bytes lands in every tier; one byte more is InvalidArgument before anything is written (its temp file must fit 255)", async () => {
    const tiers = await openTiers(extensionContext("names", { dataRoot: root }))
    try {
      const ext = NodePath.join(root, "names")
      const longest = "a".repeat(237)
      await tiers.state.write(longest, 1)
      assert.strictEqual(await tiers.state.read<number>(longest), 1)
      assert.strictEqual(text(await tiers.cache.ensure(longest, async () => "built") as Uint8Array), "built")
      await tiers.config.writeFile(longest, "x")
      assert.strictEqual(fs.readFileSync(NodePath.join(ext, "config", longest), "utf8"), "x")
      for (const over of ["a".repeat(238), "中".repeat(80)]) {
        const before = fs.readdirSync(ext, { recursive: true }).map(String).sort()
        for (const attempt of [tiers.state.write(over, 1), tiers.cache.ensure(over, async () => "built"), tiers.config.writeFile(over, "x")]) {
          const e = await rejection(attempt)
          assert.instanceOf(e, InvalidArgument)
          assert.match((e as InvalidArgument).message, /at most 237 bytes in UTF-8/)
        }
        assert.deepStrictEqual(fs.readdirSync(ext, { recursive: true }).map(String).sort(), before)
      }
    } finally {
      await tiers.close()
    }
  })

  it("what is not a tier value is InvalidArgument, never a bare error or a wrong file: a build answering neither string nor bytes, data of another kind, a value nested deeper than JSON_MAX_DEPTH", async () => {
    const tiers = await openTiers(extensionContext("kinds", { dataRoot: root }))
    try {
      const ext = NodePath.join(root, "kinds")
      for (const answer of [42, undefined, { a: 1 }, null]) {
        const e = await rejection(tiers.cache.ensure("k", async () => answer as unknown as string))
        assert.instanceOf(e, InvalidArgument)
        assert.strictEqual((e as InvalidArgument).field, "build")
        assert.match((e as InvalidArgument).message, /must be a string or a Uint8Array/)
        const w = await rejection(tiers.config.writeFile("f.txt", answer as unknown as string))
        assert.instanceOf(w, InvalidArgument)
        assert.strictEqual((w as InvalidArgument).field, "data")
      }
      assert.isFalse(fs.existsSync(NodePath.join(ext, "cache", "k")), "no empty cache entry")
      assert.isFalse(fs.existsSync(NodePath.join(ext, "config", "f.txt")))
      let deep: unknown = 1
      for (let i = 0; i < 20_000; i++) deep = [deep]
      for (const attempt of [tiers.config.set("d", deep), tiers.state.write("d.json", deep)]) {
        const e = await rejection(attempt)
        assert.instanceOf(e, InvalidArgument)
        assert.match((e as InvalidArgument).message, /nests deeper than 1000 arrays and objects/)
      }
      let fine: unknown = 1
      for (let i = 0; i < 999; i++) fine = [fine]
      await tiers.state.write("fine.json", fine)
      assert.deepStrictEqual(await tiers.state.read("fine.json"), fine)
    } finally {
      await tiers.close()
    }
  })

  it("rejects bad contexts, and calls after close()", async () => {
    assert.instanceOf(await rejection(openTiers({ configDir: "relative", cacheDir: "/c" })), InvalidArgument)
    const tiers = await openTiers(extensionContext("notes", { dataRoot: root }))
    await tiers.close()
    await tiers.close()
    const after = await rejection(tiers.config.get("k"))
    assert.instanceOf(after, InvalidArgument)
    assert.strictEqual((after as InvalidArgument).field, "tiers")
  })
})

describe("an agent extension's view (storage.getStorage) carries the same tiers (facade, Node layer)", () => {
  it("config, state and cache land under config|state|cache/extensions/<ns>/, with the web tiers' rules and typed rejections", async () => {
    const agentDir = NodePath.join(root, "agent")
    const storage = await openAgentStorage({ agentDir, migrate: false })
    const notes = storage.getStorage("notes")
    assert.isFalse(fs.existsSync(agentDir), "getStorage does no I/O")
    assert.deepStrictEqual(
      [notes.configDir, notes.config.dir, notes.state.dir, notes.cache.dir],
      [NodePath.join(agentDir, "config", "extensions", "notes"), notes.configDir, notes.stateDir, notes.cacheDir]
    )
    try {
      await notes.config.set("font", "mono")
      assert.strictEqual(await notes.config.get<string>("font"), "mono")
      assert.deepStrictEqual(JSON.parse(fs.readFileSync(NodePath.join(agentDir, "config", "extensions", "notes", "settings.json"), "utf8")), { font: "mono" })
      // A read for every write, decode functions on reads, as openTiers' tiers.
      await notes.config.writeFile("theme.css", "body {}")
      assert.strictEqual(text((await notes.config.readFile("theme.css"))!), "body {}")
      assert.isTrue(await notes.config.delete("font"))
      assert.isUndefined(await notes.config.get("font"))
      await notes.config.set("font", "mono")
      const decoded = await rejection(notes.config.get("font", (json) => {
        if (typeof json !== "number") throw new Error("a size, please")
        return json
      }))
      assert.strictEqual((decoded as { _tag: string })._tag, "ConfigUnreadable")
      const redLine = await rejection(notes.config.writeFile("debug.log", "x"))
      assert.instanceOf(redLine, ConfigRedLine)
      assert.strictEqual((redLine as ConfigRedLine).rule, "log")

      assert.instanceOf(await rejection(notes.state.read("notes.json")), StateMissing)
      await notes.state.write("notes.json", { notes: ["first"] })
      assert.deepStrictEqual(await notes.state.read("notes.json"), { notes: ["first"] })
      assert.strictEqual(fs.readFileSync(NodePath.join(agentDir, "state", "extensions", "notes", "notes.json"), "utf8"), "{\"notes\":[\"first\"]}\n")

      const built = await notes.cache.ensure("index", async () => "built")
      assert.strictEqual(text(built), "built")
      assert.strictEqual(fs.readFileSync(NodePath.join(agentDir, "cache", "extensions", "notes", "index"), "utf8"), "built")
      await notes.cache.clear()
      assert.isFalse(fs.existsSync(NodePath.join(agentDir, "cache", "extensions", "notes")))
    } finally {
      await storage.close()
    }
    assert.strictEqual((await rejection(notes.state.read("notes.json")) as { _tag: string })._tag, "StorageClosed")
  })
})
