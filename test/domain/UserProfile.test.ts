import { assert, describe, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import {
  applyOperation,
  buildModel,
  diffLayout,
  modelEntries,
  type ProfileFiles,
  planLayout,
  recoveryPlan
} from "../../src/domain/UserProfile.js"
import {
  decodeFrontMatter,
  parseIndex,
  parseOkf,
  type ProfileJournal,
  parseShard,
  renderIndex,
  renderShard,
  SHARD_NAME_RE,
  shardName,
  splitIntoShards
} from "../../src/domain/UserProfileArchive.js"
import {
  bodyEntries,
  decodeProfileText,
  fitsBudget,
  matchEntry,
  parseEntry,
  parseUserText,
  PROFILE_POINTER,
  renderBody,
  renderUserText
} from "../../src/domain/UserProfileText.js"
import { utf8Bytes } from "../../src/domain/Bytes.js"

/** Visible one-line entries, multi-byte text included. */
const visibleChar = fc.oneof(
  fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789 -_.,:;!?()[]/"),
  fc.constantFrom("é", "ß", "中", "文", "😀", "🇫🇷", "→", "ü")
)
const entryArb = fc.array(visibleChar, { minLength: 1, maxLength: 24 })
  .map((cs) => cs.join("").trim())
  .filter((s) => s.length > 0)
const entriesArb = fc.uniqueArray(entryArb, { maxLength: 30 })
const INVISIBLE = [
  "\u200b", "\u200e", "\u202e", "\u2066", "\ufeff", "\u0000", "\u001b", "\u00ad", "\u061c",
  // The line separators, and the invisible characters that carry hidden text to a model: the tag characters
  // (hidden ASCII), the musical and shorthand format controls, the Hangul fillers, the grapheme joiner.
  "\u2028", "\u2029", "\u{e0001}", "\u{e0041}", "\u{e007f}", "\u{1d173}", "\u{1bca0}", "\u3164", "\u115f", "\u034f"
]

describe("entries (parseEntry)", () => {
  it("a visible one-line entry is accepted as is", () =>
    fc.assert(fc.property(entryArb, (text) => assert.deepStrictEqual(parseEntry(text), Either.right(text)))))

  it("a newline anywhere is InvalidEntry(newline)", () =>
    fc.assert(fc.property(entryArb, entryArb, fc.constantFrom("\n", "\r", "\r\n"), (a, b, nl) => {
      const r = parseEntry(`${a}${nl}${b}`)
      assert.isTrue(Either.isLeft(r) && r.left.reason === "newline")
    })))

  it("empty or whitespace-only is InvalidEntry(blank)", () =>
    fc.assert(fc.property(fc.array(fc.constantFrom(" ", "\t", "\u00a0", "\u3000")).map((a) => a.join("")), (text) => {
      const r = parseEntry(text)
      assert.isTrue(Either.isLeft(r) && r.left.reason === "blank", text)
    })))

  it("an invisible or bidi control character is InvalidEntry(invisible-character), named by code point", () =>
    fc.assert(fc.property(entryArb, fc.constantFrom(...INVISIBLE), fc.nat(), (text, bad, at) => {
      const i = at % (text.length + 1)
      const r = parseEntry(text.slice(0, i) + bad + text.slice(i))
      assert.isTrue(Either.isLeft(r) && r.left.reason === "invisible-character")
      if (Either.isLeft(r)) assert.include(r.left.message, `U+${bad.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`)
    })))

  it("the pointer's link line and an entry larger than a shard are refused", () => {
    const link = PROFILE_POINTER.split("\n")[2]!
    const r = parseEntry(link)
    assert.isTrue(Either.isLeft(r) && r.left.reason === "pointer-line")
    const big = parseEntry("x".repeat(11), 10)
    assert.isTrue(Either.isLeft(big) && big.left.reason === "too-large")
  })
})

describe("USER.md text", () => {
  it("Pi's pointer is recognised exactly and written the same", () => {
    assert.strictEqual(
      PROFILE_POINTER,
      "# User profile\n\nArchived preferences: [User preference archive](okf-memory/user-preferences/index.okf.md).\n"
    )
    assert.deepStrictEqual(parseUserText(PROFILE_POINTER), { pointer: true, entries: [] })
    assert.deepStrictEqual(parseUserText(`${PROFILE_POINTER}- likes tabs\n`), { pointer: true, entries: ["- likes tabs"] })
    // Not exactly the pointer: a plain profile whose lines are entries.
    assert.deepStrictEqual(parseUserText(PROFILE_POINTER.replace("# User profile", "# User Profile")).pointer, false)
    assert.strictEqual(renderUserText({ pointer: true, entries: [] }), PROFILE_POINTER)
    // Saved with CRLF line endings (an editor on Windows, git's autocrlf): still the pointer, never two entries.
    const crlf = `${PROFILE_POINTER}\n- likes tabs\n- uses pnpm\n`.replace(/\n/g, "\r\n")
    assert.deepStrictEqual(parseUserText(crlf), { pointer: true, entries: ["- likes tabs", "- uses pnpm"] })
  })

  it("render then parse gives the same entries, with or without the pointer", () =>
    fc.assert(fc.property(entriesArb, fc.boolean(), (entries, pointer) => {
      const text = renderUserText({ pointer, entries })
      assert.deepStrictEqual(parseUserText(text), { pointer, entries })
      assert.strictEqual(fitsBudget({ pointer, entries }, utf8Bytes(text)), true)
      assert.strictEqual(fitsBudget({ pointer, entries }, utf8Bytes(text) - 1), false)
    })))

  it("entries are the non-blank lines, CRLF tolerated", () => {
    assert.deepStrictEqual(bodyEntries("a\r\n\n  \nb\n"), ["a", "b"])
  })
})

describe("matching for replace/remove", () => {
  it("the exact text wins; else the one entry containing it; none and several are typed errors", () =>
    fc.assert(fc.property(entriesArb.filter((e) => e.length > 0), fc.nat(), (entries, pick) => {
      const i = pick % entries.length
      assert.deepStrictEqual(matchEntry(entries, entries[i]!), Either.right(i))
      const query = entries[i]!.slice(0, Math.max(1, Math.floor(entries[i]!.length / 2)))
      const containing = entries.filter((e) => e.includes(query))
      const r = matchEntry(entries, query)
      if (entries.includes(query)) assert.deepStrictEqual(r, Either.right(entries.indexOf(query)))
      else if (containing.length === 1) assert.deepStrictEqual(r, Either.right(i))
      else assert.isTrue(Either.isLeft(r) && r.left._tag === "AmbiguousEntry" && r.left.candidates.length === containing.length)
      const none = matchEntry(entries, "\u0007absent")
      assert.isTrue(Either.isLeft(none) && none.left._tag === "EntryNotFound")
    })))

  it("a query of only spaces matches no entry by containment, and a query or entry that is not a string is a typed refusal", () => {
    for (const blank of [" ", "  ", "\t", "\u00a0"]) {
      const r = matchEntry(["- likes tabs and spaces"], blank)
      assert.isTrue(Either.isLeft(r) && r.left._tag === "EntryNotFound", JSON.stringify(blank))
    }
    for (const notText of [null, undefined, 123, { a: 1 }]) {
      const r = matchEntry(["- x"], notText as unknown as string)
      assert.isTrue(Either.isLeft(r) && r.left._tag === "EntryNotFound")
      const e = parseEntry(notText as unknown as string)
      assert.isTrue(Either.isLeft(e) && e.left.reason === "not-a-string", String(notText))
    }
  })

  it("several matches are refused, listing them (never the first one silently)", () => {
    const r = matchEntry(["likes tabs", "likes vim", "hates emacs"], "likes")
    assert.isTrue(Either.isLeft(r) && r.left._tag === "AmbiguousEntry")
    if (Either.isLeft(r) && r.left._tag === "AmbiguousEntry") assert.deepStrictEqual(r.left.candidates, ["likes tabs", "likes vim"])
  })
})

describe("OKF documents and shard names", () => {
  it("a shard renders and parses back to its entries; its name depends on the body only", () =>
    fc.assert(fc.property(entriesArb.filter((e) => e.length > 0), fc.date({ noInvalidDate: true }), fc.date({ noInvalidDate: true }), (entries, t1, t2) => {
      const a = renderShard(entries, t1.toISOString())
      const parsed = parseShard(a)
      assert.isTrue(parsed.ok)
      if (parsed.ok) assert.deepStrictEqual(parsed.shard.entries, entries)
      assert.match(shardName(entries), SHARD_NAME_RE)
      // Another time, the same name.
      assert.strictEqual(shardName(entries), shardName([...entries]))
      // The time is in the file, never in the name.
      if (t1.getTime() !== t2.getTime()) assert.notStrictEqual(renderShard(entries, t2.toISOString()), a)
      const doc = parseOkf(a)
      assert.isTrue(doc.ok && doc.doc.frontMatter["type"] === "User Preference")
      if (doc.ok) assert.deepStrictEqual(doc.doc.frontMatter["tags"], ["user-preferences", "archived"])
      if (doc.ok) assert.deepStrictEqual(doc.doc.frontMatter["pi"], { scope: "user" })
    }), { numRuns: 40 }))

  it("different bodies, different names", () =>
    fc.assert(fc.property(entriesArb, entriesArb, (a, b) => {
      if (renderBody(a) !== renderBody(b)) assert.notStrictEqual(shardName(a), shardName(b))
    })))

  it("extra front-matter keys are tolerated; broken front matter is reported, never read as empty", () => {
    const withExtra = "---\ntype: User Preference\ntitle: x\nsource: pi 0.9\nnested:\n  a: [1, 2]\n---\n\none\ntwo\n"
    const parsed = parseShard(withExtra)
    assert.isTrue(parsed.ok && parsed.shard.entries.join("|") === "one|two")
    assert.isFalse(parseShard("one\ntwo\n").ok)
    assert.isFalse(parseShard("---\ntitle: [unclosed\n---\n\none\n").ok)
    assert.isFalse(parseShard("---\ntitle: x\n").ok)
    assert.isFalse(parseShard("---\n- a list\n---\n\none\n").ok)
  })

  it("the index lists its shards in order and parses back", () =>
    fc.assert(fc.property(fc.uniqueArray(entriesArb.filter((e) => e.length > 0), { maxLength: 6, selector: (e) => shardName(e) }), (groups) => {
      const names = groups.map(shardName)
      const parsed = parseIndex(renderIndex(names, "2026-01-01T00:00:00.000Z"))
      assert.deepStrictEqual(parsed, { ok: true, shards: names })
    }), { numRuns: 30 }))
})

describe("splitting into shards", () => {
  it("splits on entry boundaries only, in order, each shard under the budget unless one entry is larger", () =>
    fc.assert(fc.property(entriesArb, fc.integer({ min: 1, max: 200 }), (entries, budget) => {
      const shards = splitIntoShards(entries, budget)
      assert.deepStrictEqual(shards.flat(), entries)
      for (const s of shards) {
        assert.isAbove(s.length, 0)
        if (s.length > 1) assert.isAtMost(utf8Bytes(renderBody(s)), budget)
      }
      // The bytes of the shards, concatenated, are the bytes of the body: no UTF-8 sequence was cut.
      const joined = new Uint8Array(shards.flatMap((s) => [...new TextEncoder().encode(renderBody(s))]))
      assert.deepStrictEqual(joined, new TextEncoder().encode(renderBody(entries)))
    })))
})

const filesOf = (user: string | null, shards: ReadonlyArray<ReadonlyArray<string>>, indexed = true): ProfileFiles => ({
  user,
  indexed: indexed ? shards.map(shardName) : null,
  indexExists: indexed,
  shards: new Map(shards.map((s) => [shardName(s), { entries: s, timestamp: null }])),
  unparsable: []
})

describe("the model and its layout", () => {
  it("every fact once, archived first, whatever the files doubled", () =>
    fc.assert(fc.property(entriesArb, entriesArb, entriesArb, fc.boolean(), (a, b, hot, pointer) => {
      fc.pre(a.length > 0 && b.length > 0 && shardName(a) !== shardName(b))
      const files = filesOf(renderUserText({ pointer, entries: hot }), [a, b])
      const texts = modelEntries(buildModel(files)).map((e) => e.text)
      assert.deepStrictEqual(texts, [...new Set([...a, ...b, ...hot])])
    })))

  it("a layout holds the model's facts in order; USER.md fits its budget or is the pointer alone; shards fit theirs", () =>
    fc.assert(fc.property(entriesArb, entriesArb, fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1, max: 300 }), (archived, hot, budget, shardBudget) => {
      const model = buildModel(filesOf(renderUserText({ pointer: archived.length > 0, entries: hot.filter((h) => !archived.includes(h)) }), archived.length > 0 ? [archived] : []))
      const layout = planLayout({ ...model, archive: model.archive.map((s) => ({ ...s, dirty: true })) }, { budgetBytes: budget, shardBudgetBytes: shardBudget })
      assert.deepStrictEqual([...layout.shards.flatMap((s) => s.entries), ...layout.user.entries], modelEntries(model).map((e) => e.text))
      assert.isTrue(fitsBudget(layout.user, budget) || (layout.user.pointer && layout.user.entries.length === 0))
      for (const s of layout.shards) {
        assert.strictEqual(s.name, shardName(s.entries))
        if (s.entries.length > 1) assert.isAtMost(utf8Bytes(renderBody(s.entries)), shardBudget)
      }
      assert.strictEqual(layout.user.pointer, layout.shards.length > 0)
    })))

  it("an add over the budget moves the whole hot body into shards; USER.md becomes the pointer", () => {
    const model = buildModel(filesOf("one\ntwo\n", []))
    const applied = applyOperation(model, { _tag: "Add", text: "three" }, 1000)
    assert.isTrue(Either.isRight(applied))
    if (Either.isLeft(applied)) return
    const layout = planLayout(applied.right.model, { budgetBytes: 12, shardBudgetBytes: 1000 })
    assert.isTrue(layout.archivedHot)
    assert.deepStrictEqual(layout.shards.map((s) => s.entries), [["one", "two", "three"]])
    assert.strictEqual(renderUserText(layout.user), PROFILE_POINTER)
    const writes = diffLayout(filesOf("one\ntwo\n", []), layout)
    assert.deepStrictEqual(writes.create.map((s) => s.name), [shardName(["one", "two", "three"])])
    assert.deepStrictEqual(writes.index, [shardName(["one", "two", "three"])])
    assert.strictEqual(writes.user, PROFILE_POINTER)
  })

  it("a duplicate add and a replace by the same text change nothing; a shard left empty goes", () => {
    const files = filesOf(`${PROFILE_POINTER}\nhot\n`, [["only"]])
    const model = buildModel(files)
    const dup = applyOperation(model, { _tag: "Add", text: "only" }, 1000)
    assert.isTrue(Either.isRight(dup) && dup.right.outcome === "duplicate")
    const same = applyOperation(model, { _tag: "Replace", query: "onl", text: "only" }, 1000)
    assert.isTrue(Either.isRight(same) && same.right.outcome === "unchanged")
    const removed = applyOperation(model, { _tag: "Remove", query: "only" }, 1000)
    if (Either.isLeft(removed)) return assert.fail("remove failed")
    const layout = planLayout(removed.right.model, { budgetBytes: 8192, shardBudgetBytes: 1000 })
    const writes = diffLayout(files, layout)
    assert.deepStrictEqual(writes.obsolete, [shardName(["only"])])
    assert.deepStrictEqual(writes.index, [])
    assert.strictEqual(writes.user, "hot\n")
  })
})

