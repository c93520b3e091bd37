/**
 * Extension data at the default roots is protected (SPEC TD1, BK1, BK2), as a new user meets it: a fresh HOME,
 * no PI_* variable, a web-host extension and an agent extension writing through the tier API of the built
 * facade (`test/fixtures/extensionData.mjs`), then the default state snapshot and config snapshot through the
 * facade and through the built CLI. Each says which roots it covered; every verb that reads or writes
 * extension data takes `--web-data-root`. `npm test` builds `dist/` first.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildResult, runNode } from "../support/child.js"
import { scratchDirs } from "../support/scratchDirs.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const FIXTURE = fileURLToPath(new URL("../fixtures/extensionData.mjs", import.meta.url))
const scratch = scratchDirs()

/** The environment of a fresh user: HOME is `home`, no PI_* variable at all (the defaults are what is tested). */
const freshEnv = (home: string): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PI_") && k !== "NO_COLOR") env[k] = v
  return { ...env, HOME: home }
}

const freshHome = () => {
  const home = Path.join(scratch("pi-fresh-home-"), "home")
  Fs.mkdirSync(home)
  return home
}

const cli = (home: string, ...args: ReadonlyArray<string>): Promise<ChildResult> => runNode(MAIN, args, { env: freshEnv(home), cwd: home })
const fixture = async (home: string, mode: string) => {
  const r = await runNode(FIXTURE, [mode], { env: freshEnv(home), cwd: home })
  assert.strictEqual(r.code, 0, r.stderr)
  return JSON.parse(r.stdout)
}
const ok = (r: ChildResult) => {
  assert.strictEqual(r.code, 0, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`)
  return r
}

/** A file of a revision of the config history, read with plain git as a person would. */
const gitShow = (agentDir: string, revision: string, repoPath: string) =>
  execFileSync("git", ["--git-dir", Path.join(agentDir, "state", "backups", "config", "history", ".git"), "show", `${revision}:${repoPath}`], {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_SYSTEM: "/dev/null" }
  })

const readJson = (path: string) => JSON.parse(Fs.readFileSync(path, "utf8"))

beforeAll(() => {
  for (const f of [MAIN, Path.resolve(Path.dirname(FIXTURE), "../../dist/bundle/promise.mjs")]) {
    if (!Fs.existsSync(f)) throw new Error(`${f} is missing: run \`npm run build\` first (npm test does)`)
  }
})

