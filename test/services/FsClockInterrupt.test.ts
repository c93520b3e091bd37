/**
 * The file system's clock (`services/internal/fsClock.ts`) read by a probe: a file created, lstat'ed and
 * unlinked. A store closing during its background prune interrupts the pruner wherever it is, a probe included:
 * the probe runs to its end, so an interrupt at any step never leaves a live process's probe behind.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { makeFsClock, tenantProbe } from "../../src/services/internal/fsClock.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`

const probesLeft = (world: MemoryWorld) => Object.keys(world.tree(`${tenantDir}/.cleanup`)).filter((p) => p.includes("/.clock-"))

describe("a clock probe interrupted", () => {
  it.scoped("at every step: the probe is unlinked all the same", () =>
    Effect.gen(function*() {
      const reference = MemoryWorld.make()
      yield* reference.mkdirFixture(`${tenantDir}/.cleanup`)
      const probe = yield* spawnProcess(reference)
      const dev = (yield* probe.fs.lstat(tenantDir)).dev
      const start = reference.mutationCount
      const read = yield* makeFsClock(probe.fs, probe.host).now(dev, [tenantProbe(tenantDir)])
      assert.isNotNull(read, "the probe read the clock")
      const steps = reference.mutationCount - start
      // Created, then unlinked.
      assert.isAtLeast(steps, 2)
      assert.deepStrictEqual(probesLeft(reference), [])
      for (let k = 0; k <= steps; k++) {
        const world = MemoryWorld.make()
        yield* world.mkdirFixture(`${tenantDir}/.cleanup`)
        const { fs, host } = yield* spawnProcess(world)
        const mutations = world.mutationCount
        const fiber = yield* Effect.fork(makeFsClock(fs, host).now(dev, [tenantProbe(tenantDir)]))
        for (let spins = 0; world.mutationCount < mutations + k; spins++) {
          assert.isBelow(spins, 10_000, `step ${k} of ${steps} was never reached`)
          yield* Effect.yieldNow()
        }
        yield* Fiber.interrupt(fiber)
        assert.deepStrictEqual(probesLeft(world), [], `interrupted after ${k} of ${steps} steps: a probe was left behind`)
      }
    }))
})
