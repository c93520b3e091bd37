/**
 * Restore and verify of snapshots whose manifest someone with write access to the backup root edited, its own
 * hash recomputed (Node layer, real files): a `..` path, an absolute path, a path into the agent's code, a path
 * into another extension during a one-extension restore, an entry below a recorded symlink, a directory of the
 * snapshot swapped for a link. Each restore is refused before it moves or writes anything (live data and a
 * canary directory outside stay byte-identical), and verify reports each snapshot damaged without reading
 * outside it (docs/snapshots.md "State snapshots").
 */
import { createHash } from "node:crypto"
import * as nfs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { encodeSnapshotManifest, type ManifestEntry, type SnapshotManifest } from "../../src/domain/StateSnapshot.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import * as NodeWorld from "../../src/layers/NodeWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { StateBackups, type StateBackupsOptions } from "../../src/services/StateBackups.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

const LIVE = {
  "agent/state/a.txt": "alpha",
  "agent/state/extensions/foo/x.json": "foo x",
  "agent/state/extensions/bar/y.json": "bar y",
  "agent/MEMORY.md": "# memory",
  "agent/settings.json": "{}",
  "agent/extensions/evil/index.js": "the agent's own extension code",
  "web-data/foo/state/z.db": "foo z",
  "web-data/bar/state/w.txt": "bar w",
  "canary/keep.txt": "outside everything",
  "elsewhere/foo/x.json": "foo x"
}

const setup = () => {
  const base = scratch("pi-snap-doctored-")
  for (const [rel, content] of Object.entries(LIVE)) {
    const path = NodePath.join(base, rel)
    nfs.mkdirSync(NodePath.dirname(path), { recursive: true })
    nfs.writeFileSync(path, content)
  }
  const options: StateBackupsOptions = { root: NodePath.join(base, "backups"), webDataRoot: NodePath.join(base, "web-data") }
  return { base, agent: NodePath.join(base, "agent"), options, at: (rel: string) => NodePath.join(base, rel) }
}

const withBackups = <A, E>(
  agent: string,
  options: StateBackupsOptions,
  use: (b: StateBackups["Type"]) => Effect.Effect<A, E>,
  world: Layer.Layer<FileSystem | Host> = NodeWorld.layer
) => Effect.provide(Effect.flatMap(StateBackups, use), StateBackups.layerWith(options).pipe(Layer.provideMerge(AgentDir.layerWith(agent)), Layer.provideMerge(world)))

/** Everything under `dir` but the backup root: type, mode, mtime, bytes or link target of each entry. */
const dump = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const visit = (path: string, rel: string) => {
    const st = nfs.lstatSync(path)
    const head = `${st.mode.toString(8)} ${st.mtimeMs}`
    if (st.isSymbolicLink()) out[rel] = `${head} -> ${nfs.readlinkSync(path)}`
    else if (st.isFile()) out[rel] = `${head} ${nfs.readFileSync(path, "base64")}`
    else if (st.isDirectory()) {
      out[rel] = `${head} dir`
      for (const name of nfs.readdirSync(path).sort()) if (!(rel === "" && name === "backups")) visit(NodePath.join(path, name), rel === "" ? name : `${rel}/${name}`)
    } else out[rel] = `${head} other`
  }
  visit(dir, "")
  return out
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

/** A file entry as a writer would record `content`. */
const fileEntry = (path: string, content: string): ManifestEntry => ({ path, type: "file", size: Buffer.byteLength(content), mode: 0o644, mtimeMs: 1_600_000_000_000, sha256: sha256(content) })

/**
 * What an attacker with write access to the backup root does: change the entries, recompute the manifest's
 * own hash (a plain SHA-256 over the JSON), and plant the files the new entries name inside the snapshot.
 */
