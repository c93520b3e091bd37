/**
 * Sizes a user can act on, through the built CLI (docs/work-runs.md "Retention", "CLI quick tour"): `status`, `work ls` and
 * `work prune` report disk usage (what `du` prints) beside apparent size, equal to GNU du's on the same trees;
 * every tenant is measured within a budget of its own; whatever stopped a report early is said with how much
 * it left and the flag that raises it; the byte budget counts disk usage.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { runNode } from "../support/child.js"
import { du } from "../support/du.js"
import { formatBytes } from "../../src/cli/format.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const DAY = 24 * 60 * 60 * 1000

const baseEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete env["PI_WEB_DATA_DIR"]
  env["NO_COLOR"] = "1"
  return env
}

const at = (agentDir: string) => (...args: ReadonlyArray<string>) => runNode(MAIN, ["--agent-dir", agentDir, ...args], { env: baseEnv() })

const temps: Array<string> = []
beforeAll(() => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
})
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

/** A private agent dir whose tenants (`category/tenant`) are made 0700 all the way. */
const agentWith = (...tenants: ReadonlyArray<string>) => {
  const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-sizes-"))
  temps.push(base)
  const agentDir = Path.join(base, "agent")
  for (const t of tenants) {
    const dir = Path.join(agentDir, "work", t)
    Fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    for (let d = dir; d.length >= agentDir.length; d = Path.dirname(d)) Fs.chmodSync(d, 0o700)
  }
  return agentDir
}

/** A released run `runId` last used `daysAgo` days ago, holding `files` files of `size` bytes. */
const releasedRun = (agentDir: string, tenant: string, runId: string, daysAgo: number, files: number, size = 1) => {
  const runDir = Path.join(agentDir, "work", tenant, runId)
  Fs.mkdirSync(Path.join(runDir, ".leases"), { recursive: true, mode: 0o700 })
  const [category, name] = tenant.split("/")
  const when = Date.now() - daysAgo * DAY
  const manifest = Path.join(runDir, ".pi-work-run.json")
  Fs.writeFileSync(manifest, JSON.stringify({
    version: 2, category, tenant: name, runId, kind: "named", createdAt: when, releasedAt: when, createdBy: { host: Os.hostname(), pid: 1 }
  }))
  // Last written then too: a run's age is also read from its manifest's mtime, on the file system's clock.
  Fs.utimesSync(manifest, when / 1000, when / 1000)
  for (let i = 0; i < files; i++) Fs.writeFileSync(Path.join(runDir, `f${i}`), "x".repeat(size))
  return runDir
}

interface Sized {
  readonly bytes: number
  readonly apparentBytes: number
  readonly complete: boolean
  readonly measured: boolean
}

