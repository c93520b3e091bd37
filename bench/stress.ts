/**
 * `npm run stress -- --processes 8 --seconds 60 [--kill-every MS] [--mid-create RATIO] [--stale-ms MS] [--hosts] [--ttl-ms MS] [--seed N] [--json] [--keep]`
 *
 * Real worker processes (bench/stressWorker.ts) acquire, write into, release and prune the same tenants at
 * random, some are SIGKILLed and respawned, while this process checks from outside:
 * - I1: every run a live holder announced keeps its token file, unchanged, plus its manifest and lease;
 * - I2: unowned canary directories (no manifest; a manifest naming another run) never disappear or change;
 * - I3: the tree behind planted symlinks (a link in each tenant, links inside runs) never changes;
 * - I4: checked by each worker right after acquire (manifest and own lease present), reported here;
 * - I5: a share (`--mid-create`, default 0.5) of the kills lands between the exclusive create and the write
 *   of a marker or lease (the worker creates it empty, then is SIGKILLed), and at the end, once the stale
 *   bound (`--stale-ms`, default 2000, given to every store) has passed, a final prune of every tenant
 *   converges: not busy, nothing active, every empty marker and lease reclaimed, no marker left.
 * `--hosts` (root, Linux, libfaketime): the workers run on two simulated hosts, alternately: each in its own
 * UTS namespace (host names `stress-late` and `stress-early`) with its wall clock shifted by libfaketime (a
 * day behind, 20 minutes ahead), so every cross-host verdict is judged on the file system's clock; every
 * store uses a short remote lease TTL (`--ttl-ms`, default 8000) and the final prune waits it out (+ margin).
 * Prints operations per kind and violations; exits 1 on any violation. Files only; removes its temp dir.
 */
import { type ChildProcess, fork } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { REMOTE_MARGIN_MS } from "../src/domain/Liveness.js"
import { openAgentStorage } from "../src/promise.js"
import { hostSupport, type SimulatedHost, spawnOnHost } from "../test/support/hosts.js"
import { type ToParent, type ToWorker, STRESS_CATEGORY, STRESS_TENANTS } from "./stressProtocol.js"
import { BENCH_DIR, machine, makeTempRoot, numberArg, parseArgs, prng, renderTable, sleep } from "./util.js"

interface Held {
  readonly path: string
  readonly tokenFile: string
  readonly token: string
  readonly pid: number
}

/** The simulated hosts of `--hosts`: one a day behind, one 20 minutes ahead (workers alternate). */
const STRESS_HOSTS: ReadonlyArray<SimulatedHost> = [
  { hostname: "stress-late", clock: "-1d" },
  { hostname: "stress-early", clock: "+20m" }
]

interface Worker {
  readonly child: ChildProcess
  readonly pid: number
  /** The simulated host it runs on (`--hosts`), or null. */
  readonly host: SimulatedHost | null
  /** Set before we SIGKILL it: its later messages and its runs are no longer ours to check. */
  killed: boolean
  /** It listens for messages (a stop sent earlier could be lost while it loads). */
  ready: boolean
  /** Asked to die between create and write (at this time): SIGKILLed on its answer. */
  dyingSince: number | null
  done: boolean
}

/** A no-follow snapshot of a tree: type, size, mode, mtime, content hash or link target per path. */
const snapshot = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (p: string) => {
    const st = fs.lstatSync(p, { throwIfNoEntry: false })
    if (st === undefined) {
      out[p] = "missing"
      return
    }
    if (st.isSymbolicLink()) out[p] = `link ${fs.readlinkSync(p)}`
    else if (st.isFile()) out[p] = `file ${st.size} ${st.mode} ${st.mtimeMs} ${createHash("sha1").update(fs.readFileSync(p)).digest("hex")}`
    else if (st.isDirectory()) {
      out[p] = `dir ${st.mode}`
      for (const name of fs.readdirSync(p).sort()) walk(path.join(p, name))
    } else out[p] = "other"
  }
  walk(root)
  return out
}

const diff = (before: Record<string, string>, after: Record<string, string>): string | null => {
  for (const [p, v] of Object.entries(before)) if (after[p] !== v) return `${p}: ${v} → ${after[p] ?? "missing"}`
  for (const p of Object.keys(after)) if (!(p in before)) return `${p}: appeared`
  return null
}

