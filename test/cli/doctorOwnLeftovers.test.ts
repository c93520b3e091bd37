/**
 * The doctor names the library's own leftovers as its own, with what settles them (docs/migrations.md "Doctor"), through
 * the built CLI (the shipped bundle; `npm test` builds first): a torn atomic write of USER.md (the temp name
 * of domain/AtomicWrite.ts, the one rule the layers write with), and a restore's move-aside beside a web data
 * root on another filesystem (a real tmpfs; a rename cannot cross, so the restore puts it there).
 */
import { execFileSync, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { atomicTempName } from "../../src/domain/AtomicWrite.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

const temps: Array<string> = []
const mounts: Array<string> = []
afterAll(() => {
  for (const dir of mounts) spawnSync("umount", ["-l", dir])
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

const tempDir = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-own-"))
  temps.push(dir)
  return dir
}

const cliIn = (base: string, agentDir: string) => (...args: ReadonlyArray<string>) => {
  const env: NodeJS.ProcessEnv = { ...process.env, PI_STATE_BACKUP_DIR: Path.join(base, "backups") }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  return spawnSync(process.execPath, [MAIN, "--agent-dir", agentDir, ...args], { env, encoding: "utf8" })
}

interface Finding {
  readonly severity: string
  readonly code: string
  readonly path: string
  readonly message: string
  readonly fix?: string
}

/** Whether a tmpfs can be mounted here (root, CAP_SYS_ADMIN), or why not. */
const tmpfsRefusal = ((): string | undefined => {
  const probe = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-tmpfs-probe-"))
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { stdio: ["ignore", "ignore", "pipe"] })
    execFileSync("umount", [probe])
    return undefined
  } catch (cause) {
    return `mount -t tmpfs is refused here (${(cause as { stderr?: Buffer }).stderr?.toString().trim() || String(cause)})`
  } finally {
    Fs.rmSync(probe, { recursive: true, force: true })
  }
})()

describe("doctor on the library's own leftovers (built CLI)", () => {
  it("a torn write of USER.md: the library's temp file, info, and the rm that settles it; never an external tool's", () => {
    const base = tempDir()
    const agentDir = Path.join(base, "agent")
    Fs.mkdirSync(agentDir)
    Fs.writeFileSync(Path.join(agentDir, "USER.md"), "- a fact\n")
    const temp = atomicTempName("USER.md", randomBytes(6).toString("hex"))
    Fs.writeFileSync(Path.join(agentDir, temp), "- a fact\n- half a")
    const cli = cliIn(base, agentDir)
    const human = cli("doctor")
    const findings = (JSON.parse(cli("doctor", "--json").stdout) as { findings: ReadonlyArray<Finding> }).findings
    assert.deepStrictEqual(findings.map((f) => [f.code, f.path, f.severity]), [["atomic-write-leftover", temp, "info"]])
    // Only info: the doctor exits 0; the table says whose it is and the fix names the command.
    assert.strictEqual(human.status, 0, human.stderr)
    assert.include(human.stdout, `the library's temp file of an interrupted write of USER.md`)
    assert.include(human.stdout, `${temp}: once no write of USER.md is running, run \`rm -f ${Path.join(agentDir, temp)}\``)
    assert.notInclude(human.stdout, "external tool")
    const settled = spawnSync("sh", ["-c", `rm -f ${Path.join(agentDir, temp)}`], { cwd: base })
    assert.strictEqual(settled.status, 0)
    assert.deepStrictEqual((JSON.parse(cli("doctor", "--json").stdout) as { findings: ReadonlyArray<Finding> }).findings, [])
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), "- a fact\n")
  })

  it.skipIf(tmpfsRefusal !== undefined)(
    `a restore with the web data root on another filesystem: its move-aside there is state-backup-restore-aside, not a tier to decide${tmpfsRefusal === undefined ? "" : ` (skipped: ${tmpfsRefusal})`}`,
    () => {
      const base = tempDir()
      const agentDir = Path.join(base, "agent")
      const web = Path.join(base, "web")
      Fs.mkdirSync(web)
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", web])
      mounts.push(web)
      Fs.mkdirSync(Path.join(agentDir, "state", "extensions", "todo"), { recursive: true })
      Fs.writeFileSync(Path.join(agentDir, "state", "extensions", "todo", "a.json"), "1")
      Fs.mkdirSync(Path.join(web, "todo", "state"), { recursive: true })
      Fs.writeFileSync(Path.join(web, "todo", "state", "b.json"), "2")
      const cli = cliIn(base, agentDir)
      const withWeb = (...args: ReadonlyArray<string>) => cli(...args, "--web-data-root", web)
      // `backup` takes the web data root from the environment.
      const backup = (...args: ReadonlyArray<string>) => {
        const env: NodeJS.ProcessEnv = { ...process.env, PI_STATE_BACKUP_DIR: Path.join(base, "backups"), PI_WEB_DATA_DIR: web }
        delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
        return spawnSync(process.execPath, [MAIN, "--agent-dir", agentDir, "backup", ...args], { env, encoding: "utf8" })
      }
      assert.strictEqual(backup("create").status, 0)
      const [snapshot] = JSON.parse(backup("list", "--json").stdout) as ReadonlyArray<{ id: string }>
      const restored = backup("restore", snapshot!.id, "--extension", "todo")
      assert.strictEqual(restored.status, 0, restored.stderr)
      const aside = Fs.readdirSync(Path.join(web, ".restore-aside"))
      assert.lengthOf(aside, 1, "the restore moved the web state aside beside the web data root")
      const doctor = withWeb("doctor", "--json")
      const findings = (JSON.parse(doctor.stdout) as { findings: ReadonlyArray<Finding> }).findings
      const webFindings = findings.filter((f) => f.path.startsWith(web))
      assert.deepStrictEqual(webFindings.map((f) => [f.code, f.path, f.severity]), [["state-backup-restore-aside", Path.join(web, ".restore-aside", aside[0]!), "info"]])
      assert.strictEqual(webFindings[0]!.fix, "copy back what you need, then delete the directory")
      assert.isFalse(findings.some((f) => f.code === "extension-outside-tiers"), "never called an extension's entry outside its tiers")
      const human = withWeb("doctor")
      assert.notInclude(human.stdout, "decide its tier")
      assert.strictEqual(human.status, 0, human.stdout)
    }
  )
})
