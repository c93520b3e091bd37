/** The pure parts of state snapshots: ids, the default root, the manifest format, the link decision, the scope. */
import * as nfs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import { VERSION } from "../../src/cli/app.js"
import { sha256Hex } from "../../src/domain/Digest.js"
import {
  agentScopeRoots,
  decodeSnapshotManifest,
  encodeSnapshotManifest,
  entryProblem,
  ManifestEntry,
  resolveBackupRoot,
  shouldLink,
  snapshotId,
  sqliteGroups,
  snapshotIdTime,
  TOOL
} from "../../src/domain/StateSnapshot.js"

const body = (entries: ReadonlyArray<ManifestEntry>) => ({
  format: "pi-state-snapshot" as const,
  version: 1 as const,
  id: "2026-12-01T07-00-00.000Z-abcdef",
  createdAt: 1,
  tool: { name: TOOL.name, version: TOOL.version },
  scope: { agentDir: "/a", webDataRoot: null, roots: ["agent/state"] },
  entries
})

const attributes = {
  size: fc.nat(),
  mode: fc.integer({ min: 0, max: 0o7777 }),
  mtimeMs: fc.double({ noNaN: true, noDefaultInfinity: true }),
  changedDuringBackup: fc.option(fc.boolean(), { nil: undefined })
}
const sha256Arb = fc.hexaString({ minLength: 64, maxLength: 64 }).map((h) => h.toLowerCase())
const targetArb = fc.string({ minLength: 1 }).filter((t) => !t.includes("\0"))

/** A name a walk can meet: any characters but "/" and NUL, never "." or "..". */
const nameOf = (chars: fc.Arbitrary<string>) => chars.filter((n) => n !== "" && n !== "." && n !== ".." && !n.includes("/") && !n.includes("\0"))

/**
 * Entries as a walk records them: scope roots, directories above every entry, each path once, nothing below
 * a file or link (the decoder refuses anything else).
 */
const treeArb = (names: fc.Arbitrary<string>): fc.Arbitrary<ReadonlyArray<ManifestEntry>> =>
  fc.array(
    fc.record({
      root: fc.constantFrom("agent/state", "agent/sessions", "agent/MEMORY.md", "web/foo/state"),
      rest: fc.array(nameOf(names), { maxLength: 3 }),
      leaf: fc.constantFrom("file", "directory", "symlink"),
      sha256: sha256Arb,
      target: targetArb,
      ...attributes
    }),
    { maxLength: 8 }
  ).map((items) => {
    const directories = new Set<string>()
    for (const item of items) {
      const rest = item.root === "agent/state" && ["backups", "restore-aside"].includes(item.rest[0] ?? "") ? [] : item.rest
      for (let k = 0; k < rest.length; k++) directories.add([item.root, ...rest.slice(0, k)].join("/"))
    }
    const out: Array<ManifestEntry> = []
    const seen = new Set<string>()
    for (const item of items) {
      const rest = item.root === "agent/state" && ["backups", "restore-aside"].includes(item.rest[0] ?? "") ? [] : item.rest
      const path = [item.root, ...rest].join("/")
      for (const dir of [...directories].filter((d) => path.startsWith(`${d}/`) && !seen.has(d))) {
        seen.add(dir)
        out.push({ path: dir, type: "directory", size: 0, mode: item.mode, mtimeMs: item.mtimeMs })
      }
      if (seen.has(path)) continue
      seen.add(path)
      const type = directories.has(path) ? "directory" : item.leaf as ManifestEntry["type"]
      const { root: _r, rest: _s, leaf: _l, sha256, target, changedDuringBackup, ...fields } = item
      out.push({
        path,
        type,
        ...fields,
        ...(type === "file" ? { sha256 } : {}),
        ...(type === "symlink" ? { target } : {}),
        ...(changedDuringBackup === undefined ? {} : { changedDuringBackup })
      })
    }
    return out
  })

const entryArb = fc.record({
  path: fc.oneof(fc.constant("agent/state/x"), fc.string()),
  type: fc.constantFrom("file", "directory", "symlink"),
  size: fc.oneof(fc.nat(), fc.double()),
  mode: fc.oneof(fc.integer({ min: 0, max: 0o7777 }), fc.integer()),
  mtimeMs: fc.double(),
  sha256: fc.option(fc.oneof(sha256Arb, fc.string()), { nil: undefined }),
  target: fc.option(fc.oneof(targetArb, fc.string()), { nil: undefined })
}, { requiredKeys: ["path", "type", "size", "mode", "mtimeMs"] }) as fc.Arbitrary<ManifestEntry>

