/**
 * docs/safety.md "How runs stay safe", on the Node layer, with real bind mounts (we run as root): a run holding a bind mount of an
 * outside tree — a tool mounted a source tree there — is never emptied through it, neither by a prune nor
 * by `release({ delete: true })`. Everything of the run on its own file system goes; the mount point stays
 * quarantined in `.trash/` and is reported, by this prune and by every later one. With both walkers.
 */
import * as crypto from "node:crypto"
import * as nfs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { nodeFileSystemWith, type Walker } from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import * as NodeProcessRunner from "../../src/layers/NodeProcessRunner.js"
import * as Storage from "../../src/layers/Storage.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { bindMountNow, bindMountSupport, mountsUnder, unmountAllUnderOnClose } from "../support/bindMount.js"

const mounting = bindMountSupport()

/** Every path, type, mode, mtime and content hash under `root`: equal snapshots mean nothing changed. */
const snapshot = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const visit = (path: string) => {
    const st = nfs.lstatSync(path)
    const content = st.isFile() ? crypto.createHash("sha256").update(nfs.readFileSync(path)).digest("hex") : st.isSymbolicLink() ? nfs.readlinkSync(path) : ""
    out[NodePath.relative(root, path) || "."] = `${st.mode}|${st.mtimeMs}|${st.size}|${content}`
    if (st.isDirectory()) for (const name of nfs.readdirSync(path).sort()) visit(NodePath.join(path, name))
  }
  visit(root)
  return out
}

/** A scratch dir holding `outside/` (the tree a tool bind-mounts into its run) and an agent dir. */
const scratch = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => nfs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-mounts-"))),
    (d) => Effect.sync(() => nfs.rmSync(d, { recursive: true, force: true }))
  )
  // Every mount made below `dir` (wherever it moved with its run) goes before the removal above: finalizers
  // run last-first.
  yield* unmountAllUnderOnClose(dir)
  const outside = NodePath.join(dir, "outside")
  nfs.mkdirSync(NodePath.join(outside, "src", "deep"), { recursive: true })
  for (let i = 0; i < 30; i++) nfs.writeFileSync(NodePath.join(outside, "src", `file${i}.ts`), `export const x${i} = ${i}\n`)
  nfs.writeFileSync(NodePath.join(outside, "src", "deep", "canary"), "keep me")
  nfs.symlinkSync("/etc", NodePath.join(outside, "etc-link"))
  return { dir, outside, agent: NodePath.join(dir, "agent") }
})

const servicesWith = (walker: Walker, agent: string) =>
  Storage.layer(Layer.mergeAll(nodeFileSystemWith(walker), NodeHost.layer, NodeProcessRunner.layer), { agentDir: agent, migrate: false })

const TOOL = { category: "tools", tenant: "bash" } as const

