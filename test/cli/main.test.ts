/**
 * The built CLI (the shipped bundle `node dist/bundle/cli/main.mjs`; `npm test` builds first) run as a child process against temp agent
 * dirs: stdout, stderr and exit codes of every command, human and JSON. Independent invocations run
 * concurrently to keep the file quick.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type AgentStorage, openAgentStorage } from "../../src/promise.js"
import { du } from "../support/du.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const DAY = 24 * 60 * 60 * 1000
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[/

interface Result {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

const baseEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete env["NO_COLOR"]
  return env
}

/** Run the CLI; `onStart` sees the child (to signal it). */
const cli = (
  args: ReadonlyArray<string>,
  options: { readonly env?: NodeJS.ProcessEnv; readonly onStart?: (pid: number) => void } = {}
): Promise<Result> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: options.env ?? baseEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.once("error", reject)
    child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
    if (child.pid !== undefined) options.onStart?.(child.pid)
  })

/** `pi-storage --agent-dir DIR ...args` */
const at = (agentDir: string) => (...args: ReadonlyArray<string>) => cli(["--agent-dir", agentDir, ...args])

const temps: Array<string> = []
const tempDir = (): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-cli-"))
  temps.push(dir)
  return dir
}

const runDirs = (tenantDir: string): Array<string> =>
  Fs.existsSync(tenantDir) ? Fs.readdirSync(tenantDir).filter((n) => !n.startsWith(".")).sort() : []

/** One clean line naming what was wrong: no stack, no ANSI, nothing on stdout. */
const assertUsageError = (r: Result, mentions: string, label: string) => {
  assert.strictEqual(r.code, 2, `${label}: exit code (stderr: ${r.stderr})`)
  assert.strictEqual(r.stdout, "", `${label}: stdout`)
  assert.match(r.stderr, /^pi-storage: [^\n]+\n$/, `${label}: one line`)
  assert.include(r.stderr, mentions, label)
  assert.notMatch(r.stderr, ANSI, `${label}: ANSI`)
  assert.notMatch(r.stderr, /\n\s+at /, `${label}: stack`)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * tools/bash: an active run (held by this test process), a run released 40 days ago with 3000 bytes, a run
 * released just now, and a directory without a manifest; extension foo with state and cache.
 */
interface Populated {
  readonly agentDir: string
  readonly store: AgentStorage
  readonly activeRun: string
  readonly oldRun: string
  readonly recentRun: string
}

const populate = async (): Promise<Populated> => {
  const agentDir = Path.join(tempDir(), "agent")
  const store = await openAgentStorage({ agentDir, migrate: false })
  const old = await store.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
  Fs.writeFileSync(Path.join(old.path, "big.out"), "x".repeat(3000))
  await old.release()
  const manifestPath = Path.join(old.path, ".pi-work-run.json")
  const manifest = JSON.parse(Fs.readFileSync(manifestPath, "utf8"))
  const longAgo = Date.now() - 40 * DAY
  Fs.writeFileSync(manifestPath, JSON.stringify({ ...manifest, createdAt: longAgo, releasedAt: longAgo }))
  // Last written then on the file system's clock too (ages are judged on it: docs/work-runs.md "Retention").
  Fs.utimesSync(manifestPath, longAgo / 1000, longAgo / 1000)
  const recent = await store.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
  await recent.release()
  const active = await store.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
  Fs.mkdirSync(Path.join(agentDir, "work", "tools", "bash", "stray"))
  Fs.mkdirSync(Path.join(agentDir, "state", "extensions", "foo"), { recursive: true })
  Fs.writeFileSync(Path.join(agentDir, "state", "extensions", "foo", "data.json"), "s".repeat(2048))
  Fs.mkdirSync(Path.join(agentDir, "cache", "extensions", "foo"), { recursive: true })
  Fs.writeFileSync(Path.join(agentDir, "cache", "extensions", "foo", "index"), "c".repeat(100))
  return { agentDir, store, activeRun: active.runId, oldRun: old.runId, recentRun: recent.runId }
}

let populated: Populated

beforeAll(async () => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
  populated = await populate()
})

