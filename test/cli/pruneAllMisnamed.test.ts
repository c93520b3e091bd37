/**
 * `pi-storage work prune --all` beside directories whose names the library never makes (WR2): `status` lists
 * them, so the prune names each as not pruned (a line; `notPruned` in `--json`; exit 3) and touches nothing
 * under them, never passing over them in silence; its Total line counts the tenants it pruned, not those
 * refused or busy (an empty `.prune` a killed pruner left, held while fresh). The built CLI (`npm run build`)
 * on real files.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { openAgentStorage } from "../../src/promise.js"
import { runNode } from "../support/child.js"
import { scratchDirs } from "../support/scratchDirs.js"

const CLI = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const scratch = scratchDirs()

const cli = (args: ReadonlyArray<string>) => {
  const env = { ...process.env }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete env["NO_COLOR"]
  return runNode(CLI, args, { env })
}

describe("work prune --all: misnamed directories and the Total line (built CLI)", () => {
  it("a category or tenant directory with a name the library never makes is reported as not pruned (line, --json, exit 3), and left as it is", async () => {
    const agent = Path.join(scratch("pi-prune-misnamed-"), "agent")
    const storage = await openAgentStorage({ agentDir: agent, migrate: false })
    const run = await storage.acquireWorkRun({ category: "tools", tenant: "good", retention: false })
    await run.release()
    await storage.close()
    const work = Path.join(agent, "work")
    for (const dir of ["tools/Bad_Name", "Tools/x"]) {
      Fs.mkdirSync(Path.join(work, dir), { recursive: true, mode: 0o700 })
      Fs.writeFileSync(Path.join(work, dir, "keep.txt"), "someone's")
    }
    Fs.chmodSync(Path.join(work, "Tools"), 0o700)
    const status = await cli(["--agent-dir", agent, "status"])
    assert.match(status.stdout, /^tools\/Bad_Name\s/m, "status lists it")

    const human = await cli(["--agent-dir", agent, "work", "prune", "--all", "--max-runs", "0"])
    assert.strictEqual(human.code, 3, human.stderr)
    assert.match(human.stdout, /^tools\/Bad_Name: not pruned: tenant tools\/Bad_Name \(.*\) is no directory the library makes: its name must be lowercase/m)
    assert.match(human.stdout, /^Tools\/\*: not pruned: category Tools \(.*\) is no directory the library makes: its name must be lowercase/m)
    assert.match(human.stdout, /^tools\/good: removed 1 run/m)
    // The refused directories are counted as refused, not as tenants pruned.
    assert.match(human.stdout, /^Total: removed 1 run .* in 1 tenant; kept 0, active 0; 2 refused\.$/m)

    const json = await cli(["--agent-dir", agent, "work", "prune", "--all", "--dry-run", "--json"])
    assert.strictEqual(json.code, 3, json.stderr)
    const doc = JSON.parse(json.stdout) as { tenants: Array<{ category: string; tenant: string; notPruned?: { _tag: string; path: string } }>; total: { refused: number; tenants: number } }
    assert.deepStrictEqual(
      doc.tenants.filter((t) => t.notPruned !== undefined).map((t) => [t.category, t.tenant, t.notPruned!._tag, t.notPruned!.path]),
      [["Tools", "*", "MisnamedDirectory", Path.join(work, "Tools")], ["tools", "Bad_Name", "MisnamedDirectory", Path.join(work, "tools/Bad_Name")]]
    )
    assert.deepStrictEqual([doc.total.refused, doc.total.tenants], [2, 1])
    for (const dir of ["tools/Bad_Name", "Tools/x"]) assert.strictEqual(Fs.readFileSync(Path.join(work, dir, "keep.txt"), "utf8"), "someone's")
  }, 60_000)

  it("a busy tenant is counted as busy, not among the tenants pruned", async () => {
    const agent = Path.join(scratch("pi-prune-total-"), "agent")
    const storage = await openAgentStorage({ agentDir: agent, migrate: false })
    for (const tenant of ["one", "two"]) await (await storage.acquireWorkRun({ category: "tools", tenant, retention: false })).release()
    await storage.close()
    Fs.writeFileSync(Path.join(agent, "work", "tools", "two", ".prune"), "")

    const human = await cli(["--agent-dir", agent, "work", "prune", "--all", "--max-runs", "0"])
    assert.match(human.stdout, /^tools\/one: removed 1 run/m, human.stderr)
    assert.match(human.stdout, /^Total: removed 1 run .* in 1 tenant; kept 0, active 0; 1 busy\.$/m, human.stdout)

    // (A dry run takes no marker, so it is never busy: the JSON of a second real prune.)
    const json = await cli(["--agent-dir", agent, "work", "prune", "--all", "--max-runs", "0", "--json"])
    const doc = JSON.parse(json.stdout) as { tenants: Array<{ tenant: string; report?: { busy: boolean } }>; total: { tenants: number; busy: number } }
    assert.deepStrictEqual(doc.tenants.map((t) => [t.tenant, t.report?.busy]), [["one", false], ["two", true]])
    assert.deepStrictEqual([doc.total.tenants, doc.total.busy], [1, 1])
  }, 60_000)
})
