/**
 * The one rule for reading a command line (argv.ts), in-process against the real command tree: every verb and
 * every flag it takes, read from the tree itself (a new verb or flag is covered without being listed here).
 * test/cli/commandLine.test.ts runs the same rule through the built CLI.
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { programShape, validationMessage } from "../../src/cli/app.js"
import { type CommandShape, looksLikeFlag, readCommandLine, splitArgv, type SplitArgv } from "../../src/cli/argv.js"
import { makeContext } from "../../src/cli/context.js"
import { ExitStatus } from "../../src/cli/exit.js"
import { directRoute } from "../../src/cli/route.js"
import { editDistance } from "../../src/cli/suggest.js"

const TREE = programShape(makeContext({ agentDir: undefined, noColor: true }, new ExitStatus(), undefined))

const split = (argv: ReadonlyArray<string>): SplitArgv => {
  const r = splitArgv(argv)
  if (!r.ok) throw new Error(r.message)
  return r.value
}
const read = (argv: ReadonlyArray<string>) => readCommandLine(split(argv), TREE)
/** The usage error the command line is, by either step (splitArgv, then the tree). */
const error = (argv: ReadonlyArray<string>): string => {
  const s = splitArgv(argv)
  const r = s.ok ? readCommandLine(s.value, TREE) : s
  assert.isFalse(r.ok, argv.join(" "))
  return r.ok ? "" : r.message
}
const argvOf = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const r = read(argv)
  if (!r.ok) throw new Error(`${argv.join(" ")}: ${r.message}`)
  return r.value.argv
}

/** Every verb (a command without subcommands) with its path. */
const verbs: ReadonlyArray<{ readonly path: ReadonlyArray<string>; readonly node: CommandShape }> = (() => {
  const out: Array<{ path: ReadonlyArray<string>; node: CommandShape }> = []
  const visit = (node: CommandShape, path: ReadonlyArray<string>) => {
    if (node.children.length === 0) out.push({ path, node })
    for (const c of node.children) visit(c, [...path, c.name])
  }
  visit(TREE, [])
  return out
})()

/** Data for a verb's required arguments (after `--`), so its flags can be tried alone. */
const requiredArgs = (node: CommandShape): ReadonlyArray<string> => Array.from({ length: node.args.reduce((n, a) => n + a.min, 0) }, (_, i) => `a${i}/b${i}`)

const everyFlag = verbs.flatMap(({ path, node }) =>
  node.flags.flatMap((flag) => flag.names.filter((n) => n.startsWith("--")).map((name) => ({ path, node, flag, name }))))

/** One edit of a flag's name (a letter dropped, added, changed, or two swapped), never a valid name of that verb. */
const nearMiss = fc.constantFrom(...everyFlag).chain((f) => {
  const bare = f.name.slice(2)
  const letter = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz-".split(""))
  const at = fc.integer({ min: 0, max: bare.length - 1 })
  const edited = fc.oneof(
    at.map((i) => bare.slice(0, i) + bare.slice(i + 1)),
    fc.tuple(fc.integer({ min: 0, max: bare.length }), letter).map(([i, c]) => bare.slice(0, i) + c + bare.slice(i)),
    fc.tuple(at, letter).map(([i, c]) => bare.slice(0, i) + c + bare.slice(i + 1)),
    fc.integer({ min: 0, max: bare.length - 2 }).map((i) => bare.slice(0, i) + bare[i + 1] + bare[i] + bare.slice(i + 2))
  )
  return edited.map((e) => ({ ...f, typed: `--${e}` }))
}).filter(({ node, typed }) =>
  typed.length > 2 && looksLikeFlag(typed) && !typed.includes("=") && !node.flags.some((g) => g.names.includes(typed)) &&
  !["--help", "--agent-dir", "--no-color"].includes(typed))

/** Every flag of every verb that takes a value, by each of its names (`--message`, `-m`). */
const everyValuedName = verbs.flatMap(({ path, node }) =>
  node.flags.filter((f) => f.placeholder !== undefined).flatMap((flag) => flag.names.map((name) => ({ path, node, name }))))

/** A token that looks like a flag: a flag of the tree, a global one, a typo, a short letter, a negative number. */
const flagLike = fc.oneof(
  fc.constantFrom(...new Set(everyFlag.map((f) => f.name)), "-h", "--help", "-v", "--version", "--agent-dir", "--no-color", "-x", "-j", "-5", "-1", "--bogus"),
  fc.string({ minLength: 1, maxLength: 6 }).map((t) => `-${t}`).filter(looksLikeFlag)
)

