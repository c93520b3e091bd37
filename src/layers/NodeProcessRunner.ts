/**
 * The ProcessRunner port on `node:child_process` (services/ProcessRunner.ts).
 */
import { spawn } from "node:child_process"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ProcessFailed } from "../domain/Errors.js"
import { type ProcessCall, type ProcessResult, ProcessRunner } from "../services/ProcessRunner.js"

/** How long an interrupted child gets to exit on SIGTERM before SIGKILL. */
const KILL_GRACE_MS = 2_000

const concat = (chunks: ReadonlyArray<Buffer>): Uint8Array => (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))

const run = (call: ProcessCall): Effect.Effect<ProcessResult, ProcessFailed> =>
  Effect.async<ProcessResult, ProcessFailed>((resume) => {
    const named = [call.command, ...call.args].join(" ").slice(0, 200)
    const failed = (detail: string) => new ProcessFailed({ command: named, detail })
    const child = spawn(call.command, call.args, { cwd: call.cwd, env: { ...call.env }, stdio: ["pipe", "pipe", "pipe"] })
    const stdout: Array<Buffer> = []
    const stderr: Array<Buffer> = []
    let done = false
    const finish = (result: Effect.Effect<ProcessResult, ProcessFailed>) => {
      if (done) return
      done = true
      resume(result)
    }
    child.stdout.on("data", (chunk: Buffer) => void stdout.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => void stderr.push(chunk))
    // `close` comes after both outputs ended (never `exit`, which may come before the last bytes are read).
    child.on("close", (code, signal) => {
      if (code === null) finish(Effect.fail(failed(`killed by ${signal ?? "a signal"}`)))
      else finish(Effect.succeed({ stdout: concat(stdout), stderr: concat(stderr), exitCode: code }))
    })
    child.on("error", (error) => finish(Effect.fail(failed(error.message))))
    // A child that exits without reading all of its input closes the pipe: that is its answer, not ours.
    child.stdin.on("error", () => undefined)
    child.stdin.end(call.stdin === undefined ? undefined : Buffer.from(call.stdin.buffer, call.stdin.byteOffset, call.stdin.byteLength))
    return Effect.sync(() => {
      done = true
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill("SIGTERM")
      const hard = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS)
      hard.unref()
      child.once("close", () => clearTimeout(hard))
    })
  })

export const NodeProcessRunner = { run } satisfies ProcessRunner["Type"]

export const layer: Layer.Layer<ProcessRunner> = Layer.succeed(ProcessRunner, NodeProcessRunner)
