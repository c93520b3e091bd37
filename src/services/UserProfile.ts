/**
 * The bounded USER.md profile (README "User profile (USER.md)"): `read`, `add`, `replace`, `remove` over the FileSystem port.
 *
 * Every mutation runs under the profile lock (a marker with the markers' liveness rules, waited for as long
 * as its holder lives), re-reads everything under it, finishes or undoes a journal a crash left, applies the
 * edit to the model (src/domain/UserProfile.ts) and writes the layout that results in this order:
 *   journal (when more than one file changes) → new shards → index → USER.md → obsolete shards → journal removed.
 * Each file is written with `writeFileAtomic` (temp, fsync, rename, directory fsync). An old shard goes only
 * after the shards that take its entries are durable and the index names them.
 *
 * Safety: USER.md, the archive directory, the index and every shard are `lstat`ed before use; a symlink or a
 * file of the wrong type is `UnsafeProfile` before anything is read or written through it. A shard that does
 * not parse is listed by `read` and makes mutations refuse (its facts are unknown); it is never touched.
 */
import { aFileType } from "../domain/FileTypeWords.js"
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
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
  journalDirection,
  journalOf,
  type ProfileLayout,
  type MutationOutcome,
  modelEntries,
  needsJournal,
  ownedCreated,
  type ProfileEntry,
  type ProfileFiles,
  type ProfileOperation,
  planLayout,
  type ProfileWrites
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
import { DEFAULT_PROFILE_BUDGET_BYTES, renderUserText, utf8Bytes } from "../domain/UserProfileText.js"
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

const decoder = new TextDecoder()
const encoder = new TextEncoder()

const unsafe = (path: string, reason: UnsafeProfile["reason"], detail: string) => new UnsafeProfile({ path, reason, detail })

export interface ReadState extends ProfileFiles {
  readonly journal: ProfileJournal | null
}

/** Where the profile's files are, and how they are read (safely: `lstat` first, never through a link). Read-only. */
export const profileReader = (fs: Deps["fs"], paths: AgentDir["Type"]["paths"]) => {
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

  /** A regular file's text, `null` when missing; a symlink or another type is refused before any read. */
  const readRegular = (path: string, maxBytes: number): Effect.Effect<string | null, ProfileError> =>
    Effect.gen(function*() {
      const info = yield* lstat(path)
      if (info === undefined) return null
      if (info.type === "SymbolicLink") return yield* unsafe(path, "symlink", "it is a symlink; the library neither reads nor writes through one")
      if (info.type !== "File") return yield* unsafe(path, "not-a-regular-file", `it is ${aFileType(info.type)}`)
      const bytes = yield* fs.readFile(path, { maxBytes }).pipe(
        Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(null))
      )
      return bytes === null ? null : decoder.decode(bytes)
    })

  const readJournal: Effect.Effect<ProfileJournal | null, ProfileError> = Effect.gen(function*() {
    const text = yield* readRegular(journalPath, ARCHIVE_FILE_MAX_BYTES)
    if (text === null) return null
    const decoded = decodeJsonBytes(ProfileJournal, encoder.encode(text))
    if (!decoded.ok) return yield* unsafe(journalPath, "unreadable-journal", `the pending-write journal does not decode (${decoded.why}); move it aside to continue`)
    return decoded.value
  })

  const readArchive = Effect.gen(function*() {
    const shards = new Map<string, ShardDocument>()
    const unparsable: Array<UnparsableShard> = []
    const info = yield* lstat(archiveDir)
    if (info === undefined) return { shards, unparsable, indexed: null, indexExists: false }
    if (info.type === "SymbolicLink") return yield* unsafe(archiveDir, "symlink", "the archive directory is a symlink")
    if (info.type !== "Directory") return yield* unsafe(archiveDir, "not-a-directory", `the archive directory is ${aFileType(info.type)}`)
    const entries = yield* fs.readDirectory(archiveDir)
    let indexed: ReadonlyArray<string> | null = null
    let indexExists = false
    for (const entry of entries) {
      const isIndex = entry.name === INDEX_FILE
      if (!isIndex && !SHARD_NAME_RE.test(entry.name)) continue
      const path = shardPath(entry.name)
      if (entry.type === "SymbolicLink") return yield* unsafe(path, "symlink", "a shard or index that is a symlink")
      if (entry.type !== "File") return yield* unsafe(path, "not-a-regular-file", `a shard or index that is ${aFileType(entry.type)}`)
      const text = yield* readRegular(path, ARCHIVE_FILE_MAX_BYTES).pipe(
        Effect.catchIf((e) => e._tag === "FileSystemError" && e.reason === "TooLarge", () => Effect.succeed(undefined))
      )
      if (text === null) continue
      if (isIndex) {
        indexExists = true
        const parsed = text === undefined ? { ok: false as const } : parseIndex(text)
        // An index that does not parse is read as missing: it holds no fact, the shards are all adopted.
        if (parsed.ok) indexed = parsed.shards
        continue
      }
      if (text === undefined) {
        unparsable.push(unparsableShard("ShardTooLarge", entry.name, `larger than ${ARCHIVE_FILE_MAX_BYTES} bytes`))
        continue
      }
      const parsed = parseShard(text)
      if (parsed.ok) shards.set(entry.name, parsed.shard)
      else unparsable.push(unparsableShard("ShardUnparsable", entry.name, parsed.why))
    }
    return { shards, unparsable, indexed, indexExists }
  })

  const readState: Effect.Effect<ReadState, ProfileError> = Effect.gen(function*() {
    const user = yield* readRegular(paths.userFile, USER_FILE_MAX_BYTES)
    const archive = yield* readArchive
    const journal = yield* readJournal
    return { user, ...archive, journal }
  })

  return { archiveDir, stateDir, lockPath, journalPath, shardPath, indexPath, readState }
}

