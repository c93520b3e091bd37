/**
 * Where the bytes are, as a tree a person drills into (docs/dashboard.md "Dashboard"): the whole → tiers (config, state,
 * cache, work, other) → the top-level items of the agent dir and the web data root (internal/topLevel.ts, the
 * one scan, kept for `cacheMs`) → below them one level per call: a work category's tenants, a tenant's runs
 * (the Inventory's listing, so a run is "active" exactly when `pi-storage work ls` says so, with its holders;
 * unowned entries and quarantined `.trash/` trees beside them), and any directory's entries. Every size comes
 * from the port's bounded size walk under one budget per call; a size the budget cut short is `complete:
 * false`, never drawn as exact. Read-only; a node id from the page is parsed strictly (`parseNodeId`) and
 * every directory on the way to the one listed is checked to be a real directory (never listed through a link).
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { TENANT_TRASH_DIR } from "../domain/AgentPaths.js"
import { InvalidArgument } from "../domain/Errors.js"
import type { Severity } from "../domain/Findings.js"
import { parseSegment } from "../domain/Segment.js"
import {
  agentPathKind,
  type FindingMark,
  markOf,
  mergeMarks,
  type NodeAddress,
  parseNodeId,
  pathId,
  ROOT_ID,
  tierId
} from "../domain/StorageMap.js"
import { USAGE_TIERS, type UsageRoot, type UsageTier } from "../domain/UsageHistory.js"
import { AgentDir, resolveRootLink } from "./AgentDir.js"
import { FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"
import { webDataRootOf } from "./internal/webDataRoot.js"
import type { Holder } from "./internal/runFacts.js"
import { addSizes, type MeasuredItem, nodeSizeOfInventory, sizeOfEntries, type NodeSize, type ScanRoot, scanTopLevel, SizeWalk, type TopLevelScan } from "./internal/topLevel.js"
import { Inventory, type RunState } from "./Inventory.js"

export type { NodeSize }

export interface StorageMapOptions {
  /** The web host's extension data root (else `$PI_WEB_DATA_DIR` when set, else none). */
  readonly webDataRoot?: string | undefined
  /** Entries the size walks of one call may visit together (default 1,000,000). */
  readonly maxEntries?: number | undefined
  /** How long the top-level scan is reused (default 30 s; `invalidate` forgets it at once). */
  readonly cacheMs?: number | undefined
  /** Findings to mark where they live (the doctor's); none by default. */
  readonly findings?: Effect.Effect<ReadonlyArray<{ readonly path: string; readonly severity: Severity }>> | undefined
}

export const DEFAULT_MAP_MAX_ENTRIES = 1_000_000
const MAX_DEPTH = 64
const DEFAULT_CACHE_MS = 30_000

export type MapNodeKind = "root" | "tier" | "category" | "tenant" | "run" | "unowned" | "quarantined" | "entry"

export interface MapNode {
  readonly id: string
  readonly label: string
  readonly kind: MapNodeKind
  readonly tier: UsageTier | null
  readonly root: UsageRoot | null
  /** Absolute path (`null` for the whole and the tiers). */
  readonly path: string | null
  readonly size: NodeSize
  /** It has children to drill into. */
  readonly expandable: boolean
  /** A run's state (the Inventory's), `quarantined` for a tree in `.trash/`, `unowned` for what the library does not own. */
  readonly state: RunState | "quarantined" | "unowned" | null
  /** Live holders of an active run. */
  readonly holders: ReadonlyArray<Holder>
  /** The doctor's findings at or below it. */
  readonly mark: FindingMark | null
}

export interface MapLevel {
  readonly node: MapNode
  /** Largest first. */
  readonly children: ReadonlyArray<MapNode>
  /** From the whole down to the node's parent. */
  readonly breadcrumb: ReadonlyArray<{ readonly id: string; readonly label: string }>
  /** False when a size below is a lower bound (the walk budget, a walk that failed) or an entry could not be read. */
  readonly complete: boolean
  readonly problems: ReadonlyArray<{ readonly path: string; readonly message: string }>
  /** When the sizes were measured (epoch ms; the top levels come from a scan kept for a while). */
  readonly scannedAt: number
  readonly roots: { readonly agentDir: string; readonly webDataRoot: string | null }
}

