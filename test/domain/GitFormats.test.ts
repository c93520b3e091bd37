/**
 * The strict parsers of git's answers (domain/GitFormats.ts): a well-formed answer reads back exactly, and any
 * cut, trailing byte or garbled header is refused (never a short file, never a NaN size).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import {
  findPackedRef,
  gitRefusesPath,
  isBranchRef,
  nulPathsInput,
  parseCatFileBatch,
  parseHeadFile,
  parseLog,
  parseLooseRef,
  parseLsTree,
  parseNulPaths,
  parseObjectIdLine
} from "../../src/domain/GitFormats.js"
import { bytesOfName, nameOfBytes } from "../../src/domain/NameBytes.js"

const enc = (s: string) => new TextEncoder().encode(s)
const cat = (...parts: ReadonlyArray<Uint8Array | string>): Uint8Array => {
  const bytes = parts.map((p) => (typeof p === "string" ? enc(p) : p))
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0))
  let at = 0
  for (const b of bytes) {
    out.set(b, at)
    at += b.length
  }
  return out
}

const oid = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => Buffer.from(b).toString("hex"))
const blob = fc.uint8Array({ maxLength: 40 })
/** Path components: any bytes but `/` and NUL, never `.` or `..`. */
const component = fc.uint8Array({ minLength: 1, maxLength: 8 })
  .map((b) => b.map((x) => (x === 0 || x === 0x2f ? 0x61 : x)))
  .filter((b) => !(b.length <= 2 && b.every((x) => x === 0x2e)))
const repoPath = fc.tuple(fc.constantFrom("agent", "web"), fc.array(component, { minLength: 1, maxLength: 3 }))
  .map(([scope, parts]) => [scope, ...parts.map(nameOfBytes)].join("/"))

/** A `cat-file --batch` answer for these blobs, as git writes it. */
const batchAnswer = (items: ReadonlyArray<readonly [string, Uint8Array]>) =>
  cat(...items.flatMap(([id, b]) => [`${id} blob ${b.length}\n`, b, "\n"]))

