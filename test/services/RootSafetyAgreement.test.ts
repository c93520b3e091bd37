/**
 * WR10, one rule (docs/safety.md "How runs stay safe"): it was written twice (the doctor's check and the pruner's refusal) with two mode
 * formattings. Both now call `rootSafetyProblems` (src/domain/RootSafety.ts). For any type, owner and mode of
 * the work root, a category and a tenant, the pruner refuses exactly when the doctor reports the directory
 * (unsafe, or a stray file where a category or tenant belongs), names the shallowest one the doctor flags,
 * and its detail (the one mode string) is the doctor's. And `work prune --all`'s targets
 * (`Inventory.pruneTargets`, read from the one scan) accept exactly the tenants the doctor finds safe all the
 * way down and refuse the directories it flags.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import { modeString, rootSafetyProblems } from "../../src/domain/RootSafety.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { doctorAt } from "../support/doctor.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { Inventory } from "../../src/services/Inventory.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

type Kind = "directory" | "symlink" | "file"
const levelArb = fc.record({
  kind: fc.constantFrom<Kind>("directory", "directory", "directory", "symlink", "file"),
  foreign: fc.boolean(),
  // Any permission bits, setgid included (the mode string keeps it).
  mode: fc.integer({ min: 0, max: 0o7777 }).map((m) => m | 0o700)
})

const LEVELS = ["work", "work/tools", "work/tools/bash"] as const

describe("WR10: the doctor and the pruner judge a root the same way", () => {
  it.effect.prop(
    "the pruner refuses exactly the directories the doctor flags (type, owner, mode)",
    [fc.tuple(levelArb, levelArb, levelArb)],
    ([levels]) =>
      Effect.scoped(Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
        const me = p.host.uid ?? 1000
        yield* world.mkdirFixture(AGENT_DIR, { mode: 0o700, uid: me })
        yield* world.mkdirFixture("/elsewhere", { mode: 0o700, uid: me })
        for (const [i, level] of levels.entries()) {
          const path = `${AGENT_DIR}/${LEVELS[i]}`
          const uid = level.foreign ? me + 1 : me
          if (level.kind === "directory") yield* world.mkdirFixture(path, { mode: level.mode, uid })
          else if (level.kind === "symlink") yield* world.symlinkFixture("/elsewhere", path, { uid })
          else yield* world.writeFixture(path, "x", { mode: 0o600, uid })
          if (level.kind !== "directory") break
        }
        const before = world.tree("/")
        const pruned = yield* Effect.either(p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxInactiveRuns: 0 } }))
        const report = yield* doctorAt(AGENT_DIR).pipe(Effect.provideService(FileSystem, p.fs), Effect.provideService(Host, p.host))
        // A file where a category or tenant directory belongs is a stray entry to the doctor (a not-a-directory
        // refusal to the pruner): a finding on that path all the same.
        const levelPaths = new Set<string>(LEVELS)
        const unsafe = report.findings.filter((f) => f.code === "work-root-unsafe" || (f.code === "work-stray-entry" && levelPaths.has(f.path)))
        if (unsafe.length === 0) {
          assert.isTrue(Either.isRight(pruned), `pruner refused what the doctor found safe: ${Either.isLeft(pruned) ? pruned.left.message : ""}`)
          return
        }
        assert.isTrue(Either.isLeft(pruned), `the doctor flagged ${unsafe.map((f) => f.path).join(", ")} but the pruner went on`)
        if (Either.isRight(pruned)) return
        // A refusal deletes (and writes) nothing.
        assert.deepStrictEqual(world.tree("/"), before)
        const refused = pruned.left
        assert.strictEqual(refused._tag, "UnsafeRoot")
        if (refused._tag !== "UnsafeRoot") return
        // The shallowest flagged directory is the one refused, for the first problem the rule lists.
        const shallowest = [...unsafe].sort((a, b) => a.path.split("/").length - b.path.split("/").length)[0]!
        assert.strictEqual(refused.path, `${AGENT_DIR}/${shallowest.path}`)
        const info = yield* p.fs.lstat(refused.path)
        const [first] = rootSafetyProblems(info, p.host.uid)
        assert.strictEqual(refused.reason, first!.reason)
        assert.strictEqual(refused.detail, first!.detail)
        if (refused.reason === "foreign-owner" || refused.reason === "group-or-world-writable") {
          assert.isTrue(unsafe.some((f) => f.message.includes(refused.detail)), `${refused.detail} vs ${unsafe.map((f) => f.message).join(" | ")}`)
        }
        if (refused.reason === "group-or-world-writable") assert.include(refused.detail, `mode ${modeString(info.mode)} `)
      })),
    { fastCheck: { numRuns: 30 } }
  )

  it.effect.prop(
    "prune --all's targets are the tenants the doctor finds safe all the way down; what it flags is refused",
    // The work root, two categories, two tenants in each.
    [fc.tuple(levelArb, fc.tuple(levelArb, levelArb, levelArb), fc.tuple(levelArb, levelArb, levelArb))],
    ([[root, a, b]]) =>
      Effect.scoped(Effect.gen(function*() {
        const world = MemoryWorld.make()
        const p = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
        const me = p.host.uid ?? 1000
        yield* world.mkdirFixture(AGENT_DIR, { mode: 0o700, uid: me })
        yield* world.mkdirFixture("/elsewhere/x", { mode: 0o700, uid: me })
        const make = (rel: string, level: typeof root) => {
          const path = `${AGENT_DIR}/${rel}`
          const uid = level.foreign ? me + 1 : me
          return Effect.as(
            level.kind === "directory"
              ? world.mkdirFixture(path, { mode: level.mode, uid })
              : level.kind === "symlink"
              ? world.symlinkFixture("/elsewhere", path, { uid })
              : world.writeFixture(path, "x", { mode: 0o600, uid }),
            level.kind === "directory"
          )
        }
        const addresses = ["a/x", "a/y", "b/x", "b/y"]
        if (yield* make("work", root)) {
          for (const [category, [c, x, y]] of [["a", a], ["b", b]] as const) {
            if (!(yield* make(`work/${category}`, c))) continue
            yield* make(`work/${category}/x`, x)
            yield* make(`work/${category}/y`, y)
          }
        }
        const ports = <A, E>(effect: Effect.Effect<A, E, FileSystem | Host>) =>
          effect.pipe(Effect.provideService(FileSystem, p.fs), Effect.provideService(Host, p.host))
        const targets = yield* ports(Effect.flatMap(Inventory.make, (i) => i.pruneTargets).pipe(Effect.provideService(AgentDir, AgentDir.at(AGENT_DIR))))
        const report = yield* ports(doctorAt(AGENT_DIR))
        // What the doctor flags at a work-root, category or tenant path (unsafe, or a file where a directory belongs).
        const flagged = new Map<string, Array<string>>()
        for (const f of report.findings) {
          if (f.code === "work-root-unsafe" || (f.code === "work-stray-entry" && f.path.split("/").length <= 3)) {
            flagged.set(f.path, [...(flagged.get(f.path) ?? []), f.message])
          }
        }
        const accepted = new Set(targets.tenants.map((t) => `${t.category}/${t.tenant}`))
        for (const address of addresses) {
          const [category, tenant] = address.split("/")
          const chain = ["work", `work/${category}`, `work/${address}`]
          const exists = world.tree(AGENT_DIR)[`${AGENT_DIR}/work/${address}`] !== undefined
          const safe = exists && chain.every((rel) => !flagged.has(rel))
          assert.strictEqual(accepted.has(address), safe, `${address}: accepted ${accepted.has(address)}, doctor flags ${[...flagged.keys()].join(", ")}`)
          // The pruner itself agrees (one rule): it refuses every tenant prune --all does not go through.
          const pruned = yield* Effect.either(p.workRuns.prune({ category: category!, tenant: tenant!, dryRun: true }))
          if (safe) assert.isTrue(Either.isRight(pruned), address)
          else if (exists || Either.isLeft(pruned)) assert.isTrue(Either.isLeft(pruned) && pruned.left._tag === "UnsafeRoot", address)
        }
        // Every refusal is a directory the doctor flags, with the doctor's detail; the shallowest flagged
        // directory of every flagged chain is refused (nothing under a refused one is listed).
        for (const r of targets.refused) {
          const rel = r.path.slice(AGENT_DIR.length + 1)
          assert.isTrue(flagged.has(rel), `refused ${rel}, which the doctor does not flag`)
          if (r.reason === "foreign-owner" || r.reason === "group-or-world-writable") assert.isTrue(flagged.get(rel)!.some((m) => m.includes(r.detail)), `${r.detail} vs ${flagged.get(rel)!.join(" | ")}`)
        }
        const refused = new Set(targets.refused.map((r) => r.path.slice(AGENT_DIR.length + 1)))
        for (const rel of refused) {
          const above = rel.split("/").slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join("/"))
          assert.isFalse(above.some((a) => refused.has(a)), `${rel} is refused under a refused ${above.find((a) => refused.has(a))}`)
        }
        for (const rel of flagged.keys()) {
          const ancestors = rel.split("/").map((_, i, parts) => parts.slice(0, i + 1).join("/"))
          assert.isTrue(ancestors.some((a) => refused.has(a)), `the doctor flags ${rel}; prune --all refuses none of ${ancestors.join(", ")}`)
        }
      })),
    { fastCheck: { numRuns: 15 } }
  )

  it.scoped("a file inside a refused category is covered by the category's refusal, not refused again", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world, { workRuns: { opportunisticRetention: false } })
      const me = p.host.uid ?? 1000
      yield* world.mkdirFixture(AGENT_DIR, { mode: 0o700, uid: me })
      yield* world.mkdirFixture(`${AGENT_DIR}/work`, { mode: 0o700, uid: me })
      yield* world.mkdirFixture(`${AGENT_DIR}/work/tools`, { mode: 0o775, uid: me })
      yield* world.writeFixture(`${AGENT_DIR}/work/tools/notes.txt`, "x", { mode: 0o600, uid: me })
      const targets = yield* Effect.flatMap(Inventory.make, (i) => i.pruneTargets).pipe(
        Effect.provideService(AgentDir, AgentDir.at(AGENT_DIR)),
        Effect.provideService(FileSystem, p.fs),
        Effect.provideService(Host, p.host)
      )
      assert.deepStrictEqual(targets.refused.map((r) => [r.what, r.reason]), [["category tools", "group-or-world-writable"]])
    }))

  it("one mode formatting: permission bits in octal, special bits kept", () => {
    assert.strictEqual(modeString(0o40700), "700")
    assert.strictEqual(modeString(0o2775), "2775")
    assert.strictEqual(modeString(0o7), "007")
  })
})
