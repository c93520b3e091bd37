/**
 * The simulated world behind the Memory layers (docs/testing.md "The simulated world (Memory)"):
 * an inode tree with several devices, simulated hosts with boots and process tables, fault injection, a crash
 * point and an operation journal. The FileSystem port semantics live in `MemoryFileSystem.ts`, the Host port in
 * `MemoryHost.ts`; `layerMemory` (in `MemoryFileSystem.ts`) builds a fresh world with both ports and the driver.
 *
 * Driver API (synchronous unless marked Effect; a `MemoryWorld` is also the `MemoryDriver` service):
 * - `MemoryWorld.make(options?)` — cheap: one root directory (mode 0o755, uid 0, device `rootDevice`, default 1).
 * - `mount(path, deviceId)` — the existing directory at `path` (and everything under it) becomes device
 *   `deviceId`; renames and hard links across devices fail with EXDEV; removing or renaming the mount point
 *   fails with EBUSY; the tree walks never enter it (domain/OneFileSystem.ts).
 * - `injectFault({ op?, path?, nth?, count?, errno, pid? })` → handle with `remove()` and `fired`. `op` is a
 *   port method name (matches top-level calls) or a step name such as `writeFileAtomic.rename`,
 *   `writeFileAtomic.create`, `removeTree.removeFile`, `removeTree.removeDirectory` (matches that step only).
 *   Without `op` the fault matches top-level calls of any method. `path` (string: equal; RegExp: test) is
 *   matched against both paths of the call. `nth` (1-based, default 1) is the first matching call that fails,
 *   `count` (default 1, `Infinity` allowed) how many consecutive matching calls fail from there. `clearFaults()`.
 * - `crashAfter(n, scope?)` — after `n` more successful mutating steps (by processes in `scope`
 *   `{ hostname?, pid? }`, default all) every further operation of those processes fails with errno
 *   "ECRASHED" (reason "Unknown": a test-only errno, never a public reason; `isSimulatedCrash`), reads too,
 *   and nothing changes. `crashAfter(0)` crashes at once. Every created
 *   directory of a recursive `makeDirectory`, each step of `writeFileAtomic` (create temp, rename, cleanup) and
 *   of `replaceFileIfUnchanged` (create temp, check-and-rename or check-and-remove, cleanup), of
 *   `writeFileExclusive` (create empty, write: a crash between them leaves an empty file) and
 *   each removal inside `removeTree` counts as one step, so a crash can leave a temp file or half a tree.
 *   `recover()` clears every crash point (as if new processes started); `crashed` tells whether one fired.
 *   `mutationCount` counts every successful mutating step since the world was made (never reset): count a
 *   scenario's steps by difference, then crash at every index 0..count.
 * - `journal` — every call `{ seq, op, path, path2?, ok, errno?, hostname?, pid? }` in completion order, with
 *   compound steps recorded as their own entries (`op` "writeFileAtomic.create", "removeTree.removeFile" …)
 *   before the call's own entry; `clearJournal()`.
 * - Hosts (machines): `addHost(name, { machineId?, bootedAtMs? })`, `spawn(host, { pid? })` → pid (a new start time from the host's monotonic tick
 *   counter; an explicit pid that is alive is replaced: pid reuse with a new start time), `kill(host, pid)` →
 *   whether it was alive, `reboot(host, { atMs? })` → new boot id (process table cleared, pid and tick counters restart,
 *   so old pids and start times come back: only the boot id tells them apart), `bootId(host)`,
 *   `machineId(host)`, `bootedAt(host)`. A process of a machine may report another host name (two machines
 *   of one name) and run with its clock off (`clockSkewMs` of its MemoryHost and MemoryFileSystem, its effects
 *   run on `MemoryHost.skewedClock`): file mtimes are always the world's clock (the caller's `Clock` minus its
 *   skew), as a shared file system stamps them.
 *   `startTimeOf(host, pid)`, `processes(host)`. `spawn` adds a missing host.
 * - `chown(path, uid)` (no-follow), `tree(root?)` snapshot for before/after comparisons, `readFixture(path)`,
 *   and the Effects `writeFixture`, `mkdirFixture`, `symlinkFixture` that seed the tree without journal, faults,
 *   crash checks or mutation counting (mtimes from `Clock`).
 *
 * Permission bits and owners are recorded but never enforced (read/write/search permission is not checked):
 * tests run as root in CI and the Node layer does not deny root either.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { atomicTempName } from "../domain/AtomicWrite.js"
import type { FileType } from "../services/FileSystem.js"

/**
 * The errno of every call a crashed process makes (see `crashAfter`). A test-only errno, not a public
 * reason: the port error says `reason: "Unknown"`, `errno: "ECRASHED"`, so a program treats it as any
 * unexpected failure (it cannot mean anything to a real caller) and a test tells it apart with
 * `isSimulatedCrash`. (Not a defect: the crashed process's finalizers still run in the test's runtime, and
 * they fail as the process's other calls do, where a real crash would simply stop them.)
 */
