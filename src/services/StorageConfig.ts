/**
 * The library's tunables as one service. A `Context.Reference`: a program that is given none reads the
 * defaults below, so `R` never grows; a stack built with `Storage.layer(world, { config })` (or
 * `StorageConfig.layer`) gives every program in it the same values. That is the point: the pruner, the
 * acquirer, the doctor, the inventory and the migration judge a lease with one TTL, so `work ls` can never
 * call "active" a run the pruner would not spare.
 *
 * Environment variables are read once, at the Node edge, through Effect's `Config`
 * (`StorageConfig.layerFromEnv`, used by `NodeStorage.layer`, the Promise facade and the CLI). Programs never
 * read the environment for these.
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { DEFAULT_STALE_UNREADABLE_MS } from "../domain/Liveness.js"
import {
  decodeRetentionInput,
  DEFAULT_REMOTE_LEASE_TTL_MS,
  DEFAULT_RETENTION,
  resolvePolicy,
  type RetentionInput,
  type RetentionPolicy
} from "../domain/Retention.js"

/**
 * Which tree walker the Node FileSystem uses: `auto` is the native `fsat` addon when it is built, else the
 * portable one; `native` where the addon is not built is a defect when the layer is built.
 */
export type WalkerChoice = "auto" | "native" | "portable"

export interface StorageSettings {
  /** Other hosts' leases (and markers) count as alive until their heartbeat is this old (WR4). */
  readonly remoteLeaseTtlMs: number
  /**
   * How long an unreadable marker or lease (empty, garbage, a directory where a file belongs, a remote
   * timestamp beyond now + TTL) is held before it counts as dead.
   */
  readonly staleUnreadableMs: number
  /** The ceiling every requested retention policy is clamped to, field by field (WR9 by default). */
  readonly retentionCeiling: RetentionPolicy
  /** Attempts before `RunBusy` while a cleanup marker holds a run, and the pause between them. */
  readonly busyAttempts: number
  readonly busyDelayMs: number
  /** The Node FileSystem's tree walker (`PI_STORAGE_NATIVE=0`: `portable`). */
  readonly walker: WalkerChoice
  /** Tree removals that may run at once on the Node FileSystem (`PI_STORAGE_REMOVER_THREADS`, 1–16). */
  readonly removerThreads: number
}

/** What a caller may override; `retentionCeiling` is a policy input, decoded like any other (WR8a). */
export type StorageConfigInput = {
  readonly [K in Exclude<keyof StorageSettings, "retentionCeiling">]?: StorageSettings[K] | undefined
} & {
  readonly retentionCeiling?: RetentionInput | RetentionPolicy | undefined
}

/**
 * One removal at a time by default: on this project's 2-core VM one already took a full prune from 1.2–1.4×
 * to 0.8× the wall time of `rm -rf` (its deletions overlap the prune's scan and protocol work), while 2 or 4
 * cost 1.5× the CPU for no steady wall gain (BENCHMARKS.md). More helps a disk with a deep queue.
 */
export const DEFAULT_REMOVER_THREADS = 1
export const MAX_REMOVER_THREADS = 16

export const DEFAULT_STORAGE_SETTINGS: StorageSettings = {
  remoteLeaseTtlMs: DEFAULT_REMOTE_LEASE_TTL_MS,
  staleUnreadableMs: DEFAULT_STALE_UNREADABLE_MS,
  retentionCeiling: DEFAULT_RETENTION,
  busyAttempts: 8,
  busyDelayMs: 25,
  walker: "auto",
  removerThreads: DEFAULT_REMOVER_THREADS
}

/** The environment variables `layerFromEnv` reads. */
export const STORAGE_ENV = {
  removerThreads: "PI_STORAGE_REMOVER_THREADS",
  native: "PI_STORAGE_NATIVE"
} as const

const isCount = (n: unknown, min: number, max = Number.MAX_SAFE_INTEGER): n is number =>
  typeof n === "number" && Number.isSafeInteger(n) && n >= min && n <= max

/** Why a setting is invalid, or null. A bad value given in code is a programming error of the embedder. */
const violation = (s: StorageSettings): string | null => {
  if (!isCount(s.remoteLeaseTtlMs, 1)) return `remoteLeaseTtlMs must be a positive integer (got ${String(s.remoteLeaseTtlMs)})`
  if (!isCount(s.staleUnreadableMs, 0)) return `staleUnreadableMs must be a non-negative integer (got ${String(s.staleUnreadableMs)})`
  if (!isCount(s.busyAttempts, 1)) return `busyAttempts must be a positive integer (got ${String(s.busyAttempts)})`
  if (!isCount(s.busyDelayMs, 0)) return `busyDelayMs must be a non-negative integer (got ${String(s.busyDelayMs)})`
  if (s.walker !== "auto" && s.walker !== "native" && s.walker !== "portable") {
    return `walker must be "auto", "native" or "portable" (got ${JSON.stringify(s.walker)})`
  }
  if (!isCount(s.removerThreads, 1, MAX_REMOVER_THREADS)) {
    return `removerThreads must be an integer from 1 to ${MAX_REMOVER_THREADS} (got ${String(s.removerThreads)})`
  }
  return null
}

