/**
 * What the agent keeps, for people at a shell (docs/cli.md "CLI quick tour"): a bounded, read-only inventory of the work root,
 * the agent extensions' tiers and the web-host extensions' tiers under the web data root, and a listing of runs. It only calls `lstat`, `readDirectory`,
 * `readFile` and `measureTree` (plus the Host's pid probes for lease verdicts): it never writes anything.
 *
 * `summary` and `listRuns` are the read model's scan (src/services/internal/readModel.ts: the same tenant
 * items the pruner plans with, so `pi-storage work ls` says "active" exactly when a prune would leave the run
 * alone) plus bounded size walks, interpreted by the pure `summarize` and `runList`.
 *
 * Sizes are disk usage beside apparent size, as `du` counts them (FileSystem `TreeMeasure`). Every tenant (and
 * every extension directory) is measured within an entry budget of its own, so one big tenant never leaves
 * its neighbours unmeasured; a tenant's runs share its budget, newest first, and a run the budget ran out
 * before is "not measured" (`measured: false`), never a number it is not. Whatever stopped a report early is
 * in its `stoppedBy` (domain/StoppedBy.ts).
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { FileSystemError, InvalidSegment, UnsafeRootReason } from "../domain/Errors.js"
import type { RunKind } from "../domain/Formats.js"
import { DEFAULT_RETENTION } from "../domain/Retention.js"
import { decodeSegment, misnamedWhy } from "../domain/Segment.js"
import { AgentDir, resolveRootLink } from "./AgentDir.js"
import { FileSystem, type TreeMeasure, type WalkBudget } from "./FileSystem.js"
import { Host } from "./Host.js"
import { type Deps, readOnlyDepsFromContext } from "./internal/deps.js"
import {
  type AgentDirFacts,
  reusableMeasure,
  type RunMeasure,
  type SafetyFact,
  scanAgentDir,
  type TenantFacts,
  type TenantMeasure,
  tenantsOf,
  type TenantItem,
  type WorkStray
} from "./internal/readModel.js"
import { type Holder, liveHolders, runUse } from "./internal/runFacts.js"
import { aFileType, fileTypeWord } from "../domain/FileTypeWords.js"
import { isDescendable } from "../domain/RootSafety.js"
import { type InventoryProblem, scanProblem, sizeUnmeasured } from "../domain/ReportProblems.js"
import { WEB_RESTORE_ASIDE_DIR } from "../domain/StateSnapshot.js"
import type { TierName } from "../domain/Tiers.js"
import { TIER_NAMES, tierPaths } from "../domain/WebPaths.js"
import { webDataRootOf } from "./internal/webDataRoot.js"
import { DEFAULT_SCAN_MAX_ENTRIES, tallyOf } from "./internal/readModel.js"
import { inventoryDepthStopped, inventoryEntriesStopped, listingStopped, scanEntriesStopped, type StoppedBy } from "../domain/StoppedBy.js"

/** Whether an owned run is held, and its last use (runFacts.ts, where the views' tally judges it too). */
export { runUse }

export interface InventoryOptions {
  /**
   * Entries the size walks of one tenant may visit (its runs share it, newest first), and of one extension
   * directory (default 100,000, a prune's budget; CLI `--max-entries`).
   */
  readonly maxEntries?: number
  /** Size walks stop below this depth (default 64; CLI `--max-depth`). */
  readonly maxDepth?: number
  /** Entries examined per tenant before the listing stops (`truncated`; default 10,000; CLI `--max-scanned-runs`). */
  readonly maxRunsPerTenant?: number
  /** The web host's extension data root whose extensions are listed: else `$PI_WEB_DATA_DIR`, else `~/.pi/web/data` (TD1). */
  readonly webDataRoot?: string
  /** Entries the scan reads in all (directory listings and leases; default 100,000; CLI `--max-scan-entries`). */
  readonly maxScanEntries?: number
}

/**
 * A size from a bounded walk, as `du` counts it (FileSystem `TreeMeasure`): disk usage and apparent size,
 * lower bounds when `complete` is false. `measured: false`: no walk counted it (the tenant's budget ran out
 * before its turn, or its walk failed: then `errors` says why); its numbers are then 0 and say nothing.
 */
export interface Size {
  /** Disk usage: allocated blocks × 512 (`du -s -B1`). */
  readonly bytes: number
  /** Apparent size (`du -sb`). */
  readonly apparentBytes: number
  /** Names below the measured directory (files, directories, links; a hard-linked file once per name, as the entry budget counts them). */
  readonly entries: number
  readonly complete: boolean
  readonly measured: boolean
}

export interface TenantSummary {
  readonly category: string
  readonly tenant: string
  /** Owned runs. */
  readonly runs: number
  readonly active: number
  readonly inactive: number
  /** Entries of the tenant the library does not own (never pruned). */
  readonly unowned: number
  /** The whole tenant directory (runs, unowned entries, unfinished `.trash`). */
  readonly size: Size
  /** Oldest last use (epoch ms) among owned runs; `null` when there is none. */
  readonly oldestLastUsedAt: number | null
  /**
   * Its counts are lower bounds: more run candidates than `maxRunsPerTenant`, or some listed but not examined
   * because the scan's entry budget (`maxScanEntries`) ran out first (`stoppedBy` says which).
   */
  readonly truncated: boolean
}

