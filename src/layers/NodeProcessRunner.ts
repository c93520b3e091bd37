/**
 * The ProcessRunner port on `node:child_process` (services/ProcessRunner.ts).
 */
import type * as ChildProcess from "node:child_process"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ProcessFailed } from "../domain/Errors.js"
import { type ProcessCall, type ProcessResult, ProcessRunner } from "../services/ProcessRunner.js"

/**
 * `node:child_process` when the first process starts, not when this module loads: it pulls in `net` and
 * `dgram`, ≈ 5 ms of every harness's import and every CLI command, most of which never start a process.
 */
const childProcess = (): typeof ChildProcess => process.getBuiltinModule("node:child_process")

/** How long a child we stop gets to exit on SIGTERM before SIGKILL. */
const KILL_GRACE_MS = 2_000

/** The first `max` bytes of what was read, and how many bytes there were in all. */
class Collected {
  readonly chunks: Array<Buffer> = []
  size = 0
  total = 0
  constructor(readonly max: number) {}
  add(chunk: Buffer) {
    this.total += chunk.length
    if (this.size >= this.max) return
    const kept = chunk.length <= this.max - this.size ? chunk : chunk.subarray(0, this.max - this.size)
    this.chunks.push(kept)
    this.size += kept.length
  }
  bytes(): Uint8Array {
    return this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)
  }
}

const run = (call: ProcessCall): Effect.Effect<ProcessResult, ProcessFailed> =>
  Effect.async<ProcessResult, ProcessFailed>((resume) => {
    const named = [call.command, ...call.args].join(" ").slice(0, 200)
    const failed = (reason: ProcessFailed["reason"], detail: string, cause?: unknown) =>
      new ProcessFailed(cause === undefined ? { command: named, reason, detail } : { command: named, reason, detail, cause })
    const child = childProcess().spawn(call.command, call.args, { cwd: call.cwd, env: { ...call.env }, stdio: ["pipe", "pipe", "pipe"] })
    const stdout = new Collected(call.maxStdoutBytes)
    const stderr = new Collected(call.maxStderrBytes)
    let done = false
    const finish = (result: Effect.Effect<ProcessResult, ProcessFailed>) => {
      if (done) return
      done = true
      resume(result)
    }
    const stop = () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill("SIGTERM")
      const hard = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS)
      hard.unref()
      child.once("close", () => clearTimeout(hard))
    }
    child.stdout.on("data", (chunk: Buffer) => {
      stdout.add(chunk)
      if (stdout.total > stdout.max && !done) {
        finish(Effect.fail(failed("OutputTooLarge", `answered more than ${stdout.max} bytes`)))
        stop()
      }
    })
    child.stderr.on("data", (chunk: Buffer) => stderr.add(chunk))
    // `close` comes after both outputs ended (never `exit`, which may come before the last bytes are read).
    child.on("close", (code, signal) => {
      if (code === null) finish(Effect.fail(failed("Signal", `killed by ${signal ?? "a signal"}`)))
      else finish(Effect.succeed({ stdout: stdout.bytes(), stderr: stderr.bytes(), exitCode: code }))
    })
    child.on("error", (error) => finish(Effect.fail(failed("Spawn", error.message, error))))
    // A child that exits without reading all of its input closes the pipe: that is its answer, not ours.
    child.stdin.on("error", () => undefined)
    child.stdin.end(call.stdin === undefined ? undefined : Buffer.from(call.stdin.buffer, call.stdin.byteOffset, call.stdin.byteLength))
    return Effect.sync(() => {
      done = true
      stop()
    })
  })

export const make: ProcessRunner["Type"] = { run }

export const layer: Layer.Layer<ProcessRunner> = Layer.succeed(ProcessRunner, make)
