/**
 * The config history's crash sentinel, read and judged in one place: `ConfigHistory.status()` and the doctor
 * both call `readChangeSentinel`, so "interrupted" means the same thing in both (the markers' liveness rules:
 * a holder proven dead, or a sentinel that cannot be read, is an interrupted change).
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import { CHANGE_SENTINEL, ChangeSentinel, decodeWebRootRecord, HISTORY_DIR_NAME, WEB_ROOT_RECORD, WEB_ROOT_RECORD_MAX_BYTES, writeWebRootRecordFix } from "../../domain/ConfigHistory.js"
import type { FindingDraft } from "../../domain/FindingDraft.js"
import { agentDirFlag, webDataRootFlag } from "../../domain/FixCommands.js"
import { aFileType } from "../../domain/FileTypeWords.js"
import { decodeJsonBytes, MARKER_MAX_BYTES } from "../../domain/Formats.js"
import { blockedPathFindings } from "./blockedPath.js"
import type { Deps } from "./deps.js"
import { judge } from "./deps.js"

export interface InterruptedChange {
  readonly message: string
  readonly startedAt: number
  readonly lastGoodRevision: string | null
  /** The web data root the change covered: its rollback or snapshot must name it (absent in older sentinels). */
  readonly webRoot?: string
  /**
   * The sentinel could not be read (torn, unreadable, not a file): nothing is known of the change, its last good
   * revision included (`lastGoodRevision` is then `null` without meaning "the history was empty").
   */
  readonly unknown?: true
  /** A directory stands where the sentinel belongs: nothing can clear it but a person moving it away. */
  readonly blocked?: true
}

export type SentinelState =
  | { readonly _tag: "None" }
  | { readonly _tag: "Running"; readonly sentinel: ChangeSentinel; readonly detail: string }
  | { readonly _tag: "Interrupted"; readonly change: InterruptedChange; readonly detail: string }
  /** An entry on the way to the history is not a directory (ENOTDIR): no change can have started in it. */
  | { readonly _tag: "Unreachable"; readonly path: string }

/** What is said of a change whose sentinel cannot be read: interrupted, with nothing known of it. */
export const UNREADABLE_CHANGE: InterruptedChange = { message: "(unreadable sentinel)", startedAt: 0, lastGoodRevision: null, unknown: true }

export const historyDirOf = (configBackupsDir: string): string => NodePath.join(configBackupsDir, HISTORY_DIR_NAME)
export const sentinelPathOf = (historyDir: string): string => NodePath.join(historyDir, CHANGE_SENTINEL)

export const readChangeSentinel = (deps: Deps, historyDir: string): Effect.Effect<SentinelState> =>
  Effect.gen(function*() {
    const read = yield* deps.fs.readFile(sentinelPathOf(historyDir), { maxBytes: MARKER_MAX_BYTES * 4 }).pipe(Effect.either)
    if (read._tag === "Left") {
      if (read.left.reason === "NotFound") return { _tag: "None" } as const
      if (read.left.reason === "NotADirectory") return { _tag: "Unreachable", path: read.left.path } as const
      if (read.left.reason === "IsADirectory") {
        return { _tag: "Interrupted", change: { ...UNREADABLE_CHANGE, message: "(a directory where the sentinel belongs)", blocked: true }, detail: "a directory, not the sentinel file" } as const
      }
      return { _tag: "Interrupted", change: UNREADABLE_CHANGE, detail: `unreadable: ${read.left.message}` } as const
    }
    const decoded = decodeJsonBytes(ChangeSentinel, read.right)
    if (!decoded.ok) {
      return { _tag: "Interrupted", change: { ...UNREADABLE_CHANGE, message: "(torn sentinel)" }, detail: decoded.why } as const
    }
    const s = decoded.value
    // A writer elsewhere is judged by the sentinel file's age on its file system's clock (the markers' rule).
    const verdict = yield* judge(deps, {
      host: s.host, bootId: s.bootId, pid: s.pid, processStartedAt: s.processStartedAt, heartbeatAt: s.startedAt
    }, { path: sentinelPathOf(historyDir) })
    if (verdict.alive) return { _tag: "Running", sentinel: s, detail: verdict.detail } as const
    const change = { message: s.message, startedAt: s.startedAt, lastGoodRevision: s.lastGoodRevision, ...(s.webRoot === undefined ? {} : { webRoot: s.webRoot }) }
    return { _tag: "Interrupted", change, detail: verdict.detail } as const
  })

