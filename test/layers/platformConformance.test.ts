/**
 * The `@effect/platform` conformance suite over both file systems: `@effect/platform-node` on a real scratch
 * directory, and `platformLayer` (from `pi-agent-storage/testing`) over a fresh simulated world.
 */
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as NodePath from "node:path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePlatformPath from "@effect/platform-node/NodePath"
import { Effect, Layer } from "effect"
import { MemoryWorld, platformLayer } from "../../src/testing.js"
import { platformConformance, PlatformScratch } from "./platformConformance.js"

const uid = process.getuid?.() ?? 0
const gid = process.getgid?.() ?? 0
/** Reads the umask without changing it (the Memory process gets the same one, so modes compare). */
const currentUmask = () => {
  const mask = process.umask(0o022)
  process.umask(mask)
  return mask
}

platformConformance("Node (@effect/platform-node)", {
  layer: () =>
    Layer.mergeAll(
      NodeFileSystem.layer,
      NodePlatformPath.layer,
      Layer.scoped(
        PlatformScratch,
        Effect.acquireRelease(
          Effect.promise(async () => ({ root: await fsp.realpath(await fsp.mkdtemp(NodePath.join(os.tmpdir(), "pi-platform-conformance-"))), uid })),
          ({ root }) => Effect.promise(() => fsp.rm(root, { recursive: true, force: true }))
        )
      )
    )
})

platformConformance("Memory (platformLayer)", {
  layer: () =>
    Layer.unwrapEffect(Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture("/scratch", { mode: 0o755, uid })
      return Layer.merge(platformLayer(world, { uid, gid, umask: currentUmask() }), Layer.succeed(PlatformScratch, { root: "/scratch", uid }))
    }))
})
