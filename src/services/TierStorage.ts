/**
 * Tier behaviour (docs/tiers.md "Extension data tiers (web host)" and its red lines) as Effect programs over the FileSystem port:
 * - cache rebuilds whatever is missing, unreadable or invalid, so an extension survives `rm -rf cache/`;
 * - state is read strictly (missing or unreadable is a typed error, never a default) and written atomically
 *   with fsync; there is deliberately no cleanup API;
 * - config holds small schema-checked JSON key-values and refuses databases, logs and anything over budget;
 *   `set` re-reads settings.json, modifies it and replaces it only if it is still what was read (a person's
 *   edit meanwhile is re-read, never overwritten: DESIGN "Safety rules").
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as NodePath from "node:path"
import {
  ConfigRedLine,
  ConfigUnreadable,
  DecodeFailure,
  type FileSystemError,
  InvalidArgument,
  type InvalidSegment,
  RemovalStalled,
  StateMissing,
  StateUnreadable,
  TiersOverlap,
  TierUnresolvable
} from "../domain/Errors.js"
import { type FileVersion, isChanged } from "../domain/FileChange.js"
import { kindOfValue } from "../domain/Values.js"
import { findTierOverlap } from "../domain/TierIdentity.js"
import { decodeJsonValue, encodeJsonBytes } from "../domain/Formats.js"
import {
  checkConfigKey,
  checkFileName,
  CONFIG_SETTINGS_FILE,
  decodeStrictJsonBytes,
  isTierWorkFile,
  type ExtensionContext,
  type ExtensionContextOptions,
  isInside,
  makeExtensionContext,
  resolveStateDir,
  resolveTierDirs,
  type TierDirs,
  tierValue
} from "../domain/Tiers.js"
import {
  configBudgetViolation,
  type ConfigViolation,
  configFileNameViolation,
  DEFAULT_CONFIG_BUDGET_BYTES
} from "../domain/ConfigRedLines.js"
import { FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"
import { locate } from "./internal/locate.js"
import { withSettingsLock } from "./internal/settingsLock.js"

/** TD2 over a Host: the environment, home and cwd it reports. No I/O. */
const contextOn = (host: Host["Type"]) => (extId: string, options?: ExtensionContextOptions): Effect.Effect<ExtensionContext, InvalidSegment> =>
  makeExtensionContext({ extId, options, env: host.env, home: host.homeDir, cwd: host.cwd })

export interface CacheEnsureOptions {
  /** Checked against cached bytes before they are trusted; `false` (or a throw) means rebuild. */
  readonly validate?: ((bytes: Uint8Array) => boolean) | undefined
}

export interface CacheTier<X = never> {
  readonly dir: string
  /**
   * `cache/<key>` if present and valid, else the result of `build`, written atomically (no fsync: a lost
   * cache entry is rebuilt). The directory is (re)created on demand.
   */
  readonly ensure: <E, R>(
    key: string,
    build: Effect.Effect<Uint8Array | string, E, R>,
    options?: CacheEnsureOptions
  ) => Effect.Effect<Uint8Array, E | CacheError | X, R>
  /** Remove cache/ entirely, never following symlinks. Re-checks the tiers' identities first (TD5). */
  readonly clear: () => Effect.Effect<void, Exclude<CacheError, InvalidArgument> | X>
}

/** `X`: what every call may fail with besides its own errors (`FirstUseError` for tiers opened on first use). */
export interface StateTier<X = never> {
  readonly dir: string
  /**
   * The JSON record `state/<name>`, decoded with `schema` when one is given. A missing record is
   * `StateMissing`; one that cannot be read or decoded is `StateUnreadable`, whose `cause` says which (a
   * `FileSystemError` or a `DecodeFailure`).
   */
  readonly read: {
    (name: string): Effect.Effect<unknown, StateReadError | X>
    <A, I>(name: string, schema: Schema.Schema<A, I>): Effect.Effect<A, StateReadError | X>
  }
  /**
   * Write `state/<name>` atomically with fsync of the file and the directory: `value` encoded with `schema`
   * when one is given; what is written must be strict JSON (else `InvalidArgument`, nothing written).
   */
  readonly write: {
    (name: string, value: unknown): Effect.Effect<void, StateWriteError | X>
    <A, I>(name: string, value: A, schema: Schema.Schema<A, I>): Effect.Effect<void, StateWriteError | X>
  }
}

