/**
 * ConfigHistory across real processes (the built facade, `test/fixtures/configHistory.mjs`): a hostile git
 * environment, a SIGKILL inside `change()`, and four writers at once.
 */
import { execFileSync, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as NodeFileSystem from "../../src/layers/NodeFileSystem.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { doctorAt } from "../support/doctor.js"
import { cleanGitEnv, rawGit, setup } from "./configHistorySupport.js"

const FIXTURE = NodePath.join(import.meta.dirname, "..", "fixtures", "configHistory.mjs")
const CLI = NodePath.join(import.meta.dirname, "..", "..", "dist", "cli", "main.js")

interface Child {
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>
  readonly kill: (signal: NodeJS.Signals) => void
  /** Resolves when stdout has printed `line`. */
  readonly printed: (line: string) => Promise<void>
}

const child = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = process.env): Child => {
  const c = spawn(process.execPath, [FIXTURE, ...args], { env, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  const waiters: Array<() => void> = []
  c.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d
    for (const w of waiters.splice(0)) w()
  })
  c.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve, reject) => {
    c.once("error", reject)
    c.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  const printed = (line: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => (stdout.includes(line) ? resolve() : waiters.push(check))
      done.then((r) => reject(new Error(`exited before printing ${line}: ${r.stderr}`)), reject)
      check()
    })
  return { done, kill: (s) => c.kill(s), printed }
}

const hashTree = (dir: string): string => {
  const h = crypto.createHash("sha256")
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = NodePath.join(d, name)
      const st = fs.lstatSync(p)
      h.update(`${p}:${st.size}:${st.mtimeMs}\n`)
      if (st.isDirectory()) walk(p)
      else if (st.isFile()) h.update(fs.readFileSync(p))
    }
  }
  walk(dir)
  return h.digest("hex")
}

