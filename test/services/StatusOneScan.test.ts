/**
 * `status` reads the agent dir once (docs/architecture.md "One read model"): the doctor's facts serve the
 * inventory when they hold what its own scan would read (Inventory `factsSuffice`). Over random trees (owned
 * runs, runs naming another tenant, garbage manifests, directories without one, stray files, leases) and random
 * bounds, the summary made from the doctor's facts equals the summary the inventory makes with a scan of its
 * own, and the doctor's report beside the facts is `doctor`'s: sharing the read changes no answer, and a tree
 * the facts do not cover (a tenant over `maxRunsPerTenant`, the scan cut short, something unreadable) is
 * scanned again under the inventory's own bounds. Tenants measured during the doctor's read (status does so) give
 * the summary's sizes only when measured with the summary's own budget; with another, the summary walks them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer, TestClock } from "effect"
import { encodeManifest } from "../../src/domain/Formats.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { Doctor } from "../../src/services/Doctor.js"
import { Inventory, tenantSizeBudget } from "../../src/services/Inventory.js"
import { Status } from "../../src/services/Status.js"
import { AGENT, spawn } from "./migrationSupport.js"

const DAY = 24 * 60 * 60 * 1000
const WORK = `${AGENT}/work`
const WEB = "/home/user/.pi/web/data"
const TENANTS = [["tools", "bash"], ["tools", "git"], ["mcp", "fs"]] as const

const KINDS = ["owned", "owned", "owned", "mismatch", "garbage", "noManifest", "file", "leased"] as const
type Kind = (typeof KINDS)[number]

const caseArb = fc.record({
  tenants: fc.array(fc.array(fc.constantFrom(...KINDS), { maxLength: 8 }), { minLength: 1, maxLength: TENANTS.length }),
  /** Extensions' tiers, for the summary's extension rows. */
  extensions: fc.subarray(["notes", "git"]),
  maxRunsPerTenant: fc.oneof(fc.integer({ min: 0, max: 8 }), fc.constant(10_000)),
  maxScanEntries: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(100_000)),
  doctorMaxEntries: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(100_000)),
  /** The summary's own size walks' budget (`maxEntries`), and whether the doctor's read measures tenants with it or with another. */
  maxEntries: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constant(100_000)),
  sizesWith: fc.constantFrom("same", "other", "none")
})
type Case = typeof caseArb extends fc.Arbitrary<infer A> ? A : never

const services = (world: MemoryWorld) => {
  const ports = spawn(world).layer
  const agentDir = AgentDir.layerWith(AGENT).pipe(Layer.provide(ports))
  const base = Layer.merge(ports, agentDir)
  return Status.layer.pipe(Layer.provideMerge(Layer.mergeAll(Inventory.layer, Doctor.layer).pipe(Layer.provideMerge(base))))
}

const plant = (world: MemoryWorld, c: Case, now: number) =>
  Effect.gen(function*() {
    for (const dir of [AGENT, WORK, `${WORK}/tools`, `${WORK}/mcp`]) yield* world.mkdirFixture(dir, { mode: 0o700 })
    for (const [i, kinds] of c.tenants.entries()) {
      const [category, tenant] = TENANTS[i]!
      const dir = `${WORK}/${category}/${tenant}`
      yield* world.mkdirFixture(dir, { mode: 0o700 })
      for (const [r, kind] of kinds.entries()) {
        const runId = `r${r}`
        const at = now - r * DAY
        const manifest = (named: string) =>
          encodeManifest({ version: 2, category, tenant: named, runId, kind: "named", createdAt: at, createdBy: { host: "h1", pid: 1 }, releasedAt: at })
        const write = (k: Kind) => {
          switch (k) {
            case "owned":
              return world.writeFixture(`${dir}/${runId}/.pi-work-run.json`, manifest(tenant))
            case "leased":
              return Effect.zipRight(
                world.writeFixture(`${dir}/${runId}/.pi-work-run.json`, manifest(tenant)),
                world.writeFixture(`${dir}/${runId}/.leases/h1-999-x.json`, "not a lease")
              )
            case "mismatch":
              return world.writeFixture(`${dir}/${runId}/.pi-work-run.json`, manifest("other"))
            case "garbage":
              return world.writeFixture(`${dir}/${runId}/.pi-work-run.json`, "{ not json")
            case "noManifest":
              return world.writeFixture(`${dir}/${runId}/data.txt`, "x")
            case "file":
              return world.writeFixture(`${dir}/${runId}`, "a file where a run belongs")
          }
        }
        yield* write(kind)
      }
    }
    for (const ns of c.extensions) yield* world.writeFixture(`${AGENT}/state/extensions/${ns}/data.json`, "{}")
  })

