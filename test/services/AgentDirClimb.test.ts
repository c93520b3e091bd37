/**
 * A root link whose target climbs (`..`) resolves where the kernel goes (AgentDir.ts `resolveRootLink`): `..`
 * is taken from the directory reached, so behind a symlinked parent (`~/.pi -> /disk/pi`, `~/.pi/agent ->
 * ../agent`) the agent dir is `/disk/agent`, not the `~/agent` the path as written names. Examples in the
 * Memory world (which resolves paths as path_resolution(7) does) and on real files; a property over random
 * layouts of directories and links holds the answer to the node the kernel's own resolution reaches.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import * as MemoryFileSystem from "../../src/layers/MemoryFileSystem.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import * as NodeWorld from "../../src/layers/NodeWorld.js"
import { AgentDir, resolveRootLink, rootLinkHops } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"

const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

const memoryFs = (world: MemoryWorld) => MemoryFileSystem.make(world)

describe("a root link that climbs resolves where the kernel goes", () => {
  it.effect("behind a symlinked parent (Memory): the target's parent, not the parent as written", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      yield* world.mkdirFixture("/disk/pi")
      yield* world.mkdirFixture("/disk/agent/work")
      yield* world.mkdirFixture("/home/user")
      yield* world.symlinkFixture("/disk/pi", "/home/user/.pi")
      yield* world.symlinkFixture("../agent", "/disk/pi/agent")
      const fs = memoryFs(world)
      assert.strictEqual(yield* resolveRootLink(fs, "/home/user/.pi/agent"), "/disk/agent")
      assert.deepStrictEqual(yield* rootLinkHops(fs, "/home/user/.pi/agent"), ["/home/user/.pi/agent", "/disk/agent"])
      const dir = yield* AgentDir.make("/home/user/.pi/agent", "option").pipe(Effect.provideService(FileSystem, fs))
      assert.strictEqual(dir.path, "/disk/agent")
      assert.strictEqual(dir.given, "/home/user/.pi/agent")
      assert.strictEqual(dir.paths.workRoot, "/disk/agent/work")
    }))

  it.effect("a link on the way of the target is followed before the `..` after it", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      yield* world.mkdirFixture("/a/real/deep")
      yield* world.mkdirFixture("/a/agent")
      yield* world.mkdirFixture("/home")
      yield* world.symlinkFixture("/a/real/deep", "/home/via")
      // /home/root-link -> via/../../agent: via is /a/real/deep, its parent's parent holds agent.
      yield* world.symlinkFixture("via/../../agent", "/home/root-link")
      assert.strictEqual(yield* resolveRootLink(memoryFs(world), "/home/root-link"), "/a/agent")
    }))

  it.effect("a target that climbs through no link answers as before; one the kernel could not walk is not followed", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      yield* world.mkdirFixture("/home/user/.pi")
      yield* world.mkdirFixture("/home/user/data/agent")
      yield* world.symlinkFixture("../data/agent", "/home/user/.pi/agent")
      const fs = memoryFs(world)
      assert.strictEqual(yield* resolveRootLink(fs, "/home/user/.pi/agent"), "/home/user/data/agent")
      // Where the kernel would fail, or a step cannot be examined, the link is the answer (the reader reports a
      // symlink): never the directory the path as written names, which the kernel would not reach.
      yield* world.mkdirFixture("/home/user/real")
      yield* world.writeFixture("/home/user/file", "x")
      yield* world.symlinkFixture("loop", "/home/user/loop")
      const cases: Array<[string, string]> = [
        ["missing/../real", "a step missing (ENOENT)"],
        ["file/../real", "a step that is a file (ENOTDIR)"],
        ["loop/../real", "a step that is a loop (ELOOP)"],
        ["../gone/x/../user/real", "a step that cannot be examined (EACCES)"]
      ]
      world.injectFault({ op: "lstat", path: "/home/gone", count: Infinity, errno: "EACCES" })
      for (const [target, why] of cases) {
        const link = `/home/user/link-${cases.findIndex(([t]) => t === target)}`
        yield* world.symlinkFixture(target, link)
        assert.strictEqual(yield* resolveRootLink(fs, link), link, why)
        assert.deepStrictEqual(yield* rootLinkHops(fs, link), [link], why)
      }
    }))

  it.effect("a chain of links is followed as far as the kernel follows one (40); a loop stops on a link", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make({ journal: false })
      yield* world.mkdirFixture("/disk/agent")
      yield* world.symlinkFixture("/disk/agent", "/home/l12")
      for (let i = 11; i >= 1; i--) yield* world.symlinkFixture(`l${i + 1}`, `/home/l${i}`)
      const fs = memoryFs(world)
      assert.strictEqual(yield* resolveRootLink(fs, "/home/l1"), "/disk/agent")
      yield* world.symlinkFixture("loop-b", "/home/loop-a")
      yield* world.symlinkFixture("loop-a", "/home/loop-b")
      const looped = yield* resolveRootLink(fs, "/home/loop-a")
      assert.strictEqual((yield* fs.lstat(looped)).type, "SymbolicLink")
    }))

  it.effect("on real files: the agent dir behind a symlinked parent is the one the kernel reaches", () =>
    Effect.gen(function*() {
      const base = Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-agent-climb-")))
      temps.push(base)
      Fs.mkdirSync(Path.join(base, "disk", "pi"), { recursive: true })
      Fs.mkdirSync(Path.join(base, "disk", "agent"))
      Fs.mkdirSync(Path.join(base, "home"))
      Fs.mkdirSync(Path.join(base, "agent")) // where the path as written leads: another directory
      Fs.symlinkSync(Path.join(base, "disk", "pi"), Path.join(base, "home", ".pi"))
      Fs.symlinkSync("../agent", Path.join(base, "disk", "pi", "agent"))
      const given = Path.join(base, "home", ".pi", "agent")
      const dir = yield* AgentDir.make(given, "option").pipe(Effect.provide(NodeWorld.layer))
      assert.strictEqual(dir.path, Fs.realpathSync(given))
      assert.strictEqual(dir.path, Path.join(base, "disk", "agent"))
      assert.strictEqual(dir.given, given)
    }))
})

/** Paths below /r a target may name, some through links and back out of them. */
const BODIES = ["d0", "d1", "d0/e0", "d1/e1", "d0/e0/f", "d1/f", "l0", "d0/l1", "d1/l2", "l0/..", "d0/l1/..", "d1/l2/../e1", "d0/e0/l3/../..", "l0/../d1"]

