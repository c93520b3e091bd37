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

  it.scopedLive("a live diff of one root leaves its change out of the other's snapshots; its own snapshot then records it", () =>
    Effect.gen(function*() {
      const { prod, dev, agent, prodHistory, devHistory, write } = yield* twoRoots
      write(agent, "settings.json", json({ theme: "dark" }))
      write(prod, SETTINGS, json({ font: 12 }))
      write(dev, SETTINGS, json({ font: 20 }))
      yield* prodHistory.snapshot({ message: "prod 1" })
      const dev1 = yield* devHistory.snapshot({ message: "dev 1" })
      fs.rmSync(NodePath.join(dev, SETTINGS))
      // Dev's diff stages its deletion in the history's own index, to compare it.
      const seen = yield* devHistory.diff()
      assert.deepStrictEqual(seen.files, [SETTINGS])
      // Prod sees nothing of it, commits nothing of it, and its status is clean.
      assert.deepStrictEqual((yield* prodHistory.diff()).files, [])
      assert.isFalse((yield* prodHistory.status()).dirty)
      const prodNothing = yield* prodHistory.snapshot({ message: "prod, nothing changed" })
      assert.deepStrictEqual([prodNothing.revision, prodNothing.changed], [null, []])
      assert.strictEqual(rawGit(prodHistory.dir, ["rev-parse", "HEAD"]).trim(), dev1.revision)
      // A change of prod's own, with dev's still staged: prod's revision holds prod's file only.
      write(prod, SETTINGS, json({ font: 13 }))
      write(agent, "settings.json", json({ theme: "light" }))
      const prod2 = yield* prodHistory.snapshot({ message: "prod 2" })
      assert.deepStrictEqual([...prod2.changed].sort(), [SETTINGS, "settings.json"].sort())
      assert.deepStrictEqual(rawGit(prodHistory.dir, ["show", "--name-status", "--format=", "HEAD"]).trim().split("\n").sort(), ["M\tagent/settings.json", `M\tweb/${SETTINGS}`])
      // Dev's change is still dev's to record: pending, then in its own revision.
      assert.isTrue((yield* devHistory.status()).dirty)
      const dev2 = yield* devHistory.snapshot({ message: "dev 2" })
      assert.deepStrictEqual(dev2.changed, [SETTINGS])
      assert.deepStrictEqual(rawGit(prodHistory.dir, ["show", "--name-status", "--format=", "HEAD"]).trim(), `D\t${webMirrorOf(dev, prod)}/${SETTINGS}`)
      assert.isFalse((yield* devHistory.status()).dirty)
      assert.isFalse((yield* prodHistory.status()).dirty)
      assert.deepStrictEqual((yield* prodHistory.log()).map((e) => e.message), ["prod 2", "prod 1"])
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

  it.scopedLive("another root's interrupted snapshot (staged, or its mirror written and not staged) stays its own, pending until it records it", () =>
    Effect.gen(function*() {
      const { prod, dev, prodHistory, devHistory, write } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      write(dev, SETTINGS, json({ font: 20 }))
      yield* prodHistory.snapshot({ message: "prod 1" })
      yield* devHistory.snapshot({ message: "dev 1" })
      const devMirror = NodePath.join(devHistory.dir, webMirrorOf(dev, prod), SETTINGS)
      const pending = NodePath.join(devHistory.dir, ".pi-pending")
      for (const crash of ["staged", "written"] as const) {
        // Dev's snapshot died after the pending marker and its mirror write, before (or after) staging it.
        const font = crash === "staged" ? 21 : 22
        write(dev, SETTINGS, json({ font }))
        fs.writeFileSync(pending, "")
        fs.writeFileSync(devMirror, json({ font }))
        if (crash === "staged") rawGit(devHistory.dir, ["update-index", "--", `${webMirrorOf(dev, prod)}/${SETTINGS}`])
        // Prod records its own change only, and leaves dev's pending.
        write(prod, SETTINGS, json({ font: crash === "staged" ? 13 : 14 }))
        const prodRev = yield* prodHistory.snapshot({ message: `prod after dev ${crash}` })
        assert.deepStrictEqual(prodRev.changed, [SETTINGS], crash)
        assert.deepStrictEqual(rawGit(prodHistory.dir, ["show", "--name-only", "--format=", "HEAD"]).trim(), `web/${SETTINGS}`, crash)
        assert.isTrue(fs.existsSync(pending), `${crash}: dev's change is still pending`)
        // Dev's next snapshot recovers and records it.
        assert.isTrue((yield* devHistory.status()).dirty, crash)
        const devRev = yield* devHistory.snapshot({ message: `dev ${crash}` })
        assert.deepStrictEqual(devRev.changed, [SETTINGS], crash)
        assert.strictEqual(rawGit(devHistory.dir, ["show", `HEAD:${webMirrorOf(dev, prod)}/${SETTINGS}`]), json({ font }), crash)
        assert.isFalse(fs.existsSync(pending), crash)
      }
      assert.deepStrictEqual(fs.readdirSync(NodePath.join(prodHistory.dir, ".git")).filter((n) => n.startsWith("pi-commit-index")), [], "no commit index left")
    }))

  it.scopedLive("a live diff leaves the history as it found it: nothing staged, nothing pending, the mirror as the head has it", () =>
    Effect.gen(function*() {
      const { prod, prodHistory, write } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      write(prod, "notes/config/gone.json", json({ x: 1 }))
      yield* prodHistory.snapshot({ message: "one" })
      write(prod, SETTINGS, json({ font: 13 }))
      fs.rmSync(NodePath.join(prod, "notes/config/gone.json"))
      write(prod, "notes/config/new.json", json({ y: 1 }))
      const seen = yield* prodHistory.diff()
      assert.deepStrictEqual([...seen.files].sort(), ["notes/config/gone.json", "notes/config/new.json", SETTINGS].sort())
      assert.isFalse(fs.existsSync(NodePath.join(prodHistory.dir, ".pi-pending")))
      assert.strictEqual(rawGit(prodHistory.dir, ["status", "--porcelain", "--untracked-files=all"]), "")
      // The same diff again, and a snapshot records all three.
      assert.deepStrictEqual((yield* prodHistory.diff()).files, seen.files)
      assert.deepStrictEqual([...(yield* prodHistory.snapshot({ message: "two" })).changed].sort(), [...seen.files].sort())
    }))

  it.scopedLive("a web data root that is a symlink is read and written through its link, and stays a link", () =>
    Effect.gen(function*() {
      const { prod, agent, historyOf, write, read } = yield* twoRoots
      // The data lives on another disk; the root is a link to it, as a person moves data.
      const disk = `${prod}-disk`
      write(disk, SETTINGS, json({ font: 12 }))
      fs.symlinkSync(disk, prod)
      write(agent, "settings.json", json({ theme: "dark" }))
      const history = yield* historyOf(prod)
      const first = yield* history.snapshot({ message: "through the link" })
      assert.deepStrictEqual([...first.changed].sort(), [SETTINGS, "settings.json"].sort())
      assert.deepStrictEqual(first.roots.webDataRoot, prod, "the root as named")
      assert.include(rawGit(history.dir, ["ls-tree", "-r", "--name-only", "HEAD"]), `web/${SETTINGS}`)
      write(disk, SETTINGS, json({ font: 13 }))
      assert.deepStrictEqual((yield* history.snapshot({ message: "edit" })).changed, [SETTINGS])
      // A rollback writes through the link, into the directory it leads to.
      yield* history.rollback(first.revision!)
      assert.strictEqual(read(disk, SETTINGS), json({ font: 12 }))
      assert.isTrue(fs.lstatSync(prod).isSymbolicLink(), "the link is left as it is")
    }))

  it.scopedLive("a web data root that is not there takes no mirror, and one that vanished is refused, not recorded as deleted", () =>
    Effect.gen(function*() {
      const { prod, dev, agent, historyOf, write, read } = yield* twoRoots
      write(agent, "settings.json", json({ theme: "dark" }))
      // A typo'd root (never there): the agent's files are kept, the root claims nothing.
      const typo = yield* historyOf(`${dev}-typo`)
      assert.deepStrictEqual((yield* typo.snapshot({ message: "agent only" })).changed, ["settings.json"])
      // The record says no root yet, so later operations need not ask git whether a revision touched web/.
      assert.deepStrictEqual(JSON.parse(fs.readFileSync(NodePath.join(typo.dir, ".git", WEB_ROOT_RECORD), "utf8")), { version: 1, webRoot: null })
      assert.deepStrictEqual((yield* typo.snapshot()).changed, [])
      // The first root with files to keep takes web/.
      write(prod, SETTINGS, json({ font: 12 }))
      const prodHistory = yield* historyOf(prod)
      yield* prodHistory.snapshot({ message: "prod 1" })
      assert.deepStrictEqual(JSON.parse(fs.readFileSync(NodePath.join(typo.dir, ".git", WEB_ROOT_RECORD), "utf8")), { version: 1, webRoot: prod })
      // Unmounted (renamed away): snapshot and rollback are refused, naming the root; nothing committed or written.
      const head = rawGit(prodHistory.dir, ["rev-parse", "HEAD"]).trim()
      fs.renameSync(prod, `${prod}.away`)
      write(agent, "settings.json", json({ theme: "light" }))
      for (const refused of [yield* Effect.flip(prodHistory.snapshot()), yield* Effect.flip(prodHistory.rollback(head))]) {
        assert.strictEqual(refused._tag, "InvalidArgument")
        assert.include(refused.message, `the web data root ${prod} does not exist, and the history keeps 1 config file of it`)
      }
      assert.strictEqual(rawGit(prodHistory.dir, ["rev-parse", "HEAD"]).trim(), head)
      assert.isFalse(fs.existsSync(prod), "a rollback made nothing there")
      // Back in place: nothing was lost, and the agent's edit is recorded.
      fs.renameSync(`${prod}.away`, prod)
      const back = yield* prodHistory.snapshot({ message: "back" })
      assert.deepStrictEqual(back.changed, ["settings.json"])
      assert.strictEqual(read(prod, SETTINGS), json({ font: 12 }))
    }))

  it.scopedLive("a diff of revisions whose object is missing is ConfigHistoryCorrupt, not a raw git failure", () =>
    Effect.gen(function*() {
      const { prod, prodHistory, write } = yield* twoRoots
      write(prod, SETTINGS, json({ font: 12 }))
      const first = yield* prodHistory.snapshot()
      write(prod, SETTINGS, json({ font: 13 }))
      yield* prodHistory.snapshot()
      const blob = rawGit(prodHistory.dir, ["rev-parse", `${first.revision}:web/${SETTINGS}`]).trim()
      fs.rmSync(NodePath.join(prodHistory.dir, ".git", "objects", blob.slice(0, 2), blob.slice(2)))
      const refused = yield* Effect.flip(prodHistory.diff({ from: first.revision!, to: "HEAD" }))
      assert.strictEqual(refused._tag, "ConfigHistoryCorrupt")
      assert.include(refused.message, "cannot be read")
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
