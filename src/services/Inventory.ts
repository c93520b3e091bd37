/**
 * What the agent keeps, for people at a shell (README "CLI quick tour"): a bounded, read-only inventory of the work root
 * and the extension state/cache tiers, and a listing of runs. It only calls `lstat`, `readDirectory`,
 * `readFile` and `measureTree` (plus the Host's pid probes for lease verdicts): it never writes anything.
 *
 * `summary` and `listRuns` are the read model's scan (src/services/internal/readModel.ts: the same tenant
 * items the pruner plans with, so `pi-storage work ls` says "active" exactly when a prune would leave the run
 * alone) plus bounded size walks, interpreted by the pure `summarize` and `runList`.
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { InvalidSegment, UnsafeRootReason } from "../domain/Errors.js"
import type { RunKind } from "../domain/Formats.js"
import { lastUsedAt } from "../domain/PrunePlan.js"
import { DEFAULT_RETENTION } from "../domain/Retention.js"
import { decodeSegment, parseSegment, segmentViolation } from "../domain/Segment.js"
import { AgentDir } from "./AgentDir.js"
import { FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"
import { type Deps, readOnlyDepsFromContext } from "./internal/deps.js"
import { type AgentDirFacts, type SafetyFact, scanAgentDir, type TenantFacts, tenantsOf, type TenantItem } from "./internal/readModel.js"
import { type Holder, isActive, liveHolders, newestHeartbeat } from "./internal/runFacts.js"
import { aFileType, fileTypeWord } from "../domain/FileTypeWords.js"
import { type InventoryProblem, scanProblem, sizeUnmeasured } from "../domain/ReportProblems.js"

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
  /** As in `InventoryReport`: the given path when it is a symlink to `agentDir`. */
  readonly linkedFrom: string | null
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

const DEFAULTS = {
  maxEntries: DEFAULT_RETENTION.maxEntries,
  maxDepth: DEFAULT_RETENTION.maxDepth,
  maxRunsPerTenant: DEFAULT_RETENTION.maxScannedRuns
}

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
      // Read-only: a failed walk becomes a reported problem (`SizeUnmeasured`) and an incomplete zero.
      Effect.catchAll((e) => Effect.sync(() => {
        this.errors.push(sizeUnmeasured(path, e))
        return { bytes: 0, entries: 0, complete: false }
      }))
    )
  }
}

/** The listing row of an owned run (no size). Pure: the facts carry the manifest, leases and times. */
export const runRow = (address: TenantAddress, item: Extract<TenantItem, { _tag: "Run" }>): Omit<RunListing, "size"> => {
  const m = item.manifest
  const releasedAt = "releasedAt" in m && m.releasedAt !== undefined ? m.releasedAt : null
  const active = isActive(item.leases)
  // Far-future manifest stamps do not count for last use (the prune's rule).
  const used = lastUsedAt({
    runId: item.name,
    path: item.path,
    createdAt: item.times.createdAt,
    releasedAt: item.times.releasedAt,
    newestHeartbeatAt: newestHeartbeat(item.leases),
    active
  })
  return {
    ...address,
    runId: item.name,
    path: item.path,
    kind: "kind" in m ? m.kind : "named",
    state: active ? "active" : releasedAt !== null ? "released" : "idle",
    createdAt: m.createdAt,
    releasedAt,
    lastUsedAt: used,
    leases: item.leases.leases.length,
    holders: active ? liveHolders(item.leases) : []
  }
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

const UNMEASURED: Size = { bytes: 0, entries: 0, complete: false }

/** `summary` over the facts and the measured sizes. Pure. */
export const summarize = (input: {
  readonly facts: AgentDirFacts
  readonly linkedFrom: string | null
  readonly workRoot: string
  readonly scannedAt: number
  readonly sizeOf: SizeOf
  readonly extensionDirs: (namespace: string) => { readonly state: string; readonly cache: string }
  readonly measureErrors: ReadonlyArray<InventoryProblem>
}): InventoryReport => {
  const { facts } = input
  const base = { agentDir: facts.path, linkedFrom: input.linkedFrom, workRoot: input.workRoot, scannedAt: input.scannedAt, notADirectory: notADirectoryOf(facts) }
  if (facts.status._tag !== "Directory") return { ...base, exists: false, tenants: [], extensions: [], truncated: false, errors: [] }
  const tenants = listedTenants(facts).map((t): TenantSummary => {
    let runs = 0
    let active = 0
    let unowned = 0
    let oldest: number | null = null
    for (const item of t.items.items) {
      if (item._tag === "Unowned") unowned++
      if (item._tag !== "Run") continue
      const row = runRow(t, item)
      runs++
      if (row.state === "active") active++
      if (oldest === null || row.lastUsedAt < oldest) oldest = row.lastUsedAt
    }
    return {
      category: t.category,
      tenant: t.tenant,
      runs,
      active,
      inactive: runs - active,
      unowned,
      size: input.sizeOf(t.path),
      oldestLastUsedAt: oldest,
      truncated: t.items.truncated
    }
  })
  const { state, cache } = facts.extensions
  const extensions = [...new Set([...state, ...cache])].sort().map((namespace): ExtensionSummary => {
    const dirs = input.extensionDirs(namespace)
    return {
      namespace,
      state: state.includes(namespace) ? input.sizeOf(dirs.state) : null,
      cache: cache.includes(namespace) ? input.sizeOf(dirs.cache) : null
    }
  })
  return {
    ...base,
    exists: true,
    tenants,
    extensions,
    truncated: facts.truncated || tenants.some((t) => t.truncated),
    errors: [...problemsOf(facts), ...input.measureErrors]
  }
}

/** `listRuns` over the facts and the measured run sizes: newest last use first per tenant. Pure. */
export const runList = (input: {
  readonly facts: AgentDirFacts
  readonly linkedFrom: string | null
  readonly scannedAt: number
  readonly sizeOf: SizeOf
  readonly measureErrors: ReadonlyArray<InventoryProblem>
}): RunList => {
  const { facts } = input
  const runs: Array<RunListing> = []
  const unowned: Array<UnownedListing> = []
  for (const t of listedTenants(facts)) {
    const address = { category: t.category, tenant: t.tenant }
    const tenantRuns: Array<RunListing> = []
    for (const item of t.items.items) {
      if (item._tag === "Unowned") unowned.push({ ...address, name: item.name, path: item.path, why: item.why })
      else if (item._tag === "Run") tenantRuns.push({ ...runRow(address, item), size: input.sizeOf(item.path) })
    }
    tenantRuns.sort((a, b) => b.lastUsedAt - a.lastUsedAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0))
    runs.push(...tenantRuns)
  }
  return {
    agentDir: facts.path,
    linkedFrom: input.linkedFrom,
    notADirectory: notADirectoryOf(facts),
    scannedAt: input.scannedAt,
    runs,
    unowned,
    truncated: facts.truncated || listedTenants(facts).some((t) => t.items.truncated),
    errors: [...problemsOf(facts), ...input.measureErrors]
  }
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
  const violation = segmentViolation(name)
  return violation === null ? null : { path, what, category, tenant, detail: `its name ${violation.message}` }
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
    const [category, tenant] = NodePath.relative(work.root.path, stray.path).split(NodePath.sep)
    // A stray inside a refused category is under it: the category's refusal covers it.
    if (tenant !== undefined && unsafeCategories.has(category!)) continue
    const address = tenant === undefined ? { category: category!, tenant: "*" } : { category: category!, tenant }
    const what = tenant === undefined ? `category ${address.category}` : `tenant ${address.category}/${address.tenant}`
    const type = fileTypeWord(stray.type)
    refused.push({ path: stray.path, what, ...address, type, reason: "not-a-directory", detail: `it is ${aFileType(stray.type)}` })
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
  const key = (r: RefusedTarget) => [r.category, r.tenant === "*" ? "" : r.tenant] as const
  refused.sort((a, b) => {
    const [ka, kb] = [key(a), key(b)]
    return ka[0] !== kb[0] ? (ka[0] < kb[0] ? -1 : 1) : ka[1] < kb[1] ? -1 : ka[1] > kb[1] ? 1 : 0
  })
  return { tenants, refused, misnamed, notADirectory }
}