/**
 * `base` with the fields `input` gives (a field given as `undefined` keeps the base). Dies with a message
 * naming the field for an invalid value: an `InvalidPolicy` for the ceiling, a plain defect otherwise.
 */
export const applyStorageConfig = (base: StorageSettings, input: StorageConfigInput = {}): Effect.Effect<StorageSettings> =>
  Effect.gen(function*() {
    const ceiling = input.retentionCeiling === undefined
      ? base.retentionCeiling
      : resolvePolicy(yield* Effect.orDie(decodeRetentionInput(input.retentionCeiling)))
    const pick = <K extends keyof StorageSettings>(key: K): StorageSettings[K] =>
      (input[key as keyof StorageConfigInput] ?? base[key]) as StorageSettings[K]
    const settings: StorageSettings = {
      remoteLeaseTtlMs: pick("remoteLeaseTtlMs"),
      staleUnreadableMs: pick("staleUnreadableMs"),
      retentionCeiling: ceiling,
      busyAttempts: pick("busyAttempts"),
      busyDelayMs: pick("busyDelayMs"),
      walker: pick("walker"),
      removerThreads: pick("removerThreads")
    }
    const why = violation(settings)
    if (why !== null) return yield* Effect.dieMessage(`pi-agent-storage: invalid StorageConfig: ${why}`)
    return settings
  })

/**
 * What `layerFromEnv` reads: `PI_STORAGE_REMOVER_THREADS` (1–16) and `PI_STORAGE_NATIVE` (`0` forces the
 * portable walker; any other value, or none, leaves the choice to the installation). An unset variable
 * keeps the setting it would override.
 */
export const storageEnvConfig = {
  removerThreads: Config.option(
    Config.integer(STORAGE_ENV.removerThreads).pipe(
      Config.validate({
        message: `must be an integer from 1 to ${MAX_REMOVER_THREADS}`,
        validation: (n) => n >= 1 && n <= MAX_REMOVER_THREADS
      })
    )
  ),
  native: Config.option(Config.string(STORAGE_ENV.native))
}

/**
 * Each variable on its own: a malformed one (`PI_STORAGE_REMOVER_THREADS=lots`) is ignored with a logged
 * warning naming it (before this service it was ignored silently) and never fails a store.
 */
const fromEnv = (base: StorageSettings): Effect.Effect<StorageSettings> =>
  Effect.gen(function*() {
    const read = <A>(name: string, config: Config.Config<Option.Option<A>>): Effect.Effect<Option.Option<A>> =>
      Effect.catchAll(config, (error) =>
        Effect.as(
          Effect.logWarning(`ignoring ${name}: ${String(error)}`).pipe(
            Effect.annotateLogs({ warning: "InvalidEnvironment", variable: name })
          ),
          Option.none()
        ))
    const threads = yield* read(STORAGE_ENV.removerThreads, storageEnvConfig.removerThreads)
    const native = yield* read(STORAGE_ENV.native, storageEnvConfig.native)
    return {
      ...base,
      ...(Option.isSome(threads) ? { removerThreads: threads.value } : {}),
      ...(Option.isSome(native) && native.value === "0" ? { walker: "portable" as const } : {})
    }
  })

export class StorageConfig extends Context.Reference<StorageConfig>()("pi-agent-storage/StorageConfig", {
  defaultValue: (): StorageSettings => DEFAULT_STORAGE_SETTINGS
}) {
  /**
   * The settings in the context (the defaults when none were given) with `input`'s fields on top. Every
   * layer of one stack reads the result, so they all judge with the same values.
   */
  static readonly layerWith = (input: StorageConfigInput = {}): Layer.Layer<StorageConfig> =>
    Layer.effect(StorageConfig, Effect.flatMap(StorageConfig, (base) => applyStorageConfig(base, input)))

  /** The settings in the context as they are (the defaults when none were given). */
  static readonly layer: Layer.Layer<StorageConfig> = StorageConfig.layerWith()

  /**
   * The Node edge: the settings in the context with the environment's on top (`PI_STORAGE_REMOVER_THREADS`,
   * `PI_STORAGE_NATIVE`), read through Effect's `Config` from the current `ConfigProvider` (the process
   * environment unless a test sets another).
   */
  static readonly layerFromEnv: Layer.Layer<StorageConfig> = Layer.effect(StorageConfig, Effect.flatMap(StorageConfig, fromEnv))
}
