/**
 * The CLI as a new user meets it (docs/cli.md "CLI quick tour"), through the built CLI as a child process: what a
 * person at a shell meets. `npm test` builds `dist/` first.
 */
import { runNode } from "../support/child.js"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const DAY = 24 * 60 * 60 * 1000

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** A user's environment: no agent dir or web data root set, HOME a scratch dir (the default roots are under it). */
const baseEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: scratchHome }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete env["PI_WEB_DATA_DIR"]
  delete env["NO_COLOR"]
  return env
}

const cli = (args: ReadonlyArray<string>, options: { readonly env?: NodeJS.ProcessEnv; readonly cwd?: string } = {}): Promise<Result> =>
  runNode(MAIN, args, { env: options.env ?? baseEnv(), ...(options.cwd ? { cwd: options.cwd } : {}) })

const at = (agentDir: string) => (...args: ReadonlyArray<string>) => cli(["--agent-dir", agentDir, ...args])

const temps: Array<string> = []
const scratchHome = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-cli13-home-"))
temps.push(scratchHome)
const tempDir = (): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-cli13-"))
  temps.push(dir)
  return dir
}

/** A private agent dir with `work/<category>/<tenant>/` made 0700 all the way. */
const agentWithTenant = (category = "tools", tenant = "bash") => {
  const agentDir = Path.join(tempDir(), "agent")
  Fs.mkdirSync(Path.join(agentDir, "work", category, tenant), { recursive: true, mode: 0o700 })
  for (const d of [agentDir, Path.join(agentDir, "work"), Path.join(agentDir, "work", category), Path.join(agentDir, "work", category, tenant)]) {
    Fs.chmodSync(d, 0o700)
  }
  return { agentDir, tenantDir: Path.join(agentDir, "work", category, tenant) }
}

/** A released run whose manifest says it was last used `daysAgo` days ago, with `files` empty files. */
const releasedRun = (tenantDir: string, runId: string, daysAgo: number, files = 0) => {
  const runDir = Path.join(tenantDir, runId)
  Fs.mkdirSync(Path.join(runDir, ".leases"), { recursive: true, mode: 0o700 })
  const [category, tenant] = tenantDir.split(Path.sep).slice(-2)
  const at = Date.now() - daysAgo * DAY
  Fs.writeFileSync(Path.join(runDir, ".pi-work-run.json"), JSON.stringify({
    version: 2, category, tenant, runId, kind: "named", createdAt: at, releasedAt: at, createdBy: { host: Os.hostname(), pid: 1 }
  }))
  // Last written then on the file system's clock too (ages are judged on it: docs/work-runs.md "Retention").
  Fs.utimesSync(Path.join(runDir, ".pi-work-run.json"), at / 1000, at / 1000)
  for (let i = 0; i < files; i++) Fs.writeFileSync(Path.join(runDir, `f${i}`), "")
  return runDir
}

/** What stderr holds for an agent dir that is a regular file: one line, or with --json one JSON object. */
const saysNotADirectory = (file: string, args: ReadonlyArray<string>): string => {
  const message = `the agent dir ${file} is a regular file, not a directory (see pi-storage doctor)`
  return args.includes("--json") ? `${JSON.stringify({ _tag: "NotADirectory", message, exit: 1 })}\n` : `pi-storage: ${message}\n`
}

beforeAll(() => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
})
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

describe("warnings on stderr", () => {
  it("work run in a group-writable tenant: the refused background prune is a warning line on stderr; the child still runs", async () => {
    const { agentDir, tenantDir } = agentWithTenant()
    Fs.chmodSync(tenantDir, 0o777)
    const r = await at(agentDir)("work", "run", "tools/bash", "--", "true")
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stderr, /^pi-storage: warning: the background prune of tools\/bash did not run: .*group/m)
  })
})

