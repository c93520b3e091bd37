import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import {
  decodeJsonBytes,
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