/** `UserProfile.make` once its options are checked (module-private: the service's static is the public name). */
const makeUserProfile = (deps: Deps, paths: AgentDir["Type"]["paths"], options: UserProfileOptions = {}) => {
  const budgetBytes = options.budgetBytes ?? DEFAULT_PROFILE_BUDGET_BYTES
  const shardBudgetBytes = options.shardBudgetBytes ?? DEFAULT_SHARD_BUDGET_BYTES
  const { fs } = deps
  const { archiveDir, stateDir, lockPath, journalPath, shardPath, indexPath, readState } = profileReader(fs, paths)

  const viewOf = (files: ProfileFiles): ProfileView => {
    const model = buildModel(files)
    const text = files.user ?? ""
    return {
      text,
      entries: modelEntries(model),
      sharded: model.pointer || model.archive.length > 0,
      bytes: utf8Bytes(text),
      budgetBytes,
      unparsable: [...files.unparsable]
    }
  }

  const timestamp = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())
  const writeText = (path: string, text: string) => fs.writeFileAtomic(path, encoder.encode(text), { mode: 0o600 })
  const removeIfPresent = (path: string) => fs.removeFile(path).pipe(Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void))

  /** Index, then USER.md, then the obsolete shards (USER.md first when the archive goes away: no dangling pointer). */
  const commit = (w: Pick<ProfileWrites, "index" | "user" | "obsolete">) =>
    Effect.gen(function*() {
      const ts = yield* timestamp
      if (w.index !== null && w.index.length > 0) yield* writeText(indexPath, renderIndex(w.index, ts))
      if (w.user !== null) yield* writeText(paths.userFile, w.user)
      if (w.index !== null && w.index.length === 0) yield* removeIfPresent(indexPath)
      for (const name of w.obsolete) yield* removeIfPresent(shardPath(name))
    })

  const writeLayout = (writes: ProfileWrites, layout: ProfileLayout) =>
    Effect.gen(function*() {
      if (isNoop(writes)) return
      const journaled = needsJournal(writes)
      if (journaled) {
        yield* fs.makeDirectory(stateDir, { recursive: true })
        yield* fs.writeFileAtomic(journalPath, encodeJsonBytes(journalOf(writes, layout)), { mode: 0o600 })
      }
      if (writes.create.length > 0) {
        yield* fs.makeDirectory(archiveDir, { recursive: true })
        const ts = yield* timestamp
        for (const shard of writes.create) yield* writeText(shardPath(shard.name), renderShard(shard.entries, ts))
      }
      yield* commit(writes)
      if (journaled) yield* fs.removeFile(journalPath)
    })

  /** Finish (every created shard is there) or undo (the index cannot name them yet) what a crash left. */
  const recover = (state: ReadState, journal: ProfileJournal) =>
    Effect.gen(function*() {
      const direction = journalDirection(journal, state)
      if (direction === "forward") {
        const user = journal.user !== null && journal.user !== (state.user ?? "") ? journal.user : null
        yield* commit({ index: journal.shards, user, obsolete: journal.obsolete.filter((n) => state.shards.has(n)) })
      } else {
        for (const name of ownedCreated(journal, state)) yield* removeIfPresent(shardPath(name))
      }
      yield* fs.removeFile(journalPath)
      const done = direction === "forward" ? "completed" : "undone"
      yield* warn({ _tag: "ProfileWriteRecovered", journal: journalPath, direction: done, message: `finished a user-profile write interrupted by a crash (${done})` })
    })

  // The lock: retried while a live writer holds it (however long it lives), capped at 100 ms between tries.
  const lockSchedule = Schedule.exponential(Duration.millis(Math.max(1, options.lockPollMs ?? 2)), 1.5).pipe(
    Schedule.union(Schedule.spaced(Duration.millis(100))),
    Schedule.jittered
  )
  const acquireLock = acquireMarkerWaiting(deps, lockPath, "user-profile", {
    schedule: lockSchedule.pipe(Schedule.intersect(unreadableAtMost(UNREADABLE_LOCK_ATTEMPTS))),
    busy: (held) => new ProfileBusy({ path: lockPath, holder: held.holder }),
    beforeEachTry: fs.makeDirectory(stateDir, { recursive: true })
  })

  const mutate = (op: ProfileOperation): Effect.Effect<ProfileChange, MutationError> =>
    Effect.acquireUseRelease(
      acquireLock,
      () =>
        Effect.gen(function*() {
          let state = yield* readState
          if (state.journal !== null) {
            yield* recover(state, state.journal)
            state = yield* readState
          }
          if (state.unparsable.length > 0) {
            const names = state.unparsable.map((u) => `${u.shard} (${u.why})`).join(", ")
            return yield* unsafe(archiveDir, "unparsable-shard", `shard(s) that do not parse: ${names}; their facts are unknown, so no edit is made until they are fixed or moved aside`)
          }
          const applied: Applied = yield* Either.match(applyOperation(buildModel(state), op, shardBudgetBytes), {
            onLeft: (e) => Effect.fail(e),
            onRight: (a) => Effect.succeed(a)
          })
          const layout = planLayout(applied.model, { budgetBytes, shardBudgetBytes })
          const writes = diffLayout(state, layout)
          if (state.indexExists && state.indexed === null && writes.index !== null) {
            yield* warn({ _tag: "ProfileIndexRebuilt", path: indexPath, message: "the user preference index does not parse; it is rebuilt from the shards present" })
          }
          yield* writeLayout(writes, layout)
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
            profile: viewOf(after)
          } satisfies ProfileChange
        }),
      (release) => release
    )

  const readView = Effect.map(readState, (state) => viewOf(state.journal === null ? state : filesAfterJournal(state, state.journal)))
  // Once a writer has run (its state dir exists), a read takes the lock too, so it never sees half of a
  // mutation (new shards next to the ones they replace). Before that there is nothing to race, and a read of
  // a fresh agent dir creates nothing.
  const writerHasRun = fs.lstat(stateDir).pipe(Effect.as(true), Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(false)))
  const read: Effect.Effect<ProfileView, ProfileError> = Effect.flatMap(writerHasRun, (locked) =>
    locked ? Effect.acquireUseRelease(acquireLock, () => readView, (release) => release) : readView)

  return {
    read,
    add: (text: string) => mutate({ _tag: "Add", text }),
    replace: (query: string, text: string) => mutate({ _tag: "Replace", query, text }),
    remove: (query: string) => mutate({ _tag: "Remove", query })
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

  static readonly layer = (options: UserProfileOptions = {}) => Layer.effect(UserProfile, UserProfile.make(options))
}
