/**
 * What `pi-storage ui` runs once its flags are parsed (docs/dashboard.md "Dashboard"): the dashboard library on a Node
 * `http` server bound to 127.0.0.1 only, answering only for `127.0.0.1:PORT` and `localhost:PORT`, until the
 * signal aborts. The shipped CLI loads it from its own bundle (`dist/bundle/cli/ui.cjs`, scripts/bundle.mjs),
 * so `pi-storage status` never reads it; it shares nothing with the program but this call.
 */
import { spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { createStorageDashboard } from "../dashboard/server.js"
import { loopbackHosts } from "../dashboard/security.js"

export interface UiOptions {
  readonly agentDir: string | undefined
  readonly webDataRoot: string | undefined
  readonly backupRoot: string | undefined
  /** 0: any free port. */
  readonly port: number
  readonly readOnly: boolean
  readonly open: boolean
  readonly cli: string
}

export interface UiEvents {
  readonly listening: (info: { readonly url: string; readonly port: number }) => void
  readonly warning: (message: string) => void
}

export type UiOutcome = { readonly ok: true } | { readonly ok: false; readonly message: string }

/** The loopback address: never a wildcard, never another interface. */
export const UI_HOST = "127.0.0.1"

/** Ask the desktop to open `url` (xdg-open, open, start); a failure is a warning, the server stays up. */
const openBrowser = (url: string, warning: (message: string) => void) => {
  const [command, args] = process.platform === "darwin" ? ["open", [url]] : process.platform === "win32" ? ["cmd", ["/c", "start", "", url]] : ["xdg-open", [url]]
  try {
    const child = spawn(command as string, args as Array<string>, { stdio: "ignore", detached: true })
    child.on("error", (e) => warning(`could not open a browser (${command}: ${e.message}); open the URL yourself`))
    child.unref()
  } catch (e) {
    warning(`could not open a browser (${String(e)}); open the URL yourself`)
  }
}

export const serveUi = (options: UiOptions, events: UiEvents, signal: AbortSignal): Promise<UiOutcome> =>
  new Promise((resolve) => {
    const server = http.createServer()
    server.once("error", (e: NodeJS.ErrnoException) => {
      resolve({ ok: false, message: e.code === "EADDRINUSE" ? `port ${options.port} on ${UI_HOST} is in use (choose another with --port N, or 0 for any)` : e.message })
    })
    server.listen({ port: options.port, host: UI_HOST, exclusive: true }, () => {
      const port = (server.address() as AddressInfo).port
      const dashboard = createStorageDashboard({
        hosts: loopbackHosts(port),
        agentDir: options.agentDir,
        webDataRoot: options.webDataRoot,
        backupRoot: options.backupRoot,
        readOnly: options.readOnly,
        cli: options.cli,
        onWarning: events.warning
      })
      server.on("request", dashboard.handler)
      const stop = () => {
        server.close()
        server.closeAllConnections()
        dashboard.dispose().then(() => resolve({ ok: true }), (e: unknown) => resolve({ ok: false, message: String(e) }))
      }
      if (signal.aborted) return stop()
      signal.addEventListener("abort", stop, { once: true })
      const url = dashboard.url(`http://${UI_HOST}:${port}`)
      events.listening({ url, port })
      if (options.open) openBrowser(url, events.warning)
    })
  })
