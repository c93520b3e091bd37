/**
 * Ages across hosts with real processes (docs/work-runs.md "Retention"): pruners and holders on "other hosts" — their own
 * host names in UTS namespaces, wall clocks shifted by libfaketime — sharing one agent dir, whose file system
 * stamps every mtime on the kernel's clock. A run's age and a staged run's age are judged on that clock (a
 * probe's mtime against the files' mtimes), so no host's clock, the pruner's or the holder's, makes a prune
 * remove a run early or keep one past its age. Needs the built facade (`npm run build`).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { hostScratch } from "../support/hostScratch.js"
import { exited, firstJsonLine, hostSupport, type SimulatedHost, spawnOnHost } from "../support/hosts.js"

const support = hostSupport()
const holderScript = path.join(import.meta.dirname, "..", "fixtures", "holder.mjs")
const prunerScript = path.join(import.meta.dirname, "..", "fixtures", "pruner.mjs")
const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR
const TTL_MS = 15 * 60 * 1000

interface PruneSeen {
  readonly removed: ReadonlyArray<string>
  readonly kept: ReadonlyArray<string>
  readonly errors: ReadonlyArray<unknown>
  readonly hostname: string
}

const t = hostScratch("pi-prune-clock-")

/** A run acquired and released (SIGTERM: the facade closes and stamps `releasedAt`) by a process on `host`. */
const releasedBy = async (host: SimulatedHost, tenant: string) => {
  const child = spawnOnHost(host, t.scratch, process.execPath, [holderScript, t.agentDir, "tools", tenant, "hold", String(TTL_MS)])
  t.children.push(child)
  const run = await firstJsonLine<{ path: string; runId: string }>(child)
  child.kill("SIGTERM")
  await exited(child)
  const manifest = JSON.parse(fs.readFileSync(path.join(run.path, ".pi-work-run.json"), "utf8")) as { releasedAt?: number }
  expect(manifest.releasedAt).toBeTypeOf("number")
  return { ...run, releasedAt: manifest.releasedAt! }
}

const prune = async (host: SimulatedHost, tenant: string, policy: object) => {
  const child = spawnOnHost(host, t.scratch, process.execPath, [prunerScript, t.agentDir, "tools", tenant, String(TTL_MS), JSON.stringify(policy)])
  t.children.push(child)
  const seen = await firstJsonLine<PruneSeen>(child)
  await exited(child)
  expect(seen.hostname).toBe(host.hostname)
  expect(seen.errors).toEqual([])
  return seen
}

/** Every file and directory under `dir` (and itself) last written `ms` ago on the file system's clock. */
const ageOnDisk = (dir: string, ms: number) => {
  const at = (Date.now() - ms) / 1000
  for (const rel of fs.readdirSync(dir, { recursive: true }).map(String)) fs.utimesSync(path.join(dir, rel), at, at)
  fs.utimesSync(dir, at, at)
}

/** As if `ms` passed since the run's last use: its manifest's stamps moved back by `ms`, and its files' mtimes. */
const timePasses = (run: { readonly path: string }, ms: number) => {
  const file = path.join(run.path, ".pi-work-run.json")
  const manifest = JSON.parse(fs.readFileSync(file, "utf8")) as { createdAt: number; releasedAt?: number }
  manifest.createdAt -= ms
  if (manifest.releasedAt !== undefined) manifest.releasedAt -= ms
  fs.writeFileSync(file, JSON.stringify(manifest))
  ageOnDisk(run.path, ms)
}

const KEEP_MANY = { maxInactiveRuns: 1000 }

describe.skipIf(!support.available)(`ages across hosts, real processes${support.available ? "" : ` (skipped: ${support.why})`}`, () => {
  it("a pruner a day ahead keeps a run released a moment ago (maxAge 12 h); so does a correct pruner for a host a day behind; both remove it once it is really past its age", async () => {
    const policy = { ...KEEP_MANY, maxAgeMs: 12 * HOUR }
    const [fresh, late] = await Promise.all([
      releasedBy({ hostname: "host-right" }, "fresh"),
      releasedBy({ hostname: "host-late", clock: "-1d" }, "late")
    ])
    // The late host's stamp is a day old the moment it is written.
    expect(Date.now() - late.releasedAt).toBeGreaterThan(DAY - HOUR)
    const [ahead, right] = await Promise.all([
      prune({ hostname: "host-early", clock: "+1d" }, "fresh", policy),
      prune({ hostname: "host-right" }, "late", policy)
    ])
    expect(ahead.removed).toEqual([])
    expect(ahead.kept).toEqual([fresh.runId])
    expect(right.removed).toEqual([])
    expect(right.kept).toEqual([late.runId])
    // 13 hours later (its files untouched since), each goes by age.
    timePasses(fresh, 13 * HOUR)
    timePasses(late, 13 * HOUR)
    const [aheadLater, rightLater] = await Promise.all([
      prune({ hostname: "host-early", clock: "+1d" }, "fresh", policy),
      prune({ hostname: "host-right" }, "late", policy)
    ])
    expect(aheadLater.removed).toEqual([fresh.runId])
    expect(rightLater.removed).toEqual([late.runId])
  }, 180_000)

  it("a pruner a day behind removes a run two days past its last use (maxAge 36 h)", async () => {
    const old = await releasedBy({ hostname: "host-old", clock: "-2d" }, "old")
    // Two days ago on the file system's clock too.
    ageOnDisk(old.path, 2 * DAY)
    expect(Date.now() - old.releasedAt).toBeGreaterThan(2 * DAY - HOUR)
    const behind = await prune({ hostname: "host-behind", clock: "-1d" }, "old", { ...KEEP_MANY, maxAgeMs: 36 * HOUR })
    expect(behind.removed).toEqual([old.runId])
    expect(fs.existsSync(old.path)).toBe(false)
  }, 120_000)

  it("a pruner more than an hour ahead never removes a staged run another host is creating (its lease not written yet); one untouched for over an hour goes", async () => {
    const seed = await releasedBy({ hostname: "host-right" }, "staging")
    const staged = path.join(path.dirname(seed.path), ".staging", "being-created")
    fs.mkdirSync(staged, { recursive: true, mode: 0o700 })
    const ahead = await prune({ hostname: "host-early", clock: "+2h" }, "staging", KEEP_MANY)
    expect(ahead.kept).toEqual([seed.runId])
    expect(fs.existsSync(staged)).toBe(true)
    // Abandoned: untouched for two hours on the file system's clock.
    ageOnDisk(staged, 2 * HOUR)
    const behind = await prune({ hostname: "host-late", clock: "-1d" }, "staging", KEEP_MANY)
    expect(behind.kept).toEqual([seed.runId])
    expect(fs.existsSync(staged)).toBe(false)
  }, 120_000)
})
