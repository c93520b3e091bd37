/**
 * `pi-storage backup` through the built CLI (the shipped bundle `node dist/bundle/cli/main.mjs`; `npm test` builds first), as a child
 * process against a temp agent dir: create, list, verify (and its exit 1 on damage), forget, restore of one
 * extension, usage errors and help text.
 */
import { runNode } from "../support/child.js"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { encodeSnapshotManifest, type SnapshotManifest } from "../../src/domain/StateSnapshot.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

const cli = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) => {
  const base = { ...process.env, ...env }
  delete base["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  if (!("PI_STATE_BACKUP_DIR" in env)) delete base["PI_STATE_BACKUP_DIR"]
  return runNode(MAIN, args, { env: base })
}

describe("pi-storage backup (built CLI)", () => {
  it("create, list --json, verify, damage → exit 1, restore --extension, forget --dry-run", async () => {
    const base = scratch("pi-storage-backup-cli-")
    const agent = Path.join(base, "agent")
    const root = Path.join(base, "snapshots")
    for (const [rel, content] of Object.entries({ "state/extensions/todo/items.json": "[1]", "state/extensions/other/x": "x", "MEMORY.md": "# m" })) {
      Fs.mkdirSync(Path.dirname(Path.join(agent, rel)), { recursive: true })
      Fs.writeFileSync(Path.join(agent, rel), content)
    }
    const run = (...args: ReadonlyArray<string>) => cli(["--agent-dir", agent, "backup", ...args, "--root", root])
    const created = await run("create", "--label", "cli")
    assert.strictEqual(created.code, 0, created.stderr)
    assert.match(created.stdout, /^Created snapshot \S+ in .*snapshots\n  3 files \(7 B\): 3 copied/)
    // $PI_STATE_BACKUP_DIR is the default root; the second snapshot links all three files.
    const second = await cli(["--agent-dir", agent, "backup", "create", "--json"], { PI_STATE_BACKUP_DIR: root })
    assert.strictEqual(second.code, 0, second.stderr)
    assert.strictEqual(JSON.parse(second.stdout).linkedFiles, 3)
    const listed = JSON.parse((await run("list", "--json")).stdout) as Array<{ id: string; label?: string }>
    assert.deepStrictEqual(listed.map((s) => s.label), [undefined, "cli"])
    const ok = await run("verify")
    assert.strictEqual(ok.code, 0, ok.stderr)
    assert.match(ok.stdout, /: OK\.\n$/)
    const first = listed[1]!.id
    Fs.writeFileSync(Path.join(agent, "state/extensions/todo/items.json"), "[1,2]")
    Fs.writeFileSync(Path.join(agent, "state/extensions/other/x"), "changed")
    const restored = await run("restore", first, "--extension", "todo")
    assert.strictEqual(restored.code, 0, restored.stderr)
    assert.match(restored.stdout, /Moved the live data it replaced to .*state\/restore-aside\//)
    assert.strictEqual(Fs.readFileSync(Path.join(agent, "state/extensions/todo/items.json"), "utf8"), "[1]")
    assert.strictEqual(Fs.readFileSync(Path.join(agent, "state/extensions/other/x"), "utf8"), "changed")
    // Hard links share the damage: both snapshots report the flipped file.
    Fs.writeFileSync(Path.join(root, first, "agent/MEMORY.md"), "# M")
    const damaged = await run("verify", "--json")
    assert.strictEqual(damaged.code, 1)
    assert.deepStrictEqual(JSON.parse(damaged.stdout).corrupt.sort(), listed.map((s) => `${s.id}/agent/MEMORY.md`).sort())
    const forget = await run("forget", "--keep-last", "1", "--dry-run")
    assert.strictEqual(forget.code, 0, forget.stderr)
    assert.strictEqual(forget.stdout, `keep    ${listed[0]!.id}  (last)\nwould remove ${first}\n`)
    assert.deepStrictEqual(Fs.readdirSync(root).filter((n) => !n.startsWith(".")).sort(), listed.map((s) => s.id).sort())
  }, 60_000)

  it("usage errors and refusals are one line with their exit codes; help names defaults", async () => {
    const base = scratch("pi-storage-backup-cli-")
    const agent = Path.join(base, "agent")
    Fs.mkdirSync(Path.join(agent, "state"), { recursive: true })
    const noPolicy = await cli(["--agent-dir", agent, "backup", "forget"])
    assert.strictEqual(noPolicy.code, 2)
    assert.match(noPolicy.stderr, /forget needs --keep-last/)
    const inside = await cli(["--agent-dir", agent, "backup", "create", "--root", Path.join(agent, "state", "bk")])
    assert.strictEqual(inside.code, 3, inside.stderr)
    assert.match(inside.stderr, /unsafe backup root .*inside-snapshotted-tree/)
    assert.isFalse(Fs.existsSync(Path.join(agent, "state", "bk")))
    const unknown = await cli(["--agent-dir", agent, "backup", "restore", "2020-01-01T00-00-00.000Z-000000", "--root", Path.join(base, "bk")])
    assert.strictEqual(unknown.code, 2)
    assert.match(unknown.stderr, /no complete snapshot/)
    // A bound that lets nothing through is the flag's mistake, said by the flag in its own words.
    for (const [flag, given, words] of [["--sample", "0", /--sample.*expected a whole number \(1 or more\), got "0"/], ["--max-bytes", "0", /--max-bytes.*expected a size above 0, such as 1GiB, got "0"/]] as const) {
      const r = await cli(["--agent-dir", agent, "backup", "verify", flag, given, "--root", Path.join(base, "bk")])
      assert.strictEqual(r.code, 2, `${flag} ${given}: ${r.stderr}`)
      assert.match(r.stderr, words)
      assert.notMatch(r.stderr, /invalid (sample|maxBytes)/)
    }
    const help = await cli(["backup", "forget", "--help"])
    assert.match(help.stdout, /--keep-daily[\s\S]*default: not used; e\.g\. --keep-daily 7/)
    assert.match(help.stdout, /--root[\s\S]*default: \$PI_STATE_BACKUP_DIR/)
  }, 60_000)

  it("a doctored manifest (its hash recomputed): restore exits 3 naming the entry and changes nothing, verify exits 1", async () => {
    const base = scratch("pi-storage-backup-cli-")
    const agent = Path.join(base, "agent")
    const root = Path.join(base, "snapshots")
    const canary = Path.join(base, "canary")
    Fs.mkdirSync(Path.join(agent, "state"), { recursive: true })
    Fs.mkdirSync(canary)
    Fs.writeFileSync(Path.join(agent, "state", "a.json"), "[1]")
    const run = (...args: ReadonlyArray<string>) => cli(["--agent-dir", agent, "backup", ...args, "--root", root])
    const created = await run("create", "--json")
    assert.strictEqual(created.code, 0, created.stderr)
    const id = JSON.parse(created.stdout).id as string
    // A link to a directory outside, then a file below it: what a restore would write through.
    const manifestPath = Path.join(root, id, "manifest.json")
    const { manifestSha256: _, ...body } = JSON.parse(Fs.readFileSync(manifestPath, "utf8")) as SnapshotManifest
    const sha256 = createHash("sha256").update("pwned").digest("hex")
    Fs.mkdirSync(Path.join(root, id, "agent/state/out/sub"), { recursive: true })
    Fs.writeFileSync(Path.join(root, id, "agent/state/out/sub/pwned"), "pwned")
    Fs.chmodSync(manifestPath, 0o600)
    Fs.writeFileSync(manifestPath, encodeSnapshotManifest({
      ...body,
      entries: [
        ...body.entries,
        { path: "agent/state/out", type: "symlink", size: canary.length, mode: 0o777, mtimeMs: 1, target: canary },
        { path: "agent/state/out/sub", type: "directory", size: 0, mode: 0o755, mtimeMs: 1 },
        { path: "agent/state/out/sub/pwned", type: "file", size: 5, mode: 0o644, mtimeMs: 1, sha256 }
      ]
    }))
    Fs.writeFileSync(Path.join(agent, "state", "a.json"), "[1,2]")
    const restored = await run("restore", id)
    assert.strictEqual(restored.code, 3, restored.stderr)
    assert.match(restored.stderr, /"agent\/state\/out\/sub" lies below "agent\/state\/out", which the manifest records as a symlink; nothing was changed/)
    assert.strictEqual(Fs.readFileSync(Path.join(agent, "state", "a.json"), "utf8"), "[1,2]")
    // a.json as it was, and the usage history the create recorded (docs/dashboard.md): nothing restored.
    assert.deepStrictEqual(Fs.readdirSync(Path.join(agent, "state")).sort(), ["a.json", "usage-history.jsonl"])
    assert.deepStrictEqual(Fs.readdirSync(canary), [])
    const verified = await run("verify", id, "--json")
    assert.strictEqual(verified.code, 1, verified.stderr)
    assert.deepStrictEqual(JSON.parse(verified.stdout).problems.map((p: { _tag: string }) => p._tag), ["ManifestUnusable"])
  }, 60_000)
})
