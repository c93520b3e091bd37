/**
 * State snapshots (docs/snapshots.md "State snapshots"), the pure parts: what is snapshotted, where snapshots live, their ids, the
 * manifest format, the link decision and the typed errors. No I/O; the program is `services/StateBackups.ts`.
 *
 * Layout of a backup root:
 *   <root>/<id>/manifest.json            written and fsynced last, inside `.incomplete-<id>/`, then renamed
 *   <root>/<id>/agent/<path>             files relative to the agent dir (plain copies or hard links
 *   <root>/<id>/web/<extId>/state/<path>   to the previous snapshot's copy)
 *   <root>/.incomplete-<id>/.owner       the builder's marker (markers' liveness rules)
 *   <root>/.removing-<id>/               a forgotten snapshot being deleted (never listed)
 *   <root>/.lock                         one writer per root
 */
import * as NodePath from "node:path"
import * as Schema from "effect/Schema"
import { sha256HexOfBytes } from "./Digest.js"
import { UnsafeRootReason } from "./Errors.js"
import { decodeSnapshotPath, SNAPSHOT_AGENT_ENTRIES, SNAPSHOT_PATH_MAX, type SnapshotPath, snapshotTreeProblem, STATE_EXCLUDED } from "./SnapshotPath.js"
import { PACKAGE_NAME, VERSION } from "./Version.js"
import { tierPaths } from "./WebPaths.js"
import { isInside } from "./Tiers.js"

export const STATE_BACKUP_DIR_ENV = "PI_STATE_BACKUP_DIR"
/** Who wrote a snapshot: this package, at its version. */
export const TOOL = { name: PACKAGE_NAME, version: VERSION } as const

export const MANIFEST_FILE = "manifest.json"
export const OWNER_MARKER = ".owner"
export const WRITER_LOCK = ".lock"
export const INCOMPLETE_PREFIX = ".incomplete-"
export const REMOVING_PREFIX = ".removing-"
export const VERIFY_CURSOR = ".verify-cursor"
/** The last verify's outcome (`<root>/.last-verify.json`), for the dashboard's "last verify and its age". */
export const LAST_VERIFY = ".last-verify.json"
export { STATE_EXCLUDED } from "./SnapshotPath.js"

// ------------------------------------------------------------------------------------------------ scope

/**
 * The permission bits a restore gives a live entry the manifest records with `mode`. A manifest's own hash is
 * no signature (docs/snapshots.md), so its modes are untrusted too: a restore never makes anything setuid,
 * never sets the sticky bit, and never makes anything writable by every user, whatever the manifest says; a
 * directory keeps setgid (a group's shared directory hands its group on). Pure.
 */
export const restoredMode = (type: "file" | "directory", mode: number): number => mode & (type === "directory" ? 0o2775 : 0o0775)

/** One snapshotted tree: where it lives and where it goes inside a snapshot. */
export interface ScopeRoot {
  readonly source: string
  /** POSIX path inside the snapshot: `agent/state`, `agent/MEMORY.md`, `web/<extId>/state`. */
  readonly dest: string
  /** Names directly under `source` that are not snapshotted. */
  readonly exclude: ReadonlyArray<string>
  /** The extension whose state this is (web roots), for one-extension restores. */
  readonly extId?: string
}

/** The agent dir's entries classed state or memory (the canonical table decides, nothing else lists names). */
export const agentScopeRoots = (agentDir: string): ReadonlyArray<ScopeRoot> =>
  SNAPSHOT_AGENT_ENTRIES.map((name) => ({
    source: NodePath.join(agentDir, name),
    dest: `agent/${name}`,
    exclude: name === "state" ? STATE_EXCLUDED : []
  }))

/** An extension's `state/` tier under a web data root. */
export const webScopeRoot = (webDataRoot: string, extId: string): ScopeRoot => ({
  source: tierPaths(webDataRoot, extId).stateDir,
  dest: `web/${extId}/state`,
  exclude: [],
  extId
})

