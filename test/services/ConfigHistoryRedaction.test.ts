/**
 * No literal credential in any object of any revision, whatever the file's format (SPEC BK1, docs/config-history.md "Config
 * history"), with real git: an extension config tier holding one file per format the history reads, with
 * credentials, snapshotted, rotated, snapshotted and rolled back; then every object git holds (commits, trees,
 * blobs of every revision: `rev-list --objects --all` + `cat-file --batch`) and `log -p` are searched for them.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { REDACTED } from "../../src/domain/ConfigHistory.js"
import { UnresolvedSecret } from "../../src/domain/ReportProblems.js"
import { cleanGitEnv, rawGit, setup } from "./configHistorySupport.js"

/** Every object git holds, by `cat-file --batch` over `rev-list --objects --all` (commits, trees, blobs). */
const everyObject = (historyDir: string): string => {
  const ids = rawGit(historyDir, ["rev-list", "--objects", "--all"]).split("\n").map((l) => l.split(" ")[0]!).filter((id) => id !== "")
  assert.isAbove(ids.length, 0)
  return execFileSync("git", ["cat-file", "--batch"], { cwd: historyDir, env: cleanGitEnv(), input: ids.join("\n") + "\n", maxBuffer: 64 << 20 }).toString("latin1")
}

/** One config file per format, its credentials numbered by `n` (a rotation changes them), its plain values by `v`. */
const tier = (n: number, v: string): Record<string, string> => ({
  "settings.json": JSON.stringify({
    registry: { auth: `SEKRET-JSON-AUTH-${n}` },
    smtp: { user: "me", pass: `SEKRET-JSON-PASS-${n}` },
    provider: { key: `SEKRET-JSON-KEY-${n}`, sessionKey: `SEKRET-JSON-SESSION-${n}`, model: v },
    bank: { password: 90210417 + n },
    database: `postgres://app:SEKRET-JSON-URL-${n}@db.example/app`,
    mcp: { args: ["-y", "server", "--token", `SEKRET-JSON-ARG-${n}`, `--api-key=SEKRET-JSON-ARGEQ-${n}`] },
    theme: v
  }, null, 2) + "\n",
  "editor.jsonc": `{\n  // the editor\n  "apiKey": "SEKRET-JSONC-${n}", /* rotated monthly */\n  "theme": "${v}",\n}\n`,
  "editor.json5": `{\n  // the editor\n  token: 'SEKRET-JSON5-${n}',\n  theme: '${v}',\n}\n`,
  "server.yaml": `# the server\nserver:\n  apiKey: SEKRET-YAML-${n} # from the console\n  url: https://admin:SEKRET-YAML-URL-${n}@example.org/x\n  theme: ${v}\nargs:\n  - --password\n  - SEKRET-YAML-ARG-${n}\n`,
  "server.toml": `# the server\n[server]\ntoken = "SEKRET-TOML-${n}" # rotated\ntheme = "${v}"\n\n[db]\npassword = 'SEKRET-TOML-PW-${n}'\n`,
  "db.ini": `; the database\n[db]\nuser = me\npassword = SEKRET-INI-${n}\ntheme = ${v}\n`,
  ".npmrc": `//registry.npmjs.org/:_authToken=SEKRET-NPMRC-${n}\nregistry=https://registry.npmjs.org/\ntheme=${v}\n`,
  "prod.env": `# production\nexport OPENAI_API_KEY=SEKRET-ENV-${n}\nDATABASE_URL="postgres://app:SEKRET-ENV-URL-${n}@db/app"\nTHEME=${v}\n`
})

