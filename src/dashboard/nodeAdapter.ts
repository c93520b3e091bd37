/**
 * The dashboard as a Node `http` request handler (docs/dashboard.md "Dashboard"): the request becomes a web `Request`
 * (a body of at most 64 KiB: the API's payloads are small), the web handler answers, the `Response` is written
 * back. No dependency beyond Node's own `http` types, the global `Request`/`Response` and the headers every answer carries.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { SECURITY_HEADERS } from "./security.js"

export type NodeHandler = (request: IncomingMessage, response: ServerResponse) => void

const MAX_BODY_BYTES = 64 * 1024

const readBody = (request: IncomingMessage): Promise<Uint8Array | "too-large"> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      // Past the bound the rest is read and dropped (the 413 is answered at once; destroying the request here
      // closed the socket before the answer got out).
      if (size > MAX_BODY_BYTES) return
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        chunks.length = 0
        resolve("too-large")
        return
      }
      chunks.push(chunk)
    })
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

/** An answer of the adapter's own, with the headers every answer of the dashboard carries; `close`: end the connection after it. */
const refuse = (response: ServerResponse, status: number, text: string, close = false) => {
  response.writeHead(status, { ...SECURITY_HEADERS, "content-type": "text/plain; charset=utf-8", ...(close ? { connection: "close" } : {}) })
  response.end(text)
}

export const nodeHandler = (fetch: (request: Request) => Promise<Response>): NodeHandler => (request, response) => {
  void (async () => {
    // Origin-form targets only ("/path?query"): an absolute-form target is a proxy request, not ours.
    if (request.url === undefined || !request.url.startsWith("/")) return refuse(response, 400, "pi-storage: bad request target.\n")
    const headers = new Headers()
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined) continue
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
    }
    const method = request.method ?? "GET"
    let body: Uint8Array | undefined
    if (method !== "GET" && method !== "HEAD") {
      const read = await readBody(request)
      if (read === "too-large") return refuse(response, 413, "pi-storage: request body too large.\n", true)
      body = read
    }
    const answer = await fetch(new Request(`http://dashboard.invalid${request.url}`, { method, headers, ...(body === undefined ? {} : { body }) }))
    const out: Record<string, string | Array<string>> = {}
    answer.headers.forEach((value, name) => {
      if (name !== "set-cookie") out[name] = value
    })
    const cookies = answer.headers.getSetCookie()
    if (cookies.length > 0) out["set-cookie"] = cookies
    response.writeHead(answer.status, out)
    response.end(method === "HEAD" ? undefined : Buffer.from(await answer.arrayBuffer()))
  })().catch((e: unknown) => {
    if (!response.headersSent) refuse(response, 500, `pi-storage: ${e instanceof Error ? e.message : String(e)}\n`)
    else response.destroy()
  })
}