export const CRASHED = "ECRASHED"

/**
 * Whether an error is the Memory world's simulated crash: the port's `FileSystemError`, or the
 * `@effect/platform` `SystemError` of `pi-agent-storage/testing` (its errno is the cause's `code`).
 */
export const isSimulatedCrash = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "_tag" in error && (
    (error._tag === "FileSystemError" && "errno" in error && error.errno === CRASHED) ||
    (error._tag === "SystemError" && "cause" in error && typeof error.cause === "object" && error.cause !== null &&
      "code" in error.cause && error.cause.code === CRASHED)
  )

// ---------------------------------------------------------------------------------------------- inodes

interface NodeBase {
  readonly ino: number
  dev: number
  mode: number
  uid: number
  mtimeMs: number
  nlink: number
}
export interface FileNode extends NodeBase {
  readonly kind: "File"
  data: Uint8Array
}
export interface DirNode extends NodeBase {
  readonly kind: "Directory"
  readonly entries: Map<string, Node>
  /** The directory holding this one (the root is its own parent). */
  parent: DirNode
  mountRoot: boolean
}
export interface LinkNode extends NodeBase {
  readonly kind: "SymbolicLink"
  readonly target: string
}
export type Node = FileNode | DirNode | LinkNode

/** A failure of a simulated syscall, carried as a value (never thrown). */
export interface Errno {
  readonly _tag: "Errno"
  readonly errno: string
}
export const errno = (code: string): Errno => ({ _tag: "Errno", errno: code })
export const isErrno = (u: unknown): u is Errno =>
  typeof u === "object" && u !== null && (u as { readonly _tag?: unknown })._tag === "Errno"

/**
 * Where a path ends: the directory holding the last component, its name and the entry there (if any).
 * `name` is "" for the root, "." or ".." when the path ends in one (then `node` is that directory).
 */
export interface Lookup {
  readonly dir: DirNode
  readonly name: string
  readonly node: Node | undefined
  readonly trailingSlash: boolean
}
export const isSpecialName = (name: string): boolean => name === "" || name === "." || name === ".."

/** Whether `ancestor` is `dir` or one of its parents. */
export const containsDir = (ancestor: DirNode, dir: DirNode): boolean => {
  for (let cur = dir;; cur = cur.parent) {
    if (cur === ancestor) return true
    if (cur.parent === cur) return false
  }
}

/**
 * rename(2)'s judgement before anything moves, in Linux's order (another mount first, then "." or "..", then a
 * missing source), one rule for the library's Memory port and the simulated platform FileSystem: the errno it
 * fails with; "same" when both names are one inode (nothing to do); else undefined (the caller replaces
 * `b.node`, if any, by `a.node`).
 */
