/** `storage.userProfile()` through the Promise facade, on the real file system. */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { PROFILE_POINTER } from "../../src/domain/UserProfileText.js"
import { openAgentStorage } from "../../src/promise.js"
import { aliasBombShard, BINARY_USER, BOMB_SHARD, LATIN1_OFFSET, LATIN1_USER } from "../support/hostileProfile.js"

const temps: Array<string> = []
afterAll(() => temps.forEach((d) => Fs.rmSync(d, { recursive: true, force: true })))

const rejection = async (p: Promise<unknown>): Promise<{ _tag?: string; candidates?: ReadonlyArray<string> }> => {
  try {
    await p
  } catch (e) {
    return e as { _tag?: string }
  }
  return assert.fail("expected a rejection")
}

describe("facade: storage.userProfile()", () => {
  it("does no I/O until a method is called, then adds, archives, edits and rejects with the typed errors", async () => {
    const parent = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-profile-facade-"))
    temps.push(parent)
    const agentDir = Path.join(parent, "agent")
    const storage = await openAgentStorage({ agentDir, migrate: false })
    const profile = storage.userProfile({ budgetBytes: 50 })
    assert.isFalse(Fs.existsSync(agentDir))
    assert.strictEqual((await profile.add("- Prefers concise answers")).outcome, "added")
    assert.strictEqual((await profile.add("- Prefers concise answers")).outcome, "duplicate")
    const archived = await profile.add("- Prefers short commit messages")
    assert.isTrue(archived.archived)
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), PROFILE_POINTER)
    const ambiguous = await rejection(profile.replace("Prefers", "x"))
    assert.strictEqual(ambiguous._tag, "AmbiguousEntry")
    assert.deepStrictEqual(ambiguous.candidates, ["- Prefers concise answers", "- Prefers short commit messages"])
    assert.strictEqual((await rejection(profile.remove("emacs")))._tag, "EntryNotFound")
    assert.strictEqual((await rejection(profile.add("a\nb")))._tag, "InvalidEntry")
    assert.strictEqual((await rejection(storage.userProfile({ budgetBytes: 0 }).read()))._tag, "InvalidArgument")
    await profile.replace("concise", "- Prefers short answers")
    const view = await profile.read()
    assert.deepStrictEqual(view.entries.map((e) => e.text), ["- Prefers short answers", "- Prefers short commit messages"])
    await storage.close()
    assert.strictEqual((await rejection(profile.read()))._tag, "StorageClosed")
  })
})

describe("facade: profile files it must not rewrite", () => {
  const agentWith = (user: Uint8Array) => {
    const agentDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-profile-facade-"))
    temps.push(agentDir)
    Fs.writeFileSync(Path.join(agentDir, "USER.md"), user)
    return agentDir
  }

  for (const [name, bytes, offset] of [["Latin-1", LATIN1_USER, LATIN1_OFFSET], ["binary", BINARY_USER, 0]] as const) {
    it(`a ${name} USER.md: read and every edit reject UnsafeProfile (not-utf8, the first bad byte named), its bytes untouched`, async () => {
      const agentDir = agentWith(bytes)
      const storage = await openAgentStorage({ agentDir, migrate: false })
      const profile = storage.userProfile()
      // Each call is started only when awaited: a promise made early rejects with no handler yet.
      const attempts = [() => profile.read(), () => profile.add("- Likes tabs"), () => profile.replace("pnpm", "- Uses bun"), () => profile.remove("pnpm")]
      for (const attempt of attempts) {
        const e = await rejection(attempt()) as { _tag?: string; reason?: string; message?: string }
        assert.deepStrictEqual([e._tag, e.reason], ["UnsafeProfile", "not-utf8"])
        assert.include(e.message, `offset ${offset}`)
        assert.include(e.message, Path.join(agentDir, "USER.md"))
      }
      await storage.close()
      assert.deepStrictEqual(new Uint8Array(Fs.readFileSync(Path.join(agentDir, "USER.md"))), bytes)
      assert.deepStrictEqual(Fs.readdirSync(agentDir).filter((n) => n !== "state"), ["USER.md"])
    })
  }

  it("a plain JavaScript caller's null or number is a typed rejection (isStorageError), and a blank query removes nothing", async () => {
    const parent = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-profile-facade-kinds-"))
    temps.push(parent)
    const agentDir = Path.join(parent, "agent")
    const { isStorageError } = await import("../../src/promise.js")
    const storage = await openAgentStorage({ agentDir, migrate: false })
    try {
      const profile = storage.userProfile()
      await profile.add("- only fact with spaces")
      for (const notText of [null, 123]) {
        const e = await rejection(profile.add(notText as unknown as string))
        assert.strictEqual(e._tag, "InvalidEntry")
        assert.isTrue(isStorageError(e))
        assert.strictEqual((await rejection(profile.remove(notText as unknown as string)))._tag, "EntryNotFound")
      }
      assert.strictEqual((await rejection(profile.remove(" ")))._tag, "EntryNotFound")
      assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), "- only fact with spaces\n")
    } finally {
      await storage.close()
    }
  })

  it("a shard whose front matter is a YAML alias bomb: read lists it, an edit rejects UnsafeProfile, nothing is rewritten", async () => {
    const agentDir = agentWith(new TextEncoder().encode("- Uses pnpm\n"))
    const archive = Path.join(agentDir, "okf-memory", "user-preferences")
    Fs.mkdirSync(archive, { recursive: true })
    Fs.writeFileSync(Path.join(archive, BOMB_SHARD), aliasBombShard())
    const storage = await openAgentStorage({ agentDir, migrate: false })
    const profile = storage.userProfile()
    const view = await profile.read()
    assert.deepStrictEqual(view.entries.map((e) => e.text), ["- Uses pnpm"])
    assert.deepStrictEqual(view.unparsable.map((u) => [u._tag, u.shard]), [["ShardUnparsable", BOMB_SHARD]])
    assert.match(view.unparsable[0]!.why, /alias/)
    const e = await rejection(profile.add("- Likes tabs")) as { _tag?: string; reason?: string }
    assert.deepStrictEqual([e._tag, e.reason], ["UnsafeProfile", "unparsable-shard"])
    await storage.close()
    assert.strictEqual(Fs.readFileSync(Path.join(archive, BOMB_SHARD), "utf8"), aliasBombShard())
    assert.strictEqual(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8"), "- Uses pnpm\n")
    assert.deepStrictEqual(Fs.readdirSync(archive), [BOMB_SHARD])
  })
})
