/**
 * The CLI's conventions through the built CLI (the shipped bundle; `npm test` builds first), as a person or a
 * script meets them (docs/cli.md "CLI quick tour"): a typo is never data, `--` ends the flags, errors and warnings
 * are JSON with `--json`, `TERM=dumb` gets no colour, a missing tenant is said so, `doctor --json` names what
 * it read, and every `--help` ends with the exit-code table. test/cli/argv.test.ts holds the same rule
 * in-process over every verb and flag of the tree.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { helpText, programShape } from "../../src/cli/app.js"
import type { CommandShape } from "../../src/cli/argv.js"
import { makeContext } from "../../src/cli/context.js"
import { ExitStatus } from "../../src/cli/exit.js"
import { EXIT_CODE_TABLE } from "../../src/cli/exitCodes.js"
import { type ChildResult, runNode } from "../support/child.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const ERRORS_PAGE = fileURLToPath(new URL("../../docs/errors.md", import.meta.url))
const CTX = makeContext({ agentDir: undefined, noColor: true }, new ExitStatus(), undefined)
const TREE = programShape(CTX)
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[/

const baseEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env }
  for (const name of ["PI_ADAPTATIVE_CODING_AGENT_DIR", "PI_WEB_DATA_DIR", "PI_STATE_BACKUP_DIR", "NO_COLOR", "PI_STORAGE_REMOVER_THREADS"]) delete env[name]
  return env
}

const cli = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = baseEnv()): Promise<ChildResult> => runNode(MAIN, args, { env })
const at = (agentDir: string) => (...args: ReadonlyArray<string>) => cli(["--agent-dir", agentDir, ...args])

const temps: Array<string> = []
const tempDir = (): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-cmdline-"))
  temps.push(dir)
  return dir
}

/** stderr as the one JSON object `--json` promises: one line, parsed. */
const jsonError = (r: ChildResult): { readonly _tag: string; readonly message: string; readonly exit: number; readonly [k: string]: unknown } => {
  assert.match(r.stderr, /^\{[^\n]*\}\n$/, `one JSON line on stderr: ${r.stderr}`)
  return JSON.parse(r.stderr)
}

/** Run `jobs` with at most `limit` at once (2 cores are shared). */
const pooled = async <A>(jobs: ReadonlyArray<() => Promise<A>>, limit = 4): Promise<Array<A>> => {
  const results: Array<A> = new Array(jobs.length)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, async () => {
    while (next < jobs.length) {
      const i = next++
      results[i] = await jobs[i]!()
    }
  }))
  return results
}

beforeAll(() => {
  if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
})
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