export interface ConfigTier<X = never> {
  readonly dir: string
  /**
   * The value stored under `key` in config/settings.json, `undefined` when unset; decoded with `schema` when
   * one is given (a stored value it refuses is `ConfigUnreadable` naming the key, left as it is).
   */
  readonly get: {
    (key: string): Effect.Effect<unknown, ConfigReadError | X>
    <A, I>(key: string, schema: Schema.Schema<A, I>): Effect.Effect<A | undefined, ConfigReadError | X>
  }
  /**
   * Set `key` to `value` (encoded with `schema` when one is given). A value that is not strict JSON —
   * `undefined` included: unset a key with `delete` — is `InvalidArgument`, as in `state.write`.
   */
  readonly set: {
    (key: string, value: unknown): Effect.Effect<void, ConfigWriteError | X>
    <A, I>(key: string, value: A, schema: Schema.Schema<A, I>): Effect.Effect<void, ConfigWriteError | X>
  }
  /** Remove `key` from config/settings.json; `true` when it was set. Creates nothing when settings.json is absent. */
  readonly delete: (key: string) => Effect.Effect<boolean, ConfigDeleteError | X>
  /** Write `config/<name>` atomically, unless it is a database, a log, settings.json, or over budget. */
  readonly writeFile: (name: string, data: Uint8Array | string) => Effect.Effect<void, ConfigFileWriteError | X>
  /**
   * The bytes of `config/<name>` as `writeFile` wrote them, `undefined` when there is no such file. Never
   * through a symlink; a file over the config budget is `FileSystemError` (`TooLarge`). settings.json is read
   * with `get`.
   */
  readonly readFile: (name: string) => Effect.Effect<Uint8Array | undefined, ConfigFileReadError | X>
}

export interface Tiers<X = never> {
  readonly cache: CacheTier<X>
  readonly state: StateTier<X>
  readonly config: ConfigTier<X>
}

/** What `open` may fail with, which a tier opened on first use adds to each call. */
export type FirstUseError = OpenTiersError

export interface OpenTiersOptions {
  /** Ceiling for the sum of config/'s files (default 1 MiB). */
  readonly configBudgetBytes?: number | undefined
}

/** Attempts of one `config.set` while someone keeps saving settings.json under it (each re-reads it). */
const SET_ATTEMPTS = 8
const DIR_MODE = 0o700
const FILE_MODE = 0o600
/** Bounds for walks inside one extension's tier; config/ is KB-scale, cache/ may hold a venv. */
const CONFIG_MEASURE_BUDGET = { maxEntries: 10_000, maxDepth: 32 }
/** Removing cache/ (ours, rebuildable) is never bounded by depth, only sliced by entries: nothing in it is worth keeping. */
const REMOVE_BUDGET = { maxEntries: 10_000, maxDepth: Number.MAX_SAFE_INTEGER }

const textEncoder = new TextEncoder()
/**
 * Bytes to write from what a caller gave (`field` names it): a string (as UTF-8) or a Uint8Array. Anything else (a
 * plain JavaScript caller's number, `undefined`, an object) is InvalidArgument: written as it was, it became an
 * empty file, or a file-system error about `byteLength`.
 */
const bytesOf = (field: string, data: unknown): Effect.Effect<Uint8Array, InvalidArgument> =>
  typeof data === "string"
    ? Effect.succeed(textEncoder.encode(data))
    : data instanceof Uint8Array
    ? Effect.succeed(data)
    : Effect.fail(new InvalidArgument({ field, detail: `must be a string or a Uint8Array, not ${kindOfValue(data)}` }))

const fromEither = <A, E>(either: Either.Either<A, E>): Effect.Effect<A, E> =>
  Either.isRight(either) ? Effect.succeed(either.right) : Effect.fail(either.left)

