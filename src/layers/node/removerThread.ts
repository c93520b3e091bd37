/**
 * The remover thread: deletes trees with the same synchronous walk the event loop would run, straight
 * through, so a prune's deletions (which wait on the disk) overlap with the protocol work of its next
 * victim and never hold the event loop. Loaded by remover.ts; imports no Effect.
 */
import { parentPort } from "node:worker_threads"
import type { RemovalReply, RemovalRequest } from "./remover.js"
import { runToEnd } from "./syncWalk.js"
import { pathWalker } from "./pathWalk.js"

const port = parentPort!

port.on("message", (request: RemovalRequest) => {
  let reply: RemovalReply
  try {
    reply = { id: request.id, removal: runToEnd(pathWalker.startRemoval(request.root, request.budget)) }
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