describe("help and version", () => {
  it("every command's --help names it in full, describes every flag (default, example), fits a screen; no --wizard; -v", async () => {
    const pages: ReadonlyArray<ReadonlyArray<string>> = [
      [], ["status"], ["work"], ["work", "ls"], ["work", "prune"], ["work", "run"], ["work", "rm"], ["doctor"], ["migrate"]
    ]
    const results = await Promise.all([
      ...pages.map((p) => cli([...p, "--help"])),
      cli(["-v"]),
      cli(["--version"]),
      cli(["work", "prune", "--wizard"]),
      cli(["work", "prune", "tools/bash", "-h"])
    ])
    pages.forEach((p, i) => {
      const r = results[i]!
      const label = ["pi-storage", ...p].join(" ")
      assert.strictEqual(r.code, 0, `${label}: ${r.stderr}`)
      assert.match(r.stdout, new RegExp(`^usage: ${label.replace(/ /g, " ")}( |$)`, "m"), label)
      const lines = r.stdout.trimEnd().split("\n")
      assert.isAtMost(lines.length, 45, `${label}: fits a screen (with the exit-code table)`)
      for (const noise of ["--wizard", "--completions", "A user-defined piece of text", "This setting is optional", "$ prune", "USAGE"]) {
        assert.notInclude(r.stdout, noise, `${label}: ${noise}`)
      }
      // Every flag line has a description.
      const flagLines = lines.filter((l) => /^ {2}-/.test(l))
      for (const l of flagLines) assert.match(l, /^ {2}\S.*\s{2,}\S/, `${label}: described: ${l}`)
      if (p.length === 2 && p[0] === "work" || ["status", "doctor", "migrate"].includes(p[0] ?? "")) assert.match(r.stdout, /^Example: pi-storage /m, label)
    })
    const prune = results[pages.findIndex((p) => p.join(" ") === "work prune")]!.stdout
    for (const flag of ["--all", "--dry-run", "--max-age DURATION", "--max-runs N", "--max-bytes SIZE", "--quiet", "--json"]) assert.include(prune, flag)
    assert.match(prune, /--max-age DURATION .*Default: 30d/)
    assert.match(prune, /--max-bytes SIZE .*K\/KiB = 1024, kB = 1000.*Default: 512MiB/)
    const [v, version, wizard, late] = results.slice(pages.length)
    assert.deepStrictEqual([v!.code, v!.stdout], [0, "pi-storage 0.1.0\n"])
    assert.deepStrictEqual([version!.code, version!.stdout], [0, "pi-storage 0.1.0\n"])
    assert.strictEqual(wizard!.code, 2)
    assert.include(wizard!.stderr, "unknown flag --wizard")
    assert.match(late!.stdout, /^usage: pi-storage work prune /)
  })

  it("work run CAT/TEN cmd without -- says to put the command after --", async () => {
    const r = await cli(["work", "run", "tools/bash", "make", "report"])
    assert.strictEqual(r.code, 2)
    assert.strictEqual(r.stderr, "pi-storage: put the command after '--': pi-storage work run tools/bash -- make report\n")
  })
})

describe("work run", () => {
  it("runs the command in the run directory (scratch files go with --delete); --cwd DIR chooses another", async () => {
    const { agentDir, tenantDir } = agentWithTenant()
    const elsewhere = tempDir()
    const script = "const fs=require('fs');fs.writeFileSync('scratch.txt','x');console.log(process.cwd());console.log(process.env.PI_WORK_RUN_ID)"
    const [inRun, deleted, chosen, badCwd] = await Promise.all([
      at(agentDir)("work", "run", "tools/bash", "--name", "keep", "--", process.execPath, "-e", script),
      at(agentDir)("work", "run", "tools/bash", "--name", "gone", "--delete", "--", process.execPath, "-e", script),
      at(agentDir)("work", "run", "tools/bash", "--name", "other", "--cwd", elsewhere, "--", process.execPath, "-e", script),
      at(agentDir)("work", "run", "tools/bash", "--cwd", Path.join(elsewhere, "nope"), "--", "true")
    ])
    assert.strictEqual(inRun.code, 0, inRun.stderr)
    assert.deepStrictEqual(inRun.stdout.trim().split("\n"), [Path.join(tenantDir, "keep"), "keep"])
    assert.isTrue(Fs.existsSync(Path.join(tenantDir, "keep", "scratch.txt")))
    assert.strictEqual(deleted.code, 0, deleted.stderr)
    assert.isFalse(Fs.existsSync(Path.join(tenantDir, "gone")), "the scratch file went with the run")
    assert.strictEqual(chosen.code, 0, chosen.stderr)
    assert.strictEqual(chosen.stdout.split("\n")[0], elsewhere)
    assert.isTrue(Fs.existsSync(Path.join(elsewhere, "scratch.txt")))
    assert.isFalse(Fs.existsSync(Path.join(tenantDir, "other", "scratch.txt")))
    assert.strictEqual(badCwd.code, 2)
    assert.include(badCwd.stderr, "--cwd")
    assert.include(badCwd.stderr, "is not a directory")
  })
})

