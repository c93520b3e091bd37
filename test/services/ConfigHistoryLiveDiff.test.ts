/**
 * A live `config diff` once the history exists is a read: no lock, nothing staged or pending, the history's
 * directory and the live files exactly as they were (the dashboard's `--read-only` pages call it). Its index and
 * new objects go to a scratch directory under `$TMPDIR`, gone afterwards; and what it shows is what the next
 * snapshot records, held against real git.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "effect/FastCheck"
import { PENDING_MARKER } from "../../src/domain/ConfigHistoryLayout.js"
import { ConfigHistory } from "../../src/services/ConfigHistory.js"
import { historyLayer, rawGit, setup, tempRoot } from "./configHistorySupport.js"

/** Every entry under `root` with what a write would change: type, mode, size, mtime, inode, content. */
const treeState = (root: string): Array<string> => {
  const out: Array<string> = []
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const path = NodePath.join(dir, name)
      const st = fs.lstatSync(path)
      const content = st.isFile() ? crypto.createHash("sha256").update(fs.readFileSync(path)).digest("hex") : ""
      out.push(`${NodePath.relative(root, path)} ${st.mode.toString(8)} ${st.size} ${st.mtimeMs} ${st.ino} ${content}`)
      if (st.isDirectory()) walk(path)
    }
  }
  walk(root)
  return out
}

const scratchRoot = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(NodePath.join(os.tmpdir(), "cfg-diff-tmp-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A history whose live diffs go to a scratch `$TMPDIR` of the test's own. */
const fixture = (options: Parameters<typeof setup>[0] = {}) =>
  Effect.gen(function*() {
    const tmp = yield* scratchRoot
    return { tmp, fx: yield* setup({ ...options, tmpDir: tmp }) }
  })

type Fixture = Effect.Effect.Success<ReturnType<typeof setup>>

/** `files` (paths under the fixture's root) written and recorded by a snapshot: its head. */
const recordedWith = (fx: Fixture, files: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    for (const [rel, text] of Object.entries(files)) fx.write(rel, text)
    yield* fx.history.snapshot()
    return (yield* fx.history.status()).head!
  })

/** The live diff, then what the snapshot made right after it records (from `head` to its revision). */
const liveAndRecorded = (fx: Fixture, head: string) =>
  Effect.gen(function*() {
    const live = yield* fx.history.diff()
    const recorded = yield* fx.history.snapshot()
    return { live, recorded: yield* fx.history.diff({ from: head, to: recorded.revision ?? head }), revision: recorded.revision }
  })

/** Files of both roots, some names git quotes; each is kept, changed, removed or (when absent) added. */
const NAMES = ["agent/settings.json", "web/e/config/a.txt", "web/e/config/b.bin", "web/e/config/q\"x.txt", "web/f/config/deep/n.txt"] as const
const content = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom("\u0000bin", "no newline", "line\n", "\r\n"))
const fate = fc.oneof(fc.constant({ _tag: "keep" as const }), fc.constant({ _tag: "remove" as const }), content.map((text) => ({ _tag: "write" as const, text })))

const writeFile = (root: string, rel: string, text: string) => {
  const path = NodePath.join(root, rel)
  fs.mkdirSync(NodePath.dirname(path), { recursive: true })
  // The agent's settings.json is read as JSON: its text goes in a string.
  fs.writeFileSync(path, rel === "agent/settings.json" ? JSON.stringify({ text }) : text)
}

