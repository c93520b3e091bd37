/**
 * Extension data tiers on the web host (docs/tiers.md "Extension data tiers (web host)": *if it is deleted, what does the user lose?*). Pure: the context, the decision tree and
 * the config red lines as plain functions over plain values. I/O lives in src/services/TierStorage.ts.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as NodePath from "node:path"
import { withArticle } from "./Article.js"
import { ATOMIC_TEMP_DIGITS, atomicTempName, atomicTempTarget } from "./AtomicWrite.js"
import { utf8Bytes } from "./Bytes.js"
import { DataDirRemoved, DecodeFailure, InvalidArgument, type InvalidSegment } from "./Errors.js"
import { decodeJsonBytes, decodeJsonValue, type JsonDecoded, schemaMismatchWhy } from "./Formats.js"
import { decodeSegment } from "./Segment.js"
import { kindOfValue } from "./Values.js"
import { resolveWebDataRoot, type TIER_NAMES, tierPaths, type WebInstance } from "./WebPaths.js"

/** The three tiers, in the order a person reads them (one list: the doctor and the paths use it too). */
export type TierName = (typeof TIER_NAMES)[number]

// ---------------------------------------------------------------------------------------------------------
// TD2: the extension context

/** What an extension receives from the host: one directory per tier. `dataDir` is gone (reading it throws). */
export interface ExtensionContext {
  readonly extId: string
  readonly configDir: string
  readonly stateDir: string
  readonly cacheDir: string
  /**
   * Removed: reading it throws `DataDirRemoved`. Choose a tier instead (see `chooseTier`):
   * `configDir`, `stateDir` or `cacheDir`.
   */
  readonly dataDir: never
}

export interface ExtensionContextOptions {
  /** The data root (`…/data`); relative values resolve against cwd. Default per TD1. */
  readonly dataRoot?: string | undefined
  readonly instance?: WebInstance | undefined
}

/**
 * Build the context from explicit environment facts. No I/O: nothing is created or checked on disk.
 * `extId` must be a portable segment (WR2), so it can never climb out of the data root.
 */
export const makeExtensionContext = (input: {
  readonly extId: string
  readonly options?: ExtensionContextOptions | undefined
  readonly env: (name: string) => string | undefined
  readonly home: string
  readonly cwd: string
}): Either.Either<ExtensionContext, InvalidSegment> => {
  const checked = decodeSegment("extId", input.extId)
  if (checked._tag === "Left") return Either.left(checked.left)
  const dataRoot = resolveWebDataRoot({
    explicit: input.options?.dataRoot,
    instance: input.options?.instance,
    env: input.env,
    home: input.home,
    cwd: input.cwd
  }).path
  const paths = tierPaths(dataRoot, input.extId)
  const extId = input.extId
  const ctx = { extId, configDir: paths.configDir, stateDir: paths.stateDir, cacheDir: paths.cacheDir }
  // Non-enumerable, so logging, JSON.stringify and `{ ...ctx }` of a context never trip over it.
  Object.defineProperty(ctx, "dataDir", {
    enumerable: false,
    configurable: false,
    get(): never {
      throw new DataDirRemoved({ extId })
    }
  })
  return Either.right(Object.freeze(ctx) as ExtensionContext)
}

/** The directories a tier store needs; `stateDir` may be absent on old hosts (docs/tiers.md: "On old hosts without `stateDir`"). */
export interface TierDirs {
  readonly configDir: string
  readonly stateDir?: string | undefined
  readonly cacheDir: string
}

/** Seed 003 §3 fallback for hosts that do not inject `stateDir`. */
export const resolveStateDir = (ctx: { readonly configDir: string; readonly stateDir?: string | undefined }): string =>
  ctx.stateDir ?? NodePath.join(ctx.configDir, "state")

export interface ResolvedTierDirs {
  readonly configDir: string
  readonly stateDir: string
  readonly cacheDir: string
}

/** Validate a caller-supplied context: every tier directory must be absolute (a relative one would move with cwd). */
export const resolveTierDirs = (ctx: TierDirs): Either.Either<ResolvedTierDirs, InvalidArgument> => {
  const dirs = { configDir: ctx.configDir, stateDir: resolveStateDir(ctx), cacheDir: ctx.cacheDir }
  for (const [field, dir] of Object.entries(dirs)) {
    if (typeof dir !== "string" || dir === "" || !NodePath.isAbsolute(dir)) {
      return Either.left(new InvalidArgument({ field, detail: `must be an absolute path (got ${JSON.stringify(dir)})` }))
    }
  }
  // cache/ may be wiped at any time, so nothing else may live inside it, and it must not contain another tier.
  // state inside config is the old-host fallback (docs/tiers.md: `configDir/state`) and is allowed.
  const pairs: ReadonlyArray<readonly [string, string, string, string]> = [
    ["configDir", dirs.configDir, "cacheDir", dirs.cacheDir],
    ["stateDir", dirs.stateDir, "cacheDir", dirs.cacheDir],
    ["configDir", dirs.configDir, "stateDir", dirs.stateDir]
  ]
  for (const [aName, a, bName, b] of pairs) {
    const same = NodePath.resolve(a) === NodePath.resolve(b)
    const cacheOverlap = bName === "cacheDir" && (isInside(a, b) || isInside(b, a))
    if (same || cacheOverlap) {
      return Either.left(new InvalidArgument({ field: bName, detail: `${b} must not overlap ${aName} ${a}` }))
    }
  }
  return Either.right(dirs)
}