const isNotFound = (error: FileSystemError): boolean => error.reason === "NotFound"

const redLine = (path: string, v: ConfigViolation): ConfigRedLine =>
  new ConfigRedLine({ path, rule: v.rule, rightTier: v.rightTier, detail: v.detail })

export type OpenTiersError = InvalidArgument | TiersOverlap | TierUnresolvable | FileSystemError
/** What `cache.ensure` (besides the build's own error) and `cache.clear` fail with. */
export type CacheError = InvalidArgument | TiersOverlap | TierUnresolvable | RemovalStalled | FileSystemError
export type StateReadError = StateMissing | StateUnreadable | InvalidArgument
export type StateWriteError = InvalidArgument | FileSystemError
export type ConfigReadError = InvalidArgument | ConfigUnreadable | FileSystemError
export type ConfigWriteError = InvalidArgument | ConfigRedLine | ConfigUnreadable | FileSystemError
export type ConfigDeleteError = InvalidArgument | ConfigUnreadable | FileSystemError
export type ConfigFileWriteError = InvalidArgument | ConfigRedLine | FileSystemError
export type ConfigFileReadError = InvalidArgument | FileSystemError
/** Every error the tier service fails with (a `cache.ensure` also fails with its build's own error). */
export type TierStorageError =
  | OpenTiersError
  | CacheError
  | StateReadError
  | StateWriteError
  | ConfigReadError
  | ConfigWriteError
  | InvalidSegment

/** The web host's extension data tiers (TD1–TD5) as a service over the FileSystem and Host ports. */
export class TierStorage extends Context.Tag("pi-agent-storage/TierStorage")<TierStorage, {
  /**
   * Open the three tiers of one extension. Validates the directories (absolute; `stateDir` falls back to
   * `configDir/state`, docs/tiers.md: "On old hosts without `stateDir`") and the options, then compares where
   * they resolve on disk (TD5: device and inode, links followed; `TiersOverlap`). Creates nothing.
   */
  readonly open: (ctx: TierDirs, options?: OpenTiersOptions) => Effect.Effect<Tiers, OpenTiersError>
  /**
   * `open`, done on the first call of a tier method instead of now: no I/O until then (an agent extension's
   * view, `ExtensionStorage.getStorage`, is built this way). The first call opens the tiers (validation and
   * TD5 as `open`), failing with what `open` fails with; once opened, the tiers are those of `open`, and a
   * failed open is tried again by the next call.
   */
  readonly onFirstUse: (ctx: TierDirs, options?: OpenTiersOptions) => Tiers<FirstUseError>
  /** TD2: the tier directories of `extId` under the data root, with the Host's environment. No I/O. */
  readonly extensionContext: (extId: string, options?: ExtensionContextOptions) => Effect.Effect<ExtensionContext, InvalidSegment>
}>() {
  static readonly make: Effect.Effect<TierStorage["Type"], never, FileSystem | Host> = Effect.gen(function*() {
    const fs = yield* FileSystem
    const host = yield* Host
    const open = openOn(fs)
    return TierStorage.of({ open, onFirstUse: onFirstUseOf(open), extensionContext: contextOn(host) })
  })

  static readonly layer: Layer.Layer<TierStorage, never, FileSystem | Host> = Layer.effect(TierStorage, TierStorage.make)
}

/**
 * What every operation of one opened extension's tiers shares: the port, the validated directories, the
 * config budget, settings.json's path, and the lock that serialises config writes from this handle.
 */
const tiersContext = (fs: FileSystem["Type"], ctx: TierDirs, options?: OpenTiersOptions) =>
  Effect.gen(function*() {
    const dirs = yield* fromEither(resolveTierDirs(ctx))
    const budgetBytes = options?.configBudgetBytes ?? DEFAULT_CONFIG_BUDGET_BYTES
    if (!Number.isSafeInteger(budgetBytes) || budgetBytes < 0) {
      return yield* Effect.fail(
        new InvalidArgument({ field: "configBudgetBytes", detail: `must be a non-negative integer (got ${budgetBytes})` })
      )
    }
    // config/settings.json is read-modify-write: serialise config writes from this handle.
    const configLock = yield* Effect.makeSemaphore(1)
    return {
      fs,
      dirs,
      budgetBytes,
      configLock,
      settingsPath: NodePath.join(dirs.configDir, CONFIG_SETTINGS_FILE),
      stateInsideConfig: isInside(dirs.stateDir, dirs.configDir)
    }
  })