describe("a live config diff with a history", () => {
  it.effect.prop("changes nothing, leaves no scratch, and shows what the next snapshot records", [
    fc.array(fc.option(content, { nil: undefined }), { minLength: NAMES.length, maxLength: NAMES.length }),
    fc.array(fate, { minLength: NAMES.length, maxLength: NAMES.length })
  ], ([initial, fates]) =>
    Effect.scoped(Effect.gen(function*() {
      const { fx, tmp } = yield* fixture()
      // The agent's settings.json is always there at first, so the first snapshot makes a revision.
      NAMES.forEach((rel, i) => {
        const text = i === 0 ? initial[0] ?? "" : initial[i]
        if (text !== undefined) writeFile(fx.root, rel, text)
      })
      yield* fx.history.snapshot()
      const head = (yield* fx.history.status()).head!
      NAMES.forEach((rel, i) => {
        const f = fates[i]!
        if (f._tag === "write") writeFile(fx.root, rel, f.text)
        else if (f._tag === "remove") fs.rmSync(NodePath.join(fx.root, rel), { force: true })
      })
      const before = treeState(fx.root)
      const live = yield* fx.history.diff()
      const after = treeState(fx.root)
      assert.deepStrictEqual(after.filter((l) => !before.includes(l)), [], `the live diff changed a file of the agent dir, the web root or the history (was: ${before.filter((l) => !after.includes(l)).join("; ")})`)
      assert.deepStrictEqual(fs.readdirSync(tmp), [], "the live diff left its scratch directory")
      const recorded = yield* fx.history.snapshot()
      assert.deepStrictEqual(live, yield* fx.history.diff({ from: head, to: recorded.revision ?? head }))
      assert.strictEqual(live.files.length === 0, recorded.revision === null)
    })), { fastCheck: { numRuns: 25 } })

  it.effect("does not wait for the history's lock: a diff inside a change sees the live files", () =>
    Effect.scoped(Effect.gen(function*() {
      const { fx, tmp } = yield* fixture({ lockWaitMs: 300 })
      fx.write("agent/settings.json", "{\"theme\":\"dark\"}\n")
      yield* fx.history.snapshot()
      // `change` holds the lock while its effect runs (after recording the files as they were); a diff that took it
      // would wait, then fail busy.
      const seen = yield* fx.history.change("theme", Effect.zipRight(
        Effect.sync(() => fx.write("agent/settings.json", "{\"theme\":\"light\"}\n")),
        fx.history.diff()
      ))
      assert.deepStrictEqual(seen.files, ["settings.json"])
      assert.include(seen.patch, "-{\"theme\":\"dark\"}\n+{\"theme\":\"light\"}\n")
      assert.deepStrictEqual(fs.readdirSync(tmp), [])
    })))

  it.effect("a $TMPDIR that is not there is a typed error naming it, and nothing changes", () =>
    Effect.scoped(Effect.gen(function*() {
      const tmp = yield* scratchRoot
      const missing = NodePath.join(tmp, "gone")
      const fx = yield* setup({ tmpDir: missing })
      fx.write("web/e/config/a.txt", "one\n")
      yield* fx.history.snapshot()
      fx.write("web/e/config/a.txt", "two\n")
      const before = treeState(fx.root)
      const failed = yield* Effect.flip(fx.history.diff())
      assert.strictEqual(failed._tag, "FileSystemError")
      assert.include(failed.message, missing)
      assert.deepStrictEqual(treeState(fx.root), before)
      assert.isFalse(fs.existsSync(missing))
    })))

  it.effect("a config file named .gitattributes changes nothing: the bytes are shown as the snapshot records them", () =>
    Effect.scoped(Effect.gen(function*() {
      const { fx, tmp } = yield* fixture()
      const head = yield* recordedWith(fx, { "web/e/config/a.txt": "one\r\n" })
      fx.write("web/e/config/.gitattributes", "* text eol=crlf filter=lfs diff=x\n")
      fx.write("web/e/config/a.txt", "one\r\ntwo\n")
      const { live, recorded } = yield* liveAndRecorded(fx, head)
      assert.deepStrictEqual(live, recorded)
      assert.include(live.patch, " one\r\n+two\n")
      assert.deepStrictEqual(fs.readdirSync(tmp), [])
    })))

  it.effect("an agent dir whose path holds a colon (git's list separator for alternates)", () =>
    Effect.scoped(Effect.gen(function*() {
      const tmp = yield* scratchRoot
      const root = yield* tempRoot
      const agent = NodePath.join(root, "ag:ent")
      fs.mkdirSync(agent)
      const history = yield* Effect.provide(ConfigHistory, historyLayer(agent, { webDataRoot: NodePath.join(root, "web") }, undefined, tmp))
      fs.writeFileSync(NodePath.join(agent, "settings.json"), "{\"a\":1}\n")
      yield* history.snapshot()
      fs.writeFileSync(NodePath.join(agent, "settings.json"), "{\"a\":2}\n")
      const live = yield* history.diff()
      assert.deepStrictEqual(live.files, ["settings.json"])
      assert.include(live.patch, "-{\"a\":1}\n+{\"a\":2}\n")
    })))

  it.effect("a file turned into a directory, and a directory into a file: shown as the snapshot records them", () =>
    Effect.scoped(Effect.gen(function*() {
      const { fx } = yield* fixture()
      const head = yield* recordedWith(fx, { "web/e/config/x": "one\n", "web/e/config/d/y": "two\n" })
      fs.rmSync(NodePath.join(fx.web, "e/config/x"))
      fs.rmSync(NodePath.join(fx.web, "e/config/d"), { recursive: true })
      fx.write("web/e/config/x/z", "three\n")
      fx.write("web/e/config/d", "four\n")
      const { live, recorded } = yield* liveAndRecorded(fx, head)
      assert.deepStrictEqual(live.files, ["e/config/d", "e/config/d/y", "e/config/x", "e/config/x/z"])
      assert.deepStrictEqual(live, recorded)
    })))

  // On the real clock: the stat cache trusts a file older than the time it was recorded.
  it.live("a change the stat cache cannot see (same size, time and inode) is not shown, as status and snapshot do not see it", () =>
    Effect.scoped(Effect.gen(function*() {
      const { fx, tmp } = yield* fixture()
      const file = NodePath.join(fx.agent, "settings.json")
      fx.write("agent/settings.json", "{\"v\":\"aaaa\"}\n")
      const old = new Date("2020-01-01T00:00:00Z")
      fs.utimesSync(file, old, old)
      yield* fx.history.snapshot()
      const fd = fs.openSync(file, "r+")
      fs.writeSync(fd, "{\"v\":\"bbbb\"}\n", 0)
      fs.closeSync(fd)
      fs.utimesSync(file, old, old)
      assert.isFalse((yield* fx.history.status()).dirty)
      assert.deepStrictEqual(yield* fx.history.diff(), { files: [], patch: "" })
      assert.strictEqual((yield* fx.history.snapshot()).revision, null)
    })))

  it.effect("after an interrupted snapshot, a file skipped now is shown with the copy the snapshot keeps (the mirror's)", () =>
    Effect.scoped(Effect.gen(function*() {
      const { fx } = yield* fixture()
      const head = yield* recordedWith(fx, { "agent/settings.json": "{}\n", "agent/config/extensions/ns/x": "v1\n" })
      // A snapshot that died after writing its mirror and staging it.
      const dir = fx.history.dir
      fs.writeFileSync(NodePath.join(dir, "agent/config/extensions/ns/x"), "v2\n")
      fs.writeFileSync(NodePath.join(dir, PENDING_MARKER), "")
      rawGit(dir, ["add", "agent/config/extensions/ns/x"])
      // The live file is now a link: skipped, so the snapshot keeps what the mirror holds.
      fs.rmSync(NodePath.join(fx.agent, "config/extensions/ns/x"))
      fs.symlinkSync("/etc/hostname", NodePath.join(fx.agent, "config/extensions/ns/x"))
      const before = treeState(fx.root)
      const live = yield* fx.history.diff()
      assert.deepStrictEqual(treeState(fx.root), before)
      assert.deepStrictEqual(live.files, ["config/extensions/ns/x"])
      assert.deepStrictEqual(live, (yield* liveAndRecorded(fx, head)).recorded)
    })))

  it.effect("a history set to split its index (core.splitIndex) gets no shared index written by a diff", () =>
    Effect.scoped(Effect.gen(function*() {
      const { fx, tmp } = yield* fixture()
      fx.write("agent/settings.json", "{\"a\":1}\n")
      yield* fx.history.snapshot()
      rawGit(fx.history.dir, ["config", "core.splitIndex", "true"])
      fx.write("agent/settings.json", "{\"a\":2}\n")
      const before = treeState(fx.root)
      assert.deepStrictEqual((yield* fx.history.diff()).files, ["settings.json"])
      assert.deepStrictEqual((yield* fx.history.diff()).files, ["settings.json"])
      assert.deepStrictEqual(treeState(fx.root), before)
    })))

  describe("hand-made states of the mirror and the pending marker: the diff is what the snapshot records", () => {
    /** The live diff changes nothing in the tree, and equals what the snapshot after it records. */
    const agrees = (fx: Fixture, head: string) =>
      Effect.gen(function*() {
        const before = treeState(fx.root)
        const live = yield* fx.history.diff()
        assert.deepStrictEqual(treeState(fx.root), before)
        const { recorded, revision } = yield* liveAndRecorded(fx, head)
        assert.deepStrictEqual(live, recorded)
        return { live, revision }
      })

    it.effect("a mirror copy an interrupted snapshot wrote and never staged, of a file skipped now: not recorded, not shown", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fx } = yield* fixture()
        const head = yield* recordedWith(fx, { "agent/settings.json": "{}\n" })
        fs.mkdirSync(NodePath.join(fx.history.dir, "web/e/config"), { recursive: true })
        fs.writeFileSync(NodePath.join(fx.history.dir, "web/e/config/n.json"), "{\"n\":1}\n")
        fs.writeFileSync(NodePath.join(fx.history.dir, PENDING_MARKER), "")
        fx.write("outside.json", "{\"n\":1}\n")
        fs.mkdirSync(NodePath.join(fx.web, "e/config"), { recursive: true })
        fs.symlinkSync(NodePath.join(fx.root, "outside.json"), NodePath.join(fx.web, "e/config/n.json"))
        const { live, revision } = yield* agrees(fx, head)
        assert.deepStrictEqual(live, { files: [], patch: "" })
        assert.strictEqual(revision, null)
      })))

    it.effect("a skipped file whose mirror copy was removed by hand keeps the head's copy, as the snapshot does", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fx } = yield* fixture({ configBudgetBytes: 64 })
        const head = yield* recordedWith(fx, { "agent/settings.json": "{\"a\":1}\n", "web/e/config/a.json": "{\"x\":1}\n" })
        fx.write("web/e/config/a.json", `{"x":"${"a".repeat(100)}"}\n`)
        fs.rmSync(NodePath.join(fx.history.dir, "web/e/config/a.json"))
        fx.write("agent/settings.json", "{\"a\":2}\n")
        const { live } = yield* agrees(fx, head)
        assert.deepStrictEqual(live.files, ["settings.json"])
      })))

    it.effect("a mirror copy edited by hand to the live bytes: the snapshot stages nothing, and nothing is shown", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fx } = yield* fixture()
        const head = yield* recordedWith(fx, { "agent/settings.json": "{}\n", "web/e/config/a.json": "{\"x\":1}\n" })
        fs.writeFileSync(NodePath.join(fx.history.dir, "web/e/config/a.json"), "{\"x\":2}\n")
        fx.write("web/e/config/a.json", "{\"x\":2}\n")
        const { live, revision } = yield* agrees(fx, head)
        assert.deepStrictEqual(live, { files: [], patch: "" })
        assert.strictEqual(revision, null)
      })))

    it.effect("a directory of the mirror swapped for a link: nothing is read through it", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fx } = yield* fixture()
        const head = yield* recordedWith(fx, { "agent/settings.json": "{}\n", "web/e/config/sub/a.json": "{\"x\":1}\n" })
        // Pending, so the snapshot stages every indexed path from the mirror; the mirror's sub/ leads elsewhere.
        fs.writeFileSync(NodePath.join(fx.history.dir, PENDING_MARKER), "")
        fx.write("elsewhere/a.json", "{\"planted\":true}\n")
        const sub = NodePath.join(fx.history.dir, "web/e/config/sub")
        fs.rmSync(sub, { recursive: true })
        fs.symlinkSync(NodePath.join(fx.root, "elsewhere"), sub)
        fs.rmSync(NodePath.join(fx.web, "e/config/sub"), { recursive: true })
        fs.mkdirSync(NodePath.join(fx.web, "e/config/sub"))
        fs.symlinkSync(NodePath.join(fx.root, "elsewhere/a.json"), NodePath.join(fx.web, "e/config/sub/a.json"))
        const { live } = yield* agrees(fx, head)
        assert.notInclude(live.patch, "planted")
      })))

    it.effect("a removed file whose mirror copy is a directory now: the snapshot removes it and records the deletion, as shown", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fx } = yield* fixture()
        const head = yield* recordedWith(fx, { "agent/settings.json": "{}\n", "web/e/config/a.txt": "a\n", "web/e/config/b.txt": "b\n" })
        fs.rmSync(NodePath.join(fx.web, "e/config/b.txt"))
        const copy = NodePath.join(fx.history.dir, "web/e/config/b.txt")
        fs.rmSync(copy)
        fs.mkdirSync(copy)
        fs.writeFileSync(NodePath.join(copy, "inner"), "z\n")
        const { live } = yield* agrees(fx, head)
        assert.deepStrictEqual(live.files, ["e/config/b.txt"])
        assert.isFalse(fs.existsSync(copy))
      })))

    it.effect("the history's index reached through a link is read through it, as git reads it", () =>
      Effect.scoped(Effect.gen(function*() {
        const { fx } = yield* fixture()
        const head = yield* recordedWith(fx, { "agent/settings.json": "{}\n", "web/e/config/a.txt": "a\n", "web/e/config/b.txt": "b\n" })
        const index = NodePath.join(fx.history.dir, ".git/index")
        fs.copyFileSync(index, NodePath.join(fx.root, "index-elsewhere"))
        fs.rmSync(index)
        fs.symlinkSync(NodePath.join(fx.root, "index-elsewhere"), index)
        fx.write("web/e/config/a.txt", "changed\n")
        const { live } = yield* agrees(fx, head)
        assert.deepStrictEqual(live.files, ["e/config/a.txt"])
      })))
  })
})
