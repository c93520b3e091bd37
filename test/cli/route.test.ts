/**
 * The short route (docs/install.md "Installing"): `status` and `status --json` skip `@effect/cli`. Which argv takes it, and
 * that it prints, complains and exits exactly as the command tree does for the same argv (both run here,
 * in-process, over the same agent dirs: populated, missing, a regular file).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, assert, describe, it, vi } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { main } from "../../src/cli/app.js"
import { type SplitArgv, splitArgv } from "../../src/cli/argv.js"
import { direct } from "../../src/cli/direct.js"
import { ExitStatus } from "../../src/cli/exit.js"
import { directRoute } from "../../src/cli/route.js"
import { openAgentStorage } from "../../src/promise.js"

const split = (argv: ReadonlyArray<string>): SplitArgv => {
  const r = splitArgv(argv)
  if (!r.ok) throw new Error(r.message)
  return r.value
}

const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})
const tempDir = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-route-"))
  temps.push(dir)
  return dir
}

/** Run one program with stdout and stderr captured; the exit code its status recorded. */
const capture = async (program: (status: ExitStatus) => Effect.Effect<void>) => {
  const written = { stdout: "", stderr: "" }
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => ((written.stdout += String(chunk)), true))
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => ((written.stderr += String(chunk)), true))
  const status = new ExitStatus()
  try {
    await Effect.runPromise(program(status))
  } finally {
    out.mockRestore()
    err.mockRestore()
  }
  return { ...written, code: status.current }
}

/** `scannedAt` is the time of each scan: the one field two runs cannot share. */
const comparable = (r: { stdout: string; stderr: string; code: number }) =>
  r.stdout.startsWith("{") ? { ...r, stdout: JSON.stringify({ ...JSON.parse(r.stdout), scannedAt: 0 }) } : r

describe("cli short route", () => {
  it("takes exactly `status` and `status --json` (global flags anywhere), nothing the tree must parse", () => {
    for (const argv of [["status"], ["status", "--json"], ["--agent-dir", "/a", "status", "--no-color"], ["status", "--agent-dir=/a", "--json"]]) {
      assert.isDefined(directRoute(split(argv)), argv.join(" "))
    }
    assert.deepStrictEqual(directRoute(split(["status", "--json"])), { command: "status", json: true })
    assert.deepStrictEqual(directRoute(split(["status"])), { command: "status", json: false })
    for (const argv of [[], ["status", "--help"], ["status", "-h"], ["status", "--jsn"], ["status", "--json", "--json"], ["--json", "status"], ["status", "x"], ["doctor"], ["work", "ls"], ["statusx"]]) {
      assert.isUndefined(directRoute(split(argv)), argv.join(" "))
    }
  })

  it("prints, complains and exits as the command tree does", async () => {
    const populated = Path.join(tempDir(), "agent")
    const store = await openAgentStorage({ agentDir: populated, migrate: false })
    const run = await store.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    Fs.writeFileSync(Path.join(run.path, "out.txt"), "x".repeat(1500))
    await run.release()
    // Released 40 days ago: an age in days, the same in both runs (seconds would tick between them).
    const manifestPath = Path.join(run.path, ".pi-work-run.json")
    const longAgo = Date.now() - 40 * 24 * 60 * 60 * 1000
    Fs.writeFileSync(manifestPath, JSON.stringify({ ...JSON.parse(Fs.readFileSync(manifestPath, "utf8")), createdAt: longAgo, releasedAt: longAgo }))
    const held = await store.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
    Fs.mkdirSync(Path.join(populated, "work", "tools", "bash", "stray"))
    const missing = Path.join(tempDir(), "absent")
    const file = Path.join(tempDir(), "file")
    Fs.writeFileSync(file, "not a dir")
    try {
      for (const agentDir of [populated, missing, file]) {
        for (const argv of [["--agent-dir", agentDir, "status"], ["--agent-dir", agentDir, "status", "--json"], ["--no-color", "--agent-dir", agentDir, "status"]]) {
          const s = split(argv)
          const route = directRoute(s)
          assert.isDefined(route)
          const short = await capture((status) => direct(route!, s, status))
          const tree = await capture((status) => main(s, status))
          assert.deepStrictEqual(comparable(short), comparable(tree), argv.join(" "))
          assert.include(short.stdout + short.stderr, agentDir, argv.join(" "))
        }
      }
    } finally {
      await held.release()
      await store.close()
    }
    assert.deepStrictEqual(Fs.readdirSync(Path.dirname(missing)), [], "status creates nothing")
  })
})
