import { assert, describe, it } from "@effect/vitest"
import { inventoryEntriesStopped } from "../../src/domain/StoppedBy.js"

describe("inventoryEntriesStopped", () => {
  it("says what each size is: lower bounds, not measured, or some of each", () => {
    const words = (sizes: number, notMeasured: number) => inventoryEntriesStopped(100, sizes, notMeasured).message.split(": ")[1]
    assert.strictEqual(words(1, 0), "1 size is a lower bound; raise it (--max-entries)")
    assert.strictEqual(words(3, 0), "3 sizes are lower bounds; raise it (--max-entries)")
    assert.strictEqual(words(1, 1), "1 size is not measured; raise it (--max-entries)")
    assert.strictEqual(words(3, 3), "3 sizes are not measured; raise it (--max-entries)")
    assert.strictEqual(words(3, 2), "3 sizes not exact (2 not measured, the other a lower bound); raise it (--max-entries)")
    assert.strictEqual(words(5, 2), "5 sizes not exact (2 not measured, the rest lower bounds); raise it (--max-entries)")
    assert.strictEqual(inventoryEntriesStopped(100, 5, 2).left, 5)
  })
})
