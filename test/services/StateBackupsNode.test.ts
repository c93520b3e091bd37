/**
 * State snapshots on the Node layer, in temp dirs: inodes (links for unchanged files, copies for changed
 * content and mode-only changes, never a live inode in a snapshot), verify, restore and its move-aside, one
 * extension's restore, symlinks and special files, the root's safety, forget, and real processes (SIGKILL
 * mid-create, two creators at once; they run the built library, `npm test` builds first).
 */
import { spawn, spawnSync } from "node:child_process"
import * as nfs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { FileSystemError } from "../../src/domain/Errors.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import * as NodeWorld from "../../src/layers/NodeWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { StateBackups, type StateBackupsOptions } from "../../src/services/StateBackups.js"
import { scratchDirs } from "../support/scratchDirs.js"
import { du } from "../support/du.js"

const scratch = scratchDirs()

const CHILD = fileURLToPath(new URL("../fixtures/stateBackupChild.mjs", import.meta.url))

const setup = (files: Record<string, string> = {}) => {
  const base = scratch("pi-snap-")
  const agent = NodePath.join(base, "agent")
  const web = NodePath.join(base, "web-data")
  const root = NodePath.join(base, "backups")
  for (const [rel, content] of Object.entries(files)) {
    const path = NodePath.join(base, rel)
    nfs.mkdirSync(NodePath.dirname(path), { recursive: true })
    nfs.writeFileSync(path, content)
  }
  nfs.mkdirSync(agent, { recursive: true })
  return { base, agent, web, root, at: (rel: string) => NodePath.join(base, rel) }
}

const backupsLayer = (agent: string, options: StateBackupsOptions, world: Layer.Layer<FileSystem | import("../../src/services/Host.js").Host> = NodeWorld.layer) =>
  StateBackups.layerWith(options).pipe(Layer.provideMerge(AgentDir.layerWith(agent)), Layer.provideMerge(world))

const withBackups = <A, E>(
  agent: string,
  options: StateBackupsOptions,
  use: (b: StateBackups["Type"]) => Effect.Effect<A, E>,
  world?: Layer.Layer<FileSystem | import("../../src/services/Host.js").Host>
) => Effect.provide(Effect.flatMap(StateBackups, use), backupsLayer(agent, options, world))

/** A Node FileSystem with some calls replaced (fault injection for the Node tests). */
const patchedWorld = (patch: (real: FileSystem["Type"]) => Partial<FileSystem["Type"]>) =>
  Layer.merge(
    NodeHost.layer,
    Layer.effect(FileSystem, Effect.map(Effect.provide(FileSystem, NodeWorld.layer), (real) => ({ ...real, ...patch(real) })))
  )

const ino = (path: string) => nfs.lstatSync(path).ino

/** Every inode of regular files under `dir`. */
const inodes = (dir: string): Set<number> => {
  const out = new Set<number>()
  for (const entry of nfs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) out.add(ino(NodePath.join(entry.parentPath, entry.name)))
  }
  return out
}

const STATE_FILES = {
  "agent/state/a.txt": "alpha",
  "agent/state/b.txt": "bravo",
  "agent/state/c.txt": "charlie",
  "agent/state/extensions/foo/x.json": "{\"x\":1}",
  "agent/state/backups/config/history.txt": "config history (not ours)",
  "agent/sessions/s1.jsonl": "{}\n",
  "agent/MEMORY.md": "# memory",
  "agent/settings.json": "{}",
  "agent/cache/big.bin": "rebuildable",
  "agent/work/extensions/foo/run/x": "transient"
}

