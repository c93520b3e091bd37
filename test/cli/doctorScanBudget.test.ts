/**
 * The doctor's scan budget is a flag like every other bound (built CLI, real directories): `doctor
 * --max-scan-entries` raises it, a truncated doctor says how much it left and how to raise it (text and
 * `stoppedBy` in JSON), and `status --max-scan-entries` reads the doctor's count under the same budget.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

interface DoctorJson {
  readonly truncated: boolean
  readonly scanned: number
  readonly stoppedBy: ReadonlyArray<{ readonly _tag: string; readonly limit: number; readonly left: number; readonly flag: string; readonly option: string }>
  readonly findings: ReadonlyArray<{ readonly code: string; readonly message: string; readonly fix?: string }>
}

describe("doctor --max-scan-entries (built CLI)", () => {
  it("a truncated doctor says what it left and the flag; the flag raises the budget; status reads the doctor under its own", () => {
    const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-doctor-budget-"))
    temps.push(base)
    const agentDir = Path.join(base, "agent")
    const home = Path.join(base, "home")
    Fs.mkdirSync(home)
    Fs.mkdirSync(agentDir, { mode: 0o700 })
    // 40 stray files at the top: more than a budget of 10 entries reads.
    for (let i = 0; i < 40; i++) Fs.writeFileSync(Path.join(agentDir, `stray${String(i).padStart(2, "0")}`), "")
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, NO_COLOR: "1" }
    delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
    delete env["PI_WEB_DATA_DIR"]
    const cli = (...args: ReadonlyArray<string>) => spawnSync(process.execPath, [MAIN, "--agent-dir", agentDir, ...args], { encoding: "utf8", env })

    const cut = JSON.parse(cli("doctor", "--json", "--max-scan-entries", "10").stdout) as DoctorJson
    assert.isTrue(cut.truncated)
    assert.deepStrictEqual(cut.stoppedBy.map((s) => [s._tag, s.limit, s.flag, s.option]), [["MaxScanEntries", 10, "--max-scan-entries", "maxEntries"]])
    assert.isAbove(cut.stoppedBy[0]!.left, 0)
    const finding = cut.findings.find((f) => f.code === "scan-truncated")!
    assert.match(finding.message, /^the scan read its budget of 10 entries .*: at least \d+ more were not read.*\(--max-scan-entries\)$/)
    assert.include(finding.fix, "--max-scan-entries")

    const text = cli("doctor", "--max-scan-entries", "10").stdout
    assert.match(text, /truncated: the scan budget ran out/)

    const whole = JSON.parse(cli("doctor", "--json", "--max-scan-entries", "1000").stdout) as DoctorJson
    assert.deepStrictEqual([whole.truncated, whole.stoppedBy, whole.findings.some((f) => f.code === "scan-truncated")], [false, [], false])

    // status: the doctor's line under the budget status was given.
    const tight = JSON.parse(cli("status", "--json", "--max-scan-entries", "10").stdout) as { doctor: { truncated: boolean } }
    const loose = JSON.parse(cli("status", "--json", "--max-scan-entries", "1000").stdout) as { doctor: { truncated: boolean } }
    assert.deepStrictEqual([tight.doctor.truncated, loose.doctor.truncated], [true, false])
    assert.strictEqual(cli("doctor", "--max-scan-entries", "x").status, 2)
  })
})