describe("a typo is never data (built CLI)", () => {
  it("memory: an unknown flag is named (not the entry), a flag after the entry is a flag, a token after -- is the entry", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const run = at(agentDir)
    const [typo, bogus] = await Promise.all([run("memory", "add", "--json-x"), run("memory", "add", "--bogus", "- x")])
    assert.deepStrictEqual([typo.code, typo.stdout, typo.stderr], [2, "", "pi-storage: unknown flag --json-x for memory add (did you mean --json?)\n"])
    assert.deepStrictEqual([bogus.code, bogus.stdout], [2, ""])
    assert.strictEqual(bogus.stderr, "pi-storage: unknown flag --bogus for memory add (see pi-storage memory add --help)\n")
    assert.isFalse(Fs.existsSync(agentDir), "nothing was written")
    // Flags after the entry, with a space or =, in any verb.
    const added = await run("memory", "add", "- z", "--budget", "8KiB")
    assert.deepStrictEqual([added.code, added.stdout], [0, "added: - z\n"], added.stderr)
    const replaced = await run("memory", "replace", "- z", "- y", "--json", "--budget=8KiB")
    assert.strictEqual(replaced.code, 0, replaced.stderr)
    assert.strictEqual(JSON.parse(replaced.stdout).outcome, "replaced")
    // After --, anything is the entry: a flag's look-alike, --help, --version, a second --.
    for (const data of ["--json-x", "--help", "--version", "-h", "--"]) {
      const r = await run("memory", "add", "--json", "--", data)
      assert.strictEqual(r.code, 0, `${data}: ${r.stderr}`)
      assert.strictEqual(JSON.parse(r.stdout).entry, data)
    }
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), "- y\n--json-x\n--help\n--version\n-h\n--\n")
  })

  it("for every verb, a near miss of one of its flags is a usage error naming it and suggesting the flag; nothing runs", async () => {
    const verbs: Array<{ path: ReadonlyArray<string>; node: CommandShape }> = []
    const visit = (node: CommandShape, path: ReadonlyArray<string>) => {
      if (node.children.length === 0) verbs.push({ path, node })
      for (const c of node.children) visit(c, [...path, c.name])
    }
    visit(TREE, [])
    // One near miss per verb, each verb a different flag and edit (argv.test.ts tries every flag with random edits).
    const cases = verbs.map(({ path, node }, i) => {
      const names = node.flags.flatMap((f) => f.names.filter((n) => n.startsWith("--")))
      const name = names[i % names.length]!
      const bare = name.slice(2)
      const edits = [bare.slice(1), `${bare}x`, bare.slice(0, 1) + bare.slice(2), `${bare.slice(0, -1)}q`]
      const typed = `--${edits.find((e) => e.length > 0 && !node.flags.some((f) => f.names.includes(`--${e}`)))!}`
      const required = Array.from({ length: node.args.reduce((n, a) => n + a.min, 0) }, (_, k) => `a${k}/b${k}`)
      return { path, name, typed, args: [...path, ...required, typed] }
    })
    const agentDir = Path.join(tempDir(), "agent")
    const results = await pooled(cases.map((c) => () => at(agentDir)(...c.args)))
    cases.forEach((c, i) => {
      const r = results[i]!
      const label = c.args.join(" ")
      assert.strictEqual(r.code, 2, `${label}: ${r.stderr}`)
      assert.strictEqual(r.stdout, "", label)
      assert.match(r.stderr, /^pi-storage: [^\n]+\n$/, label)
      assert.include(r.stderr, `unknown flag ${c.typed} for ${c.path.join(" ")} (did you mean `, label)
      assert.include(r.stderr.slice(r.stderr.indexOf("did you mean")).split(/[ ,?]/), c.name, label)
    })
    assert.isFalse(Fs.existsSync(agentDir), "no verb ran")
  })

  it("a flag's value is never a token that looks like a flag, and a global flag given twice is refused: exit 2, nothing written", async () => {
    const cwd = tempDir()
    const inCwd = (...args: ReadonlyArray<string>) => runNode(MAIN, args, { env: { ...baseEnv(), HOME: cwd }, cwd })
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [["memory", "add", "hello", "--agent-dir", "-v"], "--agent-dir needs a value: the agent directory; \"-v\" is a flag (a value that starts with \"-\" is given as --agent-dir=-v)"],
      [["backup", "create", "--root", "-x"], "--root needs a value"],
      [["backup", "create", "--label", "-j"], "--label needs a value"],
      [["config", "snapshot", "-m", "-j"], "-m needs a value"],
      [["status", "--web-data-root", "-x"], "--web-data-root needs a value"],
      [["--agent-dir", "a1", "memory", "add", "hello", "--agent-dir", "a2"], "--agent-dir is given twice (see pi-storage --help)"],
      [["--agent-dir", "a5", "work", "run", "tools/x", "--agent-dir", "a6", "--", "true"], "--agent-dir is given twice (see pi-storage --help)"],
      [["--no-color", "status", "--no-color"], "--no-color is given twice (see pi-storage --help)"],
      [["-h", "-h"], "-h is given twice (see pi-storage --help)"],
      [["--version", "--jsn"], "unknown flag --jsn for pi-storage (see pi-storage --help)"],
      [["--versoin"], "unknown flag --versoin for pi-storage (did you mean --version?)"]
    ]
    const results = await pooled(cases.map(([args]) => () => inCwd(...args)))
    cases.forEach(([args, message], i) => {
      const r = results[i]!
      assert.deepStrictEqual([r.code, r.stdout], [2, ""], `${args.join(" ")}: ${r.stderr}`)
      assert.match(r.stderr, /^pi-storage: [^\n]+\n$/, args.join(" "))
      assert.include(r.stderr, message, args.join(" "))
    })
    assert.deepStrictEqual(Fs.readdirSync(cwd), [], "nothing ran: no ./-v, a1, a2, a5, a6, ~/.pi")
    // A value that starts with "-" is given with `=`; after `--`, work run's command keeps its own flags.
    const label = await inCwd("--agent-dir=-v", "backup", "create", "--root=-x", "--label=-j", "--json")
    assert.strictEqual(label.code, 0, label.stderr)
    assert.strictEqual(JSON.parse(label.stdout).scope.agentDir, Path.join(cwd, "-v"))
    assert.lengthOf(Fs.readdirSync(Path.join(cwd, "-x")), 1)
    const run = await inCwd("--agent-dir", "a5", "work", "run", "tools/x", "--", "sh", "-c", "printf %s \"$*\"", "sh", "--agent-dir", "a6")
    assert.deepStrictEqual([run.code, run.stdout], [0, "--agent-dir a6"], run.stderr)
  })

  it("status: the short route and the tree read it alike (a typo goes to the tree and is refused; --json alone is the route)", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const [typo, ok, late, dashes] = await Promise.all([
      at(agentDir)("status", "--jsn"),
      at(agentDir)("status", "--json"),
      at(agentDir)("--json", "status"),
      at(agentDir)("status", "--", "--json")
    ])
    assert.deepStrictEqual([typo.code, typo.stderr], [2, "pi-storage: unknown flag --jsn for status (did you mean --json?)\n"])
    assert.strictEqual(ok.code, 0, ok.stderr)
    assert.strictEqual(late.code, 0, late.stderr)
    assert.deepStrictEqual({ ...JSON.parse(late.stdout), scannedAt: 0 }, { ...JSON.parse(ok.stdout), scannedAt: 0 })
    assert.strictEqual(dashes.code, 2)
    assert.strictEqual(dashes.stderr, "pi-storage: status takes no arguments, got \"--json\" (see pi-storage status --help)\n")
  })
})

