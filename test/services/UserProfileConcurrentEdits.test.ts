/**
 * MEM1 and DESIGN "Safety rules" with a real person on the real file system: a child process keeps saving
 * its own edits to USER.md (read, append a line, save as an editor does) while the library keeps editing the
 * profile. A file a person may edit is replaced only if it is still what the library read, so none of the
 * person's saves is lost: every one of their lines is in the profile at the end.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { UserProfile } from "../../src/services/UserProfile.js"
import { runNode } from "../support/child.js"

const EDITOR = Path.join(import.meta.dirname, "..", "fixtures", "profileEditor.mjs")
const temps: Array<string> = []
afterAll(() => temps.forEach((d) => Fs.rmSync(d, { recursive: true, force: true, maxRetries: 5 })))

describe("user profile: a person saving USER.md while the library edits it (real processes)", () => {
  it("100 saves by the person while the library adds and removes: none of the person's lines is lost", async () => {
    const agentDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-profile-person-"))
    temps.push(agentDir)
    const rounds = 100
    const layer = Layer.provideMerge(AgentDir.layer(agentDir), Layer.merge(NodeFileSystem.layer, NodeHost.layer))
    let done = false
    const person = runNode(EDITOR, [Path.join(agentDir, "USER.md"), String(rounds)]).finally(() => (done = true))
    const library = Effect.gen(function*() {
      const profile = yield* UserProfile.make()
      let n = 0
      let refused = 0
      // A save landing in every retry of one edit makes it refuse (typed, nothing written): that is allowed.
      const edit = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
        effect.pipe(Effect.catchIf((e) => e._tag === "UnsafeProfile" && (e as { reason?: string }).reason === "changed-meanwhile", () =>
          Effect.sync(() => void refused++)))
      while (!done) {
        yield* edit(profile.add(`library fact ${n}`))
        // The person's editor may have saved over the fact from a stale read: their blind write, not ours.
        if (n % 2 === 1) yield* edit(profile.remove(`library fact ${n - 1}`).pipe(Effect.catchTag("EntryNotFound", () => Effect.void)))
        n++
      }
      return { mutations: n, refused, view: yield* profile.read }
    })
    const [result, { mutations, refused, view }] = await Promise.all([person, Effect.runPromise(Effect.provide(library, layer))])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.strictEqual(result.stdout, `saved ${rounds}\n`)
    assert.isAtLeast(mutations - refused, 5, `the library was editing all along (${refused} of ${mutations} adds refused)`)
    const texts = new Set(view.entries.map((e) => e.text))
    const lost = Array.from({ length: rounds }, (_, i) => `- person edit ${i}`).filter((line) => !texts.has(line))
    assert.deepStrictEqual(lost, [], `${lost.length} of ${rounds} saves lost over ${mutations} library edits`)
  }, 120_000)
})