const plant = (agentDir: string, outside: string) => {
  fs.mkdirSync(path.join(outside, "canary", "sub"), { recursive: true })
  fs.writeFileSync(path.join(outside, "canary", "secret.txt"), "outside the tenant")
  fs.writeFileSync(path.join(outside, "canary", "sub", "deep.txt"), "deeper outside")
  fs.writeFileSync(path.join(outside, "file.txt"), "a file outside")
  const canaries: Array<string> = []
  for (const dir of [agentDir, path.join(agentDir, "work"), path.join(agentDir, "work", STRESS_CATEGORY)]) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    fs.chmodSync(dir, 0o700)
  }
  for (const tenant of STRESS_TENANTS) {
    const tenantDir = path.join(agentDir, "work", STRESS_CATEGORY, tenant)
    fs.mkdirSync(tenantDir, { mode: 0o700 })
    fs.mkdirSync(path.join(tenantDir, "unowned-canary"))
    fs.writeFileSync(path.join(tenantDir, "unowned-canary", "data.txt"), "no manifest: never deleted")
    fs.mkdirSync(path.join(tenantDir, "mismatch-canary"))
    fs.writeFileSync(path.join(tenantDir, "mismatch-canary", ".pi-work-run.json"), JSON.stringify({ version: 1, category: STRESS_CATEGORY, tenant, runId: "someone-else", createdAt: 0 }))
    fs.writeFileSync(path.join(tenantDir, "mismatch-canary", "data.txt"), "manifest names another run")
    fs.symlinkSync(path.join(outside, "canary"), path.join(tenantDir, "link-canary"))
    canaries.push(path.join(tenantDir, "unowned-canary"), path.join(tenantDir, "mismatch-canary"), path.join(tenantDir, "link-canary"))
  }
  return canaries
}

/** What a converged tenant must not hold: a prune marker, cleanup markers, empty leases, leased staged runs. */
const leftoverMarkers = (tenantDir: string): Array<string> => {
  const out: Array<string> = []
  const list = (d: string) => (fs.existsSync(d) ? fs.readdirSync(d) : [])
  if (fs.existsSync(path.join(tenantDir, ".prune"))) out.push(".prune left")
  for (const m of list(path.join(tenantDir, ".cleanup"))) out.push(`.cleanup/${m} left`)
  for (const s of list(path.join(tenantDir, ".staging"))) if (list(path.join(tenantDir, ".staging", s, ".leases")).length > 0) out.push(`.staging/${s} with a lease left`)
  for (const run of list(tenantDir)) {
    for (const l of list(path.join(tenantDir, run, ".leases"))) {
      const st = fs.lstatSync(path.join(tenantDir, run, ".leases", l), { throwIfNoEntry: false })
      if (st !== undefined && st.size === 0) out.push(`${run}/.leases/${l} empty lease left`)
    }
  }
  return out
}

