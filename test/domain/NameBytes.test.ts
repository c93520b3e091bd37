import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { bytesOfName, hasEscapedBytes, nameOfBytes } from "../../src/domain/NameBytes.js"

const bytes = (...xs: ReadonlyArray<number>) => Uint8Array.from(xs)

describe("names as bytes", () => {
  it("escapes each byte outside valid UTF-8 as one lone U+DC80–U+DCFF and nothing else", () => {
    assert.strictEqual(nameOfBytes(bytes(0x61, 0xff, 0x62)), "a\udcffb")
    // Latin-1 "café": é alone is not UTF-8.
    assert.strictEqual(nameOfBytes(bytes(0x63, 0x61, 0x66, 0xe9)), "caf\udce9")
    // A surrogate encoded as UTF-8 (CESU) and an overlong "/" are not UTF-8 either: escaped byte by byte.
    assert.strictEqual(nameOfBytes(bytes(0xed, 0xa0, 0x80)), "\udced\udca0\udc80")
    assert.strictEqual(nameOfBytes(bytes(0xc0, 0xaf)), "\udcc0\udcaf")
    // Valid UTF-8, including U+FFFD and an astral character whose low surrogate is in the escape range.
    assert.strictEqual(nameOfBytes(new TextEncoder().encode("é\ufffd\u{1f080}")), "é\ufffd\u{1f080}")
    assert.isFalse(hasEscapedBytes("é\ufffd\u{1f080}"))
    assert.isTrue(hasEscapedBytes("caf\udce9"))
  })

  it("turns an escaped name back into its bytes, beside an astral character", () => {
    assert.deepStrictEqual([...bytesOfName("caf\udce9")], [0x63, 0x61, 0x66, 0xe9])
    assert.deepStrictEqual([...bytesOfName("\u{1f080}\udc80")], [0xf0, 0x9f, 0x82, 0x80, 0x80])
  })

  it.prop("every byte string survives the round trip", [fc.uint8Array({ maxLength: 64 })], ([b]) => {
    assert.deepStrictEqual([...bytesOfName(nameOfBytes(b))], [...b])
  })

  it.prop("bytes that are valid UTF-8 decode as the platform decodes them", [fc.string({ unit: "grapheme", maxLength: 32 })], ([s]) => {
    const utf8 = new TextEncoder().encode(s)
    assert.strictEqual(nameOfBytes(utf8), s)
    assert.deepStrictEqual([...bytesOfName(s)], [...utf8])
  })

  it.prop("a mixed string of text and stray bytes survives the other way round too", [
    fc.array(fc.oneof(fc.string({ unit: "grapheme", maxLength: 4 }), fc.integer({ min: 0x80, max: 0xff }).map((b) => String.fromCharCode(0xdc00 + b))), { maxLength: 12 })
  ], ([parts]) => {
    const name = parts.join("")
    // Only a stray byte that cannot join its neighbours into valid UTF-8 stays escaped; the bytes are the same.
    assert.deepStrictEqual([...bytesOfName(nameOfBytes(bytesOfName(name)))], [...bytesOfName(name)])
  })
})