describe("entries, holders, rm", () => {
  it("status and work ls show entry counts beside bytes (and in JSON); ls names an active run's holder; rm refuses it (exit 3)", async () => {
    const { agentDir, tenantDir } = agentWithTenant()
    releasedRun(tenantDir, "many", 1, 300)
    releasedRun(tenantDir, "old", 20) // younger than the holder's background prune removes
    const holder = spawn(process.execPath, [MAIN, "--agent-dir", agentDir, "work", "run", "tools/bash", "--name", "held", "--", process.execPath, "-e", "setTimeout(() => {}, 60000)"], {
      env: baseEnv(),
      stdio: "ignore"
    })
    try {
      // The holder's lease appears once its CLI has acquired the run.
      const leases = Path.join(tenantDir, "held", ".leases")
      for (let i = 0; i < 400 && !(Fs.existsSync(leases) && Fs.readdirSync(leases).some((n) => !n.startsWith("."))); i++) await new Promise((r) => setTimeout(r, 25))
      const [status, statusJson, ls, lsJson] = await Promise.all([
        at(agentDir)("status"),
        at(agentDir)("status", "--json"),
        at(agentDir)("work", "ls"),
        at(agentDir)("work", "ls", "tools/bash", "--json")
      ])
      const [rmHeld, rmMixed] = await Promise.all([
        at(agentDir)("work", "rm", "tools/bash", "held"),
        at(agentDir)("work", "rm", "tools/bash", "old", "nosuch", "--json")
      ])
      assert.strictEqual(status.code, 0, status.stderr)
      assert.match(status.stdout, /^TENANT\s+RUNS\s+ACTIVE\s+INACTIVE\s+UNOWNED\s+ENTRIES\s+DISK\s+APPARENT\s+OLDEST USE$/m)
      const tenant = JSON.parse(statusJson.stdout).tenants[0]
      // (The holder's background prune may add its stamp between the two reads: the exact count is in JSON.)
      assert.isAtLeast(tenant.size.entries, 300 + 3 * 2)
      assert.match(status.stdout, /^tools\/bash\s+3\s+1\s+2\s+0\s+\d{3}\s+\d+(\.\d)? (B|KiB)\s+\d+(\.\d)? (B|KiB)\s/m, status.stdout)
      const list = JSON.parse(lsJson.stdout)
      const many = list.runs.find((r: any) => r.runId === "many")
      assert.strictEqual(many.size.entries, 300 + 2) // the files, .leases and the manifest
      assert.match(ls.stdout, /^tools\/bash\s+many\s+named\s+released\s+-\s+1d ago\s+302\s+\d+(\.\d)? (B|KiB)\s+\d+(\.\d)? (B|KiB)$/m)
      const held = list.runs.find((r: any) => r.runId === "held")
      assert.strictEqual(held.state, "active")
      assert.strictEqual(held.holders.length, 1)
      assert.strictEqual(held.holders[0].host, Os.hostname())
      assert.strictEqual(held.holders[0].pid, holder.pid)
      assert.isNumber(held.holders[0].since)
      assert.match(ls.stdout, new RegExp(`^tools/bash\\s+held\\s+named\\s+active\\s+${Os.hostname()}:${holder.pid} since \\d+s ago\\s`, "m"))
      assert.strictEqual(rmHeld.code, 3, rmHeld.stderr)
      assert.include(rmHeld.stdout, `held by ${Os.hostname()}:${holder.pid}`)
      assert.isTrue(Fs.existsSync(Path.join(tenantDir, "held", ".pi-work-run.json")))
      assert.strictEqual(rmMixed.code, 1, rmMixed.stderr)
      assert.deepStrictEqual(JSON.parse(rmMixed.stdout).runs, [{ runId: "old", _tag: "Removed" }, { runId: "nosuch", _tag: "Missing" }])
      assert.isFalse(Fs.existsSync(Path.join(tenantDir, "old")))
      assert.isTrue(Fs.existsSync(Path.join(tenantDir, "many")))
    } finally {
      holder.kill("SIGTERM")
      await new Promise((r) => holder.once("exit", r))
    }
    const after = await at(agentDir)("work", "rm", "tools/bash", "held", "many")
    assert.strictEqual(after.code, 0, after.stderr)
    assert.strictEqual(after.stdout, "removed  tools/bash/held\nremoved  tools/bash/many\n")
  })
})

