/**
 * The bounded USER.md profile (docs/user-profile.md "User profile (USER.md)"): `read`, `add`, `replace`, `remove` over the FileSystem port.
 *
 * Every mutation runs under the profile lock (a marker with the markers' liveness rules, waited for as long
 * as its holder lives), re-reads everything under it, finishes or undoes a journal a crash left, applies the
 * edit to the model (src/domain/UserProfile.ts) and writes the layout that results in this order:
 *   journal (when more than one file changes) → new shards → index → USER.md → obsolete shards → journal removed.
 * USER.md, the index and the shards are files a person may edit, so each is written with the port's
 * conditional replace (`replaceFileIfUnchanged`: temp, fsync, rename only while the file is still the version
 * read, directory fsync); a change under a mutation undoes what it wrote and redoes the edit from a fresh read
 * (bounded). An old shard goes only after the shards that take its entries are durable and the index names
 * them, and only while it is still as read.
 *
 * Safety: USER.md, the archive directory, the index and every shard are `lstat`ed before use; a symlink or a
 * file of the wrong type is `UnsafeProfile` before anything is read or written through it. Everything is
 * decoded as strict UTF-8 (a USER.md or index that is not is `UnsafeProfile` `not-utf8`, never rewritten).
 * A shard that cannot be read (front matter past the decoder's limits, not UTF-8) is listed by `read` and
 * makes mutations refuse (its facts are unknown); it is never touched.
 */
import { aFileType } from "../domain/FileTypeWords.js"
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import { modeString, rootSafetyProblems, writableBy } from "../domain/RootSafety.js"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { type FileSystemError, InvalidArgument } from "../domain/Errors.js"
import { decodeJsonBytes, encodeJsonBytes } from "../domain/Formats.js"
import {
  type Applied,
  applyOperation,
  buildModel,
  diffLayout,
  filesAfterJournal,
  isNoop,
  journalOf,
  type ProfileLayout,
  type MutationOutcome,
  modelEntries,
  needsJournal,
  type ProfileDigests,
  type ProfileEntry,
  type ProfileFiles,
  type ProfileOperation,
  planLayout,
  type ProfileWrites,
  recoveryPlan
} from "../domain/UserProfile.js"
import {
  ARCHIVE_FILE_MAX_BYTES,
  DEFAULT_SHARD_BUDGET_BYTES,
  INDEX_FILE,
  parseIndex,
  parseShard,
  ProfileJournal,
  renderIndex,
  renderShard,
  SHARD_NAME_RE,
  type ShardDocument
} from "../domain/UserProfileArchive.js"
import { type AmbiguousEntry, type EntryNotFound, type InvalidEntry, ProfileBusy, UnsafeProfile } from "../domain/UserProfileErrors.js"
import { utf8Bytes } from "../domain/Bytes.js"
import { decodeProfileText, DEFAULT_PROFILE_BUDGET_BYTES, notUtf8Detail } from "../domain/UserProfileText.js"
import { type FileVersion, isChanged } from "../domain/FileChange.js"
import { sha256HexOfBytes } from "../domain/Digest.js"
import { AgentDir } from "./AgentDir.js"
import type { FileInfo, FileSystem } from "./FileSystem.js"
import type { Host } from "./Host.js"
import { type Deps, depsFromContext } from "./internal/deps.js"
import { acquireMarkerWaiting, unreadableAtMost } from "./internal/markers.js"
import { warn } from "./internal/warn.js"
import { type UnparsableShard, unparsableShard } from "../domain/ReportProblems.js"

export interface UserProfileOptions {
  /** UTF-8 bytes of the whole USER.md, pointer included (default 8 KiB). */
  readonly budgetBytes?: number | undefined
  /** Bytes of body per shard (default 64 KiB). */
  readonly shardBudgetBytes?: number | undefined
  /** First wait between lock attempts while a live writer holds it (default 2 ms, growing to 100 ms). */
  readonly lockPollMs?: number | undefined
}

export interface ProfileView {
  /** USER.md as it is (or will be once a crashed write is finished). */
  readonly text: string
  /** Every entry once, archived ones first (in index order), then the hot ones. */
  readonly entries: ReadonlyArray<ProfileEntry>
  readonly sharded: boolean
  /** UTF-8 bytes of USER.md. */
  readonly bytes: number
  readonly budgetBytes: number
  /** Shard files that do not parse (never read as empty; mutations refuse until they are fixed). */
  readonly unparsable: ReadonlyArray<UnparsableShard>
}

