/**
 * How well each tier is protected (docs/dashboard.md "Dashboard"): the state of every extension against the newest
 * snapshot (its directory in `<root>/<id>/agent/state/extensions/<ns>` or `<root>/<id>/web/<extId>/state`), the
 * config against the newest revision (files changed since it are not covered), cache and work not backed up
 * by design. Read-only: the extensions come from the storage map's kept scan, the snapshot's contents from `lstat`.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import type { LogEntry } from "../domain/ConfigHistory.js"
import type { HistoryStatus } from "../services/ConfigHistory.js"
import type { FileSystem } from "../services/FileSystem.js"
import type { SnapshotSummary } from "../services/StateBackups.js"
import type { StorageMap } from "../services/StorageMap.js"
import type { Coverage } from "./schemas.js"

type CoverageRow = typeof Coverage.Type

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

export const coverageOf = (input: {
  readonly fs: FileSystem["Type"]
  readonly map: StorageMap["Type"]
  readonly backupRoot: string
  /** Newest first (`StateBackups.list`). */
  readonly snapshots: ReadonlyArray<SnapshotSummary>
  readonly config: { readonly status: HistoryStatus | null; readonly newest: LogEntry | null; readonly changed: ReadonlyArray<string> }
}): Effect.Effect<ReadonlyArray<CoverageRow>> =>
  Effect.gen(function*() {
    const scan = yield* input.map.topLevel
    const extensions: Array<{ readonly name: string; readonly inSnapshot: ReadonlyArray<string> }> = []
    for (const item of scan.items) {
      if (!item.isDirectory) continue
      const agent = item.root === "agent" ? /^state\/extensions\/([^/]+)$/.exec(item.rel) : null
      const web = item.root === "web" ? /^([^/]+)\/state$/.exec(item.rel) : null
      if (agent !== null) extensions.push({ name: agent[1]!, inSnapshot: ["agent", "state", "extensions", agent[1]!] })
      if (web !== null) extensions.push({ name: `web:${web[1]!}`, inSnapshot: ["web", web[1]!, "state"] })
    }
    const newest = input.snapshots[0]
    const uncovered: Array<string> = []
    for (const ext of extensions) {
      const there = newest === undefined
        ? false
        : yield* Effect.map(Effect.option(input.fs.lstat(NodePath.join(input.backupRoot, newest.id, ...ext.inSnapshot))), (i) => i._tag === "Some" && i.value.type === "Directory")
      if (!there) uncovered.push(ext.name)
    }
    const what = `state of ${plural(extensions.length, "extension")}`
    const state: CoverageRow = newest === undefined
      ? { tier: "state", status: "unprotected", summary: `${what}: no snapshot yet`, uncovered, newestAt: null }
      : uncovered.length === 0
      ? { tier: "state", status: "protected", summary: `${what}: protected`, uncovered, newestAt: newest.createdAt }
      : {
        tier: "state",
        status: "partly",
        summary: `${what}: ${plural(uncovered.length, "extension has", "extensions have")} state the newest snapshot lacks`,
        uncovered,
        newestAt: newest.createdAt
      }
    const { status, newest: revision, changed } = input.config
    const newestAt = revision === null ? null : Date.parse(revision.date)
    const config: CoverageRow = status === null || status.head === null
      ? { tier: "config", status: "unprotected", summary: "config: not versioned yet", uncovered: [], newestAt: null }
      : status.dirty
      ? { tier: "config", status: "partly", summary: `config: ${plural(changed.length, "file")} changed since the newest revision`, uncovered: changed, newestAt }
      : { tier: "config", status: "protected", summary: "config: as in the newest revision", uncovered: [], newestAt }
    return [
      state,
      config,
      { tier: "cache", status: "not-backed-up", summary: "cache: rebuildable, not backed up by design", uncovered: [], newestAt: null },
      { tier: "work", status: "not-backed-up", summary: "work runs: transient, not backed up by design", uncovered: [], newestAt: null }
    ]
  })