describe("git's answers, parsed strictly (pure)", () => {
  it.prop("cat-file --batch: reads back exactly; every cut and every trailing byte is refused", [
    fc.uniqueArray(fc.tuple(oid, blob), { minLength: 1, maxLength: 4, selector: ([id]) => id })
  ], ([items]) => {
    const answer = batchAnswer(items)
    const ids = items.map(([id]) => id)
    const read = parseCatFileBatch(answer, ids, 1 << 20)
    assert.isTrue(read.ok)
    assert.deepStrictEqual(read.ok && read.value.map((b) => [...b]), items.map(([, b]) => [...b]))
    for (let cut = 0; cut < answer.length; cut++) assert.isFalse(parseCatFileBatch(answer.subarray(0, cut), ids, 1 << 20).ok, `cut at ${cut}`)
    assert.isFalse(parseCatFileBatch(cat(answer, "x"), ids, 1 << 20).ok)
    assert.isFalse(parseCatFileBatch(cat(answer, "\n"), ids, 1 << 20).ok)
  }, { fastCheck: { numRuns: 100 } })

  it("cat-file --batch: a missing object, another object, a size not exact or too large are refused", () => {
    const id = "0123456789abcdef0123456789abcdef01234567"
    const other = "89abcdef0123456789abcdef0123456789abcdef"
    const refused = (answer: string, why: RegExp, max = 100) => {
      const r = parseCatFileBatch(enc(answer), [id], max)
      assert.isFalse(r.ok, answer)
      assert.match(r.ok ? "" : r.why, why)
    }
    refused(`${id} missing\n`, /missing/)
    refused(`${other} blob 1\nx\n`, /asked for/)
    refused(`${id} tree 1\nx\n`, /not a blob/)
    refused(`${id} blob 01\nx\n`, /not a header/)
    refused(`${id} blob +1\nx\n`, /not a header/)
    refused(`${id} blob 1.0\nx\n`, /not a header/)
    refused(`${id} blob  1\nx\n`, /not a header/)
    refused(`${id} blob 5\nxxxxx\n`, /more than 4/, 4)
    refused(`${id} blob 1\nxy`, /not followed by its newline/)
    refused(`${id} blob 99999999999999999\n`, /not a header|more than/)
    assert.deepStrictEqual(parseCatFileBatch(enc(`${id} blob 0\n\n`), [id], 0), { ok: true, value: [new Uint8Array(0)] })
  })

  it.prop("NUL-separated paths: any bytes but NUL round trip as names; the input git is given is their bytes", [
    fc.array(repoPath, { maxLength: 5 })
  ], ([paths]) => {
    const input = nulPathsInput(paths)
    assert.deepStrictEqual(parseNulPaths(input, 10), { ok: true, value: paths })
    for (const p of paths) assert.deepStrictEqual([...bytesOfName(p)], [...bytesOfName(nameOfBytes(bytesOfName(p)))])
    if (input.length > 0) assert.isFalse(parseNulPaths(input.subarray(0, -1), 10).ok, "an unterminated record")
  }, { fastCheck: { numRuns: 200 } })

  it("NUL-separated paths: empty records, `.`/`..`, a leading slash and too many records are refused", () => {
    for (const bad of ["\0", "a\0\0", "a//b\0", "/a\0", "a/\0", "a/./b\0", "a/../b\0", "a"]) assert.isFalse(parseNulPaths(enc(bad), 10).ok, JSON.stringify(bad))
    assert.isFalse(parseNulPaths(enc("a\0b\0c\0"), 2).ok)
    assert.deepStrictEqual(parseNulPaths(new Uint8Array(0), 2), { ok: true, value: [] })
    assert.throws(() => nulPathsInput(["a\0b"]))
  })

  it.prop("ls-tree -r -z: regular files under the scopes read back; links, submodules, strays and repeats are refused", [
    fc.uniqueArray(fc.tuple(repoPath, oid, fc.constantFrom("100644", "100755")), { maxLength: 4, selector: ([p]) => p })
  ], ([entries]) => {
    const answer = cat(...entries.flatMap(([p, id, mode]) => [`${mode} blob ${id}\t`, bytesOfName(p), "\0"]))
    const read = parseLsTree(answer, { scopes: ["agent", "web"], max: 10 })
    assert.deepStrictEqual(read, { ok: true, value: entries.map(([path, id]) => ({ path, oid: id })) })
    if (answer.length > 0) assert.isFalse(parseLsTree(answer.subarray(0, -1), { scopes: ["agent", "web"], max: 10 }).ok)
  }, { fastCheck: { numRuns: 100 } })

  it("ls-tree: what the history never stores is damage", () => {
    const id = "0123456789abcdef0123456789abcdef01234567"
    const scopes = { scopes: ["agent"], max: 10 }
    for (const bad of [
      `120000 blob ${id}\tagent/link\0`,
      `160000 commit ${id}\tagent/sub\0`,
      `040000 tree ${id}\tagent/dir\0`,
      `100644 blob ${id}\tweb/x\0`,
      `100644 blob ${id}\tagent/x\x00100644 blob ${id}\tagent/x\0`,
      `100644 blob ${id.slice(1)}\tagent/x\0`,
      `100644 blob ${id} agent/x\0`,
      `100644 blob ${id}\tagent\0`
    ]) assert.isFalse(parseLsTree(enc(bad), scopes).ok, bad)
  })

  it.prop("log: headers and paths read back whatever the subject holds (but NUL and newline)", [
    fc.array(fc.tuple(oid, fc.integer({ min: 0, max: 4_000_000_000 }), fc.string().map((s) => s.replace(/[\0\n]/g, "")), fc.array(repoPath, { maxLength: 3 })), { maxLength: 4 })
  ], ([commits]) => {
    const answer = cat(...commits.flatMap(([id, seconds, subject, paths]) => [
      `/${id}/${seconds}/`, bytesOfName(subject), "\0",
      ...(paths.length === 0 ? [] : ["\n", ...paths.flatMap((p) => [bytesOfName(p), "\0"])])
    ]))
    const read = parseLog(answer, { limit: 10, maxPaths: 10 })
    assert.deepStrictEqual(read, { ok: true, value: commits.map(([revision, seconds, subject, paths]) => ({ revision, seconds, subject, paths })) })
    if (answer.length > 0) assert.isFalse(parseLog(answer.subarray(0, -1), { limit: 10, maxPaths: 10 }).ok)
  }, { fastCheck: { numRuns: 200 } })

  it("log: a malformed header, a path before any commit, more commits than asked are refused", () => {
    const id = "0123456789abcdef0123456789abcdef01234567"
    for (const bad of [`/${id}/x/s\0`, `/${id.slice(2)}/1/s\0`, "agent/x\0", `/${id}/1/s\0agent/x\0`, `/${id}/99999999999999/s\0`]) {
      assert.isFalse(parseLog(enc(bad), { limit: 5, maxPaths: 5 }).ok, bad)
    }
    assert.isFalse(parseLog(enc(`/${id}/1/a\0/${id}/2/b\0`), { limit: 1, maxPaths: 5 }).ok)
    assert.isFalse(parseLog(enc(`/${id}/1/a\0\nagent/x\0agent/y\0`), { limit: 1, maxPaths: 1 }).ok)
  })

  it("HEAD, refs and packed-refs: a branch or a commit id and nothing else", () => {
    const id = "0123456789abcdef0123456789abcdef01234567"
    assert.deepStrictEqual(parseHeadFile(enc("ref: refs/heads/main\n")), { ok: true, value: { _tag: "Branch", ref: "refs/heads/main" } })
    assert.deepStrictEqual(parseHeadFile(enc(`${id}\n`)), { ok: true, value: { _tag: "Detached", oid: id } })
    for (const bad of ["", "garbage\n", "ref: refs/tags/x\n", "ref: refs/heads/../../x\n", "ref: refs/heads/a b\n", `${id}\n\n`, "ref:  refs/heads/main\n"]) {
      assert.isFalse(parseHeadFile(enc(bad)).ok, JSON.stringify(bad))
    }
    for (const bad of ["refs/heads/.x", "refs/heads/x.lock", "refs/heads/x/", "refs/heads/a@{1}", "refs/heads/", "refs/heads/x."]) assert.isFalse(isBranchRef(bad), bad)
    assert.isTrue(isBranchRef("refs/heads/feature/x-1.2"))
    assert.deepStrictEqual(parseLooseRef(enc(`${id}\n`)), { ok: true, value: id })
    for (const bad of [id, `${id}\n\n`, `ref: refs/heads/x\n`, `${id.toUpperCase()}\n`]) assert.isFalse(parseObjectIdLine(enc(bad)).ok, bad)
    const packed = `# pack-refs with: peeled fully-peeled sorted \n${id} refs/heads/main\n^${id}\n${id} refs/tags/v1\n`
    assert.deepStrictEqual(findPackedRef(enc(packed), "refs/heads/main"), { ok: true, value: id })
    assert.deepStrictEqual(findPackedRef(enc(packed), "refs/heads/other"), { ok: true, value: undefined })
    for (const bad of [`${id} refs/heads/main`, `junk\n`, `^${id}\n`, `${id} refs/heads/main\n${id} refs/heads/main\n`]) {
      assert.isFalse(findPackedRef(enc(bad), "refs/heads/main").ok, bad)
    }
  })

  it("names git refuses: .git in any case and its NTFS synonyms, in any component", () => {
    for (const bad of [".git", ".GIT", "a/.Git/b", "a/.git ", "a/.git. . ", "git~1", "a/GIT~1/b", ".git:stream", "a\\.git", "x/a\\git~1", "\\\\.git", "a/./b", "a/../b"]) {
      assert.isNotNull(gitRefusesPath(`web/${bad}`), bad)
    }
    for (const ok of [".gitignore", ".gitattributes", ".gitx", "git", "git~2", "a.git", "x\\y", "\\.git", ".github/workflows", "caf\udce9"]) {
      assert.isNull(gitRefusesPath(`web/${ok}`), ok)
    }
  })
})
