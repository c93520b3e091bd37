/**
 * The short route (docs/install.md "Installing"): `status`, `doctor`, `work ls` and a plain `config snapshot` skip `@effect/cli`. Which argv takes it, and
 * that it prints, complains and exits exactly as the command tree does for the same argv (both run here,
 * in-process, over the same agent dirs: populated, missing, a regular file).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, assert, describe, it, vi } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "effect/FastCheck"
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

/**
 * `scannedAt` is the time of each scan, and an age in seconds (`work ls` of a run made seconds ago) may tick
 * between the two runs: the fields two runs cannot share.
 */
const comparable = (r: { stdout: string; stderr: string; code: number }) =>
  r.stdout.startsWith("{")
    ? { ...r, stdout: JSON.stringify({ ...JSON.parse(r.stdout), scannedAt: 0 }) }
    : { ...r, stdout: r.stdout.replace(/\b\d+s ago\b/g, "Ns ago") }

describe("cli short route", () => {
  it("takes `status`, `doctor` and `work ls` with their own flags each once (global flags anywhere), nothing the tree must parse", () => {
    for (const argv of [
      ["status"], ["status", "--json"], ["--agent-dir", "/a", "status", "--no-color"], ["status", "--agent-dir=/a", "--json"],
      ["doctor"], ["doctor", "--json", "--max-scan-entries", "5"], ["work", "ls"], ["work", "ls", "tools/bash", "--json"]
    ]) {
      assert.isDefined(directRoute(split(argv)), argv.join(" "))
    }
    assert.deepStrictEqual(directRoute(split(["status", "--json"])), { command: "status", json: true, webDataRoot: undefined, limits: {} })
    assert.deepStrictEqual(directRoute(split(["status"])), { command: "status", json: false, webDataRoot: undefined, limits: {} })
    assert.deepStrictEqual(
      directRoute(split(["status", "--max-scanned-runs", "7", "--web-data-root", "/w", "--max-entries", "0", "--max-depth", "3", "--max-scan-entries", " 9 "])),
      { command: "status", json: false, webDataRoot: "/w", limits: { maxRunsPerTenant: 7, maxEntries: 0, maxDepth: 3, maxScanEntries: 9 } }
    )
    assert.deepStrictEqual(directRoute(split(["doctor", "--web-data-root", "/w", "--json"])), { command: "doctor", json: true, webDataRoot: "/w", maxScanEntries: undefined })
    assert.deepStrictEqual(directRoute(split(["doctor", "--max-scan-entries", "12"])), { command: "doctor", json: false, webDataRoot: undefined, maxScanEntries: 12 })
    assert.deepStrictEqual(directRoute(split(["work", "ls", "--max-scanned-runs", "50000", "--json"])), {
      command: "work ls",
      json: true,
      filter: undefined,
      limits: { maxRunsPerTenant: 50000 }
    })
    assert.deepStrictEqual(directRoute(split(["work", "ls", "tools"])), { command: "work ls", json: false, filter: "tools", limits: {} })
    for (const argv of [
      [], ["status", "--help"], ["status", "-h"], ["status", "--jsn"], ["status", "--json", "--json"], ["--json", "status"], ["status", "x"], ["statusx"],
      ["status", "--max-depth"], ["status", "--max-depth", "-1"], ["status", "--max-depth", "x"], ["status", "--max-depth=3"], ["status", "--max-depth", "1", "--max-depth", "2"],
      ["status", "--web-data-root", ""], ["doctor", "--help"], ["doctor", "x"], ["doctor", "--max-scanned-runs", "5"], ["doctor", "--max-scan-entries", "1e3"],
      ["doctor", "--json", "--json"], ["work"], ["work", "lsx"], ["work", "ls", "--help"], ["work", "ls", "a", "b"], ["work", "ls", "--json", "tools"],
      ["work", "ls", "--web-data-root", "/w"], ["work", "ls", ""], ["work", "ls", "--max-entries", "99999999999999999999"], ["work", "prune"]
    ]) {
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
        for (const argv of [
          ["--agent-dir", agentDir, "status"], ["--agent-dir", agentDir, "status", "--json"], ["--no-color", "--agent-dir", agentDir, "status"],
          ["--agent-dir", agentDir, "status", "--max-scanned-runs", "1", "--max-entries", "2", "--max-depth", "0"],
          ["--agent-dir", agentDir, "status", "--json", "--max-scan-entries", "3", "--web-data-root", Path.join(populated, "no-web")],
          ["--agent-dir", agentDir, "doctor"], ["--agent-dir", agentDir, "doctor", "--json"], ["--agent-dir", agentDir, "doctor", "--max-scan-entries", "2"],
          ["--agent-dir", agentDir, "doctor", "--web-data-root", Path.join(populated, "no-web"), "--json"],
          ["--agent-dir", agentDir, "work", "ls"], ["--agent-dir", agentDir, "work", "ls", "--json"], ["--agent-dir", agentDir, "work", "ls", "tools/bash"],
          ["--agent-dir", agentDir, "work", "ls", "tools", "--json", "--max-scanned-runs", "1"], ["--agent-dir", agentDir, "work", "ls", "nope/none"],
          ["--agent-dir", agentDir, "work", "ls", "--max-entries", "1", "--max-depth", "1", "--max-scan-entries", "4"], ["--agent-dir", agentDir, "work", "ls", "bad name"]
        ]) {
          const s = split(argv)
          const route = directRoute(s)
          assert.isDefined(route)
          const short = await capture((status) => direct(route!, s, status))
          const tree = await capture((status) => main(s, status))
          assert.deepStrictEqual(comparable(short), comparable(tree), argv.join(" "))
          if (!argv.includes("ls")) assert.include(short.stdout + short.stderr, agentDir, argv.join(" "))
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
      ["config", "snapshot", "-m", "a", "--message", "b"], ["config", "snapshot", "--max-depth", "3"],
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

  it("property: every argv of a view's own tokens the short route takes reads, prints and exits as the tree does", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const store = await openAgentStorage({ agentDir, migrate: false })
    for (const tenant of ["bash", "zsh"]) {
      const run = await store.acquireWorkRun({ category: "tools", tenant, retention: false })
      Fs.writeFileSync(Path.join(run.path, "out.txt"), "x".repeat(3000))
      await run.release()
    }
    await store.close()
    const web = Path.join(tempDir(), "web")
    // Each view's own flags (a subset, each once, in any order) with values from a pool that holds bad ones too,
    // now and then a token of another view or none (`--help`, a repeat); `work ls` with a filter first or last.
    const counts = ["--max-scanned-runs", "--max-entries", "--max-depth", "--max-scan-entries"]
    const own: Record<string, ReadonlyArray<string>> = {
      status: ["--json", "--web-data-root", ...counts],
      doctor: ["--json", "--web-data-root", "--max-scan-entries"],
      "work ls": ["--json", ...counts]
    }
    const valueFor = (name: string) =>
      name === "--json" ? fc.constant([name])
      : name === "--web-data-root" ? fc.constantFrom(web, web, web, "", "--json").map((v) => [name, v])
      : fc.constantFrom("0", "1", "2", "64", "007", " 3", "x", "-1", "").map((v) => [name, v])
    const argv = fc.constantFrom("status", "doctor", "work ls").chain((command) =>
      fc.tuple(
        fc.shuffledSubarray([...own[command]!]).chain((names) => fc.tuple(...names.map(valueFor))),
        fc.option(fc.constantFrom(["--help"], ["--json"], ["--max-scanned-runs", "5"], ["extra"]), { nil: undefined, freq: 5 }),
        fc.option(fc.constantFrom("tools", "tools/bash", "nope/none", "a b"), { nil: undefined }),
        fc.boolean()
      ).map(([flags, junk, filter, filterFirst]) => {
        const rest = [...flags.flat(), ...(junk ?? [])]
        const withFilter = filter === undefined || command !== "work ls" ? rest : filterFirst ? [filter, ...rest] : [...rest, filter]
        return ["--agent-dir", agentDir, ...command.split(" "), ...withFilter]
      })
    )
    let taken = 0
    await fc.assert(
      fc.asyncProperty(argv, async (args) => {
        const s = split(args)
        const route = directRoute(s)
        if (route === undefined) return
        taken++
        const short = await capture((status) => direct(route, s, status))
        const tree = await capture((status) => main(s, status))
        assert.deepStrictEqual(comparable(short), comparable(tree), args.join(" "))
      }),
      { numRuns: 100, seed: 20261203 }
    )
    // Many samples take the short route, so the comparison ran (a route that took nothing would pass vacuously).
    assert.isAbove(taken, 20)
  })
})
