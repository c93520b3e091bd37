import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { findTierOverlap, type ResolvedLocation, resolvedWithin } from "../../src/domain/TierIdentity.js"

const id = (ino: number, dev = 1) => ({ dev, ino })
/** A location from inode numbers nearest first (the last is "/") and missing names. */
const at = (inos: ReadonlyArray<number>, missing: ReadonlyArray<string> = []): ResolvedLocation => ({ chain: inos.map((i) => id(i)), missing })

describe("TierIdentity (TD5)", () => {
  it("an existing directory contains whatever resolves through it", () => {
    const state = at([10, 2, 1])
    assert.isTrue(resolvedWithin(state, state))
    assert.isTrue(resolvedWithin(at([11, 10, 2, 1]), state), "state/sub")
    assert.isTrue(resolvedWithin(at([10, 2, 1], ["cache"]), state), "state/cache, not made yet")
    assert.isFalse(resolvedWithin(at([20, 2, 1]), state), "a sibling")
    assert.isFalse(resolvedWithin(state, at([11, 10, 2, 1])), "state is not inside its child")
    assert.isFalse(resolvedWithin(at([10, 2, 1]), { chain: [id(10, 2), id(1, 2)], missing: [] }), "same inode on another device")
  })

  it("a missing directory contains only paths that go through its missing names", () => {
    const cache = at([2, 1], ["cache"])
    assert.isTrue(resolvedWithin(at([2, 1], ["cache", "x"]), cache))
    assert.isTrue(resolvedWithin(at([2, 1], ["cache"]), cache))
    assert.isFalse(resolvedWithin(at([2, 1], ["cachex"]), cache))
    assert.isFalse(resolvedWithin(at([2, 1]), cache), "its existing parent is not inside it")
    assert.isFalse(resolvedWithin(at([5, 2, 1], ["cache"]), cache), "below another existing child")
  })

  it("findTierOverlap refuses cache overlaps and config = state, allows state inside config", () => {
    const tier = (path: string, location: ResolvedLocation) => ({ path, location })
    const config = tier("/d/config", at([30, 2, 1]))
    const state = tier("/d/state", at([10, 2, 1]))
    assert.isNull(findTierOverlap({ config, state, cache: tier("/d/cache", at([2, 1], ["cache"])) }))
    assert.deepInclude(findTierOverlap({ config, state, cache: tier("/d/cache", at([10, 2, 1])) }), { tier: "cache", relation: "same", otherTier: "state" })
    assert.deepInclude(findTierOverlap({ config, state, cache: tier("/x/c", at([10, 2, 1], ["c"])) }), { relation: "inside", otherTier: "state" })
    assert.deepInclude(findTierOverlap({ config, state, cache: tier("/d", at([2, 1])) }), { relation: "contains", otherTier: "config" })
    assert.deepInclude(findTierOverlap({ config, state: tier("/d/state", at([30, 2, 1])), cache: tier("/c", at([1], ["c"])) }), { tier: "state", relation: "same", otherTier: "config" })
    assert.isNull(findTierOverlap({ config, state: tier("/d/config/state", at([31, 30, 2, 1])), cache: tier("/c", at([1], ["c"])) }), "old-host fallback")
  })

  // A consistent world: a random tree of directories (node k's parent is an earlier node, 0 is "/"), and
  // locations as a node plus names that do not exist below it. The oracle compares full paths.
  const worldArb = fc.array(fc.nat(), { minLength: 1, maxLength: 8 }).map((ps) => ps.map((p, k) => (k === 0 ? 0 : p % k)))
  const pointArb = fc.record({ node: fc.nat(), missing: fc.array(fc.constantFrom("a", "b"), { maxLength: 2 }) })

  it.prop("within agrees with path containment on a consistent tree", [worldArb, pointArb, pointArb], ([parents, p, q]) => {
    const ancestors = (n: number): Array<number> => (n === 0 ? [0] : [n, ...ancestors(parents[n]!)])
    const locate = (pt: { node: number; missing: ReadonlyArray<string> }): ResolvedLocation => ({
      chain: ancestors(pt.node % parents.length).map((k) => id(k + 1)),
      missing: pt.missing
    })
    const fullPath = (pt: { node: number; missing: ReadonlyArray<string> }) =>
      [...ancestors(pt.node % parents.length).reverse().map(String), ...pt.missing]
    const x = fullPath(p)
    const y = fullPath(q)
    const oracle = y.length <= x.length && y.every((name, i) => x[i] === name)
    assert.strictEqual(resolvedWithin(locate(p), locate(q)), oracle, `${x.join("/")} within ${y.join("/")}`)
  }, { fastCheck: { numRuns: 1000 } })
})
