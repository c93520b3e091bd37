/**
 * The one scan of where the bytes are (docs/dashboard.md "Dashboard"): the top-level items of the agent dir (its root
 * entries, with `state/`, `cache/` and `work/` one level down and `extensions/` one more) and of the web data
 * root (`<extId>/<entry>`), each with its tier, measured by the port's bounded size walk under one shared
 * entry budget. The treemap groups the items per tier; the usage history sums them. Read-only: `lstat`,
 * `readDirectory` and `measureTree` only, never through a link (a link is an item of its own, never listed).
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import { EXPANDED_ROOT_DIRS, type TopLevelItem, tierOfExtensionEntry, tierOfRootEntry } from "../../domain/StorageMap.js"
import type { UsageRoot, UsageTier } from "../../domain/UsageHistory.js"
import type { FileSystemError } from "../../domain/Errors.js"
import type { DirEntry, FileSystem, TreeMeasure } from "../FileSystem.js"

/** A size from a bounded walk. `bytes` is what the walk counts; `complete` false makes both a lower bound. */
export interface NodeSize {
  /** What the node takes, as the size walk counts it (`TreeMeasure.bytes`; disk usage where the walk reports it). */
  readonly bytes: number
  /** The files' lengths (`ls -l`, `du --apparent-size`). */
  readonly apparentBytes: number
  /** Names below the node (files, directories, links; a hard-linked file once per name), the node itself not counted. */
  readonly entries: number
  readonly complete: boolean
}

/**
 * A walk's answer as a node size: the ONE place that reads `TreeMeasure`. The port's walk counts the files'
 * lengths today, so both figures are that; when it reports allocated blocks beside them, `bytes` takes those
 * here and the treemap and the history follow.
 */
export const nodeSizeOf = (m: TreeMeasure): NodeSize => ({ bytes: m.bytes, apparentBytes: m.bytes, entries: m.entries, complete: m.complete })

/** An Inventory size (a run's, from `listRuns`) as a node size: the other place sizes come from, beside `nodeSizeOf`. */
export const nodeSizeOfInventory = (s: { readonly bytes: number; readonly entries: number; readonly complete: boolean }): NodeSize =>
  ({ bytes: s.bytes, apparentBytes: s.bytes, entries: s.entries, complete: s.complete })

export const EMPTY_SIZE: NodeSize = { bytes: 0, apparentBytes: 0, entries: 0, complete: true }
export const UNMEASURED_SIZE: NodeSize = { bytes: 0, apparentBytes: 0, entries: 0, complete: false }

export const addSizes = (sizes: ReadonlyArray<NodeSize>): NodeSize =>
  sizes.reduce((a, b) => ({
    bytes: a.bytes + b.bytes,
    apparentBytes: a.apparentBytes + b.apparentBytes,
    entries: a.entries + b.entries,
    complete: a.complete && b.complete
  }), EMPTY_SIZE)

export interface ScanBudgetOptions {
  readonly maxEntries: number
  readonly maxDepth: number
}

/** One call's shared walk budget and the paths it could not read. */
export class SizeWalk {
  remaining: number
  readonly problems: Array<{ readonly path: string; readonly message: string }> = []
  constructor(readonly fs: FileSystem["Type"], readonly budget: ScanBudgetOptions) {
    this.remaining = budget.maxEntries
  }

  /** The bounded size of a tree; a failed walk is an incomplete zero, reported in `problems`. */
  measure(path: string): Effect.Effect<NodeSize> {
    return this.fs.measureTree(path, { maxEntries: Math.max(0, this.remaining), maxDepth: this.budget.maxDepth }).pipe(
      Effect.map((m) => {
        this.remaining -= m.entries
        return nodeSizeOf(m)
      }),
      Effect.catchAll((e) => Effect.sync(() => {
        this.problems.push({ path, message: e.message })
        return UNMEASURED_SIZE
      }))
    )
  }

  /** A directory's entries; a failure is reported and lists nothing (missing: nothing, silently). */
  list(path: string): Effect.Effect<ReadonlyArray<DirEntry>> {
    return this.fs.readDirectory(path).pipe(
      Effect.map((entries) => [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))),
      Effect.catchAll((e: FileSystemError) => Effect.sync(() => {
        if (e.reason !== "NotFound") this.problems.push({ path, message: e.message })
        return []
      }))
    )
  }
}

