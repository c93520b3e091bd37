/**
 * Measurement 7: the config history (BK1) over 200 tracked files, through the Promise facade.
 * - a snapshot with nothing changed vs `git status --porcelain` on the same repository (goal ≤ 2×);
 * - a snapshot with one file changed vs `git add <file> && git commit` in a plain repository holding the
 *   same 200 files (two git processes: the cheapest way a script records one change).
 * Baseline git runs with the same isolation (no global/system config), so both sides read the same config.
 *
 * And from the CLI, each call a child process as a user (or a hook) runs it, beside the same floors spawned the
 * same way, over its own agent dir with the same 200 files:
 * - `pi-storage config snapshot` with nothing changed vs `git status --porcelain` (goal ≤ 3×); its first call
 *   after a change (which records the clean scan, docs/config-history.md "The stat cache") on its own row;
 * - with 10 files changed vs `git add -A && git commit` in the plain repository (goal ≤ 3×);
 * - `node -e 0`, with and without `NODE_EXTRA_CA_CERTS`: the floor of any Node CLI. The CLI rows run with
 *   `NODE_EXTRA_CA_CERTS` unset (this VM sets it, and every Node process then spends ~40–100 ms reading
 *   certificates it never uses here; a user's machine does not set it); git runs in that same environment.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { openAgentStorage } from "../src/promise.js"
import { removeTree } from "./fixtures.js"
import type { Measurement } from "./result.js"
import { nowMs, run, settle, summarize, BUILT_CLI, withoutExtraCaCerts } from "./util.js"

export interface ConfigHistoryBenchOptions {
  readonly root: string
  readonly files: number
  /** Operations per block. */
  readonly ops: number
  readonly reps: number
  readonly settleMs: number
  readonly log: (line: string) => void
  /** The `pi-storage` bin the CLI rows run (default: this checkout's dist/bundle/cli/main.mjs; another build's to compare). */
  readonly cli?: string | undefined
}

const gitEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("GIT_")) env[k] = v
  return { ...env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_SYSTEM: "/dev/null", GIT_CONFIG_NOSYSTEM: "1", GIT_AUTHOR_NAME: "b", GIT_AUTHOR_EMAIL: "b@b", GIT_COMMITTER_NAME: "b", GIT_COMMITTER_EMAIL: "b@b" }
}

const git = async (cwd: string, args: ReadonlyArray<string>) => {
  const r = await run("git", args, { cwd, env: gitEnv() })
  if (r.code !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`)
  return r
}

export const benchConfigHistory = async (o: ConfigHistoryBenchOptions): Promise<Measurement> => {
  const agentDir = path.join(o.root, "history-agent")
  const plain = path.join(o.root, "history-plain")
  const overlay = (i: number) => path.join("profiles", "directories", `p${String(i).padStart(4, "0")}`, "settings.json")
  const content = (i: number, v: number) => JSON.stringify({ model: `m${i}`, temperature: 0.2, version: v, tools: ["bash", "edit"] }, null, 2) + "\n"
  for (let i = 0; i < o.files; i++) {
    for (const dir of [agentDir, plain]) {
      const file = path.join(dir, overlay(i))
      fs.mkdirSync(path.dirname(file), { recursive: true })
      fs.writeFileSync(file, content(i, 0))
    }
  }
  await git(plain, ["init", "-q"])
  await git(plain, ["add", "--", "profiles"])
  await git(plain, ["commit", "-q", "-m", "initial"])
  const store = await openAgentStorage({ agentDir, migrate: false })
  const history = store.configHistory()
  const first = await history.snapshot({ message: "initial" })
  if (first.changed.length !== o.files) throw new Error(`expected ${o.files} tracked files, got ${first.changed.length}`)
  const historyDir = path.join(agentDir, "state", "backups", "config", "history")
  const idle = { ours: [] as Array<number>, base: [] as Array<number> }
  const one = { ours: [] as Array<number>, base: [] as Array<number> }
  let version = 1
  try {
    for (let rep = 0; rep < o.reps; rep++) {
      await settle(o.settleMs)
      const order = rep % 2 === 0 ? ["ours", "base"] : ["base", "ours"]
      for (const who of order) {
        const t0 = nowMs()
        for (let i = 0; i < o.ops; i++) {
          if (who === "ours") {
            const r = await history.snapshot()
            if (r.revision !== null) throw new Error("an unchanged snapshot committed")
          } else {
            await git(historyDir, ["status", "--porcelain"])
          }
        }
        ;(who === "ours" ? idle.ours : idle.base).push((nowMs() - t0) / o.ops)
      }
      for (const who of order) {
        const t0 = nowMs()
        for (let i = 0; i < o.ops; i++) {
          const n = (rep * o.ops + i) % o.files
          version++
          if (who === "ours") {
            fs.writeFileSync(path.join(agentDir, overlay(n)), content(n, version))
            const r = await history.snapshot({ message: `change ${version}` })
            if (r.changed.length !== 1) throw new Error(`expected one change, got ${r.changed.length}`)
          } else {
            fs.writeFileSync(path.join(plain, overlay(n)), content(n, version))
            await git(plain, ["add", "--", overlay(n)])
            await git(plain, ["commit", "-q", "-m", `change ${version}`])
          }
        }
        ;(who === "ours" ? one.ours : one.base).push((nowMs() - t0) / o.ops)
      }
      o.log(`config history #${rep + 1}: idle ${idle.ours.at(-1)!.toFixed(1)} ms vs status ${idle.base.at(-1)!.toFixed(1)} ms; ` +
        `one change ${one.ours.at(-1)!.toFixed(1)} ms vs add+commit ${one.base.at(-1)!.toFixed(1)} ms`)
    }
  } finally {
    await store.close()
    removeTree(agentDir)
  }
  const cli = await benchConfigCli(o, plain, overlay, content)
  const idleOurs = summarize(idle.ours)
  const idleBase = summarize(idle.base)
  const oneOurs = summarize(one.ours)
  const oneBase = summarize(one.base)
  return {
    name: "7 config history",
    rows: [
      { label: `snapshot, nothing changed (${o.files} files)`, unit: "ms/op", ours: idleOurs, baseline: idleBase, baselineName: "git status --porcelain", ratio: idleOurs.median / idleBase.median, target: 2 },
      { label: `snapshot, one file changed (${o.files} files)`, unit: "ms/op", ours: oneOurs, baseline: oneBase, baselineName: "git add + git commit", ratio: oneOurs.median / oneBase.median },
      ...cli.rows
    ],
    notes: { files: o.files, ops: o.ops, reps: o.reps, ...cli.notes }
  }
}