describe("StateSnapshot", () => {
  it.prop("ids sort as text in time order and give their time back", [fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: 0, max: 4e12 }), fc.nat(), fc.nat()], ([a, b, ra, rb]) => {
    const ia = snapshotId(a, ra)
    const ib = snapshotId(b, rb)
    assert.strictEqual(snapshotIdTime(ia), a)
    if (a < b) assert.isTrue(ia < ib)
  })

  it("the default root is beside the agent dir; $PI_STATE_BACKUP_DIR and the option win", () => {
    const env = (v?: string) => (name: string) => (name === "PI_STATE_BACKUP_DIR" ? v : undefined)
    assert.strictEqual(resolveBackupRoot({ env: env(), agentDir: "/home/u/.pi/agent", cwd: "/" }), "/home/u/.pi/backups/agent")
    assert.strictEqual(resolveBackupRoot({ env: env("rel/bk"), agentDir: "/home/u/.pi/agent", cwd: "/w" }), "/w/rel/bk")
    assert.strictEqual(resolveBackupRoot({ explicit: "/opt/bk", env: env("/x"), agentDir: "/a", cwd: "/" }), "/opt/bk")
  })

  it("the scope is the canonical table's state and memory entries, without state/backups and restore-aside", () => {
    assert.deepStrictEqual(agentScopeRoots("/a").map((r) => r.dest), ["agent/MEMORY.md", "agent/USER.md", "agent/SYSTEM.md", "agent/okf-memory", "agent/state", "agent/sessions"])
    assert.deepStrictEqual(agentScopeRoots("/a").find((r) => r.dest === "agent/state")!.exclude, ["backups", "restore-aside"])
  })

  it.prop("the manifest round-trips; any change to its bytes is caught by its own hash", [treeArb(fc.string({ maxLength: 6 })), fc.nat()], ([entries, flip]) => {
    const bytes = encodeSnapshotManifest(body(entries))
    const decoded = decodeSnapshotManifest(bytes)
    assert.isTrue(decoded.ok)
    if (decoded.ok) assert.deepStrictEqual(decoded.manifest.entries, JSON.parse(JSON.stringify(entries)))
    const text = new TextDecoder().decode(bytes)
    const at = text.indexOf(`"createdAt":1`) + `"createdAt":`.length
    const tampered = text.slice(0, at) + String(2 + (flip % 7)) + text.slice(at + 1)
    assert.isFalse(decodeSnapshotManifest(new TextEncoder().encode(tampered)).ok)
  })

  it.prop("the manifest's bytes are the format as first written (hash of the JSON text), any Unicode in paths included", [treeArb(fc.fullUnicodeString({ maxLength: 6 }))], ([entries]) => {
    // The encoding of sessions 1–5: the hash of the JSON string, spliced in as text.
    const json = JSON.stringify(body(entries))
    const first = new TextEncoder().encode(`${json.slice(0, -1)},"manifestSha256":${JSON.stringify(sha256Hex(json))}}\n`)
    const bytes = encodeSnapshotManifest(body(entries))
    assert.deepStrictEqual(bytes, first)
    const decoded = decodeSnapshotManifest(first)
    assert.isTrue(decoded.ok)
    if (decoded.ok) assert.deepStrictEqual(decoded.manifest.entries, JSON.parse(JSON.stringify(entries)))
  })

  it.prop("a manifest whose hash is recomputed after a path was made hostile is still refused, naming the entry", [
    treeArb(fc.string({ maxLength: 4 })),
    fc.nat(),
    fc.constantFrom(
      (p: string) => `../${p}`,
      (p: string) => `/${p}`,
      (p: string) => `${p}/../../../../etc/cron.d/x`,
      (p: string) => `${p}/./x`,
      (p: string) => `${p}//x`,
      (p: string) => `${p}\0`,
      () => "agent/extensions/evil/index.js",
      () => "agent/state/backups/config/history/.git/config",
      () => "web/Other/state/x"
    )
  ], ([entries, at, hostile]) => {
    const index = entries.length === 0 ? 0 : at % entries.length
    const doctored = [...entries]
    doctored[index] = { path: hostile(entries[index]?.path ?? "agent/state"), type: "file", size: 1, mode: 0o600, mtimeMs: 1, sha256: "0".repeat(64) }
    // encodeSnapshotManifest computes the manifest's own hash: what anyone who edits a manifest can do.
    const decoded = decodeSnapshotManifest(encodeSnapshotManifest(body(doctored)))
    assert.isFalse(decoded.ok)
    if (!decoded.ok) assert.match(decoded.why, new RegExp(`^not a snapshot manifest: entries\\[${index}\\] path `))
  })

  it("an entry below a recorded symlink, hash recomputed, is refused", () => {
    const doctored: ReadonlyArray<ManifestEntry> = [
      { path: "agent/state", type: "directory", size: 0, mode: 0o700, mtimeMs: 1 },
      { path: "agent/state/out", type: "symlink", size: 4, mode: 0o777, mtimeMs: 1, target: "/etc" },
      { path: "agent/state/out/cron.d", type: "directory", size: 0, mode: 0o755, mtimeMs: 1 }
    ]
    const decoded = decodeSnapshotManifest(encodeSnapshotManifest(body(doctored)))
    assert.deepStrictEqual(decoded, { ok: false, why: "entries[2] \"agent/state/out/cron.d\" lies below \"agent/state/out\", which the manifest records as a symlink" })
  })

  it("a manifest that is not an object, or whose entries are not an array, is refused with a reason", () => {
    const { entries: _, ...header } = body([])
    for (const doc of [{ ...header, entries: {} }, { ...header, entries: "x" }, header]) {
      const json = JSON.stringify(doc)
      const decoded = decodeSnapshotManifest(new TextEncoder().encode(`${json.slice(0, -1)},"manifestSha256":${JSON.stringify(sha256Hex(json))}}`))
      assert.isFalse(decoded.ok, json)
      if (!decoded.ok) assert.match(decoded.why, /^not a snapshot manifest: .*entries/, json)
    }
    assert.isTrue(decodeSnapshotManifest(encodeSnapshotManifest(body([]))).ok)
  })

  it.prop("the hand-written entry check agrees with the ManifestEntry schema", [fc.oneof(entryArb, fc.anything(), fc.record({ path: fc.anything(), type: fc.anything(), size: fc.anything(), mode: fc.nat(), mtimeMs: fc.nat(), sha256: fc.anything() }))], ([u]) => {
    assert.strictEqual(entryProblem(u) === undefined, Schema.is(ManifestEntry)(u), JSON.stringify(u))
  }, { fastCheck: { numRuns: 300 } })

  it("SQLite groups: a database with its present -wal/-shm; a sidecar without its database, or none at all, is no group", () => {
    assert.deepStrictEqual([...sqliteGroups(["a.db", "a.db-shm", "a.db-wal", "b.db", "c.db-wal", "x.json"])], [["a.db", ["a.db-wal", "a.db-shm"]]])
    assert.strictEqual(sqliteGroups(["f1.json", "f2.json", "db"]).size, 0)
    assert.strictEqual(sqliteGroups(["orphan-wal", "orphan-shm"]).size, 0)
  })

  it("links only when type, size, mtime and mode all match an intact record", () => {
    const prev: ManifestEntry = { path: "p", type: "file", size: 3, mode: 0o644, mtimeMs: 1.5, sha256: "h" }
    const live = { type: "file" as const, size: 3, mode: 0o644, mtimeMs: 1.5 }
    assert.isTrue(shouldLink(live, prev))
    for (const change of [{ size: 4 }, { mode: 0o600 }, { mtimeMs: 1.503 }, { mtimeMs: 1.497 }, { type: "symlink" as const }]) assert.isFalse(shouldLink({ ...live, ...change }, prev))
    // A time put back through utimes keeps whole microseconds: under MTIME_PRECISION_MS apart is the same time.
    for (const mtimeMs of [1.5 - 0.0015, 1.5001, 1.5 + 0.0019]) assert.isTrue(shouldLink({ ...live, mtimeMs }, prev), String(mtimeMs))
    assert.isFalse(shouldLink(live, undefined))
    assert.isFalse(shouldLink(live, { ...prev, changedDuringBackup: true }))
    assert.isFalse(shouldLink(live, { ...prev, sqliteGroup: true }))
  })

  it("the tool version is the package's", () => {
    assert.strictEqual(TOOL.version, JSON.parse(nfs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version)
    assert.strictEqual(TOOL.version, VERSION)
  })
})
