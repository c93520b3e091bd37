/**
 * What the agent keeps, for people at a shell (SPEC CLI1): a bounded, read-only inventory of the work root
 * and the extension state/cache tiers, and a listing of runs. It only calls `lstat`, `readDirectory`,
 * `readFile` and `measureTree` (plus the Host's pid probes for lease verdicts): it never writes anything.
 *
 * Ownership and liveness come from the same helpers the pruner uses (runFacts), so `pi-storage work ls`
 * says "active" exactly when a prune would leave the run alone.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { InvalidSegment } from "../domain/Errors.js"
import type { RunKind } from "../domain/Formats.js"
import { layoutUnits } from "../domain/MigrationPlan.js"
import { lastUsedAt } from "../domain/PrunePlan.js"
import { DEFAULT_RETENTION } from "../domain/Retention.js"
import { decodeSegment, parseSegment } from "../domain/Segment.js"
import { AgentDir } from "./AgentDir.js"
import { type DirEntry, FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"
import { type Deps, depsFromContext } from "./internal/deps.js"
import { TENANT_LIBRARY_ENTRIES } from "./internal/prune.js"
import { type Holder, isActive, liveHolders, manifestTimes, newestHeartbeat, readLeases, readManifest } from "./internal/runFacts.js"
import { fileTypeWord } from "../domain/FileTypeWords.js"
import { aFileType } from "../domain/FileTypeWords.js"

export interface InventoryOptions {
  /** Entries all size walks of one call may visit together (default 100,000, as a prune's budget). */
  readonly maxEntries?: number
  /** Size walks stop below this depth (default 64). */
  readonly maxDepth?: number
  /** Entries examined per tenant before the listing stops (`truncated`; default 10,000). */
  readonly maxRunsPerTenant?: number
}

/** A size from a bounded walk: `bytes` is a lower bound when `complete` is false. */
export interface Size {
  readonly bytes: number
  /** Entries below the measured directory (files, directories, links; as `du --inodes`, without the root). */
  readonly entries: number
  readonly complete: boolean
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
  readonly truncated: boolean
}

export interface ExtensionSummary {
  readonly namespace: string
  /** `state/extensions/<ns>/`; `null` when absent. */
  readonly state: Size | null
  /** `cache/extensions/<ns>/`; `null` when absent. */
  readonly cache: Size | null
}

export interface InventoryProblem {
  readonly path: string
  readonly message: string
}

export interface InventoryReport {
  readonly agentDir: string
  /** False when the agent dir does not exist (or is not a directory): nothing else was read. */
  readonly exists: boolean
  /** The agent dir path exists but is not a directory (a regular file, a symlink …): its file type in words. */
  readonly notADirectory: string | null
  readonly workRoot: string
  /** When the scan ran (epoch ms, from the Clock), so ages can be rendered against it. */
  readonly scannedAt: number
  readonly tenants: ReadonlyArray<TenantSummary>
  readonly extensions: ReadonlyArray<ExtensionSummary>
  /** A per-tenant entry cap was hit somewhere. */
  readonly truncated: boolean
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
  /** As in `InventoryReport`: the agent dir is not a directory. */
  readonly notADirectory: string | null
  readonly scannedAt: number
  /** Newest last use first, per tenant; tenants in name order. */
  readonly runs: ReadonlyArray<RunListing>
  readonly unowned: ReadonlyArray<UnownedListing>
  readonly truncated: boolean
  readonly errors: ReadonlyArray<InventoryProblem>
}

export interface TenantAddress {
  readonly category: string
  readonly tenant: string
}

/** A dry run of the agent-dir layout migration: what a call would move or merge, in the order it would. */
export interface MigrationPreview {
  readonly agentDir: string
  readonly exists: boolean
  /** As in `InventoryReport`: the agent dir is not a directory. */
  readonly notADirectory: string | null
  readonly entries: ReadonlyArray<{
    /** Legacy root entry (relative to the agent dir). */
    readonly from: string
    /** Its canonical place (relative). */
    readonly to: string
    /** `merge` when the destination already exists (entry by entry, or a JSON merge for trust.json). */
    readonly action: "move" | "merge"
  }>
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
}