const DEFAULT_CLI = BUILT_CLI
/** The racy margin of the clean scan (domain/ConfigCleanScan.ts): a change younger than this is never proven by it. */
const RACY_WAIT_MS = 2_100

const benchConfigCli = async (
  o: ConfigHistoryBenchOptions,
  plain: string,
  overlay: (i: number) => string,
  content: (i: number, v: number) => string
) => {
  const CLI = o.cli ?? DEFAULT_CLI
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: npm run build first`)
  const agentDir = path.join(o.root, "history-cli-agent")
  const webRoot = path.join(o.root, "history-cli-web")
  fs.mkdirSync(webRoot, { recursive: true })
  for (let i = 0; i < o.files; i++) {
    const file = path.join(agentDir, overlay(i))
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content(i, 0))
  }
  const withCa = { ...gitEnv(), PI_ADAPTATIVE_CODING_AGENT_DIR: agentDir, PI_WEB_DATA_DIR: webRoot }
  const env = withoutExtraCaCerts(withCa)
  const cli = async (args: ReadonlyArray<string>, e = env) => {
    const r = await run(process.execPath, [CLI, ...args], { cwd: o.root, env: e })
    if (r.code !== 0) throw new Error(`pi-storage ${args.join(" ")}: exit ${r.code}: ${r.stderr}`)
    return r
  }
  const gitIn = async (cwd: string, args: ReadonlyArray<string>) => {
    const r = await run("git", args, { cwd, env })
    if (r.code !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`)
  }
  const historyDir = path.join(agentDir, "state", "backups", "config", "history")
  const first = JSON.parse((await cli(["config", "snapshot", "--json", "-m", "initial"])).stdout) as { changed: Array<string> }
  if (first.changed.length !== o.files) throw new Error(`expected ${o.files} tracked files from the CLI, got ${first.changed.length}`)
  const CHANGED = 10
  const idle = { ours: [] as Array<number>, base: [] as Array<number> }
  const firstIdle: Array<number> = []
  const ten = { ours: [] as Array<number>, base: [] as Array<number> }
  const floor = { withCa: [] as Array<number>, without: [] as Array<number> }
  let version = 1_000
  let lastChange = nowMs()
  try {
    for (let rep = 0; rep < o.reps; rep++) {
      await settle(Math.max(o.settleMs, RACY_WAIT_MS - (nowMs() - lastChange)))
      // The first call after a change: the full snapshot, which records the clean scan.
      const t0 = nowMs()
      const r = JSON.parse((await cli(["config", "snapshot", "--json"])).stdout) as { revision: string | null }
      if (r.revision !== null) throw new Error("an unchanged CLI snapshot committed")
      firstIdle.push(nowMs() - t0)
      const order = rep % 2 === 0 ? ["ours", "base"] : ["base", "ours"]
      for (const who of order) {
        const t1 = nowMs()
        for (let i = 0; i < o.ops; i++) {
          if (who === "ours") {
            const out = (await cli(["config", "snapshot"])).stdout
            if (!out.startsWith("Nothing changed.")) throw new Error(`an unchanged CLI snapshot said: ${out}`)
          } else {
            await gitIn(historyDir, ["status", "--porcelain"])
          }
        }
        ;(who === "ours" ? idle.ours : idle.base).push((nowMs() - t1) / o.ops)
      }
      for (const [which, e] of [["withCa", withCa], ["without", env]] as const) {
        const t2 = nowMs()
        for (let i = 0; i < o.ops; i++) await run(process.execPath, ["-e", "0"], { cwd: o.root, env: e })
        floor[which].push((nowMs() - t2) / o.ops)
      }
      for (const who of order) {
        const t3 = nowMs()
        for (let i = 0; i < o.ops; i++) {
          version++
          const dir = who === "ours" ? agentDir : plain
          for (let k = 0; k < CHANGED; k++) {
            const n = ((rep * o.ops + i) * CHANGED + k) % o.files
            fs.writeFileSync(path.join(dir, overlay(n)), content(n, version))
          }
          if (who === "ours") {
            const changed = JSON.parse((await cli(["config", "snapshot", "--json", "-m", `change ${version}`])).stdout) as { changed: Array<string> }
            if (changed.changed.length !== CHANGED) throw new Error(`expected ${CHANGED} changes from the CLI, got ${changed.changed.length}`)
          } else {
            await gitIn(plain, ["add", "-A"])
            await gitIn(plain, ["commit", "-q", "-m", `change ${version}`])
          }
        }
        ;(who === "ours" ? ten.ours : ten.base).push((nowMs() - t3) / o.ops)
      }
      lastChange = nowMs()
      o.log(`config CLI #${rep + 1}: idle ${idle.ours.at(-1)!.toFixed(1)} ms vs status ${idle.base.at(-1)!.toFixed(1)} ms (first after a change ${firstIdle.at(-1)!.toFixed(1)} ms); ` +
        `10 changed ${ten.ours.at(-1)!.toFixed(1)} ms vs add -A + commit ${ten.base.at(-1)!.toFixed(1)} ms; node -e 0 ${floor.without.at(-1)!.toFixed(1)} ms ` +
        `(${floor.withCa.at(-1)!.toFixed(1)} ms with NODE_EXTRA_CA_CERTS)`)
    }
  } finally {
    removeTree(agentDir)
    removeTree(webRoot)
    removeTree(plain)
  }
  const idleOurs = summarize(idle.ours)
  const idleBase = summarize(idle.base)
  const tenOurs = summarize(ten.ours)
  const tenBase = summarize(ten.base)
  const nodeFloor = summarize(floor.without)
  const caNote = "NODE_EXTRA_CA_CERTS unset"
  return {
    rows: [
      { label: `CLI config snapshot, nothing changed (${o.files} files; ${caNote})`, unit: "ms/op", ours: idleOurs, baseline: idleBase, baselineName: "git status --porcelain", ratio: idleOurs.median / idleBase.median, target: 3 },
      { label: `CLI config snapshot, first call ≥ 2.1 s after a change (records the clean scan; ${caNote})`, unit: "ms/op", ours: summarize(firstIdle), baseline: idleBase, baselineName: "git status --porcelain", ratio: summarize(firstIdle).median / idleBase.median },
      { label: `CLI config snapshot, ${CHANGED} files changed (${o.files} files; ${caNote})`, unit: "ms/op", ours: tenOurs, baseline: tenBase, baselineName: "git add -A && git commit", ratio: tenOurs.median / tenBase.median, target: 3 },
      { label: "node -e 0 (the floor of any Node CLI), without vs with NODE_EXTRA_CA_CERTS", unit: "ms/op", ours: nodeFloor, baseline: summarize(floor.withCa), baselineName: "node -e 0 with NODE_EXTRA_CA_CERTS", ratio: nodeFloor.median / summarize(floor.withCa).median }
    ],
    notes: {
      cli: CLI,
      cliEnvironment: "CLI rows and their git floors run with NODE_EXTRA_CA_CERTS unset (this VM sets it; a user's machine does not)",
      cliNothingChangedOverNodeFloorMs: idleOurs.median - nodeFloor.median,
      cliTenChangedOverNodeFloorMs: tenOurs.median - nodeFloor.median
    }
  }
}
