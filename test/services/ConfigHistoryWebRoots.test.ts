/**
 * Two web data roots, one agent dir, one history (a dev instance beside prod), with real git: each root's
 * extension config is kept apart (the first root recorded under `web/`, the other under a mirror of its own),
 * so a snapshot of one never records the other's files as deleted, a rollback of one never writes the other's
 * files into it, and a rollback of the second to before it was first snapshotted is refused. The record of
 * which root `web/` holds is read back as hostile input.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { renderStatus } from "../../src/cli/commands/config.js"
import { painter } from "../../src/cli/format.js"
import { WEB_ROOT_RECORD, webMirrorOf } from "../../src/domain/ConfigHistory.js"
import { ConfigHistory } from "../../src/services/ConfigHistory.js"
import { historyLayer, rawGit, tempRoot } from "./configHistorySupport.js"

const json = (v: unknown) => JSON.stringify(v) + "\n"

const twoRoots = Effect.gen(function*() {
  const root = yield* tempRoot
  const agent = NodePath.join(root, "agent")
  const prod = NodePath.join(root, "web-prod")
  const dev = NodePath.join(root, "web-dev")
  fs.mkdirSync(agent, { recursive: true })
  const historyOf = (webDataRoot: string) => Effect.provide(ConfigHistory, historyLayer(agent, { webDataRoot }))
  const write = (at: string, rel: string, content: string) => {
    fs.mkdirSync(NodePath.dirname(NodePath.join(at, rel)), { recursive: true })
    fs.writeFileSync(NodePath.join(at, rel), content)
  }
  const read = (at: string, rel: string) => fs.readFileSync(NodePath.join(at, rel), "utf8")
  return { agent, prod, dev, prodHistory: yield* historyOf(prod), devHistory: yield* historyOf(dev), historyOf, write, read }
})

const SETTINGS = "notes/config/settings.json"

describe("ConfigHistory: two web data roots share one history (real git)", () => {
  it.scopedLive("each root's files are kept apart: no snapshot deletes the other's, no rollback crosses roots", () =>
    Effect.gen(function*() {
      const { prod, dev, prodHistory, devHistory, write, read } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      write(dev, SETTINGS, json({ font: 20 }))
      const prod1 = yield* prodHistory.snapshot({ message: "prod 1" })
      assert.deepStrictEqual(prod1.changed, [SETTINGS])
      const dev1 = yield* devHistory.snapshot({ message: "dev 1" })
      // Dev's own file, and nothing of prod's recorded as deleted.
      assert.deepStrictEqual(dev1.changed, [SETTINGS])
      const tree = rawGit(prodHistory.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim().split("\n").sort()
      assert.deepStrictEqual(tree, [`${webMirrorOf(dev, prod)}/${SETTINGS}`, `web/${SETTINGS}`])
      assert.match(webMirrorOf(dev, prod), /^web-[0-9a-f]{12}$/)
      // Each is unchanged as seen from the other's side, and each log is its own.
      assert.isNull((yield* prodHistory.snapshot()).revision)
      assert.isNull((yield* devHistory.snapshot()).revision)
      assert.deepStrictEqual((yield* prodHistory.log()).map((e) => e.message), ["prod 1"])
      assert.deepStrictEqual((yield* devHistory.log()).map((e) => e.message), ["dev 1"])

      write(prod, SETTINGS, json({ font: 13 }))
      yield* prodHistory.snapshot({ message: "prod 2" })
      write(dev, SETTINGS, json({ font: 21 }))
      const dev2 = yield* devHistory.snapshot({ message: "dev 2" })

      // Prod back to its first revision: its own file as it was then; dev's live file untouched.
      const back = yield* prodHistory.rollback(prod1.revision!)
      assert.deepStrictEqual(back.restored, [SETTINGS])
      assert.strictEqual(read(prod, SETTINGS), json({ font: 12 }))
      assert.strictEqual(read(dev, SETTINGS), json({ font: 21 }))
      // Dev back to its first revision, though prod's commits came between.
      yield* devHistory.rollback(dev1.revision!)
      assert.strictEqual(read(dev, SETTINGS), json({ font: 20 }))
      assert.strictEqual(read(prod, SETTINGS), json({ font: 12 }))
      assert.isString(dev2.revision)
    }))

  it.scopedLive("the second root cannot be rolled back to before its first snapshot: refused, nothing written", () =>
    Effect.gen(function*() {
      const { prod, dev, prodHistory, devHistory, write, read } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      const prod1 = yield* prodHistory.snapshot({ message: "prod 1" })
      write(dev, SETTINGS, json({ font: 20 }))
      yield* devHistory.snapshot({ message: "dev 1" })
      const head = rawGit(devHistory.dir, ["rev-parse", "HEAD"]).trim()
      const refused = yield* Effect.flip(devHistory.rollback(prod1.revision!))
      assert.strictEqual(refused._tag, "InvalidArgument")
      assert.include(refused.message, `older than the first snapshot of the web data root ${dev}`)
      assert.strictEqual(read(dev, SETTINGS), json({ font: 20 }))
      assert.strictEqual(rawGit(devHistory.dir, ["rev-parse", "HEAD"]).trim(), head, "no revision was made")
    }))

  it.scopedLive("the record of which root web/ holds, read back as hostile input: damage is refused, nothing written", () =>
    Effect.gen(function*() {
      const { prod, dev, prodHistory, historyOf, write, read } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      yield* prodHistory.snapshot()
      const record = NodePath.join(prodHistory.dir, ".git", WEB_ROOT_RECORD)
      assert.deepStrictEqual(JSON.parse(fs.readFileSync(record, "utf8")), { version: 1, webRoot: prod })
      const head = rawGit(prodHistory.dir, ["rev-parse", "HEAD"]).trim()
      write(dev, SETTINGS, json({ font: 20 }))
      write(prod, SETTINGS, json({ font: 13 }))
      for (const hostile of ["", "{", "[]", json({ version: 2, webRoot: prod }), json({ version: 1, webRoot: "relative/path" }), "x".repeat(70_000)]) {
        fs.writeFileSync(record, hostile)
        for (const history of [yield* historyOf(dev), yield* historyOf(prod)]) {
          const refused = yield* Effect.flip(history.snapshot())
          assert.strictEqual(refused._tag, "ConfigHistoryCorrupt", JSON.stringify(hostile.slice(0, 20)))
          assert.include(refused.message, WEB_ROOT_RECORD)
          assert.strictEqual((yield* Effect.flip(history.status()))._tag, "ConfigHistoryCorrupt")
        }
        assert.strictEqual(rawGit(prodHistory.dir, ["rev-parse", "HEAD"]).trim(), head, "nothing was committed")
        assert.strictEqual(fs.readFileSync(record, "utf8"), hostile, "the record is left as it is")
      }
      assert.strictEqual(read(prod, SETTINGS), json({ font: 13 }))
      // Written as the error says, naming the root web/ holds: back in service.
      assert.include((yield* Effect.flip((yield* historyOf(prod)).snapshot())).message, `"webRoot":"<the web data root whose extension config web/ holds>"`)
      fs.writeFileSync(record, JSON.stringify({ version: 1, webRoot: prod }))
      assert.isString((yield* (yield* historyOf(prod)).snapshot()).revision)
    }))

  it.scopedLive("a root never snapshotted, with live config: a rollback is refused before anything is recorded or removed", () =>
    Effect.gen(function*() {
      const { prod, dev, prodHistory, devHistory, write, read } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      const prod1 = yield* prodHistory.snapshot({ message: "prod 1" })
      write(prod, SETTINGS, json({ font: 13 }))
      yield* prodHistory.snapshot({ message: "prod 2" })
      write(dev, SETTINGS, json({ font: 20 }))
      write(dev, "notes/config/other.txt", "dev only\n")
      const head = rawGit(devHistory.dir, ["rev-parse", "HEAD"]).trim()
      const refused = yield* Effect.flip(devHistory.rollback(prod1.revision!))
      assert.strictEqual(refused._tag, "InvalidArgument")
      assert.include(refused.message, `the web data root ${dev} has no snapshot yet`)
      assert.strictEqual(read(dev, SETTINGS), json({ font: 20 }))
      assert.strictEqual(read(dev, "notes/config/other.txt"), "dev only\n")
      assert.strictEqual(rawGit(devHistory.dir, ["rev-parse", "HEAD"]).trim(), head, "no revision was made")
    }))

  it.scopedLive("a history without the record whose revisions used web/ (made before it, or the record lost): refused until it is written", () =>
    Effect.gen(function*() {
      const { prod, dev, prodHistory, historyOf, write, read } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      const prod1 = yield* prodHistory.snapshot({ message: "prod 1" })
      const record = NodePath.join(prodHistory.dir, ".git", WEB_ROOT_RECORD)
      fs.rmSync(record)
      write(dev, SETTINGS, json({ font: 20 }))
      const head = rawGit(prodHistory.dir, ["rev-parse", "HEAD"]).trim()
      for (const root of [dev, prod]) {
        const history = yield* historyOf(root)
        const ops: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>> = [
          history.snapshot(),
          history.status(),
          history.log(),
          history.rollback(prod1.revision!)
        ]
        for (const op of ops) {
          const refused = yield* Effect.flip(op)
          assert.strictEqual(refused._tag, "ConfigHistoryCorrupt")
          assert.include(refused.message, "does not say which web data root it came from")
          assert.include(refused.message, WEB_ROOT_RECORD)
        }
      }
      assert.strictEqual(rawGit(prodHistory.dir, ["rev-parse", "HEAD"]).trim(), head, "nothing was committed")
      assert.strictEqual(read(dev, SETTINGS), json({ font: 20 }))
      // Written as the refusal says: each root back in service, each with its own mirror.
      fs.writeFileSync(record, JSON.stringify({ version: 1, webRoot: prod }))
      const dev1 = yield* (yield* historyOf(dev)).snapshot({ message: "dev 1" })
      assert.deepStrictEqual(dev1.changed, [SETTINGS])
      const tree = rawGit(prodHistory.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim().split("\n").sort()
      assert.deepStrictEqual(tree, [`${webMirrorOf(dev, prod)}/${SETTINGS}`, `web/${SETTINGS}`])
    }))

  it.scopedLive("one root's interrupted change stands until that root settles it; another root's change waits for it", () =>
    Effect.gen(function*() {
      const { agent, prod, dev, prodHistory, devHistory, write } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      yield* prodHistory.snapshot({ message: "prod 1" })
      write(dev, SETTINGS, json({ font: 20 }))
      yield* devHistory.snapshot({ message: "dev 1" })
      // Prod's change, its process gone mid-way (a pid that is not running: the holder is dead).
      const lastGood = rawGit(prodHistory.dir, ["rev-parse", "HEAD"]).trim()
      const sentinel = NodePath.join(prodHistory.dir, ".pi-change.json")
      const bootId = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
      fs.writeFileSync(sentinel, JSON.stringify({ version: 1, message: "migrate prod", startedAt: Date.now(), lastGoodRevision: lastGood, host: os.hostname(), bootId, pid: 2 ** 22 + 17, webRoot: prod }))
      write(prod, SETTINGS, json({ font: "half" }))
      // Dev's snapshot leaves it; dev's change is refused while it stands.
      yield* devHistory.snapshot()
      assert.isTrue(fs.existsSync(sentinel))
      assert.strictEqual((yield* devHistory.status()).interrupted?.webRoot, prod)
      const refused = yield* Effect.flip(devHistory.change("dev edit", Effect.void))
      assert.strictEqual(refused._tag, "ConfigHistoryBusy")
      assert.include(refused.message, `--web-data-root ${prod}`)
      // Its words name the agent dir and prod's root.
      const words = renderStatus(painter(false), devHistory.dir, yield* devHistory.status(), agent).text
      assert.include(words, `pi-storage --agent-dir ${agent} --web-data-root ${prod} config rollback ${lastGood.slice(0, 12)}`)
      // Prod settles it.
      yield* prodHistory.rollback(lastGood)
      assert.isFalse(fs.existsSync(sentinel))
      assert.isNull((yield* devHistory.status()).interrupted)
    }))
})