/** An agent extension (docs/tiers.md "Extension storage (agent side)"): its tiers under the agent dir. */
export interface ExtensionSummary {
  readonly namespace: string
  /** `config/extensions/<ns>/`; `null` when absent. */
  readonly config: Size | null
  /** `state/extensions/<ns>/`; `null` when absent. */
  readonly state: Size | null
  /** `cache/extensions/<ns>/`; `null` when absent. */
  readonly cache: Size | null
}

/** A web-host extension (docs/tiers.md "Extension data tiers (web host)"): `data/<extId>/` under the web data root. */
export interface WebExtensionSummary {
  /** The directory's name under the web data root (the doctor checks every one, an id or not). */
  readonly extId: string
  readonly path: string
  /** `config/`, `state/`, `cache/` of it; `null` when absent. */
  readonly config: Size | null
  readonly state: Size | null
  readonly cache: Size | null
}

/** What a scan or size walk could not read (`Unreadable`, `NotListed`, `SizeUnmeasured`; see `domain/ReportProblems.ts`). */
export type { InventoryProblem }

export interface InventoryReport {
  /** The agent dir read (a symlink at the given path resolved, once, by AgentDir). */
  readonly agentDir: string
  /** The path as given when it is a symlink to `agentDir`, else `null`. */
  readonly linkedFrom: string | null
  /** False when the agent dir does not exist (or is not a directory): nothing else was read. */
  readonly exists: boolean
  /** The agent dir path exists but is not a directory (a regular file, a symlink …): its file type in words. */
  readonly notADirectory: string | null
  readonly workRoot: string
  /** When the scan ran (epoch ms, from the Clock), so ages can be rendered against it. */
  readonly scannedAt: number
  readonly tenants: ReadonlyArray<TenantSummary>
  /** Agent extensions: a directory under `config/extensions/`, `state/extensions/` or `cache/extensions/`. */
  readonly extensions: ReadonlyArray<ExtensionSummary>
  /** The web data root looked at (TD1; a symlink at its own path resolved), whatever the agent dir holds. */
  readonly webDataRoot: string
  /** Web-host extensions: every directory under the web data root (the ones the doctor checks). */
  readonly webExtensions: ReadonlyArray<WebExtensionSummary>
  /** A per-tenant entry cap was hit somewhere, or the scan's own budget (`stoppedBy` says which and how much). */
  readonly truncated: boolean
  /** Some size is not exact (a lower bound, or not measured: `stoppedBy` names the bound). */
  readonly incomplete: boolean
  /** Each bound that stopped this report early: how much it left, and the option or flag that raises it. */
  readonly stoppedBy: ReadonlyArray<StoppedBy>
  /** Entries that could not be read (the scan goes on without them). */
  readonly errors: ReadonlyArray<InventoryProblem>
}

/** active: a live lease (or one that cannot be disproved); released: stamped `releasedAt`; idle: neither. */
export type RunState = "active" | "released" | "idle"

export interface RunListing {
  readonly category: string
  readonly tenant: string
  readonly runId: string
  readonly path: string
  readonly kind: RunKind
  readonly state: RunState
  readonly createdAt: number
  readonly releasedAt: number | null
  readonly lastUsedAt: number
  /** Lease files present, live or dead. */
  readonly leases: number
  /** Live holders of an active run (`host`, `pid`, `since`); empty otherwise. */
  readonly holders: ReadonlyArray<Holder>
  readonly size: Size
}

export interface UnownedListing {
  readonly category: string
  readonly tenant: string
  readonly name: string
  readonly path: string
  readonly why: string
}

export interface RunList {
  readonly agentDir: string
  /** As in `InventoryReport`: the given path when it is a symlink to `agentDir`. */
  readonly linkedFrom: string | null
  /** As in `InventoryReport`: the agent dir is not a directory. */
  readonly notADirectory: string | null
  readonly scannedAt: number
  /** Newest last use first, per tenant; tenants in name order. */
  readonly runs: ReadonlyArray<RunListing>
  readonly unowned: ReadonlyArray<UnownedListing>
  /** A tenant held more entries than `maxRunsPerTenant`, or the scan's own budget ran out (`stoppedBy`). */
  readonly truncated: boolean
  /** Some run's size is not exact (a lower bound, or not measured: `stoppedBy` names the bound). */
  readonly incomplete: boolean
  readonly stoppedBy: ReadonlyArray<StoppedBy>
  readonly errors: ReadonlyArray<InventoryProblem>
  /**
   * The work root, categories and tenants the listing did not go into, each with why (a symlink, never followed;
   * not a directory; a file where a category or tenant belongs), in the shape and order `work prune --all`
   * refuses with (`notLookedInto`). A directory only unsafe to prune is read: its runs are listed.
   */
  readonly notListed: ReadonlyArray<RefusedTarget>
  /** The filter named a category, or a tenant of an existing category, that is not there (nothing was listed). */
  readonly missing?: "category" | "tenant"
}

export interface TenantAddress {
  readonly category: string
  readonly tenant: string
}

/** A work root, category or tenant entry `work prune --all` will not go through. */
export interface RefusedTarget {
  readonly path: string
  /** `the work root`, `category tools`, `tenant tools/bash`. */
  readonly what: string
  /** The category and tenant names it stands for (`*` for all of a level). */
  readonly category: string
  readonly tenant: string
  /** Its file type in words (`symlink`, `regular file`). */
  readonly type: string
  /** WR10's first problem with it (`rootSafetyProblems`, the rule the doctor reports and the pruner refuses with). */
  readonly reason: UnsafeRootReason
  readonly detail: string
}