const doctor = (snapshot: string, change: (entries: Array<ManifestEntry>) => Array<ManifestEntry>, plant: Record<string, string> = {}) => {
  const path = NodePath.join(snapshot, "manifest.json")
  const { manifestSha256: _, ...body } = JSON.parse(nfs.readFileSync(path, "utf8")) as SnapshotManifest
  nfs.chmodSync(path, 0o600)
  nfs.writeFileSync(path, encodeSnapshotManifest({ ...body, entries: change([...body.entries]) }))
  for (const [rel, content] of Object.entries(plant)) {
    const at = NodePath.join(snapshot, rel)
    nfs.mkdirSync(NodePath.dirname(at), { recursive: true })
    nfs.writeFileSync(at, content)
  }
}

interface Attack {
  readonly name: string
  readonly extension?: string
  /** The manifest path (or snapshot path) the refusal names. */
  readonly entry: string
  readonly doctor: (snapshot: string, t: ReturnType<typeof setup>) => void
}

const ATTACKS: ReadonlyArray<Attack> = [
  {
    name: "a .. path from the state tree into the agent's code",
    entry: "agent/state/../extensions/evil/postinstall.js",
    doctor: (snap) =>
      doctor(snap, (e) => [...e, fileEntry("agent/state/../extensions/evil/postinstall.js", "pwned")], { "agent/extensions/evil/postinstall.js": "pwned" })
  },
  {
    name: "an absolute path",
    entry: "/etc/cron.d/pwned",
    doctor: (snap) => doctor(snap, (e) => [...e, fileEntry("/etc/cron.d/pwned", "pwned")], { "etc/cron.d/pwned": "pwned" })
  },
  {
    name: "a path into agent/extensions/…",
    entry: "agent/extensions/evil/postinstall.js",
    doctor: (snap) =>
      doctor(snap, (e) => [...e, fileEntry("agent/extensions/evil/postinstall.js", "pwned")], { "agent/extensions/evil/postinstall.js": "pwned" })
  },
  {
    name: "a path into another extension during --extension foo (agent state)",
    extension: "foo",
    entry: "agent/state/extensions/foo/../bar/new.json",
    doctor: (snap) =>
      doctor(snap, (e) => [...e, fileEntry("agent/state/extensions/foo/../bar/new.json", "pwned")], { "agent/state/extensions/bar/new.json": "pwned" })
  },
  {
    name: "a path into another extension during --extension foo (web state)",
    extension: "foo",
    entry: "web/foo/state/../../bar/state/new",
    doctor: (snap) => doctor(snap, (e) => [...e, fileEntry("web/foo/state/../../bar/state/new", "pwned")], { "web/bar/state/new": "pwned" })
  },
  {
    name: "a symlink to a directory outside, then entries below it",
    entry: "agent/state/out/sub",
    doctor: (snap, t) =>
      doctor(snap, (e) => [
        ...e,
        { path: "agent/state/out", type: "symlink", size: t.at("canary").length, mode: 0o777, mtimeMs: 1_600_000_000_000, target: t.at("canary") },
        { path: "agent/state/out/sub", type: "directory", size: 0, mode: 0o755, mtimeMs: 1_600_000_000_000 },
        fileEntry("agent/state/out/sub/pwned", "pwned")
      ], { "agent/state/out/sub/pwned": "pwned" })
  }
]

