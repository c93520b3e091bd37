/**
 * Measurement 7: state snapshots on a generated state tree (≥ 10,000 files at full size), in this process
 * through the Effect service (no CLI start-up), against the tools a person would use instead:
 * - the first snapshot vs `cp -a` of the same tree (goal ≤ 1.5×): both read and write every byte (ours also
 *   hashes it and writes a manifest);
 * - an unchanged incremental snapshot vs `cp -al` (goal ≤ 2×): both make one hard link per file (ours also
 *   lstats each live file, compares it with the previous manifest, and writes a new manifest);
 * - `verify` of one snapshot vs `sha256sum` over the same files (goal ≤ 1.5×).
 * Runs alternate ours and the baseline; each snapshot goes to a fresh root (not timed: its removal). Every
 * timed step starts after a `sync`. Ours is durable when it returns (one syncfs before the manifest);
 * `cp -a` and `cp -al` are not (they leave their writes in the page cache).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import * as NodeWorld from "../src/layers/NodeWorld.js"
import { AgentDir } from "../src/services/AgentDir.js"
import { StateBackups } from "../src/services/StateBackups.js"
import type { Measurement, Row } from "./result.js"
import { cpuMs, nowMs, prng, runTimed, summarize } from "./util.js"

export interface StateBackupsBenchOptions {
  readonly root: string
  readonly files: number
  readonly reps: number
  readonly log: (line: string) => void
}

/** 100 files per directory; sizes 200 B – 8 KiB, one in 50 of 64 KiB (session logs). */
const buildStateTree = (agentDir: string, files: number): number => {
  const random = prng(17)
  let bytes = 0
  for (let i = 0; i < files; i++) {
    const dir = path.join(agentDir, i % 3 === 0 ? "sessions" : "state", `d${Math.floor(i / 100)}`)
    if (i % 100 === 0 || i % 100 === 1 || i % 100 === 2) fs.mkdirSync(dir, { recursive: true })
    const size = i % 50 === 0 ? 65_536 : 200 + Math.floor(random() * 8_000)
    fs.writeFileSync(path.join(dir, `f${i}.json`), Buffer.alloc(size, i % 251))
    bytes += size
  }
  return bytes
}

/**
 * Dirty pages of the previous step written out first (`sync`), so no timed step pays for another one's
 * writeback (an fsync on ext4 commits the journal, which waits for every dirty file of the transaction:
 * the incremental's manifest fsync used to pay for the 54 MB `cp -a` had just written).
 */
const flush = () => void spawnSync("sync", [], { stdio: "ignore" })

/** Wall and CPU (this process: user + system) of an in-process call. */
const timed = async <A>(f: () => Promise<A>): Promise<{ wallMs: number; cpuMs: number; value: A }> => {
  flush()
  const start = nowMs()
  const cpu = cpuMs()
  const value = await f()
  return { wallMs: nowMs() - start, cpuMs: cpuMs() - cpu, value }
}

interface Timing {
  readonly wall: Array<number>
  readonly cpu: Array<number>
}
const timing = (): Timing => ({ wall: [], cpu: [] })
const record = (t: Timing, r: { wallMs: number; cpuMs?: number }) => {
  t.wall.push(r.wallMs)
  t.cpu.push(r.cpuMs ?? Number.NaN)
}

/** A shell pipeline's wall and CPU (its own and its children's, from bash's `time`). */
const sh = async (script: string) => {
  flush()
  const r = await runTimed("sh", ["-c", script])
  if (r.code !== 0) throw new Error(`${script} failed`)
  return r
}