describe("profile bytes are decoded strictly (decodeProfileText)", () => {
  const strict = new TextDecoder("utf-8", { fatal: true })
  const valid = (b: Uint8Array) => {
    try {
      strict.decode(b)
      return true
    } catch {
      return false
    }
  }
  it("valid UTF-8 decodes losslessly (a leading BOM aside); anything else names the first bad byte, after a valid prefix", () =>
    fc.assert(fc.property(fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.string({ unit: "binary" }).map((t) => new TextEncoder().encode(t))), (bytes) => {
      const r = decodeProfileText(bytes)
      assert.strictEqual(r.ok, valid(bytes))
      if (r.ok) {
        const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0
        assert.deepStrictEqual(new TextEncoder().encode(r.text), bytes.subarray(bom))
      } else {
        assert.isTrue(r.offset >= 0 && r.offset < bytes.length)
        assert.isTrue(valid(bytes.subarray(0, r.offset)), `the bytes before ${r.offset} are UTF-8`)
      }
    }), { numRuns: 300 }))

  it("Latin-1 café: the é (0xE9) is the first bad byte", () => {
    const r = decodeProfileText(Uint8Array.from([0x63, 0x61, 0x66, 0xe9]))
    assert.deepStrictEqual(r, { ok: false, offset: 3 })
  })
})

