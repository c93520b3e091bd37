/**
 * docs/work-runs.md "Retention", on the Node layer: the size walks of one prune share one entry budget (`maxEntries`).
 * When the newest run alone holds more entries than that (an `npm install` is enough), its walk is the one
 * cut short: the unmeasured remainder is its own, it is the run over budget. The older small runs, never
 * walked because the budget was spent, are "not measured", not over budget: within age and count they stay.
 * Held by a live lease, the big run is never removed, and no neighbour goes for bytes in its place (removing
 * them could not bring the tenant within its limits).
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeStorage from "../../src/layers/NodeStorage.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()
const TOOL = { category: "tools", tenant: "bash" } as const
/** Small on purpose: the big run needs only a few hundred files to overrun it, so the test stays fast. */
const MAX_ENTRIES = 50
const BIG_FILES = 300
const SMALL = ["a-small-1", "a-small-2", "a-small-3", "a-small-4"]

const services = (agentDir: string) => NodeStorage.layerWith({ agentDir, migrate: false, workRuns: { opportunisticRetention: false } })

/** The small runs, released, each with one file; created first, so they are the older ones. */
const makeSmallRuns = Effect.gen(function*() {
  const workRuns = yield* WorkRuns
  for (const runId of SMALL) {
    yield* Effect.scoped(Effect.gen(function*() {
      const run = yield* workRuns.acquire({ ...TOOL, runId, retention: false })
      fs.writeFileSync(NodePath.join(run.path, "out.txt"), "small output\n")
    }))
  }
})

/** The newest run: more files than the whole entry budget (its name sorts last, so a tie in time still makes it newest). */
const fillBig = (runPath: string) => {
  fs.mkdirSync(NodePath.join(runPath, "node_modules"))
  for (let i = 0; i < BIG_FILES; i++) fs.writeFileSync(NodePath.join(runPath, "node_modules", `m${i}.js`), "module.exports = 1\n")
}

const exists = (p: string) => fs.existsSync(p)

describe("one big run never gets its neighbours deleted (Node)", () => {
  it.scoped("released: the big run is the one cut short; the small older runs are not measured and stay", () =>
    Effect.gen(function*() {
      const agentDir = scratch("pi-budget-")
      const { report, tenant } = yield* Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        yield* makeSmallRuns
        const bigPath = yield* Effect.scoped(Effect.gen(function*() {
          const big = yield* workRuns.acquire({ ...TOOL, runId: "z-big", retention: false })
          fillBig(big.path)
          return big.path
        }))
        const report = yield* workRuns.prune({ ...TOOL, policy: { maxEntries: MAX_ENTRIES } })
        return { report, tenant: NodePath.dirname(bigPath) }
      }).pipe(Effect.provide(services(agentDir)))
      // Before: every small run was "size unknown" and removed as unmeasured.
      for (const runId of SMALL) assert.isTrue(exists(NodePath.join(tenant, runId)), `${runId} kept`)
      assert.deepStrictEqual([...report.kept].sort(), SMALL)
      assert.deepStrictEqual([...report.notMeasured].sort(), SMALL)
      // The big run made the scan incomplete: named, its size a lower bound; it counts as over budget.
      assert.isTrue(report.incomplete)
      assert.strictEqual(report.cutShort.length, 1)
      const cut = report.cutShort[0]!
      assert.strictEqual(cut._tag, "EntryBudget")
      assert.strictEqual(cut.runId, "z-big")
      assert.isFalse(cut.active)
      assert.isAbove(cut.bytesAtLeast, 0)
      assert.include(cut.why, `${MAX_ENTRIES}`)
      assert.deepStrictEqual(report.removed.map((r) => [r.runId, r.reason]), [["z-big", "unmeasured"]])
      // Its removal walk counted it whole: more than the lower bound, at least every module file.
      assert.isAtLeast(report.removed[0]!.bytes!, Math.max(cut.bytesAtLeast, BIG_FILES * "module.exports = 1\n".length))
      assert.isFalse(exists(NodePath.join(tenant, "z-big")))
      assert.isFalse(report.activeOverBudget)
    }))

  it.scoped("held by a live lease: the big run stays, and so does every released neighbour", () =>
    Effect.gen(function*() {
      const agentDir = scratch("pi-budget-")
      yield* Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        yield* makeSmallRuns
        const big = yield* workRuns.acquire({ ...TOOL, runId: "z-big", retention: false })
        fillBig(big.path)
        const tenant = NodePath.dirname(big.path)
        for (const dryRun of [true, false]) {
          const report = yield* workRuns.prune({ ...TOOL, policy: { maxEntries: MAX_ENTRIES }, dryRun })
          // Before: the held run's incomplete size made the total unknown, and every small run went.
          assert.deepStrictEqual(report.removed, [], `dryRun ${dryRun}`)
          assert.deepStrictEqual(report.active, ["z-big"])
          assert.deepStrictEqual([...report.kept].sort(), SMALL)
          assert.deepStrictEqual([...report.notMeasured].sort(), SMALL)
          assert.deepStrictEqual(report.cutShort.map((c) => [c._tag, c.runId, c.active]), [["EntryBudget", "z-big", true]])
          assert.isTrue(report.activeOverBudget)
          assert.isNull(report.bytesAfter)
        }
        for (const runId of [...SMALL, "z-big"]) assert.isTrue(exists(NodePath.join(tenant, runId)), `${runId} kept`)
        assert.isTrue(exists(big.leasePath))
      }).pipe(Effect.scoped, Effect.provide(services(agentDir)))
    }))
})
