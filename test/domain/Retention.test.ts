import { assert, describe, it } from "@effect/vitest"
import { Either, FastCheck as fc, Schema } from "effect"
import {
  clamp,
  DEFAULT_REMOTE_LEASE_TTL_MS,
  DEFAULT_RETENTION,
  OPPORTUNISTIC_PRUNE_INTERVAL_MS,
  RETENTION_FIELDS,
  RetentionInput,
  RetentionPolicy,
  resolvePolicy
} from "../../src/domain/Retention.js"

const limit = fc.integer({ min: 0, max: 2 ** 40 })
const limits = {
  maxAgeMs: limit,
  maxInactiveRuns: limit,
  maxBytes: limit,
  maxScannedRuns: limit,
  maxEntries: limit,
  maxDepth: limit
}
const policyArb: fc.Arbitrary<RetentionPolicy> = fc.record(limits)
const inputArb: fc.Arbitrary<RetentionInput> = fc.record(limits, { requiredKeys: [] })

describe("Retention", () => {
  it("defaults are those of WR9", () => {
    assert.deepStrictEqual(DEFAULT_RETENTION, {
      maxAgeMs: 30 * 24 * 3600 * 1000,
      maxInactiveRuns: 64,
      maxBytes: 512 * 1024 * 1024,
      maxScannedRuns: 10_000,
      maxEntries: 100_000,
      maxDepth: 64
    })
    assert.strictEqual(DEFAULT_REMOTE_LEASE_TTL_MS, 900_000)
    assert.strictEqual(OPPORTUNISTIC_PRUNE_INTERVAL_MS, 3_600_000)
    assert.isTrue(Schema.is(RetentionPolicy)(DEFAULT_RETENTION))
  })

  it("the policy schema refuses negative, fractional, infinite and missing values", () => {
    const decode = Schema.decodeUnknownEither(RetentionPolicy)
    assert.isTrue(Either.isRight(decode(DEFAULT_RETENTION)))
    for (const bad of [-1, 1.5, Infinity, NaN, "10"]) {
      for (const field of RETENTION_FIELDS) {
        assert.isTrue(Either.isLeft(decode({ ...DEFAULT_RETENTION, [field]: bad })), `${field}=${String(bad)}`)
      }
    }
    const { maxBytes: _, ...missing } = DEFAULT_RETENTION
    assert.isTrue(Either.isLeft(decode(missing)))
  })

  it("the input schema accepts any subset and the same per-field rules", () => {
    const decode = Schema.decodeUnknownEither(RetentionInput)
    assert.deepStrictEqual(decode({}), Either.right({}))
    assert.deepStrictEqual(decode({ maxBytes: 10 }), Either.right({ maxBytes: 10 }))
    assert.isTrue(Either.isLeft(decode({ maxDepth: -3 })))
    assert.isTrue(Either.isLeft(decode({ maxAgeMs: Infinity })))
  })

  it("resolvePolicy: given fields override the base, absent or undefined ones keep it", () => {
    assert.deepStrictEqual(resolvePolicy(undefined), DEFAULT_RETENTION)
    assert.deepStrictEqual(resolvePolicy({}), DEFAULT_RETENTION)
    assert.deepStrictEqual(resolvePolicy({ maxBytes: 5, maxDepth: undefined }), { ...DEFAULT_RETENTION, maxBytes: 5 })
    // Overriding may raise a field above the base: resolvePolicy is not clamp.
    assert.deepStrictEqual(resolvePolicy({ maxInactiveRuns: 1000 }), { ...DEFAULT_RETENTION, maxInactiveRuns: 1000 })
    // Zero is a value, not "absent".
    assert.deepStrictEqual(resolvePolicy({ maxAgeMs: 0 }), { ...DEFAULT_RETENTION, maxAgeMs: 0 })
  })

  it.prop("resolvePolicy takes each field from the input when given, else from the base", [inputArb, policyArb], ([input, base]) => {
    const resolved = resolvePolicy(input, base)
    for (const field of RETENTION_FIELDS) {
      assert.strictEqual(resolved[field], input[field] ?? base[field])
    }
  })

  it("clamp keeps less, never more, and fills gaps from the ceiling", () => {
    const ceiling = DEFAULT_RETENTION
    assert.deepStrictEqual(clamp({ maxInactiveRuns: 10, maxBytes: 2 ** 40 }, ceiling), { ...ceiling, maxInactiveRuns: 10 })
    assert.deepStrictEqual(clamp({}, ceiling), ceiling)
  })

  it.prop("clamp: at most the ceiling on every field", [inputArb, policyArb], ([input, ceiling]) => {
    const clamped = clamp(input, ceiling)
    for (const field of RETENTION_FIELDS) assert.isAtMost(clamped[field], ceiling[field])
  })

  it.prop("clamp never raises a field above the input", [inputArb, policyArb], ([input, ceiling]) => {
    const clamped = clamp(input, ceiling)
    for (const field of RETENTION_FIELDS) {
      const wish = input[field]
      if (wish !== undefined) assert.isAtMost(clamped[field], wish)
    }
  })

  it.prop("clamp is the field-wise minimum", [policyArb, policyArb], ([wish, ceiling]) => {
    const clamped = clamp(wish, ceiling)
    for (const field of RETENTION_FIELDS) assert.strictEqual(clamped[field], Math.min(wish[field], ceiling[field]))
  })

  it.prop("clamp is idempotent and clamp(ceiling, ceiling) = ceiling", [inputArb, policyArb], ([input, ceiling]) => {
    const once = clamp(input, ceiling)
    assert.deepStrictEqual(clamp(once, ceiling), once)
    assert.deepStrictEqual(clamp(ceiling, ceiling), ceiling)
    assert.isTrue(Schema.is(RetentionPolicy)(once))
  })
})