export class StorageMap extends Context.Tag("pi-agent-storage/StorageMap")<StorageMap, {
  /** A node and its children; an id that is not a node of this map is `InvalidArgument`. */
  readonly level: (id: string) => Effect.Effect<MapLevel, InvalidArgument>
  /** The top-level scan (the items per tier), measured now or reused. */
  readonly topLevel: Effect.Effect<TopLevelScan & { readonly scannedAt: number }>
  /** Forget the kept scan (after an action changed the tree). */
  readonly invalidate: Effect.Effect<void>
}>() {
  static readonly make = (options: StorageMapOptions = {}): Effect.Effect<StorageMap["Type"], never, FileSystem | Host | AgentDir | Inventory> =>
    makeStorageMap(options)

  static readonly layerWith = (options: StorageMapOptions = {}): Layer.Layer<StorageMap, never, FileSystem | Host | AgentDir | Inventory> =>
    Layer.effect(StorageMap, makeStorageMap(options))

  /** With the default options. */
  static readonly layer: Layer.Layer<StorageMap, never, FileSystem | Host | AgentDir | Inventory> = Layer.suspend(() =>
    StorageMap.layerWith()
  )
}

const bySizeThenName = (a: MapNode, b: MapNode) => b.size.bytes - a.size.bytes || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0)

const TIER_LABEL: Record<UsageTier, string> = { config: "config", state: "state", cache: "cache", work: "work", other: "other" }

type KeptScan = { readonly at: number; readonly scan: TopLevelScan & { readonly scannedAt: number }; readonly webDataRoot: string | null }

/** What every call of one map shares: its dependencies, its options resolved, and the top-level scan it keeps. */
const mapContext = (options: StorageMapOptions) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem
    const host = yield* Host
    const agentDir = yield* AgentDir
    const inventory = yield* Inventory
    return {
      fs,
      agentDir,
      inventory,
      maxEntries: options.maxEntries ?? DEFAULT_MAP_MAX_ENTRIES,
      cacheMs: options.cacheMs ?? DEFAULT_CACHE_MS,
      configuredWeb: webDataRootOf(host, options.webDataRoot).path,
      findings: options.findings ?? Effect.succeed([]),
      kept: yield* Ref.make<KeptScan | undefined>(undefined)
    }
  })

type MapContext = Effect.Effect.Success<ReturnType<typeof mapContext>>

const makeStorageMap = (options: StorageMapOptions) =>
  Effect.gen(function*() {
    const ctx = yield* mapContext(options)
    return StorageMap.of({
      level: (id) => level(ctx, id),
      topLevel: Effect.map(scanned(ctx), (k) => k.scan),
      invalidate: Ref.set(ctx.kept, undefined)
    })
  })

const isDirectory = (ctx: MapContext, path: string) => Effect.map(Effect.option(ctx.fs.lstat(path)), (i) => i._tag === "Some" && i.value.type === "Directory")

const webRoot = (ctx: MapContext) =>
  Effect.gen(function*() {
    if (ctx.configuredWeb === undefined) return null
    const dir = yield* resolveRootLink(ctx.fs, ctx.configuredWeb)
    return (yield* isDirectory(ctx, dir)) ? dir : null
  })

/** The top-level scan, reused while younger than `cacheMs`. */
const scanned = (ctx: MapContext) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const kept = yield* Ref.get(ctx.kept)
    if (kept !== undefined && now - kept.at < ctx.cacheMs) return kept
    const webDataRoot = yield* webRoot(ctx)
    const roots: Array<ScanRoot> = [{ root: "agent", dir: ctx.agentDir.path }, ...(webDataRoot === null ? [] : [{ root: "web" as const, dir: webDataRoot }])]
    const scan = yield* scanTopLevel(ctx.fs, roots, { maxEntries: ctx.maxEntries, maxDepth: MAX_DEPTH })
    const fresh: KeptScan = { at: now, scan: { ...scan, scannedAt: now }, webDataRoot }
    yield* Ref.set(ctx.kept, fresh)
    return fresh
  })

const rootDir = (ctx: MapContext, root: UsageRoot, webDataRoot: string | null) => (root === "agent" ? ctx.agentDir.path : webDataRoot)

const itemNode = (ctx: MapContext, item: MeasuredItem, marks: (root: UsageRoot, rel: string) => FindingMark | null, webDataRoot: string | null): MapNode => {
  const segments = item.rel.split("/")
  const kind = item.root === "agent" ? agentPathKind(segments) : "entry"
  return {
    id: pathId(item.root, item.rel),
    label: item.root === "web" ? `data/${item.rel}` : item.rel,
    kind: kind === "run" ? "entry" : kind,
    tier: item.tier,
    root: item.root,
    path: NodePath.join(rootDir(ctx, item.root, webDataRoot)!, ...segments),
    size: item.size,
    expandable: item.isDirectory,
    state: null,
    holders: [],
    mark: marks(item.root, item.rel)
  }
}

