import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { parseCount, parseDuration, parseSize, parseTenantFilter, parseTenantTarget } from "../../src/cli/parse.js"

const value = <A>(p: { ok: true; value: A } | { ok: false; message: string }): A => {
  if (!p.ok) throw new Error(p.message)
  return p.value
}

describe("cli/parse", () => {
  it("durations: 30d, 12h, 90m, 45s, 2w", () => {
    assert.strictEqual(value(parseDuration("30d")), 30 * 86_400_000)
    assert.strictEqual(value(parseDuration("12h")), 12 * 3_600_000)
    assert.strictEqual(value(parseDuration("90m")), 90 * 60_000)
    assert.strictEqual(value(parseDuration("45s")), 45_000)
    assert.strictEqual(value(parseDuration("2w")), 14 * 86_400_000)
    // Issue 13: zero, fractions and sums.
    assert.strictEqual(value(parseDuration("0")), 0)
    assert.strictEqual(value(parseDuration("1.5d")), 36 * 3_600_000)
    assert.strictEqual(value(parseDuration("1.5h")), 90 * 60_000)
    assert.strictEqual(value(parseDuration("2h30m")), 150 * 60_000)
    assert.strictEqual(value(parseDuration("1d12h")), 36 * 3_600_000)
    for (const bad of ["30", "3x", "", "d", "-1d", "30 days", "2h 30m", "h2", ".5d", "1.d"]) {
      const parsed = parseDuration(bad)
      assert.isFalse(parsed.ok, bad)
      if (!parsed.ok) assert.include(parsed.message, JSON.stringify(bad))
    }
  })

  it("sizes: binary and decimal units, bare bytes", () => {
    assert.strictEqual(value(parseSize("512MiB")), 512 * 1024 ** 2)
    assert.strictEqual(value(parseSize("2GiB")), 2 * 1024 ** 3)
    assert.strictEqual(value(parseSize("1000")), 1000)
    assert.strictEqual(value(parseSize("10MB")), 10_000_000)
    assert.strictEqual(value(parseSize("1.5KiB")), 1536)
    assert.strictEqual(value(parseSize("4k")), 4096)
    for (const bad of ["lots", "", "-5", "5XB", "1e9"]) assert.isFalse(parseSize(bad).ok, bad)
  })

  it.prop("a size printed as <n><unit> parses back to n × unit", [FastCheck.integer({ min: 0, max: 4096 }), FastCheck.constantFrom<readonly [string, number]>(["", 1], ["KiB", 1024], ["MiB", 1024 ** 2], ["GiB", 1024 ** 3])], ([n, [unit, factor]]) => {
    assert.strictEqual(value(parseSize(`${n}${unit}`)), n * factor)
  })

  it("counts are whole non-negative numbers", () => {
    assert.strictEqual(value(parseCount("0")), 0)
    assert.strictEqual(value(parseCount("64")), 64)
    for (const bad of ["-1", "1.5", "x", ""]) assert.isFalse(parseCount(bad).ok, bad)
  })

  it("tenant targets are two valid segments; the error names the part", () => {
    assert.deepStrictEqual(value(parseTenantTarget("tools/bash")), { category: "tools", tenant: "bash" })
    const upper = parseTenantTarget("tools/Bash")
    assert.isFalse(upper.ok)
    if (!upper.ok) assert.match(upper.message, /^invalid tenant "Bash"/)
    for (const bad of ["tools", "a/b/c", "/b", "a/", "con/x"]) assert.isFalse(parseTenantTarget(bad).ok, bad)
    assert.deepStrictEqual(value(parseTenantFilter("tools")), { category: "tools" })
    assert.deepStrictEqual(value(parseTenantFilter("tools/git")), { category: "tools", tenant: "git" })
  })
})
