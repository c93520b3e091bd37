import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import {
  decodeJsonBytes,
  decodeManifestBytes,
  encodeManifest,
  encodeManifestPadded,
  Manifest,
  MANIFEST_STAMP_ROOM,
  type ManifestV2
} from "../../src/domain/Formats.js"

const segmentArb = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,30}$/)
const manifestArb: fc.Arbitrary<ManifestV2> = fc.record({
  version: fc.constant(2 as const),
  category: segmentArb,
  tenant: segmentArb,
  runId: segmentArb,
  kind: fc.constantFrom("generated" as const, "named" as const),
  createdAt: fc.integer({ min: 0, max: 4_102_444_800_000 }),
  // Host names may be anything a machine reports, non-ASCII included: lengths are bytes, not characters.
  createdBy: fc.record({ host: fc.string({ minLength: 1, maxLength: 40, unit: "grapheme" }), pid: fc.integer({ min: 1, max: 4_194_304 }) })
})
// Stamps up to the year 2286 (13 digits): the room is sized for them.
const stampArb = fc.integer({ min: 0, max: 9_999_999_999_999 })
const thirteenDigits = fc.integer({ min: 1_000_000_000_000, max: 9_999_999_999_999 })

const decode = (bytes: Uint8Array) => decodeJsonBytes(Manifest, bytes)

describe("run manifest bytes", () => {
  it("a new manifest is its JSON, MANIFEST_STAMP_ROOM spaces and a newline, and decodes to itself", () =>
    fc.assert(fc.property(manifestArb, (m) => {
      const bytes = encodeManifest(m)
      const json = new TextEncoder().encode(JSON.stringify(m))
      assert.strictEqual(bytes.length, json.length + MANIFEST_STAMP_ROOM + 1)
      assert.deepStrictEqual(decode(bytes), { ok: true, value: m })
    })))

  it("the stamp fits the room, at exactly the file's length; what does not fit is refused", () =>
    fc.assert(fc.property(manifestArb, stampArb, (m, releasedAt) => {
      const length = encodeManifest(m).length
      const stamped = encodeManifestPadded({ ...m, releasedAt }, length)
      assert.isDefined(stamped)
      assert.strictEqual(stamped!.length, length)
      assert.deepStrictEqual(decode(stamped!), { ok: true, value: { ...m, releasedAt } })
      const tight = new TextEncoder().encode(JSON.stringify(m)).length
      assert.isUndefined(encodeManifestPadded({ ...m, releasedAt }, tight), "no room, no bytes")
    })))

  // A reader copying the file while the stamp is written over it front to back sees the new bytes up to some
  // point and the old ones after it. Whatever the point, it reads the old manifest, the new one, or no JSON
  // (which reads as unowned: never deleted, never joined), never a third manifest.
  it("a torn read of a first stamp is the old manifest, the new one, or not a manifest at all", () =>
    fc.assert(fc.property(manifestArb, stampArb, (m, releasedAt) => {
      const before = encodeManifest(m)
      const after = encodeManifestPadded({ ...m, releasedAt }, before.length)!
      for (let cut = 0; cut <= before.length; cut++) {
        const torn = new Uint8Array(before.length)
        torn.set(after.subarray(0, cut))
        torn.set(before.subarray(cut), cut)
        const read = decode(torn)
        if (!read.ok) continue
        const v = read.value as ManifestV2
        assert.isTrue(
          JSON.stringify(v) === JSON.stringify(m) || JSON.stringify(v) === JSON.stringify({ ...m, releasedAt }),
          `cut ${cut}: ${JSON.stringify(v)}`
        )
      }
    }), { numRuns: 50 }))

  // A second holder re-stamps a stamped manifest later: the same length, only the digits of releasedAt differ
  // (13 of them for every time from 2001 to 2286). A torn read may mix them, but never into a value below the
  // earlier stamp: a run never looks older than it was.
  it("a torn read of a re-stamp is not JSON or the same manifest with releasedAt no earlier than the old stamp", () =>
    fc.assert(fc.property(manifestArb, thirteenDigits, thirteenDigits, (m, a, b) => {
      const [first, second] = a <= b ? [a, b] : [b, a]
      const length = encodeManifest(m).length
      const before = encodeManifestPadded({ ...m, releasedAt: first }, length)!
      const after = encodeManifestPadded({ ...m, releasedAt: second }, length)!
      for (let cut = 0; cut <= length; cut++) {
        const torn = new Uint8Array(length)
        torn.set(after.subarray(0, cut))
        torn.set(before.subarray(cut), cut)
        const read = decode(torn)
        if (!read.ok) continue
        const { releasedAt, ...rest } = read.value as ManifestV2 & { releasedAt?: number }
        assert.strictEqual(JSON.stringify(rest), JSON.stringify(m), `cut ${cut}`)
        assert.isAtLeast(releasedAt!, first, `cut ${cut}`)
      }
    }), { numRuns: 50 }))
})

