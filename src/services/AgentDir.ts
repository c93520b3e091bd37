/**
 * The resolved agent directory (docs/architecture.md "Architecture": AgentDir) as a service, so programs never read the environment themselves.
 *
 * A symlink at the agent dir's own path (`~/.pi/agent -> /other/disk/agent`, the user's choice of disk) is
 * resolved here, once, when the layer is built: `path` is the directory every reader (status, doctor, work
 * ls, the migration) and every writer uses, `given` the path as it was given. Links below the agent dir are
 * never followed.
 */
import * as NodePath from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type AgentDirSource, type AgentPaths, agentPaths, resolveAgentDir } from "../domain/AgentPaths.js"
import { FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"

/** Links followed at most while resolving one path, Linux's own limit (path_resolution(7)): a loop stops there. */
const MAX_LINKS = 40

/**
 * Follow symlinks at `path` itself (never below it): the directory a reader should look at. A path that does
 * not exist, cannot be read or is not a link resolves to itself.
 */
export const resolveRootLink = (fs: FileSystem["Type"], path: string): Effect.Effect<string> =>
  Effect.map(rootLinkHops(fs, path), (hops) => hops[hops.length - 1]!)

/**
 * Every path `resolveRootLink` passes through, `path` first and the answer last (one entry when `path` is
 * no link): a reader that trusts what it saw there (the config history's clean scan) watches each of them.
 */
export const rootLinkHops = (fs: FileSystem["Type"], path: string): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function*() {
    const hops = [path]
    let current = path
    for (let hop = 0; hop < MAX_LINKS; hop++) {
      // Read-only: what cannot be examined resolves to itself; the scan that reads it then reports the problem.
      const info = yield* fs.lstat(current).pipe(Effect.option)
      if (info._tag === "None" || info.value.type !== "SymbolicLink") return hops
      const target = yield* fs.readLink(current).pipe(Effect.option)
      if (target._tag === "None") return hops
      if (climbs(target.value)) {
        // Where the kernel could not go (a step missing, not a directory, a loop) the link is not followed:
        // the reader finds a symlink and reports it, rather than use a directory the kernel would not reach.
        const reached = yield* kernelJoin(fs, NodePath.dirname(current), target.value)
        if (reached === undefined) return hops
        current = reached
      } else {
        current = NodePath.resolve(NodePath.dirname(current), target.value)
      }
      hops.push(current)
    }
    return hops
  })

/** Whether a link target has a `..` component: only then can the path as written and the kernel's answer differ. */
const climbs = (target: string): boolean => NodePath.sep === "/" && target.split("/").includes("..")

/**
 * The directory the kernel reaches for a link in `dir` whose target climbs (`..`). The kernel takes `..` from
 * where it has got to, not from the path as written: with `~/.pi -> /disk/pi` and `~/.pi/agent -> ../agent`,
 * the agent dir is `/disk/agent`, where `NodePath.resolve` says `~/agent` (a directory that may not exist, or
 * be another one). The components are walked as path_resolution(7) does, each symlink on the way followed
 * (up to MAX_LINKS) and `..` the parent of what was reached; the last one is not followed (it is the next hop).
 * Undefined where the kernel would fail (a step missing, a file, more than 40 links) or a step cannot be
 * examined: nothing proves where the link leads.
 */
const kernelJoin = (fs: FileSystem["Type"], dir: string, target: string): Effect.Effect<string | undefined> =>
  Effect.gen(function*() {
    const componentsOf = (path: string) => path.split("/").filter((name) => name !== "" && name !== ".")
    let reached: Array<string> = []
    let left = componentsOf(NodePath.isAbsolute(target) ? target : `${dir}/${target}`)
    let links = 0
    while (left.length > 0) {
      const name = left.shift()!
      if (name === "..") {
        reached.pop()
        continue
      }
      reached.push(name)
      if (left.length === 0) break
      const here = `/${reached.join("/")}`
      const info = yield* fs.lstat(here).pipe(Effect.option)
      if (info._tag === "None") return undefined
      if (info.value.type === "Directory") continue
      if (info.value.type !== "SymbolicLink") return undefined // ENOTDIR: a step that is a file
      const link = yield* fs.readLink(here).pipe(Effect.option)
      if (link._tag === "None" || ++links > MAX_LINKS) return undefined
      reached.pop()
      if (NodePath.isAbsolute(link.value)) reached = []
      left = [...componentsOf(link.value), ...left]
    }
    return `/${reached.join("/")}`
  })

export class AgentDir extends Context.Tag("pi-agent-storage/AgentDir")<AgentDir, {
  /** The agent directory itself: `given` with a symlink at its own path resolved. */
  readonly path: string
  /** The path as given (option, `$PI_ADAPTATIVE_CODING_AGENT_DIR`, `~/.pi/agent`); equals `path` unless it is a symlink. */
  readonly given: string
  readonly source: AgentDirSource
  /** The canonical paths under `path`. */
  readonly paths: AgentPaths
}>() {
  /** An agent dir already resolved (or known not to be a link): `given` and `path` are the same. */
  static readonly at = (path: string, source: AgentDirSource = "option"): AgentDir["Type"] => ({
    path,
    given: path,
    source,
    paths: agentPaths(path)
  })

  /** Resolve the given path's root link once. */
  static readonly make = (given: string, source: AgentDirSource): Effect.Effect<AgentDir["Type"], never, FileSystem> =>
    Effect.map(Effect.flatMap(FileSystem, (fs) => resolveRootLink(fs, given)), (path) => ({ path, given, source, paths: agentPaths(path) }))

  /** Resolve from an explicit option, then `$PI_ADAPTATIVE_CODING_AGENT_DIR`, then `~/.pi/agent`; then its root link. */
  static readonly layerWith = (explicit?: string): Layer.Layer<AgentDir, never, Host | FileSystem> =>
    Layer.effect(
      AgentDir,
      Effect.flatMap(Host, (host) => {
        const resolved = resolveAgentDir({ explicit, env: host.env, home: host.homeDir, cwd: host.cwd })
        return AgentDir.make(resolved.path, resolved.source)
      })
    )

  /** `$PI_ADAPTATIVE_CODING_AGENT_DIR`, else `~/.pi/agent` (`layerWith(path)` for an explicit one). */
  static readonly layer: Layer.Layer<AgentDir, never, Host | FileSystem> = AgentDir.layerWith()
}
