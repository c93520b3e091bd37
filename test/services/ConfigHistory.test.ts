/**
 * ConfigHistory with real git in temp dirs (SPEC BK1): round trips, secrets, red lines, layout, isolation.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { REDACTED } from "../../src/domain/ConfigHistory.js"
import { UnknownRevision } from "../../src/domain/Errors.js"
import { allBlobs, gitGrep, rawGit, setup } from "./configHistorySupport.js"

const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n"

describe("ConfigHistory (real git)", () => {
  it.scopedLive("snapshot, log, diff and rollback round trip; paths as a person knows them", () =>
    Effect.gen(function*() {
      const { history, write, read, exists, agent, web } = yield* setup({ web: true })
      assert.deepStrictEqual(yield* history.status(), { head: null, dirty: false, interrupted: null })
      assert.deepStrictEqual(yield* history.log(), [])
      write("agent/settings.json", json({ theme: "dark" }))
      write("agent/keybindings.json", json({ quit: "ctrl+q" }))
      write("agent/profiles/directories/p1/settings.json", json({ model: "a" }))
      write("agent/MEMORY.md", "not config")
      write("web/notes/config/settings.json", json({ font: 12 }))
      write("web/notes/config/nested/list.txt", "one\n")
      assert.isTrue((yield* history.status()).dirty)
      const first = yield* history.snapshot({ message: "first" })
      assert.isString(first.revision)
      assert.deepStrictEqual([...first.changed].sort(), [
        "keybindings.json", "notes/config/nested/list.txt", "notes/config/settings.json",
        "profiles/directories/p1/settings.json", "settings.json"
      ])
      assert.deepStrictEqual(yield* history.snapshot({ message: "again" }), { revision: null, roots: { agentDir: agent, webDataRoot: web }, changed: [], skipped: [] })
      assert.isFalse((yield* history.status()).dirty)

      write("agent/settings.json", json({ theme: "light" }))
      fs.rmSync(NodePath.join(NodePath.dirname(history.dir), "..", "..", "..", "keybindings.json"))
      const live = yield* history.diff()
      assert.deepStrictEqual([...live.files].sort(), ["keybindings.json", "settings.json"])
      assert.include(live.patch, "diff --git a/settings.json b/settings.json")
      assert.include(live.patch, '-  "theme": "dark"')
      assert.include(live.patch, '+  "theme": "light"')
      const second = yield* history.snapshot({ message: "light, no keys" })
      assert.deepStrictEqual([...second.changed].sort(), ["keybindings.json", "settings.json"])

      const log = yield* history.log()
      assert.deepStrictEqual(log.map((e) => e.message), ["light, no keys", "first"])
      assert.strictEqual(log[0]!.revision, second.revision)
      assert.isBelow(Math.abs(Date.parse(log[0]!.date) - Date.now()), 120_000, "dated by the clock")
      assert.deepStrictEqual([...log[0]!.changed].sort(), ["keybindings.json", "settings.json"])
      assert.lengthOf(yield* history.log({ limit: 1 }), 1)
      const between = yield* history.diff({ from: first.revision!, to: second.revision! })
      assert.deepStrictEqual([...between.files].sort(), ["keybindings.json", "settings.json"])

      // An unsaved edit before the rollback is kept in history; the rollback is a new revision.
      write("agent/settings.json", json({ theme: "unsaved" }))
      write("agent/profiles/directories/p2/settings.json", json({ model: "new" }))
      const back = yield* history.rollback(first.revision!)
      assert.deepStrictEqual([...back.restored].sort(), ["keybindings.json", "settings.json"])
      assert.deepStrictEqual(back.removed, ["profiles/directories/p2/settings.json"])
      assert.strictEqual(read("agent/settings.json"), json({ theme: "dark" }))
      assert.strictEqual(read("agent/keybindings.json"), json({ quit: "ctrl+q" }))
      assert.isFalse(exists("agent/profiles/directories/p2/settings.json"))
      assert.strictEqual(read("agent/MEMORY.md"), "not config")
      const after = yield* history.log()
      assert.deepStrictEqual(after.slice(0, 3).map((e) => e.message), [
        `rollback to ${first.revision!.slice(0, 12)}`, `before rollback to ${first.revision!.slice(0, 12)}`, "light, no keys"
      ])
      assert.strictEqual(back.revision, after[0]!.revision)
      // The unsaved edit is in history: rolling back to it brings it back.
      yield* history.rollback(after[1]!.revision)
      assert.strictEqual(read("agent/settings.json"), json({ theme: "unsaved" }))
      assert.strictEqual(read("agent/profiles/directories/p2/settings.json"), json({ model: "new" }))

      const unknown = yield* Effect.flip(history.rollback("0123456789abcdef"))
      assert.instanceOf(unknown, UnknownRevision)
      assert.strictEqual((yield* Effect.flip(history.diff({ from: "--output=/tmp/x" })))._tag, "InvalidArgument")
    }))

  it.scopedLive("no literal credential enters any blob of any revision; a rollback keeps the live secrets", () =>
    Effect.gen(function*() {
      const { history, write, read, root } = yield* setup({ web: true })
      const models = (key: string, extra: Record<string, unknown> = {}) => json({
        providers: {
          openai: { apiKey: key, baseUrl: "https://api.example", headers: { Authorization: "Bearer SEKRET-HEADER-1", "X-Api-Key": "SEKRET-HEADER-2" } },
          local: { apiKey: "OPENAI_API_KEY", api_key: "!pass show llm", token: "${MY_TOKEN}", maxTokens: 4096, tokenizer: "cl100k" },
          ...extra
        }
      })
      write("agent/models.json", models("sk-SEKRET-ONE"))
      write("agent/auth.json", json({ anthropic: { key: "SEKRET-AUTH" } }))
      write("web/notes/config/settings.json", json({ password: "SEKRET-PW", user: "me" }))
      write("web/notes/config/server.pem", "SEKRET-PEM")
      write("web/notes/config/.env.local", "X=SEKRET-ENV")
      write("web/notes/config/github_token.txt", "SEKRET-TOKENFILE")
      const first = yield* history.snapshot({ message: "with secrets" })
      assert.includeMembers(first.skipped.map((s) => s.path), ["auth.json", "notes/config/server.pem", "notes/config/.env.local", "notes/config/github_token.txt"])
      const tagOf = (path: string) => first.skipped.find((s) => s.path === path)
      assert.deepInclude(tagOf("auth.json"), { _tag: "Credentials", message: "auth.json: credentials: never versioned" })
      assert.deepInclude(tagOf("notes/config/server.pem"), { _tag: "Denylisted", message: "notes/config/server.pem: denylisted (*.pem): never committed" })
      write("agent/models.json", models("sk-SEKRET-TWO", { extra: { secret: "SEKRET-EXTRA" } }))
      yield* history.snapshot({ message: "rotated" })
      const blobs = allBlobs(history.dir)
      assert.notMatch(blobs, /SEKRET/)
      assert.include(blobs, REDACTED)
      // References are kept as they are: they are not secrets, and a rollback needs them.
      for (const ref of ["OPENAI_API_KEY", "!pass show llm", "${MY_TOKEN}", "cl100k", "4096"]) assert.include(blobs, ref)
      const grep = gitGrep(history.dir, "SEKRET")
      assert.strictEqual(grep.status, 1, `git grep over rev-list --all finds nothing: ${grep.stdout}`)
      assert.include(gitGrep(history.dir, "OPENAI_API_KEY").stdout, "agent/models.json", "the same grep does find what is there")
      // Roll back to the first revision: its structure returns, the live secrets stay, no placeholder is written.
      write("agent/models.json", models("sk-SEKRET-THREE", { extra: { secret: "SEKRET-EXTRA" } }))
      const back = yield* history.rollback(first.revision!)
      const restored = JSON.parse(read("agent/models.json"))
      assert.strictEqual(restored.providers.openai.apiKey, "sk-SEKRET-THREE")
      assert.strictEqual(restored.providers.openai.headers.Authorization, "Bearer SEKRET-HEADER-1")
      assert.isUndefined(restored.providers.extra)
      assert.strictEqual(restored.providers.local.api_key, "!pass show llm")
      assert.notInclude(read("agent/models.json"), REDACTED)
      assert.deepStrictEqual(back.unresolvedSecrets, [])
      assert.strictEqual(read("agent/auth.json"), json({ anthropic: { key: "SEKRET-AUTH" } }), "denylisted files are never touched")
      assert.strictEqual(fs.readFileSync(NodePath.join(root, "web/notes/config/server.pem"), "utf8"), "SEKRET-PEM")
      assert.notMatch(allBlobs(history.dir), /SEKRET/)
    }))

  it.scopedLive("red-line files are skipped, reported and never committed", () =>
    Effect.gen(function*() {
      const { history, root, write } = yield* setup({ web: true, configBudgetBytes: 64 })
      write("agent/settings.json", json({ a: 1 }))
      write("web/ext1/config/usage.sqlite", "db")
      write("web/ext1/config/a.s3db", "db")
      write("web/ext1/config/app.log.1.gz", "log")
      write("web/ext1/config/trace.out", "log")
      write("web/ext1/config/big.bin", "x".repeat(65))
      write("web/ext1/config/.venv/lib/x.py", "venv")
      write("web/ext1/config/state/h.jsonl", "{}")
      write("web/ext1/config/ok.txt", "fine")
      write("web/ext1/config/broken.json", "{not json")
      write(`web/ext1/config/${Array.from({ length: 16 }, (_, i) => `d${i + 1}`).join("/")}/deep.txt`, "deep")
      fs.symlinkSync("/etc/hostname", NodePath.join(root, "web/ext1/config/link.txt"))
      fs.mkdirSync(NodePath.join(root, "agent/models.json"))
      const r = yield* history.snapshot()
      const skipped = new Map(r.skipped.map((s) => [s.path, s.reason]))
      assert.match(skipped.get("ext1/config/usage.sqlite")!, /database/)
      assert.match(skipped.get("ext1/config/a.s3db")!, /database/)
      assert.match(skipped.get("ext1/config/app.log.1.gz")!, /log/)
      assert.match(skipped.get("ext1/config/trace.out")!, /log/)
      assert.match(skipped.get("ext1/config/big.bin")!, /size-budget/)
      assert.match(skipped.get("ext1/config/.venv/")!, /virtualenv/)
      assert.match(skipped.get("ext1/config/state/")!, /state tier/)
      assert.match(skipped.get("ext1/config/broken.json")!, /not valid JSON/)
      // Each one tagged, its message the path and the words.
      const tags = Object.fromEntries(r.skipped.map((s) => [s.path, s._tag]))
      assert.deepInclude(tags, {
        "ext1/config/usage.sqlite": "RedLine",
        "ext1/config/big.bin": "RedLine",
        "ext1/config/.venv/": "RedLine",
        "ext1/config/state/": "OldStateTier",
        "ext1/config/broken.json": "Unredactable",
        "ext1/config/link.txt": "Symlink",
        "models.json": "NotARegularFile",
        [`ext1/config/${Array.from({ length: 16 }, (_, i) => `d${i + 1}`).join("/")}/`]: "TooDeep"
      })
      for (const s of r.skipped) assert.strictEqual(s.message, `${s.path}: ${s.reason}`)
      const committed = rawGit(history.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim().split("\n").sort()
      assert.deepStrictEqual(committed, ["agent/settings.json", "web/ext1/config/ok.txt"])
    }))

  it.scopedLive("an extension's directory or config tier linked elsewhere is said (Symlink), and what history holds of it is never recorded as deleted", () =>
    Effect.gen(function*() {
      const { history, root, write, read } = yield* setup({ web: true })
      write("agent/settings.json", json({ a: 1 }))
      write("web/bm/config/settings.json", json({ theme: "dark" }))
      write("web/notes/config/settings.json", json({ font: 12 }))
      write("agent/config/extensions/ns/settings.json", json({ k: 1 }))
      const first = yield* history.snapshot({ message: "first" })
      assert.deepStrictEqual([...first.changed].sort(), ["bm/config/settings.json", "config/extensions/ns/settings.json", "notes/config/settings.json", "settings.json"])
      // Each directory moved to another disk and linked back: the tiers write through the links as before.
      const away = (rel: string) => {
        const live = NodePath.join(root, rel)
        const elsewhere = NodePath.join(root, "other-disk", rel.replace(/\//g, "_"))
        fs.mkdirSync(NodePath.dirname(elsewhere), { recursive: true })
        fs.renameSync(live, elsewhere)
        fs.symlinkSync(elsewhere, live)
      }
      away("web/bm")
      away("web/notes/config")
      away("agent/config/extensions/ns")
      write("web/bm/config/settings.json", json({ theme: "light" }))
      const second = yield* history.snapshot({ message: "second" })
      assert.strictEqual(second.revision, null, "nothing is recorded as deleted")
      assert.deepStrictEqual(second.changed, [])
      assert.deepStrictEqual(
        second.skipped.map((s) => [s._tag, s.path]).sort(),
        [["Symlink", "bm/config/"], ["Symlink", "config/extensions/ns/"], ["Symlink", "notes/config/"]]
      )
      for (const s of second.skipped) assert.include(s.reason, "history never follows links")
      const committed = rawGit(history.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim().split("\n").sort()
      assert.deepStrictEqual(committed, ["agent/config/extensions/ns/settings.json", "agent/settings.json", "web/bm/config/settings.json", "web/notes/config/settings.json"])
      // The live diff agrees: nothing to show. A rollback writes nothing through the links.
      assert.deepStrictEqual((yield* history.diff()).files, [])
      yield* history.rollback(first.revision!)
      assert.strictEqual(read("web/bm/config/settings.json"), json({ theme: "light" }))
    }))

  it.scopedLive("a linked web extension called config covers nothing of the agent's config: the agent extension's config still rolls back", () =>
    Effect.gen(function*() {
      const { history, root, write, read } = yield* setup({ web: true })
      write("agent/config/extensions/ns/settings.json", json({ k: 1 }))
      const first = yield* history.snapshot({ message: "first" })
      write("agent/config/extensions/ns/settings.json", json({ k: 2 }))
      fs.mkdirSync(NodePath.join(root, "other", "config"), { recursive: true })
      fs.mkdirSync(NodePath.join(root, "web"), { recursive: true })
      fs.symlinkSync(NodePath.join(root, "other"), NodePath.join(root, "web", "config"))
      const second = yield* history.snapshot({ message: "second" })
      assert.deepStrictEqual(second.skipped.map((s) => [s._tag, s.path]), [["Symlink", "config/config/"]])
      const back = yield* history.rollback(first.revision!)
      assert.deepStrictEqual(back.restored, ["config/extensions/ns/settings.json"])
      assert.strictEqual(read("agent/config/extensions/ns/settings.json"), json({ k: 1 }))
    }))

  it.scopedLive("the repository is under state/backups/config/history; a work run finds no git repository", () =>
    Effect.gen(function*() {
      const { history, write, agent } = yield* setup()
      write("agent/settings.json", "{}\n")
      yield* history.snapshot()
      assert.strictEqual(history.dir, NodePath.join(agent, "state", "backups", "config", "history"))
      assert.isTrue(fs.statSync(NodePath.join(history.dir, ".git")).isDirectory())
      assert.strictEqual(fs.readFileSync(NodePath.join(history.dir, "agent", "settings.json"), "utf8"), "{}\n")
      const run = NodePath.join(agent, "work", "tools", "bash", "run1")
      fs.mkdirSync(run, { recursive: true })
      for (const cwd of [run, agent]) {
        let failed = false
        try {
          execFileSync("git", ["rev-parse", "--git-dir"], { cwd, stdio: "pipe", env: { PATH: process.env.PATH, GIT_CEILING_DIRECTORIES: NodePath.dirname(NodePath.dirname(agent)) } })
        } catch {
          failed = true
        }
        assert.isTrue(failed, `git rev-parse must fail in ${cwd}`)
      }
    }))

  it.scopedLive("change(): success snapshots under the message; a failure restores the last good files and rethrows", () =>
    Effect.gen(function*() {
      const { history, write, read, exists } = yield* setup()
      write("agent/settings.json", json({ v: 1 }))
      const value = yield* history.change("set v 2", Effect.sync(() => {
        write("agent/settings.json", json({ v: 2 }))
        return "applied"
      }))
      assert.strictEqual(value, "applied")
      const log = yield* history.log()
      assert.deepStrictEqual(log.map((e) => e.message), ["set v 2", "before: set v 2"])
      const head = log[0]!.revision

      class Boom {
        readonly _tag = "Boom"
      }
      const failed = yield* Effect.flip(history.change("break it", Effect.gen(function*() {
        write("agent/settings.json", json({ v: "broken" }))
        write("agent/profiles/directories/new/settings.json", json({ half: true }))
        return yield* Effect.fail(new Boom())
      })))
      assert.instanceOf(failed, Boom, "apply's own error is rethrown")
      assert.strictEqual(read("agent/settings.json"), json({ v: 2 }))
      assert.isFalse(exists("agent/profiles/directories/new/settings.json"))
      const status = yield* history.status()
      assert.deepStrictEqual(status, { head, dirty: false, interrupted: null })
      assert.isFalse(fs.existsSync(NodePath.join(history.dir, ".pi-change.json")))
    }))

  it.scopedLive("a stale index.lock is removed only under our lock; a live holder's lock is waited for, then ConfigHistoryBusy", () =>
    Effect.gen(function*() {
      const { history, write } = yield* setup({ lockWaitMs: 300 })
      write("agent/settings.json", json({ v: 1 }))
      yield* history.snapshot()
      const indexLock = NodePath.join(history.dir, ".git", "index.lock")
      const ourLock = NodePath.join(history.dir, ".pi-history.lock")
      // A live writer of ours (this very process) holds the lock: the stale-looking index.lock is not touched.
      fs.writeFileSync(indexLock, "")
      fs.writeFileSync(ourLock, JSON.stringify({ version: 1, purpose: "config-history", host: os.hostname(), pid: process.pid, createdAt: Date.now() }))
      write("agent/settings.json", json({ v: 2 }))
      const busy = yield* Effect.flip(history.snapshot())
      assert.strictEqual(busy._tag, "ConfigHistoryBusy")
      assert.isTrue(fs.existsSync(indexLock), "kept while a live holder may be running git")
      // The holder dies (its lock now names a pid that is gone): the next writer reclaims both.
      // (With this boot's id, as a real lock records it: a missing pid proves death only on this very kernel.)
      const bootId = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
      fs.writeFileSync(ourLock, JSON.stringify({ version: 1, purpose: "config-history", host: os.hostname(), bootId, pid: 2 ** 22 + 7, createdAt: 1 }))
      const r = yield* history.snapshot({ message: "after a crash" })
      assert.isString(r.revision)
      assert.isFalse(fs.existsSync(indexLock))
      assert.isFalse(fs.existsSync(ourLock))
    }))

  it.scopedLive("the stat cache never hides a change: same-size in-place edits, new and removed files are seen", () =>
    Effect.gen(function*() {
      const { history, write, root, agent, web } = yield* setup()
      const past = (Date.now() - 3_600_000) / 1000
      for (const id of ["a", "b", "c"]) {
        write(`agent/profiles/directories/${id}/settings.json`, json({ v: 1 }))
        fs.utimesSync(NodePath.join(root, `agent/profiles/directories/${id}/settings.json`), past, past)
      }
      yield* history.snapshot()
      assert.isTrue(fs.existsSync(NodePath.join(history.dir, ".git", "pi-stat-cache.json")))
      assert.deepStrictEqual(yield* history.snapshot(), { revision: null, roots: { agentDir: agent, webDataRoot: web }, changed: [], skipped: [] })
      // Same size, same inode, written in place: only its mtime tells.
      const a = NodePath.join(root, "agent/profiles/directories/a/settings.json")
      const fd = fs.openSync(a, "r+")
      fs.writeSync(fd, json({ v: 2 }), 0)
      fs.closeSync(fd)
      assert.isTrue((yield* history.status()).dirty)
      assert.deepStrictEqual((yield* history.snapshot()).changed, ["profiles/directories/a/settings.json"])
      fs.rmSync(NodePath.join(root, "agent/profiles/directories/b"), { recursive: true })
      write("agent/profiles/directories/d/settings.json", json({ v: 1 }))
      assert.deepStrictEqual([...(yield* history.snapshot()).changed].sort(), ["profiles/directories/b/settings.json", "profiles/directories/d/settings.json"])
      // A commit made by hand (HEAD moves) invalidates the cache: the next snapshot compares contents, and puts
      // back the mirror copy a person edited (the live file, not the mirror, is what history records).
      rawGit(history.dir, ["-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "by hand"])
      const mirrorC = NodePath.join(history.dir, "agent/profiles/directories/c/settings.json")
      fs.writeFileSync(mirrorC, "edited mirror\n")
      assert.isNull((yield* history.snapshot()).revision)
      assert.strictEqual(fs.readFileSync(mirrorC, "utf8"), json({ v: 1 }))
      write("agent/profiles/directories/c/settings.json", json({ v: 3 }))
      assert.deepStrictEqual((yield* history.snapshot()).changed, ["profiles/directories/c/settings.json"])
    }))
})
