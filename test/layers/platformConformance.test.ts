/**
 * The `@effect/platform` conformance suite over both file systems: `@effect/platform-node` on a real scratch
 * directory, and `platformLayer` (from `pi-agent-storage/testing`) over a fresh simulated world.
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as NodePath from "node:path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePlatformPath from "@effect/platform-node/NodePath"
import * as FileSystem from "@effect/platform/FileSystem"
import type { PlatformError } from "@effect/platform/Error"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer, type Scope } from "effect"
import { MemoryWorld, platformLayer } from "../../src/testing.js"
import { platformConformance, PlatformScratch } from "./platformConformance.js"

const uid = process.getuid?.() ?? 0
const gid = process.getgid?.() ?? 0
/** Reads the umask without changing it (the Memory process gets the same one, so modes compare). */
const currentUmask = () => {
  const mask = process.umask(0o022)
  process.umask(mask)
  return mask
}

platformConformance("Node (@effect/platform-node)", {
  layer: () =>
    Layer.mergeAll(
      NodeFileSystem.layer,
      NodePlatformPath.layer,
      Layer.scoped(
        PlatformScratch,
        Effect.acquireRelease(
          Effect.promise(async () => ({ root: await fsp.realpath(await fsp.mkdtemp(NodePath.join(os.tmpdir(), "pi-platform-conformance-"))), uid })),
          ({ root }) => Effect.promise(() => fsp.rm(root, { recursive: true, force: true }))
        )
      )
    )
})

platformConformance("Memory (platformLayer)", {
  layer: () =>
    Layer.unwrapEffect(Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture("/scratch", { mode: 0o700, uid }) // as mkdtemp makes the Node one
      return Layer.merge(platformLayer(world, { uid, gid, umask: currentUmask() }), Layer.succeed(PlatformScratch, { root: "/scratch", uid }))
    }))
})

// ------------------------------------------------------------------------------------------------ differential

/**
 * A random platform call on a small set of names (files, directories and links collide often). Link targets
 * never leave the scratch root, wherever the link is (what lies outside differs between the two).
 */
const NAMES = ["a", "b", "d", "d/a", "d/e", "d/e/f"] as const
const name = fc.constantFrom(...NAMES)
const operation = fc.oneof(
  fc.record({ op: fc.constant("writeFile" as const), path: name, text: fc.string({ maxLength: 6 }), flag: fc.constantFrom("w", "a", "wx") }),
  fc.record({ op: fc.constant("makeDirectory" as const), path: name, recursive: fc.boolean() }),
  fc.record({ op: fc.constant("remove" as const), path: name, recursive: fc.boolean(), force: fc.boolean() }),
  fc.record({ op: fc.constant("rename" as const), path: name, to: name }),
  fc.record({ op: fc.constant("truncate" as const), path: name, length: fc.nat({ max: 9 }) }),
  fc.record({ op: fc.constant("symlink" as const), path: name, target: fc.constantFrom("a", "d", "d/../a", "missing", "e") }),
  fc.record({ op: fc.constant("link" as const), path: name, to: name }),
  fc.record({ op: fc.constant("copyFile" as const), path: name, to: name }),
  fc.record({ op: fc.constant("copy" as const), path: name, to: name, overwrite: fc.boolean() }),
  fc.record({ op: fc.constant("chmod" as const), path: name, mode: fc.constantFrom(0o600, 0o644, 0o700, 0o755) }),
  fc.record({ op: fc.constant("readFile" as const), path: name }),
  fc.record({ op: fc.constant("readDirectory" as const), path: fc.constantFrom(".", "d", "d/e", "a"), recursive: fc.boolean() }),
  fc.record({ op: fc.constant("stat" as const), path: name }),
  fc.record({ op: fc.constant("readLink" as const), path: name }),
  fc.record({ op: fc.constant("append" as const), path: name, text: fc.string({ minLength: 1, maxLength: 4 }) }),
  fc.record({ op: fc.constant("openWrite" as const), path: name, flag: fc.constantFrom("r+", "w", "wx", "a+", "ax"), at: fc.nat({ max: 6 }), text: fc.string({ maxLength: 4 }) }),
  fc.record({ op: fc.constant("realPath" as const), path: name }),
  fc.record({ op: fc.constant("exists" as const), path: name })
)
type Operation = typeof operation extends fc.Arbitrary<infer A> ? A : never

