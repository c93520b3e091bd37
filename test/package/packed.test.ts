/**
 * The shipped artifacts (issue 18): `npm pack` the built package, install the tarball into an empty temp
 * project offline (the tarball itself plus npm's local cache for `yaml`; no network), then use it as a
 * stranger would: the Promise facade through `import` and through `require`, and the CLI through its `bin`.
 * The install runs the package's own install script, so the native addon is compiled there and must load
 * from the bundles (its path is found from the package root, not the bundle).
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, assert, beforeAll, describe, it } from "vitest"

const exec = promisify(execFile)
const REPO = fileURLToPath(new URL("../..", import.meta.url))

let temp = ""
let project = ""
let tarball = ""

/** What a consumer script prints: it exercises the facade and reports what it saw. */
const consumerBody = (agentDir: string) => `
  const store = await openAgentStorage({ agentDir: ${JSON.stringify(agentDir)} })
  const run = await store.acquireWorkRun({ category: "c", tenant: "t" })
  fs.writeFileSync(path.join(run.path, "out.txt"), "x".repeat(1000))
  await run.release()
  const plan = await store.pruneWorkTenant({ category: "c", tenant: "t", dryRun: true, policy: { maxInactiveRuns: 0 } })
  let effect = "not installed"
  try { effect = require.resolve("effect") } catch {}
  const addon = fs.readFileSync("/proc/self/maps", "utf8").includes(path.join("pi-agent-storage", "build", "Release", "fsat.node"))
  await store.close()
  process.stdout.write(JSON.stringify({ removed: plan.removed.map((r) => [r.reason, r.bytes !== null && r.bytes >= 1000]), effect, addon }))
`

const runNode = async (args: ReadonlyArray<string>) => (await exec(process.execPath, args, { cwd: project })).stdout

describe("packed tarball", () => {
  beforeAll(async () => {
    if (!fs.existsSync(path.join(REPO, "dist", "bundle", "promise.mjs"))) throw new Error("dist/bundle is missing: `npm run build` first")
    temp = fs.mkdtempSync(path.join(os.tmpdir(), "pi-packed-"))
    project = path.join(temp, "project")
    fs.mkdirSync(project)
    // --ignore-scripts: `npm test` has just built dist/; packing must not rebuild it under the test's feet.
    const packed = await exec("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", temp], { cwd: REPO })
    tarball = path.join(temp, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename)
    fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, allowScripts: { "pi-agent-storage": true } }))
    await exec("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: project })
  }, 120_000)

  afterAll(() => {
    if (temp !== "") fs.rmSync(temp, { recursive: true, force: true })
  })

  it("ships the bundles, the Effect API, the native source and nothing else (no tsbuildinfo, maps or CLI sources)", async () => {
    const listed = await exec("tar", ["-tzf", tarball])
    const files = listed.stdout.split("\n").filter((f) => f !== "").map((f) => f.replace(/^package\//, ""))
    for (const needed of ["dist/bundle/promise.mjs", "dist/bundle/promise.cjs", "dist/bundle/cli/main.mjs", "dist/index.js", "dist/index.d.ts", "dist/promise.d.ts", "dist/layers/node/removerThread.js", "native/fsat.c", "binding.gyp", "package.json", "README.md"]) {
      assert.include(files, needed)
    }
    assert.deepStrictEqual(files.filter((f) => /\.map$|tsbuildinfo|^src\/|^test\/|^bench\/|^dist\/cli\//.test(f)), [])
  })

  it("installs only what the facade and the CLI need at run time: no Effect, no CLI stack", () => {
    const installed = fs.readdirSync(path.join(project, "node_modules")).filter((n) => !n.startsWith("."))
    assert.deepStrictEqual(installed.sort(), ["pi-agent-storage", "yaml"])
    assert.isTrue(fs.existsSync(path.join(project, "node_modules", "pi-agent-storage", "build", "Release", "fsat.node")), "the install script built the addon")
  })

  it("the facade works through import, with the native addon loaded from the package", async () => {
    const agentDir = path.join(temp, "agent-esm")
    fs.writeFileSync(path.join(project, "esm.mjs"), `import * as fs from "node:fs"\nimport * as path from "node:path"\nimport { createRequire } from "node:module"\nimport { openAgentStorage } from "pi-agent-storage/promise"\nconst require = createRequire(import.meta.url)\n${consumerBody(agentDir)}`)
    const seen = JSON.parse(await runNode(["esm.mjs"]))
    assert.deepStrictEqual(seen, { removed: [["count", true]], effect: "not installed", addon: true })
  })

  it("the facade works through require", async () => {
    const agentDir = path.join(temp, "agent-cjs")
    fs.writeFileSync(path.join(project, "cjs.cjs"), `const fs = require("node:fs")\nconst path = require("node:path")\nconst { openAgentStorage } = require("pi-agent-storage/promise")\n;(async () => {${consumerBody(agentDir)}})().catch((e) => { console.error(e); process.exit(1) })`)
    const seen = JSON.parse(await runNode(["cjs.cjs"]))
    assert.deepStrictEqual(seen, { removed: [["count", true]], effect: "not installed", addon: true })
  })

  it("the CLI runs through its bin", async () => {
    const bin = path.join(project, "node_modules", ".bin", "pi-storage")
    const version = await exec(bin, ["--version"], { cwd: project })
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }
    assert.strictEqual(version.stdout, `pi-storage ${pkg.version}\n`)
    const agentDir = path.join(temp, "agent-esm")
    const status = await exec(bin, ["status", "--agent-dir", agentDir], { cwd: project })
    assert.include(status.stdout, `Agent dir  ${agentDir}`)
    assert.match(status.stdout, /c\/t/)
  })
})
