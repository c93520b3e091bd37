/**
 * The dashboard's side-by-side diff (web/diff.ts): one section per file of the diff, under its own name, whatever
 * the names hold; content lines that look like headers stay content.
 */
import { assert, describe, it } from "@effect/vitest"
import { newFilesPatch } from "../../src/domain/ConfigHistory.js"
import { sideBySide } from "../../web/diff.js"

const bytes = (s: string) => new TextEncoder().encode(s)

describe("web/diff: sideBySide", () => {
  it("names each section by the diff's files, in order: a quoted name, a newline, U+2028 never move lines elsewhere", () => {
    const files = [
      { display: "settings.json", bytes: bytes("{\"a\":1}\n") },
      { display: "e/config/a\nb", bytes: bytes("content\nmore\n") },
      { display: "e/config/l\u2028s", bytes: bytes("x\n") },
      { display: "e/config/z", bytes: bytes("-- a/x\n+++ b/y\n") }
    ]
    const sections = sideBySide(newFilesPatch(files), files.map((f) => f.display))
    assert.deepStrictEqual(sections.map((s) => s.path), files.map((f) => f.display))
    const added = (k: number) => sections[k]!.rows.flatMap((r) => ("right" in r && r.right !== null ? [r.right.text] : []))
    assert.deepStrictEqual(added(0), ["{\"a\":1}"])
    assert.deepStrictEqual(added(1), ["content", "more"])
    assert.deepStrictEqual(added(2), ["x"])
    // Lines that start like headers, inside a hunk, are the file's content.
    assert.deepStrictEqual(added(3), ["-- a/x", "+++ b/y"])
  })

  it("a removed line that starts with --- is content, not a header", () => {
    const patch = "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n--- old\n keep\n"
    const [section] = sideBySide(patch, ["x"])
    const removed = section!.rows.flatMap((r) => ("left" in r && r.left !== null && r.kind !== "context" ? [r.left.text] : []))
    assert.deepStrictEqual(removed, ["-- old"])
  })
})
