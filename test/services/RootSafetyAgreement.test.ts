/**
 * Issue 14, drift bug 4: WR10 was written twice (the doctor's check and the pruner's refusal) with two mode
 * formattings. Both now call `rootSafetyProblems` (src/domain/RootSafety.ts). For any type, owner and mode of
 * the work root, a category and a tenant, the pruner refuses exactly when the doctor reports the directory
 * (unsafe, or a stray file where a category or tenant belongs), names the shallowest one the doctor flags,
 * and its detail (the one mode string) is the doctor's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import { modeString, rootSafetyProblems } from "../../src/domain/RootSafety.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { doctorAt } from "../support/doctor.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
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

  it("one mode formatting: permission bits in octal, special bits kept", () => {
    assert.strictEqual(modeString(0o40700), "700")
    assert.strictEqual(modeString(0o2775), "2775")
    assert.strictEqual(modeString(0o7), "007")
  })
})
