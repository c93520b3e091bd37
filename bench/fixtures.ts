/**
 * Benchmark fixtures: a tenant directory full of released, owned runs (manifest v2, no leases), each with
 * `filesPerRun` files of 1–8 KiB spread over two directory levels. Built once as a template with sync
 * syscalls, then copied with `cp -a` for every timed run so each measurement starts from an identical tree.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { prng } from "./util.js"

export const BENCH_CATEGORY = "bench"

export interface TreeShape {
  readonly runs: number
  readonly filesPerRun: number
}

/** Directory layout inside a run: `d<i>/e<j>/f<k>`, two levels, files spread evenly. */
const TOP_DIRS = 2
const SUB_DIRS = 2

/** Entries one run adds to a walk: the manifest, the directories and the files. */
export const entriesPerRun = (shape: TreeShape): number => 1 + TOP_DIRS + TOP_DIRS * SUB_DIRS + shape.filesPerRun

export const totalEntries = (shape: TreeShape): number => shape.runs * entriesPerRun(shape)

export const runIdOf = (i: number): string => `run-${String(i).padStart(6, "0")}`

/** The agent dir layout the library expects, with the 0700 modes WR10 demands. */
export const tenantDirOf = (agentDir: string, tenant: string) => path.join(agentDir, "work", BENCH_CATEGORY, tenant)

export const ensureWorkRoot = (agentDir: string) => {
  for (const dir of [agentDir, path.join(agentDir, "work"), path.join(agentDir, "work", BENCH_CATEGORY)]) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    fs.chmodSync(dir, 0o700)
  }
}

/** A released, owned run's directory (0700) and its manifest (v2, as an acquire writes it), released two days ago. */
const writeReleasedRun = (tenantDir: string, tenant: string, r: number, createdAt: number) => {
  const runId = runIdOf(r)
  const runDir = path.join(tenantDir, runId)
  fs.mkdirSync(runDir, { mode: 0o700 })
  const manifest = {
    version: 2,
    category: BENCH_CATEGORY,
    tenant,
    runId,
    kind: "generated",
    createdAt: createdAt + r,
    createdBy: { host: os.hostname(), pid: 1 },
    releasedAt: createdAt + r + 1000
  }
  fs.writeFileSync(path.join(runDir, ".pi-work-run.json"), JSON.stringify(manifest), { mode: 0o600 })
  return { runDir, releasedAt: manifest.releasedAt }
}

/**
 * Write `shape` into `tenantDir` (created 0700) as tenant `tenant`. Runs are released long ago, so every
 * policy that removes anything can remove all of them.
 */
export const buildTenant = (tenantDir: string, tenant: string, shape: TreeShape, seed = 1) => {
  const random = prng(seed)
  fs.mkdirSync(tenantDir, { recursive: true, mode: 0o700 })
  fs.chmodSync(tenantDir, 0o700)
  const filler = Buffer.alloc(8192, 0x61)
  const createdAt = Date.now() - 2 * 24 * 60 * 60 * 1000
  for (let r = 0; r < shape.runs; r++) {
    const { runDir, releasedAt } = writeReleasedRun(tenantDir, tenant, r, createdAt)
    // Released then on the file system's clock too: ages are judged on it (docs/work-runs.md "Retention").
    fs.utimesSync(path.join(runDir, ".pi-work-run.json"), releasedAt / 1000, releasedAt / 1000)
    const leaves: Array<string> = []
    for (let a = 0; a < TOP_DIRS; a++) {
      fs.mkdirSync(path.join(runDir, `d${a}`))
      for (let b = 0; b < SUB_DIRS; b++) {
        const leaf = path.join(runDir, `d${a}`, `e${b}`)
        fs.mkdirSync(leaf)
        leaves.push(leaf)
      }
    }
    for (let f = 0; f < shape.filesPerRun; f++) {
      const size = 1024 + Math.floor(random() * 7 * 1024)
      fs.writeFileSync(path.join(leaves[f % leaves.length]!, `f${f}.dat`), filler.subarray(0, size))
    }
  }
}

/**
 * Write `runs` released, owned runs into `tenantDir` (created 0700) as tenant `tenant`, each holding only its
 * manifest (v2, as an acquire writes it) and an empty `.leases/` (as a release leaves it): the views' fixture,
 * where a view's cost is the read model's per-run cost and nothing else. Run ids start at `from`.
 */
export const buildLeanTenant = (tenantDir: string, tenant: string, runs: number, from = 0) => {
  fs.mkdirSync(tenantDir, { recursive: true, mode: 0o700 })
  fs.chmodSync(tenantDir, 0o700)
  const createdAt = Date.now() - 2 * 24 * 60 * 60 * 1000
  for (let r = from; r < from + runs; r++) {
    const { runDir } = writeReleasedRun(tenantDir, tenant, r, createdAt)
    fs.mkdirSync(path.join(runDir, ".leases"), { mode: 0o700 })
  }
}

/** An identical copy (modes and times preserved). */
export const copyTree = (from: string, to: string) => {
  const r = spawnSync("cp", ["-a", from, to], { stdio: "inherit" })
  if (r.status !== 0) throw new Error(`cp -a ${from} ${to} failed`)
}

export const removeTree = (dir: string) => fs.rmSync(dir, { recursive: true, force: true })