type TiersContext = Effect.Effect.Success<ReturnType<typeof tiersContext>>

const openOn = (fs: FileSystem["Type"]) => (ctx: TierDirs, options?: OpenTiersOptions): Effect.Effect<Tiers, OpenTiersError> =>
  Effect.gen(function*() {
    const c = yield* tiersContext(fs, ctx, options)
    yield* checkIdentities(c, "open")
    return { cache: cacheTier(c), state: stateTier(c), config: configTier(c) }
  })

/**
 * TD5, at open and again right before anything that deletes or replaces cache entries: a link or mount
 * made after open (cache/ pointed at state/) is caught before the first byte changes.
 */
const checkIdentities = (c: TiersContext, during: string): Effect.Effect<void, TiersOverlap | TierUnresolvable | FileSystemError> =>
  Effect.gen(function*() {
    const { dirs, fs } = c
    const [config, state, cache] = yield* Effect.all([
      locate(fs, dirs.configDir),
      locate(fs, dirs.stateDir),
      locate(fs, dirs.cacheDir)
    ])
    const overlap = findTierOverlap({
      config: { path: dirs.configDir, location: config },
      state: { path: dirs.stateDir, location: state },
      cache: { path: dirs.cacheDir, location: cache }
    })
    if (overlap !== null) return yield* Effect.fail(new TiersOverlap({ ...overlap, during }))
  })

/** Write into `dir`, creating it only when missing, so a tier dir that is a symlink elsewhere keeps working. */
const writeInto = (c: TiersContext, dir: string, path: string, data: Uint8Array, sync: boolean) =>
  c.fs.writeFileAtomic(path, data, { mode: FILE_MODE, sync }).pipe(
    Effect.catchIf(isNotFound, () =>
      c.fs.makeDirectory(dir, { recursive: true, mode: DIR_MODE }).pipe(
        Effect.zipRight(c.fs.writeFileAtomic(path, data, { mode: FILE_MODE, sync }))
      ))
  )

/** removeTree until done; it stops after a budget of entries, and a rerun continues. */
const removeAll = (c: TiersContext, path: string): Effect.Effect<void, FileSystemError | RemovalStalled> =>
  c.fs.removeTree(path, REMOVE_BUDGET).pipe(
    Effect.flatMap((r) => {
      if (r.complete) return Effect.void
      if (r.removedEntries === 0) return Effect.fail(new RemovalStalled({ path }))
      return removeAll(c, path)
    })
  )

// ---- cache ----------------------------------------------------------------------------------------------

const cacheEnsure = <E, R>(
  c: TiersContext,
  key: string,
  build: Effect.Effect<Uint8Array | string, E, R>,
  ensureOptions?: CacheEnsureOptions
): Effect.Effect<Uint8Array, E | CacheError, R> =>
  Effect.gen(function*() {
    yield* fromEither(checkFileName("key", key))
    const path = NodePath.join(c.dirs.cacheDir, key)
    const cached = yield* Effect.either(c.fs.readFile(path))
    if (Either.isRight(cached)) {
      const validate = ensureOptions?.validate
      // A validator that throws judges the cached value invalid: it is recomputed (nothing lost, cache only).
      const valid = validate === undefined ||
        (yield* Effect.try(() => validate(cached.right)).pipe(Effect.orElseSucceed(() => false)))
      if (valid === true) return cached.right
    } else if (!isNotFound(cached.left)) {
      // A directory, symlink or unreadable entry squats on the key: cache may be deleted at any time.
      yield* checkIdentities(c, "cache.ensure")
      yield* removeAll(c, path)
    }
    const bytes = yield* bytesOf("build", yield* build)
    // Checked after the build, which may take long: the write replaces whatever is at the key.
    yield* checkIdentities(c, "cache.ensure")
    yield* writeInto(c, c.dirs.cacheDir, path, bytes, false).pipe(
      // cache/ vanished again while we wrote (a concurrent clear or rm -rf): the entry is lost as if
      // cleared a moment later, and the build still answers (found by the jittered property test).
      Effect.catchIf(isNotFound, () => Effect.void)
    )
    return bytes
  })

