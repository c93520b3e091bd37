import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { generateRunId, parseGeneratedRunId, RUN_ID_MAX_MS } from "../../src/domain/RunId.js"
import { isSegment } from "../../src/domain/Segment.js"

const U32_MAX = 2 ** 32 - 1
const nowArb = fc.integer({ min: 0, max: RUN_ID_MAX_MS })
const u32Arb = fc.integer({ min: 0, max: U32_MAX })

describe("generateRunId", () => {
  it("has the documented fixed-width form", () => {
    const id = generateRunId(Date.UTC(2026, 10, 30, 12, 54, 26, 123), 0x1a2b3c4d, 7)
    assert.strictEqual(id, "20261130t125426123z-00000007-1a2b3c4d")
    assert.strictEqual(generateRunId(0, 0, 0), "19700101t000000000z-00000000-00000000")
    assert.strictEqual(generateRunId(RUN_ID_MAX_MS, U32_MAX, U32_MAX), "99991231t235959999z-ffffffff-ffffffff")
  })

  it("clamps out-of-range inputs so the result is still a valid, ordered id", () => {
    assert.strictEqual(generateRunId(-5, -1, -1), generateRunId(0, 0, 0))
    assert.strictEqual(generateRunId(RUN_ID_MAX_MS + 1, 2 ** 40, 2 ** 40), generateRunId(RUN_ID_MAX_MS, U32_MAX, U32_MAX))
    assert.isTrue(isSegment(generateRunId(NaN, NaN, Infinity)))
  })

  it.prop("every generated id is a valid segment of 37 characters", [fc.double(), fc.double(), fc.double()], ([now, r, s]) => {
    const id = generateRunId(now, r, s)
    assert.isTrue(isSegment(id), id)
    assert.strictEqual(id.length, 37)
  })

  it.prop(
    "ids sort in (nowMs, sequence) order",
    [nowArb, u32Arb, u32Arb, nowArb, u32Arb, u32Arb],
    ([t1, s1, r1, t2, s2, r2]) => {
      const a = generateRunId(t1, r1, s1)
      const b = generateRunId(t2, r2, s2)
      const byCreation = t1 - t2 || s1 - s2
      if (byCreation < 0) assert.isTrue(a < b, `${a} < ${b}`)
      if (byCreation > 0) assert.isTrue(a > b, `${a} > ${b}`)
      if (byCreation === 0) assert.strictEqual(a < b, r1 < r2)
    }
  )

  it.prop("parseGeneratedRunId inverts generateRunId", [nowArb, u32Arb, u32Arb], ([now, random, sequence]) => {
    assert.deepStrictEqual(parseGeneratedRunId(generateRunId(now, random, sequence)), { createdAt: now, random, sequence })
  })

  it("parseGeneratedRunId refuses named runs and impossible dates", () => {
    assert.isUndefined(parseGeneratedRunId("nightly"))
    assert.isUndefined(parseGeneratedRunId("20261330t125426123z-00000007-1a2b3c4d"))
    assert.isUndefined(parseGeneratedRunId("20260230t125426123z-00000007-1a2b3c4d"))
    assert.isUndefined(parseGeneratedRunId("20261130T125426123Z-00000007-1a2b3c4d"))
  })
})