/** Such a token that is neither help (which asks for a page) nor a global flag (taken out first). */
const commandFlagLike = flagLike.filter((t) => !["-h", "--help"].includes(t) && !/^--(agent-dir|no-color)(=|$)/.test(t))

describe("cli/argv: splitting", () => {
  it("global flags are taken out wherever they appear; --json before -- asks for JSON errors", () => {
    assert.deepStrictEqual(split(["--agent-dir", "/a", "status", "--no-color", "--json"]), {
      globals: { agentDir: "/a", noColor: true, json: true },
      args: ["status", "--json"],
      afterDashes: undefined
    })
    assert.deepStrictEqual(split(["work", "ls", "--agent-dir=/b"]).globals, { agentDir: "/b", noColor: false, json: false })
    assert.isFalse(split(["memory", "add", "--", "--json"]).globals.json)
  })

  it("what follows the first -- is split off untouched, flags and all", () => {
    const s = split(["work", "run", "a/b", "--delete", "--", "sh", "-c", "x", "--agent-dir", "--", "--json"])
    assert.deepStrictEqual(s.args, ["work", "run", "a/b", "--delete"])
    assert.deepStrictEqual(s.afterDashes, ["sh", "-c", "x", "--agent-dir", "--", "--json"])
    assert.deepStrictEqual(s.globals, { agentDir: undefined, noColor: false, json: false })
  })

  it.prop("whatever follows '--' never changes the globals or the parsed args", [fc.array(fc.string(), { maxLength: 6 })], ([tail]) => {
    const s = split(["--no-color", "work", "run", "a/b", "--", ...tail])
    assert.deepStrictEqual(s.args, ["work", "run", "a/b"])
    assert.deepStrictEqual(s.afterDashes, tail)
    assert.deepStrictEqual(s.globals, { agentDir: undefined, noColor: true, json: false })
  })

  it("a global flag given twice before -- is a usage error naming it; after --, it is the command's", () => {
    for (const argv of [
      ["--agent-dir", "a1", "memory", "add", "hello", "--agent-dir", "a2"],
      ["--agent-dir=a1", "status", "--agent-dir=a1"],
      ["--agent-dir", "a5", "work", "run", "tools/x", "--agent-dir", "a6", "--", "true"]
    ]) assert.strictEqual(error(argv), "--agent-dir is given twice (see pi-storage --help)", argv.join(" "))
    assert.strictEqual(error(["--no-color", "status", "--no-color"]), "--no-color is given twice (see pi-storage --help)")
    const s = split(["--agent-dir", "a5", "--no-color", "work", "run", "tools/x", "--", "sh", "--agent-dir", "a6", "--no-color"])
    assert.deepStrictEqual(s.globals, { agentDir: "a5", noColor: true, json: false })
    assert.deepStrictEqual(s.afterDashes, ["sh", "--agent-dir", "a6", "--no-color"])
  })

  it.prop("--agent-dir never takes a token that looks like a flag as its value; --agent-dir=VALUE takes any", [flagLike], ([token]) => {
    const message = error(["memory", "add", "hello", "--agent-dir", token])
    assert.strictEqual(message, `--agent-dir needs a value: the agent directory; "${token}" is a flag (a value that starts with "-" is given as --agent-dir=${token})`)
    assert.strictEqual(split(["memory", "add", "hello", `--agent-dir=${token}`]).globals.agentDir, token)
  })

  it("what looks like a flag: -x, --x…, -5; not -, --, or a Markdown item '- x'", () => {
    for (const t of ["-x", "--json", "--json-x", "-5", "---", "-m=x"]) assert.isTrue(looksLikeFlag(t), t)
    for (const t of ["-", "--", "- x", "x", "", "a-b", "-\tx"]) assert.isFalse(looksLikeFlag(t), t)
  })
})

