/**
 * The build removes tsc outputs of deleted sources (scripts/pruneDist.mjs), so a module removed from src/ is
 * not shipped from an old build's dist/: only `.js`/`.d.ts` without a source, never the bundles or other files.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"

const SCRIPT = path.resolve(import.meta.dirname, "../../scripts/pruneDist.mjs")

describe("build: outputs of deleted sources", () => {
  it("are removed; outputs with a source, the bundles and other files stay", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "pi-prune-dist-"))
    const files = {
      "src/kept.ts": "",
      "src/layers/node/walk.ts": "",
      "dist/kept.js": "",
      "dist/kept.d.ts": "",
      "dist/gone.js": "",
      "dist/gone.d.ts": "",
      "dist/layers/node/walk.js": "",
      "dist/layers/node/fdWalk.js": "",
      "dist/layers/node/fdWalk.d.ts": "",
      "dist/bundle/promise.mjs": "",
      "dist/bundle/chunks/store-X.js": "",
      "dist/.tsbuildinfo": ""
    }
    for (const [rel, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
      fs.writeFileSync(path.join(root, rel), text)
    }
    const r = spawnSync(process.execPath, [SCRIPT, root], { encoding: "utf8" })
    assert.strictEqual(r.status, 0, r.stderr)
    const left = Object.keys(files).filter((rel) => fs.existsSync(path.join(root, rel)))
    assert.deepStrictEqual(left, [
      "src/kept.ts",
      "src/layers/node/walk.ts",
      "dist/kept.js",
      "dist/kept.d.ts",
      "dist/layers/node/walk.js",
      "dist/bundle/promise.mjs",
      "dist/bundle/chunks/store-X.js",
      "dist/.tsbuildinfo"
    ])
    assert.match(r.stdout, /removed 4 output\(s\) of deleted sources/)
    fs.rmSync(root, { recursive: true, force: true })
  })
})