describe("StateBackups (Node layer)", () => {
  it.live("links unchanged files, copies changed content and mode-only changes, never shares a live inode", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      nfs.chmodSync(t.at("agent/state/c.txt"), 0o600)
      // Directories keep their live mode: one we can fill as it is (0750), one we cannot (0500: chmod once full).
      nfs.chmodSync(t.at("agent/state/extensions"), 0o750)
      nfs.chmodSync(t.at("agent/state/extensions/foo"), 0o500)
      const first = yield* withBackups(t.agent, { root: t.root }, (b) => b.create({ label: "first" }))
      for (const [rel, mode] of [["agent/state/extensions", 0o750], ["agent/state/extensions/foo", 0o500]] as const) {
        assert.strictEqual(nfs.statSync(NodePath.join(t.root, first.id, rel)).mode & 0o7777, mode, rel)
      }
      assert.strictEqual(first.files, 6)
      assert.strictEqual(first.copiedFiles, 6)
      assert.strictEqual(first.linkedFiles, 0)
      const s1 = NodePath.join(t.root, first.id)
      const manifest = JSON.parse(nfs.readFileSync(NodePath.join(s1, "manifest.json"), "utf8"))
      const paths = manifest.entries.map((e: { path: string }) => e.path)
      for (const p of ["agent/state/a.txt", "agent/sessions/s1.jsonl", "agent/MEMORY.md", "agent/state/extensions/foo/x.json"]) assert.include(paths, p)
      for (const p of paths) assert.notMatch(p, /settings\.json|cache|work|backups/)
      assert.strictEqual(manifest.label, "first")
      assert.strictEqual(manifest.tool.name, "pi-agent-storage")
      // Plain browsable copies with the live file's mode and mtime; the root is private.
      assert.strictEqual(nfs.readFileSync(NodePath.join(s1, "agent/state/a.txt"), "utf8"), "alpha")
      assert.strictEqual(nfs.statSync(NodePath.join(s1, "agent/state/c.txt")).mode & 0o777, 0o600)
      assert.strictEqual(
        Math.floor(nfs.statSync(NodePath.join(s1, "agent/MEMORY.md")).mtimeMs),
        Math.floor(nfs.statSync(t.at("agent/MEMORY.md")).mtimeMs)
      )
      assert.strictEqual(nfs.statSync(t.root).mode & 0o777, 0o700)

      nfs.writeFileSync(t.at("agent/state/b.txt"), "BRAVO")
      nfs.utimesSync(t.at("agent/state/b.txt"), new Date(2020, 1, 1), new Date(2020, 1, 1))
      nfs.chmodSync(t.at("agent/state/c.txt"), 0o640)
      const second = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      const s2 = NodePath.join(t.root, second.id)
      assert.strictEqual(second.linkedFiles, 4)
      assert.strictEqual(second.copiedFiles, 2)
      assert.strictEqual(ino(NodePath.join(s2, "agent/state/a.txt")), ino(NodePath.join(s1, "agent/state/a.txt")))
      assert.notStrictEqual(ino(NodePath.join(s2, "agent/state/b.txt")), ino(NodePath.join(s1, "agent/state/b.txt")))
      assert.notStrictEqual(ino(NodePath.join(s2, "agent/state/c.txt")), ino(NodePath.join(s1, "agent/state/c.txt")))
      assert.strictEqual(nfs.statSync(NodePath.join(s1, "agent/state/c.txt")).mode & 0o777, 0o600, "the old snapshot keeps its mode")
      const snapshotInodes = inodes(t.root)
      for (const live of inodes(t.agent)) assert.isFalse(snapshotInodes.has(live), "a live inode is in a snapshot")
      const listed = yield* withBackups(t.agent, { root: t.root }, (b) => b.list())
      assert.deepStrictEqual(listed.map((s) => s.id), [second.id, first.id])
      // b and c (5 + 7 bytes) are unique to each snapshot; the linked four are shared. Disk usage: their blocks.
      assert.deepStrictEqual(listed.map((s) => s.uniqueApparentBytes), [12, 12])
      const t0 = (id: string) => NodePath.join(t.root, id)
      const blocks = (id: string) => ["b.txt", "c.txt"].reduce((sum, f) => sum + nfs.lstatSync(NodePath.join(t0(id), "agent/state", f)).blocks * 512, 0)
      assert.deepStrictEqual(listed.map((s) => s.uniqueBytes), [blocks(second.id), blocks(first.id)])
      // A snapshot's size is du's of its directory (the files it shares with the other counted in each).
      for (const s of listed) assert.deepStrictEqual({ bytes: s.bytes, apparentBytes: s.apparentBytes }, du(t0(s.id)))
      assert.strictEqual(listed[1]!.label, "first")
    }))

  it.live("verify catches a flipped byte and a deleted file; a sliced verify rolls on", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      const { id } = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      assert.isTrue((yield* withBackups(t.agent, { root: t.root }, (b) => b.verify())).ok)
      const snap = NodePath.join(t.root, id)
      const a = NodePath.join(snap, "agent/state/a.txt")
      const bytes = nfs.readFileSync(a)
      bytes[2] = bytes[2]! ^ 0x01
      nfs.writeFileSync(a, bytes)
      nfs.unlinkSync(NodePath.join(snap, "agent/MEMORY.md"))
      const result = yield* withBackups(t.agent, { root: t.root }, (b) => b.verify(id))
      assert.isFalse(result.ok)
      assert.deepStrictEqual(result.corrupt, [`${id}/agent/state/a.txt`])
      assert.deepStrictEqual(result.missing, [`${id}/agent/MEMORY.md`])
      assert.sameDeepMembers(result.problems.map((p) => [p._tag, p.path]), [["ContentMismatch", `${id}/agent/state/a.txt`], ["Missing", `${id}/agent/MEMORY.md`]])
      assert.match(result.problems.find((p) => p._tag === "ContentMismatch")!.message, /: its SHA-256 differs from the manifest's$/)
      assert.isTrue(result.complete)
      // Slices of 4 entries: the third run has covered all (at least 10 entries), each starts where the last stopped.
      const seen: Array<number> = []
      for (let i = 0; i < 4; i++) {
        const slice = yield* withBackups(t.agent, { root: t.root }, (b) => b.verify(undefined, { sample: 4 }))
        seen.push(slice.checked)
        if (i === 0) assert.isFalse(slice.complete)
      }
      assert.deepStrictEqual(seen.slice(0, 2), [4, 4])
      const bad = yield* withBackups(t.agent, { root: t.root }, (b) => Effect.flip(b.verify("nope")))
      assert.strictEqual(bad._tag, "SnapshotNotFound")
    }))

  it.live("a snapshot directory keeps its live mode under a setgid directory (mkdir would add the bit)", () =>
    Effect.gen(function*() {
      const t = setup({ ...STATE_FILES, "agent/state/shared/inner/f.txt": "f" })
      nfs.chmodSync(t.at("agent/state/shared"), 0o2775)
      nfs.chmodSync(t.at("agent/state/shared/inner"), 0o755)
      const { id } = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      const snap = NodePath.join(t.root, id)
      const modeOf = (rel: string) => nfs.lstatSync(NodePath.join(snap, rel)).mode & 0o7777
      assert.strictEqual(modeOf("agent/state/shared").toString(8), "2775")
      assert.strictEqual(modeOf("agent/state/shared/inner").toString(8), "755")
    }))

  it.live("verify calls a path that is now another type a TypeMismatch: a file where a link was, a FIFO where a file was", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      nfs.symlinkSync("a.txt", t.at("agent/state/link"))
      const { id } = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      const snap = NodePath.join(t.root, id)
      nfs.unlinkSync(NodePath.join(snap, "agent/state/link"))
      nfs.writeFileSync(NodePath.join(snap, "agent/state/link"), "a file now")
      nfs.unlinkSync(NodePath.join(snap, "agent/state/b.txt"))
      assert.strictEqual(spawnSync("mkfifo", [NodePath.join(snap, "agent/state/b.txt")]).status, 0)
      const result = yield* withBackups(t.agent, { root: t.root }, (b) => b.verify(id))
      assert.isFalse(result.ok)
      const byPath = Object.fromEntries(result.problems.map((p) => [p.path, p]))
      assert.strictEqual(byPath[`${id}/agent/state/link`]?._tag, "TypeMismatch")
      assert.match(byPath[`${id}/agent/state/link`]!.message, /is a regular file, the manifest records a symlink$/)
      assert.strictEqual(byPath[`${id}/agent/state/b.txt`]?._tag, "TypeMismatch")
      assert.match(byPath[`${id}/agent/state/b.txt`]!.message, /the manifest records a regular file$/)
    }))

  it.live("restore moves the live scope aside, copies back, and editing restored data leaves the snapshot verifying", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      const { id } = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      nfs.writeFileSync(t.at("agent/state/a.txt"), "edited")
      nfs.writeFileSync(t.at("agent/state/new.txt"), "new since")
      nfs.unlinkSync(t.at("agent/state/b.txt"))
      nfs.writeFileSync(t.at("agent/MEMORY.md"), "# newer memory")
      const dry = yield* withBackups(t.agent, { root: t.root }, (b) => b.restore(id, { dryRun: true }))
      assert.isTrue(dry.dryRun)
      assert.include(dry.restored, t.at("agent/state/a.txt"))
      assert.strictEqual(nfs.readFileSync(t.at("agent/state/a.txt"), "utf8"), "edited", "a dry run changes nothing")
      const result = yield* withBackups(t.agent, { root: t.root }, (b) => b.restore(id))
      assert.isNotNull(result.movedAside)
      const aside = result.movedAside!
      assert.isTrue(aside.startsWith(t.at("agent/state/restore-aside/")))
      assert.strictEqual(nfs.readFileSync(NodePath.join(aside, "agent/state/a.txt"), "utf8"), "edited")
      assert.strictEqual(nfs.readFileSync(NodePath.join(aside, "agent/state/new.txt"), "utf8"), "new since")
      assert.strictEqual(nfs.readFileSync(NodePath.join(aside, "agent/MEMORY.md"), "utf8"), "# newer memory")
      assert.strictEqual(nfs.readFileSync(t.at("agent/state/a.txt"), "utf8"), "alpha")
      assert.strictEqual(nfs.readFileSync(t.at("agent/state/b.txt"), "utf8"), "bravo")
      assert.strictEqual(nfs.readFileSync(t.at("agent/MEMORY.md"), "utf8"), "# memory")
      assert.isFalse(nfs.existsSync(t.at("agent/state/new.txt")))
      // Config history and everything out of scope stayed where it was.
      assert.strictEqual(nfs.readFileSync(t.at("agent/state/backups/config/history.txt"), "utf8"), "config history (not ours)")
      assert.strictEqual(nfs.readFileSync(t.at("agent/settings.json"), "utf8"), "{}")
      const snapshotInodes = inodes(NodePath.join(t.root, id))
      for (const live of inodes(t.agent)) assert.isFalse(snapshotInodes.has(live), "restore linked a snapshot file into live data")
      nfs.writeFileSync(t.at("agent/state/a.txt"), "edited after restore")
      nfs.chmodSync(t.at("agent/state/b.txt"), 0o666)
      assert.isTrue((yield* withBackups(t.agent, { root: t.root }, (b) => b.verify(id))).ok)
      // The next snapshot does not back up the restore-aside data.
      const next = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      const names = JSON.parse(nfs.readFileSync(NodePath.join(t.root, next.id, "manifest.json"), "utf8")).entries.map((e: { path: string }) => e.path)
      assert.isFalse(names.some((p: string) => p.includes("restore-aside")))
    }))

  it.live("one extension's restore touches nothing else (agent state and web state tier)", () =>
    Effect.gen(function*() {
      const t = setup({
        ...STATE_FILES,
        "agent/state/extensions/bar/y.json": "bar y",
        "web-data/foo/state/z.db": "foo z",
        "web-data/foo/config/settings.json": "foo config (not snapshotted)",
        "web-data/bar/state/w.txt": "bar w"
      })
      const opts = { root: t.root, webDataRoot: t.web }
      const { id } = yield* withBackups(t.agent, opts, (b) => b.create())
      for (const rel of ["agent/state/extensions/foo/x.json", "agent/state/extensions/bar/y.json", "web-data/foo/state/z.db", "web-data/bar/state/w.txt", "agent/state/a.txt"]) {
        nfs.writeFileSync(t.at(rel), "changed")
      }
      const result = yield* withBackups(t.agent, opts, (b) => b.restore(id, { extension: "foo" }))
      assert.deepStrictEqual([...result.restored].sort(), [t.at("agent/state/extensions/foo/x.json"), t.at("web-data/foo/state/z.db")])
      assert.strictEqual(nfs.readFileSync(t.at("agent/state/extensions/foo/x.json"), "utf8"), "{\"x\":1}")
      assert.strictEqual(nfs.readFileSync(t.at("web-data/foo/state/z.db"), "utf8"), "foo z")
      for (const rel of ["agent/state/extensions/bar/y.json", "web-data/bar/state/w.txt", "agent/state/a.txt"]) {
        assert.strictEqual(nfs.readFileSync(t.at(rel), "utf8"), "changed", rel)
      }
      assert.strictEqual(nfs.readFileSync(t.at("web-data/foo/config/settings.json"), "utf8"), "foo config (not snapshotted)")
      assert.strictEqual(nfs.readFileSync(NodePath.join(result.movedAside!, "agent/state/extensions/foo/x.json"), "utf8"), "changed")
      assert.strictEqual(nfs.readFileSync(NodePath.join(result.movedAside!, "web/foo/state/z.db"), "utf8"), "changed")
      assert.deepStrictEqual(nfs.readdirSync(NodePath.join(result.movedAside!, "agent/state/extensions")), ["foo"])
    }))

  it.live("restore --extension with a namespace that climbs out of the scope is InvalidSegment and moves nothing", () =>
    Effect.gen(function*() {
      const t = setup({ ...STATE_FILES, "Documents/letter.txt": "the user's own" })
      const opts = { root: t.root }
      const { id } = yield* withBackups(t.agent, opts, (b) => b.create())
      for (const ns of ["../../../Documents", "../../MEMORY.md", "Foo"]) {
        const e = yield* Effect.flip(withBackups(t.agent, opts, (b) => b.restore(id, { extension: ns })))
        assert.strictEqual(e._tag, "InvalidSegment", ns)
      }
      assert.strictEqual(nfs.readFileSync(t.at("Documents/letter.txt"), "utf8"), "the user's own")
      assert.isTrue(nfs.existsSync(t.at("agent/MEMORY.md")))
      assert.isFalse(nfs.existsSync(t.at("agent/state/restore-aside")))
    }))

  it.live("symlinks are recorded, never followed; special files are skipped and reported; live SQLite groups are copied", () =>
    Effect.gen(function*() {
      const t = setup({ ...STATE_FILES, "outside/secret.txt": "outside the scope", "agent/state/db.sqlite": "db", "agent/state/db.sqlite-wal": "wal" })
      nfs.rmSync(t.at("agent/sessions"), { recursive: true })
      nfs.mkdirSync(t.at("big-disk/sessions"), { recursive: true })
      nfs.writeFileSync(t.at("big-disk/sessions/s2.jsonl"), "on the big disk")
      nfs.symlinkSync(t.at("big-disk/sessions"), t.at("agent/sessions"))
      nfs.symlinkSync("../MEMORY.md", t.at("agent/state/rel-link"))
      nfs.symlinkSync(t.at("outside"), t.at("agent/state/dir-link"))
      assert.strictEqual(spawnSync("mkfifo", [t.at("agent/state/fifo")]).status, 0)
      const first = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      const snap = NodePath.join(t.root, first.id)
      assert.strictEqual(nfs.readlinkSync(NodePath.join(snap, "agent/state/rel-link")), "../MEMORY.md")
      assert.strictEqual(nfs.readlinkSync(NodePath.join(snap, "agent/state/dir-link")), t.at("outside"))
      assert.isTrue(nfs.lstatSync(NodePath.join(snap, "agent/state/dir-link")).isSymbolicLink())
      assert.isFalse(JSON.stringify(nfs.readFileSync(NodePath.join(snap, "manifest.json"), "utf8")).includes("secret.txt"))
      assert.deepStrictEqual(first.skipped.map((s) => s.path), ["agent/state/fifo"])
      assert.strictEqual(first.skipped[0]!._tag, "SpecialFile")
      assert.strictEqual(first.skipped[0]!.message, "not in the snapshot: agent/state/fifo: special file (FIFO, socket or device)")
      assert.isFalse(nfs.existsSync(NodePath.join(snap, "agent/state/fifo")))
      assert.deepStrictEqual(first.sqliteLive, ["agent/state/db.sqlite"])
      // A top-level entry that links to another disk (the user's choice) is snapshotted through the link.
      assert.strictEqual(nfs.readFileSync(NodePath.join(snap, "agent/sessions/s2.jsonl"), "utf8"), "on the big disk")
      assert.isTrue(nfs.lstatSync(NodePath.join(snap, "agent/sessions")).isDirectory())
      assert.isTrue((yield* withBackups(t.agent, { root: t.root }, (b) => b.verify())).ok)
      // Unchanged, the group is still copied (never linked): both snapshots keep their own consistent pair.
      const second = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      assert.notStrictEqual(ino(NodePath.join(t.root, second.id, "agent/state/db.sqlite-wal")), ino(NodePath.join(snap, "agent/state/db.sqlite-wal")))
      assert.strictEqual(ino(NodePath.join(t.root, second.id, "agent/state/a.txt")), ino(NodePath.join(snap, "agent/state/a.txt")))
    }))

  it.live("a file changing while copied is retried once, then recorded; a failing link falls back to a copy", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      const grow = (times: number) =>
        patchedWorld((real) => {
          let left = times
          // A writer between the walk's look and the end of the copy: the copy's own look at its source differs.
          return {
            copyFileStamped: (from, to) =>
              Effect.zipRight(
                Effect.sync(() => {
                  if (from.endsWith("a.txt") && left-- > 0) nfs.appendFileSync(from, "+")
                }),
                real.copyFileStamped(from, to)
              )
          }
        })
      const once = yield* withBackups(t.agent, { root: t.root }, (b) => b.create(), grow(1))
      assert.deepStrictEqual(once.changedDuringBackup, [])
      assert.strictEqual(nfs.readFileSync(NodePath.join(t.root, once.id, "agent/state/a.txt"), "utf8"), "alpha+")
      nfs.writeFileSync(t.at("agent/state/a.txt"), "changed again") // else it is linked, not copied
      const twice = yield* withBackups(t.agent, { root: t.root }, (b) => b.create(), grow(2))
      assert.deepStrictEqual(twice.changedDuringBackup, ["agent/state/a.txt"])
      assert.deepStrictEqual(twice.problems, [{
        _tag: "ChangedDuringBackup",
        path: "agent/state/a.txt",
        message: "agent/state/a.txt changed while it was copied (twice): the copy may mix two versions"
      }])
      const entry = JSON.parse(nfs.readFileSync(NodePath.join(t.root, twice.id, "manifest.json"), "utf8")).entries
        .find((e: { path: string }) => e.path === "agent/state/a.txt")
      assert.isTrue(entry.changedDuringBackup)
      const emlinkError = (path: string) => new FileSystemError({ reason: "Unknown", errno: "EMLINK", method: "linkEach", path })
      const emlink = patchedWorld(() => ({
        link: (_a, b) => Effect.fail(emlinkError(b)),
        linkEach: (_from, to, names) => Effect.succeed(names.map((n) => emlinkError(`${to}/${n}`)))
      }))
      const fallback = yield* withBackups(t.agent, { root: t.root }, (b) => b.create(), emlink)
      assert.strictEqual(fallback.linkedFiles, 0)
      assert.isAbove(fallback.linkFallbacks, 3)
      assert.strictEqual(fallback.copiedFiles, fallback.files)
      assert.isTrue((yield* withBackups(t.agent, { root: t.root }, (b) => b.verify())).ok)
      // EMLINK for some names of a directory's run: those are copies, the rest links, in the walk's order.
      const some = patchedWorld((real) => ({
        linkEach: (from, to, names) =>
          Effect.map(real.linkEach(from, to, names.filter((n) => n !== "b.txt")), (answers) => {
            const out = [...answers]
            const at = names.indexOf("b.txt")
            if (at >= 0) out.splice(at, 0, emlinkError(`${to}/b.txt`))
            return out
          })
      }))
      const mixed = yield* withBackups(t.agent, { root: t.root }, (b) => b.create(), some)
      assert.strictEqual(mixed.linkFallbacks, 1)
      assert.strictEqual(mixed.linkedFiles + mixed.copiedFiles, mixed.files)
      const orderOf = (id: string) =>
        JSON.parse(nfs.readFileSync(NodePath.join(t.root, id, "manifest.json"), "utf8")).entries.map((e: { path: string }) => e.path)
      assert.deepStrictEqual(orderOf(mixed.id), orderOf(fallback.id))
      const fresh = (rel: string) => ino(NodePath.join(t.root, mixed.id, rel)) !== ino(NodePath.join(t.root, fallback.id, rel))
      assert.isTrue(fresh("agent/state/b.txt"), "the failed link is a copy")
      assert.isFalse(fresh("agent/state/c.txt"), "the names after it in the run are still linked")
      assert.isTrue((yield* withBackups(t.agent, { root: t.root }, (b) => b.verify())).ok)
    }))

  it.live("the snapshot's files and manifest are synced once, after the last of them and before the rename that lists it", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      const seen: Array<{ path: string; files: number; manifest: boolean }> = []
      const watch = patchedWorld((real) => ({
        syncFileSystem: (path) =>
          Effect.zipRight(
            Effect.sync(() =>
              seen.push({
                path,
                files: nfs.readdirSync(path, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length,
                manifest: nfs.existsSync(NodePath.join(path, "manifest.json"))
              })),
            real.syncFileSystem(path)
          )
      }))
      for (const round of [1, 2]) {
        const created = yield* withBackups(t.agent, { root: t.root }, (b) => b.create(), watch)
        assert.strictEqual(seen.length, round)
        const at = seen[round - 1]!
        // The building directory, not yet listed, holding every file of the snapshot, its manifest and the owner marker.
        assert.strictEqual(at.path, NodePath.join(t.root, `.incomplete-${created.id}`))
        assert.strictEqual(at.files, created.files + 2)
        assert.isTrue(at.manifest)
        if (round === 2) assert.strictEqual(created.linkedFiles, created.files)
      }
      // A failing sync fails the create: nothing is listed that was not made durable.
      const failing = patchedWorld(() => ({
        syncFileSystem: (path) => Effect.fail(new FileSystemError({ reason: "Unknown", errno: "EIO", method: "syncFileSystem", path }))
      }))
      const error = yield* withBackups(t.agent, { root: t.root }, (b) => Effect.flip(b.create()), failing)
      assert.strictEqual(error._tag === "FileSystemError" && error.errno, "EIO")
      assert.strictEqual((yield* withBackups(t.agent, { root: t.root }, (b) => b.list())).length, 2)
    }))

  it.live("an unsafe backup root is refused, typed, and nothing is created", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      const refuse = (root: string) => withBackups(t.agent, { root }, (b) => Effect.flip(b.create()))
      const inside = yield* refuse(t.at("agent/state/snapshots"))
      assert.strictEqual(inside._tag, "UnsafeBackupRoot")
      assert.strictEqual(inside._tag === "UnsafeBackupRoot" && inside.reason, "inside-snapshotted-tree")
      assert.isFalse(nfs.existsSync(t.at("agent/state/snapshots")))
      // The same directory under another name (a symlinked ancestor) is inside by identity.
      nfs.symlinkSync(t.at("agent/sessions"), t.at("alias"))
      const alias = yield* refuse(t.at("alias/bk"))
      assert.strictEqual(alias._tag === "UnsafeBackupRoot" && alias.reason, "inside-snapshotted-tree")
      assert.isFalse(nfs.existsSync(t.at("agent/sessions/bk")))
      // A link into a subdirectory of a snapshotted tree: the root's physical ancestors include the tree
      // (the same containment rule as the tiers'; a walk of the root's textual ancestors missed this).
      nfs.mkdirSync(t.at("agent/sessions/deep"))
      nfs.symlinkSync(t.at("agent/sessions/deep"), t.at("into"))
      const into = yield* refuse(t.at("into/bk"))
      assert.strictEqual(into._tag === "UnsafeBackupRoot" && into.reason, "inside-snapshotted-tree")
      assert.isFalse(nfs.existsSync(t.at("agent/sessions/deep/bk")))
      nfs.mkdirSync(t.at("real"), { mode: 0o700 })
      nfs.symlinkSync(t.at("real"), t.at("linked-root"))
      const link = yield* refuse(t.at("linked-root"))
      assert.strictEqual(link._tag === "UnsafeBackupRoot" && link.reason, "symlink")
      nfs.mkdirSync(t.at("open"))
      nfs.chmodSync(t.at("open"), 0o777)
      const open = yield* refuse(t.at("open"))
      assert.strictEqual(open._tag === "UnsafeBackupRoot" && open.reason, "group-or-world-writable")
      nfs.mkdirSync(t.at("foreign"), { mode: 0o700 })
      nfs.chownSync(t.at("foreign"), 12345, 12345)
      const foreign = yield* refuse(t.at("foreign"))
      assert.strictEqual(foreign._tag === "UnsafeBackupRoot" && foreign.reason, "foreign-owner")
      assert.deepStrictEqual(nfs.readdirSync(t.at("foreign")), [])
      // The default root: <parent of agent dir>/backups/<name of agent dir>, created 0700.
      const made = yield* withBackups(t.agent, {}, (b) => Effect.map(b.create(), () => b.root))
      assert.strictEqual(made, t.at("backups/agent"))
      assert.strictEqual(nfs.statSync(made).mode & 0o777, 0o700)
    }))

  it.live("forget keeps what the policy names, removes the rest, and kept snapshots still verify", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      const ids: Array<string> = []
      for (let i = 0; i < 4; i++) {
        nfs.writeFileSync(t.at("agent/state/a.txt"), `version ${i}`)
        ids.push((yield* withBackups(t.agent, { root: t.root }, (b) => b.create())).id)
        yield* Effect.sleep("3 millis")
      }
      const dry = yield* withBackups(t.agent, { root: t.root }, (b) => b.forget({ keepLast: 2, dryRun: true }))
      assert.deepStrictEqual(dry.removed, [ids[1]!, ids[0]!])
      assert.strictEqual((yield* withBackups(t.agent, { root: t.root }, (b) => b.list())).length, 4)
      const result = yield* withBackups(t.agent, { root: t.root }, (b) => b.forget({ keepLast: 2 }))
      assert.deepStrictEqual(result.kept, [{ id: ids[3]!, reasons: ["last"] }, { id: ids[2]!, reasons: ["last"] }])
      assert.deepStrictEqual(result.removed, [ids[1]!, ids[0]!])
      assert.deepStrictEqual((yield* withBackups(t.agent, { root: t.root }, (b) => b.list())).map((s) => s.id), [ids[3]!, ids[2]!])
      assert.deepStrictEqual(nfs.readdirSync(t.root).filter((n) => n.startsWith(".removing") || n.startsWith(".incomplete")), [])
      const verified = yield* withBackups(t.agent, { root: t.root }, (b) => b.verify())
      assert.isTrue(verified.ok)
      assert.isAbove(verified.checked, 10)
      const empty = yield* withBackups(t.agent, { root: t.root }, (b) => Effect.flip(b.forget({})))
      assert.strictEqual(empty._tag, "InvalidArgument")
    }))
})

