/**
 * The views read each run directory in one port call (`readDirectoryPartsEach`; in C for the native walker),
 * and `work ls` takes each run's size from that same pass where it is what its own budgeted walk would
 * answer (readModel `reusableMeasure`). Over random trees (owned runs holding files at several depths, and
 * hostile ones: garbage and oversized manifests, one the schema's interpreter threw on, a symlinked
 * manifest, a symlinked run, a `.leases` that is a file or a link, stray files) and random budgets, on the
 * Memory layer and on real directories with both
 * Node walkers: every row of `work ls` has the size the walks of before gave it (a tenant's runs newest
 * first, each measured with what its tenant's budget has left), and the rows and unowned entries are those
 * the pruner's own read of the same tenant makes of it.
 */
import * as nfs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer } from "effect"
import { encodeManifest, MANIFEST_MAX_BYTES } from "../../src/domain/Formats.js"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { DEFAULT_REMOTE_LEASE_TTL_MS } from "../../src/domain/Retention.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { nodeFileSystemWith, type Walker } from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { availableWalkerKind } from "../../src/layers/node/walkers.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { Inventory, type Size } from "../../src/services/Inventory.js"
import { tenantItems } from "../../src/services/internal/readModel.js"
import { AGENT, spawn } from "./migrationSupport.js"

const TENANTS = [["tools", "bash"], ["mcp", "fs"]] as const
const KINDS = ["owned", "owned", "owned", "garbage", "trap", "oversized", "manifestLink", "mismatch", "noManifest", "file", "runLink", "leasesFile", "leasesLink"] as const
type Kind = (typeof KINDS)[number]

const runArb = fc.record({
  kind: fc.constantFrom(...KINDS),
  /** Files below the run: how deep, how many bytes. */
  files: fc.array(fc.record({ depth: fc.integer({ min: 0, max: 3 }), bytes: fc.integer({ min: 0, max: 5000 }) }), { maxLength: 6 }),
  age: fc.integer({ min: 0, max: 50 })
})
const caseArb = fc.record({
  tenants: fc.array(fc.array(runArb, { maxLength: 7 }), { minLength: 1, maxLength: TENANTS.length }),
  maxEntries: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(100_000)),
  maxDepth: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constant(64))
})
type Case = typeof caseArb extends fc.Arbitrary<infer A> ? A : never

/** What a tree is made of, planted by each layer its own way. */
interface Planter {
  readonly dir: (path: string) => Effect.Effect<void>
  readonly file: (path: string, content: string | Uint8Array) => Effect.Effect<void>
  readonly link: (target: string, path: string) => Effect.Effect<void>
}

const plant = (p: Planter, agent: string, c: Case, now: number) =>
  Effect.gen(function*() {
    for (const dir of [agent, `${agent}/work`, `${agent}/work/tools`, `${agent}/work/mcp`]) yield* p.dir(dir)
    for (const [t, runs] of c.tenants.entries()) {
      const [category, tenant] = TENANTS[t]!
      const tenantDir = `${agent}/work/${category}/${tenant}`
      yield* p.dir(tenantDir)
      for (const [r, run] of runs.entries()) {
        const runId = `r${r}`
        const dir = `${tenantDir}/${runId}`
        const at = now - run.age * 60_000
        const manifest = (named: string) =>
          encodeManifest({ version: 2, category, tenant: named, runId, kind: "named", createdAt: at, createdBy: { host: "h1", pid: 1 }, releasedAt: at })
        const kind: Kind = run.kind
        if (kind === "file") {
          yield* p.file(dir, "a file where a run belongs")
          continue
        }
        if (kind === "runLink") {
          yield* p.link(`${tenantDir}/r0`, dir)
          continue
        }
        yield* p.dir(dir)
        const manifestPath = `${dir}/.pi-work-run.json`
        if (kind === "garbage") yield* p.file(manifestPath, "{ not json")
        else if (kind === "trap") yield* p.file(manifestPath, `{"version":{"toString":[]}}`)
        else if (kind === "oversized") yield* p.file(manifestPath, `{"pad":"${"x".repeat(MANIFEST_MAX_BYTES)}"}`)
        else if (kind === "manifestLink") yield* p.link(`${agent}/work`, manifestPath)
        else if (kind === "mismatch") yield* p.file(manifestPath, manifest("other"))
        else if (kind !== "noManifest") yield* p.file(manifestPath, manifest(tenant))
        if (kind === "leasesFile") yield* p.file(`${dir}/.leases`, "not a directory")
        else if (kind === "leasesLink") yield* p.link(`${agent}/work`, `${dir}/.leases`)
        else yield* p.dir(`${dir}/.leases`)
        for (const [f, file] of run.files.entries()) {
          let parent = dir
          for (let d = 0; d < file.depth; d++) {
            parent = `${parent}/d${d}`
            yield* p.dir(parent)
          }
          yield* p.file(`${parent}/f${f}`, "y".repeat(file.bytes))
        }
      }
    }
  })

/**
 * `work ls` over the case, beside what its walks of before answered: each tenant's runs in the listing's
 * order, each measured by `measureTree` within what the tenant's budget had left (not measured once spent),
 * and the rows and unowned entries the pruner's read of each tenant makes.
 */