/**
 * A category or tenant directory whose name is not a valid segment (WR2): the library never makes one, so
 * nothing under it is a run it could have made, and nothing under it is pruned. Reported, never skipped in
 * silence (`status` lists it).
 */
export interface MisnamedTarget {
  readonly path: string
  /** `category Tools`, `tenant tools/Bad_Name`. */
  readonly what: string
  /** The category and tenant names it stands for (`*` for a whole category). */
  readonly category: string
  readonly tenant: string
  /** Which WR2 rule the name breaks, in words. */
  readonly detail: string
}

export interface PruneTargets {
  readonly tenants: ReadonlyArray<TenantAddress>
  readonly refused: ReadonlyArray<RefusedTarget>
  /** Directories where a category or tenant belongs whose names the library never makes (not pruned). */
  readonly misnamed: ReadonlyArray<MisnamedTarget>
  /** The agent dir is not a directory (its type in words), else `null`. */
  readonly notADirectory: string | null
}

export interface RunFilter {
  readonly category?: string | undefined
  readonly tenant?: string | undefined
}

/**
 * Which part of `filter` names nothing in the work tree read (a tenant only once its category is there); never
 * said of a read its budget cut short, which may not have come to it.
 */
const missingOf = (facts: AgentDirFacts, filter: RunFilter): "category" | "tenant" | undefined => {
  if (filter.category === undefined || facts.truncated || facts.status._tag !== "Directory") return undefined
  // A category or tenant that could not be read is reported as such (`errors`), never as absent.
  if (facts.problems.length > 0) return undefined
  // Behind a work root or category the scan did not go into (`notListed` names it), nothing is known absent.
  if (facts.work !== null && !isDescendable(facts.work.root.info)) return undefined
  const category = facts.work?.categories.find((c) => c.name === filter.category)
  if (category === undefined) return "category"
  if (filter.tenant === undefined || !isDescendable(category.safety.info)) return undefined
  return category.tenants.some((t) => t.tenant === filter.tenant) ? undefined : "tenant"
}

const DEFAULTS = {
  maxEntries: DEFAULT_RETENTION.maxEntries,
  maxDepth: DEFAULT_RETENTION.maxDepth,
  maxRunsPerTenant: DEFAULT_RETENTION.maxScannedRuns,
  maxScanEntries: DEFAULT_SCAN_MAX_ENTRIES
}

/** The limits one call ran with. */
export type InventoryLimits = typeof DEFAULTS

/** The budget `summary` measures each tenant within (a scan that measures tenants for it uses this one). */
export const tenantSizeBudget = (options?: InventoryOptions): WalkBudget => {
  const o = { ...DEFAULTS, ...options }
  return { maxEntries: o.maxEntries, maxDepth: o.maxDepth }
}

/** What stopped the size walks of one call: sizes cut short by the entry budget or by depth, sizes never walked. */
export interface WalkStops {
  readonly byEntries: number
  readonly byDepth: number
  readonly notMeasured: number
}

const NO_STOPS: WalkStops = { byEntries: 0, byDepth: 0, notMeasured: 0 }

/**
 * Size walks of independent groups at once (`measureAll`): two keep both cores of a small machine busy while
 * a tenant's walk runs on the thread pool, and leave the rest of the pool to the harness.
 */
const MEASURE_CONCURRENCY = 2

/** One call's size walks: a budget per tenant (`budget()`), what stopped them, and their problems. */
class Walk {
  readonly errors: Array<InventoryProblem> = []
  readonly stops = { byEntries: 0, byDepth: 0, notMeasured: 0 }
  constructor(readonly deps: Deps, readonly options: InventoryLimits) {}

  /** A fresh entry budget: one per tenant, one per extension directory. */
  budget(): { remaining: number } {
    return { remaining: this.options.maxEntries }
  }

  /**
   * Bounded size of a tree within what is left of `budget`: not measured once it is spent, and when the walk
   * fails (read-only: the failure is a reported problem, `SizeUnmeasured`).
   */
  measure(path: string, budget: { remaining: number }, errors: Array<InventoryProblem> = this.errors, known?: RunMeasure | TenantMeasure): Effect.Effect<Size> {
    const given = budget.remaining
    if (given <= 0) {
      this.stops.notMeasured++
      return Effect.succeed(UNMEASURED)
    }
    const walk = { maxEntries: given, maxDepth: this.options.maxDepth }
    // What the scan measured already, when it is what this walk answers: a run's size read with its manifest
    // (`reusableMeasure`), a tenant's walk with this very budget.
    const measured = (): Effect.Effect<TreeMeasure, FileSystemError> => {
      if (known === undefined) return this.deps.fs.measureTree(path, walk)
      if ("answer" in known) {
        const same = known.budget.maxEntries === walk.maxEntries && known.budget.maxDepth === walk.maxDepth
        return same ? known.answer : this.deps.fs.measureTree(path, walk)
      }
      const reused = reusableMeasure(known, given)
      return reused !== undefined ? Effect.succeed(reused) : this.deps.fs.measureTree(path, walk)
    }
    return measured().pipe(
      Effect.map((m): Size => {
        budget.remaining -= m.entries
        if (!m.complete) {
          if (m.entries >= given) this.stops.byEntries++
          else this.stops.byDepth++
        }
        return { bytes: m.bytes, apparentBytes: m.apparentBytes, entries: m.entries, complete: m.complete, measured: true }
      }),
      Effect.catchAll((e) =>
        Effect.sync(() => {
          errors.push(sizeUnmeasured(path, e))
          return UNMEASURED
        })
      )
    )
  }
}