/** The doctor's view (DR1): an interrupted change is a warning naming it and the revision to roll back to. */
export const configHistoryFindings = (deps: Deps, configBackupsDir: string, agentDir: string): Effect.Effect<ReadonlyArray<FindingDraft>> =>
  Effect.flatMap(readChangeSentinel(deps, historyDirOf(configBackupsDir)), (state) => {
    const path = sentinelPathOf(historyDirOf(configBackupsDir))
    if (state._tag === "Unreachable") {
      // Nobody can tell what is in the way: the sentinel stays unreadable, as it was said before.
      const unknown = interrupted(path, agentDir, UNREADABLE_CHANGE, "unreadable: an entry on the way is not a directory")
      return blockedPathFindings(deps, agentDir, state.path, "the config history", unknown)
    }
    return Effect.succeed(state._tag === "Interrupted" ? [interrupted(path, agentDir, state.change, state.detail)] : [])
  })

/**
 * The doctor's view of the history's web-root record (`WEB_ROOT_RECORD`), read by the rule the history reads it
 * by (`webRootRecordOf`): a record there that does not read refuses every config operation, so it is said. A
 * missing record is not judged here (whether revisions used `web/` without one takes git: the history says it).
 */
export const webRootRecordFindings = (deps: Deps, configBackupsDir: string): Effect.Effect<ReadonlyArray<FindingDraft>> =>
  Effect.gen(function*() {
    const path = NodePath.join(historyDirOf(configBackupsDir), ".git", WEB_ROOT_RECORD)
    const read = yield* deps.fs.readFile(path, { maxBytes: WEB_ROOT_RECORD_MAX_BYTES }).pipe(Effect.either)
    if (read._tag === "Left" && read.left.reason === "NotFound") return []
    if (read._tag === "Left" && read.left.reason === "NotADirectory") {
      // `.git` itself in the way (the history directory in the way is the sentinel's `library-path-blocked`).
      const gitDir = NodePath.dirname(path)
      const [history, git] = [yield* Effect.option(deps.fs.lstat(NodePath.dirname(gitDir))), yield* Effect.option(deps.fs.lstat(gitDir))]
      if (history._tag === "None" || history.value.type !== "Directory" || git._tag === "None" || git.value.type === "Directory") return []
      return [{
        code: "config-history-damaged",
        path: gitDir,
        message: `the config history's .git is ${aFileType(git.value.type)}, not its repository: every config snapshot, rollback, diff and log is refused`,
        fix: "move it away by hand (the history is never read or written through it); the next config snapshot starts a new history"
      } satisfies FindingDraft]
    }
    const parsed = read._tag === "Left" ? { ok: false as const, why: `cannot be read (${read.left.message})` } : decodeWebRootRecord(read.right)
    if (parsed.ok) return []
    return [{
      code: "config-history-damaged",
      path,
      message: `the config history's record of which web data root web/ holds does not read (${parsed.why}): every config snapshot, rollback, diff and log is refused`,
      fix: writeWebRootRecordFix(path)
    } satisfies FindingDraft]
  })

const interrupted = (path: string, agentDir: string, change: InterruptedChange, detail: string): FindingDraft => {
  const to = change.lastGoodRevision
  // The change's own web data root: a command without it would work on another root's files.
  const flags = change.webRoot === undefined ? agentDirFlag(agentDir) : `${agentDirFlag(agentDir)} ${webDataRootFlag(change.webRoot)}`
  if (change.blocked === true) {
    return {
      code: "config-change-interrupted",
      path,
      message: `a directory stands where the config history keeps its change sentinel: every config snapshot, rollback and change is refused until it is moved away`,
      fix: "move it away by hand (nothing of the library's is in it), then look at the config files"
    }
  }
  if (change.unknown === true) {
    return {
      code: "config-change-interrupted",
      path,
      message: `a config change was interrupted and its sentinel cannot be read (${detail}): what it changed and the last good revision are unknown`,
      fix: `look at \`pi-storage ${flags} config log\` and the config files, then run \`pi-storage ${flags} config snapshot\` to keep them as they are (or roll back to a revision the log shows)`
    }
  }
  return {
    code: "config-change-interrupted",
    path,
    message: `config change ${JSON.stringify(change.message)} was interrupted (${detail}); the last good revision is ` +
      (to === null ? "none (the history was empty)" : to.slice(0, 12)),
    fix: to === null
      ? `check the config files by hand, then run \`pi-storage ${flags} config snapshot\` to clear the sentinel`
      : `run \`pi-storage ${flags} config rollback ${to.slice(0, 12)}\` to undo it, or \`pi-storage ${flags} config snapshot\` to keep the files as they are`
  }
}
