/**
 * `removeRuns` (`pi-storage work rm`) says what it did with each run named, and never calls a run it could
 * not examine "missing": a run there but unreadable for a moment is left alone with the reason.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`

describe("removeRuns", () => {
  it.scoped("a released run is removed, an absent one is Missing, one whose lstat fails otherwise is Unreadable with its reason and kept", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      const gone = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      yield* gone.release()
      const blocked = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
      yield* blocked.release()
      const fault = world.injectFault({ op: "lstat", path: blocked.path, count: Infinity, errno: "EIO" })
      const outcomes = yield* p.workRuns.removeRuns({ category: "tools", tenant: "bash", runIds: [gone.runId, "nosuch", blocked.runId] })
      assert.deepStrictEqual(outcomes.map((o) => [o.runId, o._tag]), [[gone.runId, "Removed"], ["nosuch", "Missing"], [blocked.runId, "Unreadable"]])
      const unreadable = outcomes[2]!
      // A typed outcome: the FileSystemError's reason (EIO has none of its own: Unknown) beside the words.
      assert.strictEqual(unreadable._tag === "Unreadable" ? unreadable.reason : undefined, "Unknown")
      assert.match(unreadable._tag === "Unreadable" ? unreadable.why : "", /cannot be examined: .*EIO/)
      assert.isAbove(fault.fired(), 0)
      fault.remove()
      assert.isTrue(Object.keys(world.tree(blocked.path)).includes(`${blocked.path}/.pi-work-run.json`), "the run is still there")
      assert.isFalse(Object.keys(world.tree(tenantDir)).some((path) => path.startsWith(gone.path)), "the released run is gone")
    }))
})