describe("status and work ls: du's sizes, a budget per tenant, said when stopped", () => {
  it("one big tenant never leaves the small ones unmeasured; sizes equal du; --max-entries raises the budget", async () => {
    const agentDir = agentWith("a/big", "b/small", "c/small")
    for (let r = 0; r < 4; r++) releasedRun(agentDir, "a/big", `run${r}`, 1, 30)
    releasedRun(agentDir, "b/small", "one", 1, 2, 5000)
    releasedRun(agentDir, "c/small", "one", 1, 3)
    const tenantDir = (t: string) => Path.join(agentDir, "work", t)

    // A budget below the big tenant's 132 entries: it alone is a lower bound; its neighbours are exact.
    const cut = await at(agentDir)("status", "--json", "--max-entries", "40")
    assert.strictEqual(cut.code, 0, cut.stderr)
    const doc = JSON.parse(cut.stdout) as { tenants: ReadonlyArray<{ tenant: string; category: string; size: Sized & { entries: number } }>; incomplete: boolean; stoppedBy: ReadonlyArray<{ _tag: string; left: number; flag: string; message: string }> }
    const [big, small1, small2] = doc.tenants
    assert.deepStrictEqual([big!.size.complete, big!.size.measured, big!.size.entries], [false, true, 40])
    assert.isAtMost(big!.size.bytes, du(tenantDir("a/big")).bytes)
    for (const t of [small1!, small2!]) {
      assert.deepStrictEqual({ bytes: t.size.bytes, apparentBytes: t.size.apparentBytes }, du(tenantDir(`${t.category}/${t.tenant}`)))
      assert.isTrue(t.size.complete)
    }
    assert.isTrue(doc.incomplete)
    assert.deepStrictEqual(doc.stoppedBy.map((s) => [s._tag, s.left, s.flag]), [["MaxEntries", 1, "--max-entries"]])

    const human = await at(agentDir)("status", "--max-entries", "40")
    assert.match(human.stdout, /^a\/big\s+4\s+0\s+4\s+0\s+≥ 40\s+≥ \d+(\.\d)? KiB\s+≥ \d+(\.\d)? KiB\s/m)
    assert.notMatch(human.stdout, /≥ 0 B/)
    assert.match(human.stdout, /^Stopped early: .*maxEntries 40 per tenant\): 1 size is a lower bound; raise it \(--max-entries\)$/m)

    // The default budget (100,000 per tenant) measures all three whole: du's numbers, nothing said.
    const whole = await at(agentDir)("status", "--json")
    const all = JSON.parse(whole.stdout) as typeof doc
    for (const t of all.tenants) assert.deepStrictEqual({ bytes: t.size.bytes, apparentBytes: t.size.apparentBytes, complete: t.size.complete }, { ...du(tenantDir(`${t.category}/${t.tenant}`)), complete: true })
    assert.deepStrictEqual([all.incomplete, all.stoppedBy], [false, []])
    // Disk usage is what fills the disk: 30 one-byte files take 30 blocks; their apparent size is far less.
    assert.isAbove(all.tenants[0]!.size.bytes, 4 * 30 * 512)

    // work ls: each run's size is du's; with a small budget the oldest runs are "not measured", and it says so.
    const list = JSON.parse((await at(agentDir)("work", "ls", "a/big", "--json")).stdout) as { runs: ReadonlyArray<{ path: string; size: Sized }>; incomplete: boolean; truncated: boolean }
    for (const r of list.runs) assert.deepStrictEqual({ bytes: r.size.bytes, apparentBytes: r.size.apparentBytes }, du(r.path))
    assert.deepStrictEqual([list.incomplete, list.truncated], [false, false])
    const small = await at(agentDir)("work", "ls", "a/big", "--json", "--max-entries", "40")
    const part = JSON.parse(small.stdout) as { runs: ReadonlyArray<{ size: Sized }>; incomplete: boolean; truncated: boolean; stoppedBy: ReadonlyArray<{ _tag: string; left: number }> }
    // 32 entries below each run: the first whole, the second cut at 8, the other two never walked.
    assert.deepStrictEqual(part.runs.map((r) => [r.size.complete, r.size.measured]), [[true, true], [false, true], [false, false], [false, false]])
    assert.deepStrictEqual([part.incomplete, part.truncated], [true, false])
    assert.deepStrictEqual(part.stoppedBy.map((s) => [s._tag, s.left]), [["MaxEntries", 3]])
    const shown = await at(agentDir)("work", "ls", "a/big", "--max-entries", "40")
    assert.strictEqual((shown.stdout.match(/\s-\s+not measured\s+-$/gm) ?? []).length, 2, shown.stdout)
    assert.match(shown.stdout, /^Stopped early: .*3 sizes not exact \(2 not measured.*--max-entries/m)
  }, 60_000)

  it("work ls --json says truncated exactly when a tenant holds more entries than it examines, how many, and the flag", async () => {
    const agentDir = agentWith("tools/bash")
    for (let r = 0; r < 12; r++) releasedRun(agentDir, "tools/bash", `run${String(r).padStart(2, "0")}`, 1, 0)
    const cut = JSON.parse((await at(agentDir)("work", "ls", "--json", "--max-scanned-runs", "5")).stdout) as { runs: ReadonlyArray<unknown>; truncated: boolean; incomplete: boolean; stoppedBy: ReadonlyArray<{ _tag: string; left: number; limit: number; flag: string }> }
    assert.deepStrictEqual([cut.runs.length, cut.truncated, cut.incomplete], [5, true, false])
    assert.deepStrictEqual(cut.stoppedBy.map((s) => [s._tag, s.limit, s.left, s.flag]), [["MaxScannedRuns", 5, 7, "--max-scanned-runs"]])
    const human = await at(agentDir)("work", "ls", "--max-scanned-runs", "5")
    assert.match(human.stdout, /^Stopped early: 1 tenant hold.*5 entries examined per tenant: 7 not listed; raise it \(--max-scanned-runs\)$/m)
    const whole = JSON.parse((await at(agentDir)("work", "ls", "--json", "--max-scanned-runs", "12")).stdout) as typeof cut
    assert.deepStrictEqual([whole.runs.length, whole.truncated, whole.stoppedBy], [12, false, []])
  }, 60_000)
})

