/**
 * What a state-snapshot restore promises where a person meets it (docs/snapshots.md "State snapshots"), on real files: a
 * scope the snapshot does not hold is refused before anything moves (facade and CLI); files it puts back link to
 * their snapshot's copies on the next snapshot; a `state/` kept elsewhere through a symlink is restored into
 * its target only when that is provably the person's own directory, else refused naming the link; every
 * directory live data went aside to is reported. The CLI cases run the built bundle (`npm run build`).
 */
import { createHash } from "node:crypto"
import * as nfs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as NodeWorld from "../../src/layers/NodeWorld.js"
import { openAgentStorage } from "../../src/promise.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { StateBackups, type StateBackupsOptions } from "../../src/services/StateBackups.js"
import { runNode } from "../support/child.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()
const CLI = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))

const withBackups = <A, E>(agent: string, options: StateBackupsOptions, use: (b: StateBackups["Type"]) => Effect.Effect<A, E>) =>
  Effect.provide(Effect.flatMap(StateBackups, use), StateBackups.layerWith(options).pipe(Layer.provideMerge(AgentDir.layerWith(agent)), Layer.provideMerge(NodeWorld.layer)))

const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const base = { ...process.env }
  delete base["PI_ADAPTATIVE_CODING_AGENT_DIR"]
  delete base["PI_WEB_DATA_DIR"]
  delete base["PI_STATE_BACKUP_DIR"]
  return runNode(CLI, args, { env: { ...base, ...env } })
}

const write = (path: string, content: string) => {
  nfs.mkdirSync(NodePath.dirname(path), { recursive: true })
  nfs.writeFileSync(path, content)
}

/** A snapshot taken through the CLI: its id. */
const createThroughCli = async (agent: string, web: string, root: string): Promise<string> => {
  const created = await cli(["--agent-dir", agent, "backup", "create", "--json", "--root", root], { PI_WEB_DATA_DIR: web })
  assert.strictEqual(created.code, 0, created.stderr)
  return JSON.parse(created.stdout).id as string
}

/** Each file written as `before`, a snapshot taken through the CLI, then each rewritten as `after`: the snapshot's id. */
const snapshotBetween = async (agent: string, web: string, root: string, files: ReadonlyArray<readonly [path: string, before: string, after: string]>) => {
  for (const [path, before] of files) write(path, before)
  const id = await createThroughCli(agent, web, root)
  for (const [path, , after] of files) write(path, after)
  return id
}

/** Every file under `dir` with its content (links as `-> target`), for before/after pictures. */
const picture = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  if (!nfs.existsSync(dir)) return out
  for (const rel of nfs.readdirSync(dir, { recursive: true }).map(String).sort()) {
    const p = NodePath.join(dir, rel)
    const st = nfs.lstatSync(p)
    if (st.isFile()) out[rel] = nfs.readFileSync(p, "utf8")
    else if (st.isSymbolicLink()) out[rel] = `-> ${nfs.readlinkSync(p)}`
  }
  return out
}

/** A scratch base with the agent dir, web data root and backup root a restore test uses, at their usual names. */
const layout = (prefix: string) => {
  const base = scratch(prefix)
  return { base, agent: NodePath.join(base, "agent"), web: NodePath.join(base, "web"), root: NodePath.join(base, "bk") }
}

/**
 * Rewrite a snapshot's manifest as someone who can write the backup root could: `edit` changes the document,
 * then its own hash is made again (the hash is no signature), so the manifest still checks out by itself.
 */
const tamperManifest = (snapshotDir: string, edit: (m: { entries: Array<Record<string, unknown>> }) => void) => {
  const path = NodePath.join(snapshotDir, "manifest.json")
  const doc = JSON.parse(nfs.readFileSync(path, "utf8")) as Record<string, unknown> & { entries: Array<Record<string, unknown>> }
  delete doc["manifestSha256"]
  edit(doc)
  const json = JSON.stringify(doc)
  const hash = createHash("sha256").update(json).digest("hex")
  nfs.chmodSync(path, 0o600)
  nfs.writeFileSync(path, `${json.slice(0, -1)},"manifestSha256":${JSON.stringify(hash)}}\n`)
}

