/**
 * Names are bytes in state snapshots (docs/snapshots.md "State snapshots", "Names are bytes"), as a property over the
 * Memory world: whatever bytes the names of state files hold (decoded losslessly, domain/NameBytes.ts), a
 * snapshot records each under its exact name (the manifest decodes back to it), verify passes, the next
 * snapshot links them, and a restore after the live files were lost brings every one back with its bytes.
 * (The Node layer's side, real bytes on disk: test/cli/nameBytes.test.ts and the conformance suite.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer } from "effect"
import { nameOfBytes } from "../../src/domain/NameBytes.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { StateBackups } from "../../src/services/StateBackups.js"
import { AGENT, files, spawn } from "./migrationSupport.js"

const ROOT = "/home/user/.pi/backups/agent"

const as = <A, E>(world: MemoryWorld, use: (b: StateBackups["Type"]) => Effect.Effect<A, E>) =>
  Effect.provide(
    Effect.flatMap(StateBackups, use),
    StateBackups.layerWith({ root: ROOT }).pipe(Layer.provideMerge(AgentDir.layerWith(AGENT)), Layer.provideMerge(spawn(world).layer))
  )

/** A POSIX name: any bytes but `/` and NUL, never `.` or `..`; as the library carries it. */
const name = fc.uint8Array({ minLength: 1, maxLength: 12 })
  .map((b) => b.map((x) => (x === 0 || x === 0x2f ? 0x5f : x)))
  .filter((b) => !(b.length <= 2 && b.every((x) => x === 0x2e)))
  .map(nameOfBytes)

describe("state snapshots carry any name (Memory)", () => {
  it.effect.prop(
    "snapshot, verify, link and restore keep every state file under its exact name and bytes",
    [fc.uniqueArray(name, { minLength: 1, maxLength: 5 }), fc.uniqueArray(name, { minLength: 1, maxLength: 2 })],
    ([names, dirs]) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make({ journal: false })
        const live: Record<string, string> = {}
        names.forEach((n, i) => (live[`state/${dirs[i % dirs.length]}/${n}`] = `content ${i}`))
        for (const [rel, content] of Object.entries(live)) yield* world.writeFixture(`${AGENT}/${rel}`, content)
        const first = yield* as(world, (b) => b.create())
        assert.strictEqual(first.files, names.length, JSON.stringify(first.skipped))
        assert.deepStrictEqual(first.skipped, [])
        const manifest = JSON.parse(world.readFixtureText(`${ROOT}/${first.id}/manifest.json`)!) as { entries: ReadonlyArray<{ path: string }> }
        const recorded = manifest.entries.map((e) => e.path)
        for (const rel of Object.keys(live)) assert.include(recorded, `agent/${rel}`)
        const second = yield* as(world, (b) => b.create())
        assert.strictEqual(second.linkedFiles, names.length)
        assert.isTrue((yield* as(world, (b) => b.verify())).ok)
        // Lost live: every file comes back under its name.
        yield* Effect.provide(Effect.flatMap(FileSystem, (fs) => Effect.forEach(Object.keys(live), (rel) => fs.removeFile(`${AGENT}/${rel}`))), spawn(world).layer)
        yield* as(world, (b) => b.restore(first.id))
        const restored = Object.fromEntries(Object.entries(files(world)).filter(([rel]) => rel.startsWith("state/") && !rel.startsWith("state/restore-aside/")))
        assert.deepStrictEqual(restored, live)
      }),
    { fastCheck: { numRuns: 40 } }
  )
})