const main = async () => {
  const args = parseArgs(process.argv.slice(2))
  const processes = Math.max(1, Math.floor(numberArg(args, "processes", 8)))
  const seconds = numberArg(args, "seconds", 60)
  const killEvery = numberArg(args, "kill-every", Math.max(3000, (seconds * 1000) / (processes * 2)))
  const seed = Math.floor(numberArg(args, "seed", Date.now() % 1_000_000))
  const midCreate = numberArg(args, "mid-create", 0.5)
  const staleMs = numberArg(args, "stale-ms", 2000)
  const hosts = args.has("hosts")
  const ttlMs = hosts ? numberArg(args, "ttl-ms", 8000) : null
  const json = args.has("json")
  const log = (line: string) => {
    if (!json) process.stderr.write(`${line}\n`)
  }
  const random = prng(seed)
  const root = makeTempRoot("stress")
  const agentDir = path.join(root, "agent")
  const outside = path.join(root, "outside")
  const counts: Record<string, number> = {}
  const add = (k: string, n = 1) => (counts[k] = (counts[k] ?? 0) + n)
  const violations: Array<{ inv: string; detail: string }> = []
  const violate = (inv: string, detail: string) => {
    if (violations.length < 1000) violations.push({ inv, detail })
    log(`VIOLATION ${inv}: ${detail}`)
  }
  const held = new Map<string, Held>()
  const workers = new Set<Worker>()
  let stopping = false
  const started = Date.now()
  try {
    if (hosts) {
      const support = hostSupport()
      if (!support.available) throw new Error(`--hosts needs UTS and mount namespaces and libfaketime: ${support.why}`)
    }
    const canaries = plant(agentDir, outside)
    const canaryBefore = Object.assign({}, ...canaries.map(snapshot)) as Record<string, string>
    const outsideBefore = snapshot(outside)

    let spawned = 0
    const spawnWorker = (host: SimulatedHost | null = hosts ? STRESS_HOSTS[spawned % STRESS_HOSTS.length]! : null): Worker => {
      spawned++
      const workerArgs = [agentDir, outside, String(seed), String(staleMs), ...(ttlMs === null ? [] : [String(ttlMs)])]
      const script = path.join(BENCH_DIR, "stressWorker.ts")
      const child = host === null
        ? fork(script, workerArgs, { execArgv: ["--import", "tsx"], stdio: ["ignore", "ignore", "pipe", "ipc"] })
        : spawnOnHost(host, root, process.execPath, ["--import", "tsx", script, ...workerArgs], ["ignore", "ignore", "pipe", "ipc"])
      const w: Worker = { child, pid: child.pid ?? -1, host, killed: false, ready: false, done: false, dyingSince: null }
      let stderr = ""
      child.stderr?.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)))
      child.on("message", (m: ToParent) => {
        if (w.killed) return
        if (m.t === "held") held.set(m.key, { path: m.path, tokenFile: m.tokenFile, token: m.token, pid: m.pid })
        else if (m.t === "releasing") {
          held.delete(m.key)
          child.send({ t: "ack", key: m.key } satisfies ToWorker)
        } else if (m.t === "ops") for (const [k, n] of Object.entries(m.counts)) add(k, n)
        else if (m.t === "violation") violate(m.inv, m.detail)
        else if (m.t === "done") w.done = true
        else if (m.t === "created-empty") kill(w, m.path === "" ? "SIGKILL (nothing to create)" : `SIGKILL between create and write: ${m.kind}`)
        else if (m.t === "ready") {
          w.ready = true
          if (stopping) child.send({ t: "stop" } satisfies ToWorker)
        }
      })
      child.on("exit", (code, signal) => {
        workers.delete(w)
        if (!w.killed && !(stopping && w.done)) violate("worker", `worker ${w.pid} exited (${code ?? signal}) unexpectedly: ${stderr.trim().slice(-500)}`)
        if (!stopping && w.killed) {
          add("respawn")
          workers.add(spawnWorker(w.host))
        }
      })
      workers.add(w)
      return w
    }

    const kill = (victim: Worker, what: string) => {
      victim.killed = true
      for (const [key, h] of held) if (h.pid === victim.pid) held.delete(key)
      victim.child.kill("SIGKILL")
      add(what)
    }

    log(`stress: ${processes} processes for ${seconds} s, SIGKILL every ~${Math.round(killEvery)} ms (${midCreate * 100}% between create and write, stale bound ${staleMs} ms), seed ${seed}, in ${root}`)
    if (hosts) log(`stress: hosts ${STRESS_HOSTS.map((h) => `${h.hostname} (clock ${h.clock})`).join(", ")}, remote lease TTL ${ttlMs} ms`)
    for (let i = 0; i < processes; i++) spawnWorker()

    const checkHeld = () => {
      for (const [key, h] of held) {
        let token: string | undefined
        try {
          token = fs.readFileSync(h.tokenFile, "utf8")
        } catch {
          token = undefined
        }
        // The holder waits for our ack before releasing, so an entry here is still held right now.
        if (!held.has(key)) continue
        if (token !== h.token) violate("I1", `${h.path}: token ${token === undefined ? "vanished" : "changed"} while pid ${h.pid} holds it`)
        if (!fs.existsSync(path.join(h.path, ".pi-work-run.json"))) violate("I1", `${h.path}: manifest vanished while pid ${h.pid} holds it`)
        let leases: Array<string> = []
        try {
          leases = fs.readdirSync(path.join(h.path, ".leases"))
        } catch {
          leases = []
        }
        if (!leases.some((n) => n.includes(`-${h.pid}-`))) violate("I1", `${h.path}: lease of pid ${h.pid} vanished while held`)
        add("checks I1")
      }
    }
    const checkCanaries = () => {
      const now = Object.assign({}, ...canaries.map(snapshot)) as Record<string, string>
      const d = diff(canaryBefore, now)
      if (d !== null) violate("I2", d)
      const o = diff(outsideBefore, snapshot(outside))
      if (o !== null) violate("I3", o)
      add("checks I2+I3")
    }

    const deadline = started + seconds * 1000
    let nextKill = Date.now() + killEvery * (0.5 + random())
    let nextCanary = 0
    while (Date.now() < deadline) {
      checkHeld()
      if (Date.now() >= nextCanary) {
        checkCanaries()
        nextCanary = Date.now() + 200
      }
      if (Date.now() >= nextKill) {
        const alive = [...workers].filter((w) => !w.killed && w.dyingSince === null)
        // Only a worker that listens can be asked to die mid-create (a loading one is killed plainly).
        const listening = alive.filter((w) => w.ready && w.child.connected)
        const midway = listening.length > 0 && random() < midCreate
        const pool = midway ? listening : alive
        const victim = pool[Math.floor(random() * pool.length)]
        if (victim !== undefined && midway) {
          victim.dyingSince = Date.now()
          victim.child.send({ t: "die-mid-create" } satisfies ToWorker)
        } else if (victim !== undefined) kill(victim, "SIGKILL")
        nextKill = Date.now() + killEvery * (0.5 + random())
      }
      // A worker that did not answer the request in time dies anyway.
      for (const w of workers) if (!w.killed && w.dyingSince !== null && Date.now() - w.dyingSince > 2000) kill(w, "SIGKILL")
      await sleep(15)
    }

    stopping = true
    log("stress: stopping workers")
    for (const w of workers) if (!w.killed && w.ready && w.child.connected && w.dyingSince === null) w.child.send({ t: "stop" } satisfies ToWorker)
    const stopBy = Date.now() + 20_000
    while (workers.size > 0 && Date.now() < stopBy) {
      checkHeld()
      for (const w of workers) if (!w.killed && w.dyingSince !== null && Date.now() - w.dyingSince > 2000) kill(w, "SIGKILL")
      await sleep(20)
    }
    for (const w of workers) {
      violate("worker", `worker ${w.pid} did not stop within 20 s`)
      w.killed = true
      w.child.kill("SIGKILL")
    }

    // A final prune of every tenant from a fresh store, once the stale bound has passed: killed holders'
    // leases are dead and every empty marker or lease is stale, so everything owned and inactive goes, every
    // empty file is reclaimed, no marker is left; the canaries and the outside tree must still be untouched.
    // With hosts, this process is a third host: the killed workers' leases are dead once not written for the
    // remote TTL + margin.
    await sleep(Math.max(staleMs, ttlMs === null ? 0 : ttlMs + REMOTE_MARGIN_MS) + 100)
    const store = await openAgentStorage({ agentDir, migrate: false, staleUnreadableMs: staleMs, ...(ttlMs === null ? {} : { remoteLeaseTtlMs: ttlMs }) })
    try {
      for (const tenant of STRESS_TENANTS) {
        const report = await store.pruneWorkTenant({ category: STRESS_CATEGORY, tenant, policy: { maxInactiveRuns: 0 } })
        add("final prune: runs removed", report.removed.length)
        add("final prune: empty/unreadable reclaimed", report.unreadable.filter((u) => u.action === "reclaimed").length)
        if (report.busy) violate("I5", `${tenant}: final prune busy after the stale bound`)
        if (report.active.length > 0) violate("I5", `${tenant}: runs still active after every holder stopped or died: ${report.active.join(", ")}`)
        for (const e of report.errors) violate("I5", `${tenant}: final prune error ${e.path}: ${e.message}`)
        for (const u of report.unreadable) {
          // A host 20 minutes ahead stamps manifests "in the future" of this one: those stamps are reported and
          // set aside for last use (the manifest's mtime counts), never left over.
          if (u.action === "reclaimed" || (hosts && u.action === "ignored")) continue
          violate("I5", `${tenant}: ${u.path} ${u.action} after the stale bound (${u.what})`)
        }
        for (const left of leftoverMarkers(path.join(agentDir, "work", STRESS_CATEGORY, tenant))) violate("I5", `${tenant}: not converged: ${left}`)
      }
    } finally {
      await store.close()
    }
    checkCanaries()
  } finally {
    if (!args.has("keep")) fs.rmSync(root, { recursive: true, force: true })
  }

  const byInvariant: Record<string, number> = {}
  for (const v of violations) byInvariant[v.inv] = (byInvariant[v.inv] ?? 0) + 1
  const doc = {
    machine: machine(path.dirname(root)),
    processes,
    seconds,
    killEveryMs: Math.round(killEvery),
    midCreate,
    staleMs,
    hosts: hosts ? STRESS_HOSTS : null,
    remoteLeaseTtlMs: ttlMs,
    seed,
    tookSeconds: Math.round((Date.now() - started) / 100) / 10,
    operations: Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b))),
    violations: violations.length,
    violationsByInvariant: byInvariant,
    firstViolations: violations.slice(0, 20)
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`)
  } else {
    process.stdout.write(`${renderTable(["operation", "count"], Object.entries(doc.operations).map(([k, n]) => [k, String(n)]))}\n`)
    process.stdout.write(`violations: ${violations.length}${violations.length > 0 ? ` ${JSON.stringify(byInvariant)}` : ""}\n`)
    for (const v of doc.firstViolations) process.stdout.write(`  ${v.inv}: ${v.detail}\n`)
    process.stdout.write(`took ${doc.tookSeconds} s (seed ${seed})\n`)
  }
  process.exitCode = violations.length > 0 ? 1 : 0
}

main().catch((e: unknown) => {
  process.stderr.write(`stress failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`)
  process.exit(2)
})
