import { assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { type Column, formatBytes, formatDuration, formatSize, painter, shown, stripAnsi, table, tablePieces } from "../../src/cli/format.js"
import { parseSize } from "../../src/cli/parse.js"

const H = 3_600_000
const D = 24 * H

describe("cli/format", () => {
  it("sizes in B, KiB, MiB, GiB; ≥ marks a lower bound", () => {
    assert.strictEqual(formatBytes(0), "0 B")
    assert.strictEqual(formatBytes(1023), "1023 B")
    assert.strictEqual(formatBytes(1536), "1.5 KiB")
    assert.strictEqual(formatBytes(512 * 1024 ** 2), "512.0 MiB")
    assert.strictEqual(formatBytes(2 * 1024 ** 3), "2.0 GiB")
    assert.strictEqual(formatSize({ bytes: 2048, complete: false }), "≥ 2.0 KiB")
    assert.strictEqual(formatSize({ bytes: 2048, complete: true }), "2.0 KiB")
  })

  it.prop("a formatted size never overstates: the size it shows is at most the true size", [FastCheck.integer({ min: 0, max: 2 ** 45 })], ([bytes]) => {
    // Exactly, in tenths of a byte: `12.3 MiB` shows 123 × 1 MiB / 10 (a shown size need not be whole bytes,
    // so it is not parsed back: a size flag refuses a fraction of a byte).
    const [amount, unit] = formatBytes(bytes).split(" ") as [string, string]
    const factor = BigInt({ B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 }[unit]!)
    const tenths = BigInt(amount.includes(".") ? amount.replace(".", "") : `${amount}0`) * factor
    assert.isTrue(tenths <= BigInt(bytes) * 10n, `${bytes} shown as ${formatBytes(bytes)}`)
    // One decimal of the unit: within 10 % (exact below 1 KiB).
    assert.isTrue(tenths * 10n >= BigInt(bytes) * (bytes < 1024 ? 100n : 90n), `${bytes} shown as ${formatBytes(bytes)}`)
    // Shown in whole bytes after its unit, it parses back as the size flags read it.
    if (tenths % 10n === 0n) assert.deepStrictEqual(parseSize(formatBytes(bytes).replace(" ", "")), { ok: true, value: Number(tenths / 10n) })
  })

  it("ages use the two largest units", () => {
    assert.strictEqual(formatDuration(3 * D + 4 * H + 5 * 60_000), "3d 4h")
    assert.strictEqual(formatDuration(3 * D), "3d")
    assert.strictEqual(formatDuration(2 * H + 30 * 60_000), "2h 30m")
    assert.strictEqual(formatDuration(90 * 60_000), "1h 30m")
    assert.strictEqual(formatDuration(59 * 60_000 + 59_000), "59m")
    assert.strictEqual(formatDuration(42_000), "42s")
    assert.strictEqual(formatDuration(-5), "0s")
  })

  it("tables align columns, right-align numbers, ignore colour codes in widths, leave no trailing blanks", () => {
    const paint = painter(true)
    const text = table(
      [{ header: "NAME" }, { header: "N", align: "right" }, { header: "NOTE" }],
      [["a", "1", paint("red", "x")], ["long-name", "100", ""]]
    ).text
    assert.strictEqual(stripAnsi(text), "NAME         N  NOTE\na            1  x\nlong-name  100\n")
    assert.include(text, "\u001b[31mx\u001b[39m")
    assert.strictEqual(painter(false)("red", "x").text, "x")
  })

  it("a cell's width is its code points, whether it holds an escape, a surrogate pair, a lone surrogate or neither", () => {
    const paint = painter(true)
    const text = table(
      [{ header: "A" }, { header: "B" }],
      [["\u{1F600}x", "1"], [paint("red", "\udce9"), "2"], ["abc", "3"], ["é", "4"]]
    ).text
    // (A lone surrogate is shown escaped, four columns: terminal safety.)
    assert.strictEqual(stripAnsi(text), "A     B\n\u{1F600}x    1\n\\xe9  2\nabc   3\né     4\n")
  })
})

/** A table made whole the plain way: every cell shown, widths by code points without colour, lines trimmed. */
const referenceTable = (columns: ReadonlyArray<Column>, rows: ReadonlyArray<ReadonlyArray<string>>, bold: boolean): string => {
  const cells = rows.map((r) => columns.map((_, i) => shown(r[i] ?? "").text))
  const w = (t: string) => [...stripAnsi(t)].length
  const widths = columns.map((c, i) => Math.max(w(c.header), ...cells.map((r) => w(r[i]!))))
  const line = (row: ReadonlyArray<string>) =>
    row.map((cell, i) => {
      const pad = " ".repeat(widths[i]! - w(cell))
      return columns[i]!.align === "right" ? pad + cell : i === row.length - 1 ? cell : cell + pad
    }).join("  ")
  const header = line(columns.map((c) => c.header))
  return [bold ? painter(true)("bold", header).text : header, ...cells.map(line)].map((l) => l.trimEnd()).join("\n") + "\n"
}

const fc = FastCheck
const cell = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("", " x ", "\u{1F600}", "\u001b[31mred", "\udce9", "é"))

