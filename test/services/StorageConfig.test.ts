/**
 * StorageConfig: one set of tunables for every program of a stack, filled from the environment through
 * Effect's `Config` at the Node edge.
 *
 * The drift it prevents (docs/configuration.md "Configuration (StorageConfig)"): the remote lease TTL was configurable in WorkRuns while Doctor,
 * Inventory and Migration judged with the default, so `work ls` could call "active" a run the pruner would
 * not spare. Here a remote host's lease (and its migration marker) is 5 minutes old: older than a configured
 * 1-minute TTL, younger than the default 15 minutes. Every reader must agree with the pruner.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, LogLevel, Logger, TestClock } from "effect"
import { DEFAULT_REMOTE_LEASE_TTL_MS, DEFAULT_RETENTION } from "../../src/domain/Retention.js"
import { MemoryWorld } from "../../src/layers/MemoryTesting.js"
import { MemoryWorld as World } from "../../src/layers/MemoryWorld.js"
import * as Storage from "../../src/layers/Storage.js"
import type { StorageOptions } from "../../src/layers/Storage.js"
import { Doctor } from "../../src/services/Doctor.js"
import { Inventory } from "../../src/services/Inventory.js"
import { Migration } from "../../src/services/Migration.js"
import { DEFAULT_STORAGE_SETTINGS, StorageConfig } from "../../src/services/StorageConfig.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const MINUTE = 60_000

/** A run and a migration marker left by host h2, which stopped heartbeating 5 minutes ago. */
const remoteLeftovers = Effect.gen(function*() {
  const world = World.make()
  const remote = yield* spawnProcess(world, { hostname: "h2", heartbeats: false, workRuns: { opportunisticRetention: false } })
  const run = yield* remote.workRuns.acquire({ category: "tools", tenant: "bash", retention: false })
  yield* world.writeFixture(`${AGENT_DIR}/.pi-migration.lock`, JSON.stringify({
    version: 1, purpose: "migrate-agent-dir", host: "h2", pid: remote.host.pid, createdAt: 0
  }))
  yield* world.writeFixture(`${AGENT_DIR}/trust.json`, "{}")
  yield* TestClock.adjust(5 * MINUTE)
  return { world, run }
})

/** What each reader of a local stack says about h2's leftovers. */
const verdicts = (world: MemoryWorld, runId: string, options: StorageOptions) =>
  Effect.gen(function*() {
    const listed = yield* Effect.flatMap(Inventory, (i) => i.listRuns({ category: "tools", tenant: "bash" }))
    const report = yield* Effect.flatMap(Doctor, (d) => d.doctor())
    const migrated = yield* Effect.flatMap(Migration, (m) => m.run({ lockAttempts: 1 }))
    const pruned = yield* Effect.flatMap(WorkRuns, (w) => w.prune({ category: "tools", tenant: "bash", policy: { maxAgeMs: 0 } }))
    return {
      inventory: listed.runs.find((r) => r.runId === runId)?.state,
      doctorDeadLease: report.findings.some((f) => f.code === "work-dead-lease" && f.path.includes(runId)),
      migrationMoved: migrated.moved,
      pruneRemoved: pruned.removed.map((r) => r.runId).includes(runId),
      pruneActive: pruned.active.includes(runId)
    }
  }).pipe(
    Effect.provide(Inventory.layer.pipe(Layer.provideMerge(Storage.layer(MemoryWorld.layer(world, { hostname: "h1" }), { agentDir: AGENT_DIR, migrate: false, ...options }))))
  )

describe("StorageConfig: one remote lease TTL for every reader", () => {
  const short: ReadonlyArray<[string, StorageOptions]> = [
    ["Storage.layer({ config })", { config: { remoteLeaseTtlMs: MINUTE } }]
  ]
  for (const [how, options] of short) {
    it.scoped(`a lease older than a short TTL given by ${how}: prune removes it and every reader calls it dead`, () =>
      Effect.gen(function*() {
        const { world, run } = yield* remoteLeftovers
        const seen = yield* verdicts(world, run.runId, options)
        assert.deepStrictEqual(seen, {
          inventory: "idle",
          doctorDeadLease: true,
          migrationMoved: ["trust.json"],
          pruneRemoved: true,
          pruneActive: false
        })
      }))
  }

  it.scoped("with the default TTL (15 minutes) the same leftovers are alive to every reader, the pruner included", () =>
    Effect.gen(function*() {
      const { world, run } = yield* remoteLeftovers
      const seen = yield* verdicts(world, run.runId, {})
      assert.deepStrictEqual(seen, {
        inventory: "active",
        doctorDeadLease: false,
        migrationMoved: [],
        pruneRemoved: false,
        pruneActive: true
      })
    }))

  it.scoped("a StorageConfig given around the stack reaches every reader too", () =>
    Effect.gen(function*() {
      const { world, run } = yield* remoteLeftovers
      const seen = yield* verdicts(world, run.runId, {}).pipe(Effect.provide(StorageConfig.layerWith({ remoteLeaseTtlMs: MINUTE })))
      assert.strictEqual(seen.inventory, "idle")
      assert.isTrue(seen.doctorDeadLease)
      assert.deepStrictEqual(seen.migrationMoved, ["trust.json"])
      assert.isTrue(seen.pruneRemoved)
    }))
})