/** Snapshot-relative prefixes of one extension's state: `state/extensions/<ns>/` and `data/<ns>/state/`. */
export const extensionDests = (namespace: string): ReadonlyArray<string> => [`agent/state/extensions/${namespace}`, `web/${namespace}/state`]

/** Whether `path` equals `root` or lies below it (lexically, both absolute and normalized). */
export const isWithin = (path: string, root: string): boolean => NodePath.relative(root, path) === "" || isInside(path, root)

/** `$PI_STATE_BACKUP_DIR` unless an option is given, else `<parent of agent dir>/backups/<name of agent dir>`. */
export const resolveBackupRoot = (input: {
  readonly explicit?: string | undefined
  readonly env: (name: string) => string | undefined
  readonly agentDir: string
  readonly cwd: string
}): string => {
  if (input.explicit !== undefined && input.explicit !== "") return NodePath.resolve(input.cwd, input.explicit)
  const fromEnv = input.env(STATE_BACKUP_DIR_ENV)
  if (fromEnv !== undefined && fromEnv !== "") return NodePath.resolve(input.cwd, fromEnv)
  return NodePath.join(NodePath.dirname(input.agentDir), "backups", NodePath.basename(input.agentDir))
}

// ------------------------------------------------------------------------------------------------ ids

/** `2026-12-01T07-05-33.123Z-3fa9c1`: UTC time (sorts as text in time order) and a short random part. */
export const SNAPSHOT_ID_RE = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})Z-([0-9a-f]{6})$/

export const snapshotId = (nowMs: number, random: number): string =>
  `${new Date(nowMs).toISOString().replace(/:/g, "-")}-${(random & 0xffffff).toString(16).padStart(6, "0")}`

export const isSnapshotId = (name: string): boolean => SNAPSHOT_ID_RE.test(name)

