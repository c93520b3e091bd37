/**
 * Test support for walks deeper than a process may hold descriptors (domain/WalkDepth.ts): a Node child whose
 * descriptor limit `prlimit` lowers once its modules are loaded (Node's module loader opens dozens of files at
 * once), the deep chain built inside it (one relative mkdir and one chdir per level: no path grows, no
 * descriptor is held), and where to build it.
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"

const repo = NodePath.resolve(import.meta.dirname, "../..")

/** A module of the tsc build (`npm run build`) as an import specifier for a child's script. */
export const distModule = (path: string): string => JSON.stringify(new URL(`../../dist/${path}`, import.meta.url).href)

/** Effect's ESM entry points for a child's script. */
export const effectModule = (name: string): string =>
  JSON.stringify(new URL(`../../node_modules/effect/dist/esm/${name}.js`, import.meta.url).href)

/**
 * Where deep chains go: /dev/shm (tmpfs) when it is a writable directory, since removing thousands of
 * directories on a discard-mounted disk takes seconds per thousand (DESIGN "Performance facts"); else the
 * temp dir (slower, the same walks).
 */
export const deepParent = (): string => {
  try {
    const shm = fs.statSync("/dev/shm")
    fs.accessSync("/dev/shm", fs.constants.W_OK)
    if (shm.isDirectory()) return "/dev/shm"
  } catch {
    // no /dev/shm here
  }
  return os.tmpdir()
}

/** A fresh directory under `deepParent()`. */
export const deepScratch = (prefix: string): string => fs.mkdtempSync(NodePath.join(deepParent(), prefix))

/** Remove a tree of any depth (`rm -rf` walks by descriptor; `fs.rmSync` joins paths past PATH_MAX). */
export const removeDeep = (path: string): void => {
  spawnSync("rm", ["-rf", path])
}

/**
 * The source of `buildChain(dir, depth)` for a child's script: `dir/d/d/…` `depth` levels deep, every level
 * (dir itself included) holding a one-byte file `f`, so 2 × depth entries and depth bytes below `dir`.
 */
export const CHAIN_SOURCE = `
const buildChain = (dir, depth) => {
  const home = process.cwd()
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  process.chdir(dir)
  for (let i = 0; i < depth; i++) {
    fs.writeFileSync("f", "x")
    fs.mkdirSync("d", { mode: 0o700 })
    process.chdir("d")
  }
  process.chdir(home)
}
/** This process's limit on open descriptors, as the kernel has it. */
const descriptorLimit = () => Number(/^Max open files\\s+(\\d+)/m.exec(fs.readFileSync("/proc/self/limits", "utf8"))[1])
/** Lower this process's descriptor limit (soft and hard) to what the test asked for; its modules are loaded by now. */
const limitDescriptors = () => {
  const limit = process.env.PI_TEST_NOFILE
  childProcess.spawnSync("prlimit", ["--pid", String(process.pid), \`--nofile=\${limit}:\${limit}\`])
  if (descriptorLimit() !== Number(limit)) throw new Error("prlimit did not lower the descriptor limit")
}
`

/**
 * Run `source` (an ES module; `fs` and `CHAIN_SOURCE` are in scope) in a Node child, with `args` as
 * process.argv[2…]; its stdout parsed as JSON. The source calls `limitDescriptors()` once its imports are
 * done (static imports are): from then on the child may hold `nofile` descriptors.
 */
export const runLimited = (nofile: number, source: string, args: ReadonlyArray<string>): Promise<unknown> => {
  const dir = fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-limited-child-"))
  const script = NodePath.join(dir, "child.mjs")
  fs.writeFileSync(script, `import * as fs from "node:fs"\nimport * as childProcess from "node:child_process"\n${CHAIN_SOURCE}\n${source}`)
  return new Promise<unknown>((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd: repo,
      env: { ...process.env, PI_TEST_NOFILE: String(nofile) },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.once("error", reject)
    child.once("close", (code) => {
      fs.rmSync(dir, { recursive: true, force: true })
      if (code !== 0) reject(new Error(`child exited ${code}: ${stderr}`))
      else {
        try {
          resolve(JSON.parse(stdout))
        } catch {
          reject(new Error(`child printed no JSON: ${stdout} ${stderr}`))
        }
      }
    })
  })
}