/**
 * The listing row of an owned run, not yet measured (`listRuns` sets its size: each run is one object from
 * the scan to the report, where a copy with the size was 40,000 more objects at `work ls`' peak). Pure: the
 * facts carry the manifest, leases and times.
 */
export const runRow = (address: TenantAddress, item: Extract<TenantItem, { _tag: "Run" }>): RunListing => {
  const m = item.manifest
  const releasedAt = "releasedAt" in m && m.releasedAt !== undefined ? m.releasedAt : null
  const { active, lastUsedAt: used } = runUse(item)
  return {
    category: address.category,
    tenant: address.tenant,
    runId: item.name,
    path: item.path,
    kind: "kind" in m ? m.kind : "named",
    state: active ? "active" : releasedAt !== null ? "released" : "idle",
    createdAt: m.createdAt,
    releasedAt,
    lastUsedAt: used,
    leases: item.leases.leases.length,
    holders: active ? liveHolders(item.leases) : [],
    size: UNMEASURED
  }
}

/** A row `runRow` made, given its size; nothing else writes a row. */
const setSize = (row: RunListing, size: Size): void => {
  ;(row as { size: Size }).size = size
}

/** The tenants a listing shows: real directories that were read (a symlinked tenant is never followed). */
const listedTenants = (facts: AgentDirFacts): ReadonlyArray<TenantFacts & { readonly items: NonNullable<TenantFacts["items"]> }> =>
  tenantsOf(facts.work).flatMap((t) => (t.items === null ? [] : [{ ...t, items: t.items }]))

/** What the scan could not read, as report problems. */
const problemsOf = (facts: AgentDirFacts): Array<InventoryProblem> => facts.problems.map((p) => scanProblem(p.path, p.error))

const notADirectoryOf = (facts: AgentDirFacts): string | null =>
  facts.status._tag === "NotADirectory" ? fileTypeWord(facts.status.type) : null

/** Measured sizes by path (`measure` order decides who gets the shared budget). */
export type SizeOf = (path: string) => Size

const UNMEASURED: Size = { bytes: 0, apparentBytes: 0, entries: 0, complete: false, measured: false }

/**
 * Each bound that stopped a report early (domain/StoppedBy.ts): tenants listed in part (`maxRunsPerTenant`),
 * the scan's own budget, and the size walks' entry and depth budgets. Pure.
 */
const stoppedByOf = (
  facts: AgentDirFacts,
  limits: InventoryLimits,
  stops: WalkStops
): ReadonlyArray<StoppedBy> => {
  const out: Array<StoppedBy> = []
  const cut = listedTenants(facts).filter((t) => t.items.truncated)
  if (cut.length > 0) {
    const left = cut.reduce((sum, t) => sum + t.items.candidates - limits.maxRunsPerTenant, 0)
    out.push(listingStopped(limits.maxRunsPerTenant, left, cut.length))
  }
  if (facts.truncated) out.push(scanEntriesStopped(facts.maxEntries, facts.unread))
  if (stops.byEntries + stops.notMeasured > 0) out.push(inventoryEntriesStopped(limits.maxEntries, stops.byEntries + stops.notMeasured, stops.notMeasured))
  if (stops.byDepth > 0) out.push(inventoryDepthStopped(limits.maxDepth, stops.byDepth))
  return out
}

/** The tier directories of an agent extension. */
export interface ExtensionDirs {
  readonly config: string
  readonly state: string
  readonly cache: string
}

/** The agent extensions of the facts, in name order, each with the tier directories it has. */
export const agentExtensionsOf = (facts: AgentDirFacts): ReadonlyArray<{ readonly namespace: string; readonly tiers: ReadonlyArray<TierName> }> => {
  const { config, state, cache } = facts.extensions
  return [...new Set([...config, ...state, ...cache])].sort().map((namespace) => ({
    namespace,
    tiers: TIER_NAMES.filter((tier) => facts.extensions[tier].includes(namespace))
  }))
}

/** The web extensions of the facts (the directories the doctor checks, the library's own restore-aside left out), each with its tiers. */
export const webExtensionsOf = (facts: AgentDirFacts): ReadonlyArray<{ readonly extId: string; readonly tiers: ReadonlyArray<TierName> }> =>
  (facts.webData?.extensions ?? [])
    .filter((e) => e.id !== WEB_RESTORE_ASIDE_DIR)
    .map((e) => ({ extId: e.id, tiers: TIER_NAMES.filter((tier) => e.entries.some((x) => x.name === tier && x.type === "Directory")) }))