/** @deprecated use `Inventory.make`. */
export const makeInventory = Effect.gen(function*() {
  const deps = yield* readOnlyDepsFromContext
  const agentDir = yield* AgentDir
  const paths = agentDir.paths
  const optionsOf = (o: InventoryOptions | undefined) => ({ ...DEFAULTS, ...o })

  const linkedFrom = agentDir.given !== agentDir.path ? agentDir.given : null

  /** Measure `paths` in order under one walk budget; the sizes by path. */
  const measureAll = (walk: Walk, paths: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const sizes = new Map<string, Size>()
      for (const path of paths) sizes.set(path, yield* walk.measure(path))
      return (path: string) => sizes.get(path) ?? UNMEASURED
    })

  const summary = (options?: InventoryOptions): Effect.Effect<InventoryReport> =>
    Effect.gen(function*() {
      const o = optionsOf(options)
      const scannedAt = yield* Clock.currentTimeMillis
      const facts = yield* scanAgentDir(deps, agentDir.path, { work: true, extensions: true, maxRunsPerTenant: o.maxRunsPerTenant })
      const extensionDirs = (namespace: string) => ({ state: paths.extensionStateDir(namespace), cache: paths.extensionCacheDir(namespace) })
      const { state, cache } = facts.extensions
      const walk = new Walk(deps, o)
      // Tenants first, then extensions: the order the shared size budget is spent in.
      const sizeOf = yield* measureAll(walk, [
        ...listedTenants(facts).map((t) => t.path),
        ...[...new Set([...state, ...cache])].sort().flatMap((ns) => [
          ...(state.includes(ns) ? [extensionDirs(ns).state] : []),
          ...(cache.includes(ns) ? [extensionDirs(ns).cache] : [])
        ])
      ])
      return summarize({ facts, linkedFrom, workRoot: paths.workRoot, scannedAt, sizeOf, extensionDirs, measureErrors: walk.errors })
    })

  const listRuns = (filter?: RunFilter, options?: InventoryOptions): Effect.Effect<RunList, InvalidSegment> =>
    Effect.gen(function*() {
      if (filter?.category !== undefined) yield* decodeSegment("category", filter.category)
      if (filter?.tenant !== undefined) yield* decodeSegment("tenant", filter.tenant)
      const o = optionsOf(options)
      const scannedAt = yield* Clock.currentTimeMillis
      const facts = yield* scanAgentDir(deps, agentDir.path, { work: filter ?? true, maxRunsPerTenant: o.maxRunsPerTenant })
      const walk = new Walk(deps, o)
      const runPaths = listedTenants(facts).flatMap((t) => t.items.items.flatMap((i) => (i._tag === "Run" ? [i.path] : [])))
      const sizeOf = yield* measureAll(walk, runPaths)
      return runList({ facts, linkedFrom, scannedAt, sizeOf, measureErrors: walk.errors })
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
  /** Per tenant: runs, active, inactive, unowned, size, oldest last use; extension state/cache sizes. */
  readonly summary: (options?: InventoryOptions) => Effect.Effect<InventoryReport>
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
