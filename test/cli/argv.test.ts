import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { programValuedFlags, validationMessage } from "../../src/cli/app.js"
import { flagValueProblem, splitArgv } from "../../src/cli/argv.js"
import { makeContext } from "../../src/cli/context.js"
import { ExitStatus } from "../../src/cli/exit.js"

const VALUED = programValuedFlags(makeContext({ agentDir: undefined, noColor: true }, new ExitStatus(), undefined))

const ok = (argv: ReadonlyArray<string>) => {
  const r = splitArgv(argv)
  if (!r.ok) throw new Error(r.message)
  return r.value
}
/** What the CLI refuses before parsing: splitArgv's globals and `--`, then the tree's valued flags. */
const error = (argv: ReadonlyArray<string>) => {
  const r = splitArgv(argv)
  const message = r.ok ? flagValueProblem(r.value, VALUED) : r.message
  assert.isDefined(message, argv.join(" "))
  return message ?? ""
}

describe("cli/argv", () => {
  it("global flags are taken out wherever they appear", () => {
    assert.deepStrictEqual(ok(["--agent-dir", "/a", "status", "--no-color", "--json"]), {
      globals: { agentDir: "/a", noColor: true },
      args: ["status", "--json"],
      command: undefined
    })
    assert.deepStrictEqual(ok(["work", "ls", "--agent-dir=/b"]).globals, { agentDir: "/b", noColor: false })
  })

  it("the command after -- is split off untouched, flags and all", () => {
    const split = ok(["work", "run", "a/b", "--delete", "--", "sh", "-c", "x", "--agent-dir", "--", "--json"])
    assert.deepStrictEqual(split.args, ["work", "run", "a/b", "--delete"])
    assert.deepStrictEqual(split.command, ["sh", "-c", "x", "--agent-dir", "--", "--json"])
    assert.deepStrictEqual(split.globals, { agentDir: undefined, noColor: false })
  })

  it("a valued flag without a value, or '--' outside work run, is an error naming it", () => {
    assert.include(error(["--agent-dir"]), "--agent-dir needs a value")
    assert.include(error(["status", "--agent-dir", "--json"]), "--agent-dir needs a value")
    assert.include(error(["status", "--agent-dir="]), "--agent-dir needs a value")
    assert.include(error(["work", "prune", "a/b", "--max-age"]), "--max-age needs a value")
    // The memory, config and backup flags too: `--label --json` must not label a snapshot "--json".
    assert.include(error(["backup", "create", "--label", "--json"]), "--label needs a value")
    assert.include(error(["config", "snapshot", "-m", "--json"]), "-m needs a value")
    assert.include(error(["backup", "forget", "--keep-last", "--dry-run"]), "--keep-last needs a value")
    assert.include(error(["backup", "restore", "x", "--extension"]), "--extension needs a value")
    assert.include(error(["work", "prune", "--max-bytes", "--json", "a/b"]), "--max-bytes needs a value")
    assert.include(error(["work", "run", "a/b", "--name", "--", "true"]), "--name needs a value")
    assert.include(error(["status", "--", "x"]), "'--' is only used by 'work run")
  })

  it.prop("whatever follows '--' never changes the globals or the parsed args", [FastCheck.array(FastCheck.string(), { maxLength: 6 })], ([tail]) => {
    const split = ok(["--no-color", "work", "run", "a/b", "--", ...tail])
    assert.deepStrictEqual(split.args, ["work", "run", "a/b"])
    assert.deepStrictEqual(split.command, tail)
    assert.deepStrictEqual(split.globals, { agentDir: undefined, noColor: true })
  })

  it("a ValidationError becomes one line without ANSI codes; a bad command is named", () => {
    const doc = HelpDoc.blocks([HelpDoc.h1("Oops"), HelpDoc.p("Received unknown argument: '--jsn'")])
    const line = validationMessage(ValidationError.invalidValue(doc), ["status", "--jsn"], new Set(["status"]))
    assert.strictEqual(line, "Oops Received unknown argument: '--jsn'")
    const mismatch = ValidationError.commandMismatch(HelpDoc.p("Invalid subcommand for pi-storage"))
    assert.strictEqual(validationMessage(mismatch, ["--json", "bogus"], new Set(["status", "work"])), "unknown command \"bogus\"")
  })
})
