/**
 * A diff before the first snapshot is a read: it makes no repository (the dashboard's `--read-only` mode and
 * `config diff` on a new machine), and it shows what git shows once the repository exists: every file the first
 * snapshot would record is new, text or binary, empty, without its last newline, with CR, bytes that are not UTF-8,
 * names git quotes; real git is the reference.
 */
import * as fs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "effect/FastCheck"
import { rawGit, setup } from "./configHistorySupport.js"

const content = fc.array(
  fc.oneof(fc.constantFrom("a", "b", " ", "\t", "\r", "\n", "\n", "é", "[", "\u0000"), fc.constant("\u00ff")),
  { maxLength: 30 }
).map((parts) => {
  // "\u00ff" stands for the byte 0xff (not UTF-8); the rest is UTF-8.
  const chunks = parts.map((p) => (p === "\u00ff" ? Buffer.from([0xff]) : Buffer.from(p, "utf8")))
  return Buffer.concat(chunks)
})

const fileName = fc.constantFrom("notes.txt", "a b.txt", "t\tb.txt", "q\"x.txt", "z.txt", "é.txt", "0.txt", "n\nl.txt", "l\u2028s.txt", "c\rr.txt")

describe("config diff before the first snapshot", () => {
  it.effect.prop("makes no repository, and equals git's diff once the repository exists", [
    fc.uniqueArray(fc.tuple(fileName, content), { minLength: 0, maxLength: 5, selector: ([n]) => n }),
    fc.option(content, { nil: undefined })
  ], ([files, agentNotes]) =>
    Effect.scoped(Effect.gen(function*() {
      const fx = yield* setup()
      fs.mkdirSync(`${fx.web}/e/config`, { recursive: true })
      for (const [name, bytes] of files) fs.writeFileSync(`${fx.web}/e/config/${name}`, bytes)
      if (agentNotes !== undefined) fs.writeFileSync(`${fx.agent}/settings.json`, `{"n":${JSON.stringify(agentNotes.toString("utf8"))}}`)
      const before = yield* fx.history.diff()
      assert.isFalse(fs.existsSync(fx.history.dir), "the diff made the history directory")
      fs.mkdirSync(fx.history.dir, { recursive: true })
      rawGit(fx.history.dir, ["init", "-q"])
      const viaGit = yield* fx.history.diff()
      assert.deepStrictEqual(before, viaGit)
    })), { fastCheck: { numRuns: 30 } })

  it.effect("an example: files of both roots, in git's order, and nothing written", () =>
    Effect.scoped(Effect.gen(function*() {
      const fx = yield* setup()
      fx.write("agent/settings.json", "{\"theme\":\"dark\"}\n")
      fx.write("web/e/config/b.txt", "one\ntwo")
      fx.write("web/e/config/a.bin", "\u0000x")
      const { files, patch } = yield* fx.history.diff()
      assert.deepStrictEqual(files, ["settings.json", "e/config/a.bin", "e/config/b.txt"])
      assert.include(patch, "diff --git a/settings.json b/settings.json\nnew file mode 100644\nindex 0000000..")
      assert.include(patch, "--- /dev/null\n+++ b/settings.json\n@@ -0,0 +1 @@\n+{\"theme\":\"dark\"}\n")
      assert.include(patch, "Binary files /dev/null and b/e/config/a.bin differ\n")
      assert.include(patch, "@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of file\n")
      assert.isFalse(fs.existsSync(fx.history.dir))
      assert.deepStrictEqual((yield* fx.history.status()).head, null)
      assert.isFalse(fs.existsSync(fx.history.dir))
    })))
})
