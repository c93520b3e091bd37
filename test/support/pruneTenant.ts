/**
 * The tenant the prune's crash and interrupt cases work on (Memory world): released runs with output, one of
 * them holding a link out of the tenant as bait, one run held by another live process, and a file outside the
 * tenant that must never change.
 */
import { Effect } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "./memoryProcess.js"

export const PRUNE_TENANT = { category: "tools", tenant: "bash" } as const
export const PRUNE_TENANT_DIR = `${AGENT_DIR}/work/tools/bash`

export const plantPruneTenant = (victims: number) =>
  Effect.gen(function*() {
    const world = MemoryWorld.make()
    yield* world.writeFixture("/outside/keep", "not ours")
    const maker = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
    for (let i = 0; i < victims; i++) {
      yield* Effect.scoped(Effect.flatMap(maker.workRuns.acquire({ ...PRUNE_TENANT, retention: false }), (run) =>
        Effect.zipRight(
          world.writeFixture(`${run.path}/out/${i}.txt`, `output ${i}`),
          i === 0 ? world.symlinkFixture("/outside", `${run.path}/out/link`) : Effect.void
        )))
    }
    const holder = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
    const held = yield* holder.workRuns.acquire({ ...PRUNE_TENANT, retention: false })
    yield* world.writeFixture(`${held.path}/in-use.txt`, "busy")
    return { world, held }
  })
