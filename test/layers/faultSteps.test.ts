/**
 * docs/testing.md "Testing your code against the simulated world" cannot drift from the world:
 * the options of `MemoryWorld.make` and `MemoryWorld.layer` it lists are those of their option types; the
 * Memory layers' `step` takes only `FAULT_STEPS` (a type), the page lists exactly them, and a workload
 * through the port and the platform layer reaches every one of them (the journal records each step it passes).
 */
import * as fs from "node:fs"
import { FileSystem as PlatformFileSystem } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { FileSystem, MemoryWorld } from "../../src/index.js"
import { FAULT_STEPS, platformLayer } from "../../src/testing.js"
import ts from "typescript"

const TESTING_PAGE = fs.readFileSync(new URL("../../docs/testing.md", import.meta.url), "utf8")
const bytes = (s: string) => new TextEncoder().encode(s)

/** The backticked step names of the "Fault steps" paragraph of docs/testing.md. */
const readmeSteps = (markdown: string): Array<string> => {
  const start = markdown.indexOf("**Fault steps**")
  assert.isAtLeast(start, 0, "docs/testing.md has a **Fault steps** paragraph")
  const paragraph = markdown.slice(start, markdown.indexOf("\n\n", start))
  return [...paragraph.matchAll(/`([\w:]+\.\w+)`/g)].map((m) => m[1]!)
}

/** The member names of an interface in a source file. */
const membersOf = (file: string, name: string): Array<string> => {
  const source = ts.createSourceFile(file, fs.readFileSync(new URL(file, import.meta.url), "utf8"), ts.ScriptTarget.Latest, true)
  const found = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name)
  assert.isDefined(found, `${name} in ${file}`)
  return found!.members.map((m) => m.name!.getText(source))
}

describe("docs/testing.md", () => {
  it("lists every option of MemoryWorld.make and MemoryWorld.layer", () => {
    for (const [call, file, name] of [
      ["MemoryWorld.make", "../../src/layers/MemoryWorld.ts", "MemoryWorldOptions"],
      ["MemoryWorld.layer(world", "../../src/layers/MemoryTesting.ts", "MemoryProcessOptions"]
    ] as const) {
      const line = new RegExp("^- `" + call.replace(/[.(]/g, "\\$&") + "[^`]*\\{([^}]*)\\}", "m").exec(TESTING_PAGE)
      assert.isNotNull(line, `the bullet for ${call} in docs/testing.md`)
      const listed = line![1]!.split(",").map((o) => o.trim().replace(/\?$/, "")).sort()
      assert.deepStrictEqual(listed, membersOf(file, name).sort(), call)
    }
  })
})

describe("fault steps", () => {
  it("docs/testing.md lists exactly FAULT_STEPS", () => {
    assert.deepStrictEqual([...readmeSteps(TESTING_PAGE)].sort(), [...FAULT_STEPS].sort())
  })

  it.scoped("a workload passes every step in FAULT_STEPS, and no other", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const proc = { hostname: "ci", pid: 4242 }
      const layer = Layer.merge(MemoryWorld.layer(world, proc), platformLayer(world, proc))
      yield* Effect.gen(function*() {
        const port = yield* FileSystem
        yield* port.makeDirectory("/w/a", { recursive: true })
        yield* port.makeDirectory("/w/b")
        yield* port.writeFileAtomic("/w/a/f", bytes("1"))
        // A failed rename leaves a temp file, which the cleanup step removes.
        world.injectFault({ op: "writeFileAtomic.rename", errno: "EIO" })
        yield* Effect.flip(port.writeFileAtomic("/w/a/f", bytes("2")))
        yield* port.replaceFileIfUnchanged("/w/a/g", null, bytes("g"))
        world.injectFault({ op: "replaceFileIfUnchanged.rename", errno: "EIO" })
        yield* Effect.flip(port.replaceFileIfUnchanged("/w/a/h", null, bytes("h")))
        const info = yield* port.lstat("/w/a/g")
        yield* port.replaceFileIfUnchanged("/w/a/g", { dev: info.dev, ino: info.ino, bytes: bytes("g") }, null)
        yield* port.writeFileExclusive("/w/a/x", bytes("x"))
        yield* port.linkEach("/w/a", "/w/b", ["f"])
        yield* port.removeTree("/w/b", { maxEntries: 100, maxDepth: 10 })

        const pfs = yield* PlatformFileSystem.FileSystem
        yield* pfs.makeDirectory("/p/src", { recursive: true })
        yield* pfs.makeDirectory("/tmp")
        yield* pfs.writeFileString("/p/src/file", "p")
        yield* pfs.symlink("file", "/p/src/link")
        yield* pfs.copy("/p/src", "/p/dst")
        yield* pfs.copy("/p/src", "/p/dst", { overwrite: true })
        yield* pfs.remove("/p/dst", { recursive: true })
        yield* Effect.scoped(Effect.flatMap(pfs.makeTempDirectoryScoped(), (dir) => pfs.writeFileString(`${dir}/t`, "t")))
        yield* Effect.scoped(pfs.makeTempFileScoped())
      }).pipe(Effect.provide(layer))
      const steps = new Set(world.journal.map((e) => e.op).filter((op) => op.includes(".")))
      assert.deepStrictEqual([...steps].sort(), [...FAULT_STEPS].sort())
    }))
})
