/**
 * Trees deeper than a process may hold descriptors (docs/architecture.md "Walkers", domain/WalkDepth.ts): in a child whose
 * descriptor limit is 64, each walker, through the Node layer's FileSystem, measures a 5,000-deep chain whole
 * (and, under the policy's maxDepth, exactly as deep as that allows) and removes it whole. Before, each
 * walk held a descriptor per level and failed EMFILE about 45 levels down, every time: such a tree in
 * `.trash/` was never deleted (the prune's side: TrashDepth.test.ts). (Races on the way back up:
 * walkerRace.test.ts.)
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { availableWalkerKind } from "../../../src/layers/node/walkers.js"
import { deepScratch, distModule, effectModule, removeDeep, runLimited } from "../../support/limitedChild.js"

const DEPTH = 5000
const NOFILE = 64

const walkers = availableWalkerKind() === "native" ? (["native", "portable"] as const) : (["portable"] as const)

/** In the child: build the chain, then measure it whole, measure it under maxDepth 64, remove it. */
const SOURCE = `
import * as Effect from ${effectModule("Effect")}
import { nodeFileSystemWith } from ${distModule("layers/NodeFileSystem.js")}
import { FileSystem } from ${distModule("services/FileSystem.js")}
const [root, walker, depth] = [process.argv[2], process.argv[3], Number(process.argv[4])]
limitDescriptors()
buildChain(root, depth)
const WIDE = { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }
const plain = (e) => ({ errno: e.errno, method: e.method, path: e.path.slice(0, 200) })
const program = Effect.gen(function*() {
  const files = yield* FileSystem
  const whole = yield* Effect.either(files.measureTree(root, WIDE))
  const cut = yield* Effect.either(files.measureTree(root, { maxEntries: Number.MAX_SAFE_INTEGER, maxDepth: 64 }))
  const removal = yield* Effect.either(files.removeTree(root, WIDE))
  return { whole, cut, removal }
})
const answers = await Effect.runPromise(program.pipe(Effect.provide(nodeFileSystemWith(walker))))
const out = Object.fromEntries(Object.entries(answers).map(([k, a]) => [k, a._tag === "Right" ? a.right : plain(a.left)]))
process.stdout.write(JSON.stringify({ ...out, limit: descriptorLimit(), gone: !fs.existsSync(root) }))
`

describe("a chain deeper than the descriptor limit (Node layer, a child limited to 64 descriptors)", () => {
  for (const walker of walkers) {
    it(`the ${walker} walker measures and removes a ${DEPTH}-deep chain whole`, async () => {
      const dir = deepScratch("pi-walk-depth-")
      try {
        type Sizes = { bytes: number; apparentBytes: number; fileBytes: number; entries: number; complete: boolean }
        const answer = await runLimited(NOFILE, SOURCE, [NodePath.join(dir, "chain"), walker, String(DEPTH)]) as { readonly whole: Sizes; readonly cut: Sizes; readonly [key: string]: unknown }
        const { whole, cut } = answer
        assert.deepStrictEqual(answer, {
          limit: NOFILE,
          whole: { bytes: whole.bytes, apparentBytes: whole.apparentBytes, fileBytes: DEPTH, entries: 2 * DEPTH, complete: true },
          // Directories at depths 0…63 listed (two entries each); the one at 64 counted, its contents not.
          cut: { bytes: cut.bytes, apparentBytes: cut.apparentBytes, fileBytes: 64, entries: 128, complete: false },
          // The removal counts what the measure counted.
          removal: { removedEntries: 2 * DEPTH, complete: true, removedBytes: whole.bytes, removedApparentBytes: whole.apparentBytes },
          gone: true
        })
        // Every directory (the root too) and every file counts: more than the files alone.
        assert.isAbove(whole.apparentBytes, DEPTH + DEPTH * 40)
        assert.isBelow(cut.apparentBytes, whole.apparentBytes)
        assert.deepStrictEqual(fs.readdirSync(dir), [])
      } finally {
        removeDeep(dir)
      }
    }, 120_000)
  }
})
