/**
 * `pi-storage work run CATEGORY/TENANT [--name RUN] [--cwd DIR] [--delete] -- CMD [ARGS...]`: hold a leased run
 * while a command runs in it, with the run directory as its working directory (`--cwd` for another), so its
 * scratch files land in the run (and go with `--delete`). The child gets `workRootEnv(run)` (`PI_WORK_ROOT`,
 * `PI_WORK_RUN_DIR`, `PI_WORK_RUN_ID`, `PI_WORK_CATEGORY`, `PI_WORK_TENANT`) on top of our environment, our
 * stdio, and every SIGINT/SIGTERM we receive. The lease is released (the run deleted with `--delete`) when
 * the child exits, and we exit with its code, or 128+signal when it was killed.
 */
import type { ChildProcess } from "node:child_process"
import * as Effect from "effect/Effect"
import { type CliContext, complain, reportError, usageError, withStack } from "../context.js"
import { txt } from "../format.js"
import { parseRunName, parseTenantTarget } from "../parse.js"

export interface RunFlags {
  readonly target: string
  readonly name: string | undefined
  /** The command's working directory; the run directory when absent. */
  readonly cwd: string | undefined
  readonly delete: boolean
}

const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"] as const

/** Shell conventions: 127 command not found, 126 found but not runnable. */
const spawnFailureCode = (errno: string | undefined): number => (errno === "ENOENT" ? 127 : 126)

type ChildOutcome = { readonly _tag: "Exited"; readonly code: number } | { readonly _tag: "NotStarted"; readonly errno: string; readonly message: string }

/** Spawn and wait for the child, forwarding signals meanwhile. Never fails. */
const runChild = (command: ReadonlyArray<string>, env: NodeJS.ProcessEnv, cwd: string): Effect.Effect<ChildOutcome> =>
  Effect.flatMap(
    Effect.promise(() => Promise.all([import("node:child_process"), import("node:os")])),
    ([childProcess, os]) =>
      Effect.async<ChildOutcome>((resume) => {
        let child: ChildProcess
        const forward = (signal: NodeJS.Signals) => () => void child.kill(signal)
        const handlers = FORWARDED.map((signal) => [signal, forward(signal)] as const)
        let finished = false
        const done = (outcome: ChildOutcome) => {
          if (finished) return
          finished = true
          for (const [signal, handler] of handlers) process.removeListener(signal, handler)
          resume(Effect.succeed(outcome))
        }
        child = childProcess.spawn(command[0]!, command.slice(1), { stdio: "inherit", env, cwd })
        for (const [signal, handler] of handlers) process.on(signal, handler)
        child.once("error", (e: NodeJS.ErrnoException) => done({ _tag: "NotStarted", errno: e.code ?? "", message: e.message }))
        child.once("exit", (code, signal) => {
          const signalNumber = signal === null ? undefined : os.constants.signals[signal]
          done({ _tag: "Exited", code: code ?? (signalNumber !== undefined ? 128 + signalNumber : 1) })
        })
      })
  )

export const run = (ctx: CliContext, flags: RunFlags) =>
  Effect.gen(function*() {
    const target = parseTenantTarget(flags.target)
    if (!target.ok) return yield* usageError(ctx, target.message)
    let runId: string | undefined
    if (flags.name !== undefined) {
      const parsed = parseRunName(flags.name)
      if (!parsed.ok) return yield* usageError(ctx, `--name: ${parsed.message}`)
      runId = parsed.value
    }
    const command = ctx.command
    if (command === undefined || command.length === 0) {
      return yield* usageError(ctx, "work run needs a command after '--': work run CATEGORY/TENANT -- CMD [ARGS...]")
    }
    let cwd: string | undefined
    if (flags.cwd !== undefined) {
      const { existsSync, statSync } = yield* Effect.promise(() => import("node:fs"))
      const { resolve } = yield* Effect.promise(() => import("node:path"))
      cwd = resolve(flags.cwd)
      if (!existsSync(cwd) || !statSync(cwd).isDirectory()) return yield* usageError(ctx, txt`--cwd: "${flags.cwd}" is not a directory`)
    }
    yield* withStack(ctx, (s) =>
      Effect.scoped(Effect.gen(function*() {
        const workRuns = yield* s.WorkRuns
        const run = yield* workRuns.acquire({ ...target.value, runId })
        // Uninterruptible from spawn to release: a signal goes to the child, and we finish after it does.
        yield* Effect.uninterruptible(Effect.gen(function*() {
          const outcome = yield* runChild(command, { ...process.env, ...workRuns.workRootEnv(run) }, cwd ?? run.path)
          if (outcome._tag === "NotStarted") {
            yield* complain(ctx, txt`cannot run "${command[0]!}": ${outcome.message}`, spawnFailureCode(outcome.errno))
          }
          ctx.status.set(outcome._tag === "Exited" ? outcome.code : spawnFailureCode(outcome.errno))
          const released = yield* run.release(flags.delete ? { delete: true } : undefined)
          if (flags.delete && !released.deleted) {
            yield* complain(ctx, txt`kept ${run.path}: ${released.keptBecause ?? "not deleted"}`, 0)
          }
        }))
      })).pipe(Effect.catchAll((e) => reportError(ctx, e))))
  })
