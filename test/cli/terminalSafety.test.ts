/**
 * Human output never lets a string the CLI did not write steer the terminal (docs/cli.md "CLI quick tour"): names on
 * disk, manifest fields, USER.md entries, snapshot labels, config history messages, file contents in a diff
 * and error messages naming a path carry ESC sequences, OSC 52 (a clipboard write) and a newline that would
 * forge a report line. Through the built CLI (the shipped bundle; `npm test` builds first) as child
 * processes: the human output of each command holds none of their control characters and shows them
 * escaped; `--json` output gives the exact strings back.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { displayText } from "../../src/domain/Display.js"
import { indent, joinShown, painter, shown, table, txt } from "../../src/cli/format.js"
import { runNode } from "../support/child.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

/** A screen clear, a clipboard write (OSC 52 ended by BEL) and a newline forging a line of its own. */
const EVIL = "e\u001b[2J\u001b]52;c;ZXZpbA==\u0007\n FAKE LINE"
/** How the CLI shows it. */
const EVIL_SHOWN = "e\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\n FAKE LINE"
/** USER.md's entries: one line each (a newline ends an entry), so EVIL without it, and its first line. */
const ENTRIES = [`- ${EVIL.replace("\n", " ")}`, `- ${EVIL.split("\n")[0]}`]
/** Every control character but the newline: none may reach the terminal from these strings. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/

const temps: Array<string> = []
const tempDir = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-terminal-"))
  temps.push(dir)
  return dir
}

const env = (backupRoot: string): NodeJS.ProcessEnv => {
  const e: NodeJS.ProcessEnv = { ...process.env, PI_STATE_BACKUP_DIR: backupRoot }
  delete e["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete e["NO_COLOR"]
  return e
}

interface Fixture {
  readonly agentDir: string
  readonly webDataRoot: string
  readonly cli: (...args: ReadonlyArray<string>) => ReturnType<typeof runNode>
}

let fixture: Fixture

/** Human output: no control character, no forged line, the string shown escaped. */
const assertShownSafely = (text: string, label: string) => {
  assert.notMatch(text, CONTROL, `${label}: a control character reached the output: ${JSON.stringify(text)}`)
  assert.notInclude(text, "\n FAKE LINE", `${label}: a raw newline forged a line`)
  assert.include(text, EVIL_SHOWN, `${label}: the string is shown escaped`)
}

beforeAll(async () => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
  const root = tempDir()
  const agentDir = Path.join(root, "agent")
  const webDataRoot = Path.join(root, "web")
  const cli = (...args: ReadonlyArray<string>) => runNode(MAIN, ["--agent-dir", agentDir, ...args], { env: env(Path.join(root, "backups")) })
  const made = await cli("work", "run", "tools/bash", "--", "true")
  assert.strictEqual(made.code, 0, made.stderr)
  const tenantDir = Path.join(agentDir, "work", "tools", "bash")
  // A run directory named EVIL (no manifest), and a run whose manifest names EVIL as its run and host.
  Fs.mkdirSync(Path.join(tenantDir, EVIL), { mode: 0o700 })
  Fs.mkdirSync(Path.join(tenantDir, "forged"), { mode: 0o700 })
  Fs.writeFileSync(
    Path.join(tenantDir, "forged", ".pi-work-run.json"),
    JSON.stringify({ version: 2, category: "tools", tenant: "bash", runId: EVIL, kind: "named", createdAt: 1, createdBy: { host: EVIL, pid: 1 } })
  )
  // A tenant and an extension namespace named EVIL, a root entry the doctor flags, a USER.md entry.
  Fs.mkdirSync(Path.join(agentDir, "work", "tools", EVIL), { mode: 0o700 })
  Fs.mkdirSync(Path.join(agentDir, "state", "extensions", EVIL), { recursive: true })
  Fs.writeFileSync(Path.join(agentDir, EVIL), "x")
  Fs.writeFileSync(Path.join(agentDir, "USER.md"), ENTRIES.map((e) => `${e}\n`).join(""))
  // State the snapshot holds, and extension config the history versions.
  Fs.writeFileSync(Path.join(agentDir, "state", `${EVIL}.json`), "{}")
  Fs.mkdirSync(Path.join(webDataRoot, "ext", "config"), { recursive: true })
  Fs.writeFileSync(Path.join(webDataRoot, "ext", "config", "notes.txt"), "one\n")
  for (const args of [["backup", "create", "--label", EVIL], ["config", "snapshot", "-m", EVIL, "--web-data-root", webDataRoot]]) {
    const r = await cli(...args)
    assert.strictEqual(r.code, 0, r.stderr)
  }
  Fs.appendFileSync(Path.join(webDataRoot, "ext", "config", "notes.txt"), `${EVIL}\n`)
  fixture = { agentDir, webDataRoot, cli }
})