describe("the flags raise the scan bounds past their defaults", () => {
  it("--max-depth walks a run deeper than 64 directories whole: work ls and a prune then state du's numbers", async () => {
    const agentDir = agentWith("tools/bash")
    const runDir = releasedRun(agentDir, "tools/bash", "deep", 1, 0)
    const deep = Path.join(runDir, ...Array.from({ length: 70 }, () => "d"))
    Fs.mkdirSync(deep, { recursive: true })
    Fs.writeFileSync(Path.join(deep, "f"), "x".repeat(5000))
    type Listing = { runs: ReadonlyArray<{ size: Sized }>; incomplete: boolean; stoppedBy: ReadonlyArray<{ _tag: string; limit: number; left: number; flag: string }> }
    const cut = JSON.parse((await at(agentDir)("work", "ls", "--json")).stdout) as Listing
    assert.deepStrictEqual([cut.runs[0]!.size.complete, cut.incomplete, cut.stoppedBy.map((s) => [s._tag, s.limit, s.left, s.flag])], [false, true, [["MaxDepth", 64, 1, "--max-depth"]]])
    const whole = JSON.parse((await at(agentDir)("work", "ls", "--json", "--max-depth", "100")).stdout) as Listing
    assert.deepStrictEqual([whole.runs[0]!.size.complete, whole.incomplete, whole.stoppedBy], [true, false, []])
    assert.deepStrictEqual({ bytes: whole.runs[0]!.size.bytes, apparentBytes: whole.runs[0]!.size.apparentBytes }, du(runDir))
    // --max-bytes 0: the run's size decides its fate, so the dry run walks it.
    const prune = (...more: ReadonlyArray<string>) => at(agentDir)("work", "prune", "tools/bash", "--dry-run", "--json", "--max-bytes", "0", ...more)
    const stopped = JSON.parse((await prune()).stdout) as { incomplete: boolean; bytesBefore: number | null; stoppedBy: ReadonlyArray<{ _tag: string; limit: number; message: string }> }
    assert.deepStrictEqual([stopped.incomplete, stopped.stoppedBy.map((s) => [s._tag, s.limit])], [true, [["MaxDepth", 64]]])
    // At its default, not given: on the command line the flag raises it (the CLI's ceiling is what a person asks).
    assert.match(stopped.stoppedBy[0]!.message, /raise maxDepth \(--max-depth\)$/)
    const exact = JSON.parse((await prune("--max-depth", "100")).stdout) as typeof stopped
    assert.deepStrictEqual([exact.incomplete, exact.stoppedBy, exact.bytesBefore], [false, [], du(runDir).bytes])
  }, 60_000)
})

