/**
 * One stress worker (a real process, forked by bench/stress.ts): acquires generated and named runs of the
 * shared tenants, checks what it got (I4), writes a token into each run and re-verifies it while holding
 * (I1), plants links out of the tenant in its runs (I3 bait), releases (sometimes deleting) and prunes at
 * random. The parent checks the same from outside; before every release the worker waits for the parent's
 * ack so the parent never checks a run that is being let go.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { openAgentStorage, type WorkRunLease } from "../src/promise.js"
import { prng } from "./util.js"

import { NAMED_RUNS, STRESS_CATEGORY, STRESS_TENANTS, type ToParent, type ToWorker } from "./stressProtocol.js"

const [agentDir, outsideDir, seedArg, staleArg, ttlArg] = process.argv.slice(2)
if (agentDir === undefined || outsideDir === undefined || process.send === undefined) {
  throw new Error("stressWorker is forked by bench/stress.ts")
}
const send = (m: ToParent) => process.send!(m)
const random = prng(Number(seedArg ?? 1) ^ process.pid)
const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]!
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

const counts: Record<string, number> = {}
const count = (kind: string) => (counts[kind] = (counts[kind] ?? 0) + 1)
const flushCounts = () => {
  if (Object.keys(counts).length === 0) return
  send({ t: "ops", counts: { ...counts } })
  for (const k of Object.keys(counts)) delete counts[k]
}
const violation = (inv: string, detail: string) => send({ t: "violation", inv, detail: `pid ${process.pid}: ${detail}` })

let stopping = false
const acks = new Map<string, () => void>()
process.on("message", (m: ToWorker) => {
  if (m.t === "stop") stopping = true
  else if (m.t === "die-mid-create") dieMidCreate()
  else acks.get(m.key)?.()
})

/**
 * What a process killed between the exclusive create and the write of a marker or lease leaves behind (issue
 * 12): an empty file at a prune marker, a cleanup marker, a lease of a run, or a lease of a staged run (whose
 * manifest was written). Created as the library creates them (O_EXCL|O_NOFOLLOW), never written; the parent
 * SIGKILLs us as soon as we say so. Anything in the way (taken, vanished) makes us try another kind.
 */
function dieMidCreate(): void {
  const exclusive = (file: string) => fs.closeSync(fs.openSync(file, fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW, 0o600))
  const nonce = () => randomBytes(4).toString("hex")
  const tenantDir = path.join(agentDir!, "work", STRESS_CATEGORY, pick(STRESS_TENANTS))
  const leaseName = `stress-${process.pid}-${nonce()}.json`
  const kinds: Array<[string, () => string]> = [
    ["prune marker", () => path.join(tenantDir, ".prune")],
    ["cleanup marker", () => {
      fs.mkdirSync(path.join(tenantDir, ".cleanup"), { recursive: true, mode: 0o700 })
      return path.join(tenantDir, ".cleanup", pick(NAMED_RUNS))
    }],
    ["run lease", () => path.join(tenantDir, pick(NAMED_RUNS), ".leases", leaseName)],
    ["staged lease", () => {
      const runId = `stress-staged-${nonce()}`
      const staged = path.join(tenantDir, ".staging", `${runId}.${nonce()}`)
      fs.mkdirSync(path.join(staged, ".leases"), { recursive: true, mode: 0o700 })
      fs.writeFileSync(path.join(staged, ".pi-work-run.json"), JSON.stringify({ version: 2, category: STRESS_CATEGORY, tenant: path.basename(tenantDir), runId, kind: "named", createdAt: Date.now(), createdBy: { host: "stress", pid: process.pid } }))
      return path.join(staged, ".leases", leaseName)
    }]
  ]
  for (let i = 0; i < 8; i++) {
    const [kind, where] = pick(kinds)
    try {
      const file = where()
      exclusive(file)
      send({ t: "created-empty", path: file, kind })
      return
    } catch {
      // Taken or vanished meanwhile: another kind.
    }
  }
  send({ t: "created-empty", path: "", kind: "none" })
}
/** I4: the run exists as a directory with its manifest and this process's lease. */
const checkAcquired = (lease: WorkRunLease): string | null => {
  const info = fs.lstatSync(lease.path, { throwIfNoEntry: false })
  if (info === undefined || !info.isDirectory()) return "run directory missing"
  let manifest: { runId?: unknown; tenant?: unknown }
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(lease.path, ".pi-work-run.json"), "utf8")) as typeof manifest
  } catch (e) {
    return `manifest unreadable: ${String(e)}`
  }
  if (manifest.runId !== lease.runId || manifest.tenant !== lease.tenant) return `manifest names ${String(manifest.tenant)}/${String(manifest.runId)}`
  const leases = fs.readdirSync(path.join(lease.path, ".leases"))
  if (!leases.some((n) => n.includes(`-${process.pid}-`))) return `no lease of pid ${process.pid} in ${leases.join(",")}`
  return null
}

