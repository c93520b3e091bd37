import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { displayStrayBytes, displayText } from "../../src/domain/Display.js"
import { hasEscapedBytes, nameOfBytes } from "../../src/domain/NameBytes.js"

/** What a terminal must never receive raw. */
const STEERING = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
/** A surrogate that is not half of a pair. */
const STRAY = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const wellFormed = (s: string) => !STRAY.test(s)

describe("displayText", () => {
  it("leaves ordinary text, accents and astral characters alone", () => {
    for (const s of ["tools/zsh", "café", "日本語", "\u{1f600} ok", ""]) assert.strictEqual(displayText(s), s)
  })

  it("escapes ESC sequences, OSC 52, newlines, bidi overrides, 8-bit controls and stray bytes", () => {
    assert.strictEqual(displayText("a\u001b[31mred"), "a\\x1b[31mred")
    assert.strictEqual(displayText("\u001b]52;c;ZXZpbA==\u0007"), "\\x1b]52;c;ZXZpbA==\\x07")
    assert.strictEqual(displayText("run\nREMOVED  other"), "run\\nREMOVED  other")
    assert.strictEqual(displayText("x\u202etxt.exe"), "x\\u{202e}txt.exe")
    assert.strictEqual(displayText("\u009b2J"), "\\x9b2J")
    assert.strictEqual(displayText(nameOfBytes(Uint8Array.of(0x63, 0xe9))), "c\\xe9")
    assert.strictEqual(displayText("a\\x1b"), "a\\\\x1b")
    assert.strictEqual(displayText("\ud800"), "\\u{d800}")
  })

  it.prop("nothing that steers a terminal survives, and text without it is unchanged", [fc.string({ unit: "binary", maxLength: 40 })], ([s]) => {
    const shown = displayText(s)
    assert.isFalse(STEERING.test(shown), JSON.stringify(shown))
    // No stray surrogate either: the result is well-formed UTF-16.
    assert.isTrue(wellFormed(shown), JSON.stringify(shown))
    if (!STEERING.test(s) && wellFormed(s) && !s.includes("\\")) assert.strictEqual(shown, s)
  })
})

describe("displayStrayBytes (the CLI's last guard on rendered text)", () => {
  it("shows each byte that is not UTF-8 as displayText does, and leaves colour codes, newlines and the rest alone", () => {
    const name = nameOfBytes(Uint8Array.of(0x63, 0xe9, 0x2d, 0xff))
    assert.strictEqual(displayStrayBytes(`\u001b[33m${name}\u001b[39m\n`), "\u001b[33mc\\xe9-\\xff\u001b[39m\n")
    assert.strictEqual(displayStrayBytes("caf\u00e9 \ufffd \u{1f600} a\\b"), "caf\u00e9 \ufffd \u{1f600} a\\b")
  })

  it.prop("no byte that is not UTF-8 survives; text a renderer passed through displayText is unchanged (never escaped twice)", [fc.uint8Array({ maxLength: 24 }), fc.string({ unit: "binary", maxLength: 24 })], ([bytes, s]) => {
    const name = nameOfBytes(bytes)
    assert.isFalse(hasEscapedBytes(displayStrayBytes(name + s)))
    assert.strictEqual(displayStrayBytes(displayText(name + s)), displayText(name + s))
    if (!hasEscapedBytes(s)) assert.strictEqual(displayStrayBytes(s), s)
    // Where the name held such bytes, what is shown agrees with displayText byte for byte.
    if (!STEERING.test(name) && !name.includes("\\")) assert.strictEqual(displayStrayBytes(name), displayText(name))
  })
})