// ---------------------------------------------------------------------------------------------------------
// Real processes.

const runChild = (agent: string, root: string, op: "create" | "verify") =>
  Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const child = spawn(process.execPath, [CHILD, agent, root, op], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
  })

const manyFiles = (agent: string, n: number) => {
  for (let d = 0; d < n / 100; d++) {
    const dir = NodePath.join(agent, "state", "many", `d${d}`)
    nfs.mkdirSync(dir, { recursive: true })
    for (let f = 0; f < 100; f++) nfs.writeFileSync(NodePath.join(dir, `f${f}`), `file ${d}/${f}\n`.repeat(20))
  }
}

describe("StateBackups across processes (built library)", () => {
  it.live("a SIGKILLed create is never listed, and the next create removes its leftover and completes", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      manyFiles(t.agent, 1500)
      const child = spawn(process.execPath, [CHILD, t.agent, t.root, "create"], { stdio: ["ignore", "pipe", "pipe"] })
      yield* Effect.async<void>((resume) => {
        child.stderr.on("data", (d) => {
          if (String(d).includes("started")) resume(Effect.void)
        })
        child.on("close", () => resume(Effect.void))
      })
      child.kill("SIGKILL")
      yield* Effect.async<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) resume(Effect.void)
        else child.on("close", () => resume(Effect.void))
      })
      assert.strictEqual(child.signalCode, "SIGKILL", "the child finished before it was killed; grow the tree")
      const leftovers = nfs.readdirSync(t.root).filter((n) => n.startsWith(".incomplete-"))
      assert.strictEqual(leftovers.length, 1)
      assert.deepStrictEqual(yield* withBackups(t.agent, { root: t.root }, (b) => b.list()), [])
      const next = yield* withBackups(t.agent, { root: t.root }, (b) => b.create())
      assert.deepStrictEqual(next.removedLeftovers, leftovers)
      assert.strictEqual(next.files, 1506)
      assert.deepStrictEqual(nfs.readdirSync(t.root).filter((n) => n.startsWith(".incomplete-")), [])
      assert.isTrue((yield* withBackups(t.agent, { root: t.root }, (b) => b.verify())).ok)
    }), 60_000)

  it.live("two processes creating at once both complete (one waits) and every snapshot verifies", () =>
    Effect.gen(function*() {
      const t = setup(STATE_FILES)
      manyFiles(t.agent, 200)
      const [a, b] = yield* Effect.all([runChild(t.agent, t.root, "create"), runChild(t.agent, t.root, "create")], { concurrency: 2 })
      assert.strictEqual(a.code, 0, a.stderr)
      assert.strictEqual(b.code, 0, b.stderr)
      const ids = [JSON.parse(a.stdout).id, JSON.parse(b.stdout).id].sort()
      assert.deepStrictEqual((yield* withBackups(t.agent, { root: t.root }, (s) => s.list())).map((s) => s.id).sort(), ids)
      const verified = yield* runChild(t.agent, t.root, "verify")
      assert.strictEqual(verified.code, 0, verified.stderr)
      assert.isTrue(JSON.parse(verified.stdout).ok)
      assert.strictEqual(JSON.parse(verified.stdout).corrupt.length, 0)
    }), 60_000)
})