describe("ConfigHistory redaction across formats (real git)", () => {
  it.scopedLive("no literal credential in any object of any revision; a rollback keeps the live credentials", () =>
    Effect.gen(function*() {
      const { history, write, read, root } = yield* setup({ web: true })
      const config = (name: string) => `web/ext1/config/${name}`
      for (const [name, text] of Object.entries(tier(1, "dark"))) write(config(name), text)
      // A file of no known format: kept when no line holds a credential, skipped (with the reason) when one does.
      write(config("notes.txt"), "remember to rotate\n")
      write(config("legacy.conf"), "# old\nsecretKey = SEKRET-CONF-1\n")
      const first = yield* history.snapshot({ message: "first" })
      assert.isString(first.revision)
      assert.sameMembers([...first.changed], [...Object.keys(tier(1, "dark")), "notes.txt"].map((n) => `ext1/config/${n}`))
      assert.deepStrictEqual(first.skipped, [{
        _tag: "Unredactable",
        path: "ext1/config/legacy.conf",
        reason: "line 2 holds what looks like a credential (secretKey = …), and a file of no known format cannot be redacted",
        message: "ext1/config/legacy.conf: line 2 holds what looks like a credential (secretKey = …), and a file of no known format cannot be redacted"
      }])
      // Comments and layout stay: only the values changed.
      assert.strictEqual(
        fs.readFileSync(NodePath.join(history.dir, "web/ext1/config/server.toml"), "utf8"),
        `# the server\n[server]\ntoken = "${REDACTED}" # rotated\ntheme = "dark"\n\n[db]\npassword = "${REDACTED}"\n`
      )

      // Rotated credentials and a new theme, then a rollback to the first revision.
      for (const [name, text] of Object.entries(tier(2, "light"))) write(config(name), text)
      yield* history.snapshot({ message: "rotated" })
      for (const [name, text] of Object.entries(tier(3, "light"))) write(config(name), text)
      const back = yield* history.rollback(first.revision!)
      assert.sameMembers([...back.restored], Object.keys(tier(1, "dark")).map((n) => `ext1/config/${n}`))
      assert.deepStrictEqual(back.unresolvedSecrets, [])
      assert.deepStrictEqual(back.skipped, [])
      // The first revision's values with the live (third) credentials, byte for byte: every format merges back.
      for (const [name, text] of Object.entries(tier(3, "dark"))) {
        // The JSON file's number was redacted too: the live number is what comes back.
        assert.strictEqual(read(config(name)), text, name)
      }

      // A redacted value with no live value: a YAML file is left as it is (and said so); JSON leaves the key out.
      write(config("server.yaml"), "server:\n  theme: blue\n")
      write(config("settings.json"), JSON.stringify({ theme: "blue" }) + "\n")
      const again = yield* history.rollback(first.revision!)
      assert.strictEqual(read(config("server.yaml")), "server:\n  theme: blue\n")
      assert.deepStrictEqual(again.skipped.map((s) => [s._tag, s.path]), [["SecretsNotRestored", "ext1/config/server.yaml"]])
      assert.match(again.skipped[0]!.reason, /^the revision's copy holds redacted credentials that have no live value to merge back \(\/server\/apiKey, \/server\/url, \/args\/1\)/)
      // Each left-out key is a typed value naming the file and the JSON pointer (not a string to parse).
      assert.includeDeepMembers([...again.unresolvedSecrets], [
        { _tag: "SecretLeftOut", path: "ext1/config/settings.json", pointer: "/registry/auth", message: "ext1/config/settings.json#/registry/auth: a redacted secret with no live value; its key was left out" },
        { _tag: "SecretLeftOut", path: "ext1/config/settings.json", pointer: "/bank/password", message: "ext1/config/settings.json#/bank/password: a redacted secret with no live value; its key was left out" }
      ])
      for (const s of again.unresolvedSecrets) assert.isTrue(Schema.is(UnresolvedSecret)(s), JSON.stringify(s))
      const json = JSON.parse(read(config("settings.json")))
      assert.deepStrictEqual(json.smtp, { user: "me" })
      assert.strictEqual(json.theme, "dark")
      assert.notInclude(read(config("settings.json")), REDACTED)

      // Every object of every revision, and every patch git shows.
      const objects = everyObject(history.dir)
      assert.notMatch(objects, /SEKRET/)
      for (const n of [1, 2, 3]) assert.notInclude(objects, String(90210417 + n))
      assert.include(objects, REDACTED, "the search does see the stored files")
      assert.include(objects, "registry.npmjs.org", "and their plain values")
      const patches = rawGit(history.dir, ["log", "-p", "--all", "--no-color"])
      assert.notMatch(patches, /SEKRET/)
      assert.include(patches, "theme")
      // The live secrets are untouched by all this, and the unredactable file never left the disk.
      assert.include(fs.readFileSync(NodePath.join(root, config("legacy.conf")), "utf8"), "SEKRET-CONF-1")
      assert.include(read(config(".npmrc")), "SEKRET-NPMRC-3")
    }))

  it.scopedLive("a rollback leaves a live file that history could not record (a credential in a comment) as it is", () =>
    Effect.gen(function*() {
      const { history, write, read } = yield* setup({ web: true })
      write("web/ext1/config/server.yaml", "server:\n  theme: dark\n")
      const first = yield* history.snapshot()
      // A live edit history cannot store: the snapshot before the rollback skips it, so writing over it would lose it.
      const edited = "# old key: apiKey = sk-SEKRET-COMMENT\nserver:\n  theme: light\n  fonts: [mono]\n"
      write("web/ext1/config/server.yaml", edited)
      const back = yield* history.rollback(first.revision!)
      assert.strictEqual(read("web/ext1/config/server.yaml"), edited)
      assert.deepStrictEqual(back.restored, [])
      assert.deepStrictEqual(back.skipped.map((s) => [s._tag, s.path]), [["Unredactable", "ext1/config/server.yaml"]])
      assert.match(back.skipped[0]!.reason, /^not in history \(line 1 holds what looks like a credential \(apiKey = …\) outside a value/)
      assert.notInclude(back.skipped[0]!.reason, "SEKRET")
    }))

  it.scopedLive("a copy stored under an older rule is stored again, though the stat cache vouches for the file", () =>
    Effect.gen(function*() {
      const { history, write, root } = yield* setup({ web: true })
      const live = NodePath.join(root, "web/ext1/config/server.yaml")
      write("web/ext1/config/server.yaml", "server:\n  key: SEKRET-OLD-RULE\n")
      const past = (Date.now() - 3_600_000) / 1000
      fs.utimesSync(live, past, past)
      yield* history.snapshot()
      // What an older rule stored: the file as it was (YAML was not redacted), committed, with its stat cache.
      const mirror = NodePath.join(history.dir, "web/ext1/config/server.yaml")
      fs.writeFileSync(mirror, fs.readFileSync(live))
      rawGit(history.dir, ["-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-am", "older rule"])
      const cachePath = NodePath.join(history.dir, ".git", "pi-stat-cache.json")
      const { rule: _rule, ...older } = JSON.parse(fs.readFileSync(cachePath, "utf8"))
      const head = rawGit(history.dir, ["rev-parse", "HEAD"]).trim()
      fs.writeFileSync(cachePath, JSON.stringify({ ...older, head }))
      const r = yield* history.snapshot({ message: "under the current rule" })
      assert.deepStrictEqual(r.changed, ["ext1/config/server.yaml"])
      assert.notInclude(rawGit(history.dir, ["show", "HEAD:web/ext1/config/server.yaml"]), "SEKRET")
      assert.strictEqual(fs.readFileSync(mirror, "utf8"), `server:\n  key: "${REDACTED}"\n`)
    }))
})