/** `summary` over the facts and the measured sizes. Pure. */
export const summarize = (input: {
  readonly facts: AgentDirFacts
  readonly linkedFrom: string | null
  readonly workRoot: string
  readonly scannedAt: number
  readonly sizeOf: SizeOf
  readonly extensionDirs: (namespace: string) => ExtensionDirs
  /** Where the web data root was looked at (`facts.webData.root`, else the root given). */
  readonly webDataRoot: string
  readonly measureErrors: ReadonlyArray<InventoryProblem>
  /** The limits the call ran with, and what stopped its size walks (`stoppedBy`). */
  readonly limits?: InventoryLimits | undefined
  readonly stops?: WalkStops | undefined
}): InventoryReport => {
  const { facts } = input
  // The web data root lies outside the agent dir: its extensions are listed whether the agent dir exists or not.
  const webExtensions = webExtensionsOf(facts).map(({ extId, tiers }): WebExtensionSummary => {
    const dirs = tierPaths(input.webDataRoot, extId)
    const size = (tier: TierName) => (tiers.includes(tier) ? input.sizeOf(dirs[`${tier}Dir`]) : null)
    return { extId, path: dirs.extensionDir, config: size("config"), state: size("state"), cache: size("cache") }
  })
  const tierSizes = (e: { readonly config: Size | null; readonly state: Size | null; readonly cache: Size | null }) =>
    [e.config, e.state, e.cache].filter((x): x is Size => x !== null)
  const webSizes = webExtensions.flatMap(tierSizes)
  const stoppedBy = stoppedByOf(facts, input.limits ?? DEFAULTS, input.stops ?? NO_STOPS)
  const base = {
    agentDir: facts.path,
    linkedFrom: input.linkedFrom,
    workRoot: input.workRoot,
    scannedAt: input.scannedAt,
    notADirectory: notADirectoryOf(facts),
    webDataRoot: input.webDataRoot,
    webExtensions
  }
  if (facts.status._tag !== "Directory") {
    return {
      ...base,
      exists: false,
      tenants: [],
      extensions: [],
      truncated: facts.truncated,
      incomplete: webSizes.some((size) => !size.complete),
      stoppedBy,
      errors: [...problemsOf(facts), ...input.measureErrors]
    }
  }
  const tenants = listedTenants(facts).map((t): TenantSummary => {
    // Every owned run is in the tally, kept as an item or not (a view's noteworthy runs, ScanOptions.runItems).
    const { runs, active, oldestLastUsedAt: oldest } = t.items.tally ?? tallyOf(t.items.items)
    let unowned = 0
    for (const item of t.items.items) if (item._tag === "Unowned") unowned++
    return {
      category: t.category,
      tenant: t.tenant,
      runs,
      active,
      inactive: runs - active,
      unowned,
      size: input.sizeOf(t.path),
      oldestLastUsedAt: oldest,
      truncated: t.items.truncated || t.items.unread > 0
    }
  })
  const extensions = agentExtensionsOf(facts).map(({ namespace, tiers }): ExtensionSummary => {
    const dirs = input.extensionDirs(namespace)
    const size = (tier: TierName) => (tiers.includes(tier) ? input.sizeOf(dirs[tier]) : null)
    return { namespace, config: size("config"), state: size("state"), cache: size("cache") }
  })
  const sizes = [...tenants.map((t) => t.size), ...extensions.flatMap(tierSizes), ...webSizes]
  return {
    ...base,
    exists: true,
    tenants,
    extensions,
    truncated: facts.truncated || tenants.some((t) => t.truncated),
    incomplete: sizes.some((size) => !size.complete),
    stoppedBy,
    errors: [...problemsOf(facts), ...input.measureErrors]
  }
}

/** `listRuns`' rows: owned runs newest last use first per tenant (tenants in name order), and the unowned entries. */
export interface RunRows {
  readonly runs: ReadonlyArray<RunListing>
  readonly unowned: ReadonlyArray<UnownedListing>
}

/**
 * `runRows`' owned-run rows of one tenant, in name order, when made as the scan judged each run
 * (`ScanOptions.visitRun`, whose facts then keep no run items), keyed by `category/tenant`.
 */
export type RowsByTenant = ReadonlyMap<string, ReadonlyArray<RunListing>>

const tenantKey = (t: TenantAddress): string => `${t.category}/${t.tenant}`

/**
 * The rows ordered (newest last use first per tenant, tenants in name order) and the unowned entries of the
 * facts. The rows are `made`'s, as the scan judged each run; without it, those of the facts' run items, every
 * owned run only when the scan kept them all (`runItems: "all"`; the doctor's facts keep only noteworthy runs).
 * Pure.
 */
export const runRows = (facts: AgentDirFacts, made?: RowsByTenant): RunRows => {
  const runs: Array<RunListing> = []
  const unowned: Array<UnownedListing> = []
  for (const t of listedTenants(facts)) {
    const tenantRuns = made === undefined ? [] : [...(made.get(tenantKey(t)) ?? [])]
    for (const item of t.items.items) {
      if (item._tag === "Unowned") unowned.push({ category: t.category, tenant: t.tenant, name: item.name, path: item.path, why: item.why })
      else if (item._tag === "Run" && made === undefined) tenantRuns.push(runRow(t, item))
    }
    tenantRuns.sort((a, b) => b.lastUsedAt - a.lastUsedAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0))
    for (const r of tenantRuns) runs.push(r)
  }
  return { runs, unowned }
}

/** A row given its size, as a copy written field by field (a spread with one more field is a hidden class per row). */
const withSize = (r: RunListing, size: Size): RunListing => ({
  category: r.category,
  tenant: r.tenant,
  runId: r.runId,
  path: r.path,
  kind: r.kind,
  state: r.state,
  createdAt: r.createdAt,
  releasedAt: r.releasedAt,
  lastUsedAt: r.lastUsedAt,
  leases: r.leases,
  holders: r.holders,
  size
}) satisfies Required<RunListing>

/**
 * `listRuns` over the facts: its rows (`runRows(facts)` when not given), newest last use first per tenant. With
 * `sizeOf`, each row is a copy with that size; without, the rows carry their sizes already (`listRuns` sets them
 * in place: one object per run). Pure.
 */