describe("work prune", () => {
  it("--all ends with a grand total, --quiet keeps only eventful tenants; a missing tenant says so; busy names the holder", async () => {
    const { agentDir } = agentWithTenant("tools", "bash")
    const tools = Path.join(agentDir, "work", "tools")
    for (const t of ["git", "zsh"]) Fs.mkdirSync(Path.join(tools, t), { mode: 0o700 })
    releasedRun(Path.join(tools, "bash"), "old-a", 40, 2)
    releasedRun(Path.join(tools, "bash"), "old-b", 45)
    releasedRun(Path.join(tools, "git"), "recent", 1)
    // A live prune marker on zsh: held by this test process.
    Fs.writeFileSync(Path.join(tools, "zsh", ".prune"), JSON.stringify({
      version: 1, purpose: "prune", host: Os.hostname(), pid: process.pid, createdAt: Date.now()
    }))
    const [all, quiet, json, missing] = await Promise.all([
      at(agentDir)("work", "prune", "--all", "--dry-run"),
      at(agentDir)("work", "prune", "--all", "--dry-run", "--quiet"),
      at(agentDir)("work", "prune", "--all", "--dry-run", "--json"),
      at(agentDir)("work", "prune", "tools/nosuch")
    ])
    assert.strictEqual(all.code, 0, all.stderr)
    assert.match(all.stdout, /tools\/git: would remove 0 runs/)
    assert.match(all.stdout, /^Total: would remove 2 runs \(\d+(\.\d)? (B|KiB) on disk, \d+(\.\d)? (B|KiB) apparent\) in 3 tenants; kept 1, active 0\.$/m)
    assert.strictEqual(quiet.code, 0, quiet.stderr)
    assert.notInclude(quiet.stdout, "tools/git")
    assert.include(quiet.stdout, "tools/bash: would remove 2 runs")
    assert.match(quiet.stdout, /^Total: would remove 2 runs/m)
    const doc = JSON.parse(json.stdout)
    assert.deepStrictEqual([doc.total.removed, doc.total.tenants, doc.total.kept], [2, 3, 1])
    assert.deepStrictEqual([missing.code, missing.stdout, missing.stderr], [0, "tools/nosuch: no such tenant (nothing to prune)\n", ""])
    const busy = await at(agentDir)("work", "prune", "tools/zsh")
    assert.strictEqual(busy.code, 3)
    assert.include(busy.stdout, `busy: another prune of this tenant is running (prune by pid ${process.pid} on ${Os.hostname()}); nothing was done`)
  })

  it("--all reports each symlinked work root, category or tenant as refused and exits 3 (docs/safety.md)", async () => {
    const { agentDir } = agentWithTenant("tools", "bash")
    const outside = tempDir()
    Fs.mkdirSync(Path.join(outside, "cat", "ten"), { recursive: true, mode: 0o700 })
    Fs.symlinkSync(Path.join(outside, "cat"), Path.join(agentDir, "work", "linkedcat"))
    Fs.symlinkSync(Path.join(outside, "cat", "ten"), Path.join(agentDir, "work", "tools", "linkedten"))
    const r = await at(agentDir)("work", "prune", "--all")
    assert.strictEqual(r.code, 3, r.stderr)
    assert.match(r.stdout, /linkedcat\/\*: refused category linkedcat \(.*\): it is a symlink, never followed; nothing under it was pruned/)
    assert.match(r.stdout, /tools\/linkedten: refused tenant tools\/linkedten \(.*\): it is a symlink/)
    assert.include(r.stdout, "tools/bash: removed 0 runs")
    assert.match(r.stdout, /^Total: removed 0 runs .*2 refused/m)
    // A symlinked work root.
    const second = agentWithTenant("tools", "bash")
    const realWork = Path.join(tempDir(), "work")
    Fs.renameSync(Path.join(second.agentDir, "work"), realWork)
    Fs.symlinkSync(realWork, Path.join(second.agentDir, "work"))
    const root = await at(second.agentDir)("work", "prune", "--all")
    assert.strictEqual(root.code, 3, root.stderr)
    assert.match(root.stdout, /refused the work root \(.*\): it is a symlink/)
    assert.notInclude(r.stdout + root.stdout, "SymbolicLink")
    assert.isTrue(Fs.existsSync(Path.join(outside, "cat", "ten")))
  })

  it("--all refuses a group-writable or foreign-owned tenant, the ones the doctor flags, and prunes the rest (WR10, one rule with the doctor)", async () => {
    const { agentDir } = agentWithTenant("tools", "bash")
    const isRoot = process.getuid?.() === 0
    const loose = Path.join(agentDir, "work", "tools", "loose")
    Fs.mkdirSync(loose, { mode: 0o700 })
    Fs.chmodSync(loose, 0o777)
    const foreign = Path.join(agentDir, "work", "tools", "foreign")
    Fs.mkdirSync(foreign, { mode: 0o700 })
    // A foreign owner needs root to plant (sessions run as root); the mode case runs everywhere.
    if (isRoot) Fs.chownSync(foreign, 4242, 4242)
    const flagged = JSON.parse((await at(agentDir)("doctor", "--json")).stdout).findings
      .filter((f: { code: string }) => f.code === "work-root-unsafe")
      .map((f: { path: string }) => f.path)
    assert.deepStrictEqual(flagged.sort(), isRoot ? ["work/tools/foreign", "work/tools/loose"] : ["work/tools/loose"])
    const r = await at(agentDir)("work", "prune", "--all")
    assert.strictEqual(r.code, 3, r.stderr)
    assert.match(r.stdout, /tools\/loose: refused tenant tools\/loose \(.*\): mode 777 is writable by group or others; nothing under it was pruned/)
    if (isRoot) assert.match(r.stdout, /tools\/foreign: refused tenant tools\/foreign \(.*\): owned by uid 4242, not the current user 0; nothing under it was pruned/)
    else assert.include(r.stdout, "tools/foreign: removed 0 runs")
    assert.include(r.stdout, "tools/bash: removed 0 runs")
    assert.notInclude(r.stdout, "tools/loose: removed")
    // Refused means untouched: the pruner wrote nothing into either.
    assert.deepStrictEqual(Fs.readdirSync(loose), [])
    if (isRoot) assert.deepStrictEqual(Fs.readdirSync(foreign), [])
  })

  it("an agent dir that is a regular file: status, work ls, work prune --all and migrate say so and exit 1 (docs/errors.md)", async () => {
    const file = Path.join(tempDir(), "agent")
    Fs.writeFileSync(file, "not a dir")
    const commands = [["status"], ["status", "--json"], ["work", "ls"], ["work", "prune", "--all"], ["migrate"], ["migrate", "--dry-run"], ["migrate", "--dry-run", "--json"]]
    const results = await Promise.all(commands.map((a) => at(file)(...a)))
    for (const [i, r] of results.entries()) {
      assert.strictEqual(r.code, 1, r.stdout)
      assert.strictEqual(r.stdout, "")
      assert.strictEqual(r.stderr, saysNotADirectory(file, commands[i]!))
    }
    const doctor = await at(file)("doctor")
    assert.strictEqual(doctor.code, 1)
    assert.include(doctor.stdout, "the agent directory is a regular file, not a directory")
    assert.strictEqual(Fs.readFileSync(file, "utf8"), "not a dir")
  })

  it("an agent dir that is a regular file: memory, config and backup say so, exit 1 and create nothing", async () => {
    const parent = tempDir()
    const file = Path.join(parent, "agent")
    Fs.writeFileSync(file, "not a dir")
    const commands = [
      ["memory", "show"], ["memory", "add", "- x"], ["config", "status"], ["config", "snapshot", "--json"], ["config", "log"],
      ["backup", "list"], ["backup", "create"], ["backup", "forget", "--keep-last", "1"]
    ]
    const results = await Promise.all(commands.map((a) => at(file)(...a)))
    for (const [i, r] of results.entries()) {
      assert.strictEqual(r.code, 1, `${commands[i]!.join(" ")}: ${r.stderr}`)
      assert.strictEqual(r.stderr, saysNotADirectory(file, commands[i]!))
      assert.strictEqual(r.stdout, "")
    }
    // A link to that file is refused the same way; nothing was made beside it (no default backup root).
    const link = Path.join(parent, "link")
    Fs.symlinkSync(file, link)
    const viaLink = await at(link)("backup", "create")
    assert.strictEqual(viaLink.code, 1, viaLink.stderr)
    assert.include(viaLink.stderr, "is a regular file, not a directory")
    assert.sameMembers(Fs.readdirSync(parent), ["agent", "link"])
    assert.strictEqual(Fs.readFileSync(file, "utf8"), "not a dir")
  })
})

