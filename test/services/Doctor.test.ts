import * as crypto from "node:crypto"
import * as nfs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { Doctor } from "../../src/services/Doctor.js"
import { atomicTempTarget } from "../../src/domain/AtomicWrite.js"
import { WEB_RESTORE_ASIDE_DIR } from "../../src/domain/StateSnapshot.js"
import { doctorAt } from "../support/doctor.js"
import { asProfile } from "./userProfileSupport.js"
import { AGENT, asProcess, HOST, spawn } from "./migrationSupport.js"

const WEB = "/home/user/.pi/web/data"

const manifest = (runId: string, over: Record<string, unknown> = {}) =>
  JSON.stringify({ version: 2, category: "tools", tenant: "bash", runId, kind: "generated", createdAt: 1, createdBy: { host: HOST, pid: 1 }, ...over })

const owner = (world: MemoryWorld, pid: number) => ({
  host: HOST,
  bootId: world.bootId(HOST),
  pid,
  processStartedAt: world.startTimeOf(HOST, pid) ?? 1
})

/** A messy agent dir and web data root: one of every finding, beside canonical entries that must stay silent. */
const messyFixture = (world: MemoryWorld) =>
  Effect.gen(function*() {
    const alive = world.spawn(HOST)
    const dead = world.spawn(HOST)
    const deadOwner = owner(world, dead)
    world.kill(HOST, dead)
    const w = (rel: string, content: string, options?: { mode?: number }) => world.writeFixture(`${AGENT}/${rel}`, content, options)
    const d = (rel: string, mode = 0o700) => world.mkdirFixture(`${AGENT}/${rel}`, { mode })
    // canonical, silent
    yield* w("settings.json", "{}")
    yield* w("auth.json", "{}")
    yield* w("USER.md", "me")
    yield* d("okf-memory")
    yield* d("cache")
    yield* d("sessions")
    yield* world.symlinkFixture("/mnt/big-disk/models", `${AGENT}/models`)
    // canonical of the wrong kind
    yield* w("skills", "not a directory")
    // legacy
    yield* w("trust.json", "{}")
    yield* d("backups")
    yield* w("auth.json:Zone.Identifier", "zone")
    // unknown
    yield* w("usage.sqlite", "db")
    yield* w("debug.log", "log")
    yield* d("notes")
    // a dead migration's marker
    yield* w(".pi-migration.lock", JSON.stringify({ version: 1, purpose: "migrate-agent-dir", ...deadOwner, createdAt: 1 }))
    // state
    yield* d("state", 0o777)
    yield* w("state/migration-conflicts/trust.json", "{}")
    // work
    yield* d("work")
    yield* d("work/tools", 0o770)
    yield* d("work/tools/bash")
    yield* world.symlinkFixture("/tmp", `${AGENT}/work/evil`)
    yield* w("work/tools/bash/live/.pi-work-run.json", manifest("live"))
    yield* w("work/tools/bash/live/.leases/h1-1.json", JSON.stringify({ version: 2, ...owner(world, alive), acquiredAt: 1, heartbeatAt: 1 }))
    yield* w("work/tools/bash/stale/.pi-work-run.json", manifest("stale"))
    yield* w("work/tools/bash/stale/.leases/h1-2.json", JSON.stringify({ version: 2, ...deadOwner, acquiredAt: 1, heartbeatAt: 1 }))
    yield* w("work/tools/bash/odd/.leases/h1-3.json", "{garbage")
    yield* w("work/tools/bash/odd/.pi-work-run.json", manifest("odd"))
    yield* w("work/tools/bash/nomanifest/output.txt", "x")
    yield* w("work/tools/bash/other/.pi-work-run.json", manifest("elsewhere"))
    yield* w("work/tools/bash/stray.txt", "x")
    yield* w("work/tools/bash/.trash/old/.pi-work-run.json", manifest("old"))
    yield* w("work/tools/bash/.prune", JSON.stringify({ version: 1, purpose: "prune", ...deadOwner, createdAt: 1 }))
    yield* w("work/tools/bash/.cleanup/stale", JSON.stringify({ version: 1, purpose: "cleanup", ...deadOwner, createdAt: 1 }))
    yield* w("work/tools/bash/.last-prune", "1")
    // extension data tiers
    const x = (rel: string, content: string | Uint8Array) => world.writeFixture(`${WEB}/ext1/${rel}`, content)
    yield* x("config/settings.json", "{}")
    yield* x("config/usage.sqlite", "db")
    yield* x("config/logs/app.log", "log")
    yield* x("config/big.bin", new Uint8Array(1024 * 1024 + 1))
    yield* x("config/.venv/bin/python", "py")
    yield* x("config/state/history.jsonl", "{}")
    yield* x("state/history.jsonl", "{}")
    yield* x("cache/index.db", "fine in cache")
    yield* x("stuff.json", "outside")
    yield* world.writeFixture(`${WEB}/ext2/config/settings.json`, "{}")
    // No extension's id: nothing in it is protected. An extension kept on another disk through a link.
    yield* world.writeFixture(`${WEB}/Bad_Name/state/x.json`, "{}")
    yield* world.writeFixture("/mnt/big-disk/bookmarks/state/h.json", "[]")
    yield* world.symlinkFixture("/mnt/big-disk/bookmarks", `${WEB}/bookmarks`)
    yield* world.symlinkFixture("/mnt/unmounted/gone", `${WEB}/gone`)
    yield* world.symlinkFixture("/mnt/big-disk/bookmarks", `${WEB}/My_Ext`)
    // The library's own aside directory as a link: no extension, so no extension finding (a restore refuses it by name).
    yield* world.symlinkFixture("/mnt/big-disk", `${WEB}/.restore-aside`)
  })

