/**
 * Every command the doctor suggests is valid, runnable from any directory, and does what it says. A real agent
 * dir holds one of every finding whose fix is a command; the built CLI (the shipped bundle
 * `dist/bundle/cli/main.mjs`) reports them, each command is extracted from its backticks and run exactly as
 * written by `sh`, from an unrelated directory, with `pi-storage` on PATH and a HOME whose default agent dir
 * is elsewhere (so a relative path or a missing `--agent-dir` would miss), and the doctor no longer reports
 * the finding afterwards.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { atomicTempName } from "../../src/domain/AtomicWrite.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
/** The modules whose findings the doctor reports (Doctor.ts calls the others' finding functions). */
const FINDING_SOURCES = ["Doctor.ts", "StateBackups.ts", "internal/userProfileFindings.ts", "internal/configSentinel.ts", "internal/unreadableFindings.ts", "internal/blockedPath.ts"]
  .map((f) => fileURLToPath(new URL(`../../src/services/${f}`, import.meta.url)))
const USAGE_ERROR = 2
const isRoot = process.getuid?.() === 0

interface Finding {
  readonly code: string
  readonly path: string
  readonly fix?: string
}

const env = (): NodeJS.ProcessEnv => {
  const e = { ...process.env }
  delete e["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete e["PI_STATE_BACKUP_DIR"]
  return e
}

const cli = (agentDir: string, args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, [MAIN, "--agent-dir", agentDir, ...args], { env: env(), encoding: "utf8" })

/**
 * `command` run by `sh` exactly as the doctor wrote it, from a directory that is not the agent dir, with
 * `pi-storage` (the built CLI) on PATH and a HOME of its own, where nothing is.
 */
const asWritten = (command: string) => {
  const elsewhere = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-doctor-elsewhere-"))
  temps.push(elsewhere)
  const bin = Path.join(elsewhere, "bin")
  Fs.mkdirSync(bin)
  Fs.writeFileSync(Path.join(bin, "pi-storage"), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)} "$@"\n`, { mode: 0o755 })
  return spawnSync("sh", ["-c", command], {
    cwd: elsewhere,
    env: { ...env(), HOME: Path.join(elsewhere, "home"), PATH: `${bin}:${process.env["PATH"] ?? ""}` },
    encoding: "utf8"
  })
}

const doctorFindings = (agentDir: string): ReadonlyArray<Finding> => {
  const result = cli(agentDir, ["doctor", "--json"])
  assert.notStrictEqual(result.status, USAGE_ERROR, result.stderr)
  return (JSON.parse(result.stdout) as { findings: ReadonlyArray<Finding> }).findings
}

/** The commands in a fix text: whatever stands in backticks. */
const commandsOf = (fix: string | undefined): ReadonlyArray<string> =>
  fix === undefined ? [] : [...fix.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)

const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

/** One of every finding whose fix is a command (the chown case needs root to plant a foreign owner). */
const fixture = (): string => {
  const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-doctor-fixes-"))
  temps.push(base)
  const agentDir = Path.join(base, "agent")
  Fs.mkdirSync(agentDir)
  const dir = (rel: string, mode = 0o700) => {
    Fs.mkdirSync(Path.join(agentDir, rel), { recursive: true })
    Fs.chmodSync(Path.join(agentDir, rel), mode)
  }
  // legacy-entry and legacy-sidecar: `pi-storage migrate`
  Fs.writeFileSync(Path.join(agentDir, "trust.json"), "{\"trusted\":[]}")
  Fs.writeFileSync(Path.join(agentDir, "settings.json:Zone.Identifier"), "[ZoneTransfer]\nZoneId=3\n")
  // atomic-write-leftover (a torn write of USER.md, named by the one rule): `rm -f .USER.md.tmp-…`
  Fs.writeFileSync(Path.join(agentDir, "USER.md"), "- a fact\n")
  Fs.writeFileSync(Path.join(agentDir, atomicTempName("USER.md", "0123456789ab")), "- a fact\n- half")
  // state-world-writable: `chmod 700 state`
  dir("state", 0o777)
  // user-profile-unsafe (a world-writable archive directory): `chmod o-w okf-memory`
  dir("okf-memory", 0o777)
  // work-unfinished-trash, deeper than the default maxDepth (64): `pi-storage work prune tools/bash`
  dir("work")
  dir("work/tools")
  dir("work/tools/bash")
  let deep = Path.join(agentDir, "work/tools/bash/.trash/old.0badc0de")
  for (let i = 0; i < 100; i++) deep = Path.join(deep, "d")
  Fs.mkdirSync(deep, { recursive: true })
  Fs.writeFileSync(Path.join(deep, "f"), "x")
  // work-root-unsafe (group/world-writable category): `chmod 700 work/loose`
  dir("work/loose", 0o777)
  // state-backup-incomplete (a dead writer's snapshot in the default backup root): `pi-storage backup create`
  const backupRoot = Path.join(base, "backups", "agent")
  Fs.mkdirSync(Path.join(backupRoot, ".incomplete-20260101t000000000z-dead"), { recursive: true, mode: 0o700 })
  Fs.chmodSync(Path.join(base, "backups"), 0o700)
  Fs.chmodSync(backupRoot, 0o700)
  // work-root-unsafe (foreign owner): `chown <uid> work/foreign`
  if (isRoot) {
    dir("work/foreign")
    Fs.chownSync(Path.join(agentDir, "work/foreign"), 4242, 4242)
  }
  return agentDir
}

const EXPECTED_CODES = ["legacy-entry", "legacy-sidecar", "atomic-write-leftover", "state-world-writable", "user-profile-unsafe", "work-unfinished-trash", "work-root-unsafe", "state-backup-incomplete"]

describe("the doctor's suggested commands (built CLI)", () => {
  it("each one is valid, and afterwards the doctor no longer reports what it fixed", () => {
    const agentDir = fixture()
    const before = doctorFindings(agentDir)
    const withCommands = before.filter((f) => commandsOf(f.fix).length > 0)
    assert.includeMembers([...new Set(withCommands.map((f) => f.code))], EXPECTED_CODES)
    if (isRoot) assert.isTrue(withCommands.some((f) => f.code === "work-root-unsafe" && f.fix!.includes("chown")), "the chown fix was planted")
    const ran: Array<string> = []
    for (const finding of withCommands) {
      for (const command of commandsOf(finding.fix)) {
        if (ran.includes(command)) continue
        ran.push(command)
        const result = asWritten(command)
        assert.notStrictEqual(result.status, USAGE_ERROR, `${command}: ${result.stderr}`)
        assert.strictEqual(result.status, 0, `${command} (for ${finding.code}): ${result.stdout}${result.stderr}`)
      }
    }
    const after = doctorFindings(agentDir)
    for (const fixed of withCommands) {
      assert.isFalse(after.some((f) => f.code === fixed.code && f.path === fixed.path), `still reported after its fix: ${fixed.code} ${fixed.path}`)
    }
    assert.deepStrictEqual(Fs.readdirSync(Path.join(agentDir, "work/tools/bash/.trash")), [], "the deep trash tree is gone")
  })

  it("a fix as the screen shows it runs as it reads, whatever the path holds: a quote and $(…) stay in the name, and a path the screen shows escaped gets no command to copy", () => {
    const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-doctor-quoted-"))
    temps.push(base)
    const agentDir = Path.join(base, "agent")
    // Run from `base`: a `$(touch PWNED)` that escaped its quotes would leave base/PWNED.
    const mark = Path.join(base, "PWNED")
    const hostile = "a'$(touch PWNED)'b"
    const escaped = "back\\slash\nnewline"
    for (const name of [hostile, escaped]) {
      Fs.mkdirSync(Path.join(agentDir, "work", name), { recursive: true, mode: 0o700 })
      Fs.chmodSync(Path.join(agentDir, "work", name), 0o777)
    }
    const human = cli(agentDir, ["doctor"])
    assert.notStrictEqual(human.status, USAGE_ERROR, human.stderr)
    const fixLines = human.stdout.split("\n").filter((line) => line.includes("chmod 700") || line.includes("not printed to be copied"))
    const shown = fixLines.find((line) => line.includes("touch"))
    assert.isDefined(shown, human.stdout)
    for (const command of commandsOf(shown!)) {
      const result = spawnSync("sh", ["-c", command], { cwd: base, encoding: "utf8" })
      assert.strictEqual(result.status, 0, `${command}: ${result.stderr}`)
    }
    assert.isFalse(Fs.existsSync(mark), "nothing in the name ran")
    assert.strictEqual(Fs.statSync(Path.join(agentDir, "work", hostile)).mode & 0o777, 0o700, "the command shown fixed the directory it names")
    // The name the screen shows escaped: no command on screen; --json carries the exact one, and it works.
    const unshowable = fixLines.find((line) => line.includes("not printed to be copied"))
    assert.isDefined(unshowable, human.stdout)
    assert.deepStrictEqual(commandsOf(unshowable!.split(": ").slice(1).join(": ")).filter((c) => c.includes("chmod")), [])
    const exact = doctorFindings(agentDir).find((f) => f.code === "work-root-unsafe" && f.path === `work/${escaped}`)
    assert.strictEqual(commandsOf(exact?.fix).length, 1, JSON.stringify(exact))
    for (const command of commandsOf(exact?.fix)) assert.strictEqual(asWritten(command).status, 0, command)
    assert.strictEqual(Fs.statSync(Path.join(agentDir, "work", escaped)).mode & 0o777, 0o700)
  })

  it("every command template in the findings' sources is one the test above runs", () => {
    // A new fix with a command must come with a fixture above: its first two words (after any
    // `${agentDirFlag(…)}` and other interpolations) are matched here.
    const templates = FINDING_SOURCES.flatMap((file) =>
      [...Fs.readFileSync(file, "utf8").matchAll(/\\?`((?:pi-storage|chmod|chown|rm) [^`\\]+)\\?`/g)]
        .map((m) => m[1]!.split(/\s+/).filter((w) => !w.startsWith("${")).slice(0, 2).join(" "))
        .filter((t) => !t.includes("…"))) // a doc comment's placeholder, not a suggestion
    assert.isAbove(templates.length, 4)
    // `pi-storage config …` (an interrupted change) is run as the doctor words it in
    // test/services/ConfigHistoryProcesses.test.ts, where a real SIGKILL leaves the sentinel.
    const covered = ["pi-storage migrate", "pi-storage work", "pi-storage backup", "pi-storage config", "chmod 700", "chmod o-w", "rm -f", ...(isRoot ? ["chown"] : [])]
    for (const template of templates) {
      if (template === "chown" && !isRoot) continue // needs root to plant a foreign owner
      assert.include(covered, template, `doctor suggests \`${template} …\` but no test runs it`)
    }
  })
})
