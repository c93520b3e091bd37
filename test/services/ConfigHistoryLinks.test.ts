/**
 * ConfigHistory rollback never writes or removes through a link (real git, real symlinks): every directory
 * from the managed root (agent dir, web data root) down to a file's parent must be a real directory; a path
 * with a symlink or a file on its way is left alone and reported in `skipped` and as a `ConfigPathSkipped` warning.
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, HashMap, Logger } from "effect"
import { type StorageWarning, warningFromLog } from "../../src/domain/Warnings.js"
import { setup } from "./configHistorySupport.js"

const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n"

/** Run `body` with a logger that collects our typed warnings. */
const collectingWarnings = <A, E, R>(body: (warnings: Array<StorageWarning>) => Effect.Effect<A, E, R>) => {
  const warnings: Array<StorageWarning> = []
  const logger = Logger.make(({ annotations, message }) => {
    const w = warningFromLog(String(Array.isArray(message) ? message.join(" ") : message), new Map(HashMap.toEntries(annotations)))
    if (w !== undefined) warnings.push(w)
  })
  return body(warnings).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
}

/** A directory outside both roots, with files: after the rollback its tree, bytes and mtimes must be as they were. */
const outsideDir = (root: string, name: string, files: Record<string, string>) => {
  const dir = NodePath.join(root, name)
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(NodePath.dirname(NodePath.join(dir, rel)), { recursive: true })
    fs.writeFileSync(NodePath.join(dir, rel), content)
  }
  const picture = () =>
    fs.readdirSync(dir, { recursive: true }).map(String).sort().map((rel) => {
      const p = NodePath.join(dir, rel)
      const st = fs.lstatSync(p)
      return { rel, mtimeMs: st.mtimeMs, ino: st.ino, bytes: st.isFile() ? fs.readFileSync(p).toString("base64") : null }
    })
  const before = picture()
  return { dir, unchanged: () => assert.deepStrictEqual(picture(), before, "nothing outside the roots changed") }
}