const expectedFindings = [
  ["canonical-kind-mismatch", "skills"],
  ["legacy-entry", "trust.json"],
  ["legacy-entry", "backups"],
  ["legacy-sidecar", "auth.json:Zone.Identifier"],
  ["unknown-root-entry", "usage.sqlite"],
  ["unknown-root-entry", "debug.log"],
  ["unknown-root-entry", "notes"],
  ["migration-marker", ".pi-migration.lock"],
  ["state-world-writable", "state"],
  ["migration-conflicts", "state/migration-conflicts"],
  ["work-root-unsafe", "work/tools"],
  ["work-root-unsafe", "work/evil"],
  ["work-dead-lease", "work/tools/bash/stale/.leases/h1-2.json"],
  ["work-unreadable-lease", "work/tools/bash/odd/.leases/h1-3.json"],
  ["work-unowned-run", "work/tools/bash/nomanifest"],
  ["work-unowned-run", "work/tools/bash/other"],
  ["work-stray-entry", "work/tools/bash/stray.txt"],
  ["work-unfinished-trash", "work/tools/bash/.trash"],
  ["work-dead-marker", "work/tools/bash/.prune"],
  ["work-dead-marker", "work/tools/bash/.cleanup/stale"],
  ["extension-config-database", `${WEB}/ext1/config/usage.sqlite`],
  ["extension-config-log", `${WEB}/ext1/config/logs/app.log`],
  ["extension-config-large-file", `${WEB}/ext1/config/big.bin`],
  ["extension-config-venv", `${WEB}/ext1/config/.venv`],
  ["extension-split-state", `${WEB}/ext1/config/state`],
  ["extension-outside-tiers", `${WEB}/ext1/stuff.json`],
  ["extension-name-invalid", `${WEB}/Bad_Name`],
  ["extension-dir-link", `${WEB}/bookmarks`],
  ["extension-dir-link", `${WEB}/gone`],
  ["extension-name-invalid", `${WEB}/My_Ext`]
].map(([code, path]) => `${code} ${path}`).sort()

