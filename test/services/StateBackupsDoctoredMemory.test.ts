/**
 * A property over the Memory world: a snapshot whose manifest gained an entry with any path the decoder
 * refuses (or a file below a recorded link), hash recomputed and the bytes it names planted in the snapshot,
 * is refused by a restore of everything or of one extension, and nothing in the world outside the backup root
 * changes: no move aside, no write (docs/snapshots.md "State snapshots").
 */
import { createHash } from "node:crypto"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer } from "effect"
import { decodeSnapshotPath } from "../../src/domain/SnapshotPath.js"
import { encodeSnapshotManifest, type ManifestEntry, type SnapshotManifest } from "../../src/domain/StateSnapshot.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { StateBackups } from "../../src/services/StateBackups.js"
import { AGENT, spawn } from "./migrationSupport.js"

const ROOT = "/home/user/.pi/backups/agent"
const WEB = "/home/user/.pi/web/data"

const as = <A, E>(world: MemoryWorld, use: (b: StateBackups["Type"]) => Effect.Effect<A, E>) =>
  Effect.provide(
    Effect.flatMap(StateBackups, use),
    StateBackups.layerWith({ root: ROOT, webDataRoot: WEB }).pipe(Layer.provideMerge(AgentDir.layerWith(AGENT)), Layer.provideMerge(spawn(world).layer))
  )

const LIVE: Record<string, string> = {
  [`${AGENT}/state/a.json`]: "{\"a\":1}",
  [`${AGENT}/state/extensions/foo/x`]: "foo x",
  [`${AGENT}/state/extensions/bar/y`]: "bar y",
  [`${AGENT}/MEMORY.md`]: "# memory",
  [`${AGENT}/extensions/tool/index.js`]: "code",
  [`${WEB}/foo/state/db`]: "foo db",
  [`${WEB}/bar/state/db`]: "bar db",
  "/home/user/canary/keep": "outside"
}

/** Paths from the pieces that make them dangerous; only those the decoder refuses are kept. */
const refusedPath = fc.tuple(
  fc.boolean(),
  fc.array(fc.constantFrom("agent", "web", "state", "extensions", "foo", "bar", "sessions", "MEMORY.md", "tool", "backups", "home", "user", "..", ".", "", "x"), { minLength: 1, maxLength: 7 })
).map(([absolute, segments]) => `${absolute ? "/" : ""}${segments.join("/")}`).filter((p) => !decodeSnapshotPath(p).ok && !p.includes("\0"))

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")
const file = (path: string): ManifestEntry => ({ path, type: "file", size: 5, mode: 0o644, mtimeMs: 1, sha256: sha256("pwned") })

/** Extra entries and the snapshot files they name. */
const doctoring = fc.oneof(
  refusedPath.map((path) => ({ entries: [file(path)], plant: [path] })),
  fc.constantFrom("agent/state/out", "agent/state/extensions/foo/out", "web/foo/state/out").map((link) => ({
    entries: [
      { path: link, type: "symlink", size: 16, mode: 0o777, mtimeMs: 1, target: "/home/user/canary" } satisfies ManifestEntry,
      { path: `${link}/sub`, type: "directory", size: 0, mode: 0o755, mtimeMs: 1 } satisfies ManifestEntry,
      file(`${link}/sub/pwned`)
    ],
    plant: [`${link}/sub/pwned`]
  }))
)

/** The world outside the backup root, entry by entry (type, mode, mtime, content hash or target). */
const outsideRoot = (world: MemoryWorld) =>
  Object.fromEntries(Object.entries(world.tree("/")).filter(([path]) => path !== ROOT && !path.startsWith(`${ROOT}/`)).map(([path, e]) => [path, JSON.stringify({ ...e, ino: 0 })]))

describe("restore of a doctored snapshot (Memory world)", () => {
  it.effect.prop("is refused whatever the hostile entry, and changes nothing outside the backup root", [doctoring, fc.constantFrom(undefined, "foo", "bar")], ([doctored, extension]) =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      for (const [path, content] of Object.entries(LIVE)) yield* world.writeFixture(path, content)
      const { id } = yield* as(world, (b) => b.create())
      const manifestPath = `${ROOT}/${id}/manifest.json`
      const { manifestSha256: _, ...body } = JSON.parse(world.readFixtureText(manifestPath)!) as SnapshotManifest
      yield* world.writeFixture(manifestPath, encodeSnapshotManifest({ ...body, entries: [...body.entries, ...doctored.entries] }))
      // Where a directory is already in the way, the planted file is simply not there (the refusal comes first anyway).
      for (const rel of doctored.plant) yield* Effect.exit(world.writeFixture(NodePath.posix.join(`${ROOT}/${id}`, rel), "pwned"))
      yield* world.writeFixture(`${AGENT}/state/a.json`, "{\"a\":2}")
      const before = outsideRoot(world)
      const refused = yield* as(world, (b) => Effect.flip(b.restore(id, extension === undefined ? {} : { extension })))
      assert.strictEqual(refused._tag, "SnapshotCorrupt", refused.message)
      assert.match(refused.message, /nothing was changed$/)
      assert.deepStrictEqual(outsideRoot(world), before)
      const verified = yield* as(world, (b) => b.verify(id))
      assert.deepStrictEqual(verified.problems.map((p) => p._tag), ["ManifestUnusable"])
    }), { fastCheck: { numRuns: 30 } })
})