export const benchStateBackups = async (o: StateBackupsBenchOptions): Promise<Measurement> => {
  const agentDir = path.join(o.root, "snap", "agent")
  const bytes = buildStateTree(agentDir, o.files)
  o.log(`state snapshots: ${o.files} files, ${(bytes / 1e6).toFixed(1)} MB`)
  const backupsAt = (root: string) =>
    StateBackups.layerWith({ root }).pipe(Layer.provideMerge(AgentDir.layerWith(agentDir)), Layer.provideMerge(NodeWorld.layer))
  const withBackups = <A, E>(root: string, use: (b: StateBackups["Type"]) => Effect.Effect<A, E>) =>
    Effect.runPromise(Effect.provide(Effect.flatMap(StateBackups, use), backupsAt(root)))
  const q = (p: string) => `'${p.replace(/'/g, "'\\''")}'`
  const sources = `${q(path.join(agentDir, "state"))} ${q(path.join(agentDir, "sessions"))}`

  const first = timing()
  const cpA = timing()
  const incremental = timing()
  const cpAl = timing()
  const verify = timing()
  const shaSum = timing()
  const notes: Record<string, unknown> = { files: o.files, megabytes: Math.round(bytes / 1e5) / 10 }
  for (let rep = 0; rep < o.reps; rep++) {
    const root = path.join(o.root, "snap", `root-${rep}`)
    const copy = path.join(o.root, "snap", `cp-${rep}`)
    const oursFirst = async () => {
      const r = await timed(() => withBackups(root, (b) => b.create()))
      record(first, r)
      return r.value
    }
    const baseFirst = async () => {
      fs.mkdirSync(copy, { recursive: true })
      record(cpA, await sh(`cp -a ${sources} ${q(copy)}`))
    }
    let snapshot: { id: string } | undefined
    if (rep % 2 === 0) {
      snapshot = await oursFirst()
      await baseFirst()
    } else {
      await baseFirst()
      snapshot = await oursFirst()
    }
    const oursIncremental = async () => {
      const r = await timed(() => withBackups(root, (b) => b.create()))
      record(incremental, r)
      notes.linkedFiles = r.value.linkedFiles
    }
    const baseIncremental = async () => {
      const linked = `${copy}-links`
      fs.mkdirSync(linked)
      record(cpAl, await sh(`cp -al ${q(path.join(copy, "state"))} ${q(path.join(copy, "sessions"))} ${q(linked)}`))
    }
    if (rep % 2 === 0) {
      await oursIncremental()
      await baseIncremental()
    } else {
      await baseIncremental()
      await oursIncremental()
    }
    const id = snapshot.id
    const oursVerify = async () => {
      const r = await timed(() => withBackups(root, (b) => b.verify(id)))
      if (!r.value.ok) throw new Error("verify found damage in a fresh snapshot")
      record(verify, r)
    }
    const baseVerify = async () => {
      record(shaSum, await sh(`find ${q(path.join(root, id, "agent"))} -type f -print0 | xargs -0 sha256sum > /dev/null`))
    }
    if (rep % 2 === 0) {
      await oursVerify()
      await baseVerify()
    } else {
      await baseVerify()
      await oursVerify()
    }
    fs.rmSync(root, { recursive: true, force: true })
    fs.rmSync(copy, { recursive: true, force: true })
    fs.rmSync(`${copy}-links`, { recursive: true, force: true })
    const last = (t: Timing) => `${t.wall.at(-1)!.toFixed(0)} ms (cpu ${t.cpu.at(-1)!.toFixed(0)})`
    o.log(`  rep ${rep + 1}/${o.reps}: first ${last(first)} vs cp -a ${last(cpA)}; incremental ${last(incremental)} vs cp -al ${last(cpAl)}; verify ${last(verify)} vs sha256sum ${last(shaSum)}`)
  }
  const row = (label: string, ours: Array<number>, baselineName: string, base: Array<number>, target?: number): Row => {
    const o1 = summarize(ours)
    const b1 = summarize(base)
    return { label, unit: "ms", ours: o1, baseline: b1, baselineName, ratio: o1.median / b1.median, ...(target === undefined ? {} : { target }) }
  }
  notes.loadAverage = os.loadavg().map((x) => Math.round(x * 100) / 100)
  return {
    name: "7 state snapshots",
    rows: [
      row("first snapshot wall", first.wall, "cp -a", cpA.wall, 1.5),
      row("first snapshot CPU", first.cpu, "cp -a", cpA.cpu),
      row("unchanged incremental wall", incremental.wall, "cp -al", cpAl.wall, 2),
      row("unchanged incremental CPU", incremental.cpu, "cp -al", cpAl.cpu),
      row("verify wall", verify.wall, "sha256sum", shaSum.wall, 1.5),
      row("verify CPU", verify.cpu, "sha256sum", shaSum.cpu)
    ],
    notes
  }
}