export interface ProfileChange {
  readonly outcome: MutationOutcome
  /** Whether any file changed (a duplicate add changes nothing, unless the files needed repair). */
  readonly changed: boolean
  readonly entry: string
  readonly matched?: string
  /** The hot body moved into shards: USER.md is now the pointer. */
  readonly archived: boolean
  readonly profile: ProfileView
}

export type ProfileError = UnsafeProfile | ProfileBusy | FileSystemError
export type MutationError = ProfileError | InvalidEntry | EntryNotFound | AmbiguousEntry

export const PROFILE_LOCK = "lock"
export const PROFILE_JOURNAL = "pending.json"
const USER_FILE_MAX_BYTES = 4 * 1024 * 1024
/** An unreadable lock (torn by a crash mid-write) is waited for this many attempts, then reported. */
const UNREADABLE_LOCK_ATTEMPTS = 60

const encoder = new TextEncoder()

const unsafe = (path: string, reason: UnsafeProfile["reason"], detail: string) => new UnsafeProfile({ path, reason, detail })

/** The version of each file read (identity and bytes), for the conditional replace of what was read. */
export interface ProfileVersions {
  readonly user: FileVersion | null
  readonly index: FileVersion | null
  readonly shards: ReadonlyMap<string, FileVersion>
}

export interface ReadState extends ProfileFiles {
  readonly journal: ProfileJournal | null
  readonly versions: ProfileVersions
}

/** SHA-256 of each file as read, to compare with a journal's record of what its writer read. */
export const digestsOf = (versions: ProfileVersions): ProfileDigests => ({
  user: versions.user === null ? null : sha256HexOfBytes(versions.user.bytes),
  index: versions.index === null ? null : sha256HexOfBytes(versions.index.bytes),
  shards: new Map([...versions.shards].map(([name, v]) => [name, sha256HexOfBytes(v.bytes)]))
})

/** Any OKF document in the archive directory, whatever its name's case. */
const OKF_FILE_RE = /\.okf\.md$/i
const OFF_NAME_WHY = "its name is not one the archive uses (user-preferences-<16 lowercase hex digits>.okf.md), so its facts are not read; rename it or move it aside"