describe("Status reads the agent dir once", () => {
  it.effect.prop(
    "the summary from the doctor's facts is the inventory's own, and the doctor's report beside them is doctor's",
    [caseArb],
    ([c]) =>
      Effect.gen(function*() {
        yield* TestClock.adjust(100 * DAY)
        const world = MemoryWorld.make({ journal: false })
        yield* plant(world, c, yield* TestClock.currentTimeMillis)
        yield* Effect.gen(function*() {
          const inventory = yield* Inventory
          const doctor = yield* Doctor
          const limits = { maxRunsPerTenant: c.maxRunsPerTenant, maxScanEntries: c.maxScanEntries, maxEntries: c.maxEntries, webDataRoot: WEB }
          // Tenants measured during the doctor's read (as status does), with the summary's budget or another one,
          // whose sizes the summary must then not take.
          const budget = tenantSizeBudget(limits)
          const tenantSizes = c.sizesWith === "same" ? budget : c.sizesWith === "other" ? { ...budget, maxEntries: budget.maxEntries + 1 } : undefined
          const shared = yield* doctor.doctorWithFacts({ webDataRoot: WEB, maxEntries: c.doctorMaxEntries, tenantSizes })
          assert.deepStrictEqual(shared.report, yield* doctor.doctor({ webDataRoot: WEB, maxEntries: c.doctorMaxEntries }))
          const fromFacts = yield* inventory.summary(limits, shared.facts)
          const ownScan = yield* inventory.summary(limits)
          assert.deepStrictEqual(fromFacts, ownScan)
          // And the tree is read: every owned run of a tenant the bound lets through is counted.
          const owned = c.tenants.reduce((n, kinds) => n + kinds.slice(0, c.maxRunsPerTenant).filter((k) => k === "owned" || k === "leased").length, 0)
          if (!ownScan.truncated) assert.strictEqual(ownScan.tenants.reduce((n, t) => n + t.runs, 0), owned)
        }).pipe(Effect.provide(services(world)))
      }),
    { fastCheck: { numRuns: 60 } }
  )

  it.effect("status's report is the summary and doctor's count of one read, on a tree the facts cover", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust(100 * DAY)
      const world = MemoryWorld.make({ journal: false })
      yield* plant(world, { tenants: [["owned", "leased", "garbage"], ["owned"]], extensions: ["notes"], maxRunsPerTenant: 10_000, maxScanEntries: 100_000, doctorMaxEntries: 100_000, maxEntries: 100_000, sizesWith: "same" }, yield* TestClock.currentTimeMillis)
      yield* Effect.gen(function*() {
        const status = yield* (yield* Status).status({ webDataRoot: WEB })
        const summary = yield* (yield* Inventory).summary({ webDataRoot: WEB })
        const report = yield* (yield* Doctor).doctor({ webDataRoot: WEB })
        assert.deepStrictEqual(status.tenants, summary.tenants)
        assert.deepStrictEqual(status.extensions, summary.extensions)
        assert.strictEqual(status.doctor.findings, report.findings.length)
        assert.isTrue(report.findings.length > 0) // the garbage manifest and the lease nobody wrote
        assert.deepStrictEqual(status.tenants.map((t) => [t.runs, t.unowned, t.active]), [[2, 1, 1], [1, 0, 0]])
      }).pipe(Effect.provide(services(world)))
    }))
})