describe("front matter goes through one guarded decoder (decodeFrontMatter)", () => {
  it("never throws, whatever the text; a document's body is never mistaken for front matter", () =>
    fc.assert(fc.property(fc.string({ maxLength: 200 }), fc.constantFrom("", "&a x\n", "*a\n", "[", "{", "a: &x [1]\nb: *x\n"), (text, extra) => {
      const r = decodeFrontMatter(extra + text)
      assert.isBoolean(r.ok)
      assert.doesNotThrow(() => parseShard(`---\n${extra}${text}\n---\n\n- fact\n`))
    }), { numRuns: 300 }))

  it("an alias bomb of any width past the limit is refused with a reason; a few aliases are fine", () => {
    fc.assert(fc.property(fc.integer({ min: 5, max: 12 }), fc.integer({ min: 4, max: 9 }), (levels, width) => {
      const lines = ["l0: &l0 [x]"]
      for (let i = 1; i < levels; i++) lines.push(`l${i}: &l${i} [${Array(width).fill(`*l${i - 1}`).join(", ")}]`)
      const r = decodeFrontMatter(`${lines.join("\n")}\n`)
      assert.isFalse(r.ok)
      if (!r.ok) assert.match(r.why, /alias/)
    }), { numRuns: 20 })
    assert.deepStrictEqual(decodeFrontMatter("a: &x [1]\nb: *x\n"), { ok: true, value: { a: [1], b: [1] } })
  })
})

