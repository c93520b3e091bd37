/**
 * One agent dir for every reader (docs/architecture.md "Architecture"): a symlinked agent dir (`~/.pi/agent -> /other/disk/agent`). AgentDir resolves the
 * link once, so every reader sees the target: Inventory's summary and listRuns (real files, Node layer, a
 * real symlink) and `pi-storage status` (the built CLI) list the target's runs and report the link, where
 * they used to say "does not exist".
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as NodeWorld from "../../src/layers/NodeWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { Inventory } from "../../src/services/Inventory.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { runNode } from "../support/child.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

/** `<base>/disk/agent` holds one released run of tools/bash; `<base>/home/agent` is a symlink to it. */
const linkedAgentDir = Effect.gen(function*() {
  const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-agent-link-"))
  temps.push(base)
  const target = Path.join(base, "disk", "agent")
  Fs.mkdirSync(target, { recursive: true, mode: 0o700 })
  const link = Path.join(base, "home", "agent")
  Fs.mkdirSync(Path.dirname(link))
  Fs.symlinkSync(target, link)
  // The run is created through the link, as Pi would.
  const workRuns = yield* Effect.map(
    Layer.build(WorkRuns.layerWith({ opportunisticRetention: false }).pipe(Layer.provide(AgentDir.layerWith(link)), Layer.provide(NodeWorld.layer))),
    (ctx) => Context.get(ctx, WorkRuns)
  )
  yield* Effect.scoped(Effect.flatMap(workRuns.acquire({ category: "tools", tenant: "bash", runId: "r1", retention: false }), (run) => run.release()))
  return { base, target, link }
})

describe("a symlinked agent dir is resolved once, in AgentDir", () => {
  it.scoped("AgentDir records the given path and the link's target", () =>
    Effect.gen(function*() {
      const { link, target } = yield* linkedAgentDir
      const dir = yield* Effect.provide(AgentDir, AgentDir.layerWith(link).pipe(Layer.provide(NodeWorld.layer)))
      assert.strictEqual(dir.given, link)
      assert.strictEqual(dir.path, target)
      assert.strictEqual(dir.paths.workRoot, Path.join(target, "work"))
      // The run landed in the target, not beside the link.
      assert.isTrue(Fs.existsSync(Path.join(target, "work", "tools", "bash", "r1", ".pi-work-run.json")))
    }))

  it.scoped("Inventory.summary and listRuns (Node layer) see the target's runs and report the link", () =>
    Effect.gen(function*() {
      const { link, target } = yield* linkedAgentDir
      const inventory = yield* Effect.map(
        Layer.build(Inventory.layer.pipe(Layer.provide(AgentDir.layerWith(link)), Layer.provide(NodeWorld.layer))),
        (ctx) => Context.get(ctx, Inventory)
      )
      const summary = yield* inventory.summary()
      assert.isTrue(summary.exists)
      assert.isNull(summary.notADirectory)
      assert.strictEqual(summary.agentDir, target)
      assert.strictEqual(summary.linkedFrom, link)
      assert.deepStrictEqual(summary.tenants.map((t) => [t.category, t.tenant, t.runs, t.inactive]), [["tools", "bash", 1, 1]])
      const runs = yield* inventory.listRuns()
      assert.strictEqual(runs.linkedFrom, link)
      assert.deepStrictEqual(runs.runs.map((r) => [r.runId, r.state, r.path]), [["r1", "released", Path.join(target, "work", "tools", "bash", "r1")]])
    }))

  it.scoped("`pi-storage status` lists the target's runs and shows the link", () =>
    Effect.gen(function*() {
      const { link, target } = yield* linkedAgentDir
      const env = { ...process.env }
      delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
      delete env["NO_COLOR"]
      const json = yield* Effect.promise(() => runNode(MAIN, ["--agent-dir", link, "status", "--json"], { env }))
      assert.strictEqual(json.code, 0, json.stderr)
      const doc = JSON.parse(json.stdout)
      assert.isTrue(doc.exists)
      assert.strictEqual(doc.agentDir, target)
      assert.strictEqual(doc.linkedFrom, link)
      assert.deepStrictEqual(doc.tenants.map((t: any) => [t.category, t.tenant, t.runs]), [["tools", "bash", 1]])
      const human = yield* Effect.promise(() => runNode(MAIN, ["--agent-dir", link, "status"], { env: { ...env, NO_COLOR: "1" } }))
      assert.strictEqual(human.code, 0, human.stderr)
      assert.include(human.stdout, `Agent dir  ${link} -> ${target} (from --agent-dir)`)
      assert.notInclude(human.stdout, "does not exist")
      assert.match(human.stdout, /tools\/bash\s+1\s/)
    }))
})