export interface MeasuredItem extends TopLevelItem {
  readonly size: NodeSize
}

/** The top-level items of the agent dir (not measured). */
const agentItems = (walk: SizeWalk, agentDir: string): Effect.Effect<ReadonlyArray<TopLevelItem>> =>
  Effect.gen(function*() {
    const items: Array<TopLevelItem> = []
    const item = (tier: UsageTier, rel: string, entry: DirEntry) => items.push({ root: "agent", tier, rel, isDirectory: entry.type === "Directory" })
    for (const entry of yield* walk.list(agentDir)) {
      const tier = tierOfRootEntry(entry.name)
      if (!(EXPANDED_ROOT_DIRS.has(entry.name) && entry.type === "Directory")) {
        item(tier, entry.name, entry)
        continue
      }
      for (const child of yield* walk.list(NodePath.join(agentDir, entry.name))) {
        const rel = `${entry.name}/${child.name}`
        if (entry.name !== "work" && child.name === "extensions" && child.type === "Directory") {
          for (const ext of yield* walk.list(NodePath.join(agentDir, entry.name, child.name))) item(tier, `${rel}/${ext.name}`, ext)
        } else {
          item(tier, rel, child)
        }
      }
    }
    return items
  })

/** The top-level items of the web data root: `<extId>/<entry>` by tier; a file in the root is "other". */
const webItems = (walk: SizeWalk, webDataRoot: string): Effect.Effect<ReadonlyArray<TopLevelItem>> =>
  Effect.gen(function*() {
    const items: Array<TopLevelItem> = []
    for (const ext of yield* walk.list(webDataRoot)) {
      if (ext.type !== "Directory") {
        items.push({ root: "web", tier: "other", rel: ext.name, isDirectory: false })
        continue
      }
      for (const entry of yield* walk.list(NodePath.join(webDataRoot, ext.name))) {
        const isDirectory = entry.type === "Directory"
        items.push({ root: "web", tier: tierOfExtensionEntry(entry.name, isDirectory), rel: `${ext.name}/${entry.name}`, isDirectory })
      }
    }
    return items
  })

export interface TopLevelScan {
  readonly items: ReadonlyArray<MeasuredItem>
  readonly problems: ReadonlyArray<{ readonly path: string; readonly message: string }>
  /** Entries the size walks visited. */
  readonly entries: number
  /** Some walk was cut short by the budget (or failed): some sizes are lower bounds. */
  readonly complete: boolean
}

/** A root to scan: the agent dir or the web data root. */
export interface ScanRoot {
  readonly root: UsageRoot
  readonly dir: string
}

/** List and measure the top-level items of `roots` under one budget, in the order given. */
export const scanTopLevel = (fs: FileSystem["Type"], roots: ReadonlyArray<ScanRoot>, budget: ScanBudgetOptions): Effect.Effect<TopLevelScan> =>
  Effect.gen(function*() {
    const walk = new SizeWalk(fs, budget)
    const items: Array<MeasuredItem> = []
    for (const { root, dir } of roots) {
      const listed = root === "agent" ? yield* agentItems(walk, dir) : yield* webItems(walk, dir)
      for (const item of listed) items.push({ ...item, size: yield* walk.measure(NodePath.join(dir, ...item.rel.split("/"))) })
    }
    return {
      items,
      problems: walk.problems,
      entries: budget.maxEntries - walk.remaining,
      complete: walk.problems.length === 0 && items.every((i) => i.size.complete)
    }
  })

/** The size of a directory from its entries' sizes: each entry counts itself too. */
export const sizeOfEntries = (sizes: ReadonlyArray<NodeSize>): NodeSize => {
  const sum = addSizes(sizes)
  return { ...sum, entries: sum.entries + sizes.length }
}

/** Bytes per tier of one root's items. */
export const tierTotals = (items: ReadonlyArray<MeasuredItem>, root: UsageRoot): Record<UsageTier, NodeSize> => {
  const totals: Record<UsageTier, NodeSize> = { config: EMPTY_SIZE, state: EMPTY_SIZE, cache: EMPTY_SIZE, work: EMPTY_SIZE, other: EMPTY_SIZE }
  for (const i of items) if (i.root === root) totals[i.tier] = addSizes([totals[i.tier], i.size])
  return totals
}
