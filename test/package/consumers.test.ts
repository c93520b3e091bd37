/**
 * The package as its users meet it (docs/install.md "Installing"): `npm pack` the built package, then for each face run
 * the README's own install line, verbatim, in an empty project — against a registry on 127.0.0.1 made from
 * this repository's `node_modules` and the packed tarball (test/support/localRegistry.ts), with a cache of its
 * own, so no network and no earlier run is needed — and use it as a stranger would:
 *
 * - Promise: `import` and `require` of `pi-agent-storage/promise`, the native addon loaded from the package,
 *   nothing installed but the package and `yaml`, and strict TypeScript over the shipped declarations with no
 *   `effect` installed;
 * - Effect: the root import, a scoped acquire and a config snapshot through the whole stack, one copy of
 *   `effect`, and strict TypeScript;
 * - CLI: `npx pi-storage` in a project, and the global install line.
 *
 * The install section's figures (packages, size on disk) are measured here against what the README says.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { linkTargets } from "../support/docs.js"
import { type LocalRegistry, startLocalRegistry } from "../support/localRegistry.js"

const exec = promisify(execFile)
const REPO = fileURLToPath(new URL("../..", import.meta.url))
const TSC = path.join(REPO, "node_modules", "typescript", "bin", "tsc")
/** An install compiles the native addon (node-gyp): on a busy 2-core machine that alone can take a minute. */
const INSTALL_TIMEOUT = 300_000
const RUN_TIMEOUT = 120_000

/** The README's install line for a face: the first `npm install …` in its row of the install table. */
export const readmeInstallLine = (readme: string, rowStart: string): ReadonlyArray<string> => {
  const row = readme.split("\n").find((line) => line.startsWith(`| ${rowStart}`))
  if (row === undefined) throw new Error(`README: no install table row starting "| ${rowStart}"`)
  const line = /`(npm install [^`]+)`/.exec(row)?.[1]
  if (line === undefined) throw new Error(`README: no \`npm install …\` in the row "${rowStart}"`)
  return line.split(/\s+/).slice(2)
}

let temp = ""
let registry: LocalRegistry
let tarball = ""
const README = fs.readFileSync(path.join(REPO, "README.md"), "utf8")
const SCREENSHOT = /^docs\/ui\/[^/]+\.png$/

const project = (name: string, pkg: Record<string, unknown> = {}) => {
  const dir = path.join(temp, name)
  fs.mkdirSync(dir)
  // npm 11 runs a dependency's install script only when the project allows it (the README says so).
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, private: true, allowScripts: { "pi-agent-storage": true }, ...pkg }))
  return dir
}

const npm = (cwd: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  exec("npm", [...args, ...registry.npmArgs], { cwd, timeout: INSTALL_TIMEOUT, maxBuffer: 16 << 20, env: { ...process.env, ...env } })

const node = async (cwd: string, args: ReadonlyArray<string>) => (await exec(process.execPath, args, { cwd, timeout: RUN_TIMEOUT })).stdout

const tsc = async (cwd: string) => {
  const out = await exec(process.execPath, [TSC, "-p", "tsconfig.json"], { cwd, timeout: RUN_TIMEOUT }).then(
    (r) => r.stdout,
    (e: { stdout?: string; message: string }) => `${e.stdout ?? ""}\n${e.message}`
  )
  return out.trim()
}

/**
 * A tsconfig as a strict TypeScript user writes one: no `skipLibCheck`, no `@types` pulled in implicitly.
 * `dom` adds the web globals (`URL`, `AbortSignal`) Effect's own declarations name; the facade's need none.
 */
const strictTsconfig = (files: ReadonlyArray<string>, extraLib: ReadonlyArray<string> = []) =>
  JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext", target: "es2022", lib: ["es2022", "esnext.disposable", ...extraLib], types: [], skipLibCheck: false },
    files
  })

/** Bytes on disk under a directory, as `du -sk` counts them. */
const diskKiB = async (dir: string) => Number.parseInt((await exec("du", ["-sk", dir])).stdout.split("\t")[0]!, 10)

const installedNames = (dir: string) => {
  const nm = path.join(dir, "node_modules")
  const names: Array<string> = []
  for (const n of fs.readdirSync(nm)) {
    if (n.startsWith(".")) continue
    if (n.startsWith("@")) for (const s of fs.readdirSync(path.join(nm, n))) names.push(`${n}/${s}`)
    else names.push(n)
  }
  return names.sort()
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(REPO, "dist", "bundle", "promise.mjs"))) throw new Error("dist/bundle is missing: `npm run build` first (npm test does)")
  temp = fs.mkdtempSync(path.join(os.tmpdir(), "pi-consumers-"))
  // --ignore-scripts: `npm test` has just built dist/; packing must not rebuild it under the test's feet.
  const packed = await exec("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", temp], { cwd: REPO })
  tarball = path.join(temp, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename)
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as Record<string, unknown>
  registry = await startLocalRegistry({ nodeModules: path.join(REPO, "node_modules"), tarballs: [{ file: tarball, manifest }], workDir: path.join(temp, "registry") })
}, RUN_TIMEOUT)

