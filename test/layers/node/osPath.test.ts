/**
 * Where the Node layer's names meet `node:fs` (src/layers/node/osPath.ts, docs/safety.md "Names are bytes"): any bytes
 * a POSIX name may hold go out and come back through the port unchanged, checked against the bytes on disk;
 * a listing that mixes a name Node decodes lossily with one that really holds U+FFFD keeps both apart; an
 * error names the escaped path.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { bytesOfName, nameOfBytes } from "../../../src/domain/NameBytes.js"
import { nodeFileSystemWith } from "../../../src/layers/NodeFileSystem.js"
import { listDirectory, osPath, readLinkLossless, reportedPath } from "../../../src/layers/node/osPath.js"
import { FileSystem } from "../../../src/services/FileSystem.js"
import { scratchDirs } from "../../support/scratchDirs.js"

const scratch = scratchDirs()

/** A POSIX name's bytes: anything but `/` and NUL, never `.` or `..`. */
const nameBytes = fc.uint8Array({ minLength: 1, maxLength: 24 })
  .map((b) => b.map((x) => (x === 0 || x === 0x2f ? 0x5f : x)))
  .filter((b) => !(b.length <= 2 && b.every((x) => x === 0x2e)))

const onDisk = (dir: string): Array<Buffer> => fs.readdirSync(dir, { encoding: "buffer" })

describe("osPath: names are bytes through node:fs", () => {
  it.scoped("any name's bytes go out and come back through the port unchanged (file, directory, link target)", () =>
    Effect.gen(function*() {
      const port = yield* FileSystem
      const root = scratch("pi-ospath-")
      let i = 0
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(nameBytes, async (bytes) => {
            const dir = `${root}/${i++}`
            const name = nameOfBytes(bytes)
            const program = Effect.gen(function*() {
              yield* port.makeDirectory(dir)
              yield* port.writeFileExclusive(`${dir}/${name}`, bytes, { sync: false })
              yield* port.symlink(name, `${dir}/link`)
              assert.deepStrictEqual((yield* port.readDirectory(dir)).map((e) => e.name), [name, "link"].sort())
              assert.deepStrictEqual(onDisk(dir).sort(Buffer.compare), [Buffer.from(bytes), Buffer.from("link")].sort(Buffer.compare))
              assert.deepStrictEqual(yield* port.readFile(`${dir}/${name}`), bytes)
              assert.strictEqual(yield* port.readLink(`${dir}/link`), name)
              assert.isTrue(fs.readlinkSync(`${dir}/link`, { encoding: "buffer" }).equals(bytes))
              const dirSize = (yield* port.lstat(dir)).size
              const removal = yield* port.removeTree(dir, { maxEntries: 10, maxDepth: 4 })
              // The directory, the file and the link (its target is the name's bytes), as lstat describes them.
              assert.deepStrictEqual([removal.removedEntries, removal.complete, removal.removedApparentBytes], [2, true, dirSize + 2 * bytes.length])
            })
            await Effect.runPromise(program)
          }),
          { numRuns: 150 }
        )
      )
    }).pipe(Effect.provide(nodeFileSystemWith("native"))))

  it("a listing holding a name Node decodes lossily and one that really holds U+FFFD keeps the two apart", () => {
    const dir = scratch("pi-ospath-list-")
    const lossy = Buffer.from([0x61, 0xff])
    const real = Buffer.from("a\ufffd")
    fs.writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), lossy]), "")
    fs.writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), real]), "")
    fs.mkdirSync(`${dir}/plain`)
    const listed = listDirectory(dir).map((e) => `${e.name} ${e.isFile() ? "file" : "dir"}`).sort()
    assert.deepStrictEqual(listed, ["a\udcff file", "a\ufffd file", "plain dir"].sort())
    // Valid UTF-8 is never re-encoded: the string itself goes to node:fs.
    assert.strictEqual(osPath(`${dir}/a\ufffd`), `${dir}/a\ufffd`)
    assert.isTrue(Buffer.isBuffer(osPath(`${dir}/a\udcff`)))
    fs.symlinkSync(Buffer.concat([Buffer.from("../"), lossy]), `${dir}/plain/up`)
    assert.strictEqual(readLinkLossless(`${dir}/plain/up`), "../a\udcff")
    fs.symlinkSync("x\ufffd", `${dir}/plain/real`)
    assert.strictEqual(readLinkLossless(`${dir}/plain/real`), "x\ufffd")
  })

  it.scoped("an error names the escaped path (and below it), never the lossy one Node prints", () => Effect.gen(function*() {
    const given = "/nowhere/caf\udce9"
    const lossy = Buffer.from(bytesOfName(given)).toString("utf8")
    assert.strictEqual(lossy, "/nowhere/caf\ufffd")
    assert.strictEqual(reportedPath(lossy, given), given)
    assert.strictEqual(reportedPath(`${lossy}/x\ufffd`, given), `${given}/x\ufffd`)
    // Another path, or a given path without escaped bytes: as reported.
    assert.strictEqual(reportedPath("/elsewhere/\ufffd", given), "/elsewhere/\ufffd")
    assert.strictEqual(reportedPath("/a/\ufffd", "/a/\ufffd"), "/a/\ufffd")
    const port = yield* FileSystem
    const missing = NodePath.join(os.tmpdir(), given)
    const failed = yield* Effect.flip(port.lstat(`${missing}/below`))
    assert.strictEqual(failed.path, `${missing}/below`)
    const unreadable = yield* Effect.flip(port.readFile(missing))
    assert.strictEqual(unreadable.path, missing)
    assert.include(unreadable.detail, "caf\udce9")
    assert.notInclude(unreadable.detail, "\ufffd")
  }).pipe(Effect.provide(nodeFileSystemWith("portable"))))
})