/** Where the profile's files are, and how they are read (safely: `lstat` first, never through a link). Read-only. */
export const profileReader = (fs: Deps["fs"], paths: AgentDir["Type"]["paths"], uid: number | null) => {
  const archiveDir = paths.userPreferencesDir
  // The lock and journal live beside the machine's other state (Pi's archive directory holds only OKF files).
  const stateDir = paths.userProfileStateDir
  const lockPath = NodePath.join(stateDir, PROFILE_LOCK)
  const journalPath = NodePath.join(stateDir, PROFILE_JOURNAL)
  const shardPath = (name: string) => NodePath.join(archiveDir, name)
  const indexPath = NodePath.join(archiveDir, INDEX_FILE)

  /** lstat that says "missing" as `undefined`. */
  const lstat = (path: string): Effect.Effect<FileInfo | undefined, FileSystemError> =>
    fs.lstat(path).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(undefined)))

  /**
   * The profile's own directories, outermost first: each one there must be a real directory of this user
   * (WR10's rule, `rootSafetyProblems`), never a link that would carry the lock, the journal or the archive
   * elsewhere, nor another user's, who could swap what is read and written, nor writable by every user.
   * (`state/` above the lock's directory is the anchor, as for every module: a link there is the person's choice
   * of where state lives; what it leads to is checked the same way. Group-writable is allowed: a umask of 002
   * makes directories so for many users, and a file a group member made there is another user's, refused when
   * read.) Below a missing one nothing exists yet. An entry that is not a
   * directory is `not-a-directory` when `blocked` says so, else left to the read below it (ENOTDIR: the
   * doctor's blocked-path finding names it).
   */
  const checkChain = (dirs: ReadonlyArray<readonly [string, string]>, blocked: "unsafe" | "read"): Effect.Effect<void, ProfileError> =>
    Effect.gen(function*() {
      for (const [dir, name] of dirs) {
        const info = yield* lstat(dir)
        if (info === undefined) return
        const problem = rootSafetyProblems(info, uid).find((p) => p.reason !== "group-or-world-writable")
        if (problem === undefined) {
          // Anyone may make a file there: a shard planted in it would read as the user's own facts.
          if (writableBy(info.mode) === "world") return yield* unsafe(dir, "world-writable", `${name} is writable by every user (mode ${modeString(info.mode)})`)
          continue
        }
        if (problem.reason === "symlink") return yield* unsafe(dir, "symlink", `${name} is a symlink; the profile is neither read nor written through one`)
        if (problem.reason === "not-a-directory") {
          if (blocked === "read") return
          return yield* unsafe(dir, "not-a-directory", `${name} is ${aFileType(info.type)}`)
        }
        return yield* unsafe(dir, "foreign-owner", `${name} is ${problem.detail}`)
      }
    })
  /** `state/` as it resolves (a link there is followed, as every module follows it): this user's, not everyone's. */
  const stateAnchor = Effect.gen(function*() {
    const info = yield* fs.statFollowingLinks(paths.stateDir()).pipe(
      Effect.map((i): FileInfo | undefined => i),
      Effect.catchIf((e) => e.reason === "NotFound" || e.reason === "NotADirectory", () => Effect.succeed(undefined))
    )
    if (info === undefined || info.type !== "Directory") return
    if (uid !== null && info.uid !== uid) return yield* unsafe(paths.stateDir(), "foreign-owner", `state/ is owned by uid ${info.uid}, not the current user ${uid}: its owner could swap state/${NodePath.basename(stateDir)}/`)
    if (writableBy(info.mode) === "world") return yield* unsafe(paths.stateDir(), "world-writable", `state/ is writable by every user (mode ${modeString(info.mode)})`)
  })
  const stateDirChain = (blocked: "unsafe" | "read") =>
    Effect.zipRight(stateAnchor, checkChain([[stateDir, `state/${NodePath.basename(stateDir)}/`]], blocked))
  const stateChain = stateDirChain("read")
  /** The same, for taking the lock: an entry there that is not a directory is a refusal, not a failed mkdir. */
  const lockChain = stateDirChain("unsafe")
  const archiveChain = checkChain([[paths.okfMemoryDir, "okf-memory/"], [archiveDir, "the archive directory"]], "unsafe")

  /**
   * A regular file's identity and bytes, `null` when missing; a symlink or another type is refused before any
   * read. The identity is the lstat's: a file swapped before the read makes the later conditional replace
   * fail (and the edit re-read), never succeed wrongly.
   */
  const readRegular = (path: string, maxBytes: number): Effect.Effect<FileVersion | null, ProfileError> =>
    Effect.gen(function*() {
      const info = yield* lstat(path)
      if (info === undefined) return null
      if (info.type === "SymbolicLink") return yield* unsafe(path, "symlink", "it is a symlink; the library neither reads nor writes through one")
      if (info.type !== "File") return yield* unsafe(path, "not-a-regular-file", `it is ${aFileType(info.type)}`)
      // Another user's file would be read as this user's facts (one planted in a group-writable archive), and so
      // would one anyone may write.
      if (uid !== null && info.uid !== uid) return yield* unsafe(path, "foreign-owner", `it is owned by uid ${info.uid}, not the current user ${uid}`)
      if (writableBy(info.mode) === "world") return yield* unsafe(path, "world-writable", `it is writable by every user (mode ${modeString(info.mode)})`)
      const bytes = yield* fs.readFile(path, { maxBytes }).pipe(
        Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(null))
      )
      return bytes === null ? null : { dev: info.dev, ino: info.ino, bytes }
    })

  /** USER.md's or the index's text: bytes that are not UTF-8 are refused (a replacement character would be written back). */
  const textOf = (path: string, version: FileVersion): Effect.Effect<string, UnsafeProfile> => {
    const decoded = decodeProfileText(version.bytes)
    return decoded.ok ? Effect.succeed(decoded.text) : Effect.fail(unsafe(path, "not-utf8", notUtf8Detail(decoded.offset)))
  }

  const readJournal: Effect.Effect<ProfileJournal | null, ProfileError> = Effect.gen(function*() {
    const version = yield* readRegular(journalPath, ARCHIVE_FILE_MAX_BYTES)
    if (version === null) return null
    const decoded = decodeJsonBytes(ProfileJournal, version.bytes)
    if (!decoded.ok) return yield* unsafe(journalPath, "unreadable-journal", `the pending-write journal does not decode (${decoded.why}); move it aside to continue`)
    return decoded.value
  })

  const readArchive = Effect.gen(function*() {
    const shards = new Map<string, ShardDocument>()
    const versions = new Map<string, FileVersion>()
    const unparsable: Array<UnparsableShard> = []
    const empty = { shards, unparsable, indexed: null, indexExists: false, index: null, versions }
    // The directory above the archive too: a link at okf-memory/ would carry every archived fact wherever it
    // points (an edit makes the archive directory through it).
    yield* archiveChain
    if ((yield* lstat(archiveDir)) === undefined) return empty
    const entries = yield* fs.readDirectory(archiveDir)
    let indexed: ReadonlyArray<string> | null = null
    let indexExists = false
    let index: FileVersion | null = null
    for (const entry of entries) {
      const isIndex = entry.name === INDEX_FILE
      if (!isIndex && !SHARD_NAME_RE.test(entry.name)) {
        // An OKF file under another name (a shard renamed by hand, its hex in capitals) may hold facts the index
        // no longer reaches: an edit that rewrote the index without it would orphan them, so it blocks edits.
        if (OKF_FILE_RE.test(entry.name)) unparsable.push(unparsableShard("ShardUnparsable", entry.name, OFF_NAME_WHY))
        continue
      }
      const path = shardPath(entry.name)
      if (entry.type === "SymbolicLink") return yield* unsafe(path, "symlink", "a shard or index that is a symlink")
      if (entry.type !== "File") return yield* unsafe(path, "not-a-regular-file", `a shard or index that is ${aFileType(entry.type)}`)
      const version = yield* readRegular(path, ARCHIVE_FILE_MAX_BYTES).pipe(
        Effect.catchIf((e) => e._tag === "FileSystemError" && e.reason === "TooLarge", () => Effect.succeed(undefined))
      )
      if (version === null) continue
      if (isIndex) {
        indexExists = true
        if (version === undefined) continue
        index = version
        const parsed = parseIndex(yield* textOf(path, version))
        // An index that does not parse is read as missing: it holds no fact, the shards are all adopted.
        if (parsed.ok) indexed = parsed.shards
        continue
      }
      if (version === undefined) {
        unparsable.push(unparsableShard("ShardTooLarge", entry.name, `larger than ${ARCHIVE_FILE_MAX_BYTES} bytes`))
        continue
      }
      const decoded = decodeProfileText(version.bytes)
      if (!decoded.ok) {
        unparsable.push(unparsableShard("ShardNotUtf8", entry.name, notUtf8Detail(decoded.offset)))
        continue
      }
      const parsed = parseShard(decoded.text)
      if (!parsed.ok) {
        unparsable.push(unparsableShard("ShardUnparsable", entry.name, parsed.why))
        continue
      }
      shards.set(entry.name, parsed.shard)
      versions.set(entry.name, version)
    }
    return { shards, unparsable, indexed, indexExists, index, versions }
  })

  const readState: Effect.Effect<ReadState, ProfileError> = Effect.gen(function*() {
    const userVersion = yield* readRegular(paths.userFile, USER_FILE_MAX_BYTES).pipe(
      Effect.catchIf((e) => e._tag === "FileSystemError" && e.reason === "TooLarge", () =>
        Effect.fail(unsafe(paths.userFile, "too-large", `it is larger than the ${USER_FILE_MAX_BYTES} bytes the library reads; it is neither read nor rewritten`)))
    )
    const user = userVersion === null ? null : yield* textOf(paths.userFile, userVersion)
    const { index, versions: shardVersions, ...archive } = yield* readArchive
    yield* stateChain
    const journal = yield* readJournal
    return { user, ...archive, journal, versions: { user: userVersion, index, shards: shardVersions } }
  })

  return { archiveDir, stateDir, lockPath, journalPath, shardPath, indexPath, readState, readRegular, lockChain, archiveChain }
}