export const runList = (input: {
  readonly facts: AgentDirFacts
  readonly linkedFrom: string | null
  readonly scannedAt: number
  readonly sizeOf?: SizeOf | undefined
  readonly measureErrors: ReadonlyArray<InventoryProblem>
  readonly limits?: InventoryLimits | undefined
  readonly stops?: WalkStops | undefined
  readonly rows?: RunRows | undefined
}): RunList => {
  const { facts, sizeOf } = input
  const rows = input.rows ?? runRows(facts)
  const runs = sizeOf === undefined ? rows.runs : rows.runs.map((r) => withSize(r, sizeOf(r.path)))
  return {
    agentDir: facts.path,
    linkedFrom: input.linkedFrom,
    notADirectory: notADirectoryOf(facts),
    scannedAt: input.scannedAt,
    runs,
    unowned: rows.unowned,
    truncated: facts.truncated || listedTenants(facts).some((t) => t.items.truncated),
    incomplete: runs.some((r) => !r.size.complete),
    stoppedBy: stoppedByOf(facts, input.limits ?? DEFAULTS, input.stops ?? NO_STOPS),
    errors: [...problemsOf(facts), ...input.measureErrors],
    notListed: notLookedInto(facts)
  }
}

/**
 * The work root, categories and tenants the scan did not go into (`isDescendable`, the read model's own test: a
 * symlink or anything not a directory), and the files where a category or tenant belongs, in the shape and the
 * order `work prune --all` refuses them with (`byTargetAddress`). A directory that is only unsafe to prune
 * (foreign-owned, writable by others) is read, and its runs listed. Pure.
 */
export const notLookedInto = (facts: AgentDirFacts): ReadonlyArray<RefusedTarget> => {
  const work = facts.work
  if (work === null) return []
  const out: Array<RefusedTarget> = []
  const add = (safety: SafetyFact, what: string, category: string, tenant: string) => {
    if (isDescendable(safety.info)) return
    const refused = refusedOf(safety, what, category, tenant)
    if (refused !== null) out.push(refused)
  }
  add(work.root, "the work root", "*", "*")
  for (const stray of work.strays) out.push(strayTarget(work.root.path, stray))
  for (const category of work.categories) {
    add(category.safety, `category ${category.name}`, category.name, "*")
    for (const t of category.tenants) add(t.safety, `tenant ${t.category}/${t.tenant}`, t.category, t.tenant)
  }
  return out.sort(byTargetAddress)
}

/** Refused targets in (category, tenant) name order, a whole category (`*`) before its tenants. */
const byTargetAddress = (a: RefusedTarget, b: RefusedTarget): number => {
  const key = (r: RefusedTarget) => [r.category, r.tenant === "*" ? "" : r.tenant] as const
  const [ka, kb] = [key(a), key(b)]
  return ka[0] !== kb[0] ? (ka[0] < kb[0] ? -1 : 1) : ka[1] < kb[1] ? -1 : ka[1] > kb[1] ? 1 : 0
}

/** A file where a category or tenant directory belongs (the doctor's `work-stray-entry`), as a refused target. */
const strayTarget = (workRoot: string, stray: WorkStray): RefusedTarget => {
  const [category, tenant] = NodePath.relative(workRoot, stray.path).split(NodePath.sep)
  const what = tenant === undefined ? `category ${category}` : `tenant ${category}/${tenant}`
  return { path: stray.path, what, category: category!, tenant: tenant ?? "*", type: fileTypeWord(stray.type), reason: "not-a-directory", detail: `it is ${aFileType(stray.type)}` }
}

/** A directory WR10 finds unsafe, as the target `work prune --all` refuses; `null` when it is safe. */
const refusedOf = (safety: SafetyFact, what: string, category: string, tenant: string): RefusedTarget | null => {
  const [problem] = safety.problems
  return problem === undefined
    ? null
    : { path: safety.path, what, category, tenant, type: fileTypeWord(safety.info.type), reason: problem.reason, detail: problem.detail }
}

/** A directory name the library never makes (WR2), as a `MisnamedTarget`; `null` for a valid segment. */
const misnamedOf = (path: string, what: string, category: string, tenant: string, name: string): MisnamedTarget | null => {
  const why = misnamedWhy(name)
  return why === null ? null : { path, what, category, tenant, detail: why }
}

/**
 * What `work prune --all` works through, from the one scan's facts: the tenants whose work root, category and
 * tenant directories all pass WR10 (the verdict the doctor reports as `work-root-unsafe` and the pruner refuses
 * with), and, refused rather than skipped in silence, the shallowest directory that does not (a symlink, not
 * a directory, foreign-owned, group/world-writable: nothing under it is listed) and every file where a category
 * or tenant directory belongs (the doctor's `work-stray-entry`); and, never pruned but never skipped in
 * silence either, the category and tenant directories whose names are not valid segments (`misnamed`: the
 * library never makes them). Pure; refused targets in (category, tenant) name order, misnamed in scan order.
 */