describe("ConfigHistory across processes (real git)", () => {
  it.scopedLive("a hostile git setup (signing, failing hooks, GIT_DIR/GIT_WORK_TREE/GIT_INDEX_FILE elsewhere) changes nothing", () =>
    Effect.gen(function*() {
      const { root, agent, history } = yield* setup()
      // Another repository the environment points at.
      const other = NodePath.join(root, "other")
      fs.mkdirSync(other)
      rawGit(other, ["init", "-q"])
      fs.writeFileSync(NodePath.join(other, "f.txt"), "other\n")
      rawGit(other, ["add", "f.txt"])
      rawGit(other, ["-c", "user.name=o", "-c", "user.email=o@o", "commit", "-qm", "other"])
      const otherBefore = hashTree(other)
      // A HOME whose git config signs every commit and runs hooks that fail (and leave a trace).
      const home = NodePath.join(root, "home")
      const hooks = NodePath.join(home, "hooks")
      const trace = NodePath.join(home, "hook-ran")
      fs.mkdirSync(hooks, { recursive: true })
      for (const hook of ["pre-commit", "commit-msg", "post-commit", "prepare-commit-msg", "post-index-change"]) {
        fs.writeFileSync(NodePath.join(hooks, hook), `#!/bin/sh\necho ${hook} >> ${trace}\nexit 1\n`, { mode: 0o755 })
      }
      const hostileConfig = `[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = /bin/false\n[core]\n\thooksPath = ${hooks}\n[user]\n\tname = Mallory\n`
      fs.writeFileSync(NodePath.join(home, ".gitconfig"), hostileConfig)
      fs.mkdirSync(NodePath.join(home, ".config", "git"), { recursive: true })
      fs.writeFileSync(NodePath.join(home, ".config", "git", "config"), hostileConfig)
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: NodePath.join(home, ".config"),
        GIT_DIR: NodePath.join(other, ".git"), GIT_WORK_TREE: other, GIT_INDEX_FILE: NodePath.join(other, ".git", "index"),
        GIT_AUTHOR_NAME: "Mallory", GIT_OBJECT_DIRECTORY: NodePath.join(other, ".git", "objects")
      }
      // The setup is really hostile: a plain commit under it fails (signing, hooks).
      const scratch = NodePath.join(root, "scratch")
      fs.mkdirSync(scratch)
      const scratchEnv = { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: env.XDG_CONFIG_HOME }
      execFileSync("git", ["init", "-q"], { cwd: scratch, env: scratchEnv })
      assert.throws(() => execFileSync("git", ["commit", "-q", "--allow-empty", "-m", "x"], { cwd: scratch, env: { ...scratchEnv, GIT_COMMITTER_EMAIL: "m@m", GIT_AUTHOR_EMAIL: "m@m" }, stdio: "pipe" }))
      fs.rmSync(trace, { force: true })

      const run = child([agent, "snapshot", "p1"], env)
      const r = yield* Effect.promise(() => run.done)
      assert.strictEqual(r.code, 0, r.stderr)
      const result = JSON.parse(r.stdout)
      assert.isString(result.revision)
      assert.deepStrictEqual(result.changed, ["profiles/directories/p1/settings.json"])
      assert.isFalse(fs.existsSync(trace), "no hook ran")
      assert.strictEqual(hashTree(other), otherBefore, "the other repository is untouched")
      const author = rawGit(history.dir, ["log", "-1", "--format=%an <%ae>%n%G?"]).trim().split("\n")
      assert.deepStrictEqual(author, ["pi-storage <pi-storage@localhost>", "N"])
      assert.strictEqual(rawGit(history.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim(), "agent/profiles/directories/p1/settings.json")
    }))

  it.scopedLive("a process SIGKILLed inside change() leaves a sentinel that status() and the doctor report; a rollback clears it", () =>
    Effect.gen(function*() {
      const { agent, history, write, read } = yield* setup()
      write("agent/settings.json", JSON.stringify({ good: true }) + "\n")
      const good = (yield* history.snapshot({ message: "good" })).revision!
      const run = child([agent, "change-hang", "switch model"])
      yield* Effect.promise(() => run.printed("applying"))
      run.kill("SIGKILL")
      assert.strictEqual((yield* Effect.promise(() => run.done)).signal, "SIGKILL")
      assert.strictEqual(read("agent/settings.json"), JSON.stringify({ half: "applied" }) + "\n")

      const status = yield* history.status()
      assert.strictEqual(status.head, good)
      assert.isTrue(status.dirty)
      assert.strictEqual(status.interrupted?.message, "switch model")
      assert.strictEqual(status.interrupted?.lastGoodRevision, good)
      // The sentinel names the web data root the change covered (the child's, from its environment).
      const changedRoot = status.interrupted?.webRoot
      assert.isString(changedRoot)
      const report = yield* doctorAt(agent).pipe(Effect.provide(Layer.merge(NodeFileSystem.layer, NodeHost.layer)))
      const finding = report.findings.find((f) => f.code === "config-change-interrupted")
      assert.isDefined(finding)
      assert.strictEqual(finding!.severity, "warning")
      assert.include(finding!.message, "switch model")
      assert.include(finding!.fix!, `pi-storage --agent-dir ${agent} --web-data-root ${changedRoot} config rollback ${good.slice(0, 12)}`)

      // The doctor's own suggestion, run as written through the built CLI (every command it suggests is valid,
      // names its agent dir and the change's web data root, which no environment variable has to supply, and
      // does what it says).
      const suggested = /`(pi-storage --agent-dir \S+ --web-data-root \S+ config rollback [0-9a-f]+)`/.exec(finding!.fix!)![1]!.split(" ")
      const env = { ...process.env }
      delete env["PI_WEB_DATA_DIR"]
      const back = JSON.parse(execFileSync(process.execPath, [CLI, ...suggested.slice(1), "--json"], { env, encoding: "utf8" }))
      assert.deepStrictEqual(back.restored, ["settings.json"])
      assert.strictEqual(read("agent/settings.json"), JSON.stringify({ good: true }) + "\n")
      assert.isNull((yield* history.status()).interrupted)
      const again = yield* doctorAt(agent).pipe(Effect.provide(Layer.merge(NodeFileSystem.layer, NodeHost.layer)))
      assert.isUndefined(again.findings.find((f) => f.code === "config-change-interrupted"))
      // The half-applied state was recorded before the rollback: nothing is lost.
      assert.include((yield* history.log()).map((e) => e.message), `before rollback to ${good.slice(0, 12)}`)
    }))

  it.scopedLive("four processes snapshotting at once all succeed; git fsck is clean and no lock is left", () =>
    Effect.gen(function*() {
      const { agent, history } = yield* setup()
      const runs = ["w1", "w2", "w3", "w4"].map((name) => child([agent, "snapshot", name]))
      const results = yield* Effect.promise(() => Promise.all(runs.map((r) => r.done)))
      for (const r of results) assert.strictEqual(r.code, 0, r.stderr)
      const fsck = execFileSync("git", ["fsck", "--full", "--strict"], { cwd: history.dir, env: cleanGitEnv(), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
      assert.notMatch(fsck, /error|missing|broken/i)
      const left = fs.readdirSync(history.dir).filter((n) => n.startsWith(".pi-"))
      assert.deepStrictEqual(left, [])
      assert.isFalse(fs.existsSync(NodePath.join(history.dir, ".git", "index.lock")))
      assert.deepStrictEqual(
        rawGit(history.dir, ["ls-tree", "-r", "--name-only", "HEAD"]).trim().split("\n"),
        ["w1", "w2", "w3", "w4"].map((n) => `agent/profiles/directories/${n}/settings.json`)
      )
      assert.isFalse((yield* history.status()).dirty)
    }))
})