describe("cli/argv: one rule for every verb and flag (read from the tree)", () => {
  it("the tree has the verbs and flags this file reasons about", () => {
    assert.isAbove(verbs.length, 15)
    assert.isAbove(everyFlag.length, 30)
    assert.includeMembers(verbs.map((v) => v.path.join(" ")), ["status", "work prune", "memory add", "backup forget", "config snapshot"])
  })

  it.prop("a near miss of any verb's flag is a usage error naming it and suggesting the flag, never data", [nearMiss], ([{ path, node, name, typed }]) => {
    for (const argv of [[...path, typed, ...requiredArgs(node)], [...path, ...requiredArgs(node), typed]]) {
      const message = error(argv)
      assert.include(message, `unknown flag ${typed} for ${path.join(" ")}`, argv.join(" "))
      assert.match(message, /\(did you mean [^)]*\?\)$/, argv.join(" "))
      assert.include(message.slice(message.indexOf("did you mean")).split(/[ ,?]/), name, argv.join(" "))
    }
  }, { fastCheck: { numRuns: 400 } })

  it.prop("any token after -- is data: the verb's argument, however it looks", [
    fc.constantFrom(...verbs.filter((v) => v.node.args.some((a) => a.max > 0) && v.path.join(" ") !== "work run")),
    fc.oneof(fc.string(), fc.constantFrom("--json", "--help", "-h", "--version", "--wizard", "--", "--agent-dir", "--bogus", "-m"))
  ], ([{ path, node }, token]) => {
    const required = requiredArgs(node)
    const data = required.length > 0 ? [...required.slice(0, -1), token] : [token]
    assert.deepStrictEqual(argvOf([...path, "--", ...data]), [...path, "--", ...data])
  }, { fastCheck: { numRuns: 300 } })

  it.prop("work run: what follows -- is its command, exactly", [fc.array(fc.string(), { minLength: 1, maxLength: 5 })], ([command]) => {
    const r = read(["work", "run", "a/b", "--delete", "--", ...command])
    assert.isTrue(r.ok)
    if (r.ok) {
      assert.deepStrictEqual(r.value.command, command)
      assert.deepStrictEqual(r.value.argv, ["work", "run", "--delete", "--", "a/b"])
    }
  })

  it("a flag is a flag before or after the arguments; its value by a space or =", () => {
    const expected = ["memory", "add", "--budget", "8KiB", "--", "- z"]
    assert.deepStrictEqual(argvOf(["memory", "add", "- z", "--budget", "8KiB"]), expected)
    assert.deepStrictEqual(argvOf(["memory", "add", "--budget", "8KiB", "- z"]), expected)
    assert.deepStrictEqual(argvOf(["memory", "add", "--budget=8KiB", "- z"]), expected)
    assert.deepStrictEqual(argvOf(["memory", "replace", "- z", "- y", "--json"]), ["memory", "replace", "--json", "--", "- z", "- y"])
    assert.deepStrictEqual(argvOf(["--json", "status"]), ["status", "--json"])
  })

  it("the usage errors name what was wrong", () => {
    assert.strictEqual(error(["memory", "add", "--json-x"]), "unknown flag --json-x for memory add (did you mean --json?)")
    assert.strictEqual(error(["memory", "add", "--bogus", "- x"]), "unknown flag --bogus for memory add (see pi-storage memory add --help)")
    assert.strictEqual(error(["status", "--jsn"]), "unknown flag --jsn for status (did you mean --json?)")
    assert.strictEqual(error(["stauts"]), "unknown command \"stauts\" (did you mean status?)")
    assert.strictEqual(error(["ls"]), "unknown command \"ls\" (did you mean work ls?)")
    assert.strictEqual(error(["work", "lss"]), "unknown command \"lss\" for work (did you mean ls?)")
    assert.strictEqual(error(["status", "--json", "--json"]), "--json is given twice (see pi-storage status --help)")
    assert.strictEqual(error(["status", "--json=yes"]), "--json takes no value (got \"yes\")")
    assert.strictEqual(error(["status", "x"]), "status takes no arguments, got \"x\" (see pi-storage status --help)")
    assert.strictEqual(error(["memory", "add"]), "memory add needs TEXT (see pi-storage memory add --help)")
    assert.strictEqual(error(["memory", "add", "- a", "- b"]), "unexpected argument \"- b\" (see pi-storage memory add --help)")
    assert.strictEqual(error(["work", "prune", "--wizard"]), "unknown flag --wizard for work prune (see pi-storage work prune --help)")
    assert.strictEqual(error(["work", "run", "tools/bash", "make", "report"]), "put the command after '--': pi-storage work run tools/bash -- make report")
    assert.strictEqual(error(["-h", "-h"]), "-h is given twice (see pi-storage --help)")
    assert.strictEqual(error(["status", "--help", "-h"]), "-h is given twice (see pi-storage status --help)")
  })

  it("--version is the program's own flag: a typo beside it is the one named, a near miss of it is suggested", () => {
    assert.strictEqual(error(["--version", "--jsn"]), "unknown flag --jsn for pi-storage (see pi-storage --help)")
    assert.strictEqual(error(["--versoin"]), "unknown flag --versoin for pi-storage (did you mean --version?)")
    assert.strictEqual(error(["-v", "--version"]), "--version is given twice (see pi-storage --help)")
    assert.strictEqual(error(["status", "--version"]), "unknown flag --version for status (see pi-storage status --help)")
    const r = readCommandLine({ globals: { agentDir: undefined, noColor: false }, args: ["-v"], afterDashes: [] }, TREE)
    assert.isTrue(r.ok && r.value.version && r.value.path.length === 0)
    assert.isTrue((r => r.ok && !r.value.version)(read(["status"])))
  })

  it.prop("a flag that takes a value never takes a token that looks like a flag: it needs a value, given with = if it starts with -", [
    fc.constantFrom(...everyValuedName),
    commandFlagLike
  ], ([{ path, node, name }, token]) => {
    const required = requiredArgs(node)
    const message = error([...path, ...required, name, token])
    assert.isTrue(message.startsWith(`${name} needs a value: `), `${path.join(" ")} ${name} ${token}: ${message}`)
    assert.isTrue(message.endsWith(`; "${token}" is a flag (a value that starts with "-" is given as ${name}=${token})`), message)
    // The form the message names: the token is the value, exactly.
    assert.deepStrictEqual(argvOf([...path, ...required, `${name}=${token}`]), [...path, name, token, ...(required.length > 0 ? ["--", ...required] : [])])
  }, { fastCheck: { numRuns: 400 } })

  it("a flag that takes a value and is given none names its placeholder and example", () => {
    assert.include(error(["--agent-dir"]), "--agent-dir needs a value")
    assert.include(error(["status", "--agent-dir", "--json"]), "--agent-dir needs a value")
    assert.include(error(["status", "--agent-dir="]), "--agent-dir needs a value")
    assert.include(error(["work", "prune", "a/b", "--max-age"]), "--max-age needs a value")
    assert.include(error(["backup", "create", "--label", "--json"]), "--label needs a value")
    assert.include(error(["backup", "create", "--label="]), "--label needs a value")
    assert.include(error(["config", "snapshot", "-m", "--json"]), "-m needs a value")
    assert.include(error(["backup", "forget", "--keep-last", "--dry-run"]), "--keep-last needs a value")
    assert.include(error(["backup", "restore", "x", "--extension"]), "--extension needs a value")
    assert.include(error(["work", "prune", "--max-bytes", "--json", "a/b"]), "--max-bytes needs a value")
    assert.include(error(["work", "run", "a/b", "--name", "--", "true"]), "--name needs a value")
    assert.strictEqual(error(["memory", "show", "--budget"]), "--budget needs a value: SIZE, e.g. 8KiB")
  })

  it("--help anywhere before -- names the page of the command words", () => {
    const pages = [
      ["work", "prune", "--help"],
      ["work", "prune", "tools/bash", "-h"],
      ["work", "prune", "--max-age", "--help"],
      ["work", "prune", "--max-age", "3d", "--help", "--max-age", "4d"],
      ["memory", "add", "--help"]
    ]
    for (const argv of pages) {
      const r = read(argv)
      assert.isTrue(r.ok && r.value.help, argv.join(" "))
      if (r.ok) assert.deepStrictEqual(r.value.path, argv[0] === "memory" ? ["memory", "add"] : ["work", "prune"])
    }
    const data = read(["memory", "add", "--", "--help"])
    assert.isTrue(data.ok && !data.value.help)
  })

  it("--help does not hide a typo: an unknown flag or command beside it is the same usage error", () => {
    assert.strictEqual(error(["status", "--help", "--jsn"]), "unknown flag --jsn for status (did you mean --json?)")
    assert.strictEqual(error(["--help", "--bogus"]), "unknown flag --bogus for pi-storage (see pi-storage --help)")
    assert.strictEqual(error(["work", "--bogus", "prune", "--help"]), "unknown flag --bogus for work prune (see pi-storage work prune --help)")
    assert.strictEqual(error(["stauts", "-h"]), "unknown command \"stauts\" (did you mean status?)")
    assert.strictEqual(error(["status", "--json=1", "--help"]), "--json takes no value (got \"1\")")
    // A word more than the command takes, or a command line given to work run without `--`.
    assert.strictEqual(error(["status", "--help=yes"]), "--help takes no value (got \"yes\")")
    assert.strictEqual(error(["status", "extra", "--help"]), "status takes no arguments, got \"extra\" (see pi-storage status --help)")
    assert.strictEqual(error(["config", "diff", "--help", "A", "B", "C"]), "unexpected argument \"C\" (see pi-storage config diff --help)")
    assert.strictEqual(error(["work", "run", "tools/bash", "make", "--help"]), "put the command after '--': pi-storage work run tools/bash -- make")
    // What the page does not need is not asked for: an argument, a command flag's value. (The global
    // `--agent-dir` is read before the command is known: its value is always needed.)
    assert.include(error(["status", "--help", "--agent-dir"]), "--agent-dir needs a value")
    for (const page of [["memory", "add", "--help"], ["work", "prune", "--max-age", "--help"]]) {
      const s = splitArgv(page)
      assert.isTrue(s.ok, page.join(" "))
      if (s.ok) assert.isTrue((r => r.ok && r.value.help)(readCommandLine(s.value, TREE)), page.join(" "))
    }
  })

  it.prop("with --help added, a command line is the page of its command or the usage error it was without it", [nearMiss], ([{ path, node, typed }]) => {
    const argv = [...path, ...requiredArgs(node), typed]
    assert.strictEqual(error([...argv, "--help"]), error(argv))
  }, { fastCheck: { numRuns: 100 } })

  it.prop("the short route takes only what the rule reads as the same command with the same flags", [
    // A view's command, now and then a filter, then items of flags (each view's and the others'), values (good,
    // bad, flag-like, empty), stray words and `--`; global flags before it.
    fc.tuple(
      fc.subarray(["--no-color", "--agent-dir=/a"]),
      fc.constantFrom(["status"], ["doctor"], ["work", "ls"], ["work"], ["ls"]),
      fc.option(fc.constantFrom("tools/bash", "x", "-x"), { nil: undefined }),
      fc.array(
        fc.oneof(
          fc.constantFrom(["--json"], ["--jsn"], ["-h"], ["--"], ["x"], ["--json=1"]),
          fc.tuple(
            fc.constantFrom("--web-data-root", "--max-depth", "--max-scan-entries", "--max-scanned-runs", "--max-entries"),
            fc.constantFrom("3", "0", "07", "-1", "/w", "x", "--json", "", undefined)
          ).map(([flag, value]) => (value === undefined ? [flag] : [flag, value]))
        ),
        { maxLength: 5 }
      )
    ).map(([globals, command, filter, items]) => [...globals, ...command, ...(filter === undefined ? [] : [filter]), ...items.flat()])
  ], ([argv]) => {
    const s = splitArgv(argv)
    if (!s.ok) return
    const route = directRoute(s.value)
    if (route === undefined) return
    const r = readCommandLine(s.value, TREE)
    assert.isTrue(r.ok, argv.join(" "))
    if (r.ok) {
      const path = route.command.split(" ")
      assert.deepStrictEqual([r.value.path, r.value.help], [path, false], argv.join(" "))
      // The rule's argv: the command words, the flags as given, then `--` and the arguments (work ls's filter).
      const filter = route.command === "work ls" ? route.filter : undefined
      const flags = s.value.args.slice(path.length + (filter === undefined ? 0 : 1))
      assert.deepStrictEqual(r.value.argv, [...path, ...flags, ...(filter === undefined ? [] : ["--", filter])], argv.join(" "))
    }
  }, { fastCheck: { numRuns: 2000 } })

  it("edit distance: insert, delete, substitute, swap", () => {
    assert.strictEqual(editDistance("json", "json"), 0)
    assert.strictEqual(editDistance("jsn", "json"), 1)
    assert.strictEqual(editDistance("jsno", "json"), 1)
    assert.strictEqual(editDistance("jason", "json"), 1)
    assert.strictEqual(editDistance("xml", "json"), 4)
  })

  it("a ValidationError (a value our parsers refused) becomes one line without ANSI codes", () => {
    const doc = HelpDoc.blocks([HelpDoc.h1("Oops"), HelpDoc.p("--max-age: expected a duration")])
    assert.strictEqual(validationMessage(ValidationError.invalidValue(doc)), "Oops --max-age: expected a duration")
  })
})