/** Attempts of one mutation while a file it read keeps changing under it (each re-reads everything). */
const MUTATION_ATTEMPTS = 8

/**
 * What every operation of one profile shares: its dependencies, its budgets resolved, where its files are and
 * how they are read, and the profile lock.
 */
const profileContext = (deps: Deps, paths: AgentDir["Type"]["paths"], options: UserProfileOptions) => {
  const { fs } = deps
  const reader = profileReader(fs, paths, deps.host.uid)
  // The lock: retried while a live writer holds it (however long it lives), capped at 100 ms between tries.
  const lockSchedule = Schedule.exponential(Duration.millis(Math.max(1, options.lockPollMs ?? 2)), 1.5).pipe(
    Schedule.union(Schedule.spaced(Duration.millis(100))),
    Schedule.jittered
  )
  const acquireLock = acquireMarkerWaiting(deps, reader.lockPath, "user-profile", {
    schedule: lockSchedule.pipe(Schedule.intersect(unreadableAtMost(UNREADABLE_LOCK_ATTEMPTS))),
    busy: (held) => new ProfileBusy({ path: reader.lockPath, holder: held.holder }),
    beforeEachTry: fs.makeDirectory(reader.stateDir, { recursive: true })
  })
  return {
    ...reader,
    fs,
    paths,
    budgetBytes: options.budgetBytes ?? DEFAULT_PROFILE_BUDGET_BYTES,
    shardBudgetBytes: options.shardBudgetBytes ?? DEFAULT_SHARD_BUDGET_BYTES,
    // The directories first: the lock is made only through real directories of this user, and not at all for
    // an archive the edit would refuse anyway.
    acquireLock: Effect.zipRight(Effect.zipRight(reader.lockChain, reader.archiveChain), acquireLock)
  }
}