const tierNodeOf = (items: ReadonlyArray<MapNode>, tier: UsageTier): MapNode => {
  const mine = items.filter((n) => n.tier === tier)
  return {
    id: tierId(tier),
    label: TIER_LABEL[tier],
    kind: "tier",
    tier,
    root: null,
    path: null,
    size: sizeOfEntries(mine.map((n) => n.size)),
    expandable: mine.length > 0,
    state: null,
    holders: [],
    mark: mergeMarks(mine.map((n) => n.mark))
  }
}

const rootNodeOf = (tiers: ReadonlyArray<MapNode>): MapNode => ({
  id: ROOT_ID,
  label: "everything",
  kind: "root",
  tier: null,
  root: null,
  path: null,
  size: addSizes(tiers.map((t) => t.size)),
  expandable: true,
  state: null,
  holders: [],
  mark: mergeMarks(tiers.map((t) => t.mark))
})

const level = (ctx: MapContext, id: string): Effect.Effect<MapLevel, InvalidArgument> =>
  Effect.gen(function*() {
    const address = parseNodeId(id)
    if (address === undefined) return yield* new InvalidArgument({ field: "node", detail: `${JSON.stringify(id.slice(0, 200))} is not a node of the storage map` })
    const { scan, webDataRoot } = yield* scanned(ctx)
    const found = yield* ctx.findings
    const roots = { agentDir: ctx.agentDir.path, webDataRoot }
    const marks = (root: UsageRoot, rel: string) => markOf(found, { root, rel }, roots)
    const items = scan.items.map((i) => itemNode(ctx, i, marks, webDataRoot))
    const tiers = USAGE_TIERS.map((tier) => tierNodeOf(items, tier))
    const rootNode = rootNodeOf(tiers)
    const crumb = (n: MapNode) => ({ id: n.id, label: n.label })
    const base = { scannedAt: scan.scannedAt, roots }
    if (address._tag === "Root") {
      const children = tiers.filter((t) => t.size.bytes > 0 || t.expandable).sort(bySizeThenName)
      return { ...base, node: rootNode, children, breadcrumb: [], complete: scan.complete, problems: scan.problems }
    }
    if (address._tag === "Tier") {
      const node = tiers.find((t) => t.tier === address.tier)!
      const children = items.filter((n) => n.tier === address.tier).sort(bySizeThenName)
      return { ...base, node, children, breadcrumb: [crumb(rootNode)], complete: children.every((c) => c.size.complete), problems: scan.problems }
    }
    return yield* pathLevel(ctx, address, { items, webDataRoot, marks, rootNode, tiers })
  })

/** What a path level takes from the map's top: the top-level items, the whole and the tiers, the findings' marks. */
interface LevelTop {
  readonly items: ReadonlyArray<MapNode>
  readonly webDataRoot: string | null
  readonly marks: (root: UsageRoot, rel: string) => FindingMark | null
  readonly rootNode: MapNode
  readonly tiers: ReadonlyArray<MapNode>
}

type PathAddress = Extract<NodeAddress, { _tag: "Path" }>

/** A path node's level: the item it is or lies below gives its tier and the top of its breadcrumb. */
const pathLevel = (ctx: MapContext, address: PathAddress, top: LevelTop): Effect.Effect<MapLevel, InvalidArgument> =>
  Effect.gen(function*() {
    const rel = address.segments.join("/")
    const item = top.items.find((n) => n.root === address.root && (rel === idRel(n.id) || rel.startsWith(idRel(n.id) + "/")))
    const base = rootDir(ctx, address.root, top.webDataRoot)
    const notANode = new InvalidArgument({ field: "node", detail: `${JSON.stringify(pathId(address.root, rel))} is not a node of the storage map` })
    if (item === undefined || base === null) return yield* notANode
    const path = NodePath.join(base, ...address.segments)
    // Every directory from the root to the node is a real directory: nothing is listed through a link.
    for (let k = 1; k <= address.segments.length; k++) {
      if (!(yield* isDirectory(ctx, NodePath.join(base, ...address.segments.slice(0, k))))) return yield* notANode
    }
    const walk = new SizeWalk(ctx.fs, { maxEntries: ctx.maxEntries, maxDepth: MAX_DEPTH })
    const kind = address.root === "agent" ? agentPathKind(address.segments) : "entry"
    const child = (name: string, extra: Partial<MapNode> & { readonly size: NodeSize; readonly expandable: boolean }): MapNode => ({
      id: pathId(address.root, `${rel}/${name}`),
      label: name,
      kind: "entry",
      tier: item.tier,
      root: address.root,
      path: NodePath.join(path, name),
      state: null,
      holders: [],
      mark: top.marks(address.root, `${rel}/${name}`),
      ...extra
    })
    const [, category, tenant] = address.segments
    const validTenant = kind === "tenant" && parseSegment(category!)._tag === "Right" && parseSegment(tenant!)._tag === "Right"
    const { children, listedComplete } = validTenant
      ? yield* tenantChildren(ctx, walk, path, { category: category!, tenant: tenant! }, child)
      : yield* entryChildren(walk, path, kind, child)
    children.sort(bySizeThenName)
    const size = sizeOfEntries(children.map((c) => c.size))
    const node: MapNode = {
      id: pathId(address.root, rel),
      label: address.segments[address.segments.length - 1]!,
      kind: kind === "category" || kind === "tenant" || kind === "run" ? kind : "entry",
      tier: item.tier,
      root: address.root,
      path,
      size: { ...size, complete: size.complete && listedComplete },
      expandable: true,
      state: null,
      holders: [],
      mark: top.marks(address.root, rel)
    }
    const now = yield* Clock.currentTimeMillis
    return {
      node,
      children,
      breadcrumb: pathBreadcrumb(address, rel, item, top),
      complete: node.size.complete && walk.problems.length === 0,
      problems: walk.problems,
      scannedAt: now,
      roots: { agentDir: ctx.agentDir.path, webDataRoot: top.webDataRoot }
    }
  })

