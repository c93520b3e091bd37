import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { articleFor, withArticle } from "../../src/domain/Article.js"
import { aFileType } from "../../src/domain/FileTypeWords.js"
import { chooseTier, jsonValueViolation, type TierPurpose } from "../../src/domain/Tiers.js"
import { kindOfValue } from "../../src/domain/Values.js"

/** Every word the library's messages put an article before, with the article a person says. */
const SAID: ReadonlyArray<readonly [string, "a" | "an"]> = [
  // File types in words (FileTypeWords)
  ["regular file", "a"], ["directory", "a"], ["symlink", "a"], ["special file (socket, FIFO or device)", "a"],
  // typeof
  ["undefined", "an"], ["object", "an"], ["boolean", "a"], ["number", "a"], ["string", "a"], ["bigint", "a"], ["symbol", "a"], ["function", "a"],
  // Tier purposes
  ["index", "an"], ["database", "a"], ["archive", "an"], ["export", "an"], ["audit-log", "an"], ["debug-log", "a"], ["other", "an"],
  // Config formats, git object types, constructors
  ["INI", "an"], ["env", "an"], ["JSON", "a"], ["JSONC", "a"], ["JSON5", "a"], ["YAML", "a"], ["TOML", "a"],
  ["blob", "a"], ["tree", "a"], ["commit", "a"], ["tag", "a"],
  ["Error", "an"], ["Map", "a"], ["Set", "a"], ["Date", "a"], ["Uint8Array", "a"], ["Int8Array", "an"], ["ArrayBuffer", "an"], ["Object", "an"], ["RegExp", "a"],
  // The exceptions the rule knows
  ["unit", "a"], ["unique", "a"], ["unix", "a"], ["user", "a"], ["usual", "a"], ["utility", "a"], ["UTF-8", "a"], ["URL", "a"], ["UUID", "a"],
  ["uninitialized", "an"], ["unowned", "an"], ["unused", "an"], ["unreadable", "an"], ["update", "an"], ["urgent", "an"],
  ["one-off", "a"], ["European", "a"], ["hour", "an"], ["honest", "an"], ["house", "a"],
  ["8", "an"], ["80", "an"], ["11", "an"], ["18", "an"], ["11000", "an"], ["110", "a"], ["1", "a"], ["7", "a"]
]

describe("Article: the one rule for 'a' and 'an'", () => {
  it("every word the messages use gets the article it is said with", () => {
    for (const [word, article] of SAID) {
      assert.strictEqual(articleFor(word), article, word)
      assert.strictEqual(withArticle(word), `${article} ${word}`)
    }
  })

  it.prop("a word is kept as it is after its article; a plain consonant takes 'a', a plain a/i/o 'an'", [
    fc.tuple(fc.constantFrom(..."bcdfgjklmnpqrstvwxyzaio"), fc.stringMatching(/^[a-z]{0,8}$/))
  ], ([[first, rest]]) => {
    const word = first + rest
    const said = withArticle(word)
    assert.isTrue(said.endsWith(` ${word}`))
    const expected = "aio".includes(first) && !/^one\b/.test(word) ? "an" : "a"
    assert.strictEqual(articleFor(word), expected, word)
  })

  it("the messages built on it: file types, value kinds, tier reasons, JSON violations", () => {
    assert.strictEqual(aFileType("File"), "a regular file")
    assert.strictEqual(aFileType("Other"), "a special file (socket, FIFO or device)")
    assert.strictEqual(kindOfValue(undefined), "undefined")
    assert.strictEqual(kindOfValue(null), "null")
    assert.strictEqual(kindOfValue({}), "an object")
    assert.strictEqual(kindOfValue(5), "a number")
    assert.strictEqual(jsonValueViolation({ x: undefined }), "value.x is undefined, which JSON cannot hold")
    assert.strictEqual(jsonValueViolation({ x: new Error("e") }), "value.x is an Error, not a plain object")
    for (const purpose of ["index", "database"] as const satisfies ReadonlyArray<TierPurpose>) {
      for (const facts of [{ rebuildable: true, reloadSourceExists: true }, { rebuildable: true, reloadSourceExists: false }, { rebuildable: false }]) {
        const reason = chooseTier({ purpose, ...facts }).reason
        assert.isTrue(reason.startsWith(`${articleFor(purpose)} ${purpose} `), reason)
        assert.notInclude(reason, "a index")
      }
    }
  })
})