type ProfileContext = ReturnType<typeof profileContext>

/** What the mutation wrote so far: undone if a file it read changes before it commits. */
interface Wrote {
  index?: Uint8Array
  created: Array<readonly [string, Uint8Array]>
}

const viewOf = (ctx: ProfileContext, files: ProfileFiles): ProfileView => {
  const model = buildModel(files)
  const text = files.user ?? ""
  return {
    text,
    entries: modelEntries(model),
    sharded: model.pointer || model.archive.length > 0,
    bytes: utf8Bytes(text),
    budgetBytes: ctx.budgetBytes,
    unparsable: [...files.unparsable]
  }
}

const timestamp = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/**
 * Every file a person may edit (USER.md, the index, the shards) is replaced, created or removed only while it
 * is still the version read (`null`: still missing): else the port fails with reason `Changed`.
 */
const put = (ctx: ProfileContext, path: string, data: Uint8Array | null, expected: FileVersion | null) =>
  ctx.fs.replaceFileIfUnchanged(path, expected, data, { mode: 0o600 })

/** What is at `path` now (no type checks: only compared with what this mutation wrote). */
const versionNow = (ctx: ProfileContext, path: string) =>
  ctx.readRegular(path, ARCHIVE_FILE_MAX_BYTES).pipe(Effect.catchIf((e) => e._tag === "FileSystemError" && e.reason === "TooLarge", () => Effect.succeed(null)))

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && a.every((x, i) => x === b[i])

/** A file a person changed is left as they saved it, and said so. */
const keptEdit = (path: string, reason: string) =>
  warn({ _tag: "ProfileEditKept", path, reason, message: `${path} was changed by someone else since the profile read it; it is kept as they saved it (${reason})` })

