/**
 * The remover thread: deletes trees with the same synchronous walk the event loop would run, straight
 * through, so a prune's deletions (which wait on the disk) overlap with the protocol work of its next
 * victim and never hold the event loop. Loaded by remover.ts; imports no Effect.
 */
import { parentPort, workerData } from "node:worker_threads"
import { makeFdWalker } from "./fdWalk.js"
import { loadFsat } from "./fsat.js"
import { pathWalker } from "./pathWalk.js"
import type { RemovalReply, RemovalRequest } from "./remover.js"
import { runToEnd, type Walker } from "./syncWalk.js"

const pickWalker = (kind: "native" | "portable"): Walker => {
  if (kind === "portable") return pathWalker
  const loaded = loadFsat()
  if (!("fsat" in loaded)) throw new Error(`native walker ${loaded.why}`)
  return makeFdWalker(loaded.fsat)
}

const walker = pickWalker((workerData as { walker: "native" | "portable" }).walker)
const port = parentPort!

port.on("message", (request: RemovalRequest) => {
  let reply: RemovalReply
  try {
    reply = { id: request.id, removal: runToEnd(walker.startRemoval(request.root, request.budget)) }
  } catch (cause) {
    const c = cause as { code?: unknown; path?: unknown; message?: unknown }
    reply = {
      id: request.id,
      error: {
        code: typeof c.code === "string" ? c.code : "",
        path: typeof c.path === "string" ? c.path : request.root,
        message: typeof c.message === "string" ? c.message : String(cause)
      }
    }
  }
  port.postMessage(reply)
})
