/**
 * What the shipped bundles read at start-up (docs/install.md "Installing"), seen by a module `load` hook in real child
 * processes: importing the facade reads no store chunk until `openAgentStorage` (nor the tier runtime until
 * `openTiers`); `pi-storage --version` reads nothing but its small entry file. The facade's lazily imported
 * modules are entries of their own in the bundle (esbuild names their chunks `store-*`, `tiersRuntime-*`).
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"

const BUNDLE = fileURLToPath(new URL("../../dist/bundle/", import.meta.url))
const FACADE = Path.join(BUNDLE, "promise.mjs")
const CLI = Path.join(BUNDLE, "cli", "main.mjs")

let dir: string
let register: string

beforeAll(() => {
  if (!Fs.existsSync(FACADE)) throw new Error("dist/bundle is missing: `npm run build` first (npm test does)")
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-lazy-"))
  // The hooks run on their own thread: they append each file URL loaded to $PI_LAZY_LOG.
  Fs.writeFileSync(
    Path.join(dir, "hooks.mjs"),
    `import * as fs from "node:fs"
export async function load(url, context, next) {
  if (url.startsWith("file:")) fs.appendFileSync(process.env.PI_LAZY_LOG, url + "\\n")
  return next(url, context)
}
`
  )
  register = Path.join(dir, "register.mjs")
  Fs.writeFileSync(register, `import { register } from "node:module"\nregister(${JSON.stringify(pathToFileURL(Path.join(dir, "hooks.mjs")).href)})\n`)
})

afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))

/** The bundle files (relative to dist/bundle) a child loaded, and its result. */
const loaded = (args: ReadonlyArray<string>, name: string) => {
  const log = Path.join(dir, `${name}.log`)
  const r = spawnSync(process.execPath, ["--import", pathToFileURL(register).href, ...args], {
    cwd: dir,
    env: { ...process.env, PI_LAZY_LOG: log, PI_ADAPTATIVE_CODING_AGENT_DIR: Path.join(dir, "agent") },
    encoding: "utf8"
  })
  assert.strictEqual(r.status, 0, `${name}: ${r.stderr}`)
  const files = Fs.readFileSync(log, "utf8").split("\n").filter((u) => u.startsWith("file:")).map((u) => fileURLToPath(u))
  return { stdout: r.stdout, files: files.filter((f) => f.startsWith(BUNDLE)).map((f) => Path.relative(BUNDLE, f)) }
}

const named = (files: ReadonlyArray<string>, prefix: string) => files.filter((f) => Path.basename(f).startsWith(prefix))

describe("start-up loads only what the call needs (built bundles)", () => {
  it("the facade: no store or tier runtime chunk at import; each loads on its first call", () => {
    const imported = loaded(["--input-type=module", "-e", `await import(${JSON.stringify(FACADE)})`], "import")
    assert.include(imported.files, "promise.mjs")
    assert.deepStrictEqual(named(imported.files, "store-"), [])
    assert.deepStrictEqual(named(imported.files, "tiersRuntime-"), [])
    const opened = loaded([
      "--input-type=module",
      "-e",
      `const p = await import(${JSON.stringify(FACADE)})
const s = await p.openAgentStorage({ migrate: false })
const d = await s.doctor()
await s.close()
const t = await p.openTiers(p.extensionContext("lazy", { dataRoot: ${JSON.stringify(Path.join(dir, "data"))} }))
await t.close()
process.stdout.write(String(Array.isArray(d.findings)))`
    ], "open")
    assert.strictEqual(opened.stdout, "true")
    assert.lengthOf(named(opened.files, "store-"), 1)
    assert.lengthOf(named(opened.files, "tiersRuntime-"), 1)
  })

  it("the CLI: --version reads its one small entry file; status answers through the code-cached program", () => {
    const version = loaded([CLI, "--version"], "version")
    assert.strictEqual(version.stdout, "pi-storage 0.1.0\n")
    assert.deepStrictEqual(version.files, [Path.join("cli", "main.mjs")])
    assert.isBelow(Fs.statSync(CLI).size, 16 * 1024)
    const status = loaded([CLI, "status", "--json"], "status")
    assert.strictEqual(JSON.parse(status.stdout).exists, false)
    // The program is CommonJS compiled by codeCache.ts, not an ES module the hook would see.
    assert.deepStrictEqual(status.files, [Path.join("cli", "main.mjs")])
  })
})