export const renameRefusal = (a: Lookup, b: Lookup): Errno | "same" | undefined => {
  if (a.dir.dev !== b.dir.dev) return errno("EXDEV")
  if (isSpecialName(a.name) || isSpecialName(b.name)) return errno("EBUSY")
  const src = a.node
  if (src === undefined) return errno("ENOENT")
  const dst = b.node
  if (src.kind !== "Directory" && b.trailingSlash) return errno("ENOTDIR")
  if (src === dst) return "same"
  if (src.kind === "Directory" && containsDir(src, b.dir)) return errno("EINVAL")
  if (dst?.kind === "Directory" && containsDir(dst, a.dir)) return errno("ENOTEMPTY")
  if (src.kind === "Directory" && src.mountRoot) return errno("EBUSY")
  if (dst === undefined) return undefined
  if (src.kind === "Directory") {
    if (dst.kind !== "Directory") return errno("ENOTDIR")
    if (dst.mountRoot) return errno("EBUSY")
    if (dst.entries.size > 0) return errno("ENOTEMPTY")
  } else if (dst.kind === "Directory") {
    return errno("EISDIR")
  }
  return undefined
}

/** Who performs an operation. */
export interface ProcessContext {
  readonly uid: number
  readonly cwd: string
  readonly umask: number
  readonly hostname?: string | undefined
  readonly pid?: number | undefined
}

const MAX_SYMLINK_HOPS = 40
const NAME_MAX = 255
const PATH_MAX = 4095
export const DIRECTORY_SIZE = 4096

const encoder = new TextEncoder()
export const byteLength = (s: string): number => encoder.encode(s).length

/** Link `node` into `dir` (a subdirectory adds one link to `dir`: its ".."). */
export const attach = (dir: DirNode, name: string, node: Node): void => {
  dir.entries.set(name, node)
  if (node.kind === "Directory") dir.nlink++
  else node.nlink++
}

/** Unlink an entry from `dir` (the node lives on while other links hold it). */
export const detach = (dir: DirNode, name: string, node: Node): void => {
  dir.entries.delete(name)
  if (node.kind === "Directory") dir.nlink--
  else node.nlink--
}

export const sizeOf = (node: Node): number =>
  node.kind === "File" ? node.data.length : node.kind === "SymbolicLink" ? byteLength(node.target) : DIRECTORY_SIZE

/**
 * Every step a fault may name to fail that step only (`injectFault({ op: "writeFileAtomic.rename", … })`): the
 * steps of compound calls, each with its own gate and journal entry. The Memory layers' `step` takes only
 * these, and a test keeps the list of docs/testing.md ("Testing your code against the simulated world") equal to it.
 */
export const FAULT_STEPS = [
  "writeFileAtomic.create",
  "writeFileAtomic.rename",
  "writeFileAtomic.cleanup",
  "replaceFileIfUnchanged.create",
  "replaceFileIfUnchanged.rename",
  "replaceFileIfUnchanged.remove",
  "replaceFileIfUnchanged.cleanup",
  "writeFileExclusive.create",
  "writeFileExclusive.write",
  "removeTree.removeFile",
  "removeTree.removeDirectory",
  "linkEach.link",
  "platform:writeFile.open",
  "platform:writeFile.write",
  "platform:remove.unlink",
  "platform:remove.rmdir",
  "platform:makeTempDirectoryScoped.unlink",
  "platform:makeTempDirectoryScoped.rmdir",
  "platform:makeTempFileScoped.unlink",
  "platform:makeTempFileScoped.rmdir",
  "platform:copy.mkdir",
  "platform:copy.copyFile",
  "platform:copy.symlink",
  "platform:copy.unlink"
] as const
export type FaultStep = typeof FAULT_STEPS[number]
/** The platform layer's steps without their `platform:` prefix (it adds it). */
export type PlatformFaultStep<S = FaultStep> = S extends `platform:${infer Step}` ? Step : never

export const joinPath = (dir: string, name: string): string => (dir.endsWith("/") ? dir + name : `${dir}/${name}`)

// ---------------------------------------------------------------------------------------------- driver types

