/**
 * `status` and `doctor` agree (docs/migrations.md "Doctor", "CLI quick tour"): a fresh HOME, no PI_* variable, findings
 * under the default web data root (and, in the second case, in the agent dir too). `status` shows the
 * doctor's count (its own report on the same roots) and lists the extensions the doctor checked; the facade's
 * `doctor()` finds the same. `npm test` builds `dist/` first.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildResult, runNode } from "../support/child.js"
import { scratchDirs } from "../support/scratchDirs.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const FIXTURE = fileURLToPath(new URL("../fixtures/extensionData.mjs", import.meta.url))
const scratch = scratchDirs()

const freshEnv = (home: string): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PI_") && k !== "NO_COLOR") env[k] = v
  return { ...env, HOME: home }
}
const cli = (home: string, ...args: ReadonlyArray<string>): Promise<ChildResult> => runNode(MAIN, args, { env: freshEnv(home), cwd: home })

/** A fresh HOME whose default web data root holds four of the seed's mistakes (no agent dir yet). */
const homeWithWebFindings = () => {
  const home = Path.join(scratch("pi-agree-"), "home")
  const ext = Path.join(home, ".pi", "web", "data", "bookmarks")
  Fs.mkdirSync(Path.join(ext, "config", "state"), { recursive: true })
  Fs.mkdirSync(Path.join(ext, "state"), { recursive: true })
  Fs.mkdirSync(Path.join(ext, "exports"), { recursive: true })
  Fs.writeFileSync(Path.join(ext, "config", "history.db"), "")
  Fs.writeFileSync(Path.join(ext, "config", "debug.log"), "")
  Fs.mkdirSync(Path.join(home, ".pi", "web", "data", "todo", "state"), { recursive: true })
  return home
}

interface Agreement {
  readonly status: ChildResult
  readonly statusJson: ChildResult
  readonly doctor: ChildResult
  readonly doctorJson: ChildResult
}

const both = async (home: string): Promise<Agreement> => {
  const [status, statusJson, doctor, doctorJson] = await Promise.all([
    cli(home, "status"),
    cli(home, "status", "--json"),
    cli(home, "doctor"),
    cli(home, "doctor", "--json")
  ])
  return { status, statusJson, doctor, doctorJson }
}

const assertAgree = (r: Agreement) => {
  const status = JSON.parse(r.statusJson.stdout)
  const doctor = JSON.parse(r.doctorJson.stdout)
  const bySeverity = { error: 0, warning: 0, info: 0 }
  for (const f of doctor.findings) bySeverity[f.severity as keyof typeof bySeverity]++
  assert.strictEqual(status.doctor.findings, doctor.findings.length)
  assert.deepStrictEqual(status.doctor.bySeverity, bySeverity)
  assert.strictEqual(status.webDataRoot, doctor.webDataRoot)
  // status exits 0 whatever the doctor finds; doctor exits 1 on a warning, and status says it needs attention then.
  assert.strictEqual(r.status.code, 0, r.status.stderr)
  assert.strictEqual(r.statusJson.code, 0, r.statusJson.stderr)
  assert.strictEqual(r.doctor.code, bySeverity.warning + bySeverity.error > 0 ? 1 : 0, r.doctor.stderr)
  assert.strictEqual(r.doctorJson.code, r.doctor.code)
  assert.strictEqual(status.doctor.needsAttention, r.doctor.code === 1)
  const summary = `${doctor.findings.length} findings (`
  assert.match(r.status.stdout, new RegExp(`^Doctor {5}${summary.replace("(", "\\(")}`, "m"))
  // The extensions the doctor looked at are the ones status lists.
  const checked = new Set<string>(
    doctor.findings.flatMap((f: { path: string }) => (f.path.startsWith(`${doctor.webDataRoot}/`) ? [f.path.slice(doctor.webDataRoot.length + 1).split("/")[0]!] : []))
  )
  const listed = status.webExtensions.map((e: { extId: string }) => e.extId)
  for (const id of checked) assert.include(listed, id)
  return { status, doctor }
}

beforeAll(() => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
})

describe("status and doctor agree on the same roots (fresh HOME, findings under the default web data root)", () => {
  it("no agent dir yet: status shows the doctor's count and the web extensions; doctor exits 1", async () => {
    const home = homeWithWebFindings()
    const r = await both(home)
    const { status, doctor } = assertAgree(r)
    assert.sameMembers(doctor.findings.map((f: { code: string }) => f.code), [
      "agent-dir-missing",
      "extension-config-database",
      "extension-config-log",
      "extension-outside-tiers",
      "extension-split-state"
    ])
    assert.strictEqual(status.exists, false)
    assert.deepStrictEqual(status.webExtensions.map((e: { extId: string }) => e.extId), ["bookmarks", "todo"])
    assert.include(r.status.stdout, `Web data   ${Path.join(home, ".pi", "web", "data")} (default)\n`)
    assert.match(r.status.stdout, /^bookmarks\s+\S+ \S+ \(\S+ \S+ apparent, \d+\)\s+\S+ \S+ \(\S+ \S+ apparent, \d+\)\s+-$/m, "config and state present, no cache")
    assert.isFalse(Fs.existsSync(Path.join(home, ".pi", "agent")), "read-only: no agent dir was made")
  })

  it("with an agent dir holding findings too, and through the facade's doctor()", async () => {
    const home = homeWithWebFindings()
    const agentDir = Path.join(home, ".pi", "agent")
    Fs.mkdirSync(agentDir, { recursive: true, mode: 0o700 })
    Fs.writeFileSync(Path.join(agentDir, "trust.json"), "{}")
    const r = await both(home)
    const { status, doctor } = assertAgree(r)
    assert.strictEqual(status.exists, true)
    assert.includeMembers(doctor.findings.map((f: { code: string }) => f.code), ["legacy-entry", "extension-config-database"])
    const facade = await runNode(FIXTURE, ["doctor"], { env: freshEnv(home), cwd: home })
    assert.strictEqual(facade.code, 0, facade.stderr)
    const report = JSON.parse(facade.stdout)
    assert.deepStrictEqual(report.findings.map((f: { code: string; path: string }) => [f.code, f.path]), doctor.findings.map((f: { code: string; path: string }) => [f.code, f.path]))
  })
})