afterAll(() => temps.forEach((d) => Fs.rmSync(d, { recursive: true, force: true })))

describe("human output escapes what the CLI did not write (built CLI)", () => {
  it("work ls, work prune, status and doctor: names and manifest fields shown escaped; --json exact", async () => {
    const { cli } = fixture
    const [ls, lsJson, prune, pruneJson, status, statusJson, doctor, doctorJson] = await Promise.all([
      cli("work", "ls"),
      cli("work", "ls", "--json"),
      cli("work", "prune", "tools/bash", "--dry-run"),
      cli("work", "prune", "tools/bash", "--dry-run", "--json"),
      cli("status"),
      cli("status", "--json"),
      cli("doctor"),
      cli("doctor", "--json")
    ])
    for (const [r, label] of [[ls, "work ls"], [prune, "work prune"], [status, "status"], [doctor, "doctor"]] as const) {
      assertShownSafely(r.stdout, label)
      assert.notMatch(r.stderr, CONTROL, `${label}: stderr`)
    }
    // The run dir named EVIL, and the run whose manifest names it.
    assert.include(ls.stdout, `tools/bash  ${EVIL_SHOWN}`)
    assert.include(ls.stdout, `manifest names tools/bash/${EVIL_SHOWN}`)
    assert.include(prune.stdout, `    ${EVIL_SHOWN}: no manifest\n`)
    assert.include(status.stdout, `tools/${EVIL_SHOWN}`)
    assert.include(doctor.stdout, `work/tools/bash/${EVIL_SHOWN}`)

    const list = JSON.parse(lsJson.stdout)
    assert.includeMembers(list.unowned.map((u: { name: string }) => u.name), [EVIL, "forged"])
    assert.include(list.unowned.find((u: { name: string }) => u.name === "forged").why, `tools/bash/${EVIL}`)
    assert.includeMembers(JSON.parse(pruneJson.stdout).unowned.map((u: { name: string }) => u.name), [EVIL])
    const doc = JSON.parse(statusJson.stdout)
    assert.includeMembers(doc.tenants.map((t: { tenant: string }) => t.tenant), [EVIL])
    assert.includeMembers(doc.extensions.map((e: { namespace: string }) => e.namespace), [EVIL])
    const paths = JSON.parse(doctorJson.stdout).findings.map((f: { path: string }) => f.path)
    assert.includeMembers(paths, [EVIL, `work/tools/bash/${EVIL}`])
  })

  it("memory show and an ambiguous memory remove: profile entries shown escaped; --json exact", async () => {
    const { cli } = fixture
    const [show, showJson, ambiguous] = await Promise.all([cli("memory", "show"), cli("memory", "show", "--json"), cli("memory", "remove", "52;c")])
    assert.notMatch(show.stdout, CONTROL)
    assert.include(show.stdout, "  - e\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07  FAKE LINE\n")
    assert.include(show.stdout, "  - e\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\n")
    assert.deepStrictEqual(JSON.parse(showJson.stdout).entries.map((e: { text: string }) => e.text), ENTRIES)
    // The candidates listed on stderr are escaped too.
    assert.strictEqual(ambiguous.code, 1, ambiguous.stderr)
    assert.notMatch(ambiguous.stderr, CONTROL)
    assert.include(ambiguous.stderr, "  - e\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\n")
  })

  it("backup list and backup restore: labels and restored paths shown escaped; --json exact", async () => {
    const { cli } = fixture
    const listJson = await cli("backup", "list", "--json")
    const [snapshot] = JSON.parse(listJson.stdout) as ReadonlyArray<{ id: string; label: string }>
    assert.strictEqual(snapshot!.label, EVIL)
    const [list, dry, dryJson] = await Promise.all([
      cli("backup", "list"),
      cli("backup", "restore", snapshot!.id, "--dry-run"),
      cli("backup", "restore", snapshot!.id, "--dry-run", "--json")
    ])
    assertShownSafely(list.stdout, "backup list")
    assertShownSafely(dry.stdout, "backup restore --dry-run")
    assert.include(JSON.parse(dryJson.stdout).restored, Path.join(fixture.agentDir, "state", `${EVIL}.json`))
    const restore = await cli("backup", "restore", snapshot!.id)
    assert.strictEqual(restore.code, 0, restore.stderr)
    assertShownSafely(restore.stdout, "backup restore")
  })

  it("config log and config diff: a commit message and a file's lines shown escaped; --json exact", async () => {
    const { cli, webDataRoot } = fixture
    const [log, logJson, diff, diffJson] = await Promise.all([
      cli("config", "log", "--web-data-root", webDataRoot),
      cli("config", "log", "--json", "--web-data-root", webDataRoot),
      cli("config", "diff", "--web-data-root", webDataRoot),
      cli("config", "diff", "--json", "--web-data-root", webDataRoot)
    ])
    // The history keeps a message's first line (git's subject): the ESC and BEL are what is left to escape.
    assert.notMatch(log.stdout, CONTROL)
    assert.include(log.stdout, "e\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07")
    assert.include(JSON.parse(logJson.stdout)[0].message, "e\u001b[2J\u001b]52;c;ZXZpbA==\u0007")
    assert.notMatch(diff.stdout, CONTROL)
    assert.include(diff.stdout, "+e\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\n+ FAKE LINE\n")
    assert.include(JSON.parse(diffJson.stdout).patch, `+${EVIL.replace("\n", "\n+")}\n`)
  })

  it("error messages naming a path or a value are one escaped line", async () => {
    const { cli, agentDir } = fixture
    const [notADir, cwd] = await Promise.all([
      runNode(MAIN, ["--agent-dir", Path.join(agentDir, EVIL), "work", "ls"], { env: env(tempDir()) }),
      cli("work", "run", "tools/bash", "--cwd", EVIL, "--", "true")
    ])
    assert.strictEqual(notADir.code, 1)
    assert.strictEqual(cwd.code, 2)
    for (const r of [notADir, cwd]) {
      assert.match(r.stderr, /^pi-storage: [^\n]+\n$/)
      assertShownSafely(r.stderr, "stderr")
    }
  })
})

describe("the formatting layer (cli/format.ts)", () => {
  const anyText = FastCheck.string({ unit: "binary", maxLength: 30 })

  it.prop(
    "no control character of a string reaches the output: txt, table cells, painted text, joins and indents",
    [anyText, anyText, anyText, FastCheck.boolean()],
    ([a, b, c, colour]) => {
      const paint = painter(colour)
      const out = joinShown([
        txt`${a}: removed ${b}\n`,
        indent(table([{ header: "NAME" }, { header: "WHY" }], [[a, paint("red", b)], [shown(c), c]], paint), "  "),
        txt`${paint("bold", txt`x ${c}`)}\n`
      ]).text
      // Our own newlines and colour codes are all there is: strip them, and nothing that steers is left.
      // eslint-disable-next-line no-control-regex
      const ours = out.replace(/\u001b\[\d+m/g, "").replace(/\n/g, "")
      assert.notMatch(ours, /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/, JSON.stringify(out))
      // One line per row: three rows of text, the table's header and two rows.
      assert.strictEqual(out.split("\n").length, 1 + 3 + 1 + 1)
      assert.include(out, `${displayText(a)}: removed ${displayText(b)}\n`)
    }
  )
})
