/**
 * The config history's own files, read back as hostile input through the built CLI with real git: the web-root
 * record as a person would rewrite it, a damaged one (said by the doctor too), a change sentinel that cannot be
 * read or is a directory, and a history directory that is a file or a link. Each is a clear refusal or a clear
 * word, made before anything is committed, and the doctor says what the history would refuse.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

const fixture = () => {
  const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-cfg-damage-"))
  temps.push(base)
  const agent = Path.join(base, "agent")
  const web = Path.join(base, "web")
  const home = Path.join(base, "home")
  for (const d of [agent, home, Path.join(web, "notes", "config")]) Fs.mkdirSync(d, { recursive: true })
  Fs.writeFileSync(Path.join(agent, "settings.json"), "{\"theme\":\"dark\"}\n")
  Fs.writeFileSync(Path.join(web, "notes", "config", "settings.json"), "{\"a\":1}\n")
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, NO_COLOR: "1" }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete env["PI_WEB_DATA_DIR"]
  const cli = (...args: ReadonlyArray<string>) =>
    spawnSync(process.execPath, [MAIN, "--agent-dir", agent, ...args, ...(args[0] === "config" || args[0] === "doctor" ? ["--web-data-root", web] : [])], { encoding: "utf8", env })
  const history = Path.join(agent, "state", "backups", "config", "history")
  const head = () => execFileSync("git", ["-C", history, "rev-parse", "HEAD"], { encoding: "utf8" }).trim()
  return { base, agent, web, cli, history, head }
}

describe("config history: its own files as hostile input (built CLI, real git)", () => {
  it("the web-root record rewritten with a trailing slash names the same root; a damaged one is the doctor's finding too", () => {
    const { web, cli, history, head } = fixture()
    assert.strictEqual(cli("config", "snapshot", "-m", "one").status, 0)
    const first = head()
    Fs.writeFileSync(Path.join(web, "notes", "config", "settings.json"), "{\"a\":2}\n")
    assert.strictEqual(cli("config", "snapshot", "-m", "two").status, 0)
    const record = Path.join(history, ".git", "pi-web-root.json")
    // As a person writes it back, with a trailing slash: still this root, whose revisions it can roll back to.
    Fs.writeFileSync(record, JSON.stringify({ version: 1, webRoot: `${web}/` }))
    const back = cli("config", "rollback", first.slice(0, 12))
    assert.strictEqual(back.status, 0, back.stderr)
    assert.strictEqual(Fs.readFileSync(Path.join(web, "notes", "config", "settings.json"), "utf8"), "{\"a\":1}\n")
    // Damaged: refused by the history, and the doctor says why and what to write.
    Fs.writeFileSync(record, "{\"version\":1,")
    const before = head()
    const refused = cli("config", "snapshot", "--json")
    assert.strictEqual(refused.status, 1)
    assert.strictEqual((JSON.parse(refused.stderr) as { _tag: string })._tag, "ConfigHistoryCorrupt")
    assert.strictEqual(head(), before)
    const doctor = cli("doctor", "--json")
    assert.strictEqual(doctor.status, 1)
    const finding = (JSON.parse(doctor.stdout) as { findings: ReadonlyArray<{ code: string; path: string; message: string; fix?: string }> }).findings
      .find((f) => f.code === "config-history-damaged")!
    assert.strictEqual(finding.path, "state/backups/config/history/.git/pi-web-root.json")
    assert.match(finding.message, /does not read \(not valid JSON/)
    assert.include(finding.fix, `"webRoot"`)
    assert.include(finding.fix, record)
  }, 60_000)

  it("a sentinel that cannot be read says nothing is known of the change, not that the history was empty", () => {
    const { cli, history } = fixture()
    assert.strictEqual(cli("config", "snapshot", "-m", "one").status, 0)
    Fs.writeFileSync(Path.join(history, ".pi-change.json"), "")
    const status = cli("config", "status").stdout
    assert.include(status, "Its sentinel cannot be read: what it changed and the last good revision are unknown")
    assert.notInclude(status, "history was empty")
    const doctor = JSON.parse(cli("doctor", "--json").stdout) as { findings: ReadonlyArray<{ code: string; message: string; fix?: string }> }
    const found = doctor.findings.find((f) => f.code === "config-change-interrupted")!
    assert.match(found.message, /its sentinel cannot be read .*: what it changed and the last good revision are unknown$/)
    assert.notInclude(found.message, "history was empty")
    // Its suggested snapshot clears it.
    assert.strictEqual(cli("config", "snapshot").status, 0)
    assert.isFalse(Fs.existsSync(Path.join(history, ".pi-change.json")))
  }, 60_000)

  it("a directory where the sentinel belongs is refused before anything is committed, and the doctor says to move it", () => {
    const { web, cli, history, head } = fixture()
    assert.strictEqual(cli("config", "snapshot", "-m", "one").status, 0)
    Fs.mkdirSync(Path.join(history, ".pi-change.json"))
    Fs.writeFileSync(Path.join(web, "notes", "config", "settings.json"), "{\"a\":3}\n")
    const before = head()
    const refused = cli("config", "snapshot", "--json", "-m", "fix")
    assert.strictEqual(refused.status, 1)
    const error = JSON.parse(refused.stderr) as { _tag: string; message: string }
    assert.strictEqual(error._tag, "ConfigHistoryCorrupt")
    assert.include(error.message, ".pi-change.json is a directory where the change sentinel belongs")
    assert.strictEqual(head(), before, "nothing was committed")
    const doctor = JSON.parse(cli("doctor", "--json").stdout) as { findings: ReadonlyArray<{ code: string; message: string; fix?: string }> }
    assert.include(doctor.findings.find((f) => f.code === "config-change-interrupted")!.fix, "move it away by hand")
    Fs.rmdirSync(Path.join(history, ".pi-change.json"))
    assert.strictEqual(cli("config", "snapshot", "-m", "fix").status, 0)
  }, 60_000)

  it("a history directory (or its .git) that is a file, or a link to a directory, is refused naming it, never read or written through", () => {
    const { base, cli, history } = fixture()
    Fs.mkdirSync(Path.dirname(history), { recursive: true })
    Fs.writeFileSync(history, "x")
    for (const shape of ["file", "link"]) {
      const refused = cli("config", "snapshot", "--json")
      assert.strictEqual(refused.status, 1, shape)
      const error = JSON.parse(refused.stderr) as { _tag: string; message: string }
      assert.strictEqual(error._tag, "ConfigHistoryCorrupt", shape)
      assert.include(error.message, `${history} is ${shape === "file" ? "a regular file" : "a symlink"}, where the config history keeps its repository`)
      assert.notInclude(error.message, "pi-web-root.json")
      Fs.rmSync(history)
      const elsewhere = Path.join(base, "elsewhere")
      Fs.mkdirSync(elsewhere, { recursive: true })
      Fs.symlinkSync(elsewhere, history)
    }
    assert.deepStrictEqual(Fs.readdirSync(Path.join(base, "elsewhere")), [], "nothing written through the link")
    // The history's .git a file: refused naming it, and the doctor's finding.
    Fs.rmSync(history)
    Fs.mkdirSync(history)
    Fs.writeFileSync(Path.join(history, ".git"), "gitdir: /nowhere\n")
    const refused = JSON.parse(cli("config", "snapshot", "--json").stderr) as { _tag: string; message: string }
    assert.strictEqual(refused._tag, "ConfigHistoryCorrupt")
    assert.include(refused.message, `${Path.join(history, ".git")} is a regular file, where the config history keeps its repository`)
    const doctor = JSON.parse(cli("doctor", "--json").stdout) as { findings: ReadonlyArray<{ code: string; path: string; message: string }> }
    assert.deepStrictEqual(doctor.findings.filter((f) => f.code === "config-history-damaged").map((f) => f.path), ["state/backups/config/history/.git"])
  }, 60_000)

  it("a web data root overlapping the history where it is walked is refused: its snapshots would copy the history into itself", () => {
    const { agent, cli, history } = fixture()
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" }
    // `state/` walks `backups/config/`, the history; a root inside the history would walk its mirrors.
    for (const root of [Path.join(agent, "state"), Path.join(history, "web")]) {
      const r = spawnSync(process.execPath, [MAIN, "--agent-dir", agent, "config", "snapshot", "--json", "--web-data-root", root], { encoding: "utf8", env })
      assert.strictEqual(r.status, 2, r.stderr)
      const error = JSON.parse(r.stderr) as { _tag: string; message: string }
      assert.strictEqual(error._tag, "InvalidArgument")
      assert.include(error.message, `the web data root ${root} and the config history (${history}) overlap`)
    }
    // The agent dir as a web data root walks no history (its `<x>/config/` are not it): allowed.
    const agentAsRoot = spawnSync(process.execPath, [MAIN, "--agent-dir", agent, "config", "diff", "--web-data-root", agent], { encoding: "utf8", env })
    assert.strictEqual(agentAsRoot.status, 0, agentAsRoot.stderr)
    // Nothing was made of it; the right root works.
    assert.strictEqual(cli("config", "snapshot").status, 0)
  }, 60_000)

  it("a web data root reached through a chain of links: re-pointing a link in the middle is seen by the CLI's clean-scan answer", () => {
    const { base, agent } = fixture()
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", HOME: Path.join(base, "home") }
    delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
    delete env["PI_WEB_DATA_DIR"]
    for (const [dir, a] of [["r1", 1], ["r2", 2]] as const) {
      Fs.mkdirSync(Path.join(base, dir, "notes", "config"), { recursive: true })
      Fs.writeFileSync(Path.join(base, dir, "notes", "config", "settings.json"), `{"a":${a}}\n`)
    }
    const named = Path.join(base, "named")
    Fs.symlinkSync(Path.join(base, "middle"), named)
    Fs.symlinkSync(Path.join(base, "r1"), Path.join(base, "middle"))
    const snapshot = () => spawnSync(process.execPath, [MAIN, "--agent-dir", agent, "config", "snapshot", "--web-data-root", named], { encoding: "utf8", env })
    assert.match(snapshot().stdout, /^Saved /)
    // Unchanged twice: the second answer may come from the clean scan.
    assert.match(snapshot().stdout, /^Nothing changed\./)
    assert.match(snapshot().stdout, /^Nothing changed\./)
    Fs.rmSync(Path.join(base, "middle"))
    Fs.symlinkSync(Path.join(base, "r2"), Path.join(base, "middle"))
    const after = snapshot()
    assert.match(after.stdout, /^Saved [0-9a-f]{12}: 1 file changed/, after.stderr)
  }, 60_000)
})
