/**
 * A run manifest that does not decode is one short line in `work prune`, `work ls` and `doctor` output, naming
 * the run, the manifest and what is wrong (docs/formats.md "On-disk formats"); `--json` carries the same words. Through
 * the built CLI (the shipped bundle; `npm test` builds first), and a property over the wording itself.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { decodeJsonBytes, Lease, Manifest } from "../../src/domain/Formats.js"
import { runNode } from "../support/child.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const KIND_WHY = `manifest does not match the schema: kind: Expected "generated" or "named", actual "weird"`
/** A why names at most three issues of at most 160 characters each. */
const WHY_MAX = 600

let root: string
let agentDir: string

beforeAll(() => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
  root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-manifest-"))
  agentDir = Path.join(root, "agent")
  const tenant = Path.join(agentDir, "work", "tools", "bash")
  Fs.mkdirSync(tenant, { recursive: true, mode: 0o700 })
  for (const dir of [Path.join(agentDir, "work"), Path.join(agentDir, "work", "tools")]) Fs.chmodSync(dir, 0o700)
  const manifest = (run: string, fields: Record<string, unknown>) => {
    Fs.mkdirSync(Path.join(tenant, run), { mode: 0o700 })
    Fs.writeFileSync(
      Path.join(tenant, run, ".pi-work-run.json"),
      JSON.stringify({ version: 2, category: "tools", tenant: "bash", runId: run, kind: "named", createdAt: 1, createdBy: { host: "h", pid: 1 }, ...fields })
    )
  }
  manifest("weird-kind", { kind: "weird" })
  manifest("no-creator", { createdBy: undefined })
})

afterAll(() => Fs.rmSync(root, { recursive: true, force: true }))

const cli = (...args: ReadonlyArray<string>) => {
  const env = { ...process.env }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  return runNode(MAIN, ["--agent-dir", agentDir, ...args], { env })
}

describe("a bad run manifest in the CLI's output (built CLI)", () => {
  it("work prune, work ls and doctor: one line naming the run, the manifest and what is wrong; --json the same words", async () => {
    const [prune, pruneJson, ls, doctor] = await Promise.all([
      cli("work", "prune", "tools/bash", "--dry-run"),
      cli("work", "prune", "tools/bash", "--dry-run", "--json"),
      cli("work", "ls"),
      cli("doctor")
    ])
    for (const r of [prune, pruneJson, ls]) assert.strictEqual(r.code, 0, r.stderr)
    assert.include(prune.stdout, `    weird-kind: ${KIND_WHY}\n`)
    assert.include(prune.stdout, "    no-creator: manifest does not match the schema: createdBy is missing\n")
    assert.match(ls.stdout, new RegExp(`^tools/bash  weird-kind  ${KIND_WHY.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"))
    assert.include(doctor.stdout, `directory without a valid ownership manifest (${KIND_WHY}); the library never deletes it\n`)
    for (const [r, label] of [[prune, "prune"], [ls, "ls"], [doctor, "doctor"]] as const) {
      const longest = Math.max(...r.stdout.split("\n").map((l) => l.length))
      assert.isAtMost(longest, 300, `${label}: no line dumps the schema (${longest} characters)`)
      assert.notInclude(r.stdout, "readonly version", `${label}: no schema type`)
    }
    const report = JSON.parse(pruneJson.stdout) as { unowned: ReadonlyArray<{ name: string; why: string }> }
    assert.deepStrictEqual(
      report.unowned.map((u) => [u.name, u.why]).sort(),
      [["no-creator", "manifest does not match the schema: createdBy is missing"], ["weird-kind", KIND_WHY]]
    )
  })
})

describe("the wording of a file that does not decode (domain/Formats.ts)", () => {
  it.prop(
    "any JSON that is not a manifest or a lease: the why is one line, bounded, and says where",
    [FastCheck.oneof(FastCheck.jsonValue(), FastCheck.record({ version: FastCheck.constantFrom(1, 2, 3), kind: FastCheck.jsonValue(), createdBy: FastCheck.jsonValue(), createdAt: FastCheck.jsonValue() }))],
    ([value]) => {
      for (const schema of [Manifest, Lease] as const) {
        const decoded = decodeJsonBytes(schema as typeof Manifest, new TextEncoder().encode(JSON.stringify(value)))
        if (decoded.ok) continue
        assert.notMatch(decoded.why, /[\n\r]/, decoded.why)
        assert.isAtMost(decoded.why.length, WHY_MAX, decoded.why)
        assert.match(decoded.why, /^(does not match the schema: .+|not valid JSON \(.+\))$/)
      }
    }
  )

  it("not JSON at all: one line too", () => {
    const decoded = decodeJsonBytes(Manifest, new TextEncoder().encode("{\n  \"version\": 2,\n  oops\n}"))
    assert.isFalse(decoded.ok)
    if (!decoded.ok) assert.match(decoded.why, /^not valid JSON \([^\n]+\)$/)
  })
})
