/**
 * docs/work-runs.md "Retention": a quarantined tree in `.trash/` is finished whatever its depth (the measuring `maxDepth`
 * never bounds it), within a time budget per prune, and whatever is left is reported in `errors`. Deeper
 * than the process may hold descriptors too: a 5,000-deep chain, pruned in a child limited to 64 (the walks
 * hold a window of descriptors: domain/WalkDepth.ts).
 */
import * as nfs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { nodeFileSystemWith, type Walker } from "../../src/layers/NodeFileSystem.js"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import { availableWalkerKind } from "../../src/layers/node/walkers.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import * as NodeProcessRunner from "../../src/layers/NodeProcessRunner.js"
import * as Storage from "../../src/layers/Storage.js"
import { TRASH_TIME_BUDGET_MS } from "../../src/services/internal/prune.js"
import { openTiers } from "../support/tiers.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { deepScratch, distModule, effectModule, removeDeep, runLimited } from "../support/limitedChild.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const DEPTH = 200

/** `levels` nested directories `d/d/d…`, each holding one file: 2 × levels entries. */
const deepChain = (levels: number): ReadonlyArray<string> => {
  const paths: Array<string> = []
  let rel = ""
  for (let i = 0; i < levels; i++) {
    rel = rel === "" ? "d" : `${rel}/d`
    paths.push(`${rel}/f`)
  }
  return paths
}

const walkers: ReadonlyArray<Walker> = availableWalkerKind() === "native" ? ["native", "portable"] : ["portable"]

describe("deep trees left in .trash (Node layer)", () => {
  for (const walker of walkers) {
    it.effect(`a ${DEPTH}-deep quarantined tree is gone after one prune, default policy (${walker} walker)`, () =>
      Effect.gen(function*() {
        const agentDir = nfs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-trash-depth-"))
        try {
          const tenantDir = NodePath.join(agentDir, "work", "tools", "bash")
          const quarantined = NodePath.join(tenantDir, ".trash", "old-run.0badc0de")
          for (const rel of deepChain(DEPTH)) {
            nfs.mkdirSync(NodePath.join(quarantined, NodePath.dirname(rel)), { recursive: true, mode: 0o700 })
            nfs.writeFileSync(NodePath.join(quarantined, rel), "x")
          }
          for (const d of [NodePath.join(agentDir, "work"), NodePath.join(agentDir, "work", "tools"), tenantDir]) nfs.chmodSync(d, 0o700)
          const world = Layer.mergeAll(nodeFileSystemWith(walker), NodeHost.layer, NodeProcessRunner.layer)
          const report = yield* Effect.flatMap(WorkRuns, (w) => w.prune({ category: "tools", tenant: "bash" })).pipe(
            Effect.provide(Storage.layer(world, { agentDir, migrate: false, workRuns: { opportunisticRetention: false } }))
          )
          assert.deepStrictEqual(report.errors, [])
          assert.deepStrictEqual(nfs.readdirSync(NodePath.join(tenantDir, ".trash")), [])
        } finally {
          nfs.rmSync(agentDir, { recursive: true, force: true })
        }
      }))
  }
})

/** In the child: a chain `depth` levels deep quarantined in the tenant's .trash, then prunes until it is gone. */
const PRUNE_SOURCE = `
import * as Effect from ${effectModule("Effect")}
import * as Layer from ${effectModule("Layer")}
import { nodeFileSystemWith } from ${distModule("layers/NodeFileSystem.js")}
import * as NodeHost from ${distModule("layers/NodeHost.js")}
import * as NodeProcessRunner from ${distModule("layers/NodeProcessRunner.js")}
import * as Storage from ${distModule("layers/Storage.js")}
import { WorkRuns } from ${distModule("services/WorkRuns.js")}
const [agentDir, walker, depth] = [process.argv[2], process.argv[3], Number(process.argv[4])]
limitDescriptors()
const tenantDir = agentDir + "/work/tools/bash"
buildChain(tenantDir + "/.trash/old-run.0badc0de", depth)
for (const d of [agentDir + "/work", agentDir + "/work/tools", tenantDir]) fs.chmodSync(d, 0o700)
const world = Layer.mergeAll(nodeFileSystemWith(walker), NodeHost.layer, NodeProcessRunner.layer)
const prune = Effect.flatMap(WorkRuns, (w) => w.prune({ category: "tools", tenant: "bash" })).pipe(
  Effect.provide(Storage.layer(world, { agentDir, migrate: false, workRuns: { opportunisticRetention: false } }))
)
// One prune finishes it unless the disk is slow (its time budget for .trash: the next one goes on).
const errors = []
let prunes = 0
while (prunes < 20) {
  const report = await Effect.runPromise(prune)
  prunes++
  errors.push(report.errors.map((e) => e._tag + " " + e.message.slice(0, 300)))
  if (fs.readdirSync(tenantDir + "/.trash").length === 0) break
}
process.stdout.write(JSON.stringify({ limit: descriptorLimit(), errors, trash: fs.readdirSync(tenantDir + "/.trash") }))
`

