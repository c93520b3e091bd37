/**
 * Profiling driver (BENCHMARKS.md "State snapshots"; not part of `npm run bench`): one generated state tree, one first
 * snapshot, then `--reps` unchanged incrementals in this process, each against a `cp -al` of the same tree,
 * alternating (the tree and its snapshots are kept in `--dir` for the next run). `--profile PREFIX` writes a
 * CPU profile of each timed create alone (`PREFIX.<rep>.cpuprofile`); `strace -c -f` it to count syscalls.
 * `npx tsx bench/incrProfile.ts --files 10000 --reps 5 --dir /tmp/x [--profile /tmp/x/p]`
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as inspector from "node:inspector/promises"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import * as NodeWorld from "../src/layers/NodeWorld.js"
import { AgentDir } from "../src/services/AgentDir.js"
import { StateBackups } from "../src/services/StateBackups.js"
import { cpuMs, nowMs, numberArg, parseArgs, prng } from "./util.js"

const args = parseArgs(process.argv.slice(2))
const files = numberArg(args, "files", 10_000)
const reps = numberArg(args, "reps", 5)
const dir = String(args.get("dir") ?? fs.mkdtempSync("/tmp/incr-"))
const agentDir = path.join(dir, "agent")
const root = path.join(dir, "backups")

if (!fs.existsSync(agentDir)) {
  const random = prng(17)
  for (let i = 0; i < files; i++) {
    const d = path.join(agentDir, i % 3 === 0 ? "sessions" : "state", `d${Math.floor(i / 100)}`)
    if (i % 100 < 3) fs.mkdirSync(d, { recursive: true })
    const size = i % 50 === 0 ? 65_536 : 200 + Math.floor(random() * 8_000)
    fs.writeFileSync(path.join(d, `f${i}.json`), Buffer.alloc(size, i % 251))
  }
}
const layer = StateBackups.layerWith({ root }).pipe(Layer.provideMerge(AgentDir.layerWith(agentDir)), Layer.provideMerge(NodeWorld.layer))
const create = () => Effect.runPromise(Effect.provide(Effect.flatMap(StateBackups, (b) => b.create()), layer))
const sync = () => void spawnSync("sync")

const profileTo = args.get("profile")
const session = new inspector.Session()

const main = async () => {
  if (!fs.existsSync(root)) await create()
  await create() // warm (JIT), not timed
  if (typeof profileTo === "string") {
    session.connect()
    await session.post("Profiler.enable")
  }
  const ours: Array<string> = []
  const base: Array<string> = []
  for (let rep = 0; rep < reps; rep++) {
    sync()
    let t = nowMs()
    const c = cpuMs()
    if (typeof profileTo === "string") await session.post("Profiler.start")
    const r = await create()
    if (typeof profileTo === "string") {
      const { profile } = await session.post("Profiler.stop")
      fs.writeFileSync(`${profileTo}.${rep}.cpuprofile`, JSON.stringify(profile))
    }
    ours.push(`${(nowMs() - t).toFixed(0)}/${(cpuMs() - c).toFixed(0)}`)
    if (r.linkedFiles !== files) throw new Error(`linked ${r.linkedFiles}`)
    // Keep only the newest snapshot (not timed).
    for (const name of fs.readdirSync(root)) if (!name.startsWith(".") && name !== r.id) fs.rmSync(path.join(root, name), { recursive: true })
    const links = path.join(dir, "links")
    fs.rmSync(links, { recursive: true, force: true })
    fs.mkdirSync(links)
    sync()
    t = nowMs()
    const cp = spawnSync("bash", ["-c", `time cp -al '${path.join(root, r.id, "agent", "state")}' '${path.join(root, r.id, "agent", "sessions")}' '${links}'`], { encoding: "utf8" })
    const m = /user\s+(\d+)m([\d.]+)s\s+sys\s+(\d+)m([\d.]+)s/.exec(cp.stderr)
    const cpCpu = m === null ? NaN : (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000
    base.push(`${(nowMs() - t).toFixed(0)}/${cpCpu.toFixed(0)}`)
  }
  console.log(`ours wall/cpu ms: ${ours.join(" ")}; cp -al wall/cpu ms: ${base.join(" ")}`)
}
main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
