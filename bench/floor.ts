/**
 * The protocols' syscalls in C with no runtime (floor.c), compiled for this run: the lowest ratio any
 * implementation of the same protocol could show on this disk, measured beside ours and the baselines.
 */
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { BENCH_DIR, runTimed } from "./util.js"

export interface FloorTiming {
  /** As `rm -rf` and `du` are timed: the child process from outside (bash `time`), start-up included. */
  readonly outside: { readonly cpu: number; readonly wall: number }
  /** The sequence alone, as the program timed it (getrusage; monotonic clock): for per-op figures. */
  readonly inside: { readonly cpu: number; readonly wall: number }
}

export type Floor = (args: ReadonlyArray<string>) => Promise<FloorTiming>

/** The floor program built into `root`, or why not (no C compiler: the floor rows are left out). */
export const buildFloor = (root: string): { readonly floor: Floor } | { readonly why: string } => {
  const binary = path.join(root, "floor")
  const cc = spawnSync("cc", ["-O2", "-o", binary, path.join(BENCH_DIR, "floor.c")], { encoding: "utf8" })
  if (cc.error !== undefined || cc.status !== 0) return { why: `cc failed: ${cc.error?.message ?? cc.stderr.trim()}` }
  return {
    floor: async (args) => {
      const r = await runTimed(binary, args)
      const m = /^([\d.]+) ([\d.]+)$/.exec(r.stdout.trim())
      if (r.code !== 0 || m === null) throw new Error(`floor ${args.join(" ")} failed (exit ${r.code}): ${r.stdout}`)
      return { outside: { cpu: r.cpuMs ?? Number.NaN, wall: r.wallMs }, inside: { cpu: Number(m[1]), wall: Number(m[2]) } }
    }
  }
}

/** A floor series that fails drops its rows only (logged), never the measurement around it. */
export const tryFloor = async <A>(log: (line: string) => void, what: string, run: () => Promise<A>): Promise<A | undefined> => {
  try {
    return await run()
  } catch (e) {
    log(`${what}: floor left out (${e instanceof Error ? e.message : String(e)})`)
    return undefined
  }
}
