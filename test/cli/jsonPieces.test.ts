/**
 * `--json` documents are written in pieces (jsonPieces.ts); joined, they are exactly the one string
 * `JSON.stringify(value, null, 2)` makes, for any value a command could print: nested objects and arrays,
 * arrays long enough to span several pieces, and the values JSON leaves out or turns into `null`.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { jsonPieces } from "../../src/cli/jsonPieces.js"

const whole = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`
const joined = (value: unknown): string => [...jsonPieces(value)].join("")

/** What JSON writes, leaves out of an object (`undefined`, a function) or writes through `toJSON` (a date). */
const leaf = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant(() => 1) },
  { weight: 1, arbitrary: fc.date({ noInvalidDate: true }) }
)
/** 0 to 700 elements, any length as likely as another: often past one piece (256), and two. */
const longArray = fc.integer({ min: 0, max: 700 }).chain((n) => fc.array(leaf, { minLength: n, maxLength: n, depthIdentifier: "doc" }))
const document = fc.oneof(
  fc.dictionary(fc.string(), fc.oneof(leaf, longArray, fc.constant([]), fc.constant({}))),
  longArray,
  leaf
)

describe("cli/jsonPieces", () => {
  it.prop("the pieces joined are JSON.stringify(value, null, 2) and a newline", [document], ([value]) => {
    assert.strictEqual(joined(value), whole(value))
  }, { fastCheck: { numRuns: 150 } })

  it("a listing of 40,000 runs is cut between runs, a few hundred a piece, and joins to the whole document", () => {
    const runs = Array.from({ length: 40_000 }, (_, i) => ({ runId: `run-${i}`, size: { bytes: i, complete: true }, holders: [] }))
    const list = { agentDir: "/a", runs, unowned: [], truncated: false }
    const pieces = [...jsonPieces(list)]
    assert.isAbove(pieces.length, 100)
    assert.isBelow(Math.max(...pieces.map((p) => p.length)), 100_000)
    assert.strictEqual(pieces.join(""), whole(list))
  })

  it("an empty object, an empty array and a bare value are whole documents", () => {
    for (const value of [{}, [], 0, "x", null, { a: undefined }, [undefined], { runs: [] }]) assert.strictEqual(joined(value), whole(value))
  })

  it("what JSON decides itself stays JSON's: a toJSON's key and its undefined, boxed primitives, class instances", () => {
    class Point {
      constructor(readonly x: number) {}
    }
    const keyed = { toJSON: (key: string) => `key ${key}` }
    for (
      const value of [
        { a: { toJSON: () => undefined }, b: 1 },
        { a: keyed, b: [keyed, 2] },
        new String("ab"),
        new Number(3),
        { boxed: new Boolean(false), point: new Point(1) },
        Object.assign([1, 2], { extra: 1 }),
        { a: undefined, b: () => 1, c: Symbol("s") }
      ]
    ) assert.strictEqual(joined(value), whole(value))
  })
})