/** What one call shows: its value (root-relative, order-free) or its error's reason, errno and method. */
const outcome = (fs: FileSystem.FileSystem, root: string, o: Operation): Effect.Effect<unknown> => {
  const at = (p: string) => `${root}/${p}`
  const call: Effect.Effect<unknown, PlatformError, Scope.Scope> = (() => {
    switch (o.op) {
      case "writeFile": return fs.writeFileString(at(o.path), o.text, { flag: o.flag as "w" | "a" | "wx" })
      // Typed void (Node's recursive mkdir returns a path at run time nobody may rely on).
      case "makeDirectory": return Effect.asVoid(fs.makeDirectory(at(o.path), { recursive: o.recursive }))
      case "remove": return fs.remove(at(o.path), { recursive: o.recursive, force: o.force })
      case "rename": return fs.rename(at(o.path), at(o.to))
      case "truncate": return fs.truncate(at(o.path), o.length)
      case "symlink": return fs.symlink(o.target, at(o.path))
      case "link": return fs.link(at(o.path), at(o.to))
      case "copyFile": return fs.copyFile(at(o.path), at(o.to))
      case "copy": return fs.copy(at(o.path), at(o.to), { overwrite: o.overwrite })
      case "chmod": return fs.chmod(at(o.path), o.mode)
      case "readFile": return fs.readFileString(at(o.path))
      case "readDirectory": return Effect.map(fs.readDirectory(at(o.path), { recursive: o.recursive }), (names) => [...names].sort())
      case "stat": return Effect.map(fs.stat(at(o.path)), (s) => [s.type, s.type === "Directory" ? -1 : Number(s.size), s.mode & 0o7777, s.nlink])
      case "readLink": return Effect.map(fs.readLink(at(o.path)), (t) => t.split(root).join("<root>"))
      case "append": return Effect.flatMap(fs.open(at(o.path), { flag: "a" }), (file) => file.writeAll(new TextEncoder().encode(o.text)))
      case "openWrite":
        return Effect.flatMap(fs.open(at(o.path), { flag: o.flag as FileSystem.OpenFlag }), (file) =>
          Effect.zipRight(file.seek(o.at, "start"), Effect.map(file.write(new TextEncoder().encode(o.text)), Number)))
      case "realPath": return Effect.map(fs.realPath(at(o.path)), (p) => p.split(root).join("<root>"))
      case "exists": return fs.exists(at(o.path))
    }
  })()
  return Effect.scoped(call).pipe(
    Effect.map((value) => ({ ok: value ?? null })),
    Effect.catchAll((e) => {
      if (e._tag !== "SystemError") return Effect.succeed({ error: e._tag })
      // Node's cp lstats source and destination at once (Promise.all): when both fail, which error wins is a race.
      if (o.op === "copy" && e.syscall === "lstat") return Effect.succeed({ error: "copy: lstat failed" })
      return Effect.succeed({ error: `${e.reason} ${(e.cause as { code?: string }).code} ${e.method}` })
    })
  )
}

/** The tree under a Node directory, links not followed: type, permission bits, content, link target. */
const nodeTree = (root: string) => {
  const out: Record<string, string> = {}
  const visit = (rel: string) => {
    const full = rel === "" ? root : `${root}/${rel}`
    const st = fs.lstatSync(full)
    if (rel !== "") {
      out[rel] = st.isSymbolicLink()
        ? `link ${fs.readlinkSync(full).split(root).join("<root>")}`
        : st.isDirectory() ? `dir ${(st.mode & 0o7777).toString(8)}` : `file ${(st.mode & 0o7777).toString(8)} ${st.nlink} ${fs.readFileSync(full, "utf8")}`
    }
    if (st.isDirectory()) for (const n of fs.readdirSync(full)) visit(rel === "" ? n : `${rel}/${n}`)
  }
  visit("")
  return out
}

const memoryTree = (world: MemoryWorld, root: string) => {
  const out: Record<string, string> = {}
  for (const [path, e] of Object.entries(world.tree(root))) {
    if (path === root) continue
    const rel = path.slice(root.length + 1)
    out[rel] = e.type === "SymbolicLink"
      ? `link ${e.target!.split(root).join("<root>")}`
      : e.type === "Directory" ? `dir ${e.mode.toString(8)}` : `file ${e.mode.toString(8)} ${e.nlink} ${world.readFixtureText(path)}`
  }
  return out
}

describe("@effect/platform FileSystem: Memory and Node agree on random call sequences", () => {
  it.effect.prop(
    "every call's value or error, and the tree after them, are the same on both",
    [fc.array(operation, { minLength: 1, maxLength: 20 })],
    ([operations]) =>
      Effect.acquireUseRelease(
        Effect.sync(() => fs.realpathSync(fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-platform-differential-")))),
        (nodeRoot) =>
          Effect.gen(function*() {
            const world = MemoryWorld.make()
            yield* world.mkdirFixture("/scratch", { mode: 0o700, uid }) // as mkdtemp makes the Node one
            const memory = yield* Effect.provide(FileSystem.FileSystem, platformLayer(world, { uid, gid, umask: currentUmask() }))
            const node = yield* Effect.provide(FileSystem.FileSystem, NodeFileSystem.layer)
            for (const [i, o] of operations.entries()) {
              const onNode = yield* outcome(node, nodeRoot, o)
              const onMemory = yield* outcome(memory, "/scratch", o)
              assert.deepStrictEqual(onMemory, onNode, `call ${i} ${JSON.stringify(o)}`)
            }
            assert.deepStrictEqual(memoryTree(world, "/scratch"), nodeTree(nodeRoot))
          }),
        (nodeRoot) => Effect.sync(() => fs.rmSync(nodeRoot, { recursive: true, force: true }))
      ),
    { fastCheck: { numRuns: 40 } }
  )
})
