/** A migration plan's paths decoded as untrusted input: one rule, relative, normalised, inside the step's root. */
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { decodePlanPath, pathsNest } from "../../src/domain/PlanPath.js"

/** Strings built from the pieces that make paths dangerous, so the property meets them often. */
const hostilePath = fc.array(
  fc.oneof(
    fc.constantFrom("config", "state", "usage.jsonl", "a b", ".x", "..x", "x..", "C:", "c:"),
    fc.constantFrom("/", "//", "..", ".", "../", "/..", "\0", "\\", "~", "", "\\..\\"),
    fc.string({ maxLength: 4 })
  ),
  { maxLength: 10 }
).map((parts) => parts.join(""))

const ROOT = "/srv/web/data/ext"

describe("decodePlanPath", () => {
  it.prop("a path that decodes is already normal, relative, and joined to its root stays strictly inside it", [fc.oneof(hostilePath, fc.string())], ([path]) => {
    const decoded = decodePlanPath(path)
    if (!decoded.ok) return
    assert.strictEqual(NodePath.posix.normalize(path), path)
    assert.isFalse(NodePath.posix.isAbsolute(path))
    assert.isFalse(NodePath.win32.isAbsolute(path), path)
    const joined = NodePath.posix.join(ROOT, ...decoded.value.segments)
    assert.isTrue(joined.startsWith(`${ROOT}/`), joined)
    assert.strictEqual(NodePath.posix.relative(ROOT, joined), path)
    assert.deepStrictEqual(decoded.value.segments, path.split("/"))
  }, { fastCheck: { numRuns: 3000 } })

  it("refuses each way out of the root, and says why", () => {
    const refused: ReadonlyArray<readonly [string, RegExp]> = [
      ["", /is empty/],
      ["/etc/passwd", /is absolute/],
      ["C:/Users/x", /drive letter/],
      ["config/../../other-ext/state", /"\.\." segment/],
      ["..", /"\.\." segment/],
      ["./config", /"\." segment/],
      ["config//state", /empty segment/],
      ["config/state/", /ends with \//],
      ["config\\..\\..\\x", /backslash/],
      ["config/x\0y", /NUL/],
      ["a".repeat(5000), /longer than/]
    ]
    for (const [path, why] of refused) {
      const decoded = decodePlanPath(path)
      assert.isFalse(decoded.ok, path)
      if (!decoded.ok) assert.match(decoded.why, why, path)
    }
    for (const path of ["config/state/usage.jsonl", "state", "..hidden", "a b/c.d", "x..y"]) assert.isTrue(decodePlanPath(path).ok, path)
  })

  it("two paths nest when one is the other or lies below it, by whole names", () => {
    const p = (s: string) => {
      const d = decodePlanPath(s)
      if (!d.ok) throw new Error(d.why)
      return d.value
    }
    assert.isTrue(pathsNest(p("config/state"), p("config/state/x")))
    assert.isTrue(pathsNest(p("config/state/x"), p("config/state")))
    assert.isTrue(pathsNest(p("a"), p("a")))
    assert.isFalse(pathsNest(p("config/state"), p("config/state2")))
    assert.isFalse(pathsNest(p("config/state"), p("state")))
  })
})