/** Index, then USER.md, then the obsolete shards (USER.md first when the archive goes away: no dangling pointer). */
const commit = (
  ctx: ProfileContext,
  w: { readonly index: ReadonlyArray<string> | null; readonly user: string | null; readonly obsolete: ReadonlyArray<string> },
  versions: ProfileVersions,
  wrote: { index?: Uint8Array }
) =>
  Effect.gen(function*() {
    const ts = yield* timestamp
    if (w.index !== null && w.index.length > 0) {
      const bytes = encoder.encode(renderIndex(w.index, ts))
      yield* put(ctx, ctx.indexPath, bytes, versions.index)
      wrote.index = bytes
    }
    if (w.user !== null) yield* put(ctx, ctx.paths.userFile, encoder.encode(w.user), versions.user)
    if (w.index !== null && w.index.length === 0 && versions.index !== null) yield* put(ctx, ctx.indexPath, null, versions.index)
    // Committed: a shard someone edited since it was read is kept (its facts are adopted on the next read).
    for (const name of w.obsolete) {
      const version = versions.shards.get(name)
      if (version === undefined) continue
      yield* put(ctx, ctx.shardPath(name), null, version).pipe(
        Effect.catchIf((e) => isChanged(e), (e) => keptEdit(ctx.shardPath(name), e.detail ?? "changed"))
      )
    }
  })

/**
 * Put back what a mutation wrote before a file it read changed under it (the edit is then retried from a
 * fresh read): the index it wrote gets its old bytes back, the shards it created go, the journal goes. A file
 * that no longer holds what the mutation wrote is someone else's now and is left; so is the journal then,
 * for the retry's recovery to settle.
 */
const undo = (ctx: ProfileContext, wrote: Wrote, versions: ProfileVersions, journaled: boolean) =>
  Effect.gen(function*() {
    let clean = true
    const putBack = (path: string, ours: Uint8Array, data: Uint8Array | null) =>
      Effect.gen(function*() {
        const now = yield* versionNow(ctx, path)
        if (now === null || !sameBytes(now.bytes, ours)) return void (clean = false)
        yield* put(ctx, path, data, now).pipe(Effect.catchIf(isChanged, () => Effect.sync(() => void (clean = false))))
      })
    if (wrote.index !== undefined) yield* putBack(ctx.indexPath, wrote.index, versions.index?.bytes ?? null)
    for (const [name, ours] of wrote.created) yield* putBack(ctx.shardPath(name), ours, null)
    if (journaled && clean) yield* ctx.fs.removeFile(ctx.journalPath)
  })

const writeLayout = (ctx: ProfileContext, writes: ProfileWrites, layout: ProfileLayout, state: ReadState) =>
  Effect.gen(function*() {
    if (isNoop(writes)) return
    const journaled = needsJournal(writes)
    if (journaled) {
      yield* ctx.fs.makeDirectory(ctx.stateDir, { recursive: true })
      yield* ctx.fs.writeFileAtomic(ctx.journalPath, encodeJsonBytes(journalOf(writes, layout, digestsOf(state.versions))), { mode: 0o600 })
    }
    const wrote: Wrote = { created: [] }
    const write = Effect.gen(function*() {
      if (writes.create.length > 0) {
        yield* ctx.fs.makeDirectory(ctx.archiveDir, { recursive: true })
        const ts = yield* timestamp
        for (const shard of writes.create) {
          const bytes = encoder.encode(renderShard(shard.entries, ts))
          yield* put(ctx, ctx.shardPath(shard.name), bytes, null)
          wrote.created.push([shard.name, bytes])
        }
      }
      yield* commit(ctx, writes, state.versions, wrote)
    })
    yield* write.pipe(Effect.tapError((e) => (isChanged(e) ? undo(ctx, wrote, state.versions, journaled) : Effect.void)))
    if (journaled) yield* ctx.fs.removeFile(ctx.journalPath)
  })

/** Finish (every created shard is there) or undo (the index cannot name them yet) what a crash left. */
const recover = (ctx: ProfileContext, state: ReadState, journal: ProfileJournal) =>
  Effect.gen(function*() {
    const plan = recoveryPlan(journal, state, digestsOf(state.versions))
    if (plan.direction === "forward") {
      yield* commit(ctx, { index: plan.index ? journal.shards : null, user: plan.user, obsolete: plan.remove }, state.versions, {})
      for (const kept of plan.kept) {
        yield* keptEdit(kept === "USER.md" ? ctx.paths.userFile : kept === "index" ? ctx.indexPath : ctx.shardPath(kept), "an interrupted write was finished around it")
      }
    } else {
      for (const name of plan.remove) {
        const version = state.versions.shards.get(name)
        if (version !== undefined) yield* put(ctx, ctx.shardPath(name), null, version)
      }
    }
    yield* ctx.fs.removeFile(ctx.journalPath)
    const done = plan.direction === "forward" ? "completed" : "undone"
    yield* warn({ _tag: "ProfileWriteRecovered", journal: ctx.journalPath, direction: done, message: `finished a user-profile write interrupted by a crash (${done})` })
  })