const compare = (agent: string, c: Case, label: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    const host = yield* Host
    const inventory = yield* Inventory
    const options = { maxEntries: c.maxEntries, maxDepth: c.maxDepth, webDataRoot: `${agent}-no-web` }
    const list = yield* inventory.listRuns(undefined, options)
    const expected = new Map<string, Size>()
    let tenantKey = ""
    let remaining = 0
    for (const row of list.runs) {
      const key = `${row.category}/${row.tenant}`
      if (key !== tenantKey) {
        tenantKey = key
        remaining = c.maxEntries
      }
      if (remaining <= 0) {
        expected.set(row.path, { bytes: 0, apparentBytes: 0, entries: 0, complete: false, measured: false })
        continue
      }
      const m = yield* fs.measureTree(row.path, { maxEntries: remaining, maxDepth: c.maxDepth })
      remaining -= m.entries
      expected.set(row.path, { bytes: m.bytes, apparentBytes: m.apparentBytes, entries: m.entries, complete: m.complete, measured: true })
    }
    for (const row of list.runs) assert.deepStrictEqual(row.size, expected.get(row.path), `${label}: ${row.path}`)
    assert.deepStrictEqual(list.errors, [], label)
    // The rows and unowned entries are what the pruner's read (the one that decides what is removed) makes of each tenant.
    const deps = { fs, host, remoteLeaseTtlMs: DEFAULT_REMOTE_LEASE_TTL_MS, staleUnreadableMs: DEFAULT_STALE_UNREADABLE_MS }
    const owned: Array<string> = []
    const unowned: Array<string> = []
    for (const [t] of c.tenants.entries()) {
      const [category, tenant] = TENANTS[t]!
      const tenantDir = `${agent}/work/${category}/${tenant}`
      const scan = yield* tenantItems(deps, { category, tenant }, tenantDir, yield* fs.readDirectory(tenantDir), { maxRuns: 10_000 })
      for (const item of scan.items) {
        if (item._tag === "Run") owned.push(`${item.path} ${item.leases.problem ?? "ok"}`)
        if (item._tag === "Unowned") unowned.push(`${item.path} ${item.why}`)
      }
    }
    assert.deepStrictEqual(list.runs.map((r) => r.path).sort(), owned.map((o) => o.split(" ")[0]!).sort(), `${label}: owned runs`)
    assert.deepStrictEqual(list.unowned.map((u) => `${u.path} ${u.why}`).sort(), unowned.sort(), `${label}: unowned entries`)
    // Runs with a `.leases` the library cannot trust are held, as the pruner holds them.
    const held = new Set(owned.filter((o) => !o.endsWith(" ok")).map((o) => o.split(" ")[0]))
    for (const row of list.runs) assert.strictEqual(row.state === "active", held.has(row.path), `${label}: ${row.path} state`)
    return list
  })

describe("work ls reads each run once: its rows and sizes are those of a read and a walk per run", () => {
  it.effect("on the Memory layer, over random trees and budgets", () =>
    Effect.gen(function*() {
      let hostile = 0
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(caseArb, (c) =>
            Effect.runPromise(Effect.gen(function*() {
              const world = MemoryWorld.make()
              const now = Date.now()
              yield* plant({
                dir: (path) => world.mkdirFixture(path, { mode: 0o700 }),
                file: (path, content) => world.writeFixture(path, content),
                link: (target, path) => world.symlinkFixture(target, path)
              }, AGENT, c, now)
              const ports = spawn(world).layer
              const services = Inventory.layer.pipe(Layer.provideMerge(Layer.merge(ports, AgentDir.layerWith(AGENT).pipe(Layer.provide(ports)))))
              const list = yield* compare(AGENT, c, "Memory").pipe(Effect.provide(services))
              hostile += list.unowned.length
            }))
          ),
          { numRuns: 60 }
        )
      )
      assert.isAbove(hostile, 0, "hostile entries were met")
    }), 120_000)

  const walkers: ReadonlyArray<Walker> = availableWalkerKind() === "native" ? ["native", "portable"] : ["portable"]
  for (const walker of walkers) {
    it.effect(`on real directories, ${walker} walker, over random trees and budgets`, () =>
      Effect.gen(function*() {
        const scratch = nfs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-view-reads-"))
        let n = 0
        let measured = 0
        try {
          yield* Effect.promise(() =>
            fc.assert(
              fc.asyncProperty(caseArb, (c) =>
                Effect.runPromise(Effect.gen(function*() {
                  const agent = NodePath.join(scratch, `agent-${n++}`)
                  yield* plant({
                    dir: (path) => Effect.sync(() => nfs.mkdirSync(path, { recursive: true, mode: 0o700 })),
                    file: (path, content) => Effect.sync(() => nfs.writeFileSync(path, content, { mode: 0o600 })),
                    link: (target, path) => Effect.sync(() => nfs.symlinkSync(target, path))
                  }, agent, c, Date.now())
                  const ports = Layer.mergeAll(nodeFileSystemWith(walker), NodeHost.layer)
                  const services = Inventory.layer.pipe(Layer.provideMerge(Layer.merge(ports, AgentDir.layerWith(agent).pipe(Layer.provide(ports)))))
                  const list = yield* compare(agent, c, walker).pipe(Effect.provide(services))
                  measured += list.runs.filter((r) => r.size.measured).length
                  nfs.rmSync(agent, { recursive: true, force: true })
                }))
              ),
              { numRuns: 25 }
            )
          )
        } finally {
          nfs.rmSync(scratch, { recursive: true, force: true })
        }
        assert.isAbove(measured, 0)
      }), 120_000)
  }
})