describe("--json: errors and warnings on stderr are JSON (built CLI)", () => {
  it("a usage error, an argv mistake, a bad value, a library error and an ambiguous entry: one JSON object each", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    Fs.mkdirSync(agentDir)
    Fs.writeFileSync(Path.join(agentDir, "USER.md"), "- likes tea\n- likes toast\n")
    const run = at(agentDir)
    const [typo, noValue, badValue, notFound, ambiguous, escaped] = await Promise.all([
      run("status", "--json", "--jsn"),
      cli(["--json", "status", "--agent-dir"]),
      run("work", "prune", "a/b", "--max-age", "3x", "--json"),
      run("memory", "remove", "coffee", "--json"),
      run("memory", "remove", "likes", "--json"),
      run("memory", "add", "--json", "--bo\u001b]52;c;eA\u0007gus")
    ])
    assert.deepStrictEqual(jsonError(typo), { _tag: "UsageError", message: "unknown flag --jsn for status (did you mean --json?)", exit: 2 })
    assert.deepStrictEqual(jsonError(noValue), { _tag: "UsageError", message: "--agent-dir needs a value: the agent directory", exit: 2 })
    assert.deepStrictEqual(jsonError(badValue), {
      _tag: "UsageError",
      message: "--max-age: expected a duration such as 30d, 12h, 1.5d, 2h30m or 0, got \"3x\" (see pi-storage work prune --help)",
      exit: 2
    })
    assert.deepStrictEqual(jsonError(notFound), { _tag: "EntryNotFound", message: "no profile entry is or contains \"coffee\"", exit: 1 })
    assert.deepStrictEqual(jsonError(ambiguous), {
      _tag: "AmbiguousEntry",
      message: "2 entries match; give the exact text of one:",
      exit: 1,
      candidates: ["- likes tea", "- likes toast"]
    })
    // JSON carries the exact text (JSON escapes the controls); the human line shows them escaped.
    assert.strictEqual(jsonError(escaped).message, "unknown flag --bo\u001b]52;c;eA\u0007gus for memory add (see pi-storage memory add --help)")
    const human = await run("memory", "add", "--bo\u001b]52;c;eA\u0007gus")
    assert.notMatch(human.stderr, /\u001b/)
    assert.include(human.stderr, "\\x1b]52")
    for (const r of [typo, noValue, badValue, notFound, ambiguous]) {
      assert.strictEqual(r.code, jsonError(r).exit)
      assert.strictEqual(r.stdout, "")
    }
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), "- likes tea\n- likes toast\n")
  })

  it("a warning is a JSON line too with --json, a text line without", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const env = { ...baseEnv(), PI_STORAGE_REMOVER_THREADS: "lots" }
    const [json, text] = await Promise.all([
      cli(["--agent-dir", agentDir, "status", "--json"], env),
      cli(["--agent-dir", agentDir, "status"], env)
    ])
    assert.strictEqual(json.code, 0, json.stderr)
    const lines = json.stderr.trimEnd().split("\n")
    assert.isAbove(lines.length, 0)
    const warnings = lines.map((l) => JSON.parse(l))
    for (const w of warnings) assert.strictEqual(w.level, "warning")
    assert.isTrue(warnings.some((w) => typeof w._tag === "string" && w.message.includes("PI_STORAGE_REMOVER_THREADS")), json.stderr)
    assert.strictEqual(JSON.parse(json.stdout).exists, false)
    assert.match(text.stderr, /^pi-storage: warning: ignoring PI_STORAGE_REMOVER_THREADS/m)
  })
})