describe("restore and verify refuse a doctored snapshot (Node layer)", () => {
  for (const attack of ATTACKS) {
    it.live(`${attack.name}: restore refuses before touching anything, verify reports the manifest unusable`, () =>
      Effect.gen(function*() {
        const t = setup()
        const { id } = yield* withBackups(t.agent, t.options, (b) => b.create())
        const snapshot = NodePath.join(t.options.root!, id)
        attack.doctor(snapshot, t)
        nfs.writeFileSync(t.at("agent/state/a.txt"), "edited since the snapshot")
        const before = dump(t.base)
        const options = attack.extension === undefined ? {} : { extension: attack.extension }
        for (const dryRun of [true, false]) {
          const refused = yield* withBackups(t.agent, t.options, (b) => Effect.flip(b.restore(id, { ...options, dryRun })))
          assert.strictEqual(refused._tag, "SnapshotCorrupt", refused.message)
          assert.include(refused.message, JSON.stringify(attack.entry))
          assert.match(refused.message, /; nothing was changed$/)
        }
        assert.deepStrictEqual(dump(t.base), before)
        assert.isFalse(nfs.existsSync(t.at("agent/state/restore-aside")))
        const verified = yield* withBackups(t.agent, t.options, (b) => b.verify(id))
        assert.isFalse(verified.ok)
        assert.deepStrictEqual(verified.problems.map((p) => [p._tag, p.path]), [["ManifestUnusable", `${id}/manifest.json`]])
        assert.include(verified.problems[0]!.message, JSON.stringify(attack.entry))
        assert.deepStrictEqual(dump(t.base), before)
      }))
  }

  it.live("a directory of the snapshot swapped for a link outside: restore refuses, verify reads nothing below it", () =>
    Effect.gen(function*() {
      const t = setup()
      const { id } = yield* withBackups(t.agent, t.options, (b) => b.create())
      const snapshot = NodePath.join(t.options.root!, id)
      // The manifest is untouched; the snapshot's extensions/ now leads outside, to files with the recorded bytes.
      nfs.rmSync(NodePath.join(snapshot, "agent/state/extensions"), { recursive: true })
      nfs.symlinkSync(t.at("elsewhere"), NodePath.join(snapshot, "agent/state/extensions"))
      nfs.writeFileSync(t.at("agent/state/extensions/foo/x.json"), "edited since the snapshot")
      const before = dump(t.base)
      for (const extension of [undefined, "foo"]) {
        const refused = yield* withBackups(t.agent, t.options, (b) => Effect.flip(b.restore(id, extension === undefined ? {} : { extension })))
        assert.strictEqual(refused._tag, "SnapshotCorrupt", refused.message)
        assert.match(refused.message, /damaged at "agent\/state\/extensions": is a symlink in the snapshot, .*; nothing was changed$/)
      }
      assert.deepStrictEqual(dump(t.base), before)
      const verified = yield* withBackups(t.agent, t.options, (b) => b.verify(id))
      assert.isFalse(verified.ok)
      const byPath = Object.fromEntries(verified.problems.map((p) => [p.path.slice(id.length + 1), p]))
      assert.strictEqual(byPath["agent/state/extensions"]?._tag, "TypeMismatch")
      // The files below were not read through the link (they would have matched their records).
      for (const rel of ["agent/state/extensions/foo", "agent/state/extensions/foo/x.json"]) {
        assert.strictEqual(byPath[rel]?._tag, "Unreadable", rel)
        assert.match(byPath[rel]!.message, /not read: agent\/state\/extensions is a symlink in the snapshot/)
      }
    }))

  it.live("verify never reads outside the snapshot: a .. path to a file with the recorded bytes is an unusable manifest, not a match", () =>
    Effect.gen(function*() {
      const t = setup()
      const { id } = yield* withBackups(t.agent, t.options, (b) => b.create())
      const snapshot = NodePath.join(t.options.root!, id)
      // From <root>/<id>/agent/state, four levels up is the scratch base: the canary outside the backup root.
      doctor(snapshot, (e) => [...e, fileEntry("agent/state/../../../../canary/keep.txt", LIVE["canary/keep.txt"])])
      const verified = yield* withBackups(t.agent, t.options, (b) => b.verify())
      assert.isFalse(verified.ok)
      assert.deepStrictEqual(verified.problems.map((p) => p._tag), ["ManifestUnusable"])
      assert.strictEqual(verified.checked, 0)
    }))

  it.live("a snapshot's web state goes to this process's web data root (the default under its home when none is given), never to the root its manifest names", () =>
    Effect.gen(function*() {
      const t = setup()
      const { id } = yield* withBackups(t.agent, t.options, (b) => b.create())
      const snapshot = NodePath.join(t.options.root!, id)
      // The manifest may name any directory as its web data root: a restore never moves or writes there.
      nfs.mkdirSync(t.at("projects/app/state"), { recursive: true })
      nfs.writeFileSync(t.at("projects/app/state/db"), "a project's own state")
      const path = NodePath.join(snapshot, "manifest.json")
      const { manifestSha256: _, ...body } = JSON.parse(nfs.readFileSync(path, "utf8")) as SnapshotManifest
      nfs.writeFileSync(path, encodeSnapshotManifest({ ...body, scope: { ...body.scope, webDataRoot: t.at("projects") } }))
      const projects = dump(t.at("projects"))
      // No web data root given, none in the environment: TD1's default under this process's home.
      const home = t.at("home")
      const atHome = Layer.merge(
        Layer.effect(Host, Effect.map(Effect.provide(Host, NodeHost.layer), (h) => ({ ...h, homeDir: home, env: (n: string) => (n === "PI_WEB_DATA_DIR" ? undefined : h.env(n)) }))),
        Layer.effect(FileSystem, Effect.provide(FileSystem, NodeWorld.layer))
      )
      const restored = yield* withBackups(t.agent, { root: t.options.root }, (b) => b.restore(id), atHome)
      const defaultRoot = NodePath.join(home, ".pi", "web", "data")
      assert.includeMembers([...restored.restored], [NodePath.join(defaultRoot, "foo", "state", "z.db"), NodePath.join(defaultRoot, "bar", "state", "w.txt")])
      assert.strictEqual(nfs.readFileSync(NodePath.join(defaultRoot, "foo", "state", "z.db"), "utf8"), "foo z")
      assert.deepStrictEqual(dump(t.at("projects")), projects)
      // With the web data root given, it restores there: agent and web state back as snapshotted.
      const again = yield* withBackups(t.agent, t.options, (b) => b.restore(id))
      assert.include(again.restored, t.at("web-data/foo/state/z.db"))
      assert.strictEqual(nfs.readFileSync(t.at("projects/app/state/db"), "utf8"), "a project's own state")
    }))

  it.live("a snapshot file changed between the check and its copy: the restore stops, removes that copy, and names where the live data went", () =>
    Effect.gen(function*() {
      const t = setup()
      const { id } = yield* withBackups(t.agent, t.options, (b) => b.create())
      nfs.writeFileSync(t.at("agent/state/a.txt"), "edited since the snapshot")
      // Someone rewrites the snapshot's copy after the restore checked it, just before it is copied.
      const racing = Layer.merge(
        NodeHost.layer,
        Layer.effect(FileSystem, Effect.map(Effect.provide(FileSystem, NodeWorld.layer), (real) => ({
          ...real,
          copyFileHashed: (from: string, to: string, o?: { readonly sync?: boolean }) =>
            Effect.zipRight(Effect.sync(() => from.endsWith("/a.txt") && nfs.writeFileSync(from, "swapped")), real.copyFileHashed(from, to, o))
        })))
      )
      const stopped = yield* withBackups(t.agent, t.options, (b) => Effect.flip(b.restore(id)), racing)
      assert.strictEqual(stopped._tag, "SnapshotCorrupt")
      const aside = nfs.readdirSync(t.at("agent/state/restore-aside")).map((name) => t.at(`agent/state/restore-aside/${name}`))
      assert.strictEqual(aside.length, 1)
      assert.strictEqual(stopped.message, `snapshot ${NodePath.join(t.options.root!, id)} is damaged at "agent/state/a.txt": it changed while it was restored; the restore stopped part way; the live data it replaced is in ${aside[0]}`)
      assert.isFalse(nfs.existsSync(t.at("agent/state/a.txt")), "the copy that does not match its record is not left in place")
      assert.strictEqual(nfs.readFileSync(NodePath.join(aside[0]!, "agent/state/a.txt"), "utf8"), "edited since the snapshot")
    }))
})
