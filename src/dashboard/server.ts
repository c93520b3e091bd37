/**
 * `createStorageDashboard(options)` (docs/dashboard.md "Dashboard"): the dashboard as an Effect `HttpApp`, a web handler
 * (`Request` → `Response`) and a Node request handler, for `pi-storage ui` to serve on 127.0.0.1 and for a host
 * to mount under a path of its own server. One stack of the library's Node services per dashboard (no start-up
 * migration: opening it moves nothing), disposed with `dispose()`.
 *
 * Every request goes through `guard` first (security.ts): the Host must be one it answers (else 421), the
 * token opens a session (`?token=` once, exchanged for the session cookie and redirected away from the URL;
 * or `Authorization: Bearer` for a script), anything without it is 401; a state change must be a POST from
 * a page of this dashboard (its Origin) carrying that page's CSRF token (else 403), and a read-only dashboard
 * refuses every POST (403). Every answer carries the security headers (strict CSP, no CORS).
 */
import { randomBytes } from "node:crypto"
import * as NodeOs from "node:os"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { VERSION } from "../domain/Version.js"
import { warningLoggerLayer } from "../facade/warnings.js"
import { nodeEnv } from "../layers/NodeHost.js"
import { resolveWebDataRoot } from "../domain/WebPaths.js"
import * as NodeStorage from "../layers/NodeStorage.js"
import { ConfigHistory } from "../services/ConfigHistory.js"
import { Doctor } from "../services/Doctor.js"
import { StateBackups } from "../services/StateBackups.js"
import { StorageMap } from "../services/StorageMap.js"
import { DashboardApi } from "./api.js"
import { DashboardCache, DashboardSettings, handlersLayer } from "./handlers.js"
import { shellWord } from "../domain/FixCommands.js"
import { type Assets, loadAssets, pageHtml } from "./page.js"
import { type NodeHandler, nodeHandler } from "./nodeAdapter.js"
import {
  CSRF_HEADER,
  csrfValid,
  hostAllowed,
  newCsrfToken,
  newToken,
  originAllowed,
  parseCookies,
  sameSecret,
  SECURITY_HEADERS,
  sessionCookie,
  sessionCookieName
} from "./security.js"

export interface StorageDashboardOptions {
  /** The Host header values it answers (`127.0.0.1:8080`, or the host application's own names); others get 421. */
  readonly hosts: ReadonlyArray<string>
  /** The agent dir (else `$PI_ADAPTATIVE_CODING_AGENT_DIR`, else `~/.pi/agent`). */
  readonly agentDir?: string | undefined
  /** The web data root (else `$PI_WEB_DATA_DIR`, else `~/.pi/web/data` when it exists). */
  readonly webDataRoot?: string | undefined
  /** The state backup root (else `$PI_STATE_BACKUP_DIR`, else beside the agent dir). */
  readonly backupRoot?: string | undefined
  /** No action: every POST is refused and the page shows none. Default false. */
  readonly readOnly?: boolean | undefined
  /** Where a host mounts it (`/storage`); default the server's root. */
  readonly basePath?: string | undefined
  /** The session secret (default: a fresh random 128-bit one). */
  readonly token?: string | undefined
  /** `pi-storage` as the page should write it in the commands it shows (default: with `--agent-dir` when one was given). */
  readonly cli?: string | undefined
  /** What the library carried on through while answering (default: a Node process warning). */
  readonly onWarning?: ((message: string) => void) | undefined
}

export interface StorageDashboard {
  /** The secret a person opens the page with (`url`). */
  readonly token: string
  /** The URL that opens a session: `origin` + the base path + `?token=…`. */
  readonly url: (origin: string) => string
  /** The dashboard as an Effect HttpApp (mount it in an Effect HTTP router). */
  readonly app: HttpApp.Default<never, HttpServerRequest.HttpServerRequest | Scope.Scope>
  /** The dashboard as a web handler. */
  readonly fetch: (request: Request) => Promise<Response>
  /** The dashboard as a Node `http` request handler. */
  readonly handler: NodeHandler
  /** Close its service stack (waits for what it started). */
  readonly dispose: () => Promise<void>
}

const DOCTOR_KEPT = Duration.seconds(30)

const normalizeBase = (base: string): string => {
  const trimmed = base.replace(/\/+$/, "")
  if (trimmed !== "" && !/^\/[A-Za-z0-9._~/-]*$/.test(trimmed)) throw new Error(`pi-agent-storage: basePath ${JSON.stringify(base)} is not a URL path like "/storage"`)
  return trimmed
}

