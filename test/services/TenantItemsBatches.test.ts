/**
 * The read model's tenant scan reads run manifests and lease listings ahead, a batch at a time
 * (`tenantItems`, `SCAN_BATCH` = 64): over a tenant of more runs than two batches, of every kind, its items
 * are what reading each run alone (`readManifest`, `readLeases`) says, in name order, under the same run
 * limit and lease budget.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeManifest } from "../../src/domain/Formats.js"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { DEFAULT_REMOTE_LEASE_TTL_MS } from "../../src/domain/Retention.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import type { Deps } from "../../src/services/internal/deps.js"
import { ScanBudget, tenantItems } from "../../src/services/internal/readModel.js"
import { manifestTimes, readLeases, readManifest } from "../../src/services/internal/runFacts.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`
const address = { category: "tools", tenant: "bash" } as const
const RUNS = 150

describe("tenantItems reads ahead in batches", () => {
  it.scoped("and answers what reading each run alone answers, under the run limit and the lease budget", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
      const deps: Deps = { fs: p.fs, host: p.host, remoteLeaseTtlMs: DEFAULT_REMOTE_LEASE_TTL_MS, staleUnreadableMs: DEFAULT_STALE_UNREADABLE_MS }
      const dying = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
      for (let i = 0; i < RUNS; i++) {
        const runId = `run-${String(i).padStart(3, "0")}`
        const dir = `${tenantDir}/${runId}`
        // Some stamped far in the future: their last use is the manifest's mtime (manifestTimes looks).
        const createdAt = i % 23 === 2 ? 9_000_000_000_000 : i
        const manifest = { version: 2 as const, ...address, runId, kind: "named" as const, createdAt, createdBy: { host: "h1", pid: 7 } }
        if (i % 13 === 5) yield* world.writeFixture(`${tenantDir}/${runId}`, "a file where a run belongs")
        else if (i % 13 === 6) yield* world.symlinkFixture("/elsewhere", dir)
        else if (i % 13 === 7) yield* world.writeFixture(`${dir}/out.txt`, "no manifest")
        else if (i % 13 === 8) yield* world.writeFixture(`${dir}/.pi-work-run.json`, encodeManifest({ ...manifest, tenant: "other" }))
        else if (i % 13 === 9) yield* world.writeFixture(`${dir}/.pi-work-run.json`, "{ torn")
        else yield* world.writeFixture(`${dir}/.pi-work-run.json`, encodeManifest(manifest))
        // Live leases (some on unowned directories), a dead holder's lease, an empty one, a symlinked .leases.
        if (i % 5 === 0 && i % 13 !== 5 && i % 13 !== 6) {
          const holder = i % 10 === 0 ? p : dying
          yield* world.writeFixture(`${dir}/.leases/h1-${holder.host.pid}-${i}.json`, JSON.stringify({ version: 2, host: "h1", bootId: world.bootId("h1"), pid: holder.host.pid, processStartedAt: world.startTimeOf("h1", holder.host.pid), acquiredAt: 0, heartbeatAt: 0 }))
        }
        const aDirectory = i % 13 !== 5 && i % 13 !== 6
        if (i % 17 === 3 && aDirectory) yield* world.writeFixture(`${dir}/.leases/empty.json`, "")
        if (i % 19 === 4 && aDirectory && i % 5 !== 0 && i % 17 !== 3) yield* world.symlinkFixture("/elsewhere", `${dir}/.leases`)
      }
      world.kill("h1", dying.host.pid)
      const entries = yield* p.fs.readDirectory(tenantDir)
      // The pruner's read, and a view's (one call per batch for each run's parts, read ahead; with sizes for `work ls`).
      const views = [undefined, {}, { measure: { maxEntries: 400, maxDepth: 3 } }]
      for (const [view, options] of views.flatMap((v) => [
        { maxRuns: RUNS, unownedLeases: false, budget: undefined },
        { maxRuns: RUNS, unownedLeases: true, budget: undefined },
        { maxRuns: 100, unownedLeases: true, budget: undefined },
        { maxRuns: RUNS, unownedLeases: true, budget: 25 }
      ].map((o) => [v, o] as const))) {
        const label = JSON.stringify({ ...options, view })
        const budget = options.budget === undefined ? undefined : new ScanBudget(options.budget)
        const scanned = yield* tenantItems(deps, address, tenantDir, entries, {
          maxRuns: options.maxRuns,
          unownedLeases: options.unownedLeases,
          ...(budget ? { budget } : {}),
          ...(view ? { view } : {})
        })
        for (const item of scanned.items) {
          if (item._tag !== "Run") continue
          // A view keeps no manifest bytes; its sizes are what a measure within their cap answers.
          assert.strictEqual(item.owned === null, view !== undefined, label)
          if (item.measured !== undefined) {
            assert.deepStrictEqual(item.measured.measure, yield* p.fs.measureTree(item.path, { maxEntries: item.measured.cap, maxDepth: 3 }), label)
          }
        }
        const measuredRuns = scanned.items.filter((item) => item._tag === "Run" && item.measured !== undefined).length
        if (view?.measure === undefined) assert.strictEqual(measuredRuns, 0, label)
        else assert.isAbove(measuredRuns, 0, label)
        // Each run read alone, in name order, the same budget taken.
        const alone = options.budget === undefined ? undefined : new ScanBudget(options.budget)
        const expected: Array<string> = []
        for (const entry of entries.slice(0, options.maxRuns)) {
          if (alone?.truncated === true) continue
          const path = `${tenantDir}/${entry.name}`
          if (entry.type !== "Directory") {
            expected.push(`${entry.name} Unowned`)
            continue
          }
          const manifest = yield* readManifest(deps, path, { ...address, runId: entry.name })
          const leases = manifest._tag === "Owned" || options.unownedLeases ? yield* readLeases(deps, path) : null
          if (leases !== null) alone?.take(leases.leases.length)
          const verdicts = leases === null ? "-" : `${leases.problem ?? ""}[${leases.leases.map((l) => `${l.name}:${l.verdict.alive}`).join(",")}]`
          const what = manifest._tag === "Owned"
            ? `Run ${JSON.stringify(yield* manifestTimes(deps, path, manifest.manifest))}`
            : `Unowned ${manifest._tag === "Mismatch" ? `manifest names ${manifest.found}` : manifest.why}`
          expected.push(`${entry.name} ${what} ${verdicts}`)
        }
        const got = scanned.items.map((item) => {
          if (item._tag === "LibraryEntry") return `${item.name} library`
          if (item._tag === "Unowned" && item.leases === null && item.type !== "Directory") return `${item.name} Unowned`
          const leases = item.leases
          const verdicts = leases === null ? "-" : `${leases.problem ?? ""}[${leases.leases.map((l) => `${l.name}:${l.verdict.alive}`).join(",")}]`
          const what = item._tag === "Run" ? `Run ${JSON.stringify(item.times)}` : `Unowned ${item.why}`
          return `${item.name} ${what} ${verdicts}`
        })
        assert.deepStrictEqual(got, expected, label)
        assert.strictEqual(scanned.candidates, RUNS, label)
        assert.strictEqual(scanned.truncated, options.maxRuns < RUNS, label)
        assert.strictEqual(budget?.truncated, alone?.truncated, label)
      }
      // The tenant holds every kind, more runs than two batches, and live and dead leases both.
      const all = yield* tenantItems(deps, address, tenantDir, entries, { maxRuns: RUNS, unownedLeases: true })
      const kinds = new Set(all.items.map((item) => (item._tag === "Unowned" ? item.kind : item._tag)))
      assert.deepStrictEqual([...kinds].sort(), ["ManifestMismatch", "NoManifest", "NotADirectory", "Run", "Symlink"])
      const verdicts = all.items.flatMap((item) => (item._tag === "LibraryEntry" ? [] : item.leases?.leases.map((l) => l.verdict.alive) ?? []))
      assert.include(verdicts, true)
      assert.include(verdicts, false)
    }))
})