export const pruneTargetsOf = (facts: AgentDirFacts): PruneTargets => {
  const notADirectory = notADirectoryOf(facts)
  const work = facts.work
  if (work === null) return { tenants: [], refused: [], misnamed: [], notADirectory }
  const root = refusedOf(work.root, "the work root", "*", "*")
  if (root !== null) return { tenants: [], refused: [root], misnamed: [], notADirectory }
  const refused: Array<RefusedTarget> = []
  const misnamed: Array<MisnamedTarget> = []
  const tenants: Array<TenantAddress> = []
  const unsafeCategories = new Set(work.categories.filter((c) => refusedOf(c.safety, "", c.name, "*") !== null).map((c) => c.name))
  for (const stray of work.strays) {
    const target = strayTarget(work.root.path, stray)
    // A stray inside a refused category is under it: the category's refusal covers it.
    if (target.tenant !== "*" && unsafeCategories.has(target.category)) continue
    refused.push(target)
  }
  for (const category of work.categories) {
    const unsafeCategory = refusedOf(category.safety, `category ${category.name}`, category.name, "*")
    if (unsafeCategory !== null) {
      refused.push(unsafeCategory)
      continue
    }
    const badCategory = misnamedOf(category.path, `category ${category.name}`, category.name, "*", category.name)
    if (badCategory !== null) {
      misnamed.push(badCategory)
      continue
    }
    for (const t of category.tenants) {
      const unsafeTenant = refusedOf(t.safety, `tenant ${t.category}/${t.tenant}`, t.category, t.tenant)
      if (unsafeTenant !== null) {
        refused.push(unsafeTenant)
        continue
      }
      const badTenant = misnamedOf(t.path, `tenant ${t.category}/${t.tenant}`, t.category, t.tenant, t.tenant)
      if (badTenant !== null) misnamed.push(badTenant)
      else tenants.push({ category: t.category, tenant: t.tenant })
    }
  }
  refused.sort(byTargetAddress)
  return { tenants, refused, misnamed, notADirectory }
}

/**
 * Whether facts read for the doctor (`Doctor.doctorWithFacts`), with the agent extensions' tiers listed beside
 * them (`extensions`, a scan of its own), are the facts `summary`'s own scan would have produced: the same web
 * data root, nothing unreadable (the doctor reads parts `summary` does not, whose problems `summary` would not
 * report), neither scan cut short and both within `maxScanEntries` (the doctor's scan reads a superset of the
 * rest, so `summary`'s would not have been cut either), and no tenant holding more run candidates than
 * `maxRunsPerTenant` (the doctor examines every run). Pure.
 */
export const factsSuffice = (facts: AgentDirFacts, extensions: AgentDirFacts, limits: InventoryLimits, webDataRoot: string): boolean =>
  facts.webData?.root === webDataRoot &&
  facts.status._tag === extensions.status._tag &&
  facts.problems.length === 0 &&
  extensions.problems.length === 0 &&
  !facts.truncated &&
  !extensions.truncated &&
  facts.scanned + extensions.scanned <= limits.maxScanEntries &&
  tenantsOf(facts.work).every((t) => t.items === null || t.items.candidates <= limits.maxRunsPerTenant)

