/**
 * `Inventory.pruneTargets` (what `work prune --all` works through) over the simulated world: every category
 * and tenant directory ends up in exactly one of prunable (`tenants`), refused (unsafe: WR10) or `misnamed`
 * (a name the library never makes: WR2), so none is passed over in silence.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { segmentViolation } from "../../src/domain/Segment.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { Inventory } from "../../src/services/Inventory.js"
import { doctorAt } from "../support/doctor.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const name = fc.constantFrom("tools", "bash", "Tools", "Bad_Name", "con", "x.", "-lead", "ok-1", "a".repeat(65))

describe("pruneTargets: no work directory passed over in silence (Memory)", () => {
  it.scoped.prop(
    "each category and tenant directory is prunable, refused or misnamed, and misnamed exactly when its name (or its category's) breaks WR2",
    [fc.uniqueArray(fc.tuple(name, name), { minLength: 1, maxLength: 6, selector: ([c, t]) => `${c}/${t}` })],
    ([dirs]) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make({ journal: false })
        const p = yield* spawnProcess(world)
        for (const path of [AGENT_DIR, `${AGENT_DIR}/work`]) yield* world.mkdirFixture(path, { mode: 0o700, uid: p.host.uid ?? 1000 })
        for (const [category, tenant] of dirs) {
          yield* world.mkdirFixture(`${AGENT_DIR}/work/${category}`, { mode: 0o700, uid: p.host.uid ?? 1000 })
          yield* world.mkdirFixture(`${AGENT_DIR}/work/${category}/${tenant}`, { mode: 0o700, uid: p.host.uid ?? 1000 })
        }
        const targets = yield* Effect.flatMap(Inventory.make, (i) => i.pruneTargets).pipe(
          Effect.provideService(AgentDir, AgentDir.at(AGENT_DIR)),
          Effect.provideService(FileSystem, p.fs),
          Effect.provideService(Host, p.host)
        )
        assert.deepStrictEqual(targets.refused, [])
        const prunable = new Set(targets.tenants.map((t) => `${t.category}/${t.tenant}`))
        const misnamed = new Set(targets.misnamed.map((m) => `${m.category}/${m.tenant}`))
        for (const [category, tenant] of dirs) {
          const key = `${category}/${tenant}`
          if (segmentViolation(category) !== null) assert.isTrue(misnamed.has(`${category}/*`), key)
          else if (segmentViolation(tenant) !== null) assert.isTrue(misnamed.has(key), key)
          else assert.isTrue(prunable.has(key), key)
        }
        for (const m of targets.misnamed) assert.match(m.detail, /^its name must/)
        // The doctor names the same directories (a warning each), by the same rule: never "no findings" beside
        // a prune that refuses them. A tenant inside a misnamed category is named too (the doctor reports
        // every problem; the prune stops at the category).
        const report = yield* doctorAt(AGENT_DIR).pipe(Effect.provideService(FileSystem, p.fs), Effect.provideService(Host, p.host))
        const found = new Set(report.findings.filter((f) => f.code === "work-misnamed-directory").map((f) => f.path))
        const expected = new Set(dirs.flatMap(([category, tenant]) => [
          ...(segmentViolation(category) !== null ? [`work/${category}`] : []),
          ...(segmentViolation(tenant) !== null ? [`work/${category}/${tenant}`] : [])
        ]))
        assert.deepStrictEqual([...found].sort(), [...expected].sort())
        for (const f of report.findings.filter((f) => f.code === "work-misnamed-directory")) assert.strictEqual(f.severity, "warning")
      }),
    { fastCheck: { numRuns: 30 } }
  )
})