describe("doctor (DR1, DR2) on the Memory layer", () => {
  it.effect("one finding per problem, silent for canonical entries, and strictly read-only", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* messyFixture(world)
      const before = world.tree("/")
      world.clearJournal()
      const report = yield* asProcess(world, doctorAt(AGENT, { webDataRoot: WEB }))
      assert.deepStrictEqual(report.findings.map((f) => `${f.code} ${f.path}`).sort(), expectedFindings)
      assert.isFalse(report.truncated)
      assert.isAbove(report.scanned, 30)
      for (const f of report.findings) assert.isAbove(f.message.length, 10)
      // A link is described by where it leads: followed, or leading nowhere (nothing of it protected).
      const link = (name: string) => report.findings.find((f) => f.path === `${WEB}/${name}`)!.message
      assert.include(link("bookmarks"), "the tiers and state snapshots follow it")
      assert.include(link("gone"), "leads to no directory")
      assert.include(link("My_Ext"), "a symlink, is no extension's data directory")
      const legacy = report.findings.find((f) => f.code === "legacy-entry")!
      assert.strictEqual(legacy.severity, "warning")
      assert.match(legacy.fix!, /Migration\.run|pi-storage migrate/)
      assert.match(report.findings.find((f) => f.path === "usage.sqlite")!.message, /database/)
      // Read-only: the tree is identical (times included) and the journal holds only reads.
      assert.deepStrictEqual(world.tree("/"), before)
      const ops = new Set(world.journal.map((j) => j.op))
      for (const op of ops) assert.include(["lstat", "statFollowingLinks", "readDirectory", "readFile", "readLink"], op)
    }))

  it.effect("a live migration's marker is info; a missing agent dir is one info finding", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const running = world.spawn(HOST)
      yield* world.writeFixture(`${AGENT}/.pi-migration.lock`, JSON.stringify({ version: 1, purpose: "migrate-agent-dir", ...owner(world, running), createdAt: 1 }))
      const report = yield* asProcess(world, doctorAt(AGENT))
      assert.deepStrictEqual(report.findings.map((f) => [f.code, f.severity]), [["migration-marker", "info"]])
      const missing = yield* asProcess(world, doctorAt("/nowhere/agent"))
      assert.deepStrictEqual(missing.findings.map((f) => f.code), ["agent-dir-missing"])
    }))

  it.effect("the scan is bounded: maxEntries stops it and says so", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* messyFixture(world)
      const report = yield* asProcess(world, doctorAt(AGENT, { maxEntries: 10, webDataRoot: WEB }))
      assert.isTrue(report.truncated)
      assert.isAtMost(report.scanned, 10)
      assert.strictEqual(report.findings.at(-1)!.code, "scan-truncated")
    }))

  it.effect("an agent extension's config tier is held to the red lines a web-host extension's is; its state and cache are silent", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture(AGENT, { mode: 0o700 })
      yield* world.writeFixture(`${AGENT}/config/extensions/notes/settings.json`, "{}")
      yield* world.writeFixture(`${AGENT}/config/extensions/notes/history.sqlite`, "db")
      yield* world.writeFixture(`${AGENT}/config/extensions/notes/sub/trace.log`, "log")
      yield* world.mkdirFixture(`${AGENT}/config/extensions/notes/node_modules`)
      yield* world.writeFixture(`${AGENT}/state/extensions/notes/history.sqlite`, "db")
      yield* world.writeFixture(`${AGENT}/cache/extensions/notes/trace.log`, "log")
      const report = yield* asProcess(world, doctorAt(AGENT, { webDataRoot: WEB }))
      assert.deepStrictEqual(report.findings.map((f) => `${f.code} ${f.path}`).sort(), [
        "extension-config-database config/extensions/notes/history.sqlite",
        "extension-config-log config/extensions/notes/sub/trace.log",
        "extension-config-venv config/extensions/notes/node_modules"
      ])
      assert.match(report.findings[0]!.message, /under notes's config\//)
    }))

  it.effect("the Doctor service exposes doctor with R = never", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${AGENT}/tmp/x`, "x")
      const proc = spawn(world).layer
      const service = yield* Doctor.pipe(Effect.provide(Doctor.layer), Effect.provide(AgentDir.layerWith(AGENT)), Effect.provide(proc))
      const report = yield* service.doctor()
      assert.deepStrictEqual(report.findings.map((f) => f.code), ["legacy-entry"])
    }))

})

describe("the library's own leftovers are named as its own, with what settles them", () => {
  it.effect("a crash inside USER.md's atomic write: its temp file is atomic-write-leftover (info, `rm -f` it), never an external tool's", () =>
    Effect.gen(function*() {
      // Crash the profile write at every step until one leaves the temp file beside USER.md (the world names
      // it with the same rule as the Node layer: domain/AtomicWrite.ts).
      let found: { world: MemoryWorld; temp: string } | undefined
      for (let k = 0; k < 40 && found === undefined; k++) {
        const world = MemoryWorld.make({ journal: false })
        yield* world.writeFixture(`${AGENT}/USER.md`, "old fact\n")
        world.crashAfter(k)
        yield* Effect.exit(asProfile(world, (p) => p.add("new fact")))
        world.recover()
        const temp = Object.keys(world.tree(AGENT)).map((path) => path.slice(AGENT.length + 1)).find((name) => name.startsWith(".USER.md.tmp-"))
        if (temp !== undefined) found = { world, temp }
      }
      assert.isDefined(found, "some crash point leaves the temp file")
      const { world, temp } = found!
      assert.strictEqual(atomicTempTarget(temp), "USER.md")
      // Beside it: a directory by such a name, and a temp name of a file the library never writes, are not its own.
      yield* world.mkdirFixture(`${AGENT}/.USER.md.tmp-00ff`)
      yield* world.writeFixture(`${AGENT}/.notes.txt.tmp-00ff`, "x")
      const report = yield* asProcess(world, doctorAt(AGENT))
      const own = report.findings.filter((f) => f.code === "atomic-write-leftover")
      assert.deepStrictEqual(own.map((f) => [f.path, f.severity]), [[temp, "info"]])
      assert.include(own[0]!.message, "interrupted write of USER.md")
      assert.include(own[0]!.fix!, `\`rm -f ${AGENT}/${temp}\``)
      assert.deepStrictEqual(
        report.findings.filter((f) => f.code === "unknown-root-entry").map((f) => f.path).sort(),
        [".USER.md.tmp-00ff", ".notes.txt.tmp-00ff"]
      )
      assert.notInclude(own[0]!.message, "external tool")
    }))

  it.effect("a restore's move-aside beside the web data root is state-backup-restore-aside, not an extension outside its tiers", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${WEB}/todo/state/items.json`, "{}")
      yield* world.writeFixture(`${WEB}/${WEB_RESTORE_ASIDE_DIR}/2026-12-01T13-21-01.307Z-7f1dab/web/todo/state/items.json`, "{}")
      const report = yield* asProcess(world, doctorAt(AGENT, { webDataRoot: WEB }))
      const web = report.findings.filter((f) => f.path.startsWith(WEB))
      assert.deepStrictEqual(
        web.map((f) => [f.code, f.path, f.severity]),
        [["state-backup-restore-aside", `${WEB}/${WEB_RESTORE_ASIDE_DIR}/2026-12-01T13-21-01.307Z-7f1dab`, "info"]]
      )
      assert.notInclude(web[0]!.fix!, "tier")
      assert.include(web[0]!.message, "moved aside")
    }))
})

// ---------------------------------------------------------------------------------------------------------

/** Hash of a whole real tree: every path with type, mode, mtime, content or link target (never followed). */
const hashTree = (root: string): string => {
  const h = crypto.createHash("sha256")
  const visit = (path: string) => {
    const st = nfs.lstatSync(path)
    h.update(`${NodePath.relative(root, path)}|${st.mode}|${st.mtimeMs}|${st.size}|`)
    if (st.isSymbolicLink()) h.update(nfs.readlinkSync(path))
    else if (st.isFile()) h.update(nfs.readFileSync(path))
    else if (st.isDirectory()) for (const name of nfs.readdirSync(path).sort()) visit(NodePath.join(path, name))
    h.update("\n")
  }
  visit(root)
  return h.digest("hex")
}

const nodeLayer = Layer.merge(NodeFileSystem.layer, NodeHost.layer)

describe("doctor on the Node layer", () => {
  it.scoped("leaves a messy real tree byte-for-byte, mode and mtime identical", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => nfs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-doctor-"))),
        (d) => Effect.sync(() => nfs.rmSync(d, { recursive: true, force: true }))
      )
      const agent = NodePath.join(dir, "agent")
      const web = NodePath.join(dir, "web")
      const write = (rel: string, content: string | Uint8Array, mode = 0o600) => {
        const p = NodePath.join(dir, rel)
        nfs.mkdirSync(NodePath.dirname(p), { recursive: true, mode: 0o700 })
        nfs.writeFileSync(p, content, { mode })
      }
      write("agent/settings.json", "{}")
      write("agent/trust.json", "{}")
      write("agent/cache.sqlite", "db")
      write("agent/state/migration-conflicts/trust.json", "{}")
      write("agent/work/tools/bash/nomanifest/out.txt", "x")
      write("agent/work/tools/bash/run1/.pi-work-run.json", "{not json")
      write("agent/work/tools/bash/.trash/old/file", "x")
      write("web/ext1/config/db.sqlite", "db")
      write("web/ext1/config/state/h.jsonl", "{}")
      write("web/ext1/state/h.jsonl", "{}")
      nfs.symlinkSync("/etc", NodePath.join(agent, "work", "tools", "bash", "link"))
      nfs.symlinkSync("../settings.json", NodePath.join(agent, "backups-link"))
      for (const p of ["agent/work", "agent/work/tools", "agent/work/tools/bash"]) nfs.chmodSync(NodePath.join(dir, p), 0o700)
      nfs.chmodSync(NodePath.join(agent, "state"), 0o777)
      const before = hashTree(dir)
      const report = yield* doctorAt(agent, { webDataRoot: web }).pipe(Effect.provide(nodeLayer))
      assert.strictEqual(hashTree(dir), before)
      const codes = report.findings.map((f) => `${f.code} ${f.path}`)
      for (const expected of [
        "legacy-entry trust.json",
        "unknown-root-entry cache.sqlite",
        "unknown-root-entry backups-link",
        "state-world-writable state",
        "migration-conflicts state/migration-conflicts",
        "work-unowned-run work/tools/bash/nomanifest",
        "work-unowned-run work/tools/bash/run1",
        "work-stray-entry work/tools/bash/link",
        "work-unfinished-trash work/tools/bash/.trash",
        `extension-config-database ${web}/ext1/config/db.sqlite`,
        `extension-split-state ${web}/ext1/config/state`
      ]) assert.include(codes, expected)
      assert.notInclude(codes.join("\n"), "settings.json")
    }))
})
