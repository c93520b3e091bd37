/**
 * The one git runner of the config history (README "Config history"): every call goes through `run`, with
 * an environment built from nothing (only PATH is passed on, read from the Host port at the edge), so the
 * user's setup never reaches it: no global or system config, no inherited `GIT_*` (GIT_DIR, GIT_WORK_TREE,
 * GIT_INDEX_FILE …), hooks pointed at /dev/null (`--no-verify` alone still runs post-commit), no signing,
 * a fixed identity, optional locks off for reads, and `safe.directory` for this repository only. The git dir
 * and work tree are always given explicitly, so git never discovers a repository by walking up.
 */
import * as Command from "@effect/platform/Command"
import type * as CommandExecutor from "@effect/platform/CommandExecutor"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { GitFailed } from "../../domain/Errors.js"

const GIT_IDENTITY = { name: "pi-storage", email: "pi-storage@localhost" } as const

/** The whole environment of a git call: nothing inherited but PATH. Pure, so it can be tested as a value. */
export const gitEnvironment = (input: {
  readonly pathVar: string | undefined
  /** Optional locks off: a read never takes index.lock (and never races a writer for it). */
  readonly read: boolean
  /** Commit time in epoch milliseconds (from the Clock), so history dates follow the program's clock. */
  readonly nowMs?: number | undefined
}): Record<string, string> => {
  const env: Record<string, string> = {
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_SYSTEM: "/dev/null",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: GIT_IDENTITY.name,
    GIT_AUTHOR_EMAIL: GIT_IDENTITY.email,
    GIT_COMMITTER_NAME: GIT_IDENTITY.name,
    GIT_COMMITTER_EMAIL: GIT_IDENTITY.email,
    // Stable messages and no pager, whatever the user's locale and terminal.
    LC_ALL: "C",
    LANG: "C",
    PAGER: "cat",
    TZ: "UTC",
    ...(input.pathVar !== undefined ? { PATH: input.pathVar } : {})
  }
  if (input.read) env.GIT_OPTIONAL_LOCKS = "0"
  if (input.nowMs !== undefined) {
    const date = `@${Math.floor(input.nowMs / 1000)} +0000`
    env.GIT_AUTHOR_DATE = date
    env.GIT_COMMITTER_DATE = date
  }
  return env
}

/** The flags before every subcommand: explicit repository, and the config that must hold whatever else says. */
export const gitGlobalArgs = (gitDir: string, workTree: string): ReadonlyArray<string> => [
  `--git-dir=${gitDir}`,
  `--work-tree=${workTree}`,
  "-c", "core.hooksPath=/dev/null",
  "-c", "commit.gpgsign=false",
  "-c", "tag.gpgsign=false",
  "-c", `safe.directory=${workTree}`,
  "-c", "core.autocrlf=false",
  "-c", "core.quotepath=false",
  "-c", "core.fsmonitor=false",
  "-c", "gc.auto=0",
  "-c", "color.ui=false",
  "-c", "init.defaultBranch=main"
]

export interface GitResult {
  readonly stdout: Uint8Array
  readonly exitCode: number
}

export interface GitCall {
  /** Read-only call (GIT_OPTIONAL_LOCKS=0). */
  readonly read?: boolean
  readonly stdin?: string
  /** Exit codes that are answers, not failures (e.g. 1 for `diff --quiet`). Default [0]. */
  readonly okExitCodes?: ReadonlyArray<number>
  readonly nowMs?: number
}

export type Git = (args: ReadonlyArray<string>, call?: GitCall) => Effect.Effect<GitResult, GitFailed>

const concat = (chunks: Chunk.Chunk<Uint8Array>): Uint8Array => {
  const all = Chunk.toReadonlyArray(chunks)
  const out = new Uint8Array(all.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const c of all) {
    out.set(c, at)
    at += c.length
  }
  return out
}

const decoder = new TextDecoder()
export const utf8 = (bytes: Uint8Array): string => decoder.decode(bytes)

/** A runner bound to one repository. `executor` comes from the layer, so calls have `R = never`. */
export const makeGit = (input: {
  readonly executor: CommandExecutor.CommandExecutor
  readonly gitDir: string
  readonly workTree: string
  readonly pathVar: string | undefined
}): Git => {
  const globals = gitGlobalArgs(input.gitDir, input.workTree)
  return (args, call = {}) => {
    const named = `git ${args.join(" ")}`.slice(0, 200)
    const failed = (exitCode: number, stderr: string) => new GitFailed({ command: named, exitCode, stderr })
    let command = Command.make("git", ...globals, ...args).pipe(
      Command.env(gitEnvironment({ pathVar: input.pathVar, read: call.read === true, nowMs: call.nowMs }), { extendEnv: false }),
      Command.workingDirectory(input.workTree)
    )
    if (call.stdin !== undefined) command = Command.feed(command, call.stdin)
    return Effect.scoped(
      Effect.gen(function*() {
        const process = yield* input.executor.start(command)
        const [stdout, stderr, exitCode] = yield* Effect.all([
          Stream.runCollect(process.stdout).pipe(Effect.map(concat)),
          Stream.runCollect(process.stderr).pipe(Effect.map(concat)),
          process.exitCode
        ], { concurrency: "unbounded" })
        const ok = call.okExitCodes ?? [0]
        if (!ok.includes(exitCode)) return yield* Effect.fail(failed(exitCode, utf8(stderr)))
        return { stdout, exitCode }
      })
    ).pipe(
      // Spawn failures (git missing, cwd gone) are typed too, never a crash.
      Effect.catchTag("SystemError", "BadArgument", (e) => Effect.fail(failed(-1, e.message)))
    )
  }
}