/** One attempt under the lock: read everything, settle a journal, apply the edit, write the layout. */
const attempt = (ctx: ProfileContext, op: ProfileOperation): Effect.Effect<ProfileChange, MutationError> =>
  Effect.gen(function*() {
    let state = yield* ctx.readState
    if (state.journal !== null) {
      yield* recover(ctx, state, state.journal)
      state = yield* ctx.readState
    }
    if (state.unparsable.length > 0) {
      const names = state.unparsable.map((u) => `${u.shard} (${u.why})`).join(", ")
      return yield* unsafe(ctx.archiveDir, "unparsable-shard", `shard(s) that cannot be read: ${names}; their facts are unknown, so no edit is made until they are fixed or moved aside`)
    }
    const applied: Applied = yield* Either.match(applyOperation(buildModel(state), op, ctx.shardBudgetBytes), {
      onLeft: (e) => Effect.fail(e),
      onRight: (a) => Effect.succeed(a)
    })
    const layout = planLayout(applied.model, { budgetBytes: ctx.budgetBytes, shardBudgetBytes: ctx.shardBudgetBytes })
    const writes = diffLayout(state, layout)
    if (state.indexExists && state.indexed === null && writes.index !== null) {
      yield* warn({ _tag: "ProfileIndexRebuilt", path: ctx.indexPath, message: "the user preference index does not parse; it is rebuilt from the shards present" })
    }
    yield* writeLayout(ctx, writes, layout, state)
    const after: ProfileFiles = {
      user: writes.user ?? state.user,
      indexed: layout.shards.map((s) => s.name),
      indexExists: layout.shards.length > 0,
      shards: new Map(layout.shards.map((s) => [s.name, { entries: s.entries, timestamp: null }])),
      unparsable: []
    }
    return {
      outcome: applied.outcome,
      changed: !isNoop(writes),
      entry: applied.entry,
      ...(applied.matched !== undefined ? { matched: applied.matched } : {}),
      archived: layout.archivedHot,
      profile: viewOf(ctx, after)
    } satisfies ProfileChange
  })

/** A file read changed before it was replaced (a person saved it): read again and redo the edit, a bounded number of times. */
const attempts = (ctx: ProfileContext, op: ProfileOperation, n: number): Effect.Effect<ProfileChange, MutationError> =>
  attempt(ctx, op).pipe(
    Effect.catchIf((e): e is FileSystemError => isChanged(e), (e) =>
      n < MUTATION_ATTEMPTS
        ? Effect.zipRight(Effect.yieldNow(), attempts(ctx, op, n + 1))
        : Effect.fail(unsafe(e.path, "changed-meanwhile", `it changed while the edit was being written, ${MUTATION_ATTEMPTS} times in a row (${e.detail ?? "changed"}); what was saved there is kept and the edit is not made`)))
  )

/**
 * Before any writer has run (no state dir), nothing can race an edit, so one the profile refuses (an invalid
 * entry, nothing to remove or replace) is refused before the lock, whose directories it would leave behind: a
 * typo makes no files. The edit itself still runs under the lock, on a fresh read.
 */
const refusedBeforeLock = (ctx: ProfileContext, op: ProfileOperation): Effect.Effect<void, MutationError> =>
  Effect.gen(function*() {
    const typeOf = (path: string) => ctx.fs.lstat(path).pipe(Effect.map((i): string | undefined => i.type), Effect.orElseSucceed(() => undefined))
    const missing = yield* ctx.fs.lstat(ctx.stateDir).pipe(Effect.as(false), Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(true)))
    if (!missing) return
    // Fresh only when `state/` is absent or leads to a directory: one that leads nowhere (a link to a disk not
    // mounted) may hide the archive, so that is said, never "not found"; anything else goes the locked way.
    const parent = NodePath.dirname(ctx.stateDir)
    const state = yield* typeOf(parent)
    if (state === "SymbolicLink" && (yield* typeOf(`${parent}/`)) !== "Directory") {
      return yield* Effect.fail(unsafe(parent, "not-a-directory", "state/ is a symlink that leads to no directory (a disk not mounted?): the profile's lock and archive live there, so no edit is made"))
    }
    if (state !== undefined && state !== "Directory" && state !== "SymbolicLink") return
    const files = yield* ctx.readState
    if (files.journal !== null || files.unparsable.length > 0) return
    const applied = applyOperation(buildModel(files), op, ctx.shardBudgetBytes)
    if (Either.isLeft(applied)) return yield* Effect.fail(applied.left)
  })

