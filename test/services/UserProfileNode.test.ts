/**
 * MEM1 with real processes on the real file system: eight writers (the built facade, `npm test` builds
 * first) add at once with a tiny budget, so they archive and re-archive under each other; every fact ends up
 * exactly once across USER.md and the shards, and the index names every shard.
 */
import { runNode } from "../support/child.js"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { INDEX_FILE, parseIndex, parseShard, SHARD_NAME_RE } from "../../src/domain/UserProfileArchive.js"
import { parseUserText } from "../../src/domain/UserProfileText.js"

const WRITER = Path.join(import.meta.dirname, "..", "fixtures", "profileWriter.mjs")
const temps: Array<string> = []
afterAll(() => temps.forEach((d) => Fs.rmSync(d, { recursive: true, force: true })))

const runWriter = (agentDir: string, id: number, count: number, budget: number) =>
  runNode(WRITER, [agentDir, String(id), String(count), String(budget)])

describe("user profile: real processes", () => {
  it("eight writers adding at once with a tiny budget: every fact exactly once", async () => {
    const agentDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-profile-"))
    temps.push(agentDir)
    const writers = 8
    const count = 4
    const results = await Promise.all(Array.from({ length: writers }, (_, id) => runWriter(agentDir, id, count, 200)))
    for (const r of results) {
      assert.strictEqual(r.code, 0, r.stderr)
      assert.deepStrictEqual(JSON.parse(r.stdout), Array(count).fill("added"))
    }
    const archive = Path.join(agentDir, "okf-memory", "user-preferences")
    const counts = new Map<string, number>()
    const bump = (e: string) => counts.set(e, (counts.get(e) ?? 0) + 1)
    const shards = Fs.readdirSync(archive).filter((n) => SHARD_NAME_RE.test(n))
    for (const name of shards) {
      const parsed = parseShard(Fs.readFileSync(Path.join(archive, name), "utf8"))
      assert.isTrue(parsed.ok, name)
      if (parsed.ok) parsed.shard.entries.forEach(bump)
    }
    parseUserText(Fs.readFileSync(Path.join(agentDir, "USER.md"), "utf8")).entries.forEach(bump)
    assert.isAbove(shards.length, 1, "the tiny budget archived more than once")
    assert.strictEqual(counts.size, writers * count)
    for (const [fact, n] of counts) assert.strictEqual(n, 1, fact)
    for (let id = 0; id < writers; id++) for (let i = 0; i < count; i++) assert.isTrue([...counts.keys()].some((f) => f.startsWith(`writer ${id} fact ${i}:`)))
    const index = parseIndex(Fs.readFileSync(Path.join(archive, INDEX_FILE), "utf8"))
    assert.isTrue(index.ok)
    if (index.ok) assert.deepStrictEqual([...index.shards].sort(), shards.sort())
    // No lock, no journal, no temp file left behind.
    assert.deepStrictEqual(Fs.readdirSync(Path.join(agentDir, "state", "user-profile")), [])
    assert.deepStrictEqual(Fs.readdirSync(archive).filter((n) => n.startsWith(".")), [])
  }, 120_000)
})