export interface FaultSpec {
  /** A port method name, or a step name such as "writeFileAtomic.rename"; any top-level call when absent. */
  readonly op?: string
  readonly path?: string | RegExp
  /** The Nth matching call fails first (1-based, default 1). */
  readonly nth?: number
  /** How many matching calls fail from the Nth on (default 1). */
  readonly count?: number
  readonly errno: string
  /** Only calls of the process with this pid. */
  readonly pid?: number
}

export interface FaultHandle {
  readonly remove: () => void
  /** How many calls this fault has failed so far. */
  readonly fired: () => number
}

export interface CrashScope {
  readonly hostname?: string
  readonly pid?: number
}

export interface JournalEntry {
  readonly seq: number
  readonly op: string
  readonly path: string
  readonly path2?: string
  readonly ok: boolean
  readonly errno?: string
  readonly hostname?: string
  readonly pid?: number
}

export interface TreeEntry {
  readonly type: FileType
  readonly mode: number
  readonly uid: number
  readonly ino: number
  readonly dev: number
  readonly nlink: number
  readonly size: number
  readonly mtimeMs: number
  /** Files: FNV-1a 32-bit hash of the content (hex). */
  readonly hash?: string
  /** Symlinks: the target string. */
  readonly target?: string
}

export interface FixtureOptions {
  readonly mode?: number
  readonly uid?: number
  readonly mtimeMs?: number
}

export interface MemoryWorldOptions {
  /** Device id of the root filesystem (default 1). */
  readonly rootDevice?: number
  /** Record the journal (default true); property tests that never read it can turn it off. */
  readonly journal?: boolean
  /**
   * Scheduling jitter: before each call a process yields 1 + (0..maxYields) times, drawn from a PRNG seeded
   * here, so property tests reach interleavings a fair one-yield-per-call schedule never produces (one
   * process running several steps while another runs one). Default: exactly one yield.
   */
  readonly jitter?: { readonly seed: number; readonly maxYields: number }
}

interface Fault {
  readonly spec: FaultSpec
  seen: number
  fired: number
}

interface CrashPoint {
  readonly scope: CrashScope | undefined
  remaining: number
  crashed: boolean
}

interface HostState {
  bootSeq: number
  bootId: string
  readonly machineId: string | null
  /** When the current boot began, on the world's clock (the file systems' clock); `null`: unknown. */
  bootedAtMs: number | null
  readonly processes: Map<number, number>
  nextPid: number
  ticks: number
}

const FIRST_PID = 100
const FIRST_TICK = 1000

const fnv1a = (bytes: Uint8Array): string => {
  let h = 0x811c9dc5
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0
  return h.toString(16).padStart(8, "0")
}

const hostMachineId = (name: string): string => {
  const h = fnv1a(encoder.encode(`machine:${name}`))
  return `${h}${h}${h}${h}`
}

const hostBootId = (name: string, seq: number): string => {
  const h = fnv1a(encoder.encode(name))
  return `${h}-0000-4000-8000-${seq.toString(16).padStart(12, "0")}`
}

const scopeMatches = (scope: CrashScope | undefined, ctx: ProcessContext): boolean =>
  scope === undefined ||
  ((scope.hostname === undefined || scope.hostname === ctx.hostname) &&
    (scope.pid === undefined || scope.pid === ctx.pid))

const pathMatches = (pattern: string | RegExp, path: string | undefined): boolean => {
  if (path === undefined) return false
  if (typeof pattern === "string") return pattern === path
  pattern.lastIndex = 0
  return pattern.test(path)
}

// ---------------------------------------------------------------------------------------------- the world

export class MemoryWorld {
  static make(options?: MemoryWorldOptions): MemoryWorld {
    return new MemoryWorld(options)
  }

  readonly root: DirNode
  private nextIno = 2
  private mutations = 0
  private seq = 0
  private tempSeq = 0
  private readonly journalEnabled: boolean
  private readonly entries: Array<JournalEntry> = []
  private faults: Array<Fault> = []
  private crashes: Array<CrashPoint> = []
  private readonly hosts = new Map<string, HostState>()
  private readonly jitter: { state: number; readonly maxYields: number } | undefined

