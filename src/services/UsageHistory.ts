/**
 * The usage history (docs/dashboard.md "Dashboard"): bytes per tier over time for the dashboard's growth chart, in
 * `state/usage-history.jsonl`. The operations that already write (a prune, the background prune, a state
 * snapshot, a config snapshot) call `UsageRecorder.record` when they are done; it appends one record per
 * root (the agent dir, and the web data root when one is configured) unless that root has one from the last
 * hour, measured by the one top-level scan the treemap uses (internal/topLevel.ts) under its own budget.
 * Read-only commands never record. The file is rewritten whole (atomically) with each record, thinned and
 * bounded by `thinHistory`; a file that does not decode is never rewritten (a warning says why).
 *
 * `UsageRecorder` is a `Context.Reference` whose default records nothing, so a writer's `R` never grows and a
 * stack without a history (the Memory world's, unless asked) writes nothing more than before;
 * `NodeStorage.layer` provides the real one.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  appendRecord,
  decodeHistory,
  encodeHistory,
  isRecordDue,
  USAGE_FILE_MAX_BYTES,
  USAGE_HISTORY_FILE,
  type UsageCause,
  type UsageRecord,
  type UsageRoot
} from "../domain/UsageHistory.js"
import { AgentDir, resolveRootLink } from "./AgentDir.js"
import { FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"
import { webDataRootOf } from "./internal/webDataRoot.js"
import { type ScanRoot, scanTopLevel, sizeOfEntries, tierTotals } from "./internal/topLevel.js"
import { warn } from "./internal/warn.js"

export interface UsageHistoryOptions {
  /** The web host's extension data root (else the one resolution: `$PI_WEB_DATA_DIR`, else `~/.pi/web/data`). */
  readonly webDataRoot?: string | undefined
  /** Entries one record's size walks may visit together (default 200,000): a lower bound is recorded beyond. */
  readonly maxEntries?: number | undefined
  /** False: `record` does nothing (the history is still read). Default true. */
  readonly recording?: boolean | undefined
}

export const DEFAULT_USAGE_MAX_ENTRIES = 200_000
const MAX_DEPTH = 64

export interface UsageHistoryView {
  readonly path: string
  /** Oldest first. */
  readonly records: ReadonlyArray<UsageRecord>
  /** The file does not decode from this line on (it is then never rewritten); `null` when it all does. */
  readonly problem: { readonly line: number; readonly why: string } | null
}

/** What a writing operation calls when it is done. The default (no history in the stack) records nothing. */
export class UsageRecorder extends Context.Reference<UsageRecorder>()("pi-agent-storage/UsageRecorder", {
  defaultValue: (): { readonly record: (cause: UsageCause) => Effect.Effect<void> } => ({ record: () => Effect.void })
}) {}

export class UsageHistory extends Context.Tag("pi-agent-storage/UsageHistory")<UsageHistory, {
  readonly path: string
  /** Append a record per root that has none from the last hour. Never fails: a problem is a warning. */
  readonly record: (cause: UsageCause) => Effect.Effect<void>
  /** The records as they are on disk (read-only). */
  readonly read: () => Effect.Effect<UsageHistoryView>
}>() {
  static readonly make = (options: UsageHistoryOptions = {}): Effect.Effect<UsageHistory["Type"], never, FileSystem | Host | AgentDir> =>
    makeUsageHistory(options)

  /** The history and, recording into it, the `UsageRecorder` every writer of the stack calls. */
  static readonly layerWith = (options: UsageHistoryOptions = {}): Layer.Layer<UsageHistory | UsageRecorder, never, FileSystem | Host | AgentDir> =>
    Layer.effectContext(Effect.map(makeUsageHistory(options), (history) =>
      Context.make(UsageHistory, history).pipe(Context.add(UsageRecorder, { record: history.record }))))

  /** With the default options (recording, the one web data root). */
  static readonly layer: Layer.Layer<UsageHistory | UsageRecorder, never, FileSystem | Host | AgentDir> = Layer.suspend(() =>
    UsageHistory.layerWith()
  )
}