const dashboardLayer = (o: {
  readonly agentDir: string | undefined
  readonly webDataRoot: string | null
  readonly backupRoot: string | undefined
  readonly settings: DashboardSettings["Type"]
}) => {
  const webDataRoot = o.webDataRoot ?? undefined
  // The stack gives every service (Status and Inventory among them) and the Node world its ProcessRunner.
  const storage = NodeStorage.layerWith({ agentDir: o.agentDir, migrate: false, usageHistory: { webDataRoot } })
  const cache = Layer.effect(
    DashboardCache,
    Effect.gen(function*() {
      const doctor = yield* Doctor
      const [kept, invalidate] = yield* Effect.cachedInvalidateWithTTL(doctor.doctor(webDataRoot === undefined ? {} : { webDataRoot }), DOCTOR_KEPT)
      return { doctor: kept, invalidate }
    })
  )
  const map = Layer.unwrapEffect(Effect.map(DashboardCache, (c) => StorageMap.layerWith({ webDataRoot, findings: Effect.map(c.doctor, (r) => r.findings) })))
  const services = Layer.mergeAll(
    map,
    StateBackups.layerWith({ root: o.backupRoot, webDataRoot }),
    ConfigHistory.layerWith({ webDataRoot })
  ).pipe(Layer.provideMerge(cache), Layer.provideMerge(storage), Layer.provideMerge(Layer.succeed(DashboardSettings, o.settings)))
  const api = HttpApiBuilder.api(DashboardApi).pipe(Layer.provide(handlersLayer))
  // The router's default services (platform, etag, a no-op file system: the API serves no file).
  return Layer.mergeAll(api, HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer, HttpServer.layerContext).pipe(Layer.provide(services))
}

export const createStorageDashboard = (options: StorageDashboardOptions): StorageDashboard => {
  const token = options.token ?? newToken()
  const csrfSecret = randomBytes(32)
  const basePath = normalizeBase(options.basePath ?? "")
  const hosts = options.hosts.map((h) => h.toLowerCase())
  const readOnly = options.readOnly === true
  const webDataRoot = resolveWebDataRoot({ explicit: options.webDataRoot, env: nodeEnv, home: NodeOs.homedir(), cwd: process.cwd() }).path
  const cli = options.cli ?? `pi-storage${options.agentDir === undefined ? "" : ` --agent-dir ${shellWord(options.agentDir)}`}`
  const settings: DashboardSettings["Type"] = {
    readOnly,
    webDataRoot,
    cli,
    backupRootFlag: options.backupRoot === undefined ? "" : ` --root ${shellWord(options.backupRoot)}`,
    webDataRootFlag: options.webDataRoot === undefined ? "" : ` --web-data-root ${shellWord(options.webDataRoot)}`,
    version: VERSION
  }
  const onWarning = options.onWarning ?? ((message: string) => process.emitWarning(message, { type: "PiAgentStorageWarning" }))
  const assets = loadAssets()
  const openApi = JSON.stringify(OpenApi.fromApi(DashboardApi))
  const runtime = ManagedRuntime.make(
    dashboardLayer({ agentDir: options.agentDir, webDataRoot, backupRoot: options.backupRoot, settings }).pipe(
      Layer.provide(warningLoggerLayer((w) => onWarning(w.message), onWarning))
    )
  )
  const built = runtime.runPromise(Effect.gen(function*() {
    const routed = yield* HttpApiBuilder.httpApp
    const platform = yield* Effect.context<HttpRouter.HttpRouter.DefaultServices>()
    // The handlers run on the caller's runtime (a host's, or the web handler's): their warnings go to `onWarning`.
    const api = routed.pipe(Effect.provide(platform), Effect.provide(warningLoggerLayer((w) => onWarning(w.message), onWarning)))
    return guard({ api, token, csrfSecret, basePath, hosts, readOnly, assets, openApi })
  }))
  // An unhandled rejection until a request awaits it would crash a host: the first request reports it instead.
  built.catch(() => undefined)
  const app: StorageDashboard["app"] = Effect.flatMap(Effect.promise(() => built), (a) => a)
  const fetch = HttpApp.toWebHandler(app)
  return {
    token,
    url: (origin) => `${origin.replace(/\/+$/, "")}${basePath}/?token=${token}`,
    app,
    fetch,
    handler: nodeHandler(fetch),
    dispose: () => runtime.dispose()
  }
}

const plain = (status: number, text: string) => HttpServerResponse.text(text, { status, contentType: "text/plain; charset=utf-8" })

const jsonError = (status: number, tag: string, message: string) =>
  HttpServerResponse.unsafeJson({ _tag: tag, message }, { status })

const ASSET_TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8" }

