/**
 * `work ls` never skips in silence what it does not look into: a work root that is a file, a tenant that is a
 * symlink (never followed), a file where a tenant belongs, each named with why, in words and in `--json`
 * (`notListed`), through the built CLI on real directories. A sound tree has none, and a category that is
 * only unsafe to prune (writable by others) is read: its runs are listed.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { openAgentStorage } from "../../src/promise.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const temps: Array<string> = []
afterAll(() => {
  for (const dir of temps) Fs.rmSync(dir, { recursive: true, force: true })
})

interface NotListed {
  readonly path: string
  readonly what: string
  readonly type: string
  readonly reason: string
}

/** An agent dir holding one released run of tools/bash. */
const agentWithRun = async (base: string, name: string) => {
  const agentDir = Path.join(base, name)
  const store = await openAgentStorage({ agentDir, migrate: false })
  const run = await store.acquireWorkRun({ category: "tools", tenant: "bash", retention: false })
  await run.release()
  await store.close()
  return agentDir
}

const ls = (agentDir: string, ...args: ReadonlyArray<string>) => {
  const r = spawnSync(process.execPath, [MAIN, "--agent-dir", agentDir, "work", "ls", ...args], { encoding: "utf8" })
  assert.strictEqual(r.status, 0, r.stderr)
  return r.stdout
}
const notListed = (agentDir: string, ...args: ReadonlyArray<string>) =>
  (JSON.parse(ls(agentDir, ...args, "--json")) as { notListed: ReadonlyArray<NotListed> }).notListed

describe("work ls names what it did not look into (built CLI)", () => {
  it("a work root that is a file, a symlinked tenant, a file where a tenant belongs; a writable category is read", async () => {
    const base = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-ls-notlisted-"))
    temps.push(base)

    const sound = await agentWithRun(base, "sound")
    assert.deepStrictEqual(notListed(sound), [])
    assert.notInclude(ls(sound), "Not looked into")

    const fileRoot = await agentWithRun(base, "file-root")
    Fs.rmSync(Path.join(fileRoot, "work"), { recursive: true })
    Fs.writeFileSync(Path.join(fileRoot, "work"), "x")
    assert.deepStrictEqual(notListed(fileRoot).map((t) => [t.what, t.type, t.reason]), [["the work root", "regular file", "not-a-directory"]])
    assert.match(ls(fileRoot), /^No work runs\.\n\nNot looked into .*\nWHAT +PATH +WHY\nthe work root +\S+\/work +it is a regular file\n$/)

    const linked = await agentWithRun(base, "linked")
    const real = Path.join(base, "real-bash")
    Fs.renameSync(Path.join(linked, "work", "tools", "bash"), real)
    Fs.symlinkSync(real, Path.join(linked, "work", "tools", "bash"))
    for (const args of [[], ["tools/bash"], ["tools"]]) {
      const [target] = notListed(linked, ...args)
      assert.deepStrictEqual([target?.what, target?.path, target?.reason], ["tenant tools/bash", Path.join(linked, "work", "tools", "bash"), "symlink"], args.join(" "))
      assert.include(ls(linked, ...args), "tenant tools/bash", args.join(" "))
    }
    // The link's target holds a run: never followed, so never listed.
    assert.notInclude(ls(linked), Fs.readdirSync(real).find((n) => !n.startsWith("."))!)

    const stray = await agentWithRun(base, "stray")
    Fs.writeFileSync(Path.join(stray, "work", "tools", "notes.txt"), "x")
    const text = ls(stray)
    assert.match(text, /^TENANT +RUN /, "the sound tenant's run is still listed")
    assert.deepStrictEqual(notListed(stray).map((t) => [t.what, t.reason]), [["tenant tools/notes.txt", "not-a-directory"]])

    // Behind a link the listing did not follow, a filter's target is not known to be absent: never "no such".
    const linkedRoot = await agentWithRun(base, "linked-root")
    Fs.renameSync(Path.join(linkedRoot, "work"), Path.join(base, "real-work"))
    Fs.symlinkSync(Path.join(base, "real-work"), Path.join(linkedRoot, "work"))
    const linkedCategory = await agentWithRun(base, "linked-category")
    Fs.renameSync(Path.join(linkedCategory, "work", "tools"), Path.join(base, "real-tools"))
    Fs.symlinkSync(Path.join(base, "real-tools"), Path.join(linkedCategory, "work", "tools"))
    for (const [agentDir, what] of [[linkedRoot, "the work root"], [linkedCategory, "category tools"]] as const) {
      for (const filter of ["tools", "tools/bash", "tools/nope"]) {
        const text = ls(agentDir, filter)
        assert.notInclude(text, "no such", `${what}, ${filter}`)
        assert.match(text, /^No work runs\.\n\nNot looked into /, `${what}, ${filter}`)
        const doc = JSON.parse(ls(agentDir, filter, "--json")) as { notListed: ReadonlyArray<NotListed>; missing?: string }
        assert.notProperty(doc, "missing", `${what}, ${filter}`)
        assert.deepStrictEqual(doc.notListed.map((t) => t.what), [what], `${what}, ${filter}`)
      }
    }
    // A filter naming what is really not there still says so.
    assert.strictEqual(ls(sound, "tools/nope"), "tools/nope: no such tenant\n")
    assert.strictEqual(ls(sound, "nope"), "nope: no such category\n")

    // In (category, tenant) name order, a category before its tenants: the order `work prune --all` refuses in.
    const mixed = await agentWithRun(base, "mixed")
    Fs.symlinkSync(base, Path.join(mixed, "work", "aaa"))
    Fs.writeFileSync(Path.join(mixed, "work", "zzz"), "x")
    Fs.writeFileSync(Path.join(mixed, "work", "tools", "zfile"), "x")
    Fs.symlinkSync(base, Path.join(mixed, "work", "tools", "alink"))
    assert.deepStrictEqual(notListed(mixed).map((t) => t.what), ["category aaa", "tenant tools/alink", "tenant tools/zfile", "category zzz"])

    const writable = await agentWithRun(base, "writable")
    Fs.chmodSync(Path.join(writable, "work", "tools"), 0o777)
    assert.deepStrictEqual(notListed(writable), [])
    assert.match(ls(writable), /^TENANT +RUN .*\ntools\/bash +\S+ +generated +released /)
  })
})