describe("a .trash chain deeper than the descriptor limit (Node layer, a child limited to 64 descriptors)", () => {
  const CHAIN = 5000
  for (const walker of walkers) {
    it(`prunes finish a ${CHAIN}-deep quarantined chain (${walker} walker)`, async () => {
      const agentDir = deepScratch("pi-trash-chain-")
      try {
        const answer = await runLimited(64, PRUNE_SOURCE, [agentDir, walker, String(CHAIN)]) as {
          limit: number
          errors: Array<Array<string>>
          trash: Array<string>
        }
        assert.strictEqual(answer.limit, 64)
        assert.deepStrictEqual(answer.trash, [], JSON.stringify(answer.errors.at(-1)))
        // The last prune is clean; any before it only ran out of time (a slow disk), never failed.
        assert.deepStrictEqual(answer.errors.at(-1), [])
        for (const errors of answer.errors) for (const e of errors) assert.match(e, /^TrashPending /)
      } finally {
        removeDeep(agentDir)
      }
    }, 180_000)
  }
})

describe("deep cache trees (Node layer)", () => {
  it.scoped("cache.clear() removes a cache/ tree 300 levels deep", () =>
    Effect.gen(function*() {
      const root = nfs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-cache-depth-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => nfs.rmSync(root, { recursive: true, force: true })))
      const dirs = { configDir: NodePath.join(root, "config"), stateDir: NodePath.join(root, "state"), cacheDir: NodePath.join(root, "cache") }
      for (const rel of deepChain(300)) {
        nfs.mkdirSync(NodePath.join(dirs.cacheDir, NodePath.dirname(rel)), { recursive: true })
        nfs.writeFileSync(NodePath.join(dirs.cacheDir, rel), "x")
      }
      const tiers = yield* openTiers(dirs)
      yield* tiers.cache.clear()
      assert.isFalse(nfs.existsSync(dirs.cacheDir))
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})

describe("deep trees left in .trash (Memory world)", () => {
  const TRASH = `${AGENT_DIR}/work/tools/bash/.trash`
  const plant = (world: MemoryWorld, name: string) =>
    Effect.forEach(deepChain(DEPTH), (rel) => world.writeFixture(`${TRASH}/${name}/${rel}`, "x"), { discard: true })

  it.scoped("the policy's maxDepth does not bound finishing .trash", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* plant(world, "a.00000001")
      const p = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
      const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxDepth: 3, maxEntries: 10 } })
      assert.deepStrictEqual(report.errors, [])
      assert.deepStrictEqual(Object.keys(world.tree(TRASH)), [TRASH])
    }))

  it.scoped("a prune whose time budget runs out reports what is left; the next prunes finish it", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* plant(world, "a.00000001")
      yield* plant(world, "b.00000002")
      // A slow disk: every removal slice deletes at most 40 entries and takes the whole time budget.
      let slices = 0
      const p = yield* spawnProcess(world, {
        workRuns: { opportunisticRetention: false },
        wrapFs: (fs) => ({
          ...fs,
          removeTree: (path, budget) =>
            fs.removeTree(path, { ...budget, maxEntries: Math.min(budget.maxEntries, 40) }).pipe(
              Effect.tap(() => TestClock.adjust(TRASH_TIME_BUDGET_MS)),
              Effect.tap(() => void slices++)
            )
        })
      })
      const first = yield* p.workRuns.prune({ category: "tools", tenant: "bash" })
      assert.strictEqual(slices, 1, "no new slice after the deadline")
      assert.deepStrictEqual(first.errors.map((e) => e.path).sort(), [`${TRASH}/a.00000001`, `${TRASH}/b.00000002`])
      assert.include(first.errors[0]!.message, "the next prune continues")
      let prunes = 1
      let last = first
      while (Object.keys(world.tree(TRASH)).length > 1 && prunes < 40) {
        last = yield* p.workRuns.prune({ category: "tools", tenant: "bash" })
        prunes++
        if (Object.keys(world.tree(TRASH)).length > 1) assert.isAbove(last.errors.length, 0, "errors while anything is left")
      }
      assert.deepStrictEqual(Object.keys(world.tree(TRASH)), [TRASH])
      assert.deepStrictEqual(last.errors, [])
      // 2 trees × (200 dirs + 200 files + root) in slices of 40: about 21 prunes, each one resuming the last.
      assert.isAtLeast(prunes, 20)
    }))
})