afterAll(async () => {
  await registry?.close()
  if (temp !== "") fs.rmSync(temp, { recursive: true, force: true })
})

describe("the packed tarball", () => {
  it("ships the bundles, the Effect API, the native source and nothing else (no tsbuildinfo, CLI sources or test files)", async () => {
    const listed = await exec("tar", ["-tzf", tarball])
    const files = listed.stdout.split("\n").filter((f) => f !== "").map((f) => f.replace(/^package\//, ""))
    for (const needed of ["dist/bundle/promise.mjs", "dist/bundle/promise.cjs", "dist/bundle/cli/main.mjs", "dist/index.js", "dist/index.d.ts", "dist/promise.d.ts", "dist/layers/node/removerThread.js", "native/fsat.c", "binding.gyp", "scripts/installNative.mjs", "package.json", "README.md"]) {
      assert.include(files, needed)
    }
    assert.deepStrictEqual(files.filter((f) => /tsbuildinfo|^src\/|^test\/|^bench\/|^dist\/cli\//.test(f)), [])
  })

  it("ships the pages the README links to: every relative link of a shipped page resolves inside the package", async () => {
    const listed = await exec("tar", ["-tzf", tarball])
    const files = new Set(listed.stdout.split("\n").filter((f) => f !== "").map((f) => f.replace(/^package\//, "")))
    const pages = [...files].filter((f) => f.endsWith(".md"))
    for (const page of ["README.md", "BENCHMARKS.md", "docs/README.md", "docs/work-runs.md"]) assert.isTrue(files.has(page), `${page} is shipped`)
    const broken: Array<string> = []
    for (const page of pages) {
      const text = (await exec("tar", ["-xzOf", tarball, `package/${page}`])).stdout
      for (const target of linkTargets(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) continue
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURI(target.split("#")[0]!)))
        // The dashboard's screenshots stay out of the package (about 0.7 MB); the page describing them is shipped.
        if (SCREENSHOT.test(resolved)) continue
        if (!files.has(resolved)) broken.push(`${page}: ${target}`)
      }
    }
    assert.deepStrictEqual(broken, [])
  })
})

describe("a Promise caller", () => {
  let dir = ""
  beforeAll(async () => {
    dir = project("promise-caller")
    await npm(dir, ["install", ...readmeInstallLine(README, "a Promise caller")])
  }, INSTALL_TIMEOUT)

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

  it("gets the package and yaml, nothing else, with the addon built, in the size the README states", async () => {
    assert.deepStrictEqual(installedNames(dir), ["pi-agent-storage", "yaml"])
    assert.isTrue(fs.existsSync(path.join(dir, "node_modules", "pi-agent-storage", "build", "Release", "fsat.node")), "the install script built the addon")
    const row = README.split("\n").find((line) => line.startsWith("| a Promise caller"))!
    const stated = /(\d+) packages, ≈ ([\d.]+) MB on disk/.exec(row)
    assert.isNotNull(stated, "the README's Promise row states the packages and the size on disk")
    assert.strictEqual(Number(stated![1]), installedNames(dir).length)
    const measuredMB = (await diskKiB(path.join(dir, "node_modules"))) / 1024
    // The README rounds to a tenth; the native build's objects vary a little with the compiler.
    assert.approximately(measuredMB, Number(stated![2]), Number(stated![2]) * 0.15, `measured ${measuredMB.toFixed(2)} MB`)
  }, RUN_TIMEOUT)

  it("imports the facade, with the native addon loaded from the package", async () => {
    fs.writeFileSync(path.join(dir, "esm.mjs"), `import * as fs from "node:fs"\nimport * as path from "node:path"\nimport { createRequire } from "node:module"\nimport { openAgentStorage } from "pi-agent-storage/promise"\nconst require = createRequire(import.meta.url)\n${consumerBody(path.join(temp, "agent-esm"))}`)
    assert.deepStrictEqual(JSON.parse(await node(dir, ["esm.mjs"])), { removed: [["count", true]], effect: "not installed", addon: true })
  }, RUN_TIMEOUT)

  it("requires the facade", async () => {
    fs.writeFileSync(path.join(dir, "cjs.cjs"), `const fs = require("node:fs")\nconst path = require("node:path")\nconst { openAgentStorage } = require("pi-agent-storage/promise")\n;(async () => {${consumerBody(path.join(temp, "agent-cjs"))}})().catch((e) => { console.error(e); process.exit(1) })`)
    assert.deepStrictEqual(JSON.parse(await node(dir, ["cjs.cjs"])), { removed: [["count", true]], effect: "not installed", addon: true })
  }, RUN_TIMEOUT)

  it("type-checks under --strict without skipLibCheck, with no effect installed, and errors keep their fields", async () => {
    fs.writeFileSync(path.join(dir, "caller.mts"), `
import { openAgentStorage, isStorageError, type StorageError } from "pi-agent-storage/promise"

const store = await openAgentStorage({ agentDir: "/tmp/none" })
try {
  const run = await store.acquireWorkRun({ category: "tools", tenant: "bash" })
  const dir: string = run.path
  await run.release()
  void dir
} catch (e) {
  if (isStorageError(e)) {
    const tag: string = e._tag
    const message: string = e.message
    void tag, message
  }
}
const created = await store.stateBackups().create()
const files: number = created.files
// @ts-expect-error a result's fields are typed, not any
const nope: string = created.files
const err: StorageError | undefined = undefined
void files, nope, err
await store.close()
`)
    fs.writeFileSync(path.join(dir, "tsconfig.json"), strictTsconfig(["caller.mts"]))
    assert.strictEqual(await tsc(dir), "")
  }, RUN_TIMEOUT)

  it("runs the CLI through npx", async () => {
    const version = await exec("npx", ["pi-storage", "--version"], { cwd: dir, timeout: RUN_TIMEOUT })
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }
    assert.strictEqual(version.stdout, `pi-storage ${pkg.version}\n`)
    const agentDir = path.join(temp, "agent-esm")
    const status = await exec("npx", ["pi-storage", "status", "--agent-dir", agentDir], { cwd: dir, timeout: RUN_TIMEOUT })
    assert.include(status.stdout, `Agent dir  ${agentDir}`)
    assert.match(status.stdout, /c\/t/)
  }, RUN_TIMEOUT)
})

describe("an Effect caller", () => {
  let dir = ""
  beforeAll(async () => {
    dir = project("effect-caller", { type: "module" })
    await npm(dir, ["install", ...readmeInstallLine(README, "an Effect caller")])
  }, INSTALL_TIMEOUT)

  const program = (agentDir: string) => `
import { Effect, Layer } from "effect"
import { AgentDir, ConfigHistory, NodeFileSystem, NodeHost, NodeProcessRunner, WorkRuns } from "pi-agent-storage"
import * as fs from "node:fs"
import * as path from "node:path"

const base = Layer.mergeAll(NodeFileSystem.layer, NodeHost.layer, NodeProcessRunner.layer)
const agentDir = AgentDir.layerWith(${JSON.stringify(agentDir)}).pipe(Layer.provide(base))
const live = Layer.mergeAll(WorkRuns.layer, ConfigHistory.layer).pipe(Layer.provideMerge(Layer.merge(base, agentDir)))

const main = Effect.scoped(Effect.gen(function*() {
  const workRuns = yield* WorkRuns
  const run = yield* workRuns.acquire({ category: "tools", tenant: "bash" })
  fs.writeFileSync(path.join(run.path, "out.txt"), "x")
  const history = yield* ConfigHistory
  fs.writeFileSync(path.join(${JSON.stringify(agentDir)}, "settings.json"), JSON.stringify({ theme: "dark" }))
  const snap = yield* history.snapshot({ message: "first" })
  return { held: fs.readdirSync(path.join(run.path, ".leases")).length, committed: snap.revision !== null }
}))

const seen = await Effect.runPromise(Effect.provide(main, live))
process.stdout.write(JSON.stringify(seen))
`

  it("gets one copy of effect, its own, and nothing of @effect/platform", () => {
    const names = installedNames(dir)
    assert.includeMembers(names, ["pi-agent-storage", "effect", "yaml"])
    assert.notInclude(names, "@effect/platform")
    assert.isFalse(fs.existsSync(path.join(dir, "node_modules", "pi-agent-storage", "node_modules")), "no nested copy of anything")
  })

  it("imports the root and runs a scoped acquire and a config snapshot through the Node layers", async () => {
    fs.writeFileSync(path.join(dir, "main.mjs"), program(path.join(temp, "agent-effect")))
    assert.deepStrictEqual(JSON.parse(await node(dir, ["main.mjs"])), { held: 1, committed: true })
  }, RUN_TIMEOUT)

  it("type-checks under --strict without skipLibCheck, with nothing but the install line (no @types/node either)", async () => {
    fs.writeFileSync(path.join(dir, "typed.mts"), `
import { Effect, Layer } from "effect"
import { AgentDir, ConfigHistory, NodeFileSystem, NodeHost, NodeProcessRunner, WorkRuns, type WorkRun, type SnapshotResult } from "pi-agent-storage"

const base = Layer.mergeAll(NodeFileSystem.layer, NodeHost.layer, NodeProcessRunner.layer)
const agentDir = AgentDir.layerWith("/tmp/nowhere").pipe(Layer.provide(base))
const live = Layer.mergeAll(WorkRuns.layer, ConfigHistory.layer).pipe(Layer.provideMerge(Layer.merge(base, agentDir)))

const main: Effect.Effect<{ run: WorkRun; snap: SnapshotResult }, unknown, never> = Effect.provide(
  Effect.scoped(Effect.gen(function*() {
    const run = yield* (yield* WorkRuns).acquire({ category: "tools", tenant: "bash" })
    const snap = yield* (yield* ConfigHistory).snapshot({ message: "first" })
    return { run, snap }
  })),
  live
)
void main
`)
    fs.writeFileSync(path.join(dir, "tsconfig.json"), strictTsconfig(["typed.mts"], ["dom"]))
    assert.strictEqual(await tsc(dir), "")
  }, RUN_TIMEOUT)
})

describe("an Effect harness's tests", () => {
  it("install with the README's line, and a harness writes through @effect/platform's FileSystem into the simulated world", async () => {
    const dir = project("harness-tests", { type: "module" })
    await npm(dir, ["install", ...readmeInstallLine(README, "an Effect harness's tests")])
    fs.writeFileSync(path.join(dir, "spill.mjs"), `
import { Effect } from "effect"
import * as FileSystem from "@effect/platform/FileSystem"
import { MemoryWorld, platformLayer } from "pi-agent-storage/testing"

const world = MemoryWorld.make()
const spill = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  yield* fs.makeDirectory("/run", { recursive: true })
  yield* fs.writeFileString("/run/out.txt", "one\\n")
  yield* fs.writeFileString("/run/out.txt", "two\\n", { flag: "a" })
})
await Effect.runPromise(Effect.provide(spill, platformLayer(world)))
world.crashAfter(0)
const crashed = await Effect.runPromise(Effect.provide(Effect.flip(Effect.flatMap(FileSystem.FileSystem, (fs) => fs.writeFileString("/run/late.txt", "x"))), platformLayer(world)))
process.stdout.write(JSON.stringify({ text: world.readFixtureText("/run/out.txt"), crashed: crashed._tag }))
`)
    assert.deepStrictEqual(JSON.parse(await node(dir, ["spill.mjs"])), { text: "one\ntwo\n", crashed: "SystemError" })
  }, INSTALL_TIMEOUT)
})

describe("a CLI user", () => {
  it("installs it globally with the README's line and runs pi-storage from the prefix's bin", async () => {
    const prefix = path.join(temp, "global")
    await npm(temp, ["install", ...readmeInstallLine(README, "a CLI user"), `--prefix=${prefix}`])
    const bin = path.join(prefix, "bin", "pi-storage")
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }
    assert.strictEqual((await exec(bin, ["--version"], { timeout: RUN_TIMEOUT })).stdout, `pi-storage ${pkg.version}\n`)
    const agentDir = path.join(temp, "agent-global")
    fs.mkdirSync(agentDir)
    const status = await exec(bin, ["status", "--agent-dir", agentDir], { timeout: RUN_TIMEOUT })
    assert.match(status.stdout, /^Walker {5}native$/m)
  }, INSTALL_TIMEOUT)

  it("an install without a C compiler still works, with the portable walker, and status says so", async () => {
    const dir = project("no-compiler")
    // node-gyp builds with $CC/$CXX: a compiler that always fails is a machine without one.
    await npm(dir, ["install", ...readmeInstallLine(README, "a Promise caller")], { CC: "/bin/false", CXX: "/bin/false" })
    assert.isFalse(fs.existsSync(path.join(dir, "node_modules", "pi-agent-storage", "build", "Release", "fsat.node")))
    const agentDir = path.join(temp, "agent-no-compiler")
    fs.writeFileSync(path.join(dir, "use.mjs"), `import { openAgentStorage } from "pi-agent-storage/promise"
const store = await openAgentStorage({ agentDir: ${JSON.stringify(agentDir)} })
const run = await store.acquireWorkRun({ category: "c", tenant: "t" })
await run.release({ delete: true })
await store.close()
`)
    await node(dir, ["use.mjs"])
    const status = await exec("npx", ["pi-storage", "status", "--agent-dir", agentDir], { cwd: dir, timeout: RUN_TIMEOUT })
    assert.match(status.stdout, /^Walker {5}portable \(the native addon is not built/m)
  }, INSTALL_TIMEOUT)
})