/** Security checks, session, then the page, its assets, the OpenAPI document or the API. */
const guard = (o: {
  readonly api: HttpApp.Default<never, HttpServerRequest.HttpServerRequest | Scope.Scope>
  readonly token: string
  readonly csrfSecret: Buffer
  readonly basePath: string
  readonly hosts: ReadonlyArray<string>
  readonly readOnly: boolean
  readonly assets: Assets
  readonly openApi: string
}): HttpApp.Default<never, HttpServerRequest.HttpServerRequest | Scope.Scope> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const host = request.headers["host"]
    // DNS rebinding: another site's name resolving to 127.0.0.1 is not this dashboard.
    if (!hostAllowed(host, o.hosts)) return plain(421, "pi-storage: this dashboard does not answer for that Host.\n")
    if (!request.url.startsWith("/")) return plain(400, "pi-storage: bad request target.\n")
    const url = new URL(request.url, "http://dashboard.invalid")
    if (o.basePath !== "" && url.pathname === o.basePath) return HttpServerResponse.redirect(`${o.basePath}/${url.search}`, { status: 303 })
    if (o.basePath !== "" && !url.pathname.startsWith(`${o.basePath}/`)) return plain(404, "pi-storage: not found.\n")
    const path = url.pathname.slice(o.basePath.length)
    const cookiePath = `${o.basePath}/`
    const given = url.searchParams.get("token")
    if (given !== null) {
      if (!sameSecret(given, o.token)) return plain(401, "pi-storage: wrong token. Open the URL `pi-storage ui` printed.\n")
      // The token leaves the address bar (and history) at once: the session cookie carries it from here.
      url.searchParams.delete("token")
      return HttpServerResponse.redirect(`${o.basePath}${path}${url.search}`, { status: 303, headers: { "set-cookie": sessionCookie(o.token, cookiePath) } })
    }
    const fromCookie = parseCookies(request.headers["cookie"]).get(sessionCookieName(o.token))
    const authorization = request.headers["authorization"]
    const fromBearer = authorization?.startsWith("Bearer ") === true ? authorization.slice("Bearer ".length) : undefined
    const byCookie = sameSecret(fromCookie, o.token)
    if (!byCookie && !sameSecret(fromBearer, o.token)) {
      return plain(401, "pi-storage: no session. Open the URL `pi-storage ui` printed (it carries the token).\n")
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      if (request.method !== "POST") return plain(405, "pi-storage: method not allowed.\n")
      // A browser sends the cookie wherever the request comes from: an action must come from a page of this
      // dashboard (Origin) and carry the CSRF token that page was given. A script with the bearer token is no browser.
      if (byCookie && !originAllowed(request.headers["origin"], o.hosts)) return jsonError(403, "Forbidden", "cross-origin request refused")
      if (byCookie && !csrfValid(o.csrfSecret, request.headers[CSRF_HEADER])) return jsonError(403, "Forbidden", "missing or invalid CSRF token")
      if (o.readOnly) return jsonError(403, "ReadOnly", "this dashboard is read-only (pi-storage ui --read-only): no action runs")
    }
    if (path === "/" || path === "/index.html") {
      return HttpServerResponse.text(pageHtml({ csrf: newCsrfToken(o.csrfSecret), basePath: o.basePath, readOnly: o.readOnly, assets: o.assets }), {
        contentType: "text/html; charset=utf-8"
      })
    }
    if (path.startsWith("/assets/")) {
      const name = path.slice("/assets/".length)
      const body = o.assets.files.get(name)
      if (body === undefined) return plain(404, "pi-storage: not found.\n")
      return HttpServerResponse.uint8Array(body, { contentType: ASSET_TYPES[name.slice(name.lastIndexOf(".") + 1)] ?? "application/octet-stream" })
    }
    if (path === "/api/openapi.json") return HttpServerResponse.text(o.openApi, { contentType: "application/json" })
    if (path.startsWith("/api/")) {
      // The API's own failures (no such route: 404; a body that does not decode: 400) are answered here, so they
      // get this app's security headers like every other answer; a defect is logged as the server would.
      return yield* Effect.provideService(o.api, HttpServerRequest.HttpServerRequest, request.modify({ url: `${path}${url.search}` })).pipe(
        Effect.catchAllCause((cause) =>
          Effect.zipRight(
            Option.isSome(Cause.dieOption(cause)) ? Effect.logError("dashboard request failed", cause) : Effect.void,
            Effect.map(HttpServerError.causeResponse(cause), ([response]) => response)
          )
        )
      )
    }
    return plain(404, "pi-storage: not found.\n")
  }).pipe(Effect.map((response) => HttpServerResponse.setHeaders(response, SECURITY_HEADERS)))