const cacheClear = (c: TiersContext) => Effect.zipRight(checkIdentities(c, "cache.clear"), removeAll(c, c.dirs.cacheDir))

const cacheTier = (c: TiersContext): CacheTier => ({
  dir: c.dirs.cacheDir,
  ensure: (key, build, ensureOptions) => cacheEnsure(c, key, build, ensureOptions),
  clear: () => cacheClear(c)
})

// ---- state ----------------------------------------------------------------------------------------------

const readState = <A, I>(c: TiersContext, name: string, schema: Schema.Schema<A, I>) =>
  Effect.gen(function*() {
    yield* fromEither(checkFileName("name", name))
    const path = NodePath.join(c.dirs.stateDir, name)
    const bytes = yield* c.fs.readFile(path).pipe(
      Effect.mapError((error) =>
        isNotFound(error) ? new StateMissing({ path }) : new StateUnreadable({ path, detail: error.message, cause: error })
      )
    )
    const decoded = decodeStrictJsonBytes(schema, bytes)
    if (!decoded.ok) return yield* Effect.fail(new StateUnreadable({ path, detail: decoded.why, cause: decoded.failure }))
    return decoded.value
  })

const writeState = (c: TiersContext, name: string, value: unknown, schema?: Schema.Schema<unknown, unknown>) =>
  Effect.gen(function*() {
    yield* fromEither(checkFileName("name", name))
    const json = yield* fromEither(tierValue(value, schema))
    yield* writeInto(c, c.dirs.stateDir, NodePath.join(c.dirs.stateDir, name), encodeJsonBytes(json), true)
  })

const stateTier = (c: TiersContext): StateTier => ({
  dir: c.dirs.stateDir,
  read: ((name: string, schema?: Schema.Schema<unknown, unknown>) => readState(c, name, schema ?? Schema.Unknown)) as StateTier["read"],
  write: ((name: string, value: unknown, schema?: Schema.Schema<unknown, unknown>) => writeState(c, name, value, schema)) as StateTier["write"]
})

// ---- config ---------------------------------------------------------------------------------------------

const settingsOf = (c: TiersContext, bytes: Uint8Array): Effect.Effect<Readonly<Record<string, unknown>>, ConfigUnreadable> => {
  const decoded = decodeStrictJsonBytes(Schema.Unknown, bytes)
  if (!decoded.ok) return Effect.fail(new ConfigUnreadable({ path: c.settingsPath, detail: decoded.why, cause: decoded.failure }))
  const value = decoded.value
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return Effect.succeed(value as Record<string, unknown>)
  const detail = "settings are not a JSON object"
  return Effect.fail(new ConfigUnreadable({ path: c.settingsPath, detail, cause: new DecodeFailure({ stage: "schema", detail }) }))
}

/**
 * settings.json there but not readable as a file (a link, a directory, a FIFO, over the config budget, EIO) is
 * `ConfigUnreadable` with the read's failure as its cause, as a state record's is `StateUnreadable`: one error
 * for one kind of trouble, whichever tier.
 */
const unreadableSettings = (c: TiersContext) => (error: FileSystemError) =>
  new ConfigUnreadable({ path: c.settingsPath, detail: error.message, cause: error })

const readSettings = (c: TiersContext): Effect.Effect<Readonly<Record<string, unknown>>, ConfigUnreadable> =>
  c.fs
    .readFile(c.settingsPath, { maxBytes: Math.max(c.budgetBytes, 1) })
    .pipe(
      Effect.mapError(unreadableSettings(c)),
      Effect.flatMap((bytes) => settingsOf(c, bytes)),
      // Never configured is not an error: every key is unset.
      Effect.catchIf((error) => error.cause._tag === "FileSystemError" && isNotFound(error.cause), () => Effect.succeed({}))
    )

