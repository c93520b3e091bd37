/**
 * Names are bytes (DESIGN "Names are bytes", docs/safety.md "Names are bytes"), as a user meets them through the built
 * CLI (`npm test` builds first) on real disk: files whose names are not UTF-8 are created here from bytes
 * (Buffer paths), and every command must carry them as they are. A state snapshot holds such a file (its
 * manifest stores the escaped name, its bytes and hash), verify passes and a restore brings it back under the
 * same bytes; config history versions one and rolls it back; the migration moves one; human output shows
 * each such byte as `\xNN`, `--json` carries the escaped string (`\udcNN`), and nothing is shown as U+FFFD.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { runNode } from "../support/child.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

const cli = async (args: ReadonlyArray<string>) => {
  const env = { ...process.env }
  delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete env["PI_STATE_BACKUP_DIR"]
  const r = await runNode(MAIN, args, { env })
  // A byte that is not UTF-8 never reaches a person as U+FFFD (lost): escaped in text, `\udcNN` in JSON.
  assert.notInclude(r.stdout + r.stderr, "\ufffd", `${args.join(" ")}: ${r.stdout}${r.stderr}`)
  return r
}

/** `caf` 0xE9 `-` 0xFF: two bytes that are not UTF-8. */
const RAW = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2d, 0xff])
/** The same name as the library carries it (domain/NameBytes.ts) and as `--json` prints it. */
const ESCAPED = "caf\udce9-\udcff"
/** The same name as human output shows it. */
const SHOWN = "caf\\xe9-\\xff"

/** `dir/<RAW><suffix>` as a Buffer path: the file's real bytes on disk. */
const rawPath = (dir: string, suffix = "") => Buffer.concat([Buffer.from(`${dir}/`), RAW, Buffer.from(suffix)])

/** The names in `dir`, as bytes. */
const namesIn = (dir: string): Array<Buffer> => Fs.readdirSync(dir, { encoding: "buffer" }).sort(Buffer.compare)

const sha256 = (data: string) => createHash("sha256").update(data).digest("hex")