/** Whether `child` lies strictly below `parent`. */
export const isInside = (child: string, parent: string): boolean => {
  const rel = NodePath.relative(parent, child)
  return rel !== "" && rel !== ".." && !rel.startsWith(`..${NodePath.sep}`) && !NodePath.isAbsolute(rel)
}

// ---------------------------------------------------------------------------------------------------------
// TD3: the decision tree

export type TierPurpose = "debug-log" | "audit-log" | "index" | "database" | "archive" | "export" | "other"

export interface TierFacts {
  /** If deleted, can the next run rebuild it automatically? */
  readonly rebuildable: boolean
  /** Does the source it is rebuilt from (sessions, archives, raw data, config) still exist? `undefined` = unknown. */
  readonly reloadSourceExists?: boolean | undefined
  /** Is it a small set of key-values the user set or entered? */
  readonly userSetKeyValues?: boolean | undefined
  readonly purpose?: TierPurpose | undefined
}

export interface TierChoice {
  readonly tier: TierName
  readonly reason: string
}

/**
 * Seed 003 §1 with its boundary rules, most specific first. Where facts conflict the answer errs towards
 * the tier that loses less: an explicitly missing reload source never yields cache, and a database or index
 * goes to cache only when its reload source is known to exist.
 */
export const chooseTier = (facts: TierFacts): TierChoice => {
  const purpose = facts.purpose ?? "other"
  if (purpose === "audit-log") {
    return { tier: "state", reason: "an audit log has historical value: deleting it loses it forever" }
  }
  if (purpose === "archive" || purpose === "export") {
    return { tier: "state", reason: `${purpose}s are the user's records and cannot be regenerated` }
  }
  if (purpose === "database" || purpose === "index") {
    if (facts.rebuildable && facts.reloadSourceExists === true) {
      return {
        tier: "cache",
        reason: `${withArticle(purpose)} fully reloadable from a source that still exists is regenerable`
      }
    }
    return {
      tier: "state",
      reason: facts.rebuildable
        ? `${withArticle(purpose)} whose reload source is ${facts.reloadSourceExists === false ? "gone" : "not known to exist"} holds unique records`
        : `${withArticle(purpose)} with non-regenerable records (history, statistics) is state`
    }
  }
  if (facts.reloadSourceExists === false) {
    return { tier: "state", reason: "its reload source is gone, so it cannot be regenerated any more" }
  }
  if (purpose === "debug-log") {
    return { tier: "cache", reason: "a pure debugging log may be deleted any time and re-accumulates" }
  }
  if (facts.userSetKeyValues === true) {
    // User input cannot be rebuilt automatically: deleting it means reconfiguring, whatever else is claimed.
    return { tier: "config", reason: "a small set of key-values the user set: deleted means reconfigure" }
  }
  if (facts.rebuildable) {
    return { tier: "cache", reason: "the next run rebuilds it automatically when it is deleted" }
  }
  return { tier: "state", reason: "it cannot be regenerated: deleting it loses it forever" }
}

// ---------------------------------------------------------------------------------------------------------
// TD4: names and values the tiers accept (the config red lines live in ConfigRedLines.ts)

/** The key-value file inside config/. */
export const CONFIG_SETTINGS_FILE = "settings.json"
/** The cross-process lock of settings.json, beside it (services/internal/settingsLock.ts; `config.writeFile` refuses the name). */
export const SETTINGS_LOCK = ".settings.json.lock"
/**
 * Whether a file in a tier is one the library makes while it writes there, never data: the settings lock, and
 * an atomic write's temp (a crash leaves it; the target is still whole). Config history never records one and a
 * rollback never writes one back (an old revision may hold one): a lock written back would stall the next set.
 */
export const isTierWorkFile = (name: string): boolean => name === SETTINGS_LOCK || atomicTempTarget(name) !== undefined
/**
 * The longest name a tier file may have, in UTF-8 bytes: every write puts its temp file beside it first
 * (`.<name>.tmp-<12 hex>`, domain/AtomicWrite.ts: 18 bytes more), and both must fit a file system's 255-byte
 * name limit (NAME_MAX), or the write fails as ENAMETOOLONG after the name was accepted.
 */
export const FILE_NAME_MAX_BYTES = 255 - atomicTempName("", "0".repeat(ATOMIC_TEMP_DIGITS)).length
export const CONFIG_KEY_MAX_LENGTH = 256

/**
 * A single file name inside one tier directory: never a path. Refuses "/", "\\", NUL, "." and "..", so a
 * key can never climb out of (or alias) its tier directory.
 */