export interface PruneTargets {
  readonly tenants: ReadonlyArray<TenantAddress>
  readonly refused: ReadonlyArray<RefusedTarget>
  /** The agent dir is not a directory (its type in words), else `null`. */
  readonly notADirectory: string | null
}

export interface RunFilter {
  readonly category?: string | undefined
  readonly tenant?: string | undefined
}

const DEFAULTS = {
  maxEntries: DEFAULT_RETENTION.maxEntries,
  maxDepth: DEFAULT_RETENTION.maxDepth,
  maxRunsPerTenant: DEFAULT_RETENTION.maxScannedRuns
}

const byName = (a: { readonly name: string }, b: { readonly name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)


/** One call's shared walk budget and problem list. */
class Walk {
  remaining: number
  truncated = false
  readonly errors: Array<InventoryProblem> = []
  constructor(readonly deps: Deps, readonly options: typeof DEFAULTS) {
    this.remaining = options.maxEntries
  }

  /** Bounded size of a tree; a failed walk counts as an incomplete zero and is reported. */
  measure(path: string): Effect.Effect<Size> {
    return this.deps.fs.measureTree(path, { maxEntries: Math.max(0, this.remaining), maxDepth: this.options.maxDepth }).pipe(
      Effect.map((m) => {
        this.remaining -= m.entries
        return { bytes: m.bytes, entries: m.entries, complete: m.complete }
      }),
      Effect.catchAll((e) => Effect.sync(() => {
        this.errors.push({ path, message: e.message })
        return { bytes: 0, entries: 0, complete: false }
      }))
    )
  }

  /** Directory entries in name order; missing → empty, other failures reported. */
  list(path: string): Effect.Effect<ReadonlyArray<DirEntry>> {
    return this.deps.fs.readDirectory(path).pipe(
      Effect.map((entries) => [...entries].sort(byName)),
      Effect.catchAll((e) => Effect.sync(() => {
        if (e.reason !== "NotFound") this.errors.push({ path, message: e.message })
        return []
      }))
    )
  }

  /** The run candidates of a tenant, capped at `maxRunsPerTenant`. */
  tenantEntries(tenantDir: string): Effect.Effect<{ readonly entries: ReadonlyArray<DirEntry>; readonly truncated: boolean }> {
    return Effect.map(this.list(tenantDir), (all) => {
      const candidates = all.filter((e) => !TENANT_LIBRARY_ENTRIES.has(e.name))
      const truncated = candidates.length > this.options.maxRunsPerTenant
      if (truncated) this.truncated = true
      return { entries: candidates.slice(0, this.options.maxRunsPerTenant), truncated }
    })
  }
}

type Examined =
  | { readonly _tag: "Run"; readonly run: Omit<RunListing, "size"> }
  | { readonly _tag: "Unowned"; readonly entry: UnownedListing }

/** Ownership, liveness and last use of one tenant entry (no size). */
const examine = (deps: Deps, address: TenantAddress, tenantDir: string, entry: DirEntry): Effect.Effect<Examined> =>
  Effect.gen(function*() {
    const path = NodePath.join(tenantDir, entry.name)
    const unowned = (why: string): Examined => ({ _tag: "Unowned", entry: { ...address, name: entry.name, path, why } })
    if (entry.type !== "Directory") {
      return unowned(entry.type === "SymbolicLink" ? "symlink (never followed)" : `not a directory (${aFileType(entry.type)})`)
    }
    const manifest = yield* readManifest(deps, path, { ...address, runId: entry.name })
    if (manifest._tag === "Unowned") return unowned(manifest.why)
    if (manifest._tag === "Mismatch") return unowned(`manifest names ${manifest.found}`)
    const m = manifest.manifest
    const leases = yield* readLeases(deps, path)
    const releasedAt = "releasedAt" in m && m.releasedAt !== undefined ? m.releasedAt : null
    const active = isActive(leases)
    // Far-future manifest stamps do not count for last use (the prune's rule, issue 12 point 7).
    const times = yield* manifestTimes(deps, path, m)
    const used = lastUsedAt({
      runId: entry.name,
      path,
      createdAt: times.createdAt,
      releasedAt: times.releasedAt,
      newestHeartbeatAt: newestHeartbeat(leases),
      active
    })
    return {
      _tag: "Run",
      run: {
        ...address,
        runId: entry.name,
        path,
        kind: "kind" in m ? m.kind : "named",
        state: active ? "active" : releasedAt !== null ? "released" : "idle",
        createdAt: m.createdAt,
        releasedAt,
        lastUsedAt: used,
        leases: leases.leases.length,
        holders: active ? liveHolders(leases) : []
      }
    }
  })

/** `null` when `path` is a directory or absent; else its file type in words. */
const notADirectory = (deps: Deps, path: string): Effect.Effect<string | null> =>
  deps.fs.lstat(path).pipe(Effect.map((i) => (i.type === "Directory" ? null : fileTypeWord(i.type))), Effect.orElseSucceed(() => null))

/** Is `path` a real directory (not a symlink)? */
const isDirectory = (deps: Deps, path: string): Effect.Effect<boolean> =>
  deps.fs.lstat(path).pipe(Effect.map((i) => i.type === "Directory"), Effect.orElseSucceed(() => false))

const subdirectories = (walk: Walk, path: string) =>
  Effect.map(walk.list(path), (entries) => entries.filter((e) => e.type === "Directory").map((e) => e.name))

/** @deprecated use `Inventory.make`. */
export const makeInventory = Effect.gen(function*() {
  const deps = yield* depsFromContext
  const { fs } = deps
  const agentDir = yield* AgentDir
  const paths = agentDir.paths
  const optionsOf = (o: InventoryOptions | undefined) => ({ ...DEFAULTS, ...o })

  /** Every (category, tenant) directory under the work root, in name order. Symlinked ones are skipped. */
  const tenantsIn = (walk: Walk, filter?: RunFilter) =>
    Effect.gen(function*() {
      // Names from a listing are directories already (by their entry type); only names from the filter
      // need a look.
      const categories = filter?.category !== undefined ? [filter.category] : yield* subdirectories(walk, paths.workRoot)
      const out: Array<TenantAddress> = []
      for (const category of categories) {
        const categoryDir = paths.workCategoryDir(category)
        if (filter?.category !== undefined && !(yield* isDirectory(deps, categoryDir))) continue
        const tenants = filter?.tenant !== undefined ? [filter.tenant] : yield* subdirectories(walk, categoryDir)
        for (const tenant of tenants) {
          if (filter?.tenant === undefined || (yield* isDirectory(deps, paths.workTenantDir(category, tenant)))) out.push({ category, tenant })
        }
      }
      return out
    })

  const tenantSummary = (walk: Walk, address: TenantAddress) =>
    Effect.gen(function*() {
      const tenantDir = paths.workTenantDir(address.category, address.tenant)
      const { entries, truncated } = yield* walk.tenantEntries(tenantDir)
      let runs = 0
      let active = 0
      let unowned = 0
      let oldest: number | null = null
      for (const entry of entries) {
        const examined = yield* examine(deps, address, tenantDir, entry)
        if (examined._tag === "Unowned") {
          unowned++
          continue
        }
        runs++
        if (examined.run.state === "active") active++
        if (oldest === null || examined.run.lastUsedAt < oldest) oldest = examined.run.lastUsedAt
      }
      const size = yield* walk.measure(tenantDir)
      const summary: TenantSummary = {
        ...address,
        runs,
        active,
        inactive: runs - active,
        unowned,
        size,
        oldestLastUsedAt: oldest,
        truncated
      }
      return summary
    })

  const extensionSummaries = (walk: Walk) =>
    Effect.gen(function*() {
      const stateRoot = NodePath.dirname(paths.extensionStateDir("x"))
      const cacheRoot = NodePath.dirname(paths.extensionCacheDir("x"))
      const stateNames = yield* subdirectories(walk, stateRoot)
      const cacheNames = yield* subdirectories(walk, cacheRoot)
      const names = [...new Set([...stateNames, ...cacheNames])].sort()
      const out: Array<ExtensionSummary> = []
      for (const namespace of names) {
        out.push({
          namespace,
          state: stateNames.includes(namespace) ? yield* walk.measure(paths.extensionStateDir(namespace)) : null,
          cache: cacheNames.includes(namespace) ? yield* walk.measure(paths.extensionCacheDir(namespace)) : null
        })
      }
      return out
    })

  const summary = (options?: InventoryOptions): Effect.Effect<InventoryReport> =>
    Effect.gen(function*() {
      const scannedAt = yield* Clock.currentTimeMillis
      const base = { agentDir: agentDir.path, workRoot: paths.workRoot, scannedAt, notADirectory: yield* notADirectory(deps, agentDir.path) }
      if (!(yield* isDirectory(deps, agentDir.path))) {
        return { ...base, exists: false, tenants: [], extensions: [], truncated: false, errors: [] }
      }
      const walk = new Walk(deps, optionsOf(options))
      const tenants: Array<TenantSummary> = []
      for (const address of yield* tenantsIn(walk)) tenants.push(yield* tenantSummary(walk, address))
      const extensions = yield* extensionSummaries(walk)
      return { ...base, exists: true, tenants, extensions, truncated: walk.truncated, errors: walk.errors }
    })

  const listRuns = (filter?: RunFilter, options?: InventoryOptions): Effect.Effect<RunList, InvalidSegment> =>
    Effect.gen(function*() {
      if (filter?.category !== undefined) yield* decodeSegment("category", filter.category)
      if (filter?.tenant !== undefined) yield* decodeSegment("tenant", filter.tenant)
      const scannedAt = yield* Clock.currentTimeMillis
      const walk = new Walk(deps, optionsOf(options))
      const runs: Array<RunListing> = []
      const unowned: Array<UnownedListing> = []
      if (yield* isDirectory(deps, agentDir.path)) {
        for (const address of yield* tenantsIn(walk, filter)) {
          const tenantDir = paths.workTenantDir(address.category, address.tenant)
          const tenantRuns: Array<RunListing> = []
          for (const entry of (yield* walk.tenantEntries(tenantDir)).entries) {
            const examined = yield* examine(deps, address, tenantDir, entry)
            if (examined._tag === "Unowned") unowned.push(examined.entry)
            else tenantRuns.push({ ...examined.run, size: yield* walk.measure(examined.run.path) })
          }
          tenantRuns.sort((a, b) => b.lastUsedAt - a.lastUsedAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0))
          runs.push(...tenantRuns)
        }
      }
      return {
        agentDir: agentDir.path, notADirectory: yield* notADirectory(deps, agentDir.path), scannedAt, runs, unowned, truncated: walk.truncated, errors: walk.errors
      }
    })

  const tenants: Effect.Effect<ReadonlyArray<TenantAddress>> = Effect.suspend(() =>
    tenantsIn(new Walk(deps, DEFAULTS)).pipe(
      // Only tenants whose names are valid segments can be pruned; others are the doctor's business.
      Effect.map((all) => all.filter((t) => parseSegment(t.category)._tag === "Right" && parseSegment(t.tenant)._tag === "Right"))
    )
  )

  /**
   * What `work prune --all` works through: the prunable tenants, and every work root, category or tenant
   * entry that is not a plain directory (a symlink is never followed, so the tenants behind it are not
   * listed): each is reported as refused rather than skipped in silence.
   */
  const pruneTargets: Effect.Effect<PruneTargets> = Effect.gen(function*() {
    const walk = new Walk(deps, DEFAULTS)
    const refused: Array<RefusedTarget> = []
    const rootType = yield* notADirectory(deps, paths.workRoot)
    if (rootType !== null) return { tenants: [], refused: [{ path: paths.workRoot, what: "the work root", category: "*", tenant: "*", type: rootType }], notADirectory: yield* notADirectory(deps, agentDir.path) }
    const tenants: Array<TenantAddress> = []
    for (const category of yield* walk.list(paths.workRoot)) {
      const categoryDir = paths.workCategoryDir(category.name)
      if (category.type !== "Directory") {
        refused.push({ path: categoryDir, what: `category ${category.name}`, category: category.name, tenant: "*", type: fileTypeWord(category.type) })
        continue
      }
      for (const tenant of yield* walk.list(categoryDir)) {
        if (tenant.type !== "Directory") {
          refused.push({
            path: paths.workTenantDir(category.name, tenant.name),
            what: `tenant ${category.name}/${tenant.name}`,
            category: category.name,
            tenant: tenant.name,
            type: fileTypeWord(tenant.type)
          })
        } else if (parseSegment(category.name)._tag === "Right" && parseSegment(tenant.name)._tag === "Right") {
          tenants.push({ category: category.name, tenant: tenant.name })
        }
      }
    }
    return { tenants, refused, notADirectory: yield* notADirectory(deps, agentDir.path) }
  })

  const migrationPreview: Effect.Effect<MigrationPreview> = Effect.gen(function*() {
    const walk = new Walk(deps, DEFAULTS)
    const wrongType = yield* notADirectory(deps, agentDir.path)
    if (!(yield* isDirectory(deps, agentDir.path))) return { agentDir: agentDir.path, exists: false, notADirectory: wrongType, entries: [] }
    const names = (yield* walk.list(agentDir.path)).map((e) => e.name)
    const entries: Array<MigrationPreview["entries"][number]> = []
    for (const unit of layoutUnits(names)) {
      const destination = NodePath.join(agentDir.path, ...unit.destination)
      const taken = yield* fs.lstat(destination).pipe(Effect.as(true), Effect.orElseSucceed(() => false))
      entries.push({ from: unit.name, to: unit.destination.join("/"), action: taken ? "merge" : "move" })
    }
    return { agentDir: agentDir.path, exists: true, notADirectory: null, entries }
  })

  return Inventory.of({ summary, listRuns, tenants, pruneTargets, migrationPreview })
})

export class Inventory extends Context.Tag("pi-agent-storage/Inventory")<Inventory, {
  /** Per tenant: runs, active, inactive, unowned, size, oldest last use; extension state/cache sizes. */
  readonly summary: (options?: InventoryOptions) => Effect.Effect<InventoryReport>
  /** Runs (and unowned entries) of every tenant, of one category, or of one tenant. */
  readonly listRuns: (filter?: RunFilter, options?: InventoryOptions) => Effect.Effect<RunList, InvalidSegment>
  /** Every prunable (category, tenant) under the work root, in name order. */
  readonly tenants: Effect.Effect<ReadonlyArray<TenantAddress>>
  /** Prunable tenants and the entries refused on the way (symlinked or not-a-directory roots). */
  readonly pruneTargets: Effect.Effect<PruneTargets>
  /** What `migrateAgentDirLayout` would do now, without doing it. */
  readonly migrationPreview: Effect.Effect<MigrationPreview>
}>() {
  static readonly make: Effect.Effect<Inventory["Type"], never, FileSystem | Host | AgentDir> = makeInventory
  static readonly layer: Layer.Layer<Inventory, never, FileSystem | Host | AgentDir> = Layer.effect(Inventory, makeInventory)
}
