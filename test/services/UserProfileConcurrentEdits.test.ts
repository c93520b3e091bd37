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
import { Effect, FastCheck as fc, Layer } from "effect"
import * as MemoryFs from "../../src/layers/MemoryFileSystem.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { UserProfile } from "../../src/services/UserProfile.js"
import { runNode } from "../support/child.js"
import { capturing, warningsOf } from "../support/logs.js"
import { AGENT, assertSettled, asProfile, profileProcess, USER } from "./userProfileSupport.js"

const EDITOR = Path.join(import.meta.dirname, "..", "fixtures", "profileEditor.mjs")
const temps: Array<string> = []
afterAll(() => temps.forEach((d) => Fs.rmSync(d, { recursive: true, force: true, maxRetries: 5 })))

describe("user profile: a person saving USER.md while the library edits it (real processes)", () => {
  it("100 saves by the person while the library adds and removes: none of the person's lines is lost", async () => {
    const agentDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-profile-person-"))
    temps.push(agentDir)
    const rounds = 100
    const layer = Layer.provideMerge(AgentDir.layerWith(agentDir), Layer.merge(NodeFileSystem.layer, NodeHost.layer))
    let done = false
    const person = runNode(EDITOR, [Path.join(agentDir, "USER.md"), String(rounds)]).finally(() => (done = true))
    const library = Effect.gen(function*() {
      const profile = yield* UserProfile.make()
      let edits = 0
      let made = 0
      let refused = 0
      // A save landing in every retry of one edit makes it refuse (typed, nothing written): that is allowed.
      const edit = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
        effect.pipe(
          Effect.zipRight(Effect.sync(() => void made++)),
          Effect.catchIf((e) => e._tag === "UnsafeProfile" && (e as { reason?: string }).reason === "changed-meanwhile", () =>
            Effect.sync(() => void refused++))
        )
      // On through the person's saves, and on until a few edits went through (a loaded machine may refuse many).
      for (let n = 0; !done || made < 5; n++) {
        edits++
        yield* edit(profile.add(`library fact ${n}`))
        // The person's editor may have saved over the fact from a stale read: their blind write, not ours.
        if (n % 2 === 1) yield* edit(profile.remove(`library fact ${n - 1}`).pipe(Effect.catchTag("EntryNotFound", () => Effect.void)))
      }
      return { edits, refused, view: yield* profile.read }
    })
    const [result, { edits, refused, view }] = await Promise.all([person, Effect.runPromise(Effect.provide(library, layer))])
    assert.strictEqual(result.code, 0, result.stderr)
    assert.strictEqual(result.stdout, `saved ${rounds}\n`)
    const texts = new Set(view.entries.map((e) => e.text))
    const lost = Array.from({ length: rounds }, (_, i) => `- person edit ${i}`).filter((line) => !texts.has(line))
    assert.deepStrictEqual(lost, [], `${lost.length} of ${rounds} saves lost over ${edits} library adds (${refused} edits refused)`)
  }, 120_000)
})

// ---------------------------------------------------------------------------------------------------------
// The Memory world: interleavings chosen by a seed, failures where they hurt.

const PERSON = "- person line"

describe("user profile: a person's edits around the library's (Memory world)", () => {
  it.effect("a write interrupted before USER.md, then a person's edit of USER.md: recovery keeps their file (ProfileEditKept), every fact once", () =>
    capturing((logged) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make({ journal: false })
        const plain = ["alpha fact", "beta fact", "gamma fact"]
        yield* world.writeFixture(USER, plain.map((e) => `${e}\n`).join(""))
        const options = { budgetBytes: 80 }
        // The archiving add writes its journal, the new shard and the index; the USER.md write fails.
        world.injectFault({ op: "replaceFileIfUnchanged.rename", path: USER, errno: "EIO" })
        const failed = yield* asProfile(world, (p) => p.add("n".repeat(60)), options).pipe(Effect.flip)
        assert.strictEqual(failed._tag, "FileSystemError")
        assert.isDefined(world.readFixture(`${AGENT}/state/user-profile/pending.json`), "the journal is left, as a crash leaves it")
        yield* world.writeFixture(USER, `${world.readFixtureText(USER)}${PERSON}\n`)
        yield* asProfile(world, (p) => p.add("next fact"), options)
        assertSettled(world, [...plain, "n".repeat(60), PERSON, "next fact"], "after recovery and the next add")
        assert.deepStrictEqual(warningsOf(logged, "ProfileEditKept").map((w) => w.annotations["path"]), [USER])
      })))

  /**
   * A person fiber saving USER.md (read, append a line, blind atomic write) while the library adds, replaces
   * and removes under a small budget (so it archives, journals and undoes too), interleaved by a seed.
   */
  it.effect.prop(
    "whatever the interleaving, none of the person's lines is lost and one more edit settles the files",
    [fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 90, max: 300 })],
    ([seed, maxYields, budgetBytes]) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make({ journal: false, jitter: { seed, maxYields } })
        yield* world.writeFixture(USER, "- seed fact\n")
        const options = { budgetBytes, shardBudgetBytes: 120 }
        const person = MemoryFs.make(world, { pid: 99 })
        const decode = (b: Uint8Array) => new TextDecoder().decode(b)
        const lines = Array.from({ length: 6 }, (_, i) => `${PERSON} ${i}`)
        const personLoop = Effect.forEach(lines, (line) =>
          Effect.gen(function*() {
            const current = yield* person.readFile(USER).pipe(Effect.map(decode), Effect.orElseSucceed(() => ""))
            yield* person.writeFileAtomic(USER, new TextEncoder().encode(`${current}${line}\n`), { sync: false })
          }), { discard: true })
        const library = profileProcess(world, options)
        const libraryLoop = library.run((p) =>
          Effect.forEach([0, 1, 2, 3, 4, 5], (i) =>
            Effect.gen(function*() {
              yield* p.add(`library fact ${i} ${"l".repeat(20)}`)
              if (i % 3 === 2) yield* p.replace(`library fact ${i - 1}`, `library fact ${i - 1} edited`)
              if (i % 3 === 0 && i > 0) yield* p.remove(`library fact ${i - 2}`)
            }).pipe(Effect.catchTags({ EntryNotFound: () => Effect.void, UnsafeProfile: (e) => (e.reason === "changed-meanwhile" ? Effect.void : Effect.fail(e)) })), { discard: true }))
        yield* Effect.all([personLoop, libraryLoop], { concurrency: "unbounded", discard: true })
        yield* asProfile(world, (p) => p.add("final fact"), options)
        const seen = new Set((yield* asProfile(world, (p) => p.read, options)).entries.map((e) => e.text))
        assert.deepStrictEqual(lines.filter((l) => !seen.has(l)), [], `seed ${seed}`)
        assertSettled(world, [...seen], `seed ${seed}`)
      }),
    { fastCheck: { numRuns: 20 } }
  )
})
