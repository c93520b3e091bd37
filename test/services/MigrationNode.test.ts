/**
 * The crash scenarios at small scale on the Node layer, in temp dirs. A crash is simulated at the port: after
 * k successful mutating calls every further call fails (errno "ECRASHED"), and the crashed run's Host claims a pid
 * that has exited, so its marker is provably dead. Cross-device moves are forced by failing renames into
 * `state/` with EXDEV (and, when /dev/shm is another filesystem, also checked against a real EXDEV).
 */
import * as childProcess from "node:child_process"
import * as crypto from "node:crypto"
import * as nfs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { FileSystemError } from "../../src/domain/Errors.js"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { runLayout, runToolkit } from "./migrationSupport.js"

const MUTATING = new Set([
  "makeDirectory", "writeFileExclusive", "writeFileAtomic", "rename", "removeFile", "removeDirectory",
  "symlink", "link", "utimes", "chmod", "copyFile", "removeTree"
])

interface Control {
  crashAfter: number
  mutations: number
  exdevUnder: string | undefined
}

/** The Node FileSystem behind a crash point and an optional simulated mount (EXDEV for renames into it). */
const controlledFs = (control: Control) =>
  Layer.effect(
    FileSystem,
    Effect.map(Effect.provide(FileSystem, NodeFileSystem.layer), (real) => {
      const wrapped: Record<string, unknown> = {}
      for (const [name, fn] of Object.entries(real)) {
        wrapped[name] = (...args: Array<unknown>) => {
          const crashed = () =>
            Effect.fail(new FileSystemError({ reason: "Unknown", errno: "ECRASHED", method: name, path: String(args[0]) }))
          if (control.mutations >= control.crashAfter) return crashed()
          if (name === "rename" && control.exdevUnder !== undefined) {
            const [from, to] = args as [string, string]
            const inside = (p: string) => p.startsWith(control.exdevUnder!)
            if (inside(from) !== inside(to)) {
              return Effect.fail(new FileSystemError({ reason: "CrossDevice", errno: "EXDEV", method: name, path: from }))
            }
          }
          const result = (fn as (...a: Array<unknown>) => Effect.Effect<unknown, FileSystemError>)(...args)
          return MUTATING.has(name) ? Effect.tap(result, () => Effect.sync(() => control.mutations++)) : result
        }
      }
      return wrapped as unknown as FileSystem["Type"]
    })
  )

/** A pid that has exited: the crashed "process" the rerun must recognise as dead. */
const deadPid = childProcess.spawnSync(process.execPath, ["-e", ""]).pid!

const layerFor = (control: Control, crashedProcess: boolean) =>
  Layer.merge(
    controlledFs(control),
    crashedProcess
      ? Layer.effect(Host, Effect.map(Effect.provide(Host, NodeHost.layer), (h) => ({ ...h, pid: deadPid, selfStartTime: null })))
      : NodeHost.layer
  )

const snapshot = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const visit = (path: string) => {
    const st = nfs.lstatSync(path)
    const rel = NodePath.relative(root, path) || "."
    const mode = (st.mode & 0o7777).toString(8)
    if (st.isSymbolicLink()) out[rel] = `link:${nfs.readlinkSync(path)}`
    else if (st.isFile()) out[rel] = `file:${crypto.createHash("sha1").update(nfs.readFileSync(path)).digest("hex")}:${mode}`
    else if (st.isDirectory()) {
      out[rel] = `dir:${mode}`
      for (const name of nfs.readdirSync(path)) visit(NodePath.join(path, name))
    }
  }
  visit(root)
  return out
}

const text = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [rel, v] of Object.entries(snapshot(root))) {
    if (v.startsWith("file:")) out[rel] = nfs.readFileSync(NodePath.join(root, rel), "utf8")
  }
  return out
}

