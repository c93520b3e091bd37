/** `storage.userProfile()` through the Promise facade, on the real file system. */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { PROFILE_POINTER } from "../../src/domain/UserProfileText.js"
import { openAgentStorage } from "../../src/promise.js"

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