  constructor(options?: MemoryWorldOptions) {
    this.journalEnabled = options?.journal ?? true
    this.jitter = options?.jitter === undefined ? undefined : { state: options.jitter.seed >>> 0, maxYields: options.jitter.maxYields }
    const root = {
      kind: "Directory",
      ino: this.allocIno(),
      dev: options?.rootDevice ?? 1,
      mode: 0o755,
      uid: 0,
      mtimeMs: 0,
      nlink: 2,
      entries: new Map(),
      mountRoot: true
    } as Omit<DirNode, "parent"> as DirNode
    root.parent = root
    this.root = root
  }

  allocIno(): number {
    return this.nextIno++
  }

  /** A fresh name for a temp file (unique in this world: the pid in 4 hex digits, then the world's counter in 8). */
  tempName(name: string, ctx: ProcessContext): string {
    const pid = (ctx.pid ?? 0).toString(16).padStart(4, "0").slice(-4)
    return atomicTempName(name, `${pid}${(++this.tempSeq).toString(16).padStart(8, "0")}`)
  }

  // -------------------------------------------------------------------------------------------- paths

  /**
   * Resolve `path` like Linux path_resolution(7): intermediate symlinks are followed (ELOOP after 40), the
   * final one only when `followFinal` or the path ends in "/". A missing final entry is not an error.
   */
  resolve(path: string, cwd: string, followFinal: boolean): Lookup | Errno {
    if (path === "") return errno("ENOENT")
    if (path.length > PATH_MAX) return errno("ENAMETOOLONG")
    let cur: DirNode
    if (path.startsWith("/") || cwd === "/") {
      cur = this.root
    } else {
      const base = this.resolve(cwd, "/", true)
      if (isErrno(base)) return base
      if (base.node?.kind !== "Directory") return errno(base.node === undefined ? "ENOENT" : "ENOTDIR")
      cur = base.node
    }
    let comps = path.split("/").filter((c) => c !== "")
    const trailingSlash = path.endsWith("/") && comps.length > 0
    if (comps.length === 0) return { dir: this.root, name: "", node: this.root, trailingSlash: false }
    const followLast = followFinal || trailingSlash
    let hops = 0
    let i = 0
    for (;;) {
      const name = comps[i]!
      if (name.length > NAME_MAX) return errno("ENAMETOOLONG")
      const isLast = i === comps.length - 1
      const node = name === "." ? cur : name === ".." ? cur.parent : cur.entries.get(name)
      if (isLast && (node === undefined || node.kind !== "SymbolicLink" || !followLast)) {
        if (trailingSlash && node !== undefined && node.kind !== "Directory") return errno("ENOTDIR")
        return { dir: cur, name, node, trailingSlash }
      }
      if (node === undefined) return errno("ENOENT")
      if (node.kind === "File") return errno("ENOTDIR")
      if (node.kind === "Directory") {
        cur = node
        i++
        continue
      }
      if (++hops > MAX_SYMLINK_HOPS) return errno("ELOOP")
      if (node.target.startsWith("/")) cur = this.root
      comps = node.target.split("/").filter((c) => c !== "").concat(comps.slice(i + 1))
      i = 0
      if (comps.length === 0) return { dir: cur, name: ".", node: cur, trailingSlash }
    }
  }

  /** The path's node following every symlink, or undefined. */
  private resolveNode(path: string, followFinal: boolean): Node | undefined {
    const found = this.resolve(path, "/", followFinal)
    return isErrno(found) ? undefined : found.node
  }

  // -------------------------------------------------------------------------------------------- gates

  isCrashed(ctx: ProcessContext): boolean {
    for (const crash of this.crashes) if (crash.crashed && scopeMatches(crash.scope, ctx)) return true
    return false
  }

