/**
 * The one git runner of the config history (docs/config-history.md "Config history"): every call goes through `run`, with
 * an environment built from nothing (only PATH is passed on, read from the Host port at the edge), so the
 * user's setup never reaches it: no global or system config or attributes, no inherited `GIT_*` (GIT_DIR,
 * GIT_WORK_TREE, GIT_INDEX_FILE …), hooks pointed at /dev/null (`--no-verify` alone still runs post-commit),
 * no signing, a fixed identity, optional locks off for reads, and `safe.directory` for this repository only.
 * The git dir and work tree are always given explicitly, so git never discovers a repository by walking up.
 * The repository's own config cannot be switched off, so what it could make git run is kept from being
 * chosen: filter and diff drivers are picked by attributes, and `HISTORY_ATTRIBUTES` (the repository's
 * `info/attributes`, which outranks every `.gitattributes`) unsets them for every path; the diff calls add
 * `--no-textconv --no-ext-diff`. Paths go in on stdin as bytes; each answer is capped.
 */
import * as Effect from "effect/Effect"
import { GitFailed, type ProcessFailed } from "../../domain/Errors.js"
import type { ProcessRunner } from "../ProcessRunner.js"
import { quoteGitName } from "../../domain/GitFormats.js"

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
    // No system-wide attributes; pathspecs are literal (a scope name is never a pattern).
    GIT_ATTR_NOSYSTEM: "1",
    GIT_LITERAL_PATHSPECS: "1",
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
  // One index file, never a shared index written beside the repository's (a live diff's own index included).
  "-c", "core.splitIndex=false",
  "-c", "color.ui=false",
  "-c", "init.defaultBranch=main",
  // The user's attributes file is never read (the repository's are overridden by HISTORY_ATTRIBUTES).
  "-c", "core.attributesFile=/dev/null",
  // The names git refuses are exactly `gitRefusesPath`'s (domain/GitFormats.ts), whatever the repository says.
  "-c", "core.protectNTFS=true",
  "-c", "core.protectHFS=false",
  "-c", "core.ignoreCase=false",
  "-c", "core.precomposeUnicode=false",
  // What log and diff print is what the parsers expect, and nothing they print runs a program.
  "-c", "log.showSignature=false",
  "-c", "log.showRoot=true",
  "-c", "i18n.logOutputEncoding=UTF-8",
  "-c", "diff.noprefix=false",
  "-c", "diff.mnemonicPrefix=false",
  "-c", "diff.relative=false",
  "-c", "maintenance.auto=false"
]

/**
 * The repository's `info/attributes`, kept exactly so before every call (it outranks the work tree's
 * `.gitattributes`, a mirrored config file may be one): no filter driver (clean, smudge, process), no diff
 * driver (textconv, command), no merge driver, no end-of-line, ident or encoding conversion. What history
 * stores is the bytes as they are.
 */
export const HISTORY_ATTRIBUTES = "* -filter !diff !merge -text -crlf !eol -ident !working-tree-encoding\n"

/** Flags every `diff` and `log` call of ours carries: no text conversion, no external diff program. */
export const NO_DIFF_PROGRAMS: ReadonlyArray<string> = ["--no-textconv", "--no-ext-diff"]

export interface GitResult {
  readonly stdout: Uint8Array
  /** What git said on stderr (its first `STDERR_MAX` bytes): a success may still carry a warning. */
  readonly stderr: Uint8Array
  readonly exitCode: number
}

export interface GitCall {
  /** Read-only call (GIT_OPTIONAL_LOCKS=0). */
  readonly read?: boolean
  /** Bytes for git's stdin (paths go this way, as their bytes: `nulPathsInput`). */
  readonly stdin?: Uint8Array
  /** Most stdout bytes accepted (default `GIT_OUTPUT_MAX`); more is a failure, never a silent cut. */
  readonly maxOutputBytes?: number
  /** Exit codes that are answers, not failures (e.g. 1 for `diff --quiet`). Default [0]. */
  readonly okExitCodes?: ReadonlyArray<number>
  readonly nowMs?: number
  /** An index of the caller's own instead of the repository's (GIT_INDEX_FILE): a commit of part of what is staged. */
  readonly indexFile?: string
  /**
   * A work tree and an object store of the caller's own (GIT_OBJECT_DIRECTORY): new objects go there, never into
   * the repository (a live diff writes nothing in the history). The repository's objects are its alternate for
   * reading unless `writing`: git freshens (touches) an object it finds already stored when asked to write it,
   * an alternate's too.
   */
  readonly scratch?: { readonly workTree: string; readonly objectDir: string; readonly writing?: boolean }
}

export type Git = (args: ReadonlyArray<string>, call?: GitCall) => Effect.Effect<GitResult, GitFailed>

const decoder = new TextDecoder()
export const utf8 = (bytes: Uint8Array): string => decoder.decode(bytes)

/** Default cap of a call's stdout. */
export const GIT_OUTPUT_MAX = 64 << 20
/** Git's stderr is kept for the error message only. */
const STDERR_MAX = 64 << 10

/** A runner bound to one repository. `runner` comes from the layer, so calls have `R = never`. */
export const makeGit = (input: {
  readonly runner: ProcessRunner["Type"]
  readonly gitDir: string
  readonly workTree: string
  readonly pathVar: string | undefined
}): Git => {
  const globals = gitGlobalArgs(input.gitDir, input.workTree)
  const objects = `${input.gitDir}/objects`
  return (args, call = {}) => {
    const named = `git ${args.join(" ")}`.slice(0, 200)
    const failed = (exitCode: number, stderr: string, cause?: ProcessFailed) =>
      new GitFailed(cause === undefined ? { command: named, exitCode, stderr } : { command: named, exitCode, stderr, cause })
    return input.runner.run({
      command: "git",
      args: [...(call.scratch === undefined ? globals : gitGlobalArgs(input.gitDir, call.scratch.workTree)), ...args],
      env: {
        ...gitEnvironment({ pathVar: input.pathVar, read: call.read === true, nowMs: call.nowMs }),
        ...(call.indexFile === undefined ? {} : { GIT_INDEX_FILE: call.indexFile }),
        ...(call.scratch === undefined ? {} : { GIT_OBJECT_DIRECTORY: call.scratch.objectDir }),
        // C-quoted: the list is split at ':', which a path may hold.
        ...(call.scratch === undefined || call.scratch.writing === true ? {} : { GIT_ALTERNATE_OBJECT_DIRECTORIES: quoteGitName(objects) })
      },
      cwd: call.scratch?.workTree ?? input.workTree,
      stdin: call.stdin,
      maxStdoutBytes: call.maxOutputBytes ?? GIT_OUTPUT_MAX,
      maxStderrBytes: STDERR_MAX
    }).pipe(
      // Spawn failures (git missing, cwd gone), a signal and an answer past its cap are typed too, never a crash.
      Effect.catchTag("ProcessFailed", (e) => Effect.fail(failed(-1, e.detail, e))),
      Effect.flatMap((result) => {
        const ok = call.okExitCodes ?? [0]
        return ok.includes(result.exitCode) ? Effect.succeed(result) : Effect.fail(failed(result.exitCode, utf8(result.stderr)))
      })
    )
  }
}