describe("cli/format tables in pieces", () => {
  it.prop("the pieces of a table joined are the whole table, however many rows, each piece at most 512 rows (the first also the header)", [
    fc.array(fc.record({ header: fc.string({ maxLength: 8 }), align: fc.constantFrom("left" as const, "right" as const) }), { minLength: 1, maxLength: 5 }),
    fc.integer({ min: 0, max: 1_300 }),
    fc.array(fc.array(cell, { maxLength: 6 }), { minLength: 1, maxLength: 20 }),
    fc.boolean()
  ], ([columns, count, pool, bold]) => {
    const rows = Array.from({ length: count }, (_, i) => pool[i % pool.length]!)
    const paint = bold ? painter(true) : undefined
    const pieces = [...tablePieces(columns, rows.length, (i) => rows[i]!, paint)].map((p) => p.text)
    assert.strictEqual(pieces.join(""), referenceTable(columns, rows, bold))
    assert.strictEqual(table(columns, rows, paint).text, pieces.join(""))
    pieces.forEach((piece, i) => assert.isAtMost(piece.split("\n").length - 1, i === 0 ? 513 : 512))
  }, { fastCheck: { numRuns: 150 } })
})

describe("cli/context colour rule", () => {
  it("colour only on a TTY, never with --no-color, a non-empty NO_COLOR or TERM=dumb", async () => {
    const { useColor } = await import("../../src/cli/context.js")
    assert.isTrue(useColor({ noColorFlag: false, noColorEnv: undefined, isTTY: true }))
    assert.isTrue(useColor({ noColorFlag: false, noColorEnv: "", isTTY: true }))
    assert.isFalse(useColor({ noColorFlag: false, noColorEnv: "1", isTTY: true }))
    assert.isFalse(useColor({ noColorFlag: true, noColorEnv: undefined, isTTY: true }))
    assert.isFalse(useColor({ noColorFlag: false, noColorEnv: undefined, isTTY: false }))
    assert.isFalse(useColor({ noColorFlag: false, noColorEnv: undefined, isTTY: undefined }))
    assert.isFalse(useColor({ noColorFlag: false, noColorEnv: undefined, term: "dumb", isTTY: true }))
    assert.isTrue(useColor({ noColorFlag: false, noColorEnv: undefined, term: "xterm-256color", isTTY: true }))
  })

  it("progress lines only on a terminal that may be drawn on, never with --json; --no-color is no reason to drop them", async () => {
    const { showProgress } = await import("../../src/cli/context.js")
    assert.isTrue(showProgress({ json: false, term: "xterm", isTTY: true }))
    assert.isTrue(showProgress({ json: undefined, isTTY: true }))
    assert.isFalse(showProgress({ json: true, term: "xterm", isTTY: true }))
    assert.isFalse(showProgress({ json: false, term: "dumb", isTTY: true }))
    assert.isFalse(showProgress({ json: false, term: "xterm", isTTY: false }))
    assert.isFalse(showProgress({ json: false, term: "xterm", isTTY: undefined }))
  })
})