afterAll(async () => {
  await populated?.store.close()
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

describe("pi-storage (built CLI)", () => {
  it("status on a missing agent dir says so, exits 0 and creates nothing; the source is named", async () => {
    const parent = tempDir()
    const agentDir = Path.join(parent, "agent")
    // HOME is the empty parent too: the default web data root under it holds nothing either.
    const [human, json] = await Promise.all([
      cli(["--agent-dir", agentDir, "status"], { env: { ...baseEnv(), HOME: parent } }),
      cli(["status", "--json"], { env: { ...baseEnv(), PI_ADAPTATIVE_CODING_AGENT_DIR: agentDir, HOME: parent } })
    ])
    assert.strictEqual(human.code, 0)
    assert.include(human.stdout, `Agent dir  ${agentDir} (from --agent-dir)`)
    assert.include(human.stdout, "does not exist")
    assert.strictEqual(human.stderr, "")
    assert.strictEqual(json.code, 0)
    const doc = JSON.parse(json.stdout)
    assert.deepStrictEqual([doc.exists, doc.source, doc.agentDir, doc.tenants], [false, "env", agentDir, []])
    // The doctor's own count on the same roots (its agent-dir-missing note), as `pi-storage doctor` reports it.
    assert.deepStrictEqual([doc.doctor.findings, doc.doctor.bySeverity, doc.doctor.needsAttention], [1, { error: 0, warning: 0, info: 1 }, false])
    assert.deepStrictEqual(Fs.readdirSync(parent), [])
  })

  it("status, work ls and a dry-run prune show the populated dir (human and JSON), read-only", async () => {
    const { agentDir, activeRun, oldRun, recentRun } = populated
    const run = at(agentDir)
    const tenantDir = Path.join(agentDir, "work", "tools", "bash")
    const before = runDirs(tenantDir)
    const [status, statusJson, ls, lsJson, dry, dryJson] = await Promise.all([
      run("status"),
      run("status", "--json"),
      run("work", "ls"),
      run("work", "ls", "tools/bash", "--json"),
      run("work", "prune", "tools/bash", "--dry-run"),
      run("work", "prune", "tools/bash", "--dry-run", "--json")
    ])
    for (const r of [status, statusJson, ls, lsJson, dry, dryJson]) {
      assert.strictEqual(r.code, 0, r.stderr)
      assert.strictEqual(r.stderr, "")
      assert.notMatch(r.stdout, ANSI)
    }
    // Disk usage, then apparent size.
    assert.match(status.stdout, /^tools\/bash\s+3\s+1\s+2\s+1\s+\d+\s+\d+(\.\d)? KiB\s+\d+(\.\d)? KiB\s+40d( \d+h)? ago$/m)
    assert.match(status.stdout, /^foo\s+-\s+\d+\.\d KiB \(\d+\.\d KiB apparent, 1\)\s+\d+\.\d KiB \(\d+\.\d KiB apparent, 1\)$/m)
    assert.match(status.stdout, /Doctor\s+\d+ finding/)
    const doc = JSON.parse(statusJson.stdout)
    assert.deepStrictEqual(
      doc.tenants.map((t: any) => [t.category, t.tenant, t.runs, t.active, t.inactive, t.unowned, t.size.complete]),
      [["tools", "bash", 3, 1, 2, 1, true]]
    )
    // As du says them (du -s -B1, du -sb).
    const tier = (dir: string) => ({ ...du(Path.join(agentDir, dir, "extensions", "foo")), entries: 1, complete: true, measured: true })
    assert.deepStrictEqual(doc.extensions, [{ namespace: "foo", config: null, state: tier("state"), cache: tier("cache") }])
    assert.deepStrictEqual(doc.extensions[0].state.apparentBytes - Fs.lstatSync(Path.join(agentDir, "state", "extensions", "foo")).size, 2048)

    assert.match(ls.stdout, /^TENANT\s+RUN\s+KIND\s+STATE\s+HELD BY\s+LAST USE\s+ENTRIES\s+DISK\s+APPARENT$/m)
    assert.match(ls.stdout, new RegExp(`^tools/bash\\s+${activeRun}\\s+generated\\s+active\\s`, "m"))
    assert.match(ls.stdout, new RegExp(`^tools/bash\\s+${oldRun}\\s+generated\\s+released\\s+-\\s+40d`, "m"))
    assert.match(ls.stdout, /^tools\/bash\s+stray\s+no manifest$/m)
    const list = JSON.parse(lsJson.stdout)
    assert.deepStrictEqual(list.runs.map((r: any) => [r.runId, r.state]), [[activeRun, "active"], [recentRun, "released"], [oldRun, "released"]])
    assert.isAtLeast(list.runs[2].size.bytes, 3000)
    assert.deepStrictEqual(list.unowned.map((u: any) => u.name), ["stray"])

    assert.match(dry.stdout, /tools\/bash: would remove 1 run \(\d/)
    assert.match(dry.stdout, new RegExp(`${oldRun}\\s+\\d+(\\.\\d)? KiB\\s+\\d+(\\.\\d)? KiB\\s+unused for over 30d`))
    assert.include(dry.stdout, "stray: no manifest")
    const report = JSON.parse(dryJson.stdout)
    assert.strictEqual(report.dryRun, true)
    assert.deepStrictEqual(report.removed.map((r: any) => [r.runId, r.reason]), [[oldRun, "age"]])
    assert.deepStrictEqual(report.active, [activeRun])
    assert.deepStrictEqual(report.unowned.map((u: any) => u.name), ["stray"])
    assert.deepStrictEqual(runDirs(tenantDir), before)
  })

  it("work prune removes what the plan says, never the active or unowned entries; --all --json reports every tenant", async () => {
    const { agentDir, activeRun, oldRun, recentRun } = populated
    const tenantDir = Path.join(agentDir, "work", "tools", "bash")
    Fs.mkdirSync(Path.join(agentDir, "work", "tools", "git"), { recursive: true, mode: 0o700 })
    const real = await at(agentDir)("work", "prune", "tools/bash", "--max-runs", "0", "--json")
    assert.strictEqual(real.code, 0, real.stderr)
    const report = JSON.parse(real.stdout)
    assert.deepStrictEqual(report.removed.map((r: any) => [r.runId, r.reason]).sort(), [[oldRun, "age"], [recentRun, "count"]].sort())
    assert.deepStrictEqual(runDirs(tenantDir), [activeRun, "stray"].sort())
    const [all, allHuman] = await Promise.all([
      at(agentDir)("work", "prune", "--all", "--json"),
      // A dry run takes no marker, so it can run beside the real one.
      at(agentDir)("work", "prune", "--all", "--dry-run", "--max-age", "12h", "--max-bytes", "2GiB")
    ])
    assert.strictEqual(all.code, 0, all.stderr)
    const doc = JSON.parse(all.stdout)
    assert.deepStrictEqual(doc.tenants.map((t: any) => `${t.category}/${t.tenant}:${t.report.removed.length}`), ["tools/bash:0", "tools/git:0"])
    assert.strictEqual(allHuman.code, 0, allHuman.stderr)
    assert.match(allHuman.stdout, /^tools\/bash: would remove 0 runs \(0 B\), kept 0, active 1/m)
    assert.match(allHuman.stdout, /^tools\/git: would remove 0 runs/m)
  })

  it("work prune refuses an unsafe (group-writable) tenant with exit 3", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const tenantDir = Path.join(agentDir, "work", "tools", "open")
    Fs.mkdirSync(tenantDir, { recursive: true, mode: 0o700 })
    Fs.chmodSync(tenantDir, 0o777)
    const r = await at(agentDir)("work", "prune", "tools/open", "--json")
    assert.strictEqual(r.code, 3, r.stderr)
    assert.strictEqual(r.stdout, "")
    // --json: the refusal is one JSON object on one line of stderr.
    assert.match(r.stderr, /^\{[^\n]*\}\n$/)
    const error = JSON.parse(r.stderr)
    assert.deepStrictEqual([error._tag, error.exit], ["UnsafeRoot", 3])
    assert.match(error.message, /^unsafe directory .*open \(group-or-world-writable\).*nothing was deleted$/)
    const human = await at(agentDir)("work", "prune", "tools/open")
    assert.strictEqual(human.code, 3, human.stderr)
    assert.match(human.stderr, /^pi-storage: unsafe directory .*open \(group-or-world-writable\).*nothing was deleted\n$/)
  })

  it("work run: the child's exit code and env; killed by a signal → 128+signal; --delete removes the run; leases released", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const run = at(agentDir)
    const tenant = (t: string) => Path.join(agentDir, "work", "jobs", t)
    let signalled: Promise<void> = Promise.resolve()
    const [seven, killed, deleted, missing, forwarded] = await Promise.all([
      run("work", "run", "jobs/seven", "--", "sh", "-c", "echo \"$PI_WORK_ROOT|$PI_WORK_RUN_DIR\"; echo hi > \"$PI_WORK_RUN_DIR/f\"; exit 7"),
      run("work", "run", "jobs/killed", "--name", "named", "--", "sh", "-c", "kill -TERM $$"),
      run("work", "run", "jobs/deleted", "--delete", "--", "sh", "-c", "echo data > \"$PI_WORK_RUN_DIR/f\""),
      run("work", "run", "jobs/missing", "--", "pi-storage-no-such-command"),
      cli(["--agent-dir", agentDir, "work", "run", "jobs/forwarded", "--", "sleep", "30"], {
        onStart: (pid) => {
          // Signal pi-storage once the child holds its lease: SIGTERM must reach the child.
          signalled = (async () => {
            for (let i = 0; i < 400; i++) {
              const runs = runDirs(tenant("forwarded"))
              const leases = runs.length === 1 ? Fs.readdirSync(Path.join(tenant("forwarded"), runs[0]!, ".leases")) : []
              if (leases.length > 0) break
              await sleep(25)
            }
            await sleep(200)
            process.kill(pid, "SIGTERM")
          })()
        }
      })
    ])
    await signalled

    assert.strictEqual(seven.code, 7, seven.stderr)
    const [root, runDir] = seven.stdout.trim().split("|")
    assert.strictEqual(root, Path.join(agentDir, "work"))
    assert.strictEqual(Path.dirname(runDir!), tenant("seven"))
    assert.strictEqual(Fs.readFileSync(Path.join(runDir!, "f"), "utf8"), "hi\n")
    assert.isNumber(JSON.parse(Fs.readFileSync(Path.join(runDir!, ".pi-work-run.json"), "utf8")).releasedAt)

    assert.strictEqual(killed.code, 128 + Os.constants.signals.SIGTERM)
    assert.deepStrictEqual(runDirs(tenant("killed")), ["named"])

    assert.strictEqual(deleted.code, 0, deleted.stderr)
    assert.deepStrictEqual(runDirs(tenant("deleted")), [])

    assert.strictEqual(missing.code, 127)
    assert.match(missing.stderr, /^pi-storage: cannot run "pi-storage-no-such-command": .*ENOENT\n$/)

    assert.strictEqual(forwarded.code, 128 + Os.constants.signals.SIGTERM, forwarded.stderr)

    for (const t of ["seven", "killed", "missing", "forwarded"]) {
      const runs = runDirs(tenant(t))
      assert.strictEqual(runs.length, 1, t)
      assert.deepStrictEqual(Fs.readdirSync(Path.join(tenant(t), runs[0]!, ".leases")), [], `${t}: lease released`)
    }
  })

  it("doctor: a clean dir exits 0, a messy one lists findings and exits 1 (human and JSON)", async () => {
    const clean = Path.join(tempDir(), "agent")
    Fs.mkdirSync(Path.join(clean, "state"), { recursive: true, mode: 0o700 })
    Fs.writeFileSync(Path.join(clean, "settings.json"), "{}")
    const messy = Path.join(tempDir(), "agent")
    Fs.mkdirSync(Path.join(messy, "work", "tools", "bash", "orphan"), { recursive: true, mode: 0o700 })
    Fs.writeFileSync(Path.join(messy, "trust.json"), "{\"a\":true}")
    Fs.writeFileSync(Path.join(messy, "random.db"), "")
    const [cleanHuman, cleanJson, messyHuman, messyJson] = await Promise.all([
      at(clean)("doctor"),
      at(clean)("doctor", "--json"),
      at(messy)("doctor"),
      at(messy)("doctor", "--json")
    ])
    assert.strictEqual(cleanHuman.code, 0, cleanHuman.stderr)
    assert.include(cleanHuman.stdout, "No findings.")
    assert.strictEqual(cleanJson.code, 0)
    assert.deepStrictEqual(JSON.parse(cleanJson.stdout).findings, [])

    assert.strictEqual(messyHuman.code, 1, messyHuman.stderr)
    assert.strictEqual(messyHuman.stderr, "")
    assert.match(messyHuman.stdout, /^SEVERITY\s+CODE\s+PATH\s+MESSAGE$/m)
    assert.match(messyHuman.stdout, /^warning\s+legacy-entry\s+trust\.json\s/m)
    assert.include(messyHuman.stdout, "random.db")
    assert.include(messyHuman.stdout, "tools/bash/orphan")
    assert.strictEqual(messyJson.code, 1)
    const report = JSON.parse(messyJson.stdout)
    const codes = new Set(report.findings.map((f: any) => f.code))
    assert.isTrue(codes.has("legacy-entry"))
    assert.isAtLeast(report.findings.length, 3)
    assert.isNumber(report.scanned)
  })

  it("migrate: --dry-run lists the moves and changes nothing; then migrate moves them (human and JSON)", async () => {
    const make = () => {
      const agentDir = Path.join(tempDir(), "agent")
      Fs.mkdirSync(Path.join(agentDir, "backups"), { recursive: true })
      Fs.writeFileSync(Path.join(agentDir, "trust.json"), "{\"a\":true}")
      return agentDir
    }
    const a = make()
    const b = make()
    const [dry, dryJson] = await Promise.all([at(a)("migrate", "--dry-run"), at(a)("migrate", "--dry-run", "--json")])
    assert.strictEqual(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, /^ {2}move\s+backups → state\/backups\/config$/m)
    assert.match(dry.stdout, /^ {2}move\s+trust\.json → state\/trust\.json$/m)
    assert.deepStrictEqual(JSON.parse(dryJson.stdout).decisions.map((d: any) => [d.action, d.from, d.to]), [
      ["move", "backups", "state/backups/config"],
      ["move", "trust.json", "state/trust.json"]
    ])
    assert.deepStrictEqual(Fs.readdirSync(a).sort(), ["backups", "trust.json"])

    const [human, json] = await Promise.all([at(a)("migrate"), at(b)("migrate", "--json")])
    assert.strictEqual(human.code, 0, human.stderr)
    assert.match(human.stdout, /^moved\s+trust\.json$/m)
    assert.strictEqual(json.code, 0, json.stderr)
    const report = JSON.parse(json.stdout)
    assert.deepStrictEqual([...report.moved].sort(), ["backups", "trust.json"])
    assert.deepStrictEqual([report.partial, report.errors], [false, []])
    assert.strictEqual(Fs.readFileSync(Path.join(b, "state", "trust.json"), "utf8"), "{\"a\":true}")
  })

  it("bad flags, values and commands: exit 2 with one clean line naming them", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["status", "--jsn"], "--jsn"],
      [["bogus"], "\"bogus\""],
      [["work", "prune", "--max-age", "3x", "a/b"], "--max-age: expected a duration such as 30d, 12h, 1.5d, 2h30m or 0, got \"3x\""],
      [["work", "prune", "a/b", "--max-bytes", "lots"], "--max-bytes"],
      [["work", "prune", "--all", "a/b"], "--all or CATEGORY/TENANT"],
      [["work", "prune", "Tools/bash"], "invalid category \"Tools\""],
      [["work", "run", "a/b"], "'--'"]
    ]
    const results = await Promise.all([
      ...cases.map(([args]) => at(agentDir)(...args)),
      cli(["--agent-dir"]),
      cli([])
    ])
    cases.forEach(([args, mentions], i) => assertUsageError(results[i]!, mentions, args.join(" ")))
    assertUsageError(results[cases.length]!, "--agent-dir needs a value", "--agent-dir")
    const bare = results[cases.length + 1]!
    assert.strictEqual(bare.code, 2)
    assert.match(bare.stderr, /^usage: pi-storage/)
    assert.isFalse(Fs.existsSync(agentDir))
  })

  it("a size, count or duration that is not a whole number of its unit, negative, NaN or 1e400: exit 2 naming the flag and the value", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["work", "prune", "a/b", "--max-bytes", "0.5"], "--max-bytes: \"0.5\" is not a whole number of bytes"],
      [["work", "prune", "a/b", "--max-bytes", "0.3KiB"], "--max-bytes: \"0.3KiB\" is not a whole number of bytes"],
      [["work", "prune", "a/b", "--max-bytes", "1e400"], "--max-bytes: expected a size such as 512MiB, 2GiB or 1000 (bytes), got \"1e400\""],
      [["work", "prune", "a/b", "--max-bytes=-1"], "--max-bytes: expected a size"],
      [["work", "prune", "a/b", "--max-bytes", "NaN"], "--max-bytes: expected a size"],
      [["work", "prune", "a/b", "--max-runs", "1.5"], "--max-runs: expected a whole number (0 or more), got \"1.5\""],
      [["work", "prune", "a/b", "--max-runs", "1e400"], "--max-runs: expected a whole number"],
      [["work", "prune", "a/b", "--max-age", "0.0001s"], "--max-age: \"0.0001s\" is not a whole number of milliseconds"],
      [["backup", "verify", "--max-bytes", "0.5"], "--max-bytes: \"0.5\" is not a whole number of bytes"],
      [["backup", "verify", "--sample=-2"], "--sample: expected a whole number (1 or more), got \"-2\""],
      [["backup", "forget", "--keep-last", "2.5"], "--keep-last: expected a whole number (0 or more), got \"2.5\""],
      [["config", "log", "--limit", "0.5"], "--limit: expected a whole number (1 or more), got \"0.5\""],
      [["config", "log", "--limit=-1"], "--limit: expected a whole number (1 or more), got \"-1\""],
      // A negative number looks like a flag: without `=` the flag has no value, and the message says how to give one.
      [["config", "log", "--limit", "-1"], "--limit needs a value: N, e.g. 5; \"-1\" is a flag (a value that starts with \"-\" is given as --limit=-1)"],
      [["memory", "show", "--budget", "0.5"], "--budget: \"0.5\" is not a whole number of bytes"]
    ]
    const results = await Promise.all(cases.map(([args]) => at(agentDir)(...args)))
    cases.forEach(([args, mentions], i) => assertUsageError(results[i]!, mentions, args.join(" ")))
    assert.isFalse(Fs.existsSync(agentDir))
    // A fraction that is a whole number of bytes after its unit is a size: 0.5KiB is 512 bytes.
    const half = await at(agentDir)("work", "prune", "a/b", "--max-bytes", "0.5KiB", "--dry-run")
    assert.strictEqual(half.code, 0, half.stderr)
  })

  it("--help is plain text when not on a TTY", async () => {
    const help = await cli(["work", "prune", "--help"])
    assert.strictEqual(help.code, 0, help.stderr)
    assert.notMatch(help.stdout, ANSI)
    assert.include(help.stdout, "usage: pi-storage work prune")
    assert.include(help.stdout, "--max-bytes")
  })
})