/**
 * A random layout: directories at three depths under /r, and links at five places whose targets climb out
 * of where they are (`..` up to three times) and name one of BODIES, or name it from /r (absolute).
 */
const layoutArb = fc.record({
  dirs: fc.uniqueArray(fc.constantFrom("/r/d0", "/r/d1", "/r/d0/e0", "/r/d1/e1", "/r/d0/e0/f", "/r/d1/f"), { minLength: 2 }),
  links: fc.uniqueArray(
    fc.record({
      at: fc.constantFrom("/r/l0", "/r/d0/l1", "/r/d1/l2", "/r/d0/e0/l3", "/r/d1/e1/l4"),
      up: fc.integer({ min: 0, max: 3 }),
      body: fc.constantFrom(...BODIES),
      absolute: fc.boolean()
    }),
    { minLength: 1, maxLength: 5, selector: (link) => link.at }
  )
})

describe("resolveRootLink agrees with the kernel's resolution (property, Memory)", () => {
  it.effect("the answer, looked at without following it, is the node the given path reaches (or the walk gave up)", () =>
    Effect.sync(() => {
      let compared = 0
      fc.assert(
        fc.property(layoutArb, ({ dirs, links }) => {
          const start = links[0]!.at
          const world = MemoryWorld.make({ journal: false })
          const fs = memoryFs(world)
          Effect.runSync(Effect.gen(function*() {
            // A link whose directory is missing is not made (the fixture refuses it): that layout has fewer links.
            for (const dir of [...dirs].sort()) yield* world.mkdirFixture(dir)
            for (const link of links) {
              const target = link.absolute ? `/r/${link.body}` : [...Array.from({ length: link.up }, () => ".."), link.body].join("/")
              yield* world.symlinkFixture(target, link.at).pipe(Effect.catchAllDefect(() => Effect.void))
            }
          }))
          const reached = Effect.runSync(Effect.either(fs.statFollowingLinks(start)))
          const answer = Effect.runSync(resolveRootLink(fs, start))
          const seen = Effect.runSync(Effect.either(fs.lstat(answer)))
          if (reached._tag === "Left") {
            // The kernel reaches nothing (dangling, a loop, a file on the way): neither may the answer be a directory.
            assert.isFalse(seen._tag === "Right" && seen.right.type === "Directory", `${start} -> ${answer}: ${JSON.stringify({ dirs, links })}`)
            return
          }
          // A chain longer than Linux's 40 links stops on a link, where the kernel's own walk would fail too.
          if (seen._tag === "Right" && seen.right.type === "SymbolicLink") return
          compared++
          assert.strictEqual(seen._tag, "Right", `${start} -> ${answer}: ${JSON.stringify({ dirs, links })}`)
          if (seen._tag === "Right") assert.strictEqual(seen.right.ino, reached.right.ino, `${start} -> ${answer}: ${JSON.stringify({ dirs, links })}`)
        }),
        { numRuns: 600 }
      )
      assert.isAbove(compared, 100)
    }))
})