describe("decodeManifestBytes (a view's decode of 40,000 manifests)", () => {
  /** Values near a manifest: each field right, wrong, missing or extra, as a hostile writer could leave them. */
  const fieldArb = (good: fc.Arbitrary<unknown>) => fc.oneof(good, good, good, fc.anything(), fc.constant(undefined))
  const nearArb = fc.record({
    version: fc.oneof(fc.constantFrom(1, 2, 2, 3, "2"), fc.anything()),
    category: fieldArb(segmentArb),
    tenant: fieldArb(segmentArb),
    runId: fieldArb(segmentArb),
    kind: fieldArb(fc.constantFrom("generated", "named", "Named")),
    createdAt: fieldArb(fc.oneof(fc.integer({ min: -5, max: 4_102_444_800_000 }), fc.double(), fc.constant(-0))),
    createdBy: fieldArb(fc.record({
      host: fieldArb(fc.string({ maxLength: 8 })),
      pid: fieldArb(fc.oneof(fc.integer({ min: -3, max: 4_194_304 }), fc.double(), fc.constant(2 ** 53))),
      extra: fc.anything()
    }, { requiredKeys: [] })),
    releasedAt: fieldArb(fc.oneof(fc.integer({ min: -5, max: 9_999_999_999_999 }), fc.double())),
    extra: fc.anything()
  }, { requiredKeys: [] })
  /** An answer as comparable data: the value, or the reason (the same words either way). */
  const plain = (d: ReturnType<typeof decodeManifestBytes>) => (d.ok ? { value: d.value } : { why: d.why })

  it("answers what the schema answers, for well-formed manifests and everything else", () => {
    let decoded = 0
    fc.assert(
      fc.property(fc.oneof(nearArb, nearArb, fc.anything(), manifestArb), (value) => {
        const text = JSON.stringify(value) ?? "undefined"
        const bytes = new TextEncoder().encode(text)
        const fast = decodeManifestBytes(bytes)
        const slow = decodeJsonBytes(Manifest, bytes)
        assert.deepStrictEqual(plain(fast), plain(slow), text)
        if (fast.ok) {
          decoded++
          // The same fields in the same order as the schema's own output.
          assert.deepStrictEqual(Object.keys(fast.value), Object.keys(slow.ok ? slow.value : {}), text)
        }
      }),
      { numRuns: 3000 }
    )
    assert.isAbove(decoded, 100, "well-formed manifests were met")
  })

  it("answers garbage, invalid UTF-8 and a torn manifest as the schema does", () => {
    for (const text of ["{ not json", "", "null", "[]", "{\"version\":2}", "\"manifest\""]) {
      const bytes = new TextEncoder().encode(text)
      assert.deepStrictEqual(plain(decodeManifestBytes(bytes)), plain(decodeJsonBytes(Manifest, bytes)), text)
    }
    // A tag the schema's interpreter threw on (String() of an object whose toString is not a function): not a manifest, not a crash.
    const trap = new TextEncoder().encode(`{"version":{"toString":[]}}`)
    assert.isFalse(decodeManifestBytes(trap).ok)
    assert.isFalse(decodeJsonBytes(Manifest, trap).ok)
    const invalid = new Uint8Array([0x7b, 0xff, 0x7d])
    assert.deepStrictEqual(plain(decodeManifestBytes(invalid)), plain(decodeJsonBytes(Manifest, invalid)))
    assert.isFalse(decodeManifestBytes(invalid).ok)
  })
})