/** settings.json as read (its identity and bytes: `null` when missing), for the conditional replace. */
const readSettingsVersion = (c: TiersContext): Effect.Effect<
  { readonly settings: Readonly<Record<string, unknown>>; readonly version: FileVersion | null },
  FileSystemError | ConfigUnreadable
> =>
  c.fs.lstat(c.settingsPath).pipe(
    Effect.flatMap((info) =>
      c.fs.readFile(c.settingsPath, { maxBytes: Math.max(c.budgetBytes, 1) }).pipe(
        Effect.flatMap((bytes) => Effect.map(settingsOf(c, bytes), (settings) => ({ settings, version: { dev: info.dev, ino: info.ino, bytes } })))
      )
    ),
    Effect.catchIf((error) => error._tag === "FileSystemError" && isNotFound(error), () => Effect.succeed({ settings: {}, version: null })),
    Effect.catchTag("FileSystemError", (error) => Effect.fail(unreadableSettings(c)(error)))
  )

/** `writeInto` for a file read first: replaced only if it is still `expected` (created only if still missing). */
const replaceInto = (c: TiersContext, dir: string, path: string, expected: FileVersion | null, data: Uint8Array) =>
  c.fs.replaceFileIfUnchanged(path, expected, data, { mode: FILE_MODE }).pipe(
    Effect.catchIf((e) => expected === null && isNotFound(e), () =>
      c.fs.makeDirectory(dir, { recursive: true, mode: DIR_MODE }).pipe(
        Effect.zipRight(c.fs.replaceFileIfUnchanged(path, expected, data, { mode: FILE_MODE }))
      ))
  )

const sizeOf = (c: TiersContext, path: string): Effect.Effect<number, FileSystemError> =>
  c.fs.lstat(path).pipe(
    Effect.map((info) => (info.type === "File" ? info.size : 0)),
    Effect.catchIf(isNotFound, () => Effect.succeed(0))
  )

// The budget is what config's files hold (`fileBytes`), not their disk usage: a small key-value file is small.
const measure = (c: TiersContext, dir: string) =>
  c.fs.measureTree(dir, CONFIG_MEASURE_BUDGET).pipe(
    Effect.map((m) => ({ bytes: m.fileBytes, complete: m.complete })),
    Effect.catchIf(isNotFound, () => Effect.succeed({ bytes: 0, complete: true }))
  )

/** Seed 003 §2: refuse a write that would take config/ over its budget. */
const checkBudget = (c: TiersContext, path: string, newBytes: number) =>
  Effect.gen(function*() {
    const whole = yield* measure(c, c.dirs.configDir)
    // On old hosts state lives in config/state (docs/tiers.md: `resolveStateDir`, "on old hosts"); it is not config's weight.
    const nested = yield* (c.stateInsideConfig ? measure(c, c.dirs.stateDir) : Effect.succeed({ bytes: 0, complete: true }))
    const replacedBytes = yield* sizeOf(c, path)
    const violation = configBudgetViolation({
      currentBytes: whole.bytes - nested.bytes,
      complete: whole.complete && nested.complete,
      replacedBytes,
      newBytes,
      budgetBytes: c.budgetBytes
    })
    if (violation !== null) return yield* Effect.fail(redLine(path, violation))
  })

/**
 * Replace settings.json with `change(settings)` if it is still what was read (`undefined` from `change`
 * writes nothing), after `check` of the new bytes' length.
 */
