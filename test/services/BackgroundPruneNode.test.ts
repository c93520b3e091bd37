/**
 * docs/work-runs.md "Retention": the acquirer never waits for the background prune it starts, and on the Node layer that
 * prune never holds the event loop for long (every port call of the layer yields once the synchronous work
 * since the loop last turned has used its slice; batched calls are cut to that slice). Closing the store
 * during it interrupts it at its next yield: `close` does not wait for the prune, and the next prune finishes
 * what it left (the cleanup protocol is crash-safe: markers, `.trash/`). Tenants are built with synchronous
 * `node:fs` calls and sized by run count; the bounds compare the event loop with the prune's own duration.
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import * as NodeStorage from "../../src/layers/NodeStorage.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { plantReleasedRuns as plantRuns, TOOL } from "../support/releasedRuns.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()
/** Enough runs that the prune's protocol, run without yielding, would be one block of a tenth of the prune or more. */
const RUNS = 3_000
/** The close() case needs only a prune under way. */
const CLOSE_RUNS = 1_500
const KEPT = 10

/** An agent dir whose tools/bash tenant holds `count` released runs (manifest and one file each), oldest first. */
const plantReleasedRuns = (count: number) => plantRuns(scratch("pi-bgprune-"), count)

const services = (agentDir: string) => NodeStorage.layerWith({ agentDir, migrate: false })

/** What a tenant holds besides its runs, and whether every run left is whole. */
const tenantState = (tenantDir: string) => {
  const names = fs.readdirSync(tenantDir)
  const runs = names.filter((n) => !n.startsWith(".")).sort()
  const listed = (dir: string) => (fs.existsSync(NodePath.join(tenantDir, dir)) ? fs.readdirSync(NodePath.join(tenantDir, dir)) : [])
  const halfRemoved = runs.filter((n) => !fs.existsSync(NodePath.join(tenantDir, n, ".pi-work-run.json")))
  return { runs, trash: listed(".trash"), cleanup: listed(".cleanup"), marker: names.includes(".prune"), halfRemoved }
}

describe("the background prune and the event loop (Node)", () => {
  it.live("a background prune of a few thousand runs never holds the event loop for a tenth of its duration", () =>
    Effect.gen(function*() {
      const { agentDir, tenantDir, runIds } = plantReleasedRuns(RUNS)
      const delay = monitorEventLoopDelay({ resolution: 1 })
      const { prunedMs, held } = yield* Effect.scoped(Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        delay.enable()
        const started = performance.now()
        // Retention on: the acquire starts the tenant's background prune (no stamp yet), which removes every released run.
        const run = yield* workRuns.acquire({ ...TOOL, retention: { maxInactiveRuns: 0 } })
        yield* workRuns.awaitBackground
        const prunedMs = performance.now() - started
        delay.disable()
        return { prunedMs, held: run.runId }
      }).pipe(Effect.provide(services(agentDir))))
      const longestMs = delay.max / 1e6
      const state = tenantState(tenantDir)
      assert.deepStrictEqual(state.runs, [held], "the prune removed every released run and kept the held one")
      assert.deepStrictEqual(state.trash, [])
      assert.isFalse(runIds.some((id) => fs.existsSync(NodePath.join(tenantDir, id))))
      // Before: the prune's protocol work was one block of the event loop, most of the prune.
      assert.isBelow(longestMs, prunedMs / 10, `longest event-loop block ${longestMs.toFixed(1)} ms of a ${prunedMs.toFixed(0)} ms prune (p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`)
    }), 240_000)

  it.live("close() during a background prune does not wait for it; the next prune finishes the job", () =>
    Effect.gen(function*() {
      const { agentDir, tenantDir, runIds } = plantReleasedRuns(CLOSE_RUNS)
      const policy = { maxInactiveRuns: KEPT }
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(services(agentDir), scope)
      const workRuns = yield* Effect.provide(WorkRuns, context)
      const run = yield* Scope.extend(workRuns.acquire({ ...TOOL, retention: policy }), scope)
      // Into the prune: its first victims are gone or quarantined.
      const present = () => fs.readdirSync(tenantDir).filter((n) => !n.startsWith(".")).length
      while (present() > CLOSE_RUNS) yield* Effect.sleep("2 millis")
      yield* Scope.close(scope, Exit.void)
      const left = tenantState(tenantDir)
      // Before: close() waited until the prune was done, leaving only the kept runs.
      assert.isAbove(left.runs.length + left.trash.length, KEPT + 1, "close() returned before the prune would have finished")
      assert.isFalse(left.marker, "the interrupted prune dropped the tenant's prune marker")
      assert.deepStrictEqual(left.cleanup, [], "and every run's cleanup marker")
      assert.deepStrictEqual(left.halfRemoved, [], "no run is left half removed: each is whole in place, or quarantined in .trash")
      const report = yield* Effect.flatMap(WorkRuns, (w) => w.prune({ ...TOOL, policy })).pipe(Effect.provide(services(agentDir)), Effect.scoped)
      assert.deepStrictEqual(report.errors, [])
      const done = tenantState(tenantDir)
      // The newest KEPT inactive runs stay (the run acquired, released on close, is the newest), each whole.
      assert.deepStrictEqual(done.runs, [...runIds.slice(runIds.length - (KEPT - 1)), run.runId].sort())
      assert.deepStrictEqual(done.halfRemoved, [])
      for (const id of done.runs.filter((id) => id !== run.runId)) {
        assert.strictEqual(fs.readFileSync(NodePath.join(tenantDir, id, "out.txt"), "utf8"), `output of ${id}\n`)
      }
      assert.deepStrictEqual(done.trash, [])
      assert.deepStrictEqual(done.cleanup, [])
      assert.isFalse(done.marker)
    }), 240_000)
})
