/**
 * `pi-storage config snapshot` answered from the stat cache's clean scan (docs/config-history.md "The stat
 * cache"): the built CLI as a user meets it (real git, real files, a child process), the clean-scan answer
 * itself (src/cli/configFast.ts, in-process: whether it answered), every kind of edit it must never miss,
 * hostile cache files, and a property: after random edits, whenever the clean scan answers, the full snapshot
 * of the same files (with no cache) finds nothing to commit and prints the same.
 */
import { runNode } from "../support/child.js"
import { libfaketime } from "../support/hosts.js"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it, vi } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { splitArgv } from "../../src/cli/argv.js"
import { fastConfigSnapshot } from "../../src/cli/configFast.js"
import { directRoute } from "../../src/cli/route.js"
import { CLEAN_RACY_MARGIN_MS } from "../../src/domain/ConfigCleanScan.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const RACY_WAIT = CLEAN_RACY_MARGIN_MS + 150

const temps: Array<string> = []
afterAll(() => {
  for (const t of temps) Fs.rmSync(t, { recursive: true, force: true })
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Fixture {
  readonly agent: string
  readonly web: string
  readonly cache: string
}

/** An agent dir with root config, overlays, an agent extension's config, a web extension's config, and files never committed. */
const fixture = (): Fixture => {
  const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-cfgfast-"))
  temps.push(root)
  const agent = Path.join(root, "agent")
  const web = Path.join(root, "web")
  const write = (p: string, text: string) => {
    Fs.mkdirSync(Path.dirname(p), { recursive: true })
    Fs.writeFileSync(p, text)
  }
  write(Path.join(agent, "settings.json"), '{ "theme": "dark" }\n')
  write(Path.join(agent, "auth.json"), '{ "k": "SEKRET" }\n')
  for (let i = 0; i < 4; i++) write(Path.join(agent, "profiles", "directories", `p${i}`, "settings.json"), `{ "model": "m${i}" }\n`)
  write(Path.join(agent, "config", "extensions", "ns", "a.json"), '{ "a": 1 }\n')
  write(Path.join(agent, "config", "extensions", "ns", "deep", "b.json"), '{ "b": 2 }\n')
  write(Path.join(web, "notes", "config", "prefs.json"), '{ "font": 12 }\n')
  Fs.symlinkSync("/etc/hostname", Path.join(web, "notes", "config", "linked.json"))
  return { agent, web, cache: Path.join(agent, "state", "backups", "config", "history", ".git", "pi-stat-cache.json") }
}

const envWithout = () => {
  const env = { ...process.env }
  for (const k of Object.keys(env)) if (k.startsWith("PI_STORAGE_") || k === "PI_ADAPTATIVE_CODING_AGENT_DIR" || k === "PI_WEB_DATA_DIR") delete env[k]
  return env
}

/** The built CLI, as a user runs it. */
const cli = async (f: Fixture, ...args: ReadonlyArray<string>) => {
  const r = await runNode(MAIN, ["--agent-dir", f.agent, "config", "snapshot", "--web-data-root", f.web, ...args], { env: envWithout() })
  assert.strictEqual(r.code, 0, r.stderr)
  return r
}

/** The clean-scan answer in-process: whether it answered, and what it printed. */
const fast = (f: Fixture, ...args: ReadonlyArray<string>) => {
  const split = splitArgv(["--agent-dir", f.agent, "config", "snapshot", "--web-data-root", f.web, ...args])
  if (!split.ok) throw new Error(split.message)
  const route = directRoute(split.value)
  if (route?.command !== "config snapshot") throw new Error("not the short route")
  let stdout = ""
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true))
  const saved = Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith("PI_STORAGE_")).map((k) => [k, process.env[k]]))
  for (const k of Object.keys(saved)) delete process.env[k]
  try {
    return { answered: fastConfigSnapshot(split.value, route), stdout }
  } finally {
    spy.mockRestore()
    Object.assign(process.env, saved)
  }
}

/**
 * Snapshot until the clean scan is recorded: the first call after a change, once its times are past the racy
 * margin. With libfaketime the CLI's wall clock runs that margin ahead instead of the test waiting it out
 * (the files' times stay the kernel's, as after a real wait): thirty waits of two seconds were most of this
 * file's time. Without it, the test waits.
 */
