/**
 * `pi-storage config …` through the built CLI (the shipped bundle `node dist/bundle/cli/main.mjs`) as a child process, against temp agent dirs.
 */
import { runNode } from "../support/child.js"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { renderPatch, renderRollback } from "../../src/cli/commands/config.js"
import { painter } from "../../src/cli/format.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[/

/** The CLI with no agent dir in the environment; the web data root `$PI_WEB_DATA_DIR` is `web` when given. */
const cli = (args: ReadonlyArray<string>, web?: string) => {
  const env = { ...process.env }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  if (web !== undefined) env["PI_WEB_DATA_DIR"] = web
  return runNode(MAIN, args, { env })
}

const temps: Array<string> = []
afterAll(() => {
  for (const t of temps) Fs.rmSync(t, { recursive: true, force: true })
})

describe("pi-storage config (built CLI)", () => {
  it("status, snapshot -m, log --limit, diff, rollback: text and --json, exit codes", async () => {
    const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-config-"))
    temps.push(root)
    const agent = Path.join(root, "agent")
    const web = Path.join(root, "web")
    Fs.mkdirSync(Path.join(web, "notes", "config"), { recursive: true })
    Fs.mkdirSync(agent)
    Fs.writeFileSync(Path.join(agent, "settings.json"), '{ "theme": "dark" }\n')
    Fs.writeFileSync(Path.join(agent, "auth.json"), '{ "k": "SEKRET" }\n')
    Fs.writeFileSync(Path.join(web, "notes", "config", "prefs.json"), '{ "font": 12 }\n')
    // Every call covers the same web data root (history versions the root in use): the flag on the first
    // snapshot, the environment on the rest.
    const at = (...args: ReadonlyArray<string>) => cli(["--agent-dir", agent, "config", ...args], web)

    const fresh = await at("status", "--json")
    assert.strictEqual(fresh.code, 0, fresh.stderr)
    assert.deepStrictEqual(JSON.parse(fresh.stdout), { head: null, dirty: true, interrupted: null })

    const snap = await at("snapshot", "-m", "first", "--web-data-root", web)
    assert.strictEqual(snap.code, 0, snap.stderr)
    assert.match(snap.stdout, /^Saved [0-9a-f]{12}: 2 files changed\n  settings.json\n  notes\/config\/prefs.json\n/)
    assert.include(snap.stdout, "auth.json: credentials: never versioned")
    assert.notMatch(snap.stdout, ANSI)

    Fs.writeFileSync(Path.join(agent, "settings.json"), '{ "theme": "light" }\n')
    const diff = await at("diff")
    assert.strictEqual(diff.code, 0, diff.stderr)
    assert.include(diff.stdout, "diff --git a/settings.json b/settings.json")
    assert.include(diff.stdout, '+{ "theme": "light" }')
    const second = JSON.parse((await at("snapshot", "--json", "-m", "light")).stdout)
    assert.deepStrictEqual(second.changed, ["settings.json"])

    // Independent reads at once, to keep the file quick.
    const [log, text] = await Promise.all([at("log", "--json", "--limit", "5"), at("log", "--limit", "1")])
    const entries = JSON.parse(log.stdout) as Array<{ revision: string; message: string }>
    assert.deepStrictEqual(entries.map((e) => e.message), ["light", "first"])
    assert.match(text.stdout, /^REVISION +DATE +FILES +MESSAGE\n[0-9a-f]{12} +\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ +1 +light\n$/)
    const [betweenOut, unknown, bare, help] = await Promise.all([
      at("diff", entries[1]!.revision, entries[0]!.revision, "--json"),
      at("rollback", "deadbeef"),
      cli(["--agent-dir", agent, "config"], web),
      at("snapshot", "--help")
    ])
    assert.deepStrictEqual(JSON.parse(betweenOut.stdout).files, ["settings.json"])
    assert.strictEqual(unknown.code, 2)
    assert.match(unknown.stderr, /unknown config history revision "deadbeef"/)
    assert.strictEqual(bare.code, 2)
    assert.match(help.stdout, /default: "snapshot"; e\.g\. -m/)

    const back = await at("rollback", entries[1]!.revision.slice(0, 12))
    assert.strictEqual(back.code, 0, back.stderr)
    assert.match(back.stdout, /^Rolled back to [0-9a-f]{12} as [0-9a-f]{12}: 1 file restored, 0 removed\n  restored  settings.json\n$/)
    assert.strictEqual(Fs.readFileSync(Path.join(agent, "settings.json"), "utf8"), '{ "theme": "dark" }\n')
    assert.strictEqual(Fs.readFileSync(Path.join(agent, "auth.json"), "utf8"), '{ "k": "SEKRET" }\n')

  }, 60_000)

  it("a rollback names every path it left alone, with why", () => {
    const r = {
      revision: "b".repeat(40),
      restored: ["settings.json"],
      removed: [],
      unresolvedSecrets: [{ _tag: "SecretLeftOut" as const, path: "settings.json", pointer: "/auth/token", message: "settings.json#/auth/token: a redacted secret with no live value; its key was left out" }],
      skipped: [{ _tag: "PathBlocked" as const, path: "notes/config/sub/x.json", reason: "notes/config/sub is a symlink on the way (never written through)", message: "notes/config/sub/x.json: notes/config/sub is a symlink on the way (never written through)" }]
    }
    assert.strictEqual(
      renderRollback(painter(false), "a".repeat(40), r).text,
      `Rolled back to aaaaaaaaaaaa as bbbbbbbbbbbb: 1 file restored, 0 removed\n  restored  settings.json\n` +
        `  left out  settings.json#/auth/token (a redacted secret with no live value)\n` +
        `  skipped   notes/config/sub/x.json: notes/config/sub is a symlink on the way (never written through)\n`
    )
  })

  it("the diff is coloured only when painting is on (a TTY)", () => {
    const d = { files: ["s.json"], patch: "diff --git a/s.json b/s.json\n@@ -1 +1 @@\n-old\n+new\n" }
    assert.strictEqual(renderPatch(painter(false), d).text, d.patch)
    const coloured = renderPatch(painter(true), d).text
    assert.include(coloured, "\u001b[32m+new\u001b[39m")
    assert.include(coloured, "\u001b[31m-old\u001b[39m")
    assert.include(coloured, "\u001b[36m@@ -1 +1 @@\u001b[39m")
    assert.strictEqual(renderPatch(painter(true), { files: [], patch: "" }).text, "No differences.\n")
  })
})
