/**
 * Test support for the migration and doctor tests: simulated processes over one MemoryWorld, tree snapshots
 * without times and inode numbers, and a crash-at-every-step driver.
 */
import { assert } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import * as MemoryFs from "../../src/layers/MemoryFileSystem.js"
import * as MemoryHost from "../../src/layers/MemoryHost.js"
import type { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import type { MigrationPlan } from "../../src/domain/MigrationPlan.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { type LayoutOptions, Migration, type PlanOptions } from "../../src/services/Migration.js"

export const AGENT = "/home/user/.pi/agent"
export const HOST = "h1"

/** A simulated process: its layer and pid. */
export const spawn = (world: MemoryWorld, hostname = HOST) => {
  const host = MemoryHost.make(world, { hostname })
  const fs = MemoryFs.make(world, { uid: host.uid ?? 1000, hostname, pid: host.pid })
  return { pid: host.pid, layer: Layer.merge(Layer.succeed(FileSystem, fs), Layer.succeed(Host, host)) }
}

/** Run a program as a fresh process of `world`. */
export const asProcess = <A, E>(world: MemoryWorld, program: Effect.Effect<A, E, FileSystem | Host>) =>
  Effect.provide(program, spawn(world).layer)

/** Paths (relative to `root`) → what a byte-level comparison needs: type, content hash, link target, mode. */
export const snapshot = (world: MemoryWorld, root = AGENT): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [path, e] of Object.entries(world.tree(root))) {
    const rel = path === root ? "." : path.slice(root.length + 1)
    out[rel] = `${e.type}:${e.hash ?? e.target ?? ""}:${e.mode.toString(8)}`
  }
  return out
}

/** Regular files under `root` (relative path → text). */
export const files = (world: MemoryWorld, root = AGENT): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [path, e] of Object.entries(world.tree(root))) {
    if (e.type === "File") out[path.slice(root.length + 1)] = world.readFixtureText(path) ?? ""
  }
  return out
}

export const links = (world: MemoryWorld, root = AGENT): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [path, e] of Object.entries(world.tree(root))) {
    if (e.type === "SymbolicLink") out[path.slice(root.length + 1)] = e.target ?? ""
  }
  return out
}

export interface CrashScenario {
  readonly name: string
  /** Build the starting tree (fixtures, mounts) in a fresh world. */
  readonly seed: (world: MemoryWorld) => Effect.Effect<void>
  /** The migration under test, run by one process; returns whether it finished (not partial). */
  readonly run: Effect.Effect<boolean, unknown, FileSystem | Host>
  /** Physical locations after a crash-free run (MG3). */
  readonly expect: (world: MemoryWorld) => void
  /** Paths left out of the comparison (an audit journal may say "already done" where it said "moved"). */
  readonly ignore?: (rel: string) => boolean
  /** The trees compared (default: the agent dir); paths are then `<root>:<rel>`, except the agent dir's own. */
  readonly roots?: ReadonlyArray<string>
}

/**
 * Crash the first process after k mutating steps, for every k from 0 to the number of steps a crash-free
 * run takes; kill it, recover, rerun as a new process until done; the tree must equal the crash-free result
 * exactly (no byte lost, moved twice, or left in a temp file), and one more rerun must change nothing.
 */
export const crashAtEveryStep = (scenario: CrashScenario, makeWorld: () => MemoryWorld) =>
  Effect.gen(function*() {
    const ignore = scenario.ignore ?? (() => false)
    const compared = (world: MemoryWorld) =>
      Object.fromEntries((scenario.roots ?? [AGENT]).flatMap((root) =>
        Object.entries(snapshot(world, root))
          .filter(([rel]) => !ignore(rel))
          .map(([rel, facts]) => [root === AGENT ? rel : `${root}:${rel}`, facts])
      ))
    const runToEnd = (world: MemoryWorld) =>
      Effect.gen(function*() {
        for (let i = 0; i < 20; i++) {
          if (yield* asProcess(world, scenario.run)) return
          // A crash between the marker's create and write leaves it empty: held until the stale bound passes.
          yield* TestClock.adjust(DEFAULT_STALE_UNREADABLE_MS + 1)
        }
        assert.fail(`${scenario.name}: never finished`)
      })
    const reference = makeWorld()
    yield* scenario.seed(reference)
    const start = reference.mutationCount
    yield* runToEnd(reference)
    const steps = reference.mutationCount - start
    scenario.expect(reference)
    const expected = compared(reference)
    const afterReference = reference.mutationCount
    yield* runToEnd(reference)
    assert.deepStrictEqual(compared(reference), expected, `${scenario.name}: a second run changed the tree`)
    assert.strictEqual(reference.mutationCount, afterReference, `${scenario.name}: a second run mutated something`)
    assert.isAbove(steps, 0, `${scenario.name}: the scenario does nothing`)

    for (let k = 0; k <= steps; k++) {
      const world = makeWorld()
      yield* scenario.seed(world)
      const first = spawn(world)
      world.crashAfter(k, { hostname: HOST, pid: first.pid })
      yield* Effect.provide(scenario.run, first.layer).pipe(Effect.exit)
      world.kill(HOST, first.pid)
      world.recover()
      yield* runToEnd(world)
      assert.deepStrictEqual(compared(world), expected, `${scenario.name}: crash after step ${k} of ${steps}`)
      const settled = world.mutationCount
      yield* runToEnd(world)
      assert.strictEqual(world.mutationCount, settled, `${scenario.name}: rerun after crash ${k} still changes things`)
    }
    return steps
  })

/** The Migration service over an agent dir (the AgentDir resolved from `agent`, the ports from the process). */
export const migrationAt = (agent: string = AGENT) => Layer.provide(Migration.layer, AgentDir.layerWith(agent))

/** `Migration.run` (MG1) as a program of whichever process provides the ports. */
export const runLayout = (options?: LayoutOptions, agent: string = AGENT) =>
  Effect.flatMap(Migration, (m) => m.run(options)).pipe(Effect.provide(migrationAt(agent)))

/** `Migration.plan` (the dry run). */
export const planLayout = (options?: LayoutOptions, agent: string = AGENT) =>
  Effect.flatMap(Migration, (m) => m.plan(options)).pipe(Effect.provide(migrationAt(agent)))

/** `Migration.runPlan` (MG2). */
export const runToolkit = (plan: MigrationPlan, options?: PlanOptions, agent: string = AGENT) =>
  Effect.flatMap(Migration, (m) => m.runPlan(plan, options)).pipe(Effect.provide(migrationAt(agent)))

/** `Migration.previewPlan` (MG2's dry run). */
export const previewToolkit = (plan: MigrationPlan, options?: Pick<PlanOptions, "webDataRoot">, agent: string = AGENT) =>
  Effect.flatMap(Migration, (m) => m.previewPlan(plan, options)).pipe(Effect.provide(migrationAt(agent)))