const mutate = (ctx: ProfileContext, op: ProfileOperation): Effect.Effect<ProfileChange, MutationError> =>
  Effect.zipRight(refusedBeforeLock(ctx, op), Effect.acquireUseRelease(ctx.acquireLock, () => attempts(ctx, op, 1), (release) => release))

const readView = (ctx: ProfileContext) =>
  Effect.map(ctx.readState, (state) =>
    viewOf(ctx, state.journal === null ? state : filesAfterJournal(state, state.journal, digestsOf(state.versions))))

/**
 * Once a writer has run (its state dir exists), a read takes the lock too, so it never sees half of a
 * mutation (new shards next to the ones they replace). Before that there is nothing to race, and a read of
 * a fresh agent dir creates nothing.
 */
const read = (ctx: ProfileContext): Effect.Effect<ProfileView, ProfileError> => {
  const writerHasRun = ctx.fs.lstat(ctx.stateDir).pipe(Effect.as(true), Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false)))
  return Effect.flatMap(writerHasRun, (locked) =>
    locked ? Effect.acquireUseRelease(ctx.acquireLock, () => readView(ctx), (release) => release) : readView(ctx))
}

/** `UserProfile.make` once its options are checked (module-private: the service's static is the public name). */
const makeUserProfile = (deps: Deps, paths: AgentDir["Type"]["paths"], options: UserProfileOptions = {}) => {
  const ctx = profileContext(deps, paths, options)
  return {
    read: read(ctx),
    add: (text: string) => mutate(ctx, { _tag: "Add", text }),
    replace: (query: string, text: string) => mutate(ctx, { _tag: "Replace", query, text }),
    remove: (query: string) => mutate(ctx, { _tag: "Remove", query })
  }
}

export class UserProfile extends Context.Tag("pi-agent-storage/UserProfile")<UserProfile, {
  /** The whole profile: USER.md's text, every entry once with a stable id, its size against the budget. */
  readonly read: Effect.Effect<ProfileView, ProfileError>
  /** Append a hot entry (a duplicate is a no-op that says so); over budget, the hot body moves into shards. */
  readonly add: (text: string) => Effect.Effect<ProfileChange, MutationError>
  /** Replace the entry that is `query`, else the only one containing it, in USER.md or any shard. */
  readonly replace: (query: string, text: string) => Effect.Effect<ProfileChange, MutationError>
  /** Remove the entry that is `query`, else the only one containing it; a shard left empty goes. */
  readonly remove: (query: string) => Effect.Effect<ProfileChange, MutationError>
}>() {
  static readonly make = (options: UserProfileOptions = {}): Effect.Effect<UserProfile["Type"], InvalidArgument, FileSystem | Host | AgentDir> =>
    Effect.gen(function*() {
      for (const [field, value] of [["budgetBytes", options.budgetBytes], ["shardBudgetBytes", options.shardBudgetBytes]] as const) {
        if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
          return yield* new InvalidArgument({ field, detail: `${value} is not a positive whole number of bytes` })
        }
      }
      const deps = yield* depsFromContext
      const { paths } = yield* AgentDir
      return UserProfile.of(makeUserProfile(deps, paths, options))
    })

  /** Fails with `InvalidArgument` when built, for a budget that is not a positive whole number of bytes. */
  static readonly layerWith = (options: UserProfileOptions = {}): Layer.Layer<UserProfile, InvalidArgument, FileSystem | Host | AgentDir> =>
    Layer.effect(UserProfile, UserProfile.make(options))

  /** The default budgets, which are valid: it cannot fail. */
  static readonly layer: Layer.Layer<UserProfile, never, FileSystem | Host | AgentDir> = Layer.orDie(UserProfile.layerWith())
}