const changeSettings = <E extends { readonly _tag: string }>(
  c: TiersContext,
  change: (settings: Readonly<Record<string, unknown>>) => Record<string, unknown> | undefined,
  check: (newBytes: number) => Effect.Effect<void, E>
): Effect.Effect<boolean, E | ConfigUnreadable | FileSystemError> => {
  // A person may edit settings.json too: re-read, modify, and replace it only if it is still what was read.
  const once = Effect.gen(function*() {
    const { settings, version } = yield* readSettingsVersion(c)
    const next = change(settings)
    if (next === undefined) return false
    // Pretty-printed: config is versioned by the config history, and readable diffs are the point.
    const bytes = textEncoder.encode(JSON.stringify(next, null, 2) + "\n")
    yield* check(bytes.byteLength)
    yield* replaceInto(c, c.dirs.configDir, c.settingsPath, version, bytes)
    return true
  })
  const attempts = (n: number): Effect.Effect<boolean, E | ConfigUnreadable | FileSystemError> =>
    once.pipe(Effect.catchIf((e) => isChanged(e) && n < SET_ATTEMPTS, () => attempts(n + 1)))
  // One writer at a time in this handle (the semaphore) and across processes (the lock file beside settings.json),
  // taken only when there is something to write (a delete of a key never set creates nothing, not even config/).
  const locked = Effect.flatMap(readSettingsVersion(c), ({ settings }) =>
    change(settings) === undefined ? Effect.succeed(false) : withSettingsLock(c.fs, c.dirs.configDir, attempts(1)))
  return c.configLock.withPermits(1)(locked)
}

/** The name of a file of config/ other than settings.json, and its path. */
const configFile = (c: TiersContext, name: string) =>
  Effect.gen(function*() {
    yield* fromEither(checkFileName("name", name))
    if (name === CONFIG_SETTINGS_FILE) {
      return yield* Effect.fail(
        new InvalidArgument({ field: "name", detail: `${name} is managed by config.set/get/delete` })
      )
    }
    // The settings lock, or a write's temp: config history takes such a name for the library's and never records it.
    if (isTierWorkFile(name)) {
      return yield* Effect.fail(new InvalidArgument({
        field: "name",
        detail: `${name} is a name of the library's own files (the settings lock, .settings.json.lock, or a write's temp, .<name>.tmp-<12 hex digits>)`
      }))
    }
    return NodePath.join(c.dirs.configDir, name)
  })

const configGet = (c: TiersContext, key: string, schema?: Schema.Schema<unknown, unknown>) =>
  Effect.gen(function*() {
    yield* fromEither(checkConfigKey(key))
    const settings = yield* readSettings(c)
    // hasOwn: "__proto__" or "toString" must never answer from Object.prototype.
    const value = Object.hasOwn(settings, key) ? settings[key] : undefined
    if (value === undefined || schema === undefined) return value
    const decoded = decodeJsonValue(schema, value)
    if (!decoded.ok) return yield* Effect.fail(new ConfigUnreadable({ path: c.settingsPath, key, detail: decoded.why, cause: decoded.failure }))
    return decoded.value
  })

const configSet = (c: TiersContext, key: string, value: unknown, schema?: Schema.Schema<unknown, unknown>) =>
  Effect.gen(function*() {
    yield* fromEither(checkConfigKey(key))
    const json = yield* fromEither(tierValue(value, schema, "to unset a key, use config.delete(key)"))
    yield* changeSettings(c, (settings) => {
      const next: Record<string, unknown> = { ...settings }
      Object.defineProperty(next, key, { value: json, enumerable: true, writable: true, configurable: true })
      return next
    }, (newBytes) => checkBudget(c, c.settingsPath, newBytes))
  })

const configDelete = (c: TiersContext, key: string) =>
  Effect.gen(function*() {
    yield* fromEither(checkConfigKey(key))
    return yield* changeSettings(c, (settings) => {
      if (!Object.hasOwn(settings, key)) return undefined
      const next: Record<string, unknown> = { ...settings }
      delete next[key]
      return next
      // Removing a key only shrinks config/: no budget refuses it, even when other files took config/ over.
    }, () => Effect.void)
  })

const configWriteFile = (c: TiersContext, name: string, data: Uint8Array | string) =>
  Effect.gen(function*() {
    const path = yield* configFile(c, name)
    const byName = configFileNameViolation(name)
    if (byName !== null) return yield* Effect.fail(redLine(path, byName))
    const bytes = yield* bytesOf("data", data)
    yield* c.configLock.withPermits(1)(
      checkBudget(c, path, bytes.byteLength).pipe(Effect.zipRight(writeInto(c, c.dirs.configDir, path, bytes, true)))
    )
  })

