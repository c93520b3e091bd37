/**
 * What `du -s` would say of a tree in the simulated world (docs/work-runs.md "Retention": one byte count), from the
 * world's own snapshot: the Memory world keeps every file dense in 4 KiB blocks, a directory one block, a
 * link none (MemoryFileSystem.ts); every entry counts, the root too, a file of several links once.
 */
import type { MemoryWorld } from "../../src/layers/MemoryWorld.js"

const BLOCK = 4096

export const memoryDu = (world: MemoryWorld, root: string): { readonly bytes: number; readonly apparentBytes: number } => {
  const seen = new Set<string>()
  let bytes = 0
  let apparentBytes = 0
  for (const entry of Object.values(world.tree(root))) {
    if (entry.type !== "Directory") {
      const key = `${entry.dev}:${entry.ino}`
      if (seen.has(key)) continue
      seen.add(key)
    }
    bytes += entry.type === "File" ? Math.ceil(entry.size / BLOCK) * BLOCK : entry.type === "Directory" ? BLOCK : 0
    apparentBytes += entry.size
  }
  return { bytes, apparentBytes }
}