const settled = async (f: Fixture) => {
  let r: Awaited<ReturnType<typeof cli>>
  if (libfaketime === undefined) {
    await sleep(RACY_WAIT)
    r = await cli(f)
  } else {
    const ahead = { LD_PRELOAD: libfaketime, FAKETIME: `+${Math.ceil(RACY_WAIT / 1000)}s`, FAKETIME_DONT_FAKE_MONOTONIC: "1" }
    r = await runNode(MAIN, ["--agent-dir", f.agent, "config", "snapshot", "--web-data-root", f.web], { env: { ...envWithout(), ...ahead } })
    assert.strictEqual(r.code, 0, r.stderr)
  }
  assert.isTrue(fast(f).answered, "the clean scan was recorded")
  return r
}

type Edit = (f: Fixture) => void
const overlay = (f: Fixture, i: number) => Path.join(f.agent, "profiles", "directories", `p${i}`, "settings.json")

/** Edits the clean scan must never miss (each leaves the live files other than the head holds, or the report other). */
const EDITS: ReadonlyArray<readonly [string, Edit]> = [
  ["same size, mtime set back (cp -p, touch -d)", (f) => {
    const p = overlay(f, 1)
    const st = Fs.statSync(p)
    Fs.writeFileSync(p, Fs.readFileSync(p, "utf8").replace("m1", "x1"))
    Fs.utimesSync(p, st.atime, st.mtime)
  }],
  ["permission change only", (f) => Fs.chmodSync(overlay(f, 2), 0o640)],
  ["renamed over with other bytes of the same size", (f) => {
    const p = Path.join(f.agent, "config", "extensions", "ns", "a.json")
    const st = Fs.statSync(p)
    Fs.writeFileSync(p + ".tmp", '{ "a": 9 }\n')
    Fs.utimesSync(p + ".tmp", st.atime, st.mtime)
    Fs.renameSync(p + ".tmp", p)
  }],
  ["a file added deep in an extension's config", (f) => Fs.writeFileSync(Path.join(f.agent, "config", "extensions", "ns", "deep", "c.json"), "{}\n")],
  ["a file removed", (f) => Fs.rmSync(Path.join(f.agent, "config", "extensions", "ns", "deep", "b.json"))],
  ["a new overlay", (f) => {
    Fs.mkdirSync(Path.join(f.agent, "profiles", "directories", "p9"), { recursive: true })
    Fs.writeFileSync(overlay(f, 9), "{}\n")
  }],
  ["a root config file created", (f) => Fs.writeFileSync(Path.join(f.agent, "models.json"), "{}\n")],
  ["a web extension appears", (f) => {
    Fs.mkdirSync(Path.join(f.web, "other", "config"), { recursive: true })
    Fs.writeFileSync(Path.join(f.web, "other", "config", "x.json"), "{}\n")
  }],
  ["a tracked file replaced by a symlink (now reported as never committed)", (f) => {
    Fs.rmSync(overlay(f, 3))
    Fs.symlinkSync("/etc/hostname", overlay(f, 3))
  }]
]