describe("finishing a journal never replaces a file changed since its writer read it (recoveryPlan)", () => {
  const files = (over: Partial<ProfileFiles> = {}): ProfileFiles => ({
    user: "old hot\n",
    indexed: ["user-preferences-1111111111111111.okf.md"],
    indexExists: true,
    shards: new Map([
      ["user-preferences-1111111111111111.okf.md", { entries: ["old"], timestamp: null }],
      [shardName(["old", "old hot"]), { entries: ["old", "old hot"], timestamp: null }]
    ]),
    unparsable: [],
    ...over
  })
  const journal: ProfileJournal = {
    version: 1,
    shards: [shardName(["old", "old hot"])],
    created: [shardName(["old", "old hot"])],
    obsolete: ["user-preferences-1111111111111111.okf.md"],
    user: PROFILE_POINTER,
    read: { user: "u0", index: "i0", obsolete: { "user-preferences-1111111111111111.okf.md": "s0" } }
  }
  const digests = (user: string, index: string, shard: string) => ({ user, index, shards: new Map([["user-preferences-1111111111111111.okf.md", shard]]) })

  it("unchanged since read: everything is finished", () => {
    const plan = recoveryPlan(journal, files(), digests("u0", "i0", "s0"))
    assert.deepStrictEqual(plan, { direction: "forward", index: true, user: PROFILE_POINTER, remove: ["user-preferences-1111111111111111.okf.md"], kept: [] })
  })

  it("each file a person changed is kept, the others finished", () =>
    fc.assert(fc.property(fc.boolean(), fc.boolean(), fc.boolean(), (userChanged, indexChanged, shardChanged) => {
      const plan = recoveryPlan(journal, files(), digests(userChanged ? "u1" : "u0", indexChanged ? "i1" : "i0", shardChanged ? "s1" : "s0"))
      assert.strictEqual(plan.user, userChanged ? null : PROFILE_POINTER)
      assert.strictEqual(plan.index, !indexChanged)
      assert.deepStrictEqual(plan.remove, shardChanged ? [] : ["user-preferences-1111111111111111.okf.md"])
      assert.deepStrictEqual([...plan.kept].sort(), [
        ...(userChanged ? ["USER.md"] : []),
        ...(indexChanged ? ["index"] : []),
        ...(shardChanged ? ["user-preferences-1111111111111111.okf.md"] : [])
      ].sort())
    })))

  it("what the writer already wrote is done, not kept; a journal from before digests finishes as it always did", () => {
    const written = files({ user: PROFILE_POINTER, indexed: journal.shards })
    assert.deepStrictEqual(recoveryPlan(journal, written, digests("u2", "i2", "s0")), {
      direction: "forward", index: false, user: null, remove: ["user-preferences-1111111111111111.okf.md"], kept: []
    })
    const { read: _, ...old } = journal
    assert.deepStrictEqual(recoveryPlan(old, files(), digests("u9", "i9", "s9")).kept, [])
  })
})
