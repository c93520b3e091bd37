/**
 * Liveness across hosts with real processes (docs/safety.md "How runs stay safe": leases and liveness): holders and
 * pruners on "other hosts" — their own host names in UTS namespaces, wall clocks shifted by libfaketime, a
 * boot id (and machine id) of their own bind-mounted in a private mount namespace — sharing one agent dir,
 * whose file system stamps every mtime on the kernel's clock. A live holder's run is never removed whatever
 * the clocks and identities say; a SIGKILLed one's is reclaimed once its lease has not been written for the
 * remote TTL + margin. Needs the built facade (`npm run build`).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { REMOTE_MARGIN_MS } from "../../src/domain/Liveness.js"
import { hostScratch } from "../support/hostScratch.js"
import { exited, firstJsonLine, hostSupport, type SimulatedHost, spawnOnHost } from "../support/hosts.js"

const support = hostSupport()
const holderScript = path.join(import.meta.dirname, "..", "fixtures", "holder.mjs")
const prunerScript = path.join(import.meta.dirname, "..", "fixtures", "pruner.mjs")
/** Short, so a killed holder is reclaimed within seconds; holders beat every third of it. */
const TTL_MS = 3000
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const ownMachineId = (() => {
  try {
    const id = fs.readFileSync("/etc/machine-id", "utf8").trim()
    return /^[0-9a-f]{32}$/.test(id) ? id : undefined
  } catch {
    return undefined
  }
})()

interface PruneSeen {
  readonly removed: ReadonlyArray<string>
  readonly active: ReadonlyArray<string>
  readonly busy: boolean
  readonly errors: ReadonlyArray<unknown>
  readonly hostname: string
  readonly now: number
}

const t = hostScratch("pi-hosts-")

const hold = async (host: SimulatedHost, tenant: string) => {
  const child = spawnOnHost(host, t.scratch, process.execPath, [holderScript, t.agentDir, "tools", tenant, "hold", String(TTL_MS)])
  t.children.push(child)
  return { child, run: await firstJsonLine<{ path: string; runId: string }>(child) }
}
const prune = async (host: SimulatedHost, tenant: string) => {
  const child = spawnOnHost(host, t.scratch, process.execPath, [prunerScript, t.agentDir, "tools", tenant, String(TTL_MS)])
  t.children.push(child)
  const seen = await firstJsonLine<PruneSeen>(child)
  await exited(child)
  expect(seen.hostname).toBe(host.hostname)
  expect(seen.errors).toEqual([])
  return seen
}
/** Longer than the TTL + margin: a lease not written meanwhile is dead by then. */
const pastTheTtl = () => sleep(TTL_MS + REMOTE_MARGIN_MS + 1000)

/**
 * The holder's run survives prunes from `pruner` (right away, and after more than a TTL of heartbeats);
 * SIGKILLed, it is reclaimed by `pruner` after the TTL + margin.
 */
const liveThenKilled = async (holderHost: SimulatedHost, pruner: SimulatedHost, tenant: string) => {
  const { child, run } = await hold(holderHost, tenant)
  // Its lease records the machine it runs on (a bind-mounted id, or this machine's) and its host name.
  const [leaseName] = fs.readdirSync(path.join(run.path, ".leases")).filter((n) => !n.startsWith("."))
  const lease = JSON.parse(fs.readFileSync(path.join(run.path, ".leases", leaseName!), "utf8")) as { host: string; machineId?: string; bootId?: string }
  expect(lease.host).toBe(holderHost.hostname)
  expect(lease.machineId).toBe(holderHost.machineId ?? ownMachineId)
  if (holderHost.bootId !== undefined) expect(lease.bootId).toBe(holderHost.bootId)
  const first = await prune(pruner, tenant)
  expect(first.removed).toEqual([])
  expect(first.active).toEqual([run.runId])
  await pastTheTtl()
  const second = await prune(pruner, tenant)
  expect(second.removed).toEqual([])
  expect(second.active).toEqual([run.runId])
  expect(fs.existsSync(run.path)).toBe(true)
  child.kill("SIGKILL")
  await exited(child)
  await pastTheTtl()
  const after = await prune(pruner, tenant)
  expect(after.removed).toEqual([run.runId])
  expect(fs.existsSync(run.path)).toBe(false)
}

describe.skipIf(!support.available)(`liveness across hosts, real processes${support.available ? "" : ` (skipped: ${support.why})`}`, () => {
  it("a pruner 20 minutes ahead never removes a live run of a host a day behind, nor the reverse; killed holders are reclaimed after the TTL + margin", async () => {
    await Promise.all([
      liveThenKilled({ hostname: "host-late", clock: "-1d" }, { hostname: "host-early", clock: "+20m" }, "late-holder"),
      liveThenKilled({ hostname: "host-early", clock: "+20m" }, { hostname: "host-late", clock: "-1d" }, "early-holder")
    ])
  }, 180_000)

  it("two machines with one host name and other boot ids (same or other machine id) never remove each other's live runs", async () => {
    const twin: SimulatedHost = { hostname: "twin" }
    await Promise.all([
      liveThenKilled({ hostname: "twin", bootId: "11111111-2222-4333-8444-555555555555" }, twin, "same-machine-id"),
      liveThenKilled({ hostname: "twin", bootId: "66666666-7777-4888-8999-aaaaaaaaaaaa", machineId: "ab".repeat(16), clock: "+5m" }, twin, "other-machine-id")
    ])
  }, 180_000)
})
