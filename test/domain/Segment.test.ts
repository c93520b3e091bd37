import { assert, describe, it } from "@effect/vitest"
import { Either, FastCheck as fc, Schema } from "effect"
import { characterWords, displayText } from "../../src/domain/Display.js"
import { decodeSegment, parseSegment, Segment, SEGMENT_MAX_LENGTH, segmentViolation } from "../../src/domain/Segment.js"
import { segmentRuleEvaluations } from "../../src/domain/SegmentMemo.js"

/** The WR2 rule, written independently of the implementation. */
const DEVICES = /^(con|prn|aux|nul|clock\$|com[0-9]|lpt[0-9])$/
const ruleAccepts = (s: string) =>
  s.length >= 1 && s.length <= 64 && /^[a-z0-9][a-z0-9._-]*$/.test(s) && !s.endsWith(".") && !DEVICES.test(s.split(".")[0]!)

const segmentChars = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789._-".split(""))
const candidate = fc.oneof(
  fc.string({ minLength: 0, maxLength: 70 }),
  fc.array(segmentChars, { minLength: 1, maxLength: 66 }).map((cs) => cs.join("")),
  fc.tuple(fc.constantFrom("con", "prn", "aux", "nul", "clock$", "com1", "lpt9", "com0"), fc.constantFrom("", ".txt", ".log", ".a.b"))
    .map(([d, ext]) => d + ext)
)

describe("Segment (WR2)", () => {
  it.prop("accepts exactly what the rule accepts", [candidate], ([s]) => {
    assert.strictEqual(Either.isRight(parseSegment(s)), ruleAccepts(s), JSON.stringify(s))
    assert.strictEqual(Schema.is(Segment)(s), ruleAccepts(s))
  }, { fastCheck: { numRuns: 3000 } })

  it.prop("every refusal names the rule and the offending value", [candidate.filter((s) => !ruleAccepts(s))], ([s]) => {
    const parsed = parseSegment(s)
    assert.isTrue(Either.isLeft(parsed))
    if (Either.isLeft(parsed)) {
      assert.strictEqual(parsed.left.value, s)
      assert.include(parsed.left.message, JSON.stringify(s))
    }
  })

  it("refuses the named hazards with the rule they break", () => {
    const cases: Array<[string, string]> = [
      ["Tools", "uppercase"], ["a/b", "invalid-character"], ["a\\b", "invalid-character"], [".", "first-character"],
      ["..", "first-character"], [".hidden", "first-character"], ["-x", "first-character"], ["run.", "trailing-dot"],
      ["con", "device-name"], ["nul.txt", "device-name"], ["com1.log", "device-name"], ["lpt9", "device-name"],
      ["clock$", "invalid-character"], ["", "empty"], ["a".repeat(SEGMENT_MAX_LENGTH + 1), "too-long"],
      ["a\u0000b", "invalid-character"], ["café", "invalid-character"]
    ]
    for (const [value, rule] of cases) assert.strictEqual(segmentViolation(value)?.rule, rule, JSON.stringify(value))
    assert.isNull(segmentViolation("a".repeat(SEGMENT_MAX_LENGTH)))
    assert.isNull(segmentViolation("console"), "a device name only as the whole stem")
    assert.isNull(segmentViolation("com10"))
  })

  it.prop("any non-string is refused as not-a-string, never a TypeError", [fc.anything().filter((u) => typeof u !== "string")], ([u]) => {
    assert.strictEqual(segmentViolation(u)?.rule, "not-a-string")
    const decoded = decodeSegment("tenant", u)
    assert.isTrue(Either.isLeft(decoded) && decoded.left._tag === "InvalidSegment" && decoded.left.rule === "not-a-string")
    assert.isTrue(Either.isLeft(parseSegment(u)))
  }, { fastCheck: { numRuns: 300 } })

  it.prop("remembering valid segments never changes an answer, however full the memory (every decoding path agrees with the rule)", [
    fc.array(candidate, { minLength: 1, maxLength: 40 }),
    fc.integer({ min: 0, max: 5000 })
  ], ([values, filler]) => {
    // Fill the bounded memory past its size first, so a clear happens somewhere in some runs.
    for (let i = 0; i < filler; i++) decodeSegment("tenant", `filler-${i}`)
    for (let round = 0; round < 2; round++) {
      for (const s of values) {
        const ok = ruleAccepts(s)
        assert.strictEqual(Either.isRight(parseSegment(s)), ok, JSON.stringify(s))
        assert.strictEqual(Either.isRight(decodeSegment("tenant", s)), ok, JSON.stringify(s))
        assert.strictEqual(Schema.is(Segment)(s), ok, JSON.stringify(s))
        assert.strictEqual(segmentViolation(s) === null, ok, JSON.stringify(s))
      }
    }
  }, { fastCheck: { numRuns: 40 } })

  it("a segment decoded once is not checked by the rule again; the plain rule always runs", () => {
    const before = segmentRuleEvaluations()
    const seg = Schema.decodeUnknownSync(Segment)("remembered-once")
    for (let i = 0; i < 10; i++) {
      assert.isTrue(Either.isRight(decodeSegment("category", seg)))
      assert.isTrue(Either.isRight(parseSegment(seg)))
      assert.isTrue(Schema.is(Segment)(seg))
    }
    assert.strictEqual(segmentRuleEvaluations() - before, 1)
    // A refused value is never remembered: it is judged again each time (and refused again).
    for (let i = 0; i < 3; i++) assert.isTrue(Either.isLeft(decodeSegment("category", "Refused")))
    assert.strictEqual(segmentRuleEvaluations() - before, 4)
  })

  it("decoding through the Schema reports the value and the rule", () => {
    const decoded = Schema.decodeUnknownEither(Segment)("Bash")
    assert.isTrue(Either.isLeft(decoded))
    if (Either.isLeft(decoded)) assert.include(decoded.left.message, "\"Bash\" is not a valid segment: must be lowercase")
  })

  it.prop("a rule's words name what they found without an escape a screen would escape again", [fc.oneof(candidate, fc.string({ unit: "binary", maxLength: 8 }))], ([s]) => {
    const violation = segmentViolation(s)
    // Shown through displayText (a misnamed directory's message, say), the words come out as written.
    if (violation !== null) assert.strictEqual(displayText(violation.message), violation.message, JSON.stringify(s))
  }, { fastCheck: { numRuns: 2000 } })

  it("names a character as itself when it shows as itself, else by its code point", () => {
    const cases: Array<[string, string]> = [
      ["a\u0001b", "(found U+0001)"], ["a b", "(found U+0020)"], ["a\u200bb", "(found U+200B)"], ["a\u00a0b", "(found U+00A0)"],
      ["a\u0301b", "(found U+0301)"], ["a\ufeffb", "(found U+FEFF)"], ["a\u{e0001}b", "(found U+E0001)"], ["a+b", "(found \"+\")"], ["a\"b", "(found U+0022)"], ["a\\b", "(found U+005C)"],
      ["café", "(found \"é\")"], ["a\u202eb", "(found U+202E)"], ["a\ud800b", "(found U+D800)"], ["a😀b", "(found \"😀\")"],
      ["_x", "(starts with \"_\")"]
    ]
    for (const [value, words] of cases) assert.include(segmentViolation(value)?.message, words, JSON.stringify(value))
    assert.strictEqual(characterWords("\u007f"), "U+007F")
  })
})
