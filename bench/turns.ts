/**
 * The CPU time the main thread spends between two ticks of a 1 ms timer: the synchronous work of one turn of
 * the event loop (or a few short ones), in CPU terms. Wall-clock lag on a shared, busy machine is mostly time
 * spent waiting for a core; the main thread's own CPU time per turn is not, so it says what the code holds
 * the event loop for whatever the load.
 *
 * Read from `/proc/<pid>/task/<pid>/schedstat` (the main thread's time on a CPU, in ns): `process.cpuUsage()`
 * counts every thread, and the remover and the thread pool delete beside the main thread during a prune.
 * That file alone lags by up to a scheduler tick (4 ms at HZ=250); a `getrusage` first (`process.cpuUsage()`)
 * brings the calling thread's count up to date, so each reading is exact to microseconds.
 * Elsewhere (no such file) it falls back to `process.cpuUsage()` and says so (`source: "process"`).
 */
import * as fs from "node:fs"

export interface TurnWindow {
  /** `process.hrtime` at the tick that opened the window and the one that closed it, in ms. */
  readonly startMs: number
  readonly endMs: number
  /** The main thread's CPU time in it, in ms. */
  readonly cpuMs: number
}

export interface TurnStats {
  /** The most CPU time of one window, in ms. */
  readonly maxCpuMs: number
  /** The longest window (wall), in ms: the block as a timer feels it, waiting for a core included. */
  readonly maxWallMs: number
  /** Windows whose CPU time exceeded `keepOverMs`, longest first (at most `keep`). */
  readonly longest: ReadonlyArray<TurnWindow>
  readonly windows: number
  readonly source: "thread" | "process"
  /** Windows of more than 10 ms of CPU. */
  readonly over10Ms: number
}

export interface TurnMonitor {
  readonly stop: () => TurnStats
}

const hrMs = (): number => Number(process.hrtime.bigint()) / 1e6

const threadClock = (): { readonly read: () => number; readonly close: () => void } | undefined => {
  let fd: number
  try {
    fd = fs.openSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, "r")
  } catch {
    return undefined
  }
  const buffer = Buffer.alloc(128)
  const read = () => {
    process.cpuUsage()
    const n = fs.readSync(fd, buffer, 0, buffer.length, 0)
    return Number(buffer.toString("latin1", 0, n).split(" ")[0]) / 1e6
  }
  if (!Number.isFinite(read())) {
    fs.closeSync(fd)
    return undefined
  }
  return { read, close: () => fs.closeSync(fd) }
}

const processClock = () => ({
  read: () => {
    const u = process.cpuUsage()
    return (u.user + u.system) / 1000
  },
  close: () => {}
})

/** Start recording; `keep` windows over `keepOverMs` of CPU are kept for attribution (a CPU profile's samples). */
export const monitorTurns = (options: { readonly keep?: number; readonly keepOverMs?: number } = {}): TurnMonitor => {
  const keep = options.keep ?? 20
  const keepOverMs = options.keepOverMs ?? 10
  const thread = threadClock()
  const clock = thread ?? processClock()
  let lastCpu = clock.read()
  let lastWall = hrMs()
  let maxCpuMs = 0
  let maxWallMs = 0
  let windows = 0
  let over10Ms = 0
  const longest: Array<TurnWindow> = []
  const tick = () => {
    const cpu = clock.read()
    const wall = hrMs()
    const used = cpu - lastCpu
    windows++
    if (used > maxCpuMs) maxCpuMs = used
    if (wall - lastWall > maxWallMs) maxWallMs = wall - lastWall
    if (used > 10) over10Ms++
    if (used > keepOverMs) {
      longest.push({ startMs: lastWall, endMs: wall, cpuMs: used })
      longest.sort((a, b) => b.cpuMs - a.cpuMs)
      if (longest.length > keep) longest.pop()
    }
    lastCpu = cpu
    lastWall = wall
  }
  const timer = setInterval(tick, 1)
  return {
    stop: () => {
      clearInterval(timer)
      tick()
      clock.close()
      return { maxCpuMs, maxWallMs, longest, windows, source: thread === undefined ? "process" : "thread", over10Ms }
    }
  }
}