describe("extension data at the default roots is protected (fresh HOME, no PI_* variable)", () => {
  it("the facade: both extensions' tier writes are in the default snapshot and the default config revision, which name their roots", async () => {
    const home = freshHome()
    const agentDir = Path.join(home, ".pi", "agent")
    const webDataRoot = Path.join(home, ".pi", "web", "data")
    const { snapshot, config, backupRoot } = await fixture(home, "protect")

    assert.deepStrictEqual([snapshot.scope.agentDir, snapshot.scope.webDataRoot], [agentDir, webDataRoot])
    assert.include(snapshot.scope.roots, "web/bookmarks/state")
    assert.include(snapshot.scope.roots, "agent/state")
    assert.strictEqual(snapshot.files, 2)
    const taken = Path.join(backupRoot, snapshot.id)
    assert.strictEqual(backupRoot, Path.join(home, ".pi", "backups", "agent"))
    assert.deepStrictEqual(readJson(Path.join(taken, "web", "bookmarks", "state", "history.json")), [{ url: "https://example.org/a" }])
    // The agent extension's state tier is inside the agent's state/: every snapshot holds it.
    assert.deepStrictEqual(readJson(Path.join(taken, "agent", "state", "extensions", "notes", "notes.json")), { notes: ["first"] })

    assert.deepStrictEqual(config.roots, { agentDir, webDataRoot })
    assert.isString(config.revision)
    assert.sameMembers(config.changed, ["bookmarks/config/settings.json", "config/extensions/notes/settings.json"])
    assert.deepStrictEqual(JSON.parse(gitShow(agentDir, config.revision, "web/bookmarks/config/settings.json")), { theme: "dark" })
    assert.deepStrictEqual(JSON.parse(gitShow(agentDir, config.revision, "agent/config/extensions/notes/settings.json")), { font: "mono" })
  })

  it("the CLI: backup create and config snapshot at the defaults hold both extensions and say which roots they covered", async () => {
    const home = freshHome()
    const agentDir = Path.join(home, ".pi", "agent")
    const webDataRoot = Path.join(home, ".pi", "web", "data")
    await fixture(home, "write")

    const created = ok(await cli(home, "backup", "create", "--json"))
    const result = JSON.parse(created.stdout)
    assert.strictEqual(result.files, 2)
    assert.deepStrictEqual([result.scope.agentDir, result.scope.webDataRoot], [agentDir, webDataRoot])
    const taken = Path.join(home, ".pi", "backups", "agent", result.id)
    assert.isTrue(Fs.existsSync(Path.join(taken, "web", "bookmarks", "state", "history.json")))
    assert.isTrue(Fs.existsSync(Path.join(taken, "agent", "state", "extensions", "notes", "notes.json")))
    const human = ok(await cli(home, "backup", "create"))
    // The two extension files, and the usage history the first snapshot recorded (state/usage-history.jsonl).
    assert.match(human.stdout, /^ {2}3 files \(/m)
    assert.isTrue(Fs.existsSync(Path.join(agentDir, "state", "usage-history.jsonl")))
    assert.include(human.stdout, `  covered: the agent dir ${agentDir}; the web data root ${webDataRoot} (1 extension: bookmarks)\n`)

    const snapped = ok(await cli(home, "config", "snapshot", "--json"))
    const revision = JSON.parse(snapped.stdout)
    assert.deepStrictEqual(revision.roots, { agentDir, webDataRoot })
    assert.sameMembers(revision.changed, ["bookmarks/config/settings.json", "config/extensions/notes/settings.json"])
    assert.deepStrictEqual(JSON.parse(gitShow(agentDir, revision.revision, "web/bookmarks/config/settings.json")), { theme: "dark" })
    const again = ok(await cli(home, "config", "snapshot"))
    assert.include(again.stdout, "Nothing changed.\n")
    assert.include(again.stdout, `Covered: the agent dir ${agentDir} (its config files and config/extensions/); every extension's config/ under the web data root ${webDataRoot}\n`)
  })

  it("every verb that reads or writes extension data takes --web-data-root, and covers that root", async () => {
    const home = freshHome()
    const other = Path.join(scratch("pi-other-web-"), "data")
    Fs.mkdirSync(Path.join(other, "todo", "state"), { recursive: true })
    Fs.writeFileSync(Path.join(other, "todo", "state", "items.json"), "[1]")
    Fs.mkdirSync(Path.join(other, "todo", "config"), { recursive: true })
    Fs.writeFileSync(Path.join(other, "todo", "config", "settings.json"), "{\"x\":1}\n")
    const flag = ["--web-data-root", other]

    const created = JSON.parse(ok(await cli(home, "backup", "create", ...flag, "--json")).stdout)
    assert.strictEqual(created.scope.webDataRoot, other)
    assert.deepStrictEqual(created.files, 1)
    // The verbs at once where they do not write the same thing (dry runs; the config snapshot writes only the
    // config history, which none of the backup verbs reads), to keep the file quick.
    const [listed, , , restoreRun, snapRun] = await Promise.all([
      cli(home, "backup", "list", ...flag, "--json"),
      cli(home, "backup", "verify", ...flag),
      cli(home, "backup", "forget", "--keep-last", "1", "--dry-run", ...flag),
      cli(home, "backup", "restore", created.id, "--dry-run", ...flag, "--json"),
      cli(home, "config", "snapshot", ...flag, "--json")
    ].map((r) => r.then(ok)))
    assert.strictEqual(JSON.parse(listed!.stdout)[0].scope.webDataRoot, other)
    assert.deepStrictEqual(JSON.parse(restoreRun!.stdout).restored, [Path.join(other, "todo", "state", "items.json")])
    const snap = JSON.parse(snapRun!.stdout)
    assert.deepStrictEqual([snap.roots.webDataRoot, snap.changed], [other, ["todo/config/settings.json"]])
    const [, , , doctorRun, statusRun] = await Promise.all([
      cli(home, "config", "status", ...flag),
      cli(home, "config", "log", ...flag),
      cli(home, "config", "diff", ...flag),
      cli(home, "doctor", ...flag, "--json"),
      cli(home, "status", ...flag, "--json")
    ].map((r) => r.then(ok)))
    // A write, so on its own: the readers above never meet a rollback half done.
    ok(await cli(home, "config", "rollback", snap.revision, ...flag))
    const doctor = JSON.parse(doctorRun!.stdout)
    assert.strictEqual(doctor.webDataRoot, other)
    const status = JSON.parse(statusRun!.stdout)
    assert.deepStrictEqual([status.webDataRoot, status.webDataRootSource, status.webExtensions.map((e: { extId: string }) => e.extId)], [other, "option", ["todo"]])
    // Nothing was written under the default root by any of them.
    assert.isFalse(Fs.existsSync(Path.join(home, ".pi", "web")))
  })
})
