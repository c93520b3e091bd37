/**
 * `pi-storage work prune --all`'s Total line counts the tenants it pruned: a busy tenant (another pruner's
 * marker, here an empty `.prune` a killed pruner left, held while fresh) is counted as busy, not among the
 * tenants pruned. The built CLI (`npm run build`) on real files, text and `--json`.
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

describe("work prune --all: the Total line (built CLI)", () => {
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