/** `script` gives the CLI a terminal (util-linux); without it the TTY case cannot be driven. */
const hasScript = spawnSync("script", ["--version"], { encoding: "utf8" }).status === 0

describe("colour (built CLI on a terminal)", () => {
  it.skipIf(!hasScript)("a TTY gets colour, TERM=dumb gets none", () => {
    const agentDir = Path.join(tempDir(), "agent")
    Fs.mkdirSync(agentDir)
    const onTerminal = (term: string) =>
      spawnSync("script", ["-q", "-e", "-c", `${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)} --agent-dir ${JSON.stringify(agentDir)} status`, "/dev/null"], {
        env: { ...baseEnv(), TERM: term },
        encoding: "utf8",
        timeout: 60_000
      })
    const xterm = onTerminal("xterm")
    const dumb = onTerminal("dumb")
    assert.strictEqual(xterm.status, 0, xterm.stderr)
    assert.strictEqual(dumb.status, 0, dumb.stderr)
    assert.match(xterm.stdout, ANSI, "a real terminal is painted")
    assert.include(dumb.stdout, "Agent dir")
    assert.notMatch(dumb.stdout, ANSI)
  })
})

describe("progress lines (built CLI on a terminal)", () => {
  it.skipIf(!hasScript)("drawn on a terminal; none with --json (its output is JSON only) and none with TERM=dumb", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    const root = Path.join(tempDir(), "backups")
    const made = await at(agentDir)("work", "run", "tools/bash", "--", "true")
    assert.strictEqual(made.code, 0, made.stderr)
    /** stdout and stderr as the terminal shows them (script joins them). */
    const onTerminal = (term: string, ...args: ReadonlyArray<string>) =>
      spawnSync("script", ["-q", "-e", "-c", [process.execPath, MAIN, "--agent-dir", agentDir, ...args].map((a) => JSON.stringify(a)).join(" "), "/dev/null"], {
        env: { ...baseEnv(), TERM: term },
        encoding: "utf8",
        timeout: 60_000
      })
    const prune = ["work", "prune", "--all", "--max-runs", "0", "--dry-run"]
    const drawn = onTerminal("xterm", ...prune)
    assert.strictEqual(drawn.status, 0, drawn.stdout)
    assert.include(drawn.stdout, "\r\u001b[Ktools/bash: scanning", "a terminal gets the progress line")
    for (const [term, args] of [["xterm", [...prune, "--json"]], ["dumb", [...prune, "--json"]], ["xterm", ["backup", "create", "--root", root, "--json"]]] as const) {
      const r = onTerminal(term, ...args)
      assert.strictEqual(r.status, 0, r.stdout)
      assert.notInclude(r.stdout, "\r\u001b[K", args.join(" "))
      assert.isObject(JSON.parse(r.stdout), args.join(" "))
    }
    const dumb = onTerminal("dumb", ...prune)
    assert.strictEqual(dumb.status, 0, dumb.stdout)
    assert.include(dumb.stdout, "tools/bash: would remove 1 run")
    assert.notMatch(dumb.stdout, /\r(?!\n)|\u001b/, "TERM=dumb: no escapes, no line redrawn")
  })
})

