/**
 * The Host port on `os`, `process` and Linux `/proc` (docs/safety.md "How runs stay safe": leases and liveness). This is the Node edge, so it may read
 * `process.env`. Where `/proc` is absent (macOS, Windows) boot id and start times are `null`, which the
 * liveness verdict treats as "unknown".
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Host } from "../services/Host.js"
import { nodeEnv } from "./NodeEnv.js"

/**
 * Field 22 (`starttime`, clock ticks after boot) of a `/proc/<pid>/stat` line. The command name (field 2) is
 * in parentheses and may itself contain spaces and `)`, so fields are counted after the LAST `)`.
 */
export const parseStartTime = (statLine: string): number | null => {
  const close = statLine.lastIndexOf(")")
  if (close < 0) return null
  // After ") " come fields 3 (state), 4, … so field 22 is at index 22 - 3.
  const field = statLine.slice(close + 1).trim().split(/\s+/)[22 - 3]
  if (field === undefined || !/^\d+$/.test(field)) return null
  const value = Number(field)
  return Number.isSafeInteger(value) ? value : null
}

const isValidPid = (pid: number): boolean => Number.isSafeInteger(pid) && pid > 0

const processStartTime = (pid: number): Effect.Effect<number | null> =>
  isValidPid(pid)
    ? Effect.promise(() => fsp.readFile(`/proc/${pid}/stat`, "utf8").then(parseStartTime, () => null))
    : Effect.succeed(null)

/** kill(pid, 0): no error or EPERM means the process exists; ESRCH (or anything else) means it does not. */
const pidExists = (pid: number): Effect.Effect<boolean> =>
  Effect.sync(() => {
    // Never signal 0 or negative pids: those address process groups.
    if (!isValidPid(pid)) return false
    try {
      process.kill(pid, 0)
      return true
    } catch (cause) {
      return typeof cause === "object" && cause !== null && "code" in cause && cause.code === "EPERM"
    }
  })

const readTrimmed = (path: string): string | null => {
  try {
    const text = fs.readFileSync(path, "utf8").trim()
    return text === "" ? null : text
  } catch {
    return null
  }
}

/** A machine id is 32 lowercase hex digits (machine-id(5)); anything else is no identity. */
export const parseMachineId = (text: string | null): string | null =>
  text !== null && /^[0-9a-f]{32}$/.test(text) ? text : null

const machineId = (): string | null =>
  parseMachineId(readTrimmed("/etc/machine-id")) ?? parseMachineId(readTrimmed("/var/lib/dbus/machine-id"))

/** The first field of `/proc/uptime` (seconds since boot, suspend included), in ms; `null` when unreadable. */
export const parseUptime = (text: string | null): number | null => {
  const field = text?.split(/\s+/)[0]
  if (field === undefined || !/^\d+(\.\d+)?$/.test(field)) return null
  const ms = Number(field) * 1000
  return Number.isFinite(ms) ? ms : null
}

const uptimeMs: Effect.Effect<number | null> = Effect.promise(() =>
  fsp.readFile("/proc/uptime", "utf8").then((text) => parseUptime(text.trim()), () => null)
)

const selfStartTime = (): number | null => {
  const line = readTrimmed(`/proc/${process.pid}/stat`)
  return line === null ? null : parseStartTime(line)
}

/** The process environment: NodeEnv.ts, the one place the library reads `process.env`. */
export { nodeEnv }

export const make: Effect.Effect<Host["Type"]> = Effect.sync(() => ({
  hostname: os.hostname(),
  bootId: readTrimmed("/proc/sys/kernel/random/boot_id"),
  machineId: machineId(),
  uptimeMs,
  pid: process.pid,
  selfStartTime: selfStartTime(),
  uid: process.getuid?.() ?? null,
  homeDir: os.homedir(),
  cwd: process.cwd(),
  env: nodeEnv,
  processStartTime,
  pidExists
}))

/** The production Host layer; identity facts are read once when the layer is built. */
export const layer: Layer.Layer<Host> = Layer.effect(Host, make)
