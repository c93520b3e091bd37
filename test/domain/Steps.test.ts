import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { runSteps, sortSteps, STEP_ITEMS, type Steps } from "../../src/domain/Steps.js"

/** The answer, and how many steps it took. */
const counted = <A>(steps: Steps<A>): { readonly value: A; readonly steps: number } => {
  let count = 1
  for (;;) {
    const next = steps.next()
    if (next.done === true) return { value: next.value, steps: count }
    count++
  }
}

/** Items with few distinct keys (many ties), each knowing its place in the input. */
const keyed = (max: number) => fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: max }).map((keys) => keys.map((key, at) => ({ key, at })))
const byKey = (a: { readonly key: number }, b: { readonly key: number }) => a.key - b.key

describe("sortSteps", () => {
  it("orders as Array.prototype.sort does, ties in input order (stable)", () => {
    fc.assert(
      fc.property(keyed(5 * STEP_ITEMS), (items) => {
        const sorted = runSteps(sortSteps(items, byKey))
        assert.deepStrictEqual(sorted, [...items].sort(byKey))
        assert.deepStrictEqual(items.map((i) => i.at), items.map((_, at) => at), "the input is left as it was")
      }),
      { numRuns: 60 }
    )
  })

  it("takes a step per run of STEP_ITEMS sorted and per STEP_ITEMS merged, never the whole array at once", () => {
    const items = Array.from({ length: 10 * STEP_ITEMS }, (_, at) => ({ key: (at * 7919) % 1000, at }))
    const { steps, value } = counted(sortSteps(items, byKey))
    assert.deepStrictEqual(value, [...items].sort(byKey))
    // 10 runs sorted, then 4 passes of merging (10 → 5 → 3 → 2 → 1 runs), at most every item once a pass.
    assert.isAtLeast(steps, 10 + items.length / STEP_ITEMS)
    assert.isAtMost(steps, 1 + 10 + 4 * (items.length / STEP_ITEMS + 2))
    assert.deepStrictEqual(runSteps(sortSteps([], byKey)), [])
  })
})
