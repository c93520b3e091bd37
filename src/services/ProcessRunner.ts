/**
 * The ProcessRunner port: run a program to its end and answer its output and exit code. The config history's
 * git runner is its one caller (services/internal/git.ts), which builds each call's whole environment itself.
 *
 * Why a port of our own and not `@effect/platform`'s `Command`/`CommandExecutor`: the Effect API must import
 * with nothing but `effect` installed (docs/install.md "Installing"), and a Promise-only install must not pull Effect
 * in. `@effect/platform` as a required peer would put it and Effect (≈ 55 MB) into every install; as an
 * optional one, the documented Effect install line would fail to import the root. Running git needs only this.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { ProcessFailed } from "../domain/Errors.js"

export interface ProcessCall {
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** The child's WHOLE environment: nothing is inherited from this process. */
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  /** Written to the child's standard input, which is then closed (empty when absent). */
  readonly stdin?: Uint8Array | undefined
  /** Most stdout bytes accepted: past it the child is killed and the call fails (`OutputTooLarge`), never cut silently. */
  readonly maxStdoutBytes: number
  /** Stderr is kept up to this many bytes (for a message); the rest is read and dropped. */
  readonly maxStderrBytes: number
}

export interface ProcessResult {
  readonly stdout: Uint8Array
  readonly stderr: Uint8Array
  readonly exitCode: number
}

export class ProcessRunner extends Context.Tag("pi-agent-storage/ProcessRunner")<ProcessRunner, {
  /**
   * Start `command` (looked up on the call's `PATH`), feed it `stdin`, collect both outputs to the end and
   * answer its exit code; a program that cannot be started, is killed by a signal or prints more than
   * `maxStdoutBytes` is `ProcessFailed` (its `reason` says which).
   * Interrupting the call kills the child (SIGTERM, then SIGKILL after a grace period).
   */
  readonly run: (call: ProcessCall) => Effect.Effect<ProcessResult, ProcessFailed>
}>() {}