type ChildOf = (name: string, extra: Partial<MapNode> & { readonly size: NodeSize; readonly expandable: boolean }) => MapNode

/** A tenant's children: its runs (the Inventory's listing), the unowned entries beside them, its quarantined trees. */
const tenantChildren = (ctx: MapContext, walk: SizeWalk, path: string, tenant: { readonly category: string; readonly tenant: string }, child: ChildOf) =>
  Effect.gen(function*() {
    const children: Array<MapNode> = []
    const list = yield* ctx.inventory.listRuns(tenant, { maxEntries: ctx.maxEntries }).pipe(Effect.orDie)
    const listedComplete = !list.truncated && list.errors.length === 0
    for (const e of list.errors) walk.problems.push({ path: e.path, message: e.message })
    for (const run of list.runs) {
      children.push(child(run.runId, {
        kind: "run",
        size: nodeSizeOfInventory(run.size),
        expandable: true,
        state: run.state,
        holders: run.holders
      }))
    }
    for (const u of list.unowned) children.push(child(u.name, { kind: "unowned", state: "unowned", size: yield* walk.measure(u.path), expandable: false }))
    for (const q of yield* walk.list(NodePath.join(path, TENANT_TRASH_DIR))) {
      const name = `${TENANT_TRASH_DIR}/${q.name}`
      children.push(child(name, { kind: "quarantined", state: "quarantined", size: yield* walk.measure(NodePath.join(path, TENANT_TRASH_DIR, q.name)), expandable: false }))
    }
    return { children, listedComplete }
  })

/** Any other directory's children: its entries, each measured; a category's directories are its tenants. */
const entryChildren = (walk: SizeWalk, path: string, kind: ReturnType<typeof agentPathKind> | "entry", child: ChildOf) =>
  Effect.gen(function*() {
    const children: Array<MapNode> = []
    for (const entry of yield* walk.list(path)) {
      const isDir = entry.type === "Directory"
      children.push(child(entry.name, {
        kind: kind === "category" && isDir ? "tenant" : "entry",
        size: yield* walk.measure(NodePath.join(path, entry.name)),
        expandable: isDir
      }))
    }
    return { children, listedComplete: true }
  })

/** The whole, the tier, then the top-level item and each directory between it and the node. */
const pathBreadcrumb = (address: PathAddress, rel: string, item: MapNode, top: LevelTop): MapLevel["breadcrumb"] => {
  const tierNode = top.tiers.find((t) => t.tier === item.tier)!
  const topRel = idRel(item.id)
  const between = address.segments.slice(topRel.split("/").length, -1)
  return [
    { id: top.rootNode.id, label: top.rootNode.label },
    { id: tierNode.id, label: tierNode.label },
    ...(rel === topRel ? [] : [{ id: item.id, label: item.label }]),
    ...between.map((name, k) => {
      const upTo = [...topRel.split("/"), ...between.slice(0, k + 1)].join("/")
      return { id: pathId(address.root, upTo), label: name }
    })
  ]
}

/** The path part of a path node's id (`a:work/tools` → `work/tools`). */
const idRel = (id: string): string => id.slice(2)
