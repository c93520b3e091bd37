/**
 * The clean scan's pure rules (docs/config-history.md "The stat cache"): a record is made only from scans with
 * nothing racy and every ctime known; it holds only while every path answers the same identity; anything that
 * is not exactly a record decodes to nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import {
  CLEAN_RACY_MARGIN_MS,
  type CleanScan,
  cleanScanHolds,
  decodeCleanScan,
  type Identity,
  identityOf,
  recordableScan,
  sameCleanScan
} from "../../src/domain/ConfigCleanScan.js"

const NOW = 1_800_000_000_000
const old = NOW - 60_000
const file = (size: number, ino = 7): Identity => ["File", size, 0o600, ino, old, old]
const scan = (observed: CleanScan["observed"]): CleanScan => ({ defaults: true, agentDir: "/a", webRoot: "/w", observed, skipped: [] })

describe("clean scan rules", () => {
  it("an identity keeps type, size, permission bits, inode, mtime and ctime; none without a ctime", () => {
    assert.deepStrictEqual(identityOf({ type: "File", size: 3, mode: 0o100644, ino: 9, mtimeMs: 1, ctimeMs: 2 }), ["File", 3, 0o644, 9, 1, 2])
    assert.isNull(identityOf(undefined))
    assert.isUndefined(identityOf({ type: "File", size: 3, mode: 0o644, ino: 9, mtimeMs: 1 }))
  })

  it("racy git: a scan is recordable only when every mtime and ctime it saw is older than the margin", () => {
    assert.isTrue(recordableScan([["/a/x", file(1)], ["/a/y", null]], NOW))
    const fresh = (m: number, c: number): Identity => ["File", 1, 0o600, 1, m, c]
    assert.isFalse(recordableScan([["/a/x", fresh(NOW - CLEAN_RACY_MARGIN_MS, old)]], NOW))
    assert.isFalse(recordableScan([["/a/x", fresh(old, NOW - 1)]], NOW))
    assert.isFalse(recordableScan([["/a/x", fresh(NOW + 5_000, old)]], NOW))
    assert.isFalse(recordableScan([["/a/x", undefined]], NOW))
  })

  it.prop("holds exactly when every observed path answers the same identity, for these roots and the defaults", [
    fc.array(fc.tuple(fc.constantFrom("File", "Directory", "SymbolicLink"), fc.nat(100), fc.constantFrom(0o600, 0o644, 0o755), fc.nat(50), fc.nat(3), fc.nat(3)), { minLength: 1, maxLength: 6 }),
    fc.nat(5),
    fc.nat(6)
  ], ([ids, which, field]) => {
    const observed = ids.map((id, i) => [`/a/f${i}`, id as unknown as Identity] as const)
    const record = scan(observed)
    const now = new Map<string, Identity | null>(observed)
    assert.isTrue(cleanScanHolds(record, { agentDir: "/a", webRoot: "/w" }, (p) => now.get(p)))
    const [path, id] = observed[which % observed.length]!
    // Any one field of one path answering otherwise (or the path gone) is not proven.
    const changed: Identity | null = field === 6 ? null : (id.map((v, i) => (i === field ? (typeof v === "string" ? (v === "File" ? "Directory" : "File") : v + 1) : v)) as unknown as Identity)
    now.set(path, changed)
    assert.isFalse(cleanScanHolds(record, { agentDir: "/a", webRoot: "/w" }, (p) => now.get(p)))
    now.set(path, id)
    assert.isFalse(cleanScanHolds(record, { agentDir: "/a", webRoot: "/w" }, (p) => (p === path ? undefined : now.get(p))))
    assert.isFalse(cleanScanHolds(record, { agentDir: "/b", webRoot: "/w" }, (p) => now.get(p)))
    assert.isFalse(cleanScanHolds(record, { agentDir: "/a", webRoot: "/v" }, (p) => now.get(p)))
    assert.isFalse(cleanScanHolds({ ...record, defaults: false }, { agentDir: "/a", webRoot: "/w" }, (p) => now.get(p)))
  })

  it("a path absent when recorded must still be absent", () => {
    const record = scan([["/a/settings.json", null]])
    assert.isTrue(cleanScanHolds(record, { agentDir: "/a", webRoot: "/w" }, () => null))
    assert.isFalse(cleanScanHolds(record, { agentDir: "/a", webRoot: "/w" }, () => file(0)))
  })

  it("decodes exactly a record; hostile or foreign shapes are nothing", () => {
    const good = { defaults: true, agentDir: "/a", webRoot: "/w", observed: [["/a/x", file(1)], ["/a/y", null]], skipped: [{ _tag: "Symlink", path: "a", reason: "r", message: "a: r" }] }
    assert.deepStrictEqual(decodeCleanScan(good), good as unknown as CleanScan)
    for (const bad of [
      null, 1, "x", [], {},
      { ...good, defaults: "yes" },
      { ...good, agentDir: 1 },
      { ...good, observed: {} },
      { ...good, observed: [["relative/x", file(1)]] },
      { ...good, observed: [["/a/x\0y", file(1)]] },
      { ...good, observed: [["/a/x", ["File", 1, 2, 3, 4]]] },
      { ...good, observed: [["/a/x", ["File", 1, 2, 3, 4, "5"]]] },
      { ...good, observed: [["/a/x", ["File", 1, 2, 3, 4, Number.NaN]]] },
      { ...good, skipped: [{ path: "a" }] },
      { ...good, skipped: [{ _tag: "X", path: "a", reason: 1, message: "m" }] },
      { ...good, skipped: "none" }
    ]) assert.isUndefined(decodeCleanScan(bad), JSON.stringify(bad))
    assert.isTrue(sameCleanScan(good as unknown as CleanScan, JSON.parse(JSON.stringify(good))))
    assert.isFalse(sameCleanScan(undefined, good as unknown as CleanScan))
    assert.isFalse(sameCleanScan(good as unknown as CleanScan, { ...(good as unknown as CleanScan), skipped: [] }))
  })
})