  /** The errno that stops `op` right now (crash first, then injected faults), or undefined. */
  /** How many times the next call yields before acting (see `MemoryWorldOptions.jitter`). */
  yieldsBeforeCall(): number {
    const j = this.jitter
    if (j === undefined || j.maxYields <= 0) return 1
    // mulberry32: small, seedable, good enough to spread schedules.
    j.state = (j.state + 0x6d2b79f5) >>> 0
    let t = j.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    const unit = ((t ^ (t >>> 14)) >>> 0) / 4294967296
    return 1 + Math.floor(unit * (j.maxYields + 1))
  }

  check(ctx: ProcessContext, op: string, path: string, path2?: string): string | undefined {
    if (this.isCrashed(ctx)) return CRASHED
    let hit: string | undefined
    const isStep = op.includes(".")
    for (const fault of this.faults) {
      const spec = fault.spec
      if (spec.op === undefined ? isStep : spec.op !== op) continue
      if (spec.pid !== undefined && spec.pid !== ctx.pid) continue
      if (spec.path !== undefined && !pathMatches(spec.path, path) && !pathMatches(spec.path, path2)) continue
      fault.seen++
      if (hit === undefined && fault.seen >= (spec.nth ?? 1) && fault.fired < (spec.count ?? 1)) {
        fault.fired++
        hit = spec.errno
      }
    }
    return hit
  }

  /** Count one successful mutating step and arm any crash point it reaches. */
  mutated(ctx: ProcessContext): void {
    this.mutations++
    for (const crash of this.crashes) {
      if (crash.crashed || !scopeMatches(crash.scope, ctx)) continue
      crash.remaining--
      if (crash.remaining <= 0) crash.crashed = true
    }
  }

  record(ctx: ProcessContext, op: string, path: string, path2: string | undefined, failure: string | undefined): void {
    if (!this.journalEnabled) return
    this.entries.push({
      seq: ++this.seq,
      op,
      path,
      ...(path2 === undefined ? {} : { path2 }),
      ok: failure === undefined,
      ...(failure === undefined ? {} : { errno: failure }),
      ...(ctx.hostname === undefined ? {} : { hostname: ctx.hostname }),
      ...(ctx.pid === undefined ? {} : { pid: ctx.pid })
    })
  }

  // -------------------------------------------------------------------------------------------- driver: fs

  mount(path: string, deviceId: number): void {
    const node = this.resolveNode(path, true)
    if (node?.kind !== "Directory") throw new Error(`mount: ${path} is not a directory`)
    if (node === this.root) throw new Error("mount: cannot mount over the root")
    const retag = (n: Node): void => {
      n.dev = deviceId
      if (n.kind === "Directory") for (const child of n.entries.values()) retag(child)
    }
    retag(node)
    node.mountRoot = true
  }

  injectFault(spec: FaultSpec): FaultHandle {
    const fault: Fault = { spec, seen: 0, fired: 0 }
    this.faults.push(fault)
    return {
      remove: () => {
        this.faults = this.faults.filter((f) => f !== fault)
      },
      fired: () => fault.fired
    }
  }

  clearFaults(): void {
    this.faults = []
  }

  crashAfter(n: number, scope?: CrashScope): void {
    this.crashes.push({ scope, remaining: n, crashed: n <= 0 })
  }

  recover(): void {
    this.crashes = []
  }

  get crashed(): boolean {
    return this.crashes.some((c) => c.crashed)
  }

  get mutationCount(): number {
    return this.mutations
  }

  get journal(): ReadonlyArray<JournalEntry> {
    return this.entries
  }

  clearJournal(): void {
    this.entries.length = 0
  }

  chown(path: string, uid: number): void {
    const node = this.resolveNode(path, false)
    if (node === undefined) throw new Error(`chown: ${path} does not exist`)
    node.uid = uid
  }