describe("state snapshot restore, as a person meets it (Node)", () => {
  it("a restore of an extension the snapshot does not hold is refused before anything moves (facade: ExtensionNotInSnapshot naming what it holds; CLI: exit 2)", async () => {
    const base = scratch("pi-restore-scope-")
    const agent = NodePath.join(base, "agent")
    const root = NodePath.join(base, "bk")
    write(NodePath.join(agent, "state/extensions/foo/x.json"), "{\"foo\":1}")
    const storage = await openAgentStorage({ agentDir: agent, migrate: false })
    try {
      const backups = storage.stateBackups({ root })
      const { id } = await backups.create()
      // Live state of an extension the snapshot never saw.
      write(NodePath.join(agent, "state/extensions/live/y.json"), "live data")
      const before = picture(agent)
      for (const extension of ["nope", "live"]) {
        const refused = await backups.restore(id, { extension }).then(() => undefined, (e: { _tag: string; extension: string; held: ReadonlyArray<string>; message: string }) => e)
        assert.strictEqual(refused?._tag, "ExtensionNotInSnapshot")
        assert.strictEqual(refused?.extension, extension)
        assert.deepStrictEqual(refused?.held, ["foo"])
        assert.match(refused!.message, /holds no state of extension .*it holds the state of "foo".*nothing was changed/)
        const dry = await backups.restore(id, { extension, dryRun: true }).then(() => undefined, (e: { _tag: string }) => e)
        assert.strictEqual(dry?._tag, "ExtensionNotInSnapshot")
      }
      assert.deepStrictEqual(picture(agent), before, "the live data never moved")
      for (const extension of ["nope", "live"]) {
        const r = await cli(["--agent-dir", agent, "backup", "restore", id, "--extension", extension, "--root", root])
        assert.strictEqual(r.code, 2, r.stderr)
        assert.strictEqual(r.stdout, "")
        assert.match(r.stderr, new RegExp(`holds no state of extension "${extension}" \\(it holds the state of "foo"\\); nothing was changed`))
      }
      assert.deepStrictEqual(picture(agent), before, "the live data never moved")
      assert.isFalse(nfs.existsSync(NodePath.join(agent, "state/restore-aside")))
      // The extension it holds still restores.
      const ok = await backups.restore(id, { extension: "foo" })
      assert.deepStrictEqual(ok.restored, [NodePath.join(agent, "state/extensions/foo/x.json")])
    } finally {
      await storage.close()
    }
  }, 60_000)

  it.live("files a restore put back are hard links to their snapshot's copies in the next snapshot", () =>
    Effect.gen(function*() {
      const base = scratch("pi-restore-link-")
      const agent = NodePath.join(base, "agent")
      const root = NodePath.join(base, "bk")
      const names = Array.from({ length: 24 }, (_, i) => `state/f${i}.txt`)
      for (const [i, rel] of names.entries()) write(NodePath.join(agent, rel), `file ${i}`)
      yield* withBackups(agent, { root }, (b) =>
        Effect.gen(function*() {
          const first = yield* b.create()
          for (const rel of names) write(NodePath.join(agent, rel), "changed since")
          yield* b.restore(first.id)
          const second = yield* b.create()
          assert.strictEqual(second.files, names.length)
          assert.strictEqual(second.linkedFiles, names.length, "every restored file links to the copy it came from")
          assert.strictEqual(second.copiedFiles, 0)
          for (const rel of names) {
            assert.strictEqual(nfs.statSync(NodePath.join(root, second.id, "agent", rel)).ino, nfs.statSync(NodePath.join(root, first.id, "agent", rel)).ino)
          }
        }))
    }), 60_000)

  it.live("a state/ that is a symlink to the person's own directory is restored into its target (the link kept); the move-aside stays there", () =>
    Effect.gen(function*() {
      const base = scratch("pi-restore-statelink-")
      const agent = NodePath.join(base, "agent")
      const disk = NodePath.join(base, "other-disk", "pi-state")
      const root = NodePath.join(base, "bk")
      write(NodePath.join(disk, "a.json"), "[1]")
      write(NodePath.join(disk, "extensions/foo/x.json"), "{\"x\":1}")
      write(NodePath.join(disk, "backups/config/history.txt"), "config history (never moved)")
      nfs.chmodSync(disk, 0o700)
      nfs.mkdirSync(agent, { recursive: true })
      nfs.symlinkSync(disk, NodePath.join(agent, "state"))
      yield* withBackups(agent, { root }, (b) =>
        Effect.gen(function*() {
          const snap = yield* b.create()
          write(NodePath.join(disk, "a.json"), "[1,2]")
          write(NodePath.join(disk, "extensions/foo/x.json"), "changed")
          write(NodePath.join(disk, "new.json"), "made since")
          const all = yield* b.restore(snap.id)
          assert.strictEqual(nfs.readlinkSync(NodePath.join(agent, "state")), disk, "the person's link stays")
          assert.strictEqual(nfs.readFileSync(NodePath.join(disk, "a.json"), "utf8"), "[1]")
          assert.strictEqual(nfs.readFileSync(NodePath.join(disk, "extensions/foo/x.json"), "utf8"), "{\"x\":1}")
          assert.isFalse(nfs.existsSync(NodePath.join(disk, "new.json")))
          assert.strictEqual(nfs.readFileSync(NodePath.join(disk, "backups/config/history.txt"), "utf8"), "config history (never moved)")
          // What it replaced is kept, in the target's restore-aside (one file system: a rename).
          assert.strictEqual(all.asideDirs.length, 1)
          const aside = all.asideDirs[0]!
          assert.strictEqual(nfs.realpathSync(aside), NodePath.join(nfs.realpathSync(disk), "restore-aside", NodePath.basename(aside)))
          assert.deepStrictEqual(picture(NodePath.join(aside, "agent/state")), { "a.json": "[1,2]", "extensions/foo/x.json": "changed", "new.json": "made since" })
          // One extension through the link too.
          write(NodePath.join(disk, "extensions/foo/x.json"), "changed again")
          const one = yield* b.restore(snap.id, { extension: "foo" })
          assert.deepStrictEqual(one.restored, [NodePath.join(agent, "state/extensions/foo/x.json")])
          assert.strictEqual(nfs.readFileSync(NodePath.join(disk, "extensions/foo/x.json"), "utf8"), "{\"x\":1}")
        }))
    }), 60_000)

  it("a state/ symlink to a directory not provably the person's own, or inside another snapshotted tree, is refused naming the link before anything moves (CLI: exit 3)", async () => {
    const base = scratch("pi-restore-statelink-refused-")
    const agent = NodePath.join(base, "agent")
    const web = NodePath.join(base, "web")
    const root = NodePath.join(base, "bk")
    const disk = NodePath.join(base, "shared", "pi-state")
    write(NodePath.join(disk, "a.json"), "[1]")
    nfs.chmodSync(disk, 0o700)
    write(NodePath.join(web, "notes/state/n.json"), "notes")
    nfs.mkdirSync(agent, { recursive: true })
    const link = NodePath.join(agent, "state")
    nfs.symlinkSync(disk, link)
    const env = { PI_WEB_DATA_DIR: web }
    const id = await createThroughCli(agent, web, root)
    write(NodePath.join(disk, "a.json"), "[1,2]")
    const restore = () => cli(["--agent-dir", agent, "backup", "restore", id, "--root", root], env)
    const cases: ReadonlyArray<readonly [string, () => void, RegExp]> = [
      ["writable by others", () => nfs.chmodSync(disk, 0o777), /not provably yours: mode 0?777 is writable by group or others/],
      ["another user's", () => {
        nfs.chmodSync(disk, 0o700)
        nfs.chownSync(disk, 54321, 54321)
      }, /not provably yours: owned by uid 54321/],
      ["inside an extension's state tier", () => {
        nfs.chownSync(disk, process.getuid!(), process.getgid!())
        nfs.unlinkSync(link)
        nfs.symlinkSync(NodePath.join(web, "notes/state"), link)
      }, /lies inside .*web\/notes\/state/],
      ["the backup root itself", () => {
        nfs.unlinkSync(link)
        nfs.symlinkSync(root, link)
      }, /lies inside the backup root|unsafe backup root/]
    ]
    for (const [what, arrange, why] of cases) {
      arrange()
      const before = { agent: picture(agent), disk: picture(disk), web: picture(web) }
      const r = await restore()
      assert.strictEqual(r.code, 3, `${what}: ${r.stderr}`)
      assert.match(r.stderr, why, what)
      if (!/backup root/.test(what)) assert.include(r.stderr, `refusing to restore through the symlink ${link}`, what)
      assert.deepStrictEqual({ agent: picture(agent), disk: picture(disk), web: picture(web) }, before, `${what}: nothing moved`)
    }
  }, 120_000)

  it("a symlink where the restore moves live data aside (state/restore-aside, the web root's .restore-aside) is refused naming the link before anything moves (facade and CLI: exit 3)", async () => {
    const base = scratch("pi-restore-aside-link-")
    const agent = NodePath.join(base, "agent")
    const web = NodePath.join(base, "web")
    const root = NodePath.join(base, "bk")
    const elsewhere = NodePath.join(base, "elsewhere")
    nfs.mkdirSync(elsewhere, { recursive: true })
    nfs.chownSync(elsewhere, 12345, 12345)
    nfs.chmodSync(elsewhere, 0o777)
    const env = { PI_WEB_DATA_DIR: web }
    const id = await snapshotBetween(agent, web, root, [
      [NodePath.join(agent, "state/extensions/n/a"), "v1", "v2 precious"],
      [NodePath.join(web, "bm/state/h"), "v1", "v2 precious"]
    ])
    for (const link of [NodePath.join(agent, "state/restore-aside"), NodePath.join(web, ".restore-aside")]) {
      nfs.symlinkSync(elsewhere, link)
      const before = { agent: picture(agent), web: picture(web) }
      const r = await cli(["--agent-dir", agent, "backup", "restore", id, "--root", root], env)
      assert.strictEqual(r.code, 3, r.stderr)
      assert.include(r.stderr, `refusing to restore through the symlink ${link} (-> ${elsewhere})`)
      assert.include(r.stderr, "nothing was changed")
      const storage = await openAgentStorage({ agentDir: agent, migrate: false })
      try {
        const refused = await storage.stateBackups({ root, webDataRoot: web }).restore(id, { extension: "n" }).then(() => undefined, (e: { _tag: string; path: string }) => e)
        assert.strictEqual(refused?._tag, "UnsafeRestoreTarget")
        assert.strictEqual(refused?.path, link)
      } finally {
        await storage.close()
      }
      assert.deepStrictEqual({ agent: picture(agent), web: picture(web) }, before, "nothing moved")
      assert.deepStrictEqual(nfs.readdirSync(elsewhere), [], "nothing went through the link")
      nfs.unlinkSync(link)
    }
    // Without the links the same restore goes through, and the live data went aside inside the agent dir.
    const r = await cli(["--agent-dir", agent, "backup", "restore", id, "--root", root, "--json"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    const aside = (JSON.parse(r.stdout) as { movedAside: string }).movedAside
    assert.strictEqual(nfs.readFileSync(NodePath.join(aside, "agent/state/extensions/n/a"), "utf8"), "v2 precious")
    assert.strictEqual(nfs.readFileSync(NodePath.join(agent, "state/extensions/n/a"), "utf8"), "v1")
  }, 120_000)

  const otherDevice = (() => {
    try {
      const shm = nfs.statSync("/dev/shm")
      nfs.accessSync("/dev/shm", nfs.constants.W_OK)
      return shm.isDirectory() && shm.dev !== nfs.statSync(os.tmpdir()).dev ? "/dev/shm" : undefined
    } catch {
      return undefined
    }
  })()

  it.skipIf(otherDevice === undefined)("with the web data root on another file system, every directory live data went aside to is reported (result and CLI)", async () => {
    const base = scratch("pi-restore-xdev-")
    const web = nfs.mkdtempSync(NodePath.join(otherDevice!, "pi-restore-xdev-web-"))
    try {
      const agent = NodePath.join(base, "agent")
      const root = NodePath.join(base, "bk")
      const env = { PI_WEB_DATA_DIR: web }
      const id = await snapshotBetween(agent, web, root, [
        [NodePath.join(agent, "state/extensions/foo/x.json"), "agent side", "agent changed"],
        [NodePath.join(web, "foo/state/z.json"), "web side", "web changed"]
      ])
      const r = await cli(["--agent-dir", agent, "backup", "restore", id, "--extension", "foo", "--root", root, "--json"], env)
      assert.strictEqual(r.code, 0, r.stderr)
      const result = JSON.parse(r.stdout) as { movedAside: string; asideDirs: ReadonlyArray<string> }
      assert.strictEqual(result.asideDirs.length, 2)
      const [agentAside, webAside] = result.asideDirs
      assert.strictEqual(result.movedAside, agentAside)
      assert.isTrue(agentAside!.startsWith(NodePath.join(agent, "state/restore-aside") + "/"))
      assert.isTrue(webAside!.startsWith(NodePath.join(web, ".restore-aside") + "/"))
      assert.strictEqual(nfs.readFileSync(NodePath.join(agentAside!, "agent/state/extensions/foo/x.json"), "utf8"), "agent changed")
      assert.strictEqual(nfs.readFileSync(NodePath.join(webAside!, "web/foo/state/z.json"), "utf8"), "web changed")
      // The human report names both.
      write(NodePath.join(web, "foo/state/z.json"), "web changed again")
      const human = await cli(["--agent-dir", agent, "backup", "restore", id, "--extension", "foo", "--root", root], env)
      assert.strictEqual(human.code, 0, human.stderr)
      const lines = human.stdout.split("\n").filter((l) => l.startsWith("Moved the live data"))
      assert.strictEqual(lines.length, 1)
      assert.match(lines[0]!, new RegExp(`${NodePath.join(agent, "state/restore-aside")}/\\S+ and ${NodePath.join(web, ".restore-aside")}/\\S+$`))
    } finally {
      nfs.rmSync(web, { recursive: true, force: true })
    }
  }, 60_000)
  it("an extension directory linked elsewhere is snapshotted where its tiers write, and a restore refuses to write through the link before anything moves (facade and CLI: exit 3)", async () => {
    const { base, agent, web, root } = layout("pi-restore-extlink-")
    const disk = NodePath.join(base, "other-disk", "bookmarks")
    write(NodePath.join(disk, "state/h.json"), "[1]")
    write(NodePath.join(agent, "state/extensions/n/a.json"), "agent side")
    nfs.mkdirSync(web, { recursive: true })
    const link = NodePath.join(web, "bookmarks")
    nfs.symlinkSync(disk, link)
    const env = { PI_WEB_DATA_DIR: web }
    const id = await createThroughCli(agent, web, root)
    // Protected with no wiring: the state behind the link is in the snapshot.
    assert.strictEqual(nfs.readFileSync(NodePath.join(root, id, "web/bookmarks/state/h.json"), "utf8"), "[1]")
    write(NodePath.join(disk, "state/h.json"), "[1,2] precious")
    const later = NodePath.join(base, "other-disk", "newext")
    nfs.mkdirSync(NodePath.join(later, "state"), { recursive: true })
    nfs.symlinkSync(later, NodePath.join(web, "newext"))
    // Whoever the directory behind the link belongs to, nothing is written through the link.
    for (const [what, arrange] of [["ours", () => undefined], ["another user's, writable by all", () => {
      nfs.chownSync(disk, 1234, 1234)
      nfs.chmodSync(disk, 0o777)
    }]] as const) {
      arrange()
      const before = { agent: picture(agent), disk: picture(disk), web: picture(web) }
      const r = await cli(["--agent-dir", agent, "backup", "restore", id, "--extension", "bookmarks", "--root", root], env)
      assert.strictEqual(r.code, 3, `${what}: ${r.stderr}`)
      assert.include(r.stderr, `refusing to restore through the symlink ${link} (-> ${disk})`, what)
      assert.include(r.stderr, "nothing was changed", what)
      assert.deepStrictEqual({ agent: picture(agent), disk: picture(disk), web: picture(web) }, before, `${what}: nothing moved`)
      // A whole-scope restore puts back everything else and leaves the linked extension as it is, saying so.
      write(NodePath.join(agent, "state/extensions/n/a.json"), "agent side, changed")
      const whole = await cli(["--agent-dir", agent, "backup", "restore", id, "--root", root], env)
      assert.strictEqual(whole.code, 0, `${what}: ${whole.stderr}`)
      assert.include(whole.stdout, `Not restored ${link}: a symlink, never restored through, left as it is: its state in the snapshot is to copy back by hand`, what)
      assert.strictEqual(nfs.readFileSync(NodePath.join(agent, "state/extensions/n/a.json"), "utf8"), "agent side", what)
      // A linked extension the snapshot never saw: left alone too, and the line does not promise a copy.
      const again = await cli(["--agent-dir", agent, "backup", "restore", id, "--root", root], env)
      assert.strictEqual(again.code, 0, again.stderr)
      assert.include(again.stdout, `Not restored ${NodePath.join(web, "newext")}: a symlink, never restored through, left as it is (the snapshot holds no state of it)`)
      const json = await cli(["--agent-dir", agent, "backup", "restore", id, "--root", root, "--json", "--dry-run"], env)
      assert.deepStrictEqual((JSON.parse(json.stdout) as { notRestored: ReadonlyArray<{ path: string }> }).notRestored.map((l) => l.path), [link, NodePath.join(web, "newext")], what)
      const storage = await openAgentStorage({ agentDir: agent, migrate: false })
      try {
        const refused = await storage.stateBackups({ root, webDataRoot: web }).restore(id, { extension: "bookmarks" }).then(() => undefined, (e: { _tag: string; path: string }) => e)
        assert.strictEqual(refused?._tag, "UnsafeRestoreTarget", what)
        assert.strictEqual(refused?.path, link, what)
        // Another extension's restore is not held up by it.
        const other = await storage.stateBackups({ root, webDataRoot: web }).restore(id, { extension: "n" })
        assert.deepStrictEqual(other.restored, [NodePath.join(agent, "state/extensions/n/a.json")], what)
      } finally {
        await storage.close()
      }
      assert.deepStrictEqual({ disk: picture(disk), web: picture(web) }, { disk: before.disk, web: before.web }, `${what}: nothing behind the link moved`)
      nfs.rmSync(NodePath.join(agent, "state/restore-aside"), { recursive: true, force: true })
      assert.strictEqual(nfs.readFileSync(NodePath.join(disk, "state/h.json"), "utf8"), "[1,2] precious")
    }
  }, 120_000)

  it("an agent extension's state kept elsewhere through a link is snapshotted through it; a restore puts a real directory back and leaves what the link named alone; a link leading nowhere or into the backup root is skipped, said", async () => {
    const { base, agent, web, root } = layout("pi-restore-agentextlink-")
    const disk = NodePath.join(base, "other-disk", "ns")
    write(NodePath.join(disk, "a.json"), "v1")
    nfs.mkdirSync(NodePath.join(agent, "state/extensions"), { recursive: true })
    const link = NodePath.join(agent, "state/extensions/ns")
    nfs.symlinkSync(disk, link)
    const id = await createThroughCli(agent, web, root)
    assert.strictEqual(nfs.readFileSync(NodePath.join(root, id, "agent/state/extensions/ns/a.json"), "utf8"), "v1")
    write(NodePath.join(disk, "a.json"), "v2 precious")
    const r = await cli(["--agent-dir", agent, "backup", "restore", id, "--extension", "ns", "--root", root, "--json"], { PI_WEB_DATA_DIR: web })
    assert.strictEqual(r.code, 0, r.stderr)
    // The link itself went aside (as any live data a restore replaces); nothing was written through it.
    assert.isTrue(nfs.lstatSync(link).isDirectory())
    assert.strictEqual(nfs.readFileSync(NodePath.join(link, "a.json"), "utf8"), "v1")
    assert.strictEqual(nfs.readFileSync(NodePath.join(disk, "a.json"), "utf8"), "v2 precious")
    const aside = (JSON.parse(r.stdout) as { movedAside: string }).movedAside
    assert.strictEqual(nfs.readlinkSync(NodePath.join(aside, "agent/state/extensions/ns")), disk)
    // Leading nowhere, or into the backup root: skipped and said, never recorded as a link, never walked.
    nfs.rmSync(link, { recursive: true })
    const gone = NodePath.join(agent, "state/extensions/gone")
    nfs.symlinkSync(NodePath.join(base, "unmounted"), gone)
    nfs.symlinkSync(root, link)
    // Into a tree the snapshot holds already (here: everything, `/`), or a directory that is not provably the user's.
    nfs.symlinkSync("/", NodePath.join(agent, "state/extensions/everything"))
    const foreign = NodePath.join(base, "foreign")
    nfs.mkdirSync(foreign)
    nfs.chownSync(foreign, 1234, 1234)
    nfs.symlinkSync(foreign, NodePath.join(agent, "state/extensions/theirs"))
    nfs.mkdirSync(web, { recursive: true })
    nfs.mkdirSync(NodePath.join(base, "x"))
    nfs.mkdirSync(NodePath.join(root, "inner"))
    nfs.symlinkSync(NodePath.join(root, "inner"), NodePath.join(base, "x", "state"))
    nfs.symlinkSync(NodePath.join(base, "x"), NodePath.join(web, "loop"))
    const created = await cli(["--agent-dir", agent, "backup", "create", "--json", "--root", root], { PI_WEB_DATA_DIR: web })
    assert.strictEqual(created.code, 0, created.stderr)
    const made = JSON.parse(created.stdout) as { id: string; skipped: ReadonlyArray<{ _tag: string; path: string; reason: string }> }
    const skipped = Object.fromEntries(made.skipped.map((k) => [k.path, k.reason]))
    assert.match(skipped["agent/state/extensions/gone"]!, /leads to no directory/)
    assert.match(skipped["agent/state/extensions/ns"]!, /into or around the backup root/)
    assert.match(skipped["agent/state/extensions/everything"]!, /a symlink into or around /)
    assert.match(skipped["agent/state/extensions/theirs"]!, /not provably yours \(owned by uid 1234/)
    assert.match(skipped["web/loop/state"]!, /into or around the backup root/, JSON.stringify(made.skipped))
    const manifest = JSON.parse(nfs.readFileSync(NodePath.join(root, made.id, "manifest.json"), "utf8")) as { entries: ReadonlyArray<{ path: string }> }
    assert.isFalse(manifest.entries.some((e) => e.path.startsWith("agent/state/extensions/") || e.path.startsWith("web/")))
  }, 60_000)

  it("a restore never makes anything setuid, sticky or writable by every user, whatever a rewritten manifest says", async () => {
    const { agent, web, root } = layout("pi-restore-modes-")
    const id = await snapshotBetween(agent, web, root, [
      [NodePath.join(agent, "state/extensions/n/a.json"), "v1", "v2"],
      [NodePath.join(web, "bm/state/h.json"), "v1", "v2"]
    ])
    tamperManifest(NodePath.join(root, id), (m) => {
      for (const e of m.entries) if (e["type"] !== "symlink") e["mode"] = e["type"] === "directory" ? 0o3777 : 0o6777
    })
    const verified = await cli(["--agent-dir", agent, "backup", "verify", id, "--root", root], { PI_WEB_DATA_DIR: web })
    assert.strictEqual(verified.code, 0, verified.stderr)
    const r = await cli(["--agent-dir", agent, "backup", "restore", id, "--root", root], { PI_WEB_DATA_DIR: web })
    assert.strictEqual(r.code, 0, r.stderr)
    const modeOf = (path: string) => nfs.lstatSync(path).mode & 0o7777
    for (const file of [NodePath.join(agent, "state/extensions/n/a.json"), NodePath.join(web, "bm/state/h.json")]) {
      assert.strictEqual(nfs.readFileSync(file, "utf8"), "v1")
      assert.strictEqual(modeOf(file), 0o775, file)
    }
    // Directories keep setgid (a group's shared directory), never sticky or writable by others.
    for (const dir of [NodePath.join(agent, "state"), NodePath.join(agent, "state/extensions/n"), NodePath.join(web, "bm/state")]) {
      assert.strictEqual(modeOf(dir), 0o2775, dir)
    }
  }, 60_000)

  it("an extension's state tier recorded as a link is corrupt (the tiers would write wherever it points); one that is a dangling link live is skipped by a snapshot, said", async () => {
    const { base, agent, web, root } = layout("pi-restore-extstate-link-")
    const victim = NodePath.join(base, "victim")
    nfs.mkdirSync(victim)
    const id = await snapshotBetween(agent, web, root, [
      [NodePath.join(web, "bm/state/h.json"), "v1", "v2 precious"],
      [NodePath.join(agent, "state/extensions/ns/a.json"), "v1", "v2 precious"],
      [NodePath.join(agent, "USER.md"), "- v1\n", "- v2\n"]
    ])
    const snapshotDir = NodePath.join(root, id)
    // Both kinds of extension state recorded as links (a rewritten manifest, or an older build's record of a link).
    tamperManifest(snapshotDir, (m) => {
      for (const rel of ["web/bm/state", "agent/state/extensions/ns"]) {
        nfs.rmSync(NodePath.join(snapshotDir, rel), { recursive: true })
        nfs.symlinkSync(victim, NodePath.join(snapshotDir, rel))
        m.entries = m.entries.filter((e) => !String(e["path"]).startsWith(`${rel}/`))
        Object.assign(m.entries.find((e) => e["path"] === rel)!, { type: "symlink", target: victim, size: victim.length })
      }
    })
    const before = { agent: picture(agent), web: picture(web) }
    for (const [extension, entry] of [["bm", "web/bm/state"], ["ns", "agent/state/extensions/ns"]]) {
      const alone = await cli(["--agent-dir", agent, "backup", "restore", id, "--extension", extension!, "--root", root], { PI_WEB_DATA_DIR: web })
      assert.strictEqual(alone.code, 3, alone.stderr)
      assert.include(alone.stderr, entry!)
      assert.include(alone.stderr, "restored only as a directory")
    }
    assert.deepStrictEqual({ agent: picture(agent), web: picture(web) }, before, "nothing moved")
    // The whole scope (an older build recorded a dangling state link so): everything else comes back, that tier stays.
    const whole = await cli(["--agent-dir", agent, "backup", "restore", id, "--root", root], { PI_WEB_DATA_DIR: web })
    assert.strictEqual(whole.code, 0, whole.stderr)
    assert.include(whole.stdout, `Not restored ${NodePath.join(web, "bm/state")}: the snapshot records this state tier as a link`)
    assert.include(whole.stdout, `Not restored ${NodePath.join(agent, "state/extensions/ns")}: the snapshot records this extension's state as a link`)
    assert.isFalse(nfs.existsSync(NodePath.join(agent, "state/extensions/ns")), "no link put back for the tiers to write through")
    assert.strictEqual(nfs.readFileSync(NodePath.join(agent, "USER.md"), "utf8"), "- v1\n")
    assert.isTrue(nfs.lstatSync(NodePath.join(web, "bm/state")).isDirectory())
    assert.strictEqual(nfs.readFileSync(NodePath.join(web, "bm/state/h.json"), "utf8"), "v2 precious")
    assert.deepStrictEqual(nfs.readdirSync(victim), [], "nothing went where the record's link points")
    // Live, a state tier that is a dangling link: the snapshot says so and records nothing a restore would put back.
    nfs.rmSync(NodePath.join(web, "bm/state"), { recursive: true })
    nfs.symlinkSync(NodePath.join(base, "unmounted"), NodePath.join(web, "bm/state"))
    const created = await cli(["--agent-dir", agent, "backup", "create", "--json", "--root", root], { PI_WEB_DATA_DIR: web })
    assert.strictEqual(created.code, 0, created.stderr)
    const made = JSON.parse(created.stdout) as { id: string; skipped: ReadonlyArray<{ _tag: string; path: string; reason: string }> }
    assert.deepStrictEqual(made.skipped.map((k) => [k._tag, k.path]), [["Unreadable", "web/bm/state"]])
    assert.match(made.skipped[0]!.reason, /a symlink that leads to no directory/)
    const manifest = JSON.parse(nfs.readFileSync(NodePath.join(root, made.id, "manifest.json"), "utf8")) as { entries: ReadonlyArray<{ path: string }> }
    assert.isFalse(manifest.entries.some((e) => e.path.startsWith("web/bm")))
  }, 60_000)

  it("a manifest recording state/ itself as a link is corrupt: refused before anything moves (a restore keeps state/ in place)", async () => {
    const { agent, web, root } = layout("pi-restore-stateroot-")
    const id = await snapshotBetween(agent, web, root, [
      [NodePath.join(agent, "state/extensions/n/a.json"), "v1", "v2 precious"],
      [NodePath.join(web, "bm/state/h.json"), "v1", "v2 precious"]
    ])
    const snapshotDir = NodePath.join(root, id)
    nfs.rmSync(NodePath.join(snapshotDir, "agent/state"), { recursive: true })
    nfs.symlinkSync("/tmp", NodePath.join(snapshotDir, "agent/state"))
    tamperManifest(snapshotDir, (m) => {
      m.entries = m.entries.filter((e) => !String(e["path"]).startsWith("agent/state/"))
      Object.assign(m.entries.find((e) => e["path"] === "agent/state")!, { type: "symlink", target: "/tmp", size: 4 })
    })
    const before = { agent: picture(agent), web: picture(web) }
    const storage = await openAgentStorage({ agentDir: agent, migrate: false })
    try {
      for (const dryRun of [true, false]) {
        const refused = await storage.stateBackups({ root, webDataRoot: web }).restore(id, { dryRun }).then(() => undefined, (e: { _tag: string; entry?: string; message: string }) => e)
        assert.strictEqual(refused?._tag, "SnapshotCorrupt")
        assert.strictEqual(refused?.entry, "agent/state")
        assert.include(refused!.message, "keeps state/ itself in place")
      }
    } finally {
      await storage.close()
    }
    const r = await cli(["--agent-dir", agent, "backup", "restore", id, "--root", root], { PI_WEB_DATA_DIR: web })
    assert.notStrictEqual(r.code, 0)
    assert.include(r.stderr, "keeps state/ itself in place")
    assert.deepStrictEqual({ agent: picture(agent), web: picture(web) }, before, "nothing moved")
  }, 60_000)
})
