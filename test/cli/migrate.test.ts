/**
 * `pi-storage migrate` on a real agent dir that is a symlink (the user keeps ~/.pi/agent on another disk),
 * through the built CLI: the dry run lists exactly the decisions the real run then executes (issue 14: it
 * used to say "nothing to do" while `migrate` moved files).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { runNode } from "../support/child.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

const env = (): NodeJS.ProcessEnv => {
  const e = { ...process.env }
  delete e["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  e["NO_COLOR"] = "1"
  return e
}
const cli = (agentDir: string, ...args: ReadonlyArray<string>) => runNode(MAIN, ["--agent-dir", agentDir, ...args], { env: env() })

const write = (root: string, rel: string, content: string) => {
  Fs.mkdirSync(Path.dirname(Path.join(root, rel)), { recursive: true })
  Fs.writeFileSync(Path.join(root, rel), content)
}

describe("pi-storage migrate on a symlinked agent dir (Node, temp dirs)", () => {
  it("--dry-run lists the decisions migrate then executes, one for one, through the link", async () => {
    const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-migrate-"))
    temps.push(base)
    const real = Path.join(base, "disk", "agent")
    const link = Path.join(base, "home", "agent")
    write(real, "trust.json", `{"/a":true,"/b":false}`)
    write(real, "state/trust.json", `{"/b":true}`)
    write(real, "backups/same.json", "same")
    write(real, "state/backups/config/same.json", "same")
    write(real, "backups/diff.json", "legacy")
    write(real, "state/backups/config/diff.json", "canonical")
    write(real, "backups/only/x", "x")
    write(real, "tmp/scratch", "scratch")
    write(real, "settings.json", "{}")
    Fs.mkdirSync(Path.dirname(link), { recursive: true })
    Fs.symlinkSync(real, link)

    const dry = await cli(link, "migrate", "--dry-run", "--json")
    assert.strictEqual(dry.code, 0, dry.stderr)
    const plan = JSON.parse(dry.stdout)
    assert.deepStrictEqual([plan.exists, plan.notADirectory, plan.partial], [true, null, false])
    assert.deepStrictEqual(plan.decisions.map((d: any) => [d.action, d.from, d.to]), [
      ["merge-directory", "backups", "state/backups/config"],
      ["preserve-conflict", "backups/diff.json", "state/migration-conflicts/backups/diff.json"],
      ["move", "backups/only", "state/backups/config/only"],
      ["remove-duplicate", "backups/same.json", "state/backups/config/same.json"],
      ["move", "tmp", "state/legacy-layout/tmp"],
      ["merge-json", "trust.json", "state/trust.json"],
      ["preserve-conflict", "trust.json", "state/migration-conflicts/trust.json"]
    ])
    const human = await cli(link, "migrate", "--dry-run")
    assert.strictEqual(human.code, 0, human.stderr)
    assert.match(human.stdout, /^ {2}move\s+tmp → state\/legacy-layout\/tmp$/m)
    // The dry run changed nothing.
    assert.isTrue(Fs.existsSync(Path.join(real, "trust.json")))
    assert.isTrue(Fs.lstatSync(link).isSymbolicLink())

    const run = await cli(link, "migrate", "--json")
    assert.strictEqual(run.code, 0, run.stderr)
    const report = JSON.parse(run.stdout)
    assert.deepStrictEqual(report.errors, [])
    assert.deepStrictEqual(report.decisions.map(({ outcome, ...d }: any) => d), plan.decisions)
    assert.deepStrictEqual(report.decisions.map((d: any) => d.outcome), plan.decisions.map(() => "done"))
    // Executed in the link's target; the link itself is left as it is.
    assert.isTrue(Fs.lstatSync(link).isSymbolicLink())
    assert.deepStrictEqual(Fs.readdirSync(real).sort(), ["settings.json", "state"])
    assert.strictEqual(Fs.readFileSync(Path.join(real, "state/legacy-layout/tmp/scratch"), "utf8"), "scratch")
    assert.strictEqual(Fs.readFileSync(Path.join(real, "state/migration-conflicts/backups/diff.json"), "utf8"), "legacy")
    assert.deepStrictEqual(JSON.parse(Fs.readFileSync(Path.join(real, "state/trust.json"), "utf8")), { "/a": true, "/b": true })

    const after = await cli(link, "migrate", "--dry-run")
    assert.strictEqual(after.stdout, "Nothing to migrate: the layout is current.\n")
  })
})
