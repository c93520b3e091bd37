/**
 * Test support for the config history: a temp agent dir (+ web data root) on real disk, the service over the
 * Node layers with real git, and git inspection helpers that run outside our runner (as a person would).
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { Effect, Layer } from "effect"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import * as NodeProcessRunner from "../../src/layers/NodeProcessRunner.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { ConfigHistory, type ConfigHistoryOptions } from "../../src/services/ConfigHistory.js"

export const tempRoot = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(NodePath.join(os.tmpdir(), "cfg-history-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/**
 * The Node host with some variables as given: `PATH` (where the test puts a wrapper in front of the real git),
 * `TMPDIR` (where a live diff's scratch directory goes).
 */
const hostWithEnv = (vars: Readonly<Record<string, string>>) =>
  Layer.effect(Host, Effect.map(Host, (host) => ({ ...host, env: (name: string) => (name in vars ? vars[name] : host.env(name)) }))).pipe(
    Layer.provide(NodeHost.layer)
  )

export const historyLayer = (agentDir: string, options: ConfigHistoryOptions = {}, pathVar?: string, tmpDir?: string) => {
  const vars = { ...(pathVar === undefined ? {} : { PATH: pathVar }), ...(tmpDir === undefined ? {} : { TMPDIR: tmpDir }) }
  const world = Layer.mergeAll(NodeFileSystem.layer, Object.keys(vars).length === 0 ? NodeHost.layer : hostWithEnv(vars), NodeProcessRunner.layer)
  return ConfigHistory.layerWith(options).pipe(Layer.provide(Layer.merge(world, AgentDir.layerWith(agentDir).pipe(Layer.provide(world)))))
}

/** A fixture: agent dir, web data root, and the service. */
export const setup = (options: ConfigHistoryOptions & { readonly web?: boolean; readonly pathVar?: string; readonly tmpDir?: string } = {}) =>
  Effect.gen(function*() {
    const root = yield* tempRoot
    const agent = NodePath.join(root, "agent")
    const web = NodePath.join(root, "web")
    fs.mkdirSync(agent, { recursive: true })
    // The web data root is always the fixture's own, never the default under the real home (TD1: history
    // always covers one); `web: true` only says the test writes extension config there.
    const { pathVar, tmpDir, web: _web, ...rest } = options
    const history = yield* Effect.provide(ConfigHistory, historyLayer(agent, { webDataRoot: web, ...rest }, pathVar, tmpDir))
    const write = (rel: string, content: string) => {
      const p = NodePath.join(root, rel)
      fs.mkdirSync(NodePath.dirname(p), { recursive: true })
      fs.writeFileSync(p, content)
    }
    const read = (rel: string) => fs.readFileSync(NodePath.join(root, rel), "utf8")
    const exists = (rel: string) => fs.existsSync(NodePath.join(root, rel))
    return { root, agent, web, history, write, read, exists }
  })

/** Plain git (the user's own), for inspecting the repository from outside. */
export const rawGit = (cwd: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = cleanGitEnv()): string =>
  execFileSync("git", args, { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

/** `rawGit`, the answer as bytes (names that are not UTF-8). */
export const rawGitBytes = (cwd: string, args: ReadonlyArray<string>): Buffer =>
  execFileSync("git", args, { cwd, env: cleanGitEnv(), stdio: ["ignore", "pipe", "pipe"] })

export const cleanGitEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("GIT_")) env[k] = v
  return { ...env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" }
}

/** Every blob of every revision, as text: where a leaked secret would show. */
export const allBlobs = (historyDir: string): string => {
  const revs = rawGit(historyDir, ["rev-list", "--all"]).split("\n").filter((r) => r !== "")
  return revs.map((rev) => {
    const files = rawGit(historyDir, ["ls-tree", "-r", "--name-only", rev]).split("\n").filter((f) => f !== "")
    return files.map((f) => rawGit(historyDir, ["show", `${rev}:${f}`])).join("\n")
  }).join("\n")
}

/** `git grep` over every revision (`rev-list --all`): exit 1 and no output when the text is in no blob. */
export const gitGrep = (historyDir: string, text: string) => {
  const revs = rawGit(historyDir, ["rev-list", "--all"]).trim().split("\n")
  const r = spawnSync("git", ["grep", "-F", text, ...revs], { cwd: historyDir, env: cleanGitEnv(), encoding: "utf8" })
  return { status: r.status, stdout: r.stdout }
}

/**
 * A person's editor saving `file` once (a temp file beside it renamed over it, the way editors save) just as
 * the history is about to write or remove it: `arm()` before the call under test, `saved()` says whether it
 * happened. `history` is the ConfigHistory of `agentDir` over a real FileSystem whose writing calls let the
 * person go first.
 */
export const personSavingOnce = (agentDir: string, file: string, content: string) => {
  let armed = false
  const personSaves = (path: string) =>
    Effect.sync(() => {
      if (!armed || path !== file) return
      armed = false
      fs.writeFileSync(`${file}.editor`, content)
      fs.renameSync(`${file}.editor`, file)
    })
  const racing = Layer.effect(
    FileSystem,
    Effect.map(FileSystem, (real): FileSystem["Type"] => ({
      ...real,
      writeFileAtomic: (path, data, options) => Effect.zipRight(personSaves(path), real.writeFileAtomic(path, data, options)),
      removeFile: (path) => Effect.zipRight(personSaves(path), real.removeFile(path)),
      replaceFileIfUnchanged: (path, expected, data, options) =>
        Effect.zipRight(personSaves(path), real.replaceFileIfUnchanged(path, expected, data, options))
    }))
  ).pipe(Layer.provide(NodeFileSystem.layer))
  const world = Layer.mergeAll(racing, NodeHost.layer, NodeProcessRunner.layer)
  return {
    arm: () => void (armed = true),
    saved: () => !armed,
    history: Effect.provide(ConfigHistory, ConfigHistory.layer.pipe(Layer.provide(Layer.merge(world, AgentDir.layerWith(agentDir).pipe(Layer.provide(world))))))
  }
}