describe("ConfigHistory rollback and links (real git)", () => {
  it.scopedLive("a symlinked config subdirectory: the outside file is untouched, the path reported; the rest is restored", () =>
    collectingWarnings((warnings) =>
      Effect.gen(function*() {
        const { root, history, write, read } = yield* setup({ web: true })
        write("web/notes/config/sub/x.json", json({ v: "history" }))
        write("web/notes/config/settings.json", json({ font: 12 }))
        const first = yield* history.snapshot({ message: "first" })
        // Now config/sub is a link to a directory outside both roots, holding its own x.json.
        const outside = outsideDir(root, "outside", { "x.json": json({ v: "outside" }) })
        fs.rmSync(NodePath.join(root, "web/notes/config/sub"), { recursive: true })
        fs.symlinkSync(outside.dir, NodePath.join(root, "web/notes/config/sub"))
        write("web/notes/config/settings.json", json({ font: 20 }))

        const back = yield* history.rollback(first.revision!)
        outside.unchanged()
        assert.isTrue(fs.lstatSync(NodePath.join(root, "web/notes/config/sub")).isSymbolicLink(), "the link itself is left too")
        assert.deepStrictEqual(back.restored, ["notes/config/settings.json"])
        assert.strictEqual(read("web/notes/config/settings.json"), json({ font: 12 }))
        assert.deepStrictEqual(back.skipped, [{ _tag: "PathBlocked", path: "notes/config/sub/x.json", reason: "notes/config/sub is a symlink on the way (never written through)", message: "notes/config/sub/x.json: notes/config/sub is a symlink on the way (never written through)" }])
        assert.deepStrictEqual(
          warnings.filter((w) => w._tag === "ConfigPathSkipped").map((w) => w._tag === "ConfigPathSkipped" && [w.path, w.reason]),
          [["notes/config/sub/x.json", "notes/config/sub is a symlink on the way (never written through)"]]
        )
      })
    ))

  it.scopedLive("a symlinked <extId> directory, and a file where a directory was: both skipped, nothing written outside", () =>
    collectingWarnings((warnings) =>
      Effect.gen(function*() {
        const { root, history, write, read, exists } = yield* setup({ web: true })
        write("web/notes/config/settings.json", json({ font: 12 }))
        write("web/todo/config/deep/er/list.json", json({ items: [] }))
        write("agent/profiles/directories/p1/settings.json", json({ model: "a" }))
        const first = yield* history.snapshot({ message: "first" })
        const outside = outsideDir(root, "elsewhere", { "config/settings.json": json({ font: "outside" }) })
        fs.rmSync(NodePath.join(root, "web/notes"), { recursive: true })
        fs.symlinkSync(outside.dir, NodePath.join(root, "web/notes"))
        // A whole missing subtree is created again, one level at a time; a file where a directory was is not gone through.
        fs.rmSync(NodePath.join(root, "web/todo/config/deep"), { recursive: true })
        fs.rmSync(NodePath.join(root, "agent/profiles"), { recursive: true })
        write("agent/profiles", "a file now\n")

        const back = yield* history.rollback(first.revision!)
        outside.unchanged()
        assert.isTrue(exists("web/todo/config/deep/er/list.json"), "missing directories are created")
        assert.deepStrictEqual([...back.skipped].sort((a, b) => a.path.localeCompare(b.path)), [
          { _tag: "PathBlocked", path: "notes/config/settings.json", reason: "notes is a symlink on the way (never written through)", message: "notes/config/settings.json: notes is a symlink on the way (never written through)" },
          { _tag: "PathBlocked", path: "profiles/directories/p1/settings.json", reason: "profiles is a regular file on the way (never written through)", message: "profiles/directories/p1/settings.json: profiles is a regular file on the way (never written through)" }
        ])
        assert.deepStrictEqual(back.restored, ["todo/config/deep/er/list.json"])
        assert.strictEqual(read("agent/profiles"), "a file now\n")
        assert.sameMembers(warnings.filter((w) => w._tag === "ConfigPathSkipped").map((w) => w._tag === "ConfigPathSkipped" ? w.path : ""), [
          "notes/config/settings.json",
          "profiles/directories/p1/settings.json"
        ])
      })
    ))

  it.scopedLive("a removal never goes through a link: an overlay reached through a symlinked profiles/ is left and reported", () =>
    Effect.gen(function*() {
      const { root, history, write } = yield* setup()
      write("agent/settings.json", json({ theme: "dark" }))
      const first = yield* history.snapshot({ message: "first" })
      // profiles/ is a link outside the agent dir; the scan finds an overlay through it, the old revision has none.
      const outside = outsideDir(root, "dotfiles", { "directories/p1/settings.json": json({ model: "outside" }) })
      fs.symlinkSync(outside.dir, NodePath.join(root, "agent/profiles"))
      const back = yield* history.rollback(first.revision!)
      outside.unchanged()
      assert.deepStrictEqual(back.removed, [])
      assert.deepStrictEqual(back.skipped, [
        { _tag: "PathBlocked", path: "profiles/directories/p1/settings.json", reason: "profiles is a symlink on the way (never written through)", message: "profiles/directories/p1/settings.json: profiles is a symlink on the way (never written through)" }
      ])
    }))

  it.scopedLive("change(): a failed apply's restore skips a path behind a link the same way", () =>
    Effect.gen(function*() {
      const { root, history, write, read } = yield* setup({ web: true })
      write("web/notes/config/sub/x.json", json({ v: "good" }))
      write("agent/settings.json", json({ theme: "dark" }))
      yield* history.snapshot({ message: "good" })
      const outside = outsideDir(root, "outside", { "x.json": json({ v: "outside" }) })
      const failed = yield* Effect.flip(history.change("swap in a link", Effect.gen(function*() {
        fs.rmSync(NodePath.join(root, "web/notes/config/sub"), { recursive: true })
        fs.symlinkSync(outside.dir, NodePath.join(root, "web/notes/config/sub"))
        write("agent/settings.json", json({ theme: "broken" }))
        return yield* Effect.fail("apply failed" as const)
      })))
      assert.strictEqual(failed, "apply failed")
      outside.unchanged()
      assert.strictEqual(read("agent/settings.json"), json({ theme: "dark" }))
    }))
})
