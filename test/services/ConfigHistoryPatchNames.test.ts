/**
 * A diff's file headers name what a person knows, however git wrote them: real git, names of extension config
 * files that git quotes (a tab, a newline, `"`, `\`) or marks (a space, which git ends with a tab), names that
 * hold the header's own separators (` and `, ` b/`), non-ASCII; text and binary. Every header names the display
 * path (`e/config/<name>`), never the repository's `web/` mirror, and each name once, unescaped.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "effect/FastCheck"
import { displayPatch } from "../../src/domain/ConfigHistory.js"
import { setup } from "./configHistorySupport.js"

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

const nameChar = fc.constantFrom("a", "b", " ", "\t", "\n", "\"", "\\", "é", "/", "-", ".", "\u0001", "\u007f", "a/", " b/", " and ")

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
      fx.write("web/e/config/notes.txt", "keep\n-- a/web/e/config/x\n")
      yield* fx.history.snapshot({ message: "one" })
      for (const n of names) fx.write(`web/e/config/${n}`, "{\"a\":2}\n")
      fx.write("web/e/config/blob.bin", "\u0000\u0002")
      fx.write("web/e/config/notes.txt", "keep\n")
      const { files, patch } = yield* fx.history.diff()
      assert.sameMembers([...files], [...names, "blob.bin", "notes.txt"].map((n) => `e/config/${n}`))
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
        const from = added ? "/dev/null" : `a/${display}`
        assert.include(patch, `diff --git a/${display} b/${display}\n`, JSON.stringify(display))
        assert.include(patch, `--- ${from}\n+++ b/${display}\n`, JSON.stringify(display))
      }
      assert.lengthOf(headers(patch).filter((l) => l.startsWith("diff --git ")), expected.length)
    })), { fastCheck: { numRuns: 25 } })

  it("a header it cannot read is left as git wrote it", () => {
    for (const line of ["diff --git \"a/agent/x b/agent/x", "diff --git a/agent/x b/agent/y", "--- \"a/agent/\\q\""]) {
      const patch = line.startsWith("---") ? `diff --git a/x b/x\n${line}` : line
      assert.strictEqual(displayPatch(patch), patch)
    }
  })
})