export const fileNameViolation = (name: string): string | null => {
  if (typeof name !== "string" || name.length === 0) return "must be a non-empty file name"
  const bytes = utf8Bytes(name)
  if (bytes > FILE_NAME_MAX_BYTES) {
    return `must be at most ${FILE_NAME_MAX_BYTES} bytes in UTF-8 (got ${bytes}): its write's temp file beside it must fit the file system's 255-byte name limit`
  }
  if (name === "." || name === "..") return `must not be ${JSON.stringify(name)}`
  if (/[/\\\0]/.test(name)) return `must be a single file name without "/", "\\" or NUL (got ${JSON.stringify(name)})`
  return null
}

export const checkFileName = (field: string, name: string): Either.Either<string, InvalidArgument> => {
  const why = fileNameViolation(name)
  return why === null ? Either.right(name) : Either.left(new InvalidArgument({ field, detail: why }))
}

export const checkConfigKey = (key: string): Either.Either<string, InvalidArgument> => {
  if (typeof key !== "string" || key.length === 0) {
    return Either.left(new InvalidArgument({ field: "key", detail: "must be a non-empty string" }))
  }
  if (key.length > CONFIG_KEY_MAX_LENGTH) {
    return Either.left(new InvalidArgument({ field: "key", detail: `must be at most ${CONFIG_KEY_MAX_LENGTH} characters` }))
  }
  return Either.right(key)
}

/**
 * The deepest nesting of arrays and objects a tier value may have: deeper, writing it (and this check) would
 * overflow the call stack with a bare `RangeError`; no settings or state document needs more.
 */
export const JSON_MAX_DEPTH = 1000

/**
 * Whether a value survives a JSON round trip unchanged: null, booleans, finite numbers, strings, arrays and
 * plain objects of those, without cycles. Returns the path of the first offending part, or null.
 */
export const jsonValueViolation = (value: unknown): string | null => {
  const seen = new Set<object>()
  const walk = (v: unknown, at: string, depth: number): string | null => {
    if (v === null || typeof v === "boolean" || typeof v === "string") return null
    if (typeof v === "number") return Number.isFinite(v) ? null : `${at} is ${String(v)}, which JSON cannot hold`
    if (typeof v !== "object") return `${at} is ${kindOfValue(v)}, which JSON cannot hold`
    if (seen.has(v)) return `${at} is a cycle`
    if (depth >= JSON_MAX_DEPTH) return `value nests deeper than ${JSON_MAX_DEPTH} arrays and objects`
    const proto = Object.getPrototypeOf(v)
    if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) {
      return `${at} is ${withArticle((v as object).constructor?.name ?? "non-plain object")}, not a plain object`
    }
    seen.add(v)
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const bad = walk(v[i], `${at}[${i}]`, depth + 1)
        if (bad !== null) return bad
      }
    } else {
      for (const [k, child] of Object.entries(v)) {
        const bad = walk(child, `${at}.${k}`, depth + 1)
        if (bad !== null) return bad
      }
    }
    seen.delete(v)
    return null
  }
  return walk(value, "value", 0)
}

/**
 * A tier record's bytes as the tier reads them back: JSON that `jsonValueViolation` accepts, then decoded with
 * `schema`. Plain `JSON.parse` takes `1e999` for Infinity, which a later write would turn into `null`: a record
 * no tier write could have made is unreadable (stage "json", the offending part named), never half-read. Pure.
 */
export const decodeStrictJsonBytes = <A, I>(schema: Schema.Schema<A, I>, bytes: Uint8Array): JsonDecoded<A> => {
  const parsed = decodeJsonBytes(Schema.Unknown, bytes)
  if (!parsed.ok) return parsed
  const violation = jsonValueViolation(parsed.value)
  if (violation !== null) {
    const why = `not strict JSON: ${violation.replace(/^value/, "the record")}`
    return { ok: false, why, failure: new DecodeFailure({ stage: "json", detail: why }) }
  }
  return decodeJsonValue(schema, parsed.value)
}

/**
 * What a tier stores for `value`: its encoded form under `schema` when one is given, and that (or the value
 * itself) checked to be strict JSON. One refusal for one mistake, in state and config alike: `InvalidArgument`
 * (field "value"), naming the offending part. `undefined` itself is said to be no value (`unsetHint` tells
 * the config tier's caller how to remove a key instead).
 */
export const tierValue = <A, I>(
  value: A,
  schema?: Schema.Schema<A, I>,
  unsetHint?: string
): Either.Either<unknown, InvalidArgument> => {
  let encoded: unknown = value
  if (schema !== undefined) {
    const result = Schema.encodeEither(schema)(value)
    if (Either.isLeft(result)) {
      return Either.left(new InvalidArgument({ field: "value", detail: `cannot be encoded with the given schema: ${schemaMismatchWhy(result.left)}` }))
    }
    encoded = result.right
  }
  const why = jsonValueViolation(encoded)
  if (why === null) return Either.right(encoded)
  const hint = encoded === undefined && unsetHint !== undefined ? `; ${unsetHint}` : ""
  return Either.left(new InvalidArgument({ field: "value", detail: `not JSON: ${why}${hint}` }))
}