const tempDir = Effect.acquireRelease(
  Effect.sync(() => nfs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-migrate-"))),
  (d) => Effect.sync(() => nfs.rmSync(d, { recursive: true, force: true }))
)

const seedTree = (agent: string, files: Record<string, string>, symlinks: Record<string, string> = {}) => {
  for (const [rel, content] of Object.entries(files)) {
    const p = NodePath.join(agent, rel)
    nfs.mkdirSync(NodePath.dirname(p), { recursive: true, mode: 0o700 })
    nfs.writeFileSync(p, content, { mode: 0o600 })
  }
  for (const [rel, target] of Object.entries(symlinks)) {
    nfs.mkdirSync(NodePath.dirname(NodePath.join(agent, rel)), { recursive: true, mode: 0o700 })
    nfs.symlinkSync(target, NodePath.join(agent, rel))
  }
}

interface NodeScenario {
  readonly seed: (agent: string) => void
  readonly run: (agent: string) => Effect.Effect<boolean, unknown, FileSystem | Host>
  readonly exdevUnder?: (agent: string) => string
  readonly ignore?: (rel: string) => boolean
}

const unlimited = (): Control => ({ crashAfter: Number.POSITIVE_INFINITY, mutations: 0, exdevUnder: undefined })

/** Reference run, then a crash after every step k with a rerun; trees must match the reference. */
const crashEverywhereOnNode = (scenario: NodeScenario) =>
  Effect.gen(function*() {
    const compared = (agent: string) =>
      Object.fromEntries(Object.entries(snapshot(agent)).filter(([rel]) => !(scenario.ignore?.(rel) ?? false)))
    const runToEnd = (agent: string, exdev: string | undefined) =>
      Effect.gen(function*() {
        for (let i = 0; i < 10; i++) {
          const control = { ...unlimited(), exdevUnder: exdev }
          if (yield* Effect.provide(scenario.run(agent), layerFor(control, false))) return control.mutations
        }
        return assert.fail("never finished")
      })
    const base = yield* tempDir
    const refAgent = NodePath.join(base, "ref", "agent")
    scenario.seed(refAgent)
    const refExdev = scenario.exdevUnder?.(refAgent)
    const steps = yield* runToEnd(refAgent, refExdev)
    const expected = compared(refAgent)
    assert.strictEqual(yield* runToEnd(refAgent, refExdev), 0, "a second run mutated something")
    assert.isAbove(steps, 0)
    for (let k = 0; k <= steps; k++) {
      const agent = NodePath.join(base, `k${k}`, "agent")
      scenario.seed(agent)
      const exdev = scenario.exdevUnder?.(agent)
      const control: Control = { crashAfter: k, mutations: 0, exdevUnder: exdev }
      yield* Effect.provide(scenario.run(agent), layerFor(control, true)).pipe(Effect.exit)
      yield* runToEnd(agent, exdev)
      assert.deepStrictEqual(compared(agent), expected, `crash after step ${k} of ${steps}`)
      assert.strictEqual(yield* runToEnd(agent, exdev), 0, `rerun after crash ${k} still changes things`)
    }
    return { steps, refAgent }
  })

const layout = (agent: string) => Effect.map(runLayout({ lockAttempts: 1 }, agent), (r) => !r.partial && r.errors.length === 0)

describe("migrations on the Node layer survive a crash at every step", () => {
  it.scoped("trust merge", () =>
    Effect.gen(function*() {
      const { refAgent } = yield* crashEverywhereOnNode({
        seed: (agent) => seedTree(agent, { "settings.json": "{}", "trust.json": `{"/a":1,"/b":2}`, "state/trust.json": `{"/b":3}` }),
        run: layout
      })
      const t = text(refAgent)
      assert.deepStrictEqual(JSON.parse(t["state/trust.json"]!), { "/a": 1, "/b": 3 })
      assert.strictEqual(t["state/migration-conflicts/trust.json"], `{"/a":1,"/b":2}`)
      assert.deepStrictEqual(Object.keys(t).sort(), ["settings.json", "state/migration-conflicts/trust.json", "state/trust.json"])
    }))

  it.scoped("whole-root rename and per-entry merge with conflicts", () =>
    Effect.gen(function*() {
      const { refAgent } = yield* crashEverywhereOnNode({
        seed: (agent) =>
          seedTree(agent, {
            "backups/a": "A",
            "backups/sub/b": "B",
            "tmp/same": "same",
            "tmp/diff": "legacy",
            "tmp/d/x": "legacy x",
            "state/legacy-layout/tmp/same": "same",
            "state/legacy-layout/tmp/diff": "canonical",
            "state/legacy-layout/tmp/d/x": "canonical x"
          }, { "backups/link": "../settings.json" }),
        run: layout
      })
      assert.deepStrictEqual(text(refAgent), {
        "state/backups/config/a": "A",
        "state/backups/config/sub/b": "B",
        "state/legacy-layout/tmp/same": "same",
        "state/legacy-layout/tmp/diff": "canonical",
        "state/legacy-layout/tmp/d/x": "canonical x",
        "state/migration-conflicts/tmp/diff": "legacy",
        "state/migration-conflicts/tmp/d/x": "legacy x"
      })
      assert.strictEqual(nfs.readlinkSync(NodePath.join(refAgent, "state/backups/config/link")), "../settings.json")
    }))

  it.scoped("cross-device copy (EXDEV into state/)", () =>
    Effect.gen(function*() {
      const seed = (agent: string) =>
        seedTree(agent, {
          "trust.json": `{"/a":1}`,
          "auto-learn/o/1.jsonl": "one",
          "backups/b": "legacy b",
          "state/backups/config/b": "canonical b"
        }, { "auto-learn/dangling": "/nowhere" })
      const { refAgent } = yield* crashEverywhereOnNode({ seed, run: layout, exdevUnder: (agent) => NodePath.join(agent, "state") })
      const expected = {
        "state/trust.json": `{"/a":1}`,
        "state/legacy-layout/auto-learn/o/1.jsonl": "one",
        "state/backups/config/b": "canonical b",
        "state/migration-conflicts/backups/b": "legacy b"
      }
      assert.deepStrictEqual(text(refAgent), expected)
      assert.strictEqual(nfs.readlinkSync(NodePath.join(refAgent, "state/legacy-layout/auto-learn/dangling")), "/nowhere")
      // A real second filesystem, when this machine has one: state/ lives on /dev/shm through a root-level path.
      const shm = "/dev/shm"
      const base = yield* tempDir
      const realSecond = nfs.existsSync(shm) && nfs.statSync(shm).dev !== nfs.statSync(base).dev
      if (realSecond) {
        const stateDir = nfs.mkdtempSync(NodePath.join(shm, "pi-migrate-state-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => nfs.rmSync(stateDir, { recursive: true, force: true })))
        const agent = NodePath.join(base, "agent")
        nfs.mkdirSync(agent, { recursive: true })
        nfs.symlinkSync(stateDir, NodePath.join(agent, "state"))
        seed(agent)
        const report = yield* runLayout(undefined, agent).pipe(Effect.provide(Layer.merge(NodeFileSystem.layer, NodeHost.layer)))
        assert.deepStrictEqual(report.errors, [])
        assert.deepStrictEqual(text(stateDir), Object.fromEntries(Object.entries(expected).map(([k, v]) => [k.slice("state/".length), v])))
      }
    }))

  it.scoped("ledger merge", () =>
    Effect.gen(function*() {
      const key = (row: unknown) => String((row as { id: string }).id)
      const { refAgent } = yield* crashEverywhereOnNode({
        seed: (agent) =>
          seedTree(agent, {
            "state/x/old.jsonl": `{"id":"a","v":1}\n{"id":"b","v":1}\n`,
            "state/x/new.jsonl": `{"id":"b","v":2}\n`
          }),
        run: (agent) =>
          Effect.map(
            runToolkit({
              id: "x-split",
              entries: [{ id: "rows", kind: "merge-ledger", format: "jsonl", key, winner: "to", from: "state/x/old.jsonl", to: "state/x/new.jsonl" }]
            }, { lockAttempts: 1 }, agent),
            (r) => !r.failed
          ),
        // The audit journal may miss a record the crash cut off (the files say "already done"); it is not data.
        ignore: (rel) => rel === "state/migrations" || rel.startsWith("state/migrations/")
      })
      const t = text(refAgent)
      assert.strictEqual(t["state/x/new.jsonl"], `{"id":"b","v":2}\n{"id":"a","v":1}\n`)
      // Row b v1 lost to the declared winner, so the old ledger is kept for review, not deleted.
      assert.strictEqual(t["state/migration-conflicts/x-split/rows"], `{"id":"a","v":1}\n{"id":"b","v":1}\n`)
      assert.isUndefined(t["state/x/old.jsonl"])
      assert.match(t["state/migrations/x-split.jsonl"]!, /"outcome":"conflict-preserved"/)
    }))
})