describe("names that are not UTF-8, through the built CLI", () => {
  it("backup create stores such a file (manifest: escaped name, bytes, hash), verify passes, restore brings it back under the same bytes", async () => {
    const base = scratch("pi-storage-names-backup-")
    const agent = Path.join(base, "agent")
    const root = Path.join(base, "snapshots")
    const todo = Path.join(agent, "state", "extensions", "todo")
    Fs.mkdirSync(todo, { recursive: true })
    Fs.writeFileSync(rawPath(todo, ".json"), "[1]")
    Fs.mkdirSync(rawPath(todo, "-dir"))
    Fs.writeFileSync(Buffer.concat([rawPath(todo, "-dir"), Buffer.from("/"), RAW]), "inner")
    Fs.writeFileSync(Path.join(agent, "MEMORY.md"), "# m")
    const run = (...args: ReadonlyArray<string>) => cli(["--agent-dir", agent, "backup", ...args, "--root", root])

    const created = await run("create", "--json")
    assert.strictEqual(created.code, 0, created.stderr)
    const report = JSON.parse(created.stdout) as { id: string; files: number; skipped: ReadonlyArray<unknown> }
    assert.strictEqual(report.files, 3, created.stdout)
    assert.deepStrictEqual(report.skipped, [])
    const manifest = JSON.parse(Fs.readFileSync(Path.join(root, report.id, "manifest.json"), "utf8")) as {
      entries: ReadonlyArray<{ path: string; type: string; size: number; sha256?: string }>
    }
    const byPath = new Map(manifest.entries.map((e) => [e.path, e]))
    const file = byPath.get(`agent/state/extensions/todo/${ESCAPED}.json`)
    assert.deepStrictEqual([file?.type, file?.size, file?.sha256], ["file", 3, sha256("[1]")], JSON.stringify(manifest.entries))
    assert.strictEqual(byPath.get(`agent/state/extensions/todo/${ESCAPED}-dir`)?.type, "directory")
    assert.strictEqual(byPath.get(`agent/state/extensions/todo/${ESCAPED}-dir/${ESCAPED}`)?.sha256, sha256("inner"))
    // The manifest file stores the name as JSON escapes (ASCII), and the snapshot's copy has the real bytes.
    assert.include(Fs.readFileSync(Path.join(root, report.id, "manifest.json"), "latin1"), "caf\\udce9-\\udcff.json")
    assert.strictEqual(Fs.readFileSync(rawPath(Path.join(root, report.id, "agent/state/extensions/todo"), ".json"), "utf8"), "[1]")

    const verified = await run("verify")
    assert.strictEqual(verified.code, 0, verified.stdout + verified.stderr)
    assert.match(verified.stdout, /: OK\.\n$/)
    const listed = await run("list")
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.include(listed.stdout, report.id)

    // Lost and replaced live: a restore brings the exact bytes back (the live data is moved aside first).
    Fs.rmSync(rawPath(todo, ".json"))
    Fs.writeFileSync(Buffer.concat([rawPath(todo, "-dir"), Buffer.from("/"), RAW]), "changed")
    const restored = await run("restore", report.id)
    assert.strictEqual(restored.code, 0, restored.stderr)
    assert.include(restored.stdout, `/state/extensions/todo/${SHOWN}.json\n`)
    assert.strictEqual(Fs.readFileSync(rawPath(todo, ".json"), "utf8"), "[1]")
    assert.strictEqual(Fs.readFileSync(Buffer.concat([rawPath(todo, "-dir"), Buffer.from("/"), RAW]), "utf8"), "inner")
    assert.deepStrictEqual(namesIn(todo), [rawPath("", "-dir").subarray(1), rawPath("", ".json").subarray(1)].sort(Buffer.compare))
    const again = await run("verify")
    assert.strictEqual(again.code, 0, again.stdout + again.stderr)
  }, 60_000)

  it("doctor and status list such names escaped (\\xNN) in text and as the escaped string in --json", async () => {
    const base = scratch("pi-storage-names-doctor-")
    const agent = Path.join(base, "agent")
    const extensions = Path.join(agent, "state", "extensions")
    Fs.mkdirSync(extensions, { recursive: true })
    Fs.writeFileSync(rawPath(agent, ".txt"), "stray")
    Fs.mkdirSync(rawPath(extensions))
    Fs.writeFileSync(Buffer.concat([rawPath(extensions), Buffer.from("/"), RAW]), "abc")

    const doctor = await cli(["--agent-dir", agent, "doctor"])
    assert.strictEqual(doctor.code, 1, doctor.stderr)
    assert.match(doctor.stdout, new RegExp(`unknown-root-entry +${SHOWN.replaceAll("\\", "\\\\")}\\.txt `))
    assert.include(doctor.stdout, `  ${SHOWN}.txt: find the writer`)
    const doctorJson = await cli(["--agent-dir", agent, "doctor", "--json"])
    const findings = (JSON.parse(doctorJson.stdout) as { findings: ReadonlyArray<{ code: string; path: string }> }).findings
    assert.deepStrictEqual(findings.filter((f) => f.code === "unknown-root-entry").map((f) => f.path), [`${ESCAPED}.txt`])
    assert.include(doctorJson.stdout, `"caf\\udce9-\\udcff.txt"`)

    const status = await cli(["--agent-dir", agent, "status"])
    assert.strictEqual(status.code, 0, status.stderr)
    assert.match(status.stdout, new RegExp(`\\n${SHOWN.replaceAll("\\", "\\\\")} +- +\\d+\\.\\d KiB \\(\\d+\\.\\d KiB apparent, 1\\)`))
    const statusJson = await cli(["--agent-dir", agent, "status", "--json"])
    const doc = JSON.parse(statusJson.stdout) as { extensions: ReadonlyArray<{ namespace: string; state: { apparentBytes: number } | null }> }
    // The directory so named and its 3-byte file, as du -sb counts them.
    assert.deepStrictEqual(doc.extensions.map((e) => [e.namespace, e.state?.apparentBytes]), [[ESCAPED, Fs.lstatSync(rawPath(extensions)).size + 3]])
  }, 60_000)

  it("config history versions a config file so named (git holds its bytes), shows it escaped, and a rollback puts the bytes back", async () => {
    const base = scratch("pi-storage-names-config-")
    const agent = Path.join(base, "agent")
    const web = Path.join(base, "web")
    const config = Path.join(web, "notes", "config")
    Fs.mkdirSync(agent, { recursive: true })
    Fs.mkdirSync(config, { recursive: true })
    Fs.writeFileSync(rawPath(config, ".txt"), "v1\n")
    const run = (...args: ReadonlyArray<string>) => cli(["--agent-dir", agent, "config", ...args, "--web-data-root", web])

    const first = await run("snapshot", "--json")
    assert.strictEqual(first.code, 0, first.stderr)
    const saved = JSON.parse(first.stdout) as { revision: string; changed: ReadonlyArray<string>; skipped: ReadonlyArray<{ path: string }> }
    assert.deepStrictEqual(saved.changed, [`notes/config/${ESCAPED}.txt`])
    assert.deepStrictEqual(saved.skipped, [])
    // Git itself holds the name's bytes (NUL-separated, as `git ls-files -z` prints them).
    const history = Path.join(agent, "state", "backups", "config", "history")
    const files = execFileSync("git", ["ls-files", "-z"], { cwd: history, env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" } })
    assert.isTrue(files.equals(Buffer.concat([Buffer.from("web/notes/config/"), RAW, Buffer.from(".txt\0")])), JSON.stringify(files.toString("latin1")))

    Fs.writeFileSync(rawPath(config, ".txt"), "v2\n")
    const status = await run("status")
    assert.include(status.stdout, "changed since the head")
    const second = await run("snapshot", "-m", "two")
    assert.strictEqual(second.code, 0, second.stderr)
    assert.include(second.stdout, `  notes/config/${SHOWN}.txt\n`)
    Fs.rmSync(rawPath(config, ".txt"))
    const rolled = await run("rollback", saved.revision)
    assert.strictEqual(rolled.code, 0, rolled.stdout + rolled.stderr)
    assert.include(rolled.stdout, `notes/config/${SHOWN}.txt`)
    assert.strictEqual(Fs.readFileSync(rawPath(config, ".txt"), "utf8"), "v1\n")
    assert.deepStrictEqual(namesIn(config), [rawPath("", ".txt").subarray(1)])
  }, 60_000)

  it("the migration moves such entries (a root sidecar, a legacy directory's entries) under their exact bytes", async () => {
    const base = scratch("pi-storage-names-migrate-")
    const agent = Path.join(base, "agent")
    // tmp/ is a legacy directory; its destination exists, so its entries move one by one (merge-directory).
    const legacy = Path.join(agent, "tmp")
    const destination = Path.join(agent, "state", "legacy-layout", "tmp")
    Fs.mkdirSync(legacy, { recursive: true })
    Fs.mkdirSync(destination, { recursive: true })
    Fs.writeFileSync(rawPath(legacy, ".log"), "legacy")
    Fs.mkdirSync(rawPath(legacy, "-dir"))
    Fs.writeFileSync(Buffer.concat([rawPath(legacy, "-dir"), Buffer.from("/"), RAW]), "deep")
    Fs.writeFileSync(rawPath(agent, ".txt:Zone.Identifier"), "[ZoneTransfer]")

    const dry = await cli(["--agent-dir", agent, "migrate", "--dry-run", "--json"])
    assert.strictEqual(dry.code, 0, dry.stderr)
    const froms = (JSON.parse(dry.stdout) as { decisions: ReadonlyArray<{ from: string }> }).decisions.map((d) => d.from)
    for (const from of [`tmp/${ESCAPED}.log`, `tmp/${ESCAPED}-dir`, `${ESCAPED}.txt:Zone.Identifier`]) assert.include(froms, from)
    const migrated = await cli(["--agent-dir", agent, "migrate"])
    assert.strictEqual(migrated.code, 0, migrated.stdout + migrated.stderr)
    assert.include(migrated.stdout, `tmp/${SHOWN}.log`)
    assert.isFalse(Fs.existsSync(legacy))
    assert.strictEqual(Fs.readFileSync(rawPath(destination, ".log"), "utf8"), "legacy")
    assert.strictEqual(Fs.readFileSync(Buffer.concat([rawPath(destination, "-dir"), Buffer.from("/"), RAW]), "utf8"), "deep")
    assert.strictEqual(Fs.readFileSync(rawPath(Path.join(agent, "state", "legacy-layout", "sidecars"), ".txt.Zone.Identifier"), "utf8"), "[ZoneTransfer]")
    assert.isFalse(Fs.existsSync(rawPath(agent, ".txt:Zone.Identifier")))
    // Nothing left for the doctor to report at the root.
    const doctor = await cli(["--agent-dir", agent, "doctor", "--json"])
    const paths = (JSON.parse(doctor.stdout) as { findings: ReadonlyArray<{ path: string }> }).findings.map((f) => f.path)
    assert.isFalse(paths.some((p) => p.includes(ESCAPED)), JSON.stringify(paths))
  }, 60_000)
})