  /** Snapshot of the tree under `root` (no-follow), keyed by absolute path in walk order (names sorted). */
  tree(root = "/"): Record<string, TreeEntry> {
    const out: Record<string, TreeEntry> = {}
    const node = this.resolveNode(root, false)
    const visit = (path: string, n: Node): void => {
      out[path] = {
        type: n.kind,
        mode: n.mode,
        uid: n.uid,
        ino: n.ino,
        dev: n.dev,
        nlink: n.nlink,
        size: sizeOf(n),
        mtimeMs: n.mtimeMs,
        ...(n.kind === "File" ? { hash: fnv1a(n.data) } : {}),
        ...(n.kind === "SymbolicLink" ? { target: n.target } : {})
      }
      if (n.kind === "Directory") {
        for (const name of [...n.entries.keys()].sort()) visit(joinPath(path, name), n.entries.get(name)!)
      }
    }
    if (node !== undefined) visit(root, node)
    return out
  }

  /** Content of a regular file (no-follow), or undefined. */
  readFixture(path: string): Uint8Array | undefined {
    const node = this.resolveNode(path, false)
    return node?.kind === "File" ? node.data.slice() : undefined
  }

  readFixtureText(path: string): string | undefined {
    const bytes = this.readFixture(path)
    return bytes === undefined ? undefined : new TextDecoder().decode(bytes)
  }

  /** Create parents as needed (mode 0o755), then write or overwrite a regular file. */
  writeFixture(path: string, content: string | Uint8Array, options?: FixtureOptions): Effect.Effect<void> {
    return this.fixture(path, options, (dir, name, existing, now) => {
      const data = typeof content === "string" ? encoder.encode(content) : content.slice()
      if (existing?.kind === "File") {
        existing.data = data
        existing.mtimeMs = options?.mtimeMs ?? now
        if (options?.mode !== undefined) existing.mode = options.mode
        if (options?.uid !== undefined) existing.uid = options.uid
        return undefined
      }
      if (existing !== undefined) return `writeFixture: ${path} exists and is not a file`
      attach(dir, name, this.newFile(dir, data, options?.mode ?? 0o600, options?.uid ?? 1000, options?.mtimeMs ?? now))
      dir.mtimeMs = now
      return undefined
    })
  }

  /** Create a directory and its parents (mode 0o755 unless given); an existing directory is kept. */
  mkdirFixture(path: string, options?: FixtureOptions): Effect.Effect<void> {
    return this.fixture(path, options, (dir, name, existing, now) => {
      if (existing?.kind === "Directory") return undefined
      if (existing !== undefined) return `mkdirFixture: ${path} exists and is not a directory`
      const mode = options?.mode ?? 0o755
      attach(dir, name, this.newDir(dir, mode, options?.uid ?? 1000, options?.mtimeMs ?? now))
      dir.mtimeMs = now
      return undefined
    })
  }

  symlinkFixture(target: string, path: string, options?: FixtureOptions): Effect.Effect<void> {
    return this.fixture(path, options, (dir, name, existing, now) => {
      if (existing !== undefined) return `symlinkFixture: ${path} exists`
      attach(dir, name, this.newLink(dir, target, options?.uid ?? 1000, options?.mtimeMs ?? now))
      dir.mtimeMs = now
      return undefined
    })
  }