const makeUsageHistory = (options: UsageHistoryOptions) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    const host = yield* Host
    const agentDir = yield* AgentDir
    const path = NodePath.join(agentDir.path, ...USAGE_HISTORY_FILE)
    const stateDir = NodePath.dirname(path)
    const webDataRoot = webDataRootOf(host, options.webDataRoot).path
    const maxEntries = options.maxEntries ?? DEFAULT_USAGE_MAX_ENTRIES

    const readFile = fs.readFile(path, { maxBytes: USAGE_FILE_MAX_BYTES }).pipe(
      Effect.map((bytes) => ({ _tag: "Read" as const, ...decodeHistory(new TextDecoder("utf-8", { fatal: false }).decode(bytes)) })),
      Effect.catchAll((e) =>
        Effect.succeed(e.reason === "NotFound" ? { _tag: "Read" as const, records: [], problem: null } : { _tag: "Failed" as const, message: e.message })
      )
    )

    const read = (): Effect.Effect<UsageHistoryView> =>
      Effect.map(readFile, (r) =>
        r._tag === "Read"
          ? { path, records: [...r.records].sort((a, b) => a.at - b.at), problem: r.problem }
          : { path, records: [], problem: { line: 0, why: r.message } })

    /** Is `dir` a real directory (not a link to one)? */
    const isDirectory = (dir: string) => Effect.map(Effect.option(fs.lstat(dir)), (i) => i._tag === "Some" && i.value.type === "Directory")

    const record = (cause: UsageCause): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (options.recording === false) return
        // The history lives in the agent's own state/: recorded only where that is a real directory (never
        // created for it, never written through a link).
        if (!(yield* isDirectory(stateDir))) return
        const before = yield* readFile
        if (before._tag === "Failed") {
          return yield* warn({ _tag: "UsageHistoryNotRecorded", path, message: `the usage history ${path} could not be read (${before.message}); no usage record was added` })
        }
        if (before.problem !== null) {
          return yield* warn({
            _tag: "UsageHistoryNotRecorded",
            path,
            message: `the usage history ${path} does not decode at line ${before.problem.line} (${before.problem.why}); it is left as it is and no record is added (delete it to start a new one)`
          })
        }
        const now = yield* Clock.currentTimeMillis
        const roots: Array<ScanRoot> = []
        if (isRecordDue(before.records, "agent", now)) roots.push({ root: "agent", dir: agentDir.path })
        if (isRecordDue(before.records, "web", now)) {
          const dir = yield* resolveRootLink(fs, webDataRoot)
          if (yield* isDirectory(dir)) roots.push({ root: "web", dir })
        }
        if (roots.length === 0) return
        const scan = yield* scanTopLevel(fs, roots, { maxEntries, maxDepth: MAX_DEPTH })
        let records = before.records
        for (const { root } of roots) {
          const totals = tierTotals(scan.items, root)
          const mine = scan.items.filter((i) => i.root === root)
          const entry: UsageRecord = {
            v: 1,
            at: now,
            root: root as UsageRoot,
            cause,
            tiers: { config: totals.config.bytes, state: totals.state.bytes, cache: totals.cache.bytes, work: totals.work.bytes, other: totals.other.bytes },
            entries: sizeOfEntries(mine.map((i) => i.size)).entries,
            complete: mine.every((i) => i.size.complete)
          }
          records = appendRecord(records, entry, now)
        }
        yield* fs.writeFileAtomic(path, new TextEncoder().encode(encodeHistory(records)), { mode: 0o600 }).pipe(
          Effect.catchAll((e) => warn({ _tag: "UsageHistoryNotRecorded", path, message: `could not write the usage history ${path} (${e.message}); no usage record was added` }))
        )
      })

    return UsageHistory.of({ path, record, read })
  })
