/**
 * What GNU `du` says of a tree (docs/work-runs.md "Retention": one byte count): disk usage (`du -s -B1`, allocated blocks)
 * and apparent size (`du -sb`), each counting every entry once and a file of several hard links once.
 */
import { spawnSync } from "node:child_process"

const duBytes = (path: string, flags: ReadonlyArray<string>): number => {
  const r = spawnSync("du", [...flags, "--", path], { encoding: "utf8" })
  if (r.status !== 0) throw new Error(`du ${flags.join(" ")} ${path}: ${r.stderr}`)
  return Number(r.stdout.split("\t")[0])
}

export interface DuSizes {
  /** `du -s -B1`: allocated blocks × 512. */
  readonly bytes: number
  /** `du -sb`: apparent size. */
  readonly apparentBytes: number
}

/** `du -s -B1` and `du -sb` of `path`, staying on its file system (`-x`, as the walks do). */
export const du = (path: string): DuSizes => ({ bytes: duBytes(path, ["-s", "-x", "-B1"]), apparentBytes: duBytes(path, ["-s", "-x", "-b"]) })

/** `du -sk` × 1024: disk usage rounded up to KiB, as `du -sh` and `ls -s` people read it. */
export const duKiB = (path: string): number => duBytes(path, ["-s", "-x", "-k"]) * 1024