describe("config snapshot from the clean scan (built CLI)", () => {
  it("answers nothing changed exactly as the full snapshot does, and sees every kind of edit", { timeout: 180_000 }, async () => {
    const f = fixture()
    const first = JSON.parse((await cli(f, "--json", "-m", "initial")).stdout)
    assert.isString(first.revision)
    // Just written: racy, so the clean scan is not trusted yet and the full snapshot answers.
    assert.isFalse(fast(f).answered)
    const full = await settled(f)
    const fullJson = JSON.parse((await cli(f, "--json")).stdout)
    assert.isNull(fullJson.revision)
    assert.deepStrictEqual(fullJson.skipped.map((s: { _tag: string }) => s._tag).sort(), ["Credentials", "Symlink"])
    // The clean scan prints what the full snapshot printed, text and JSON.
    assert.strictEqual(fast(f).stdout, full.stdout)
    assert.deepStrictEqual(JSON.parse(fast(f, "--json").stdout), fullJson)
    assert.strictEqual((await cli(f)).stdout, full.stdout)
    for (const [name, edit] of EDITS) {
      edit(f)
      assert.isFalse(fast(f).answered, `${name}: the clean scan must not answer`)
      const r = JSON.parse((await cli(f, "--json")).stdout)
      if (name === "permission change only") assert.isNull(r.revision, "history keeps the bytes, not the mode: nothing to commit")
      else if (name.startsWith("a tracked file replaced by a symlink")) {
        assert.isNull(r.revision, name)
        assert.include(r.skipped.map((s: { path: string }) => s.path).join(" "), "profiles/directories/p3/settings.json", name)
      } else assert.isString(r.revision, `${name}: committed`)
      await settled(f)
    }
  })

  it("a hostile, foreign or garbage cache is no cache: never trusted, never a crash, nothing written through it", { timeout: 120_000 }, async () => {
    const f = fixture()
    await cli(f, "-m", "initial")
    await settled(f)
    const good = Fs.readFileSync(f.cache)
    const outside = Path.join(Path.dirname(f.agent), "outside.json")
    const other = fixture()
    await cli(other, "-m", "initial")
    await settled(other)
    const variants: ReadonlyArray<readonly [string, () => void, boolean]> = [
      ["garbage bytes", () => Fs.writeFileSync(f.cache, Buffer.from([0xff, 0x00, 0x7b, 0x22])), true],
      ["truncated", () => Fs.writeFileSync(f.cache, good.subarray(0, good.length >> 1)), true],
      ["JSON null", () => Fs.writeFileSync(f.cache, "null"), true],
      ["another repository's cache", () => Fs.copyFileSync(other.cache, f.cache), false],
      ["its clean scan naming other roots", () => {
        const c = JSON.parse(good.toString("utf8"))
        Fs.writeFileSync(f.cache, JSON.stringify({ ...c, clean: { ...c.clean, agentDir: other.agent } }))
      }, false],
      ["its clean scan observing hostile paths", () => {
        const c = JSON.parse(good.toString("utf8"))
        Fs.writeFileSync(f.cache, JSON.stringify({ ...c, clean: { ...c.clean, observed: [["/dev/zero", ["File", 0, 0o600, 1, 1, 1]], ["/proc/self/mem", null]] } }))
      }, false],
      ["a symlink to a file outside", () => {
        Fs.writeFileSync(outside, good)
        Fs.rmSync(f.cache)
        Fs.symlinkSync(outside, f.cache)
      }, false]
    ]
    for (const [name, make, warns] of variants) {
      make()
      assert.isFalse(fast(f).answered, name)
      const r = await cli(f)
      assert.match(r.stdout, /^Nothing changed\.\n/, name)
      if (warns) assert.include(r.stderr, "ignoring an unreadable stat cache", name)
      // Replaced by a cache of ours (a regular file), never written through a link.
      assert.isFalse(Fs.lstatSync(f.cache).isSymbolicLink(), name)
      await settled(f)
    }
    assert.deepStrictEqual(Fs.readFileSync(outside), good)
    // A directory or a FIFO where the cache belongs: the clean scan does not answer, and does not hang.
    Fs.rmSync(f.cache)
    Fs.mkdirSync(f.cache)
    assert.isFalse(fast(f).answered)
    Fs.rmdirSync(f.cache)
    Fs.writeFileSync(f.cache, good)
    assert.isTrue(fast(f).answered)
    // Owned by someone else: not ours to trust.
    if (process.getuid?.() === 0) {
      Fs.chownSync(f.cache, 65534, 65534)
      assert.isFalse(fast(f).answered)
      Fs.chownSync(f.cache, 0, 0)
    }
    // An interrupted staging or change: the program's to report, never answered here.
    const history = Path.dirname(Path.dirname(f.cache))
    Fs.writeFileSync(Path.join(history, ".pi-pending"), "")
    assert.isFalse(fast(f).answered)
    Fs.rmSync(Path.join(history, ".pi-pending"))
    Fs.writeFileSync(Path.join(history, ".pi-change.json"), "{}")
    assert.isFalse(fast(f).answered)
    Fs.rmSync(Path.join(history, ".pi-change.json"))
    assert.isTrue(fast(f).answered)
  })

  it("a second web data root has its own clean scan; a record that does not read is never trusted", { timeout: 120_000 }, async () => {
    const f = fixture()
    await cli(f, "-m", "first")
    await settled(f)
    // Another root of the same agent dir (a dev instance): its own mirror, its own clean scan.
    const dev: Fixture = { ...f, web: Path.join(Path.dirname(f.web), "web-dev") }
    Fs.mkdirSync(Path.join(dev.web, "notes", "config"), { recursive: true })
    Fs.writeFileSync(Path.join(dev.web, "notes", "config", "prefs.json"), '{ "font": 20 }\n')
    assert.isFalse(fast(dev).answered, "the first root's clean scan says nothing of this one")
    const first = await cli(dev)
    assert.include(first.stdout, "notes/config/prefs.json")
    await settled(dev)
    assert.isFalse(fast(f).answered, "each root's clean scan is its own (the last one recorded)")
    await settled(f)
    // A record that does not read: the clean scan never answers; the program refuses.
    const record = Path.join(Path.dirname(f.cache), "pi-web-root.json")
    for (const hostile of ["{", JSON.stringify({ version: 1, webRoot: "relative" }), "\u00ff"]) {
      Fs.writeFileSync(record, hostile)
      assert.isFalse(fast(f).answered, hostile)
      const r = await runNode(MAIN, ["--agent-dir", f.agent, "config", "snapshot", "--web-data-root", f.web], { env: envWithout() })
      assert.notStrictEqual(r.code, 0)
      assert.include(r.stderr, "pi-web-root.json")
    }
  })

  it("property: after random edits, when the clean scan answers, the uncached full snapshot finds nothing and prints the same", { timeout: 300_000 }, async () => {
    const f = fixture()
    await cli(f, "-m", "initial")
    await settled(f)
    const files = () => [overlay(f, 0), overlay(f, 1), overlay(f, 2), Path.join(f.agent, "settings.json"), Path.join(f.web, "notes", "config", "prefs.json")]
    const step = fc.record({
      file: fc.nat(4),
      kind: fc.constantFrom("nothing", "same bytes rewritten", "other bytes, same size, mtime back", "append", "chmod", "remove", "touch only")
    })
    let answered = 0
    let runs = 0
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 3 }), async (steps) => {
      runs++
      for (const s of steps) {
        const p = files()[s.file]!
        if (!Fs.existsSync(p)) {
          Fs.mkdirSync(Path.dirname(p), { recursive: true })
          Fs.writeFileSync(p, "{}\n")
          continue
        }
        const st = Fs.statSync(p)
        const bytes = Fs.readFileSync(p)
        if (s.kind === "same bytes rewritten") Fs.writeFileSync(p, bytes)
        else if (s.kind === "other bytes, same size, mtime back") {
          const flipped = Buffer.from(bytes)
          flipped[flipped.length - 2] = flipped[flipped.length - 2] === 0x20 ? 0x09 : 0x20
          Fs.writeFileSync(p, flipped)
          Fs.utimesSync(p, st.atime, st.mtime)
        } else if (s.kind === "append") Fs.appendFileSync(p, " ")
        else if (s.kind === "chmod") Fs.chmodSync(p, (st.mode & 0o777) === 0o600 ? 0o644 : 0o600)
        else if (s.kind === "remove") Fs.rmSync(p)
        else if (s.kind === "touch only") Fs.utimesSync(p, new Date(), new Date())
      }
      const quick = fast(f, "--json")
      // The truth: the full snapshot with no cache at all.
      Fs.rmSync(f.cache, { force: true })
      const full = JSON.parse((await cli(f, "--json", "-m", "property")).stdout)
      if (quick.answered) {
        answered++
        assert.isNull(full.revision, JSON.stringify(steps))
        assert.deepStrictEqual(JSON.parse(quick.stdout), full)
      }
      await settled(f)
    }), { numRuns: 8, examples: [[[{ file: 0, kind: "nothing" }]], [[{ file: 1, kind: "other bytes, same size, mtime back" }]]] })
    assert.strictEqual(runs, 8)
    // Not vacuous: a run that left the files as they were was answered by the clean scan.
    assert.isAtLeast(answered, 1)
  })
})
