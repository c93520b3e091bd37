/**
 * The bundles are minified with short lines (scripts/bundle.mjs `lineLimit`): a typed error a Promise caller
 * leaves unhandled prints the line it was thrown from, and that line must be one a person can read, not
 * 600 KiB of code on one line.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { assert, describe, it } from "vitest"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()
const FACADE = fileURLToPath(new URL("../../dist/bundle/promise.mjs", import.meta.url))

describe("the bundles' stack traces", () => {
  it("an unhandled rejection prints its message and short source lines, whatever the bundle's size", () => {
    if (!fs.existsSync(FACADE)) throw new Error("dist/bundle is missing: `npm run build` first (npm test does)")
    const dir = scratch("pi-stacks-")
    const script = path.join(dir, "reject.mjs")
    fs.writeFileSync(script, `import { openAgentStorage } from ${JSON.stringify(pathToFileURL(FACADE).href)}
const store = await openAgentStorage({ agentDir: ${JSON.stringify(path.join(dir, "agent"))} })
await store.acquireWorkRun({ category: "BAD", tenant: "t" })
`)
    const run = spawnSync(process.execPath, [script], { encoding: "utf8", timeout: 60_000 })
    assert.notStrictEqual(run.status, 0)
    assert.include(run.stderr, 'InvalidSegment: invalid category "BAD"')
    const longest = Math.max(...run.stderr.split("\n").map((l) => l.length))
    assert.isAtMost(longest, 400, `the longest line printed is ${longest} characters`)
  })
})
