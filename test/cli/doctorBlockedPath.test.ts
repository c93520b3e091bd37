/**
 * A regular file where the config history's directory belongs, through the built CLI on real files: the
 * doctor names that file (`library-path-blocked`) and suggests no `config snapshot` (which cannot work
 * there), and `status` counts the same findings.
 */
import { spawnSync } from "node:child_process"
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

const cli = (home: string, ...args: ReadonlyArray<string>) => {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home }
  for (const name of Object.keys(env)) if (name.startsWith("PI_")) delete env[name]
  return spawnSync(process.execPath, [MAIN, ...args], { env, encoding: "utf8" })
}

describe("doctor: an entry in the way of the config history (built CLI)", () => {
  it("a regular file named state: its kind mismatch alone, and one entry counted as one", () => {
    const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-blocked-"))
    temps.push(home)
    Fs.mkdirSync(Path.join(home, ".pi", "agent"), { recursive: true })
    Fs.writeFileSync(Path.join(home, ".pi", "agent", "state"), "x")
    const human = cli(home, "doctor")
    assert.strictEqual(human.status, 1, human.stderr)
    assert.include(human.stdout, "(1 entry).")
    assert.include(human.stdout, "canonical-kind-mismatch")
    assert.notInclude(human.stdout, "user-profile-unsafe")
    assert.notInclude(human.stdout, "config-change-interrupted")
  })

  it("names the file in the way, suggests nothing that fails, and status agrees", () => {
    const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-blocked-"))
    temps.push(home)
    const history = Path.join(home, ".pi", "agent", "state", "backups", "config", "history")
    Fs.mkdirSync(Path.dirname(history), { recursive: true })
    Fs.writeFileSync(history, "not a directory\n")

    const json = cli(home, "doctor", "--json")
    assert.strictEqual(json.status, 1, json.stderr)
    const findings = (JSON.parse(json.stdout) as { findings: ReadonlyArray<{ code: string; path: string; fix?: string }> }).findings
    assert.deepStrictEqual(findings.map((f) => [f.code, f.path]), [["library-path-blocked", "state/backups/config/history"]])

    const human = cli(home, "doctor")
    assert.include(human.stdout, "a regular file where the config history keeps a directory")
    assert.notInclude(human.stdout, "config snapshot")
    assert.notInclude(human.stdout, "ENOTDIR")

    const status = cli(home, "status", "--json")
    assert.strictEqual(status.status, 0, status.stderr)
    assert.strictEqual((JSON.parse(status.stdout) as { doctor: { findings: number } }).doctor.findings, 1)
    // Nothing was changed by either.
    assert.strictEqual(Fs.readFileSync(history, "utf8"), "not a directory\n")
  })
})
