/**
 * `pi-storage memory` through the built CLI (the shipped bundle `node dist/bundle/cli/main.mjs`; `npm test` builds first), as a child process against temp
 * agent dirs: output, JSON, exit codes (2 usage, 1 not found / ambiguous with the candidates, 3 refused).
 */
import { runNode } from "../support/child.js"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { PROFILE_POINTER } from "../../src/domain/UserProfileText.js"
import { PI_INDEX, PI_SHARD_1, PI_SHARD_2, piShard } from "../services/userProfileSupport.js"
import { aliasBombShard, BINARY_USER, BOMB_SHARD, LATIN1_OFFSET, LATIN1_USER } from "../support/hostileProfile.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const cli = (args: ReadonlyArray<string>): Promise<Result> => {
  const env = { ...process.env }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  return runNode(MAIN, args, { env })
}
const at = (agentDir: string) => (...args: ReadonlyArray<string>) => cli(["--agent-dir", agentDir, ...args])

const temps: Array<string> = []
const tempDir = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-memory-"))
  temps.push(dir)
  return dir
}
afterAll(() => temps.forEach((d) => Fs.rmSync(d, { recursive: true, force: true })))

/** Pi's archive as it is on disk today. */
const piAgentDir = () => {
  const agentDir = tempDir()
  const archive = Path.join(agentDir, "okf-memory", "user-preferences")
  Fs.mkdirSync(archive, { recursive: true })
  Fs.writeFileSync(Path.join(agentDir, "USER.md"), `${PROFILE_POINTER}\n- Hot: answers in French\n`)
  Fs.writeFileSync(Path.join(archive, "index.okf.md"), PI_INDEX)
  Fs.writeFileSync(Path.join(archive, PI_SHARD_1), piShard(1, "- Prefers concise answers\n- Uses pnpm\n"))
  Fs.writeFileSync(Path.join(archive, PI_SHARD_2), piShard(2, "- Works in Europe/Paris\n- Likes tabs\n"))
  return agentDir
}