const errorTag = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "_tag" in e && typeof e._tag === "string" ? e._tag : undefined

let held = 0
const hold = async (store: Awaited<ReturnType<typeof openAgentStorage>>) => {
  const tenant = pick(STRESS_TENANTS)
  const named = random() < 0.5
  const retention = pick([false, { maxInactiveRuns: 2 }, undefined] as const)
  let lease: WorkRunLease
  try {
    lease = await store.acquireWorkRun({
      category: STRESS_CATEGORY,
      tenant,
      ...(named ? { runId: pick(NAMED_RUNS) } : {}),
      ...(retention === undefined ? {} : { retention })
    })
  } catch (e) {
    const tag = errorTag(e)
    if (tag === undefined) violation("I4", `acquire failed with an untyped error: ${String(e)}`)
    else count(tag === "RunBusy" ? "acquire busy (RunBusy)" : `acquire failed: ${tag}`)
    return
  }
  count(named ? "acquire named" : "acquire generated")
  const problem = checkAcquired(lease)
  if (problem !== null) violation("I4", `${lease.path}: ${problem}`)
  const key = `${process.pid}-${held++}`
  const token = randomBytes(16).toString("hex")
  const tokenFile = path.join(lease.path, `token-${key}.txt`)
  fs.writeFileSync(tokenFile, token)
  if (random() < 0.3) {
    fs.mkdirSync(path.join(lease.path, `work-${key}`, "deep"), { recursive: true })
    for (let i = 0; i < 8; i++) fs.writeFileSync(path.join(lease.path, `work-${key}`, "deep", `f${i}`), randomBytes(512))
  }
  if (random() < 0.3) {
    // Bait for I3: links out of the tenant that a careless deleter would follow.
    fs.symlinkSync(path.join(outsideDir, "canary"), path.join(lease.path, `escape-${key}`))
    fs.symlinkSync(path.join(outsideDir, "file.txt"), path.join(lease.path, `escape-file-${key}`))
  }
  send({ t: "held", key, path: lease.path, tokenFile, token, pid: process.pid })
  const until = Date.now() + random() * 300
  do {
    let now: string | undefined
    try {
      now = fs.readFileSync(tokenFile, "utf8")
    } catch {
      now = undefined
    }
    if (now !== token) violation("I1", `token in held run ${lease.path} ${now === undefined ? "vanished" : "changed"}`)
    await sleep(20 + random() * 40)
  } while (Date.now() < until)
  await new Promise<void>((resolve) => {
    acks.set(key, resolve)
    send({ t: "releasing", key })
  })
  acks.delete(key)
  const del = random() < 0.25
  await lease.release(del ? { delete: true } : undefined)
  count(del ? "release (delete)" : "release")
}

const prune = async (store: Awaited<ReturnType<typeof openAgentStorage>>) => {
  const tenant = pick(STRESS_TENANTS)
  const dryRun = random() < 0.1
  try {
    const report = await store.pruneWorkTenant({
      category: STRESS_CATEGORY,
      tenant,
      dryRun,
      policy: {
        maxInactiveRuns: Math.floor(random() * 3),
        ...(random() < 0.3 ? { maxAgeMs: pick([0, 500, 5000]) } : {}),
        ...(random() < 0.3 ? { maxBytes: pick([0, 20_000]) } : {})
      }
    })
    count(dryRun ? "prune (dry run)" : report.busy ? "prune (busy)" : "prune")
    counts["runs removed"] = (counts["runs removed"] ?? 0) + (dryRun ? 0 : report.removed.length)
    const reclaimed = report.unreadable.filter((u) => u.action === "reclaimed").length
    if (reclaimed > 0) counts["empty/unreadable reclaimed by a prune"] = (counts["empty/unreadable reclaimed by a prune"] ?? 0) + reclaimed
  } catch (e) {
    const tag = errorTag(e)
    if (tag === undefined) violation("prune", `prune failed with an untyped error: ${String(e)}`)
    else count(`prune failed: ${tag}`)
  }
}

const main = async () => {
  const store = await openAgentStorage({
    agentDir,
    migrate: false,
    ...(staleArg ? { staleUnreadableMs: Number(staleArg) } : {}),
    ...(ttlArg ? { remoteLeaseTtlMs: Number(ttlArg) } : {})
  })
  // Ready once the store is open: the facade loads its stack on the first open, not at import (docs/install.md
  // "Installing"), and under tsx that compile must not eat the run's seconds.
  send({ t: "ready" })
  const timer = setInterval(flushCounts, 250)
  const lane = async () => {
    while (!stopping) {
      if (random() < 0.7) await hold(store)
      else await prune(store)
    }
  }
  await Promise.all([lane(), lane()])
  await store.close()
  clearInterval(timer)
  flushCounts()
  send({ t: "done" })
  process.disconnect()
}

main().catch((e: unknown) => {
  violation("worker", `worker crashed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
  flushCounts()
  setTimeout(() => process.exit(2), 100)
})
