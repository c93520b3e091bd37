/**
 * A diff's file headers name what a person knows, however git wrote them: real git, names of extension config
 * files that git quotes (a tab, a newline, `"`, `\`) or marks (a space, which git ends with a tab), names that
 * hold the header's own separators (` and `, ` b/`), non-ASCII; text and binary. Every header names the display
 * path (`e/config/<name>`), never the repository's `web/` mirror, and each name once, unescaped.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "effect/FastCheck"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { displayPatch, patchHeaderName } from "../../src/domain/ConfigHistory.js"
import { cleanGitEnv, setup } from "./configHistorySupport.js"

/** How git itself quotes a path in a header (`ls-files` with core.quotepath=false, in a scratch repository). */
const rawGitQuoted = (path: string): string => {
  const dir = fs.mkdtempSync(NodePath.join(os.tmpdir(), "git-quote-"))
  try {
    const git = (...args: Array<string>) => spawnSync("git", ["-c", "core.quotepath=false", ...args], { cwd: dir, env: cleanGitEnv(), encoding: "utf8" })
    git("init", "-q")
    const file = NodePath.join(dir, "f")
    fs.writeFileSync(file, "")
    git("update-index", "--add", "--cacheinfo", `100644,e69de29bb2d1d6434b8b29ae775ad8c2e48c5391,${path}`)
    return git("ls-files").stdout.replace(/\n$/, "")
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Every line of a patch is a line of its kind: in a file's header one of git's header lines, in a hunk a
 * content line. A name that broke a header line would leave a piece of itself as a line of neither kind (or
 * one that passes for content: then the hunk's counts would not add up, checked by the caller).
 */
const assertLinesOfTheirKind = (patch: string, what: string) => {
  let inHeader = false
  for (const line of patch.split("\n").slice(0, -1)) {
    if (line.startsWith("diff --git ")) inHeader = true
    else if (line.startsWith("@@")) inHeader = false
    else if (inHeader) assert.match(line, /^(index |--- |\+\+\+ |new file mode |deleted file mode |Binary files )/, `${what}: ${JSON.stringify(line)}`)
    else assert.match(line, /^[-+ \\]/, `${what}: ${JSON.stringify(line)}`)
  }
}

/** Header lines of a patch: between each `diff --git` and its first `@@`. */
const headers = (patch: string): Array<string> => {
  const out: Array<string> = []
  let inHeader = false
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) inHeader = true
    else if (line.startsWith("@@")) inHeader = false
    if (inHeader) out.push(line)
  }
  return out
}

const nameChar = fc.constantFrom("a", "b", " ", "\t", "\n", "\r", "\"", "\\", "é", "/", "-", ".", "\u0001", "\u007f", "\u2028", "a/", " b/", " and ")

/** A file name git can store under `config/` (one component, not `.`/`..`, no NUL), never one the history leaves out. */
const fileName = fc.array(nameChar, { minLength: 1, maxLength: 6 })
  .map((parts) => parts.join("").replace(/\//g, "_"))
  .filter((n) => n !== "." && n !== ".." && !n.startsWith(".") && Buffer.byteLength(n) < 200)

describe("config diff: file headers in display names, however git quoted them", () => {
  it.effect("examples: a space, a tab, a quote, a backslash, a binary file, a content line that looks like a header", () =>
    Effect.scoped(Effect.gen(function*() {
      const fx = yield* setup()
      const names = ["a b.json", "t\tb.json", "q\"x.json", "back\\slash.json", "x and y.json", "é.json"]
      for (const n of names) fx.write(`web/e/config/${n}`, "{\"a\":1}\n")
      fx.write("web/e/config/blob.bin", "\u0000\u0001")
      fx.write("web/e/config/\u2028gone.bin", "\u0000")
      fx.write("web/e/config/notes.txt", "keep\n-- a/web/e/config/x\n")
      yield* fx.history.snapshot({ message: "one" })
      for (const n of names) fx.write(`web/e/config/${n}`, "{\"a\":2}\n")
      fx.write("web/e/config/blob.bin", "\u0000\u0002")
      fx.write("web/e/config/notes.txt", "keep\n")
      fs.rmSync(NodePath.join(fx.root, "web/e/config/\u2028gone.bin"))
      const { files, patch } = yield* fx.history.diff()
      assert.sameMembers([...files], [...names, "blob.bin", "notes.txt", "\u2028gone.bin"].map((n) => `e/config/${n}`))
      // U+2028 is a line terminator to a regular expression's `.`, not to a patch.
      assert.include(patch, "Binary files a/e/config/\u2028gone.bin and /dev/null differ")
      for (const n of names) {
        assert.include(patch, `diff --git a/e/config/${n} b/e/config/${n}\n`, JSON.stringify(n))
        assert.include(patch, `--- a/e/config/${n}\n+++ b/e/config/${n}\n`, JSON.stringify(n))
      }
      assert.include(patch, "Binary files a/e/config/blob.bin and b/e/config/blob.bin differ")
      // The removed line stays as the file held it.
      assert.include(patch, "\n--- a/web/e/config/x\n")
      assert.notMatch(headers(patch).join("\n"), /[ab]\/web\//)
    })))

  it.effect.prop("any name: each header names a/<display> and b/<display>, once, as the name is", [fc.uniqueArray(fileName, { minLength: 1, maxLength: 4 })], ([names]) =>
    Effect.scoped(Effect.gen(function*() {
      const fx = yield* setup()
      for (const n of names) fx.write(`web/e/config/${n}`, "{\"v\":1}\n")
      yield* fx.history.snapshot({ message: "one" })
      for (const n of names) fx.write(`web/e/config/${n}`, "{\"v\":2}\n")
      fx.write("web/e/config/new.json", "{}\n")
      const { files, patch } = yield* fx.history.diff()
      const expected = [...names, "new.json"].map((n) => `e/config/${n}`)
      assert.sameMembers([...files], expected)
      for (const display of expected) {
        const added = display === "e/config/new.json"
        // The name itself; one holding a line break as git quotes it (checked against git's own quoting).
        const [a, b] = [patchHeaderName(`a/${display}`), patchHeaderName(`b/${display}`)]
        if (/[\n\r]/.test(display)) assert.strictEqual(a, rawGitQuoted(`a/${display}`))
        assert.include(patch, `diff --git ${a} ${b}\n`, JSON.stringify(display))
        assert.include(patch, `--- ${added ? "/dev/null" : a}\n+++ ${b}\n`, JSON.stringify(display))
      }
      assert.lengthOf(headers(patch).filter((l) => l.startsWith("diff --git ")), expected.length)
      assertLinesOfTheirKind(patch, JSON.stringify(names))
      // Each file's hunk is its one changed line (the new file's one added line): nothing else passes for content.
      assert.lengthOf(patch.split("\n").filter((l) => l.startsWith("+") && !l.startsWith("+++ ")), expected.length)
    })), { fastCheck: { numRuns: 25 } })

  it.effect("a name with a newline stays quoted: no line of the patch is a piece of a name", () =>
    Effect.scoped(Effect.gen(function*() {
      const fx = yield* setup()
      fx.write("web/e/config/aaa.txt", "normal\n")
      yield* fx.history.snapshot({ message: "one" })
      const evil = "nl\n+fake added line"
      fx.write(`web/e/config/${evil}`, "x\n")
      for (const { patch } of [yield* fx.history.diff()]) {
        assert.include(patch, "diff --git \"a/e/config/nl\\n+fake added line\" \"b/e/config/nl\\n+fake added line\"\n")
        assert.include(patch, "+++ \"b/e/config/nl\\n+fake added line\"\n@@ -0,0 +1 @@\n+x\n")
        assertLinesOfTheirKind(patch, "newline")
        assert.notInclude(patch.split("\n"), "+fake added line")
      }
    })))

  it("a header it cannot read is left as git wrote it", () => {
    for (const line of ["diff --git \"a/agent/x b/agent/x", "diff --git a/agent/x b/agent/y", "--- \"a/agent/\\q\""]) {
      const patch = line.startsWith("---") ? `diff --git a/x b/x\n${line}` : line
      assert.strictEqual(displayPatch(patch), patch)
    }
  })
})