describe("pi-storage memory (built CLI)", () => {
  it("show on a missing agent dir: an empty profile, exit 0, nothing created", async () => {
    const parent = tempDir()
    const agentDir = Path.join(parent, "agent")
    const r = await at(agentDir)("memory", "show")
    assert.deepStrictEqual([r.code, r.stdout, r.stderr], [0, "USER.md: 0 of 8192 bytes; 0 entries\n", ""])
    assert.deepStrictEqual(Fs.readdirSync(parent), [])
  })

  it("a refused edit of a profile no writer has touched creates nothing (not the agent dir, not the lock's directory)", async () => {
    const parent = tempDir()
    const agentDir = Path.join(parent, "agent")
    for (const [args, code] of [[["memory", "remove", "zzz"], 1], [["memory", "replace", "zzz", "- new"], 1], [["memory", "add", "a\nb"], 2]] as const) {
      const r = await at(agentDir)(...args)
      assert.strictEqual(r.code, code, `${args.join(" ")}: ${r.stderr}`)
      assert.deepStrictEqual(Fs.readdirSync(parent), [], args.join(" "))
    }
    // With a hand-written USER.md and no writer yet: the same, and the file stays as it was.
    Fs.mkdirSync(agentDir)
    Fs.writeFileSync(Path.join(agentDir, "USER.md"), "- Prefers tabs\n")
    const r = await at(agentDir)("memory", "remove", "zzz")
    assert.strictEqual(r.code, 1, r.stderr)
    assert.deepStrictEqual(Fs.readdirSync(agentDir), ["USER.md"])
    // A state/ that leads nowhere (a disk not mounted) may hide the archive: said, never "not found".
    const hidden = tempDir()
    Fs.writeFileSync(Path.join(hidden, "USER.md"), "- Prefers tabs\n")
    Fs.symlinkSync(Path.join(hidden, "unmounted", "state"), Path.join(hidden, "state"))
    for (const args of [["memory", "remove", "coffee"], ["memory", "add", "- hello"]]) {
      const unreachable = await at(hidden)(...args)
      assert.strictEqual(unreachable.code, 3, unreachable.stderr)
      assert.include(unreachable.stderr, "state/ is a symlink that leads to no directory", args.join(" "))
      assert.notInclude(unreachable.stderr, "no profile entry")
    }
    assert.strictEqual(Fs.readFileSync(Path.join(hidden, "USER.md"), "utf8"), "- Prefers tabs\n")
    // An edit that is made takes the lock as before.
    const made = await at(agentDir)("memory", "remove", "tabs")
    assert.strictEqual(made.code, 0, made.stderr)
    assert.isTrue(Fs.statSync(Path.join(agentDir, "state", "user-profile")).isDirectory())
  })

  it("add, duplicate, replace, remove; a tiny --budget archives; show and --json tell where each entry is", async () => {
    const run = at(tempDir())
    assert.deepStrictEqual(await run("memory", "add", "- Uses pnpm"), { code: 0, stdout: "added: - Uses pnpm\n", stderr: "" })
    assert.deepStrictEqual(await run("memory", "add", "- Uses pnpm"), { code: 0, stdout: "already there (nothing added): - Uses pnpm\n", stderr: "" })
    const archived = await run("memory", "add", "--budget", "30", "- Likes tabs, never spaces")
    assert.strictEqual(archived.code, 0, archived.stderr)
    assert.include(archived.stdout, "the hot entries moved into the archive")
    const replaced = await run("memory", "replace", "pnpm", "- Uses bun")
    assert.deepStrictEqual([replaced.code, replaced.stdout], [0, "replaced: - Uses pnpm\n    with: - Uses bun\n"])
    const json = await run("memory", "show", "--json")
    assert.strictEqual(json.code, 0)
    const view = JSON.parse(json.stdout)
    assert.deepStrictEqual(view.entries.map((e: { text: string }) => e.text), ["- Uses bun", "- Likes tabs, never spaces"])
    assert.match(view.entries[0].shard, /^user-preferences-[0-9a-f]{16}\.okf\.md$/)
    assert.deepStrictEqual([view.sharded, view.text, view.budgetBytes], [true, PROFILE_POINTER, 8192])
    const removed = await run("memory", "remove", "Likes tabs")
    assert.deepStrictEqual([removed.code, removed.stdout], [0, "removed: - Likes tabs, never spaces\n"])
    const shown = await run("memory", "show")
    assert.match(shown.stdout, /^USER\.md: 107 of 8192 bytes; 1 entry, 1 archived shard\n\nID +IN +ENTRY\n[0-9a-f]{12} +user-preferences-[0-9a-f]{16}\.okf\.md +- Uses bun\n$/)
  })

  it("not found and ambiguous exit 1 (the candidates listed); a bad entry or flag exits 2; nothing changes", async () => {
    const agentDir = piAgentDir()
    const before = Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8")
    const run = at(agentDir)
    const [ambiguous, none, invalid, badBudget, noValue, bare] = await Promise.all([
      run("memory", "remove", "- "),
      run("memory", "replace", "emacs", "x"),
      run("memory", "add", "zero\u200bwidth"),
      run("memory", "add", "--budget", "lots", "x"),
      run("memory", "add", "--budget"),
      run("memory")
    ])
    assert.strictEqual(ambiguous.code, 1)
    assert.strictEqual(ambiguous.stderr, "pi-storage: 5 entries match; give the exact text of one:\n" +
      "  - Prefers concise answers\n  - Uses pnpm\n  - Works in Europe/Paris\n  - Likes tabs\n  - Hot: answers in French\n")
    assert.deepStrictEqual([none.code, none.stderr], [1, "pi-storage: no profile entry is or contains \"emacs\"\n"])
    assert.strictEqual(invalid.code, 2)
    assert.include(invalid.stderr, "U+200B")
    assert.strictEqual(badBudget.code, 2)
    assert.include(badBudget.stderr, "--budget")
    assert.deepStrictEqual([noValue.code, noValue.stderr], [2, "pi-storage: --budget needs a value: SIZE, e.g. 8KiB\n"])
    assert.strictEqual(bare.code, 2)
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), before)
  })

  it("Pi's archive: shown in order, edited in place of the shard that held the entry", async () => {
    const agentDir = piAgentDir()
    const run = at(agentDir)
    const shown = await run("memory", "show")
    assert.strictEqual(shown.code, 0)
    const lines = shown.stdout.trim().split("\n").slice(3)
    assert.deepStrictEqual(lines.map((l) => l.split(/\s{2,}/).slice(1)), [
      [PI_SHARD_1, "- Prefers concise answers"],
      [PI_SHARD_1, "- Uses pnpm"],
      [PI_SHARD_2, "- Works in Europe/Paris"],
      [PI_SHARD_2, "- Likes tabs"],
      ["USER.md", "- Hot: answers in French"]
    ])
    const shard2 = Fs.readFileSync(Path.join(agentDir, "okf-memory", "user-preferences", PI_SHARD_2), "utf8")
    assert.strictEqual((await run("memory", "remove", "pnpm")).code, 0)
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "okf-memory", "user-preferences", PI_SHARD_2), "utf8"), shard2)
    assert.isFalse(Fs.existsSync(Path.join(agentDir, "okf-memory", "user-preferences", PI_SHARD_1)))
  })

  it("an archive directory that is a symlink is refused with exit 3", async () => {
    const agentDir = tempDir()
    Fs.mkdirSync(Path.join(agentDir, "elsewhere"))
    Fs.mkdirSync(Path.join(agentDir, "okf-memory"))
    Fs.symlinkSync("../elsewhere", Path.join(agentDir, "okf-memory", "user-preferences"))
    const [show, add] = await Promise.all([at(agentDir)("memory", "show"), at(agentDir)("memory", "add", "x")])
    for (const r of [show, add]) {
      assert.strictEqual(r.code, 3, r.stderr)
      assert.include(r.stderr, "(symlink)")
    }
    assert.deepStrictEqual(Fs.readdirSync(Path.join(agentDir, "elsewhere")), [])
  })

  it("a Latin-1 and a binary USER.md: every memory command refuses with exit 3 naming the first bad byte; the bytes stay", async () => {
    for (const [bytes, offset] of [[LATIN1_USER, LATIN1_OFFSET], [BINARY_USER, 0]] as const) {
      const agentDir = tempDir()
      Fs.writeFileSync(Path.join(agentDir, "USER.md"), bytes)
      const run = at(agentDir)
      const results = await Promise.all([run("memory", "add", "- Likes tabs"), run("memory", "replace", "pnpm", "- Uses bun"), run("memory", "show")])
      for (const r of results) {
        assert.strictEqual(r.code, 3, r.stderr)
        assert.include(r.stderr, `(not-utf8): it is not valid UTF-8 (first bad byte at offset ${offset})`)
      }
      assert.deepStrictEqual(new Uint8Array(Fs.readFileSync(Path.join(agentDir, "USER.md"))), bytes)
      const doctor = await run("doctor", "--json")
      assert.include(JSON.parse(doctor.stdout).findings.map((f: { code: string }) => f.code), "user-profile-not-utf8")
      assert.deepStrictEqual(new Uint8Array(Fs.readFileSync(Path.join(agentDir, "USER.md"))), bytes)
    }
  })

  it("a USER.md over the 4 MiB the library reads: every memory command refuses with exit 3 (too-large); the doctor says to move it aside; the bytes stay", async () => {
    const agentDir = tempDir()
    const big = "- fact\n".repeat(700_000)
    Fs.writeFileSync(Path.join(agentDir, "USER.md"), big)
    const run = at(agentDir)
    const results = await Promise.all([run("memory", "add", "- y"), run("memory", "show")])
    for (const r of results) {
      assert.strictEqual(r.code, 3, r.stderr)
      assert.include(r.stderr, "(too-large): it is larger than the 4194304 bytes the library reads")
    }
    const doctor = await run("doctor", "--json")
    const finding = JSON.parse(doctor.stdout).findings.find((f: { code: string }) => f.code === "user-profile-unsafe")
    assert.match(finding?.fix ?? "", /move it aside/)
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), big)
  })

  it("a shard whose front matter is a YAML alias bomb: status, doctor and memory show report it; an edit refuses with exit 3; nothing is rewritten", async () => {
    const agentDir = piAgentDir()
    const archive = Path.join(agentDir, "okf-memory", "user-preferences")
    Fs.writeFileSync(Path.join(archive, BOMB_SHARD), aliasBombShard())
    const before = Object.fromEntries(Fs.readdirSync(archive).map((n) => [n, Fs.readFileSync(Path.join(archive, n), "utf8")]))
    const userBefore = Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8")
    const run = at(agentDir)
    const [status, doctor, show, add] = await Promise.all([run("status", "--json"), run("doctor", "--json"), run("memory", "show", "--json"), run("memory", "add", "- Likes tabs")])
    assert.strictEqual(status.code, 0, status.stderr)
    assert.strictEqual(JSON.parse(status.stdout).doctor.bySeverity.error, 1)
    assert.strictEqual(doctor.code, 1, doctor.stderr)
    const finding = JSON.parse(doctor.stdout).findings.find((f: { code: string }) => f.code === "user-profile-unparsable-shard")
    assert.strictEqual(finding?.path, `okf-memory/user-preferences/${BOMB_SHARD}`)
    assert.match(finding?.message ?? "", /alias/)
    assert.strictEqual(show.code, 0, show.stderr)
    assert.deepStrictEqual(JSON.parse(show.stdout).unparsable.map((u: { shard: string }) => u.shard), [BOMB_SHARD])
    assert.deepStrictEqual([add.code, add.stdout], [3, ""])
    assert.include(add.stderr, "(unparsable-shard)")
    for (const r of [status, doctor, show, add]) assert.notMatch(r.stderr, /ReferenceError|Excessive alias count indicates a resource exhaustion attack\n\s+at /)
    assert.deepStrictEqual(Object.fromEntries(Fs.readdirSync(archive).map((n) => [n, Fs.readFileSync(Path.join(archive, n), "utf8")])), before)
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), userBefore)
  })

  it("a crash's leftover journal is undone by the next edit; the warning goes to stderr, stdout stays JSON", async () => {
    const agentDir = tempDir()
    Fs.mkdirSync(Path.join(agentDir, "state", "user-profile"), { recursive: true })
    const journal = { version: 1, shards: [], created: ["user-preferences-0000000000000000.okf.md"], obsolete: [], user: null }
    Fs.writeFileSync(Path.join(agentDir, "state", "user-profile", "pending.json"), JSON.stringify(journal))
    const r = await at(agentDir)("memory", "add", "--json", "- after a crash")
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(JSON.parse(r.stdout).outcome, "added")
    assert.include(r.stderr, "interrupted by a crash (undone)")
    assert.deepStrictEqual(Fs.readdirSync(Path.join(agentDir, "state", "user-profile")), [])
  })

  it("help says each flag's default with an example", async () => {
    const help = await cli(["memory", "add", "--help"])
    assert.strictEqual(help.code, 0)
    assert.include(help.stdout, "default 8192, e.g. --budget 8KiB")
    assert.include(help.stdout, "default: text")
  })
})
