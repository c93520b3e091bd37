import { assert, describe, it } from "@effect/vitest"
import { countOf } from "../../src/domain/Count.js"

describe("countOf", () => {
  it("says one in the singular and every other count in the plural, irregular plurals as given", () => {
    assert.strictEqual(countOf(1, "entry", "entries"), "1 entry")
    assert.strictEqual(countOf(0, "entry", "entries"), "0 entries")
    assert.strictEqual(countOf(21, "entry", "entries"), "21 entries")
    assert.strictEqual(countOf(1, "row"), "1 row")
    assert.strictEqual(countOf(2, "row"), "2 rows")
  })
})
