/**
 * Names are bytes (docs/safety.md "Names are bytes"), for work runs on real disk: a run holding a file and a
 * directory whose names are not UTF-8 (created here from bytes) is measured and pruned whole by either walker.
 * The portable walker lists through `node:fs`, which decodes such a name lossily: it must read the listing
 * again as bytes, or it would unlink a name that does not exist and leave the run half-deleted in `.trash/`.
 * (The portable removal runs on a remover thread from the build: `npm test` builds first.)
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeStorage from "../../src/layers/NodeStorage.js"
import { WorkRuns } from "../../src/services/WorkRuns.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()
const TOOL = { category: "tools", tenant: "bash" } as const
/** `caf` 0xE9 `-` 0xFF: two bytes that are not UTF-8. */
const RAW = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2d, 0xff])
const under = (dir: string | Buffer, ...names: ReadonlyArray<Buffer | string>): Buffer =>
  Buffer.concat([Buffer.from(dir), ...names.flatMap((n) => [Buffer.from("/"), Buffer.from(n)])])

for (const walker of ["native", "portable"] as const) {
  describe(`a work run holding names that are not UTF-8 (Node, ${walker} walker)`, () => {
    it.scoped("is measured and pruned whole: nothing left in the tenant or its .trash", () =>
      Effect.gen(function*() {
        const agentDir = scratch("pi-names-prune-")
        const services = NodeStorage.layerWith({ agentDir, migrate: false, config: { walker }, workRuns: { opportunisticRetention: false } })
        const { report, tenant } = yield* Effect.gen(function*() {
          const workRuns = yield* WorkRuns
          const path = yield* Effect.scoped(Effect.gen(function*() {
            const run = yield* workRuns.acquire({ ...TOOL, runId: "with-raw-names", retention: false })
            fs.writeFileSync(under(run.path, Buffer.concat([RAW, Buffer.from(".txt")])), "12345")
            fs.mkdirSync(under(run.path, RAW))
            fs.writeFileSync(under(run.path, RAW, RAW), "123")
            fs.mkdirSync(under(run.path, RAW, "sub"))
            fs.writeFileSync(under(run.path, RAW, "sub", RAW), "1")
            return run.path
          }))
          // Over a byte budget: measured first (every file counted), then removed for its size.
          const report = yield* workRuns.prune({ ...TOOL, policy: { maxBytes: 1 } })
          return { report, tenant: NodePath.dirname(path) }
        }).pipe(Effect.provide(services))
        assert.deepStrictEqual(report.errors, [], JSON.stringify(report.errors))
        assert.isFalse(report.incomplete)
        assert.isAtLeast(report.bytesBefore ?? 0, 9)
        assert.deepStrictEqual(report.removed.map((r) => [r.runId, r.reason]), [["with-raw-names", "bytes"]], JSON.stringify(report))
        assert.strictEqual(report.removed[0]!.bytes, report.bytesBefore)
        assert.strictEqual(report.bytesAfter, 0)
        assert.isFalse(fs.existsSync(NodePath.join(tenant, "with-raw-names")))
        const trash = NodePath.join(tenant, ".trash")
        assert.deepStrictEqual(fs.existsSync(trash) ? fs.readdirSync(trash, { encoding: "buffer" }) : [], [])
      }))
  })
}