/** The time an id names (epoch ms), or `undefined` for a name that is not an id. */
export const snapshotIdTime = (id: string): number | undefined => {
  const m = SNAPSHOT_ID_RE.exec(id)
  return m === null ? undefined : Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`)
}

/** `state/restore-aside/<time>-<random>`: a restore's move-aside directory, in the agent dir's filesystem. */
export const restoreAsideName = (nowMs: number, random: number): string => snapshotId(nowMs, random)

/**
 * `<web data root>/.restore-aside/<time>-<random>/`: where a restore moves live web data aside when the web data
 * root is on another filesystem than the agent dir (a rename cannot cross). The library's own, never an
 * extension's directory: the doctor names it so.
 */
export const WEB_RESTORE_ASIDE_DIR = ".restore-aside"

// ------------------------------------------------------------------------------------------------ manifest

export const EntryType = Schema.Literal("file", "directory", "symlink")
export type EntryType = typeof EntryType.Type

const SHA256_HEX = /^[0-9a-f]{64}$/

/** Why a manifest path is refused (`decodeSnapshotPath`'s words), or `undefined`. */
const pathProblem = (path: string): string | undefined => {
  const decoded = decodeSnapshotPath(path)
  return decoded.ok ? undefined : `path ${JSON.stringify(path)} ${decoded.why}`
}

/** Why a symlink target cannot be one (empty, a NUL, longer than any path), or `undefined`. */
const targetProblem = (target: string): string | undefined =>
  target === "" ? "target is empty" : target.includes("\0") ? "target holds a NUL character" : target.length > SNAPSHOT_PATH_MAX ? `target is longer than ${SNAPSHOT_PATH_MAX} characters` : undefined

/** What each type needs: a file its SHA-256 (restore and verify check against it), a symlink its target. */
const typeProblem = (e: { readonly type: string; readonly sha256?: string | undefined; readonly target?: string | undefined }): string | undefined =>
  e.type === "file" && e.sha256 === undefined ? "a file without sha256" : e.type === "symlink" && e.target === undefined ? "a symlink without target" : undefined

const orTrue = (problem: string | undefined): string | true => problem ?? true

/**
 * One entry of a manifest. Its path is decoded by `decodeSnapshotPath` (a manifest is untrusted input: docs/snapshots.md
 * "State snapshots"); numbers are whole where the file system's are, a mode is permission bits only.
 */
export const ManifestEntry = Schema.Struct({
  /** POSIX path inside the snapshot (`agent/state/x.json`). */
  path: Schema.String.pipe(Schema.filter((p) => orTrue(pathProblem(p)))),
  type: EntryType,
  size: Schema.NonNegativeInt,
  mode: Schema.Int.pipe(Schema.between(0, 0o7777)),
  /**
   * Milliseconds as the FileSystem port reports them: Node's `mtimeMs` (a double, sub-millisecond
   * but not nanosecond precision); the link decision compares it at the precision a set time keeps (`sameMtime`).
   */
  mtimeMs: Schema.Finite,
  sha256: Schema.optional(Schema.String.pipe(Schema.pattern(SHA256_HEX))),
  target: Schema.optional(Schema.String.pipe(Schema.filter((t) => orTrue(targetProblem(t))))),
  /** Size or mtime moved during both copy attempts: the copy may mix two versions. */
  changedDuringBackup: Schema.optional(Schema.Boolean),
  /** Part of a SQLite database with a live `-wal`/`-shm` beside it, copied as one group. */
  sqliteGroup: Schema.optional(Schema.Boolean)
}).pipe(Schema.filter((e) => orTrue(typeProblem(e))))
export type ManifestEntry = typeof ManifestEntry.Type

export const SnapshotManifest = Schema.Struct({
  format: Schema.Literal("pi-state-snapshot"),
  version: Schema.Literal(1),
  id: Schema.String,
  createdAt: Schema.Number,
  label: Schema.optional(Schema.String),
  tool: Schema.Struct({ name: Schema.String, version: Schema.String }),
  scope: Schema.Struct({
    /** Where the snapshot was taken from: a record for people, never where a restore writes (untrusted). */
    agentDir: Schema.String,
    webDataRoot: Schema.NullOr(Schema.String),
    /** The snapshot-relative roots that were looked at (present or not). */
    roots: Schema.Array(Schema.String)
  }),
  entries: Schema.Array(ManifestEntry),
  /** SHA-256 of this document's JSON without this field, as written. */
  manifestSha256: Schema.String
})
export type SnapshotManifest = typeof SnapshotManifest.Type

const ManifestHeader = SnapshotManifest.pipe(Schema.omit("entries"), Schema.extend(Schema.Struct({ entries: Schema.Array(Schema.Unknown) })))

const OPTIONAL_FLAGS = ["changedDuringBackup", "sqliteGroup"] as const

/**
 * Why `u` is not a ManifestEntry (the Schema's rules, checked by hand for speed), or `undefined`; with its
 * decoded path when it is one (the manifest's decode needs it, and decodes each path once).
 */
const checkEntry = (u: unknown): { readonly problem: string } | { readonly path: SnapshotPath } => {
  if (typeof u !== "object" || u === null) return { problem: "is not an object" }
  const e = u as Record<string, unknown>
  if (typeof e.path !== "string") return { problem: "path is not a string" }
  const decoded = decodeSnapshotPath(e.path)
  if (!decoded.ok) return { problem: `path ${JSON.stringify(e.path)} ${decoded.why}` }
  if (e.type !== "file" && e.type !== "directory" && e.type !== "symlink") return { problem: `type ${JSON.stringify(e.type)} is not file, directory or symlink` }
  if (!Number.isSafeInteger(e.size) || (e.size as number) < 0) return { problem: "size is not a whole number of bytes" }
  if (!Number.isSafeInteger(e.mode) || (e.mode as number) < 0 || (e.mode as number) > 0o7777) return { problem: "mode is not permission bits (0 to 0o7777)" }
  if (typeof e.mtimeMs !== "number" || !Number.isFinite(e.mtimeMs)) return { problem: "mtimeMs is not a finite number" }
  if (e.sha256 !== undefined && (typeof e.sha256 !== "string" || !SHA256_HEX.test(e.sha256))) return { problem: "sha256 is not 64 lowercase hex digits" }
  if (e.target !== undefined) {
    if (typeof e.target !== "string") return { problem: "target is not a string" }
    const target = targetProblem(e.target)
    if (target !== undefined) return { problem: target }
  }
  for (const k of OPTIONAL_FLAGS) if (e[k] !== undefined && typeof e[k] !== "boolean") return { problem: `${k} is not a boolean` }
  const missing = typeProblem(e as { type: string; sha256?: string; target?: string })
  return missing === undefined ? { path: decoded.value } : { problem: missing }
}

/** Why `u` is not a ManifestEntry (the Schema's rules, checked by hand for speed), or `undefined`. */
export const entryProblem = (u: unknown): string | undefined => {
  const checked = checkEntry(u)
  return "problem" in checked ? checked.problem : undefined
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

const HASH_FIELD = encoder.encode(`,"manifestSha256":`)
const CLOSING_BRACE = encoder.encode("}")

/** Where the last `,"manifestSha256":` starts in `bytes`, or -1 (it is near the end: searched from there). */
const lastHashField = (bytes: Uint8Array): number => {
  outer: for (let at = bytes.length - HASH_FIELD.length; at >= 0; at--) {
    for (let k = 0; k < HASH_FIELD.length; k++) if (bytes[at + k] !== HASH_FIELD[k]) continue outer
    return at
  }
  return -1
}

/** The manifest's bytes: one JSON document, its own hash last. */
export const encodeSnapshotManifest = (body: Omit<SnapshotManifest, "manifestSha256">): Uint8Array => {
  // The schema has no transformations (encoded = decoded), so the body is its own encoding: a Schema encode
  // of 10,000 entries cost 230 ms per snapshot for an identity. The hash is of the JSON's UTF-8 bytes, encoded
  // once (hashing the string encoded it a second time); the document is those bytes without their final `}`,
  // then the hash field.
  const json = encoder.encode(JSON.stringify(body))
  const tail = encoder.encode(`,"manifestSha256":${JSON.stringify(sha256HexOfBytes(json))}}\n`)
  const out = new Uint8Array(json.length - 1 + tail.length)
  out.set(json.subarray(0, json.length - 1))
  out.set(tail, json.length - 1)
  return out
}

/** Decode and check the manifest's own hash (over its JSON as written, without the hash field). */
export const decodeSnapshotManifest = (
  bytes: Uint8Array
): { readonly ok: true; readonly manifest: SnapshotManifest } | { readonly ok: false; readonly why: string } => {
  const text = decoder.decode(bytes).trimEnd()
  // The hash covers the bytes as written up to the field (the same text, as UTF-8, without re-encoding it).
  const at = lastHashField(bytes)
  if (at < 0 || !text.endsWith("}")) return { ok: false, why: "no manifestSha256 at its end" }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (e) {
    return { ok: false, why: `not valid JSON (${e instanceof Error ? e.message : String(e)})` }
  }
  // The header through the Schema, the entries through `entryProblem` (the same rules as ManifestEntry):
  // a Schema decode of 10,000 entries cost 180 ms, on every create (the previous manifest) and verify; even
  // as `Array(Unknown)` the Schema walked every entry, so it sees the header with none.
  const document = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, unknown> : undefined
  const entries = document?.entries
  const header = Schema.decodeUnknownEither(ManifestHeader)(Array.isArray(entries) ? { ...document, entries: [] } : parsed)
  if (header._tag === "Left") return { ok: false, why: `not a snapshot manifest: ${header.left.message.split("\n")[0]}` }
  if (!Array.isArray(entries)) return { ok: false, why: "not a snapshot manifest: entries is not an array" } // (the Schema said so first)
  const paths: Array<SnapshotPath> = []
  for (let i = 0; i < entries.length; i++) {
    const checked = checkEntry(entries[i])
    if ("problem" in checked) return { ok: false, why: `not a snapshot manifest: entries[${i}] ${checked.problem}` }
    paths.push(checked.path)
  }
  const want = sha256HexOfBytes(bytes.subarray(0, at), CLOSING_BRACE)
  if (want !== header.right.manifestSha256) return { ok: false, why: "its own hash does not match its content" }
  // After the hash: a hash that matches says the manifest is as written, never that what it says is safe.
  const tree = snapshotTreeProblem(entries as ReadonlyArray<ManifestEntry>, paths)
  if (tree !== undefined) return { ok: false, why: `entries[${tree.index}] ${JSON.stringify(paths[tree.index]!.path)} ${tree.why}` }
  return { ok: true, manifest: { ...header.right, entries } as SnapshotManifest }
}

// ------------------------------------------------------------------------------------------------ rules

/** What the link decision compares: the live entry now against the previous snapshot's record. */
export interface LiveRecord {
  readonly type: EntryType
  readonly size: number
  readonly mode: number
  readonly mtimeMs: number
}

/**
 * How far apart two mtimes may be and still be the same time: a time set through `utimes` (a restore puts each
 * file's recorded mtime back) survives only to the microsecond (the port takes milliseconds as a double; Node
 * hands seconds as a double to libuv, which keeps whole microseconds), so one read back differs from its record
 * by under 1.5 µs. Far below what a file system's clock can tell apart between two writes (its tick is coarse).
 */
export const MTIME_PRECISION_MS = 0.002

/** Two mtimes (ms) are the same time at the precision a set time survives (`MTIME_PRECISION_MS`). */
export const sameMtime = (a: number, b: number): boolean => Math.abs(a - b) < MTIME_PRECISION_MS

/**
 * rsync `--link-dest`: a file is linked to the previous snapshot's copy only when type, size, mtime and mode
 * all equal its record (and the record has a hash and was not torn). A mode-only change is a copy: a chmod on
 * a shared inode would rewrite the old snapshot. The mtime is compared at the precision a restored time keeps
 * (`sameMtime`), so a file a restore put back links to the copy it came from.
 */
export const shouldLink = (live: LiveRecord, previous: ManifestEntry | undefined): previous is ManifestEntry =>
  previous !== undefined && live.type === "file" && previous.type === "file" && previous.sha256 !== undefined &&
  previous.changedDuringBackup !== true && previous.sqliteGroup !== true &&
  live.size === previous.size && sameMtime(live.mtimeMs, previous.mtimeMs) && live.mode === previous.mode

const SQLITE_SIDECARS = ["-wal", "-shm"] as const

/** The names of a directory that form live SQLite groups: database → its present `-wal`/`-shm` sidecars. */
export const sqliteGroups = (names: ReadonlyArray<string>): ReadonlyMap<string, ReadonlyArray<string>> => {
  const groups = new Map<string, ReadonlyArray<string>>()
  // Only a name with a sidecar's suffix can make a group (a snapshot's walk asks this of every directory).
  if (!names.some((n) => SQLITE_SIDECARS.some((s) => n.endsWith(s)))) return groups
  const present = new Set(names)
  for (const name of names) {
    const sidecars = SQLITE_SIDECARS.map((s) => name + s).filter((n) => present.has(n))
    if (sidecars.length > 0) groups.set(name, sidecars)
  }
  return groups
}

// ------------------------------------------------------------------------------------------------ errors

export const UnsafeBackupRootReason = Schema.Union(UnsafeRootReason, Schema.Literal("inside-snapshotted-tree"))

export class UnsafeBackupRoot extends Schema.TaggedError<UnsafeBackupRoot>()("UnsafeBackupRoot", {
  path: Schema.String,
  reason: UnsafeBackupRootReason,
  detail: Schema.String
}) {
  override get message(): string {
    return `unsafe backup root ${this.path} (${this.reason}): ${this.detail}; nothing was created`
  }
}

export class BackupBusy extends Schema.TaggedError<BackupBusy>()("BackupBusy", {
  root: Schema.String,
  holder: Schema.String,
  waitedMs: Schema.Number
}) {
  override get message(): string {
    return `backup root ${this.root} is busy (${this.holder}); gave up after ${this.waitedMs} ms`
  }
}

export class SnapshotNotFound extends Schema.TaggedError<SnapshotNotFound>()("SnapshotNotFound", {
  root: Schema.String,
  id: Schema.String
}) {
  override get message(): string {
    return `no complete snapshot ${JSON.stringify(this.id)} in ${this.root} (see pi-storage backup list)`
  }
}

/**
 * A snapshot that cannot be trusted: its manifest (`path` is the manifest, no `entry`), or one of its entries
 * (`path` is the snapshot, `entry` the manifest path) differs from what the manifest records. Refused before
 * anything live is moved or written, unless `stopped` says the snapshot changed while a restore copied it.
 */
export class SnapshotCorrupt extends Schema.TaggedError<SnapshotCorrupt>()("SnapshotCorrupt", {
  path: Schema.String,
  detail: Schema.String,
  entry: Schema.optional(Schema.String),
  /**
   * The restore stopped part way: where the live data it had replaced went (`movedAside`: the first of
   * `asideDirs`, `null` when nothing was there; `asideDirs`: every directory it went to).
   */
  stopped: Schema.optional(Schema.Struct({ movedAside: Schema.NullOr(Schema.String), asideDirs: Schema.optional(Schema.Array(Schema.String)) }))
}) {
  override get message(): string {
    const dirs = this.stopped?.asideDirs ?? (this.stopped?.movedAside == null ? [] : [this.stopped.movedAside])
    const outcome = this.stopped === undefined
      ? "nothing was changed"
      : dirs.length === 0
      ? "the restore stopped part way"
      : `the restore stopped part way; the live data it replaced is in ${dirs.join(" and ")}`
    return this.entry === undefined
      ? `snapshot manifest ${this.path} is unusable: ${this.detail}; ${outcome}`
      : `snapshot ${this.path} is damaged at ${JSON.stringify(this.entry)}: ${this.detail}; ${outcome}`
  }
}

/** SPEC BK2: a restore of one extension the snapshot holds no state of is refused before anything moves. */
export class ExtensionNotInSnapshot extends Schema.TaggedError<ExtensionNotInSnapshot>()("ExtensionNotInSnapshot", {
  root: Schema.String,
  id: Schema.String,
  extension: Schema.String,
  /** The extensions whose state the snapshot holds, sorted. */
  held: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const held = this.held.length === 0 ? "no extension's state" : `the state of ${this.held.map((e) => JSON.stringify(e)).join(", ")}`
    return `snapshot ${JSON.stringify(this.id)} in ${this.root} holds no state of extension ${JSON.stringify(this.extension)} (it holds ${held}); nothing was changed`
  }
}

/**
 * A restore would write through a symlink that stands for a snapshotted tree (`agent/state` kept on another
 * disk) whose target it cannot prove to be the person's own directory outside every snapshotted tree and the
 * backup root: refused before anything moves.
 */
export class UnsafeRestoreTarget extends Schema.TaggedError<UnsafeRestoreTarget>()("UnsafeRestoreTarget", {
  /** The link. */
  path: Schema.String,
  /** What it points at (its target as written), when it could be read. */
  target: Schema.optional(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    const to = this.target === undefined ? "" : ` (-> ${this.target})`
    return `refusing to restore through the symlink ${this.path}${to}: ${this.detail}; nothing was changed`
  }
}
