/** The directories a config write goes through below its managed root, and the judgement of each (pure). */
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { chainComponentViolation, dirsBelowRoot } from "../../src/domain/PathChain.js"

const part = fc.stringMatching(/^[a-z0-9._-]{1,8}$/).filter((s) => s !== "." && s !== "..")
const root = fc.array(part, { minLength: 1, maxLength: 3 }).map((p) => "/" + p.join("/"))

describe("PathChain", () => {
  it.prop("every directory from below the root down to the file's parent, outermost first, each one level deeper", [root, fc.array(part, { minLength: 1, maxLength: 5 })], ([r, rel]) => {
    const dirs = dirsBelowRoot(r, NodePath.join(r, ...rel))!
    assert.lengthOf(dirs, rel.length - 1)
    dirs.forEach((d, i) => assert.strictEqual(d, NodePath.join(r, ...rel.slice(0, i + 1))))
    for (const d of dirs) assert.isTrue(d.startsWith(r + "/"), "never the root itself nor above it")
  }, { fastCheck: { numRuns: 200 } })

  it("a path not below the root has no chain (the root itself, a sibling, a parent, `..` escapes)", () => {
    assert.isUndefined(dirsBelowRoot("/a/root", "/a/root"))
    assert.isUndefined(dirsBelowRoot("/a/root", "/a/rootx/f"))
    assert.isUndefined(dirsBelowRoot("/a/root", "/a/f"))
    assert.isUndefined(dirsBelowRoot("/a/root", "/a/root/../other/f"))
    assert.deepStrictEqual(dirsBelowRoot("/a/root", "/a/root/f"), [])
    assert.deepStrictEqual(dirsBelowRoot("/a/root", "/a/root/..x/f"), ["/a/root/..x"], "a name starting with .. is a child")
  })

  it("only a real directory may be gone through", () => {
    assert.isNull(chainComponentViolation("Directory"))
    assert.strictEqual(chainComponentViolation("SymbolicLink"), "a symlink on the way (never written through)")
    assert.strictEqual(chainComponentViolation("File"), "a regular file on the way (never written through)")
    assert.include(chainComponentViolation("Other")!, "special file")
  })
})