describe("doctor --web-data-root", () => {
  it("checks extension data at --web-data-root, else $PI_WEB_DATA_DIR; without either the default root only when it exists", async () => {
    const { agentDir } = agentWithTenant()
    const web = tempDir()
    // An extension data dir with a stray database file in config/ (a finding only a web-root scan makes).
    Fs.mkdirSync(Path.join(web, "extensions", "notes", "config"), { recursive: true })
    Fs.writeFileSync(Path.join(web, "extensions", "notes", "config", "index.sqlite"), "x")
    const home = tempDir()
    const [flag, env, none] = await Promise.all([
      cli(["--agent-dir", agentDir, "doctor", "--web-data-root", web, "--json"]),
      cli(["--agent-dir", agentDir, "doctor", "--json"], { env: { ...baseEnv(), PI_WEB_DATA_DIR: web } }),
      cli(["--agent-dir", agentDir, "doctor", "--json"], { env: { ...baseEnv(), HOME: home } })
    ])
    const paths = (r: Result) => (JSON.parse(r.stdout).findings as Array<{ path: string }>).map((f) => f.path)
    assert.isTrue(paths(flag).some((p) => p.startsWith(web)), flag.stdout)
    assert.deepStrictEqual(paths(env), paths(flag))
    assert.isFalse(paths(none).some((p) => p.startsWith(web)))
    // The default root (~/.pi/web/data) is checked when it exists.
    Fs.mkdirSync(Path.join(home, ".pi", "web"), { recursive: true })
    Fs.cpSync(web, Path.join(home, ".pi", "web", "data"), { recursive: true })
    const fallback = await cli(["--agent-dir", agentDir, "doctor", "--json"], { env: { ...baseEnv(), HOME: home } })
    assert.isTrue(paths(fallback).some((p) => p.startsWith(Path.join(home, ".pi", "web", "data"))), fallback.stdout)
  })
})
