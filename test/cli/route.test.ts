/**
 * The short route (docs/install.md "Installing"): `status`, `status --json` and a plain `config snapshot` skip `@effect/cli`. Which argv takes it, and
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

  it("takes a plain `config snapshot` (-m/--message MSG, --json, --web-data-root DIR, each once); the rest goes to the tree", () => {
    assert.deepStrictEqual(directRoute(split(["config", "snapshot"])), { command: "config snapshot", json: false, message: "snapshot", webDataRoot: undefined })
    assert.deepStrictEqual(directRoute(split(["--agent-dir", "/a", "config", "snapshot", "-m", "switch model", "--json", "--web-data-root", "/w"])), {
      command: "config snapshot",
      json: true,
      message: "switch model",
      webDataRoot: "/w"
    })
    assert.deepStrictEqual(directRoute(split(["config", "snapshot", "--message", "x"])), { command: "config snapshot", json: false, message: "x", webDataRoot: undefined })
    for (const argv of [
      ["config"], ["config", "status"], ["config", "snapshot", "--help"], ["config", "snapshot", "-m"], ["config", "snapshot", "-m", ""],
      ["config", "snapshot", "-m", "-x"], ["config", "snapshot", "--message=x"], ["config", "snapshot", "-m", "a", "-m", "b"],
      ["config", "snapshot", "--json", "--json"], ["config", "snapshot", "extra"], ["config", "snapshot", "--web-data-root"], ["config", "snapshot", "--", "x"]
    ]) assert.isUndefined(directRoute(split(argv)), argv.join(" "))
  })

  it("config snapshot: the short route prints, complains and exits as the command tree does", async () => {
    // Two agent dirs alike: the short route runs on one, the tree on the other, step by step.
    const make = () => {
      const root = tempDir()
      Fs.mkdirSync(Path.join(root, "web", "notes", "config"), { recursive: true })
      Fs.mkdirSync(Path.join(root, "agent"))
      Fs.writeFileSync(Path.join(root, "agent", "settings.json"), '{ "theme": "dark" }\n')
      Fs.writeFileSync(Path.join(root, "agent", "auth.json"), '{ "k": "SEKRET" }\n')
      Fs.writeFileSync(Path.join(root, "web", "notes", "config", "prefs.json"), '{ "font": 12 }\n')
      Fs.writeFileSync(Path.join(root, "file"), "not a dir")
      return root
    }
    const roots = { short: make(), tree: make() }
    const run = async (via: "short" | "tree", args: ReadonlyArray<string>, agent = "agent") => {
      const root = roots[via]
      const s = split(["--agent-dir", Path.join(root, agent), "config", "snapshot", "--web-data-root", Path.join(root, "web"), ...args])
      const route = directRoute(s)
      assert.isDefined(route, args.join(" "))
      const r = await capture((status) => via === "short" ? direct(route!, s, status) : main(s, status))
      const norm = (text: string) => text.split(root).join("ROOT").replace(/\b[0-9a-f]{12,40}\b/g, "REV")
      return { stdout: norm(r.stdout), stderr: norm(r.stderr), code: r.code }
    }
    const both = async (args: ReadonlyArray<string>, agent?: string) => {
      const short = await run("short", args, agent)
      assert.deepStrictEqual(short, await run("tree", args, agent), args.join(" "))
      return short
    }
    assert.include((await both(["--json", "-m", "first"])).stdout, "settings.json")
    assert.match((await both([])).stdout, /^Nothing changed\./)
    for (const root of Object.values(roots)) Fs.writeFileSync(Path.join(root, "agent", "settings.json"), '{ "theme": "light" }\n')
    assert.match((await both(["-m", "light"])).stdout, /^Saved REV: 1 file changed/)
    assert.include((await both(["--json"])).stdout, '"revision": null')
    const refused = await both([], "file")
    assert.strictEqual(refused.code, 1)
    assert.include(refused.stderr, "not a directory")
  })
})