const makeInventory = Effect.gen(function*() {
  const deps = yield* readOnlyDepsFromContext
  const agentDir = yield* AgentDir
  const paths = agentDir.paths
  const optionsOf = (o: InventoryOptions | undefined) => ({ ...DEFAULTS, ...o })

  const linkedFrom = agentDir.given !== agentDir.path ? agentDir.given : null

  /**
   * Measure each group of `paths` in order under a budget of its own (a tenant's runs; a tenant; a directory);
   * the sizes by path. Groups are independent (a budget each), so `MEASURE_CONCURRENCY` of them walk at once (a
   * large tree is walked on the thread pool, nativeMeasure.ts): the answer, its problems in group order, is the
   * one a walk of one group after the other gives.
   */
  const measureAll = (walk: Walk, groups: ReadonlyArray<ReadonlyArray<string>>, known?: ReadonlyMap<string, RunMeasure | TenantMeasure>) =>
    Effect.gen(function*() {
      const measured = yield* Effect.forEach(groups, (group) =>
        Effect.gen(function*() {
          const budget = walk.budget()
          const errors: Array<InventoryProblem> = []
          const sized: Array<Size> = []
          for (const path of group) sized.push(yield* walk.measure(path, budget, errors, known?.get(path)))
          return { sized, errors }
        }), { concurrency: MEASURE_CONCURRENCY })
      const sizes = new Map<string, Size>()
      groups.forEach((group, g) => {
        const { sized, errors } = measured[g]!
        group.forEach((path, i) => sizes.set(path, sized[i]!))
        for (const e of errors) walk.errors.push(e)
      })
      return (path: string) => sizes.get(path) ?? UNMEASURED
    })

  const summary = (options?: InventoryOptions, scanned?: AgentDirFacts): Effect.Effect<InventoryReport> =>
    Effect.gen(function*() {
      const o = optionsOf(options)
      const scannedAt = yield* Clock.currentTimeMillis
      // TD1's one resolution, its own root link followed as the doctor does (the data may live on another disk).
      const webDataRoot = yield* resolveRootLink(deps.fs, webDataRootOf(deps.host, options?.webDataRoot).path)
      const ownScan = scanAgentDir(deps, agentDir.path, {
        work: true,
        extensions: true,
        maxRunsPerTenant: o.maxRunsPerTenant,
        maxEntries: o.maxScanEntries,
        webDataRoot,
        tenantSizes: tenantSizeBudget(o),
        // Counts are all a summary reads of a run.
        runItems: "noteworthy"
      })
      let facts: AgentDirFacts
      if (scanned === undefined) {
        facts = yield* ownScan
      } else {
        // The doctor read everything else; the extensions' tiers are three listings.
        const extensions = yield* scanAgentDir(deps, agentDir.path, { extensions: true, maxEntries: o.maxScanEntries })
        facts = factsSuffice(scanned, extensions, o, webDataRoot) ? { ...scanned, extensions: extensions.extensions } : yield* ownScan
      }
      const extensionDirs = (namespace: string): ExtensionDirs => ({
        config: paths.extensionConfigDir(namespace),
        state: paths.extensionStateDir(namespace),
        cache: paths.extensionCacheDir(namespace)
      })
      const walk = new Walk(deps, o)
      // A tenant the scan measured while reading it (with this budget) is not walked again.
      const known = new Map<string, TenantMeasure>()
      for (const t of listedTenants(facts)) if (t.size !== undefined) known.set(t.path, t.size)
      // Each tenant and each extension tier directory (agent extensions, then web extensions) within a budget of its own.
      const sizeOf = yield* measureAll(walk, [
        ...listedTenants(facts).map((t) => [t.path]),
        ...agentExtensionsOf(facts).flatMap(({ namespace, tiers }) => tiers.map((tier) => [extensionDirs(namespace)[tier]])),
        ...webExtensionsOf(facts).flatMap(({ extId, tiers }) => tiers.map((tier) => [tierPaths(webDataRoot, extId)[`${tier}Dir`]]))
      ], known)
      return summarize({
        facts,
        linkedFrom,
        workRoot: paths.workRoot,
        scannedAt,
        sizeOf,
        extensionDirs,
        webDataRoot,
        measureErrors: walk.errors,
        limits: o,
        stops: walk.stops
      })
    })

  const listRuns = (filter?: RunFilter, options?: InventoryOptions): Effect.Effect<RunList, InvalidSegment> =>
    Effect.gen(function*() {
      if (filter?.category !== undefined) yield* decodeSegment("category", filter.category)
      if (filter?.tenant !== undefined) yield* decodeSegment("tenant", filter.tenant)
      const o = optionsOf(options)
      const scannedAt = yield* Clock.currentTimeMillis
      // Each run's row is made as the scan judges it, and its item is not kept (40,000 of them were most of
      // `work ls`' memory); with it, the size read with its manifest, used below where it is what the walk answers.
      const made = new Map<string, Array<RunListing>>()
      const known = new Map<string, RunMeasure>()
      const facts = yield* scanAgentDir(deps, agentDir.path, {
        work: filter ?? true,
        maxRunsPerTenant: o.maxRunsPerTenant,
        maxEntries: o.maxScanEntries,
        runSizes: { maxEntries: o.maxEntries, maxDepth: o.maxDepth },
        runItems: "none",
        visitRun: (tenant, run) => {
          const key = tenantKey(tenant)
          const rows = made.get(key)
          if (rows === undefined) made.set(key, [runRow(tenant, run)])
          else rows.push(runRow(tenant, run))
          if (run.measured !== undefined) known.set(run.path, run.measured)
        }
      })
      const walk = new Walk(deps, o)
      // A tenant's runs share its budget, in the listing's order (newest last use first): the runs a budget
      // leaves unmeasured are the oldest.
      const rows = runRows(facts, made)
      made.clear()
      const byTenant = new Map<string, Array<string>>()
      for (const r of rows.runs) {
        const key = tenantKey(r)
        const group = byTenant.get(key)
        if (group === undefined) byTenant.set(key, [r.path])
        else group.push(r.path)
      }
      const sizeOf = yield* measureAll(walk, [...byTenant.values()], known)
      for (const r of rows.runs) setSize(r, sizeOf(r.path))
      const list = runList({ facts, linkedFrom, scannedAt, measureErrors: walk.errors, limits: o, stops: walk.stops, rows })
      const missing = filter === undefined ? undefined : missingOf(facts, filter)
      return missing === undefined ? list : { ...list, missing }
    })

  /** The read model's work tree (categories and tenants, not what they hold), judged by `pruneTargetsOf`. */
  const pruneTargets: Effect.Effect<PruneTargets> = Effect.map(
    scanAgentDir(deps, agentDir.path, { work: true, items: false }),
    pruneTargetsOf
  )

  const tenants: Effect.Effect<ReadonlyArray<TenantAddress>> = Effect.map(pruneTargets, (t) => t.tenants)

  return Inventory.of({ summary, listRuns, tenants, pruneTargets })
})

export class Inventory extends Context.Tag("pi-agent-storage/Inventory")<Inventory, {
  /**
   * Per tenant: runs, active, inactive, unowned, size, oldest last use; extension state/cache sizes. `scanned`:
   * facts the doctor read (`Doctor.doctorWithFacts`), used instead of a scan of its own when they are the facts
   * that scan would read (`factsSuffice`), as `Status` does.
   */
  readonly summary: (options?: InventoryOptions, scanned?: AgentDirFacts) => Effect.Effect<InventoryReport>
  /** Runs (and unowned entries) of every tenant, of one category, or of one tenant. */
  readonly listRuns: (filter?: RunFilter, options?: InventoryOptions) => Effect.Effect<RunList, InvalidSegment>
  /** Every prunable (category, tenant) under the work root, in name order: `pruneTargets`' tenants. */
  readonly tenants: Effect.Effect<ReadonlyArray<TenantAddress>>
  /** Prunable tenants and the entries refused on the way (whatever WR10 finds unsafe, stray files): `pruneTargetsOf`. */
  readonly pruneTargets: Effect.Effect<PruneTargets>
}>() {
  static readonly make: Effect.Effect<Inventory["Type"], never, FileSystem | Host | AgentDir> = makeInventory
  static readonly layer: Layer.Layer<Inventory, never, FileSystem | Host | AgentDir> = Layer.effect(Inventory, makeInventory)
}
