/**
 * The dashboard's safety, over plain HTTP against the built `pi-storage ui` (docs/dashboard.md "Dashboard"): no token is
 * 401; a wrong Host is 421 (DNS rebinding), even with the session; a POST from another origin, or without the
 * page's CSRF token, is 403 and changes nothing; no CORS header ever; every answer carries the strict CSP;
 * `--read-only` refuses every action (403) and the page offers none; the server listens on 127.0.0.1 only.
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { CLI, type RunningUi, seedAgentDir, startUi } from "../support/dashboard.js"
import { runNode } from "../support/child.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

interface Answer {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

const request = (port: number, options: { method?: string; path?: string; headers?: Record<string, string>; body?: string }): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = Http.request({ host: "127.0.0.1", port, method: options.method ?? "GET", path: options.path ?? "/", headers: options.headers ?? {} }, (res) => {
      let body = ""
      res.setEncoding("utf8").on("data", (d: string) => (body += d))
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }))
    })
    req.on("error", reject)
    req.end(options.body)
  })

let agentDir: string
let backupRoot: string
let ui: RunningUi
let readOnly: RunningUi
/** The session cookie a browser gets for `ui`, and the Host it talks to. */
let cookie: string
let host: string

const sessionOf = async (server: RunningUi) => {
  const opened = await request(server.port, { path: `/?token=${server.token}`, headers: { host: `127.0.0.1:${server.port}` } })
  assert.strictEqual(opened.status, 303)
  const set = opened.headers["set-cookie"]![0]!
  return { set, cookie: set.split(";")[0]!, location: opened.headers.location }
}

/** A page's CSRF token, as a browser reads it from the page. */
const csrfOf = async (server: RunningUi, cookieHeader: string) => {
  const page = await request(server.port, { headers: { host: `127.0.0.1:${server.port}`, cookie: cookieHeader } })
  return /name="pi-storage-csrf" content="([^"]+)"/.exec(page.body)![1]!
}

const snapshots = () => (Fs.existsSync(backupRoot) ? Fs.readdirSync(backupRoot).filter((n) => !n.startsWith(".")) : [])

beforeAll(async () => {
  const root = scratch("pi-storage-ui-security-")
  ;({ agentDir, backupRoot } = seedAgentDir(root))
  ;[ui, readOnly] = await Promise.all([
    startUi(["--agent-dir", agentDir, "ui", "--root", backupRoot]),
    startUi(["--agent-dir", agentDir, "ui", "--read-only", "--root", backupRoot])
  ])
  host = `127.0.0.1:${ui.port}`
  cookie = (await sessionOf(ui)).cookie
}, 120_000)

afterAll(async () => {
  await Promise.all([ui?.stop(), readOnly?.stop()])
})