  private fixture(
    path: string,
    options: FixtureOptions | undefined,
    place: (dir: DirNode, name: string, existing: Node | undefined, now: number) => string | undefined
  ): Effect.Effect<void> {
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const comps = path.split("/").filter((c) => c !== "")
      const last = comps.pop()
      if (!path.startsWith("/") || last === undefined) return Effect.dieMessage(`fixture path must be absolute: ${path}`)
      let dir = this.root
      let prefix = ""
      for (const name of comps) {
        prefix = `${prefix}/${name}`
        let next = dir.entries.get(name)
        if (next?.kind === "SymbolicLink") {
          const target = this.resolve(prefix, "/", true)
          next = isErrno(target) ? undefined : target.node
          if (next === undefined) return Effect.dieMessage(`fixture: dangling link in ${path}`)
        }
        if (next === undefined) {
          next = this.newDir(dir, 0o755, options?.uid ?? 1000, now)
          attach(dir, name, next)
        }
        if (next.kind !== "Directory") return Effect.dieMessage(`fixture: ${name} in ${path} is not a directory`)
        dir = next
      }
      const problem = place(dir, last, dir.entries.get(last), now)
      return problem === undefined ? Effect.void : Effect.dieMessage(problem)
    })
  }

  // -------------------------------------------------------------------------------------------- node factories

  // New nodes are unlinked (nlink 0 for files and links) until `attach` puts them in a directory.
  newFile(dir: DirNode, data: Uint8Array, mode: number, uid: number, now: number): FileNode {
    return { kind: "File", ino: this.allocIno(), dev: dir.dev, mode: mode & 0o7777, uid, mtimeMs: now, nlink: 0, data }
  }

  newDir(dir: DirNode, mode: number, uid: number, now: number): DirNode {
    return {
      kind: "Directory",
      ino: this.allocIno(),
      dev: dir.dev,
      mode: mode & 0o7777,
      uid,
      mtimeMs: now,
      nlink: 2,
      entries: new Map(),
      parent: dir,
      mountRoot: false
    }
  }

  newLink(dir: DirNode, target: string, uid: number, now: number): LinkNode {
    return { kind: "SymbolicLink", ino: this.allocIno(), dev: dir.dev, mode: 0o777, uid, mtimeMs: now, nlink: 0, target }
  }

  // -------------------------------------------------------------------------------------------- driver: hosts

  /**
   * A simulated machine. `machineId` (default: derived from the name; `null`: none) is what its processes
   * record beside the host name (give two machines one id to simulate a cloned image); `bootedAtMs`: when
   * its current boot began on the world's clock (default unknown: no process there knows its uptime).
   * Options count only when the machine is new.
   */
  addHost(name: string, options?: { readonly machineId?: string | null; readonly bootedAtMs?: number }): void {
    if (this.hosts.has(name)) return
    this.hosts.set(name, {
      bootSeq: 1,
      bootId: hostBootId(name, 1),
      machineId: options?.machineId === undefined ? hostMachineId(name) : options.machineId,
      bootedAtMs: options?.bootedAtMs ?? null,
      processes: new Map(),
      nextPid: FIRST_PID,
      ticks: FIRST_TICK
    })
  }

  private host(name: string): HostState {
    this.addHost(name)
    return this.hosts.get(name)!
  }

  /** Start a process; an explicit pid that is alive is reused with a new start time. */
  spawn(hostname: string, options?: { readonly pid?: number }): number {
    const host = this.host(hostname)
    let pid = options?.pid
    if (pid === undefined) {
      while (host.processes.has(host.nextPid)) host.nextPid++
      pid = host.nextPid++
    }
    host.ticks += 1
    host.processes.set(pid, host.ticks)
    return pid
  }

  kill(hostname: string, pid: number): boolean {
    return this.hosts.get(hostname)?.processes.delete(pid) ?? false
  }

  /** A new boot (`atMs`: when it began on the world's clock; unknown when absent). */
  reboot(hostname: string, options?: { readonly atMs?: number }): string {
    const host = this.host(hostname)
    host.bootSeq++
    host.bootId = hostBootId(hostname, host.bootSeq)
    host.bootedAtMs = options?.atMs ?? null
    host.processes.clear()
    host.nextPid = FIRST_PID
    host.ticks = FIRST_TICK
    return host.bootId
  }

  bootId(hostname: string): string {
    return this.host(hostname).bootId
  }

  machineId(hostname: string): string | null {
    return this.host(hostname).machineId
  }

  /** When the machine's current boot began on the world's clock; `null` when unknown. */
  bootedAt(hostname: string): number | null {
    return this.host(hostname).bootedAtMs
  }

  startTimeOf(hostname: string, pid: number): number | null {
    return this.hosts.get(hostname)?.processes.get(pid) ?? null
  }

  processes(hostname: string): ReadonlyMap<number, number> {
    return new Map(this.hosts.get(hostname)?.processes ?? [])
  }
}

/** The world behind the Memory layers, for tests that drive it (faults, crashes, hosts, journal, fixtures). */
export class MemoryDriver extends Context.Tag("pi-agent-storage/MemoryDriver")<MemoryDriver, MemoryWorld>() {}