describe("what the commands say (built CLI)", () => {
  it("work prune of a tenant that does not exist says so, --quiet too", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    Fs.mkdirSync(Path.join(agentDir, "work", "tools", "bash"), { recursive: true })
    const results = await Promise.all([["work", "prune", "tools/zsh"], ["work", "prune", "tools/zsh", "--quiet"], ["work", "prune", "nope/zsh", "--quiet", "--dry-run"]]
      .map((a) => at(agentDir)(...a)))
    assert.deepStrictEqual(results.map((r) => [r.code, r.stdout, r.stderr]), [
      [0, "tools/zsh: no such tenant (nothing to prune)\n", ""],
      [0, "tools/zsh: no such tenant (nothing to prune)\n", ""],
      [0, "nope/zsh: no such tenant (nothing to prune)\n", ""]
    ])
  })

  it("doctor --json names the agent dir and the web data root it read (TD1's default when none is given)", async () => {
    const agentDir = Path.join(tempDir(), "agent")
    Fs.mkdirSync(agentDir)
    const web = tempDir()
    const home = tempDir()
    const [withWeb, without] = await Promise.all([
      cli(["--agent-dir", agentDir, "doctor", "--json", "--web-data-root", web]),
      cli(["--agent-dir", agentDir, "doctor", "--json"], { ...baseEnv(), HOME: home })
    ])
    const a = JSON.parse(withWeb.stdout)
    const b = JSON.parse(without.stdout)
    assert.deepStrictEqual([a.agentDir, a.webDataRoot], [agentDir, web])
    assert.deepStrictEqual([b.agentDir, b.webDataRoot], [agentDir, Path.join(home, ".pi", "web", "data")])
    assert.isArray(a.findings)
  })
})

describe("exit codes: one table (exitCodes.ts), printed by every --help and listed by docs/errors.md", () => {
  it("every page ends with the table", async () => {
    const pages: Array<ReadonlyArray<string>> = []
    const visit = (node: CommandShape, path: ReadonlyArray<string>) => {
      pages.push(path)
      for (const c of node.children) visit(c, [...path, c.name])
    }
    visit(TREE, [])
    const endOf = (page: string) => page.slice(page.lastIndexOf("\nExit codes:\n") + 1)
    const expected = `Exit codes:\n${EXIT_CODE_TABLE.map(([code, meaning]) => `  ${code.padEnd(5)}  ${meaning}`).join("\n")}\n`
    for (const path of pages) assert.strictEqual(endOf(helpText(CTX, path)), expected, path.join(" "))
    const built = await Promise.all([[], ["status"], ["work", "prune"], ["memory", "add"]].map((p) => cli([...p, "--help"])))
    for (const r of built) {
      assert.strictEqual(r.code, 0, r.stderr)
      assert.strictEqual(endOf(r.stdout), expected)
    }
  })

  it("docs/errors.md's table lists the same codes, in the same order", () => {
    const page = Fs.readFileSync(ERRORS_PAGE, "utf8")
    const tour = page.slice(page.indexOf("## Exit codes"))
    const rows = [...tour.slice(tour.indexOf("| exit | meaning |")).matchAll(/^\| (\S+) \|/gm)].map((m) => m[1]!)
    const codes = rows.slice(1, rows.indexOf("other") + 1)
    assert.deepStrictEqual(codes, EXIT_CODE_TABLE.map(([code]) => code))
  })
})