const configReadFile = (c: TiersContext, name: string) =>
  Effect.gen(function*() {
    const path = yield* configFile(c, name)
    return yield* c.fs.readFile(path, { maxBytes: Math.max(c.budgetBytes, 1) }).pipe(
      Effect.map((bytes): Uint8Array | undefined => bytes),
      Effect.catchIf(isNotFound, () => Effect.succeed(undefined))
    )
  })

const configTier = (c: TiersContext): ConfigTier => ({
  dir: c.dirs.configDir,
  get: ((key: string, schema?: Schema.Schema<unknown, unknown>) => configGet(c, key, schema)) as ConfigTier["get"],
  set: ((key: string, value: unknown, schema?: Schema.Schema<unknown, unknown>) => configSet(c, key, value, schema)) as ConfigTier["set"],
  delete: (key) => configDelete(c, key),
  writeFile: (name, data) => configWriteFile(c, name, data),
  readFile: (name) => configReadFile(c, name)
})

/**
 * `TierStorage.onFirstUse`: every method opens the tiers first (once: concurrent first calls share one open)
 * and then delegates, so the tiers behave exactly as opened ones, TD5's checks included.
 */
const onFirstUseOf = (open: (ctx: TierDirs, options?: OpenTiersOptions) => Effect.Effect<Tiers, OpenTiersError>) =>
(ctx: TierDirs, options?: OpenTiersOptions): Tiers<FirstUseError> => {
  const gate = Effect.unsafeMakeSemaphore(1)
  let opened: Tiers | undefined
  const tiers: Effect.Effect<Tiers, OpenTiersError> = Effect.suspend(() =>
    opened !== undefined ? Effect.succeed(opened) : gate.withPermits(1)(Effect.suspend(() =>
      opened !== undefined ? Effect.succeed(opened) : Effect.tap(open(ctx, options), (t) => Effect.sync(() => void (opened = t)))
    ))
  )
  const use = <A, E, R>(f: (t: Tiers) => Effect.Effect<A, E, R>) => Effect.flatMap(tiers, f)
  // The overloads with a schema are one method each underneath (an absent schema is `undefined`).
  type Untyped = Schema.Schema<unknown, unknown> | undefined
  const untyped = (t: Tiers) => ({
    stateRead: t.state.read as (name: string, schema?: Untyped) => Effect.Effect<unknown, StateReadError>,
    stateWrite: t.state.write as (name: string, value: unknown, schema?: Untyped) => Effect.Effect<void, StateWriteError>,
    configGet: t.config.get as (key: string, schema?: Untyped) => Effect.Effect<unknown, ConfigReadError>,
    configSet: t.config.set as (key: string, value: unknown, schema?: Untyped) => Effect.Effect<void, ConfigWriteError>
  })
  return {
    cache: {
      dir: ctx.cacheDir,
      ensure: (key, build, ensureOptions) => use((t) => t.cache.ensure(key, build, ensureOptions)),
      clear: () => use((t) => t.cache.clear())
    },
    state: {
      dir: resolveStateDir(ctx),
      read: ((name: string, schema?: Untyped) => use((t) => untyped(t).stateRead(name, schema))) as StateTier<FirstUseError>["read"],
      write: ((name: string, value: unknown, schema?: Untyped) => use((t) => untyped(t).stateWrite(name, value, schema))) as StateTier<
        FirstUseError
      >["write"]
    },
    config: {
      dir: ctx.configDir,
      get: ((key: string, schema?: Untyped) => use((t) => untyped(t).configGet(key, schema))) as ConfigTier<FirstUseError>["get"],
      set: ((key: string, value: unknown, schema?: Untyped) => use((t) => untyped(t).configSet(key, value, schema))) as ConfigTier<
        FirstUseError
      >["set"],
      delete: (key) => use((t) => t.config.delete(key)),
      writeFile: (name, data) => use((t) => t.config.writeFile(name, data)),
      readFile: (name) => use((t) => t.config.readFile(name))
    }
  }
}