/** Warnings logged while running `effect`, as messages. */
const warningsOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const messages: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (LogLevel.greaterThanEqual(logLevel, LogLevel.Warning)) messages.push(String(Array.isArray(message) ? message.join(" ") : message))
    })
    const value = yield* effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    return { value, messages }
  })

const fromEnv = (env: Record<string, string>) =>
  Effect.provide(StorageConfig, StorageConfig.layerFromEnv.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))))

describe("StorageConfig defaults and the environment", () => {
  it.effect("without a layer every program reads the documented defaults", () =>
    Effect.gen(function*() {
      const settings = yield* StorageConfig
      assert.deepStrictEqual(settings, DEFAULT_STORAGE_SETTINGS)
      assert.strictEqual(settings.remoteLeaseTtlMs, DEFAULT_REMOTE_LEASE_TTL_MS)
      assert.deepStrictEqual(settings.retentionCeiling, DEFAULT_RETENTION)
      assert.deepStrictEqual([settings.walker, settings.removerThreads, settings.busyAttempts], ["auto", 1, 8])
    }))

  it.effect("layerFromEnv reads PI_STORAGE_REMOVER_THREADS and PI_STORAGE_NATIVE through Config", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* fromEnv({}), DEFAULT_STORAGE_SETTINGS)
      const set = yield* fromEnv({ PI_STORAGE_REMOVER_THREADS: "4", PI_STORAGE_NATIVE: "0" })
      assert.deepStrictEqual([set.removerThreads, set.walker], [4, "portable"])
      // Any other PI_STORAGE_NATIVE value leaves the choice to the installation, as before.
      assert.strictEqual((yield* fromEnv({ PI_STORAGE_NATIVE: "1" })).walker, "auto")
      // The environment is applied on top of what the context holds, and a layer given inside wins.
      const layered = yield* fromEnv({ PI_STORAGE_REMOVER_THREADS: "2" }).pipe(Effect.provide(StorageConfig.layerWith({ busyAttempts: 3 })))
      assert.deepStrictEqual([layered.removerThreads, layered.busyAttempts], [2, 3])
    }))

  it.effect("a malformed variable is ignored with a warning that names it, never failing the store", () =>
    Effect.gen(function*() {
      for (const bad of ["lots", "0", "17", "1.5"]) {
        const { value, messages } = yield* warningsOf(fromEnv({ PI_STORAGE_REMOVER_THREADS: bad, PI_STORAGE_NATIVE: "0" }))
        assert.strictEqual(value.removerThreads, 1, bad)
        assert.strictEqual(value.walker, "portable", `${bad}: the other variable still applies`)
        assert.strictEqual(messages.length, 1, bad)
        assert.match(messages[0]!, /ignoring PI_STORAGE_REMOVER_THREADS/)
      }
    }))

  it.effect("an invalid value given in code is a defect naming the field; an invalid ceiling an InvalidPolicy", () =>
    Effect.gen(function*() {
      const bad = [{ remoteLeaseTtlMs: 0 }, { staleUnreadableMs: -1 }, { busyAttempts: 1.5 }, { removerThreads: 17 }, { walker: "fast" as never }]
      for (const input of bad) {
        const exit = yield* Effect.exit(Effect.provide(StorageConfig, StorageConfig.layerWith(input)))
        assert.isTrue(Exit.isFailure(exit) && Exit.isInterrupted(exit) === false, JSON.stringify(input))
        const field = Object.keys(input)[0]!
        assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), new RegExp(`invalid StorageConfig: ${field}`))
      }
      const ceiling = yield* Effect.exit(Effect.provide(StorageConfig, StorageConfig.layerWith({ retentionCeiling: { maxBytes: Number.NaN } })))
      assert.match(String(Exit.isFailure(ceiling) ? ceiling.cause : ""), /InvalidPolicy|maxBytes/)
    }))

  it.effect("a partial ceiling fills the rest from WR9", () =>
    Effect.gen(function*() {
      const settings = yield* Effect.provide(StorageConfig, StorageConfig.layerWith({ retentionCeiling: { maxInactiveRuns: 2 } }))
      assert.deepStrictEqual(settings.retentionCeiling, { ...DEFAULT_RETENTION, maxInactiveRuns: 2 })
    }))
})