describe.each(["native", "portable"] as const)("a bind mount inside a run, %s walker", (walker) => {
  if (!mounting.available) {
    const why = mounting.why
    it(`skipped: ${why}`, () => {
      // Did not run: prove this machine really refuses the mount.
      assert.isFalse(bindMountSupport().available, why)
    })
    return
  }

  it.scoped("a prune deletes the run's own files, never the mounted tree, and reports the mount point every time", () =>
    Effect.gen(function*() {
      const { outside, agent } = yield* scratch
      const before = snapshot(outside)
      const report = yield* Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        const runPath = yield* Effect.scoped(Effect.gen(function*() {
          const run = yield* workRuns.acquire({ ...TOOL, retention: false })
          nfs.writeFileSync(NodePath.join(run.path, "own.log"), "ours")
          nfs.mkdirSync(NodePath.join(run.path, "checkout"))
          bindMountNow(outside, NodePath.join(run.path, "checkout"))
          return run.path
        }))
        const tenant = NodePath.dirname(runPath)
        const first = yield* workRuns.prune({ ...TOOL, policy: { maxInactiveRuns: 0 } })
        assert.deepStrictEqual(snapshot(outside), before, "nothing under the mount changed")
        assert.isFalse(nfs.existsSync(runPath), "the run left its place")
        const trashed = nfs.readdirSync(NodePath.join(tenant, ".trash"))
        assert.strictEqual(trashed.length, 1)
        const mountPoint = NodePath.join(tenant, ".trash", trashed[0]!, "checkout")
        assert.deepStrictEqual(nfs.readdirSync(NodePath.join(tenant, ".trash", trashed[0]!)), ["checkout"], "the run's own files went")
        assert.deepStrictEqual(mountsUnder(tenant), [mountPoint])
        const reported = first.errors.find((e) => e.path === mountPoint)
        assert.isDefined(reported, JSON.stringify(first.errors))
        assert.match(reported!.message, /EXDEV \(CrossDevice\).*another file system is mounted here/)
        assert.include(reported!.message, runPath)
        // A later prune tries again, deletes nothing across, and says so again.
        const second = yield* workRuns.prune({ ...TOOL, policy: { maxInactiveRuns: 0 } })
        assert.isDefined(second.errors.find((e) => e.path === mountPoint && /EXDEV/.test(e.message)), JSON.stringify(second.errors))
        assert.deepStrictEqual(snapshot(outside), before)
        return second
      }).pipe(Effect.provide(servicesWith(walker, agent)))
      assert.isFalse(report.busy)
    }))

  it.scoped("release({ delete: true }) keeps the mounted tree, says why, and the run stays quarantined for the next prune", () =>
    Effect.gen(function*() {
      const { outside, agent } = yield* scratch
      const before = snapshot(outside)
      yield* Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        const { outcome, runPath } = yield* Effect.scoped(Effect.gen(function*() {
          const run = yield* workRuns.acquire({ ...TOOL, retention: false })
          nfs.mkdirSync(NodePath.join(run.path, "a", "checkout"), { recursive: true })
          nfs.writeFileSync(NodePath.join(run.path, "a", "own"), "ours")
          nfs.mkdirSync(NodePath.join(run.path, "b"))
          bindMountNow(outside, NodePath.join(run.path, "a", "checkout"))
          return { outcome: yield* run.release({ delete: true }), runPath: run.path }
        }))
        const tenant = NodePath.dirname(runPath)
        assert.deepStrictEqual(snapshot(outside), before, "nothing under the mount changed")
        assert.strictEqual(outcome.deleted, false)
        const [mountPoint] = mountsUnder(tenant)
        assert.isDefined(mountPoint)
        assert.match(mountPoint!, /\/\.trash\/[^/]+\/a\/checkout$/)
        assert.include(outcome.keptBecause ?? "", mountPoint!)
        assert.match(outcome.keptBecause ?? "", /EXDEV/)
        const quarantined = NodePath.dirname(NodePath.dirname(mountPoint!))
        assert.deepStrictEqual(nfs.readdirSync(quarantined), ["a"])
        assert.deepStrictEqual(nfs.readdirSync(NodePath.join(quarantined, "a")), ["checkout"])
        const report = yield* workRuns.prune({ ...TOOL, policy: { maxInactiveRuns: 0 } })
        assert.isDefined(report.errors.find((e) => e.path === mountPoint), JSON.stringify(report.errors))
        assert.deepStrictEqual(snapshot(outside), before)
      }).pipe(Effect.provide(servicesWith(walker, agent)))
    }))

  it.scoped("work rm (removeRuns) of a run holding a mount point says it was not deleted, never 'Removed'", () =>
    Effect.gen(function*() {
      const { outside, agent } = yield* scratch
      const before = snapshot(outside)
      yield* Effect.gen(function*() {
        const workRuns = yield* WorkRuns
        const runId = yield* Effect.scoped(Effect.gen(function*() {
          const run = yield* workRuns.acquire({ ...TOOL, retention: false })
          nfs.mkdirSync(NodePath.join(run.path, "checkout"))
          bindMountNow(outside, NodePath.join(run.path, "checkout"))
          return run.runId
        }))
        const [outcome] = yield* workRuns.removeRuns({ ...TOOL, runIds: [runId] })
        assert.strictEqual(outcome?._tag, "Skipped", JSON.stringify(outcome))
        assert.match(outcome?._tag === "Skipped" ? outcome.why : "", /quarantined in \.trash, not deleted.*EXDEV/)
        assert.deepStrictEqual(snapshot(outside), before)
      }).pipe(Effect.provide(servicesWith(walker, agent)))
    }))
})
