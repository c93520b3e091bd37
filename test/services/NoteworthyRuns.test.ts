/**
 * Status and the doctor keep no item for an owned run with nothing to report (readModel `runItems:
 * "noteworthy"`): such a run is only counted, in the tenant's `tally`. Over random tenants of quiet runs, runs
 * with an empty `.leases/`, dead, live, unreadable and remote leases, a `.leases` that is a file, far-future
 * manifest stamps and unowned directories, under random scan budgets and run bounds, on the Memory layer:
 * the items kept are exactly the noteworthy ones of a read that keeps them all, in the same order; the tally
 * is the count of that full read; the doctor's findings on the two reads are the same, so nothing the doctor
 * reports depends on an item it no longer keeps; and `work ls`' read (`runItems: "none"`) visits exactly the
 * full read's runs, in order, keeping the rest of its items and stopping where it stops.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, TestClock } from "effect"
import { encodeJsonBytes, encodeManifest } from "../../src/domain/Formats.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { findingsOf } from "../../src/services/Doctor.js"
import { type RunListing, runList, runRow, runRows, type Size } from "../../src/services/Inventory.js"
import { readOnlyDepsFromContext } from "../../src/services/internal/deps.js"
import { scanAgentDir, tallyOf, type TenantItem } from "../../src/services/internal/readModel.js"
import { runIsNoteworthy } from "../../src/services/internal/runFacts.js"
import { AGENT, HOST, spawn } from "./migrationSupport.js"

const DAY = 24 * 60 * 60 * 1000
const WORK = `${AGENT}/work`
const TENANTS = [["tools", "bash"], ["mcp", "fs"]] as const
const KINDS = ["quiet", "quiet", "emptyLeases", "deadLease", "liveLease", "garbageLease", "remoteLease", "leasesFile", "farFuture", "unowned"] as const
type Kind = (typeof KINDS)[number]

const caseArb = fc.record({
  tenants: fc.array(fc.array(fc.constantFrom(...KINDS), { maxLength: 9 }), { minLength: 1, maxLength: TENANTS.length }),
  maxEntries: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(100_000)),
  maxRunsPerTenant: fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constant(10_000))
})
type Case = typeof caseArb extends fc.Arbitrary<infer A> ? A : never

const plant = (world: MemoryWorld, c: Case, now: number, livePid: number) =>
  Effect.gen(function*() {
    for (const dir of [AGENT, WORK, `${WORK}/tools`, `${WORK}/mcp`]) yield* world.mkdirFixture(dir, { mode: 0o700 })
    for (const [t, kinds] of c.tenants.entries()) {
      const [category, tenant] = TENANTS[t]!
      const tenantDir = `${WORK}/${category}/${tenant}`
      yield* world.mkdirFixture(tenantDir, { mode: 0o700 })
      for (const [r, kind] of kinds.entries()) {
        const runId = `r${r}`
        const dir = `${tenantDir}/${runId}`
        const at = kind === "farFuture" ? now + 30 * DAY : now - (r + 1) * DAY
        const manifest = encodeManifest({ version: 2, category, tenant, runId, kind: "named", createdAt: at, createdBy: { host: HOST, pid: 1 }, releasedAt: at })
        const lease = (host: string, pid: number) =>
          encodeJsonBytes({ version: 2, host, pid, acquiredAt: now - DAY, heartbeatAt: now - DAY })
        yield* world.writeFixture(`${dir}/${kind === "unowned" ? "data.txt" : ".pi-work-run.json"}`, manifest)
        switch (kind) {
          case "emptyLeases":
            yield* world.mkdirFixture(`${dir}/.leases`, { mode: 0o700 })
            break
          case "deadLease":
            yield* world.writeFixture(`${dir}/.leases/${HOST}-999999-a.json`, lease(HOST, 999_999))
            break
          case "liveLease":
            yield* world.writeFixture(`${dir}/.leases/${HOST}-${livePid}-a.json`, lease(HOST, livePid))
            break
          case "garbageLease":
            yield* world.writeFixture(`${dir}/.leases/${HOST}-5-a.json`, "{ not a lease")
            break
          case "remoteLease":
            yield* world.writeFixture(`${dir}/.leases/elsewhere-5-a.json`, lease("elsewhere", 5))
            break
          case "leasesFile":
            yield* world.writeFixture(`${dir}/.leases`, "a file where the lease directory belongs")
            break
        }
      }
    }
  })

describe("views keep only the runs with something to report", () => {
  it.effect.prop(
    "kept items are the noteworthy ones of a full read, the tally counts the full read, and the doctor finds the same",
    [caseArb],
    ([c]) =>
      Effect.gen(function*() {
        yield* TestClock.adjust(100 * DAY)
        const world = MemoryWorld.make({ journal: false })
        const process = spawn(world)
        yield* plant(world, c, yield* TestClock.currentTimeMillis, process.pid)
        yield* Effect.gen(function*() {
          // The views' own deps: they read their own clock, never a probe (nothing written between the two reads).
          const deps = yield* readOnlyDepsFromContext
          const visited: Array<[string, TenantItem]> = []
          const read = (runItems: "all" | "noteworthy" | "none") =>
            scanAgentDir(deps, AGENT, {
              work: true,
              details: true,
              rootEntries: true,
              state: true,
              maxEntries: c.maxEntries,
              maxRunsPerTenant: c.maxRunsPerTenant,
              runItems,
              visitRun: runItems === "none" ? (tenant, run) => visited.push([`${tenant.category}/${tenant.tenant}`, run]) : undefined
            })
          const all = yield* read("all")
          const noteworthy = yield* read("noteworthy")
          const none = yield* read("none")
          for (const facts of [noteworthy, none]) {
            assert.deepStrictEqual([facts.scanned, facts.truncated, facts.unread], [all.scanned, all.truncated, all.unread])
          }
          const tenantsOf = (facts: typeof all) => facts.work!.categories.flatMap((category) => category.tenants)
          const fullTenants = tenantsOf(all)
          const keptTenants = tenantsOf(noteworthy)
          assert.strictEqual(keptTenants.length, fullTenants.length)
          const noneTenants = tenantsOf(none)
          const fullRuns: Array<[string, TenantItem]> = []
          let quiet = 0
          for (const [i, full] of fullTenants.entries()) {
            for (const item of full.items!.items) if (item._tag === "Run") fullRuns.push([`${full.category}/${full.tenant}`, item])
            assert.deepStrictEqual(noneTenants[i]!.items!.items, full.items!.items.filter((item) => item._tag !== "Run"))
            assert.deepStrictEqual(noneTenants[i]!.items!.tally, full.items!.tally)
            assert.deepStrictEqual([noneTenants[i]!.items!.candidates, noneTenants[i]!.items!.truncated], [full.items!.candidates, full.items!.truncated])
            const items = full.items!.items
            const kept = keptTenants[i]!.items!
            const worth = (item: TenantItem) => item._tag !== "Run" || runIsNoteworthy(item)
            assert.deepStrictEqual(kept.items, items.filter(worth))
            assert.deepStrictEqual(kept.tally, tallyOf(items))
            assert.deepStrictEqual(full.items!.tally, tallyOf(items))
            quiet += items.filter((item) => !worth(item)).length
          }
          assert.deepStrictEqual(visited, fullRuns)
          // `work ls`' rows made from the visits are the rows of the full read's items; `runList` over the full
          // read, given sizes, lists them with those sizes (the exported form callers of the library use).
          const made = new Map<string, Array<RunListing>>()
          for (const [key, run] of visited) {
            if (run._tag !== "Run") continue
            const [category, tenant] = key.split("/") as [string, string]
            const rows = made.get(key) ?? []
            rows.push(runRow({ category, tenant }, run))
            made.set(key, rows)
          }
          assert.deepStrictEqual(runRows(none, made), runRows(all))
          const sizeOf = (path: string): Size => ({ bytes: path.length, apparentBytes: 1, entries: 1, complete: path.length % 2 === 0, measured: true })
          const listed = runList({ facts: all, linkedFrom: null, scannedAt: 0, sizeOf, measureErrors: [] })
          assert.deepStrictEqual(listed.runs, runRows(all).runs.map((r) => ({ ...r, size: sizeOf(r.path) })))
          assert.strictEqual(listed.incomplete, listed.runs.some((r) => r.path.length % 2 === 1))
          // A quiet run is left out of the items (a released run without leases, or with an empty `.leases/`, and
          // only those), when the bounds let the read examine every run.
          if (!all.truncated && c.maxRunsPerTenant >= 9) {
            const planted = c.tenants.flat().filter((k: Kind) => k === "quiet" || k === "emptyLeases").length
            assert.strictEqual(quiet, planted)
          }
          const context = { staleUnreadableMs: deps.staleUnreadableMs, uid: deps.host.uid }
          assert.deepStrictEqual(findingsOf(noteworthy, context), findingsOf(all, context))
        }).pipe(Effect.provide(process.layer))
      }),
    { fastCheck: { numRuns: 60 } }
  )
})