describe("pi-storage ui over plain HTTP", () => {
  it("no token: 401 for the page and the API; a wrong token: 401", async () => {
    for (const path of ["/", "/api/status", "/api/openapi.json", "/assets/app.js"]) {
      const r = await request(ui.port, { path, headers: { host } })
      assert.strictEqual(r.status, 401, path)
      assert.notInclude(r.body, agentDir)
    }
    assert.strictEqual((await request(ui.port, { path: "/?token=00000000000000000000000000000000", headers: { host } })).status, 401)
    assert.strictEqual((await request(ui.port, { path: "/api/status", headers: { host, authorization: "Bearer 00000000000000000000000000000000" } })).status, 401)
  })

  it("the token is exchanged for an HttpOnly SameSite=Strict cookie and leaves the URL; the cookie then opens everything", async () => {
    const { set, location } = await sessionOf(ui)
    assert.match(set, /; HttpOnly/)
    assert.match(set, /; SameSite=Strict/)
    assert.strictEqual(location, "/")
    const page = await request(ui.port, { headers: { host, cookie } })
    assert.strictEqual(page.status, 200)
    assert.match(page.headers["content-type"]!, /^text\/html/)
    const status = await request(ui.port, { path: "/api/status", headers: { host, cookie } })
    assert.strictEqual(status.status, 200)
    assert.strictEqual(JSON.parse(status.body).agentDir, agentDir)
    const openApi = JSON.parse((await request(ui.port, { path: "/api/openapi.json", headers: { host, cookie } })).body)
    assert.includeMembers(Object.keys(openApi.paths), ["/api/map", "/api/prune", "/api/snapshots", "/api/verify", "/api/config/snapshot", "/api/growth"])
  })

  it("a Host other than the loopback address and port it listens on is 421, whatever the credentials (DNS rebinding)", async () => {
    for (const wrong of [`evil.example:${ui.port}`, "127.0.0.1", `127.0.0.1:${ui.port + 1}`, `[::1]:${ui.port}`, `attacker.127.0.0.1.nip.io:${ui.port}`]) {
      for (const headers of [{ host: wrong }, { host: wrong, cookie }, { host: wrong, authorization: `Bearer ${ui.token}` }]) {
        const r = await request(ui.port, { path: "/api/status", headers })
        assert.strictEqual(r.status, 421, `${JSON.stringify(headers)}`)
        assert.notInclude(r.body, agentDir)
      }
      assert.strictEqual((await request(ui.port, { path: `/?token=${ui.token}`, headers: { host: wrong } })).status, 421)
    }
    assert.strictEqual((await request(ui.port, { path: "/api/status", headers: { host: `localhost:${ui.port}`, cookie } })).status, 200)
  })

  it("a POST from another origin, or without the page's CSRF token, is 403 and does nothing; from the page it runs", async () => {
    const csrf = await csrfOf(ui, cookie)
    const before = snapshots()
    for (const headers of [
      { host, cookie, origin: "http://evil.example", "x-csrf-token": csrf },
      { host, cookie, "x-csrf-token": csrf },
      { host, cookie, origin: `http://${host}` },
      { host, cookie, origin: `http://${host}`, "x-csrf-token": csrf.replace(/.$/, (c) => (c === "0" ? "1" : "0")) }
    ]) {
      const r = await request(ui.port, { method: "POST", path: "/api/snapshots", headers })
      assert.strictEqual(r.status, 403, JSON.stringify(headers))
    }
    assert.deepStrictEqual(snapshots(), before)
    const made = await request(ui.port, { method: "POST", path: "/api/snapshots", headers: { host, cookie, origin: `http://${host}`, "x-csrf-token": csrf } })
    assert.strictEqual(made.status, 200, made.body)
    assert.deepStrictEqual(snapshots(), [...before, JSON.parse(made.body).id].sort())
  })

  it("only GET and POST; no CORS header on any answer; the strict CSP on every answer", async () => {
    for (const method of ["PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const r = await request(ui.port, { method, path: "/api/snapshots", headers: { host, cookie, origin: "http://evil.example", "access-control-request-method": "POST" } })
      assert.strictEqual(r.status, 405, method)
    }
    const answers = await Promise.all([
      request(ui.port, { headers: { host } }),
      request(ui.port, { headers: { host: "evil.example" } }),
      request(ui.port, { headers: { host, cookie } }),
      request(ui.port, { path: "/assets/app.js", headers: { host, cookie } }),
      request(ui.port, { path: "/api/map?node=root", headers: { host, cookie, origin: "http://evil.example" } }),
      request(ui.port, { method: "OPTIONS", path: "/api/map", headers: { host, cookie, origin: "http://evil.example" } })
    ])
    for (const a of answers) {
      assert.deepStrictEqual(Object.keys(a.headers).filter((h) => h.startsWith("access-control-")), [])
      if (a.status !== 421) {
        assert.strictEqual(a.headers["content-security-policy"], "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        assert.strictEqual(a.headers["x-content-type-options"], "nosniff")
        assert.strictEqual(a.headers["referrer-policy"], "no-referrer")
      }
    }
  })

  it("the API's own refusals (no such route, a body that does not decode, a body over 64 KiB) carry the same headers; the 413 arrives", async () => {
    const bearer = { host, authorization: `Bearer ${ui.token}`, "content-type": "application/json" }
    const answers = await Promise.all([
      request(ui.port, { path: "/api/nope", headers: { host, cookie } }),
      request(ui.port, { method: "POST", path: "/api/prune", headers: bearer, body: "{" }),
      request(ui.port, { method: "POST", path: "/api/prune", headers: bearer, body: "x".repeat(70_000) })
    ])
    assert.deepStrictEqual(answers.map((a) => a.status), [404, 400, 413])
    for (const a of answers) {
      assert.strictEqual(a.headers["content-security-policy"], "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'", String(a.status))
      assert.strictEqual(a.headers["x-content-type-options"], "nosniff")
      assert.strictEqual(a.headers["x-frame-options"], "DENY")
      assert.strictEqual(a.headers["cache-control"], "no-store")
      assert.deepStrictEqual(Object.keys(a.headers).filter((h) => h.startsWith("access-control-")), [])
    }
    assert.include(answers[2]!.body, "request body too large")
  })

  it("a node id that leaves its root is a 400, never a listing", async () => {
    for (const node of ["a:../..", "a:state/../../etc", "w:/etc", "a:/etc", "tier:passwords", "a:state//x"]) {
      const r = await request(ui.port, { path: `/api/map?node=${encodeURIComponent(node)}`, headers: { host, cookie } })
      assert.strictEqual(r.status, 400, node)
    }
  })

  it("--read-only: every action is 403 and nothing changes; the page offers no action", async () => {
    const session = await sessionOf(readOnly)
    const roHost = `127.0.0.1:${readOnly.port}`
    const csrf = await csrfOf(readOnly, session.cookie)
    const page = await request(readOnly.port, { headers: { host: roHost, cookie: session.cookie } })
    assert.include(page.body, '<meta name="pi-storage-read-only" content="true">')
    const plan = JSON.parse((await request(readOnly.port, { path: "/api/prune-plan?category=tools&tenant=bash", headers: { host: roHost, cookie: session.cookie } })).body)
    assert.isAbove(plan.report.removed.length, 0)
    // After the plan is read: its dry run, like `work prune --dry-run`, may make the tenant's clock-probe directory.
    const before = { snapshots: snapshots(), runs: Fs.readdirSync(Path.join(agentDir, "work", "tools", "bash")).sort() }
    for (const [path, body] of [["/api/snapshots", ""], ["/api/verify", ""], ["/api/config/snapshot", ""], ["/api/prune", JSON.stringify({ category: "tools", tenant: "bash", planId: plan.planId })]] as const) {
      const r = await request(readOnly.port, {
        method: "POST",
        path,
        body,
        headers: { host: roHost, cookie: session.cookie, origin: `http://${roHost}`, "x-csrf-token": csrf, "content-type": "application/json" }
      })
      assert.strictEqual(r.status, 403, path)
      assert.strictEqual(JSON.parse(r.body)._tag, "ReadOnly")
    }
    assert.deepStrictEqual({ snapshots: snapshots(), runs: Fs.readdirSync(Path.join(agentDir, "work", "tools", "bash")).sort() }, before)
  })

  it("listens on 127.0.0.1 only: another loopback address and this machine's other addresses are refused", async () => {
    const refused = (address: string) =>
      new Promise<boolean>((resolve) => {
        const socket = Net.connect({ host: address, port: ui.port })
        socket.once("connect", () => {
          socket.destroy()
          resolve(false)
        })
        socket.once("error", () => resolve(true))
      })
    assert.isFalse(await refused("127.0.0.1"))
    assert.isTrue(await refused("127.0.0.2"))
    const others = Object.values(await import("node:os").then((os) => os.networkInterfaces())).flat().filter((i) => i !== undefined && !i.internal && i.family === "IPv4").map((i) => i!.address)
    for (const address of others) assert.isTrue(await refused(address), address)
    // The listening socket itself, as the kernel reports it.
    const listening = Fs.readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1).map((l) => l.trim().split(/\s+/)).filter((f) => f[3] === "0A" && parseInt(f[1]!.split(":")[1]!, 16) === ui.port)
    assert.deepStrictEqual(listening.map((f) => f[1]!.split(":")[0]), ["0100007F"])
  })

  it("Ctrl-C stops it: the port is closed and the exit code is 130", async () => {
    const other = await startUi(["--agent-dir", agentDir, "ui"])
    assert.strictEqual(await other.stop(), 130)
    assert.isTrue(await new Promise<boolean>((resolve) => {
      const socket = Net.connect({ host: "127.0.0.1", port: other.port })
      socket.once("connect", () => (socket.destroy(), resolve(false)))
      socket.once("error", () => resolve(true))
    }))
  })
})

/** Every page and read of the API once, as a person browsing would; the config diff's answer. */
const readEveryPage = async (server: RunningUi) => {
  const session = await sessionOf(server)
  const headers = { host: `127.0.0.1:${server.port}`, cookie: session.cookie }
  for (const path of ["/", "/api/status", "/api/map", "/api/doctor", "/api/protection", "/api/config", "/api/config/diff"]) {
    assert.strictEqual((await request(server.port, { path, headers })).status, 200, path)
  }
  return JSON.parse((await request(server.port, { path: "/api/config/diff", headers })).body)
}

/** Every entry under `root` with its size, mtime and inode: a write anywhere (an index, an object, a lock) shows. */
const pictureOf = (root: string) =>
  (Fs.readdirSync(root, { recursive: true }) as Array<string>).sort().map((rel) => {
    const st = Fs.lstatSync(Path.join(root, rel))
    return `${rel} ${st.size} ${st.mtimeMs} ${st.ino}`
  })

describe("pi-storage ui --read-only on a new agent dir", () => {
  it("reading every page writes nothing: no config history is made by its diff, no file anywhere", async () => {
    const root = scratch("pi-storage-ui-fresh-")
    const fresh = Path.join(root, "agent")
    const web = Path.join(root, "web")
    Fs.mkdirSync(Path.join(web, "e", "config"), { recursive: true })
    Fs.mkdirSync(fresh)
    Fs.writeFileSync(Path.join(fresh, "settings.json"), "{\"theme\":\"dark\"}\n")
    Fs.writeFileSync(Path.join(web, "e", "config", "a b.json"), "{}\n")
    const before = pictureOf(root)
    const server = await startUi(["--agent-dir", fresh, "ui", "--read-only", "--web-data-root", web, "--root", Path.join(root, "backups")])
    try {
      const diff = await readEveryPage(server)
      assert.deepStrictEqual(diff.files, ["settings.json", "e/config/a b.json"])
      assert.include(diff.patch, "diff --git a/e/config/a b.json b/e/config/a b.json\nnew file mode 100644\n")
    } finally {
      await server.stop()
    }
    assert.deepStrictEqual(pictureOf(root), before)
  })

  it("with a config history and live changes: every page, the live diff included, changes nothing anywhere", async () => {
    const root = scratch("pi-storage-ui-history-")
    const agent = Path.join(root, "agent")
    const web = Path.join(root, "web")
    const tmp = scratch("pi-storage-ui-tmp-")
    Fs.mkdirSync(Path.join(web, "e", "config"), { recursive: true })
    Fs.mkdirSync(agent)
    Fs.writeFileSync(Path.join(agent, "settings.json"), "{\"theme\":\"dark\"}\n")
    Fs.writeFileSync(Path.join(web, "e", "config", "a.json"), "{}\n")
    const snapshot = await runNode(CLI, ["--agent-dir", agent, "config", "snapshot", "--web-data-root", web])
    assert.strictEqual(snapshot.code, 0, snapshot.stderr)
    Fs.writeFileSync(Path.join(agent, "settings.json"), "{\"theme\":\"light\"}\n")
    Fs.rmSync(Path.join(web, "e", "config", "a.json"))
    Fs.writeFileSync(Path.join(web, "e", "config", "b.json"), "{\"b\":1}\n")
    const before = pictureOf(root)
    const server = await startUi(["--agent-dir", agent, "ui", "--read-only", "--web-data-root", web, "--root", Path.join(root, "backups")], { ...process.env, TMPDIR: tmp })
    try {
      const diff = await readEveryPage(server)
      assert.deepStrictEqual(diff.files, ["settings.json", "e/config/a.json", "e/config/b.json"])
      assert.include(diff.patch, "-{\"theme\":\"dark\"}\n+{\"theme\":\"light\"}\n")
      assert.include(diff.patch, "diff --git a/e/config/a.json b/e/config/a.json\ndeleted file mode 100644\n")
    } finally {
      await server.stop()
    }
    assert.deepStrictEqual(pictureOf(root), before)
    assert.deepStrictEqual(Fs.readdirSync(tmp), [], "the live diff left its scratch directory")
  })
})
