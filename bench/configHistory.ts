/**
 * Measurement 7: the config history (BK1) over 200 tracked files, through the Promise facade.
 * - a snapshot with nothing changed vs `git status --porcelain` on the same repository (goal ≤ 2×);
 * - a snapshot with one file changed vs `git add <file> && git commit` in a plain repository holding the
 *   same 200 files (two git processes: the cheapest way a script records one change).
 * Baseline git runs with the same isolation (no global/system config), so both sides read the same config.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { openAgentStorage } from "../src/promise.js"
import { removeTree } from "./fixtures.js"
import type { Measurement } from "./result.js"
import { nowMs, run, settle, summarize } from "./util.js"

export interface ConfigHistoryBenchOptions {
  readonly root: string
  readonly files: number
  /** Operations per block. */
  readonly ops: number
  readonly reps: number
  readonly settleMs: number
  readonly log: (line: string) => void
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
    removeTree(plain)
  }
  const idleOurs = summarize(idle.ours)
  const idleBase = summarize(idle.base)
  const oneOurs = summarize(one.ours)
  const oneBase = summarize(one.base)
  return {
    name: "7 config history",
    rows: [
      { label: `snapshot, nothing changed (${o.files} files)`, unit: "ms/op", ours: idleOurs, baseline: idleBase, baselineName: "git status --porcelain", ratio: idleOurs.median / idleBase.median, target: 2 },
      { label: `snapshot, one file changed (${o.files} files)`, unit: "ms/op", ours: oneOurs, baseline: oneBase, baselineName: "git add + git commit", ratio: oneOurs.median / oneBase.median }
    ],
    notes: { files: o.files, ops: o.ops, reps: o.reps }
  }
}
