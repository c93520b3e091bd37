/**
 * What the native snapshot calls promise beyond the conformance suite (which runs them as the Node layer's
 * `readDirectoryInfo` and `linkEach`): every field the link decision compares is exactly what `fs.lstatSync`
 * says, nanosecond mtimes included (a record written from one must equal a look through the other, or an
 * unchanged file would be copied, or a changed one linked), and no descriptor outlives a call.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import { loadFsat } from "../../../src/layers/node/fsat.js"
import { nativeSnapshotCalls, type SnapshotCalls } from "../../../src/layers/node/snapshotCalls.js"
import type { FileInfo } from "../../../src/services/FileSystem.js"
import { openDescriptorsUnder } from "../../support/descriptors.js"
import { scratchDirs } from "../../support/scratchDirs.js"

const scratch = scratchDirs()

const calls = (): SnapshotCalls => {
  const loaded = loadFsat()
  if (!("fsat" in loaded)) throw new Error(`native walker ${loaded.why}`)
  const made = nativeSnapshotCalls(loaded.fsat)
  if (made === undefined) throw new Error("the built addon has no listInfo/linkEach: rebuild it (npm run install)")
  return made
}

/** These listings are all UTF-8: a fall back to the portable listing would be a defect. */
const nativeOnly = () => Effect.dieMessage("fell back to the portable listing")

const asNodeSees = (path: string): FileInfo => {
  const s = fs.lstatSync(path)
  const type = s.isFile() ? "File" : s.isDirectory() ? "Directory" : s.isSymbolicLink() ? "SymbolicLink" : "Other"
  return { type, size: s.size, mode: s.mode & 0o7777, uid: s.uid, ino: s.ino, dev: s.dev, nlink: s.nlink, mtimeMs: s.mtimeMs, blocks: s.blocks }
}


describe("native snapshot calls (fsat listInfo, linkEach)", () => {
  it.effect("readDirectoryInfo answers, field for field, what lstatSync says, for every kind of entry, sorted", () =>
    Effect.gen(function*() {
      const root = scratch("pi-snapcalls-")
      fs.writeFileSync(`${root}/b-file`, "bytes")
      fs.chmodSync(`${root}/b-file`, 0o4751)
      fs.mkdirSync(`${root}/a-dir`)
      fs.symlinkSync("nowhere", `${root}/c-link`)
      fs.linkSync(`${root}/b-file`, `${root}/d-second-name`)
      execFileSync("mkfifo", [`${root}/e-fifo`])
      fs.writeFileSync(`${root}/Z-upper`, "")
      const before = openDescriptorsUnder(root)
      const listed = yield* calls().readDirectoryInfo(root, nativeOnly)
      assert.strictEqual(openDescriptorsUnder(root), before)
      assert.deepStrictEqual(listed.map((e) => e.name), ["Z-upper", "a-dir", "b-file", "c-link", "d-second-name", "e-fifo"])
      for (const e of listed) assert.deepStrictEqual(e.info, asNodeSees(`${root}/${e.name}`), e.name)
      assert.strictEqual(listed.find((e) => e.name === "e-fifo")!.info.type, "Other")
      // A final symlink is refused (as readDirectory does); a trailing slash resolves it, as the walk relies on.
      fs.symlinkSync(root, `${root}-link`)
      const refused = yield* Effect.flip(calls().readDirectoryInfo(`${root}-link`, nativeOnly))
      assert.strictEqual(refused.errno, "ENOTDIR")
      assert.strictEqual((yield* calls().readDirectoryInfo(`${root}-link/`, nativeOnly)).length, listed.length)
      assert.strictEqual((yield* Effect.flip(calls().readDirectoryInfo(`${root}/missing`, nativeOnly))).errno, "ENOENT")
      assert.strictEqual(openDescriptorsUnder(root), before)
    }))

  it.effect("nanosecond mtimes: the native mtimeMs equals Node's, so the link decision sees one value", () =>
    Effect.gen(function*() {
      const root = scratch("pi-snapcalls-ns-")
      fs.writeFileSync(`${root}/f`, "x")
      const seconds = FastCheck.integer({ min: 0, max: 4_000_000_000 })
      const nanos = FastCheck.integer({ min: 0, max: 999_999_999 })
      FastCheck.assert(
        FastCheck.property(seconds, nanos, (s, ns) => {
          // touch takes an exact timespec (fs.utimes goes through a double and may round the nanoseconds).
          execFileSync("touch", ["-h", "-m", "-d", `@${s}.${String(ns).padStart(9, "0")}`, `${root}/f`])
          const listed = Effect.runSync(calls().readDirectoryInfo(root, nativeOnly))
          return listed[0]!.info.mtimeMs === fs.lstatSync(`${root}/f`).mtimeMs
        }),
        { numRuns: 60 }
      )
    }))

  it.effect("linkEach opens each directory once, links what it can, and leaves no descriptor open", () =>
    Effect.gen(function*() {
      const root = scratch("pi-snapcalls-link-")
      fs.mkdirSync(`${root}/from`)
      fs.mkdirSync(`${root}/to`)
      const names = Array.from({ length: 50 }, (_, i) => `f${i}`)
      for (const n of names) fs.writeFileSync(`${root}/from/${n}`, n)
      fs.symlinkSync(`${root}/to`, `${root}/to-link`)
      const before = openDescriptorsUnder(root)
      // Through a symlinked directory: refused for every name, nothing linked behind the link.
      const refused = yield* calls().linkEach(`${root}/from`, `${root}/to-link`, names)
      assert.isTrue(refused.every((e) => e?.errno === "ENOTDIR"))
      assert.deepStrictEqual(fs.readdirSync(`${root}/to`), [])
      const answers = yield* calls().linkEach(`${root}/from`, `${root}/to`, [...names, "missing"])
      assert.isTrue(answers.slice(0, 50).every((e) => e === undefined))
      assert.strictEqual(answers[50]?.errno, "ENOENT")
      assert.strictEqual(openDescriptorsUnder(root), before)
      for (const n of names) assert.strictEqual(fs.lstatSync(`${root}/to/${n}`).ino, fs.lstatSync(`${root}/from/${n}`).ino)
    }))
})
