/**
 * Which tree walker to use, decided once per thread: the native one (fdWalk.ts over the `fsat` addon) when
 * the addon loads, else the portable one (pathWalk.ts). Shared by the Node layer and the remover thread;
 * imports no Effect.
 */
import { makeFdWalker } from "./fdWalk.js"
import { loadFsat } from "./fsat.js"
import { pathWalker } from "./pathWalk.js"
import type { Walker } from "./syncWalk.js"

export type WalkerKind = "native" | "portable"

const loaded = loadFsat()
const nativeWalker = "fsat" in loaded ? makeFdWalker(loaded.fsat) : undefined

/** The walker this installation uses by default. */
export const defaultWalkerKind: WalkerKind = nativeWalker === undefined ? "portable" : "native"

/** The walker of a kind; asking for the native one where the addon is not built is a defect. */
export const walkerOf = (kind: WalkerKind): Walker => {
  if (kind === "portable") return pathWalker
  if (nativeWalker === undefined) {
    throw new Error(`pi-agent-storage: the native walker is ${"why" in loaded ? loaded.why : "unavailable"}; run \`npm install\` with a C compiler`)
  }
  return nativeWalker
}
