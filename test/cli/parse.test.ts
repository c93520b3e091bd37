import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { parseCount, parseDuration, parsePositiveCount, parseSize, parseTenantFilter, parseTenantTarget } from "../../src/cli/parse.js"

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
    // Zero, fractions and sums.
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
    for (const bad of ["lots", "", "-5", "5XB", "1e9", "1e400", "NaN", "Infinity", "0x10"]) assert.isFalse(parseSize(bad).ok, bad)
  })

  it("a size or duration is a whole number of bytes or milliseconds after its unit, computed exactly, never rounded", () => {
    assert.strictEqual(value(parseSize("0.5KiB")), 512)
    assert.strictEqual(value(parseSize("2.2MB")), 2_200_000)
    assert.strictEqual(value(parseSize("1.25GB")), 1_250_000_000)
    assert.strictEqual(value(parseDuration("0.5s")), 500)
    assert.strictEqual(value(parseDuration("0.001s")), 1)
    for (const bad of ["0.5", "0.3", "1.1KiB", "0.1k", "3.0000001MB"]) {
      const parsed = parseSize(bad)
      assert.isFalse(parsed.ok, bad)
      if (!parsed.ok) assert.strictEqual(parsed.message, `"${bad}" is not a whole number of bytes`)
    }
    for (const bad of ["0.0001s", "1.0000001d"]) assert.isFalse(parseDuration(bad).ok, bad)
    for (const big of ["99999999999999999999", "9999999999TiB"]) assert.isFalse(parseSize(big).ok, big)
    assert.isFalse(parseDuration("99999999999999999w").ok)
  })

  it.prop(
    "a decimal size parses to exactly its value, or is refused when that is not whole",
    [FastCheck.integer({ min: 0, max: 1_000_000 }), FastCheck.integer({ min: 0, max: 3 }), FastCheck.constantFrom<readonly [string, number]>(["", 1], ["KiB", 1024], ["kB", 1000], ["MB", 1000 ** 2])],
    ([n, decimals, [unit, factor]]) => {
      // n / 10^decimals written out in full, e.g. 12345 and 2 decimals → "123.45"
      const digits = String(n).padStart(decimals + 1, "0")
      const text = decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`
      const exact = n * factor
      const scale = 10 ** decimals
      const parsed = parseSize(`${text}${unit}`)
      if (exact % scale === 0) assert.deepStrictEqual(parsed, { ok: true, value: exact / scale })
      else assert.isFalse(parsed.ok, text)
    }
  )

  it.prop("a size printed as <n><unit> parses back to n × unit", [FastCheck.integer({ min: 0, max: 4096 }), FastCheck.constantFrom<readonly [string, number]>(["", 1], ["KiB", 1024], ["MiB", 1024 ** 2], ["GiB", 1024 ** 3])], ([n, [unit, factor]]) => {
    assert.strictEqual(value(parseSize(`${n}${unit}`)), n * factor)
  })

  it("counts are whole non-negative numbers", () => {
    assert.strictEqual(value(parseCount("0")), 0)
    assert.strictEqual(value(parseCount("64")), 64)
    for (const bad of ["-1", "1.5", "x", "", "1e3", "NaN", "99999999999999999999"]) assert.isFalse(parseCount(bad).ok, bad)
    assert.strictEqual(value(parsePositiveCount("5")), 5)
    for (const bad of ["0", "-1", "0.5"]) assert.isFalse(parsePositiveCount(bad).ok, bad)
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
