/**
 * A reader that goes away early (`pi-storage memory show | head -1`) ends the CLI quietly (docs/cli.md "CLI quick
 * tour"): no EPIPE stack trace, exit 141 (128 + SIGPIPE) or 0. Through the built CLI (the shipped bundle;
 * `npm test` builds first) as a child process whose stdout pipe is closed after the first chunk, and through
 * a real shell pipeline into `head -1`.
 */
import { spawn, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { runNode } from "../support/child.js"
import { plantReleasedRuns } from "../support/releasedRuns.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
/** Far more than a pipe buffer (64 KiB): the CLI is still writing when the reader goes. */
const ENTRIES = 20_000
const RUNS = 1_500

const env = (): NodeJS.ProcessEnv => {
  const e = { ...process.env }
  delete e["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  return e
}

let root: string
let agentDir: string

beforeAll(() => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
  root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-pipe-"))
  agentDir = Path.join(root, "agent")
  Fs.mkdirSync(agentDir)
  // A large profile, and a tenant with many entries (directories without a manifest are listed as unowned).
  Fs.writeFileSync(Path.join(agentDir, "USER.md"), Array.from({ length: ENTRIES }, (_, i) => `- entry ${i}: some words to make the line longer\n`).join(""))
  const tenant = Path.join(agentDir, "work", "tools", "bash")
  Fs.mkdirSync(tenant, { recursive: true, mode: 0o700 })
  for (const dir of [Path.join(agentDir, "work"), Path.join(agentDir, "work", "tools")]) Fs.chmodSync(dir, 0o700)
  // Long names (200 bytes): each listing line is longer than 200 bytes, the whole several pipe buffers.
  for (let i = 0; i < RUNS; i++) Fs.mkdirSync(Path.join(tenant, `left-behind-by-some-tool-${String(i).padStart(5, "0")}-`.padEnd(200, "x")))
  // And as many runs it owns: `work ls` writes their rows a few hundred at a time (runListPieces).
  plantReleasedRuns(agentDir, RUNS)
})

/** Run the CLI to the end, reading its stdout. */
const whole = (args: ReadonlyArray<string>) => runNode(MAIN, ["--agent-dir", agentDir, ...args], { env: env() })

afterAll(() => Fs.rmSync(root, { recursive: true, force: true }))

interface Ended {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stderr: string
  readonly firstChunk: string
}

/** Run the CLI and close our end of its stdout after the first chunk. */
const closedAfterFirstChunk = (args: ReadonlyArray<string>): Promise<Ended> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, "--agent-dir", agentDir, ...args], { env: env(), stdio: ["ignore", "pipe", "pipe"] })
    let stderr = ""
    let firstChunk = ""
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.stdout.once("data", (d: Buffer) => {
      firstChunk = d.toString("utf8")
      child.stdout.destroy()
    })
    child.once("error", reject)
    child.once("close", (code, signal) => resolve({ code, signal, stderr, firstChunk }))
  })

describe("output through a pipe (built CLI)", () => {
  it("a long report is written whole before a failing exit (doctor with findings exits 1)", async () => {
    const r = await whole(["doctor"])
    assert.strictEqual(r.code, 1, r.stderr)
    assert.isAbove(r.stdout.length, 4 * 65_536)
    assert.strictEqual(r.stdout.match(/^warning {3}work-unowned-run /gm)?.length, RUNS)
    assert.match(r.stdout, /\n\d+ warnings\n$/)
  })

  it("work ls and work ls --json, written a piece at a time, arrive whole: every run, newest first, then every unowned entry", async () => {
    const [text, json] = await Promise.all([whole(["work", "ls"]), whole(["work", "ls", "--json"])])
    assert.strictEqual(text.code, 0, text.stderr)
    const rows = text.stdout.split("\n").filter((l) => l.startsWith("tools/bash  run-"))
    assert.strictEqual(rows.length, RUNS)
    rows.forEach((row, i) => assert.include(row, ` run-${String(RUNS - 1 - i).padStart(6, "0")} `))
    assert.strictEqual(text.stdout.split("\n").filter((l) => l.startsWith("tools/bash  left-behind-by-some-tool-")).length, RUNS)
    assert.strictEqual(json.code, 0, json.stderr)
    const doc = JSON.parse(json.stdout) as { runs: ReadonlyArray<{ runId: string }>; unowned: ReadonlyArray<unknown> }
    assert.deepStrictEqual(doc.runs.map((r) => r.runId), Array.from({ length: RUNS }, (_, i) => `run-${String(RUNS - 1 - i).padStart(6, "0")}`))
    assert.strictEqual(doc.unowned.length, RUNS)
  })
})

describe("a closed stdout pipe (built CLI)", () => {
  it("memory show, work ls, work ls --json and doctor end quietly with 141 when the reader goes", async () => {
    const cases = [["memory", "show"], ["work", "ls"], ["work", "ls", "--json"], ["doctor"]] as const
    const ended = await Promise.all(cases.map((args) => closedAfterFirstChunk(args)))
    ended.forEach((r, i) => {
      const label = cases[i]!.join(" ")
      assert.notStrictEqual(r.firstChunk, "", `${label}: wrote something first`)
      assert.strictEqual(r.stderr, "", `${label}: nothing on stderr (no EPIPE stack trace)`)
      assert.strictEqual(r.signal, null, label)
      assert.strictEqual(r.code, 141, label)
    })
  })

  it("`pi-storage memory show | head -1` in a shell: the first line, and nothing on stderr", () => {
    const r = spawnSync("sh", ["-c", `"${process.execPath}" "${MAIN}" --agent-dir "${agentDir}" memory show | head -1`], { env: env(), encoding: "utf8" })
    assert.strictEqual(r.status, 0, r.stderr)
    assert.strictEqual(r.stdout, `USER.md: ${Fs.statSync(Path.join(agentDir, "USER.md")).size} of 8192 bytes (over budget); ${ENTRIES} entries\n`)
    assert.strictEqual(r.stderr, "")
  })
})