describe("work prune: disk usage, and a prune that stopped early says how to finish", () => {
  it("--max-bytes counts disk usage: many small files fill a disk their apparent size hides", async () => {
    const agentDir = agentWith("tools/bash")
    // Five runs of 100 one-byte files: each ≈ 400 KiB on disk, a few KiB apparent.
    const runs = [5, 4, 3, 2, 1].map((d) => releasedRun(agentDir, "tools/bash", `day${d}`, d, 100))
    const sizes = runs.map((r) => du(r))
    assert.isAbove(sizes[0]!.bytes, 100 * 4096 - 1)
    assert.isBelow(sizes[0]!.apparentBytes, 100 * 1024)
    const r = await at(agentDir)("work", "prune", "tools/bash", "--max-bytes", "1MiB", "--json")
    assert.strictEqual(r.code, 0, r.stderr)
    const report = JSON.parse(r.stdout) as { removed: ReadonlyArray<{ runId: string; reason: string; bytes: number; apparentBytes: number }>; bytesBefore: number; bytesAfter: number; apparentBytesBefore: number; incomplete: boolean }
    // Oldest first until the rest fits in 1 MiB of disk.
    assert.deepStrictEqual(report.removed.map((x) => [x.runId, x.reason]), [["day5", "bytes"], ["day4", "bytes"], ["day3", "bytes"]])
    report.removed.forEach((x, i) => assert.deepStrictEqual({ bytes: x.bytes, apparentBytes: x.apparentBytes }, sizes[i]))
    const total = (of: "bytes" | "apparentBytes") => sizes.reduce((t, s) => t + s[of], 0)
    assert.deepStrictEqual([report.bytesBefore, report.apparentBytesBefore, report.incomplete], [total("bytes"), total("apparentBytes"), false])
    assert.strictEqual(report.bytesAfter, sizes[3]!.bytes + sizes[4]!.bytes)
    assert.isAtMost(report.bytesAfter, 1024 * 1024)
    assert.deepStrictEqual(Fs.readdirSync(Path.join(agentDir, "work", "tools", "bash")).filter((n) => !n.startsWith(".")).sort(), ["day1", "day2"])
  }, 60_000)

  it("--all with --max-scanned-runs: each tenant says how many entries are left and how to finish; the total counts them", async () => {
    const agentDir = agentWith("tools/bash", "tools/git")
    for (let r = 0; r < 9; r++) releasedRun(agentDir, "tools/bash", `old${r}`, 40, 1)
    releasedRun(agentDir, "tools/git", "old", 40, 1)
    const dry = await at(agentDir)("work", "prune", "--all", "--dry-run", "--max-scanned-runs", "4")
    assert.strictEqual(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, /^tools\/bash: would remove 4 runs \(.*\), kept 0, active 0, scanned 4 of 9$/m)
    assert.match(dry.stdout, /^ {2}Stopped early: scanned the first 4 of 9 entries of the tenant \(maxScannedRuns\): 5 not considered; prune again .* or raise maxScannedRuns \(--max-scanned-runs\)$/m)
    assert.match(dry.stdout, /^tools\/git: would remove 1 run \(.*\), kept 0, active 0, scanned 1$/m)
    assert.match(dry.stdout, /^Total: would remove 5 runs .*; 1 stopped early \(see above\)\.$/m)
    const json = JSON.parse((await at(agentDir)("work", "prune", "--all", "--dry-run", "--json", "--max-scanned-runs", "4")).stdout) as { tenants: ReadonlyArray<{ report: { truncated: boolean; stoppedBy: ReadonlyArray<{ _tag: string; left: number }> } }>; total: { stopped: number } }
    assert.deepStrictEqual(json.tenants.map((t) => [t.report.truncated, t.report.stoppedBy.map((s) => [s._tag, s.left])]), [[true, [["MaxScannedRuns", 5]]], [false, []]])
    assert.strictEqual(json.total.stopped, 1)
    // Pruning again finishes: each prune removes what it can among the first entries.
    for (let round = 0; round < 3; round++) await at(agentDir)("work", "prune", "--all", "--max-scanned-runs", "4")
    assert.deepStrictEqual(Fs.readdirSync(Path.join(agentDir, "work", "tools", "bash")).filter((n) => !n.startsWith(".")), [])
  }, 60_000)

  it("a prune whose scanned entries hold nothing to remove does not promise that pruning again finishes", async () => {
    const agentDir = agentWith("tools/bash")
    // By name, the five recent runs come first: a window of five never reaches the old ones.
    for (let r = 1; r <= 5; r++) releasedRun(agentDir, "tools/bash", `a${r}`, 1, 1)
    for (let r = 1; r <= 5; r++) releasedRun(agentDir, "tools/bash", `z${r}`, 40, 1)
    for (let round = 0; round < 2; round++) {
      const r = await at(agentDir)("work", "prune", "tools/bash", "--max-scanned-runs", "5")
      assert.strictEqual(r.code, 0, r.stderr)
      assert.match(r.stdout, /^tools\/bash: removed 0 runs \(0 B\), kept 5, active 0, scanned 5 of 10$/m)
      assert.match(r.stdout, /^ {2}Stopped early: .*: 5 not considered; none of the first 5 could go, so pruning again would scan the same ones: raise maxScannedRuns \(--max-scanned-runs\)$/m)
      assert.notInclude(r.stdout, "prune again")
    }
    // The bound the line names is the way on.
    const wider = await at(agentDir)("work", "prune", "tools/bash", "--max-scanned-runs", "10")
    assert.match(wider.stdout, /^tools\/bash: removed 5 runs /m)
    assert.deepStrictEqual(Fs.readdirSync(Path.join(agentDir, "work", "tools", "bash")).filter((n) => !n.startsWith(".")).sort(), ["a1", "a2", "a3", "a4", "a5"])
  }, 60_000)

  it("a removal whose walk was cut short shows its lower bound (≥), as the JSON's cutShort has it, never a bare ?", async () => {
    const agentDir = agentWith("tools/bash")
    // Two days old: kept for its age, taken for its size, which the budget left unknown past a lower bound.
    releasedRun(agentDir, "tools/bash", "big", 2, 50)
    const json = JSON.parse((await at(agentDir)("work", "prune", "tools/bash", "--dry-run", "--json", "--max-entries", "12")).stdout) as { removed: ReadonlyArray<{ bytes: number | null }>; cutShort: ReadonlyArray<{ runId: string; bytesAtLeast: number; apparentBytesAtLeast: number }> }
    assert.deepStrictEqual([json.removed[0]!.bytes, json.cutShort.map((c) => c.runId)], [null, ["big"]])
    const text = (await at(agentDir)("work", "prune", "tools/bash", "--dry-run", "--max-entries", "12")).stdout
    const bound = (n: number) => `≥ ${formatBytes(n)}`
    assert.match(text, new RegExp(`^tools/bash: would remove 1 run \\(${bound(json.cutShort[0]!.bytesAtLeast)}\\), `, "m"))
    assert.match(text, new RegExp(`^ {2}big +${bound(json.cutShort[0]!.bytesAtLeast)} +${bound(json.cutShort[0]!.apparentBytesAtLeast)} +size unknown \\(counts as over budget\\)$`, "m"))
    assert.notMatch(text, / \? /)
  }, 60_000)

  it("a dry run whose entry budget ran out says why its sizes are unknown, how many, and the flag; --max-entries raises it", async () => {
    const agentDir = agentWith("tools/bash")
    for (let r = 0; r < 6; r++) releasedRun(agentDir, "tools/bash", `old${r}`, 40, 10)
    const cut = JSON.parse((await at(agentDir)("work", "prune", "tools/bash", "--dry-run", "--json", "--max-entries", "25")).stdout) as { removed: ReadonlyArray<{ bytes: number | null }>; bytesBefore: number | null; incomplete: boolean; stoppedBy: ReadonlyArray<{ _tag: string; left: number; flag: string }> }
    const unknown = cut.removed.filter((x) => x.bytes === null).length
    assert.isAbove(unknown, 0)
    assert.deepStrictEqual([cut.bytesBefore, cut.incomplete], [null, true])
    assert.deepStrictEqual(cut.stoppedBy.map((s) => [s._tag, s.left, s.flag]), [["MaxEntries", unknown, "--max-entries"]])
    // In words: the runs whose size no walk counted are said to be unknown, never "≥ 0 B".
    const human = (await at(agentDir)("work", "prune", "tools/bash", "--dry-run", "--max-entries", "25")).stdout
    assert.match(human, /^tools\/bash: would remove 6 runs \(≥ \d+(\.\d)? KiB, \d sizes? unknown\), kept 0/m)
    assert.notMatch(human, /≥ 0 B/)
    const none = (await at(agentDir)("work", "prune", "tools/bash", "--dry-run", "--max-entries", "0")).stdout
    assert.match(none, /^tools\/bash: would remove 6 runs \(sizes unknown\), kept 0/m)
    const all = (await at(agentDir)("work", "prune", "--all", "--dry-run", "--max-entries", "0")).stdout
    assert.match(all, /^Total: would remove 6 runs \(sizes unknown\) in 1 tenant; kept 0, active 0; 1 stopped early \(see above\)\.$/m)
    const raised = JSON.parse((await at(agentDir)("work", "prune", "tools/bash", "--dry-run", "--json", "--max-entries", "1000")).stdout) as typeof cut
    assert.deepStrictEqual([raised.removed.every((x) => x.bytes !== null), raised.incomplete, raised.stoppedBy], [true, false, []])
    assert.strictEqual(raised.bytesBefore, Fs.readdirSync(Path.join(agentDir, "work", "tools", "bash")).filter((n) => !n.startsWith(".")).reduce((t, n) => t + du(Path.join(agentDir, "work", "tools", "bash", n)).bytes, 0))
  }, 60_000)
})
