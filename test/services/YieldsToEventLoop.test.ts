/**
 * docs/work-runs.md "Retention": the acquirer never waits for the background prune. On Node every port call
 * gives way to the event loop once the synchronous work since it last turned has used its slice; a prune is
 * made of such calls, so a call of an acquire made then would wait one prune slice per call. Lease operations
 * therefore run with `YieldsToEventLoop` false (their calls are made at once) and a background prune sets it
 * true again, whatever fiber started it. Checked on the real Node layer: which fiber's calls yield, and that
 * a call that does not yield lets no turn of the event loop happen before it.
 */
import * as fs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FiberRef, Layer } from "effect"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { SLICE_MS } from "../../src/layers/node/support.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem, YieldsToEventLoop } from "../../src/services/FileSystem.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { plantReleasedRuns, TOOL } from "../support/releasedRuns.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

interface Call {
  readonly method: string
  readonly path: string
  readonly yields: boolean
}

/** The Node port, each call recorded with the calling fiber's `YieldsToEventLoop` (what the pacing sees). */
const recordingLayer = (calls: Array<Call>) =>
  Layer.effect(
    FileSystem,
    Effect.map(FileSystem, (real) => {
      const out: Record<string, unknown> = {}
      for (const [method, fn] of Object.entries(real)) {
        out[method] = typeof fn !== "function" ? fn : (...args: ReadonlyArray<unknown>) =>
          Effect.flatMap(FiberRef.get(YieldsToEventLoop), (yields) => {
            calls.push({ method, path: Array.isArray(args[0]) ? String(args[0][0]) : String(args[0]), yields })
            return (fn as (...a: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>)(...args)
          })
      }
      return out as unknown as FileSystem["Type"]
    })
  ).pipe(Layer.provide(NodeFileSystem.layer))

const workRunsLayer = (agentDir: string, calls: Array<Call>) => {
  const base = Layer.merge(recordingLayer(calls), NodeHost.layer)
  return WorkRuns.layer.pipe(Layer.provideMerge(AgentDir.layerWith(agentDir)), Layer.provideMerge(base))
}


/** Synchronous work past the pacing slice: the next yielding call of this stretch gives way first. */
const useTheSlice = Effect.sync(() => {
  const until = performance.now() + SLICE_MS * 2
  while (performance.now() < until) { /* the stretch's CPU */ }
})

describe("YieldsToEventLoop: lease operations never wait a prune's slices", () => {
  it.live("on Node, a call after the slice is used lets the event loop turn first, unless its fiber does not yield", () =>
    Effect.gen(function*() {
      const dir = scratch("pi-yields-")
      const fsPort = yield* FileSystem
      /** Whether an immediate queued before the call had run when the call answered. */
      const turnedBefore = (yields: boolean) =>
        Effect.gen(function*() {
          yield* fsPort.lstat(dir) // opens a stretch
          yield* useTheSlice
          let turned = false
          setImmediate(() => { turned = true })
          yield* Effect.locally(fsPort.lstat(dir), YieldsToEventLoop, yields)
          return turned
        })
      assert.isTrue(yield* turnedBefore(true), "a paced call gives way once the slice is used")
      assert.isFalse(yield* turnedBefore(false), "a call of a fiber that does not yield is made at once")
      assert.isTrue(yield* FiberRef.get(YieldsToEventLoop), "every fiber yields unless told otherwise")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.live("acquire and release make their calls at once; the background prune an acquire starts, and a prune, yield", () =>
    Effect.gen(function*() {
      const agentDir = scratch("pi-yields-")
      const { tenantDir } = plantReleasedRuns(agentDir, 40)
      const calls: Array<Call> = []
      const { leaseCalls, pruneCalls, explicitCalls } = yield* Effect.scoped(Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        calls.splice(0) // the layers' own construction (the agent dir's check)
        // Retention off: only the lease's own calls.
        const quiet = yield* Effect.scoped(Effect.gen(function*() {
          const run = yield* workRuns.acquire({ ...TOOL, retention: false })
          yield* run.release()
          return run
        }))
        const leaseCalls = calls.splice(0)
        assert.isTrue(leaseCalls.some((c) => c.path.startsWith(quiet.path)), "the acquire and release were recorded")
        // Retention on: the acquire starts the tenant's background prune from its own fiber.
        yield* Effect.scoped(workRuns.acquire({ ...TOOL, retention: { maxInactiveRuns: 0 } }))
        yield* workRuns.awaitBackground
        const pruneCalls = calls.splice(0).filter((c) => c.path.includes(`${tenantDir}/.prune`) || c.path.includes(`${tenantDir}/.trash`))
        yield* workRuns.prune({ ...TOOL, policy: { maxInactiveRuns: 0 } })
        const explicitCalls = calls.splice(0)
        return { leaseCalls, pruneCalls, explicitCalls }
      }).pipe(Effect.provide(workRunsLayer(agentDir, calls))))
      assert.deepStrictEqual(leaseCalls.filter((c) => c.yields), [], "no call of an acquire or a release yields")
      assert.isAbove(pruneCalls.length, 0, "the background prune ran (its marker and .trash/)")
      assert.deepStrictEqual(pruneCalls.filter((c) => !c.yields), [], "every call of the background prune yields")
      assert.isAbove(explicitCalls.length, 0)
      assert.deepStrictEqual(explicitCalls.filter((c) => !c.yields), [], "an explicit prune yields")
      const left = fs.readdirSync(tenantDir).filter((n) => !n.startsWith("."))
      assert.deepStrictEqual(left, [], "the prunes removed every released run")
    }), 60_000)
})
