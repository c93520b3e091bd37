/**
 * Config writers in several processes at once, on real disk, through the shipped facade bundle
 * (`dist/bundle/promise.mjs`): every `config.set` that resolved is in settings.json, none is rejected for
 * another writer's save, and nothing is left aside (`.kept-`) or locked (docs/tiers.md, `settingsLock.ts`). A lock
 * a crashed writer left is taken over once stale; a live one is waited for.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { runNode } from "../support/child.js"
import { extensionContext, openTiers } from "../../src/facade/tiers.js"
import { SETTINGS_LOCK } from "../../src/domain/Tiers.js"
import { SETTINGS_LOCK_STALE_MS } from "../../src/services/internal/settingsLock.js"

const FACADE = fileURLToPath(new URL("../../dist/bundle/promise.mjs", import.meta.url))
const temps: Array<string> = []
afterAll(() => temps.forEach((d) => Fs.rmSync(d, { recursive: true, force: true })))

const WRITER = `
const [facade, root, who, n] = process.argv.slice(2)
const { openTiers, extensionContext } = await import(facade)
const tiers = await openTiers(extensionContext("x", { dataRoot: root }))
const answers = []
for (let i = 0; i < Number(n); i++) {
  try { await tiers.config.set(who + "-" + i, i); answers.push({ key: who + "-" + i, ok: true }) }
  catch (e) { answers.push({ key: who + "-" + i, ok: false, tag: e._tag, reason: e.reason }) }
}
await tiers.close()
console.log(JSON.stringify(answers))
`

describe("config.set from several processes (built facade, real disk)", () => {
  it("eight writers setting keys at once: every set resolves, and every key it set is in settings.json", async () => {
    const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-config-writers-"))
    temps.push(root)
    const script = Path.join(root, "writer.mjs")
    Fs.writeFileSync(script, WRITER)
    const writers = ["a", "b", "c", "d", "e", "f", "g", "h"]
    const results = await Promise.all(writers.map((who) => runNode(script, [FACADE, root, who, "60"])))
    const answers = results.flatMap((r) => {
      assert.strictEqual(r.code, 0, r.stderr)
      return JSON.parse(r.stdout) as Array<{ key: string; ok: boolean; tag?: string; reason?: string }>
    })
    assert.deepStrictEqual(answers.filter((a) => !a.ok), [], "no set was refused for another writer's save")
    const live = JSON.parse(Fs.readFileSync(Path.join(root, "x/config/settings.json"), "utf8")) as Record<string, number>
    assert.deepStrictEqual(answers.filter((a) => !(a.key in live)).map((a) => a.key), [], "every resolved set is kept")
    assert.strictEqual(Object.keys(live).length, writers.length * 60)
    assert.deepStrictEqual(Fs.readdirSync(Path.join(root, "x/config")), ["settings.json"], "nothing kept aside, no lock left")
  }, 120_000)

  it("a lock a crashed writer left is taken over once stale; a live writer's is waited for", async () => {
    const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-config-lock-"))
    temps.push(root)
    const tiers = await openTiers(extensionContext("x", { dataRoot: root }))
    try {
      const config = Path.join(root, "x/config")
      const lock = Path.join(config, SETTINGS_LOCK)
      Fs.mkdirSync(config, { recursive: true })
      Fs.writeFileSync(lock, "crashed\n")
      const old = (Date.now() - SETTINGS_LOCK_STALE_MS - 5_000) / 1000
      Fs.utimesSync(lock, old, old)
      await tiers.config.set("after-crash", 1)
      assert.strictEqual(await tiers.config.get("after-crash"), 1)
      assert.isFalse(Fs.existsSync(lock))
      // A fresh lock: the set waits for it, and goes once its writer drops it.
      Fs.writeFileSync(lock, "live\n")
      let done = false
      const waiting = tiers.config.set("after-wait", 2).then(() => (done = true))
      await new Promise((resolve) => setTimeout(resolve, 300))
      assert.isFalse(done, "a live writer's lock is waited for")
      Fs.unlinkSync(lock)
      await waiting
      assert.strictEqual(await tiers.config.get("after-wait"), 2)
      assert.isFalse(Fs.existsSync(lock))
      // The lock's name is the library's: config.writeFile refuses it.
      const refused = await tiers.config.writeFile(SETTINGS_LOCK, "x").then(() => undefined, (e: { _tag: string }) => e)
      assert.strictEqual(refused?._tag, "InvalidArgument")
      // So is the form of its temp files (config history never records one); a name that only looks alike is data.
      const temp = await tiers.config.writeFile(".draft.tmp-0123456789ab", "x").then(() => undefined, (e: { _tag: string; message: string }) => e)
      assert.strictEqual(temp?._tag, "InvalidArgument")
      assert.include(temp?.message, ".<name>.tmp-<12 hex digits>")
      await tiers.config.writeFile(".draft.tmp-1", "mine")
      assert.strictEqual(Fs.readFileSync(Path.join(config, ".draft.tmp-1"), "utf8"), "mine")
    } finally {
      await tiers.close()
    }
  }, 60_000)
})
