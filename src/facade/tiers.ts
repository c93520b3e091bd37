/**
 * Promise versions of the web-host data tiers (README "Extension data tiers (web host)"). A thin edge: the rules live in
 * src/domain/Tiers.ts and src/services/TierStorage.ts. Rejections are the library's typed errors themselves
 * (an `Error` with `_tag`), or whatever a caller's `build` rejected with.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as os from "node:os"
import { InvalidArgument } from "../domain/Errors.js"
import {
  chooseTier,
  type ExtensionContext,
  type ExtensionContextOptions,
  makeExtensionContext,
  resolveStateDir,
  type TierChoice,
  type TierDirs,
  type TierFacts,
  type TierName,
  type TierPurpose
} from "../domain/Tiers.js"
import { runTyped } from "./runtime.js"
import * as NodeFileSystem from "../layers/NodeFileSystem.js"
import * as NodeHost from "../layers/NodeHost.js"
import type { FileSystem } from "../services/FileSystem.js"
import type { Host } from "../services/Host.js"
import { StorageConfig } from "../services/StorageConfig.js"
import { type OpenTiersOptions, TierStorage } from "../services/TierStorage.js"

export { chooseTier, resolveStateDir }
export type { ExtensionContext, ExtensionContextOptions, OpenTiersOptions, TierChoice, TierDirs, TierFacts, TierName, TierPurpose }

/**
 * TD2: the three tier directories of `extId` under the data root (TD1: `dataRoot`, else `$PI_WEB_DATA_DIR`,
 * else `~/.pi/web/data`, or `~/.pi/web-dev/data` for `instance: "dev"`). No I/O. Throws `InvalidSegment`
 * for an extId that is not a portable segment. Reading `.dataDir` on the result throws `DataDirRemoved`.
 */
export const extensionContext = (extId: string, options?: ExtensionContextOptions): ExtensionContext => {
  const built = makeExtensionContext({
    extId,
    options,
    env: NodeHost.nodeEnv,
    home: os.homedir(),
    cwd: process.cwd()
  })
  if (Either.isLeft(built)) throw built.left
  return built.right
}

export interface PromiseTiers {
  readonly cache: {
    readonly dir: string
    /** `cache/<key>` if present and valid, else `build()`'s result, stored atomically. Safe after `rm -rf cache/`. */
    ensure(
      key: string,
      build: () => Promise<Uint8Array | string>,
      options?: { readonly validate?: (bytes: Uint8Array) => boolean }
    ): Promise<Uint8Array>
    /** Remove cache/ entirely (never following symlinks). */
    clear(): Promise<void>
  }
  readonly state: {
    readonly dir: string
    /** Rejects with `StateMissing` or `StateUnreadable`: state is never defaulted or rebuilt. */
    read<T = unknown>(name: string): Promise<T>
    /** Atomic, fsynced JSON write of `state/<name>`. */
    write(name: string, value: unknown): Promise<void>
  }
  readonly config: {
    readonly dir: string
    get<T = unknown>(key: string): Promise<T | undefined>
    set(key: string, value: unknown): Promise<void>
    /** Rejects with `ConfigRedLine` for databases, logs and anything over the config budget. */
    writeFile(name: string, data: Uint8Array | string): Promise<void>
  }
  /** Release the runtime; later calls reject with `InvalidArgument` (field "tiers"). Idempotent. */
  close(): Promise<void>
}

/** The `TierStorage` service over a world's layer. One runtime per handle. */
const openTiersWithLayer = (world: Layer.Layer<FileSystem | Host>) =>
async (ctx: TierDirs, options?: OpenTiersOptions): Promise<PromiseTiers> => {
  const runtime = ManagedRuntime.make(TierStorage.layer.pipe(Layer.provide(world)))
  // Rejects with the typed failure itself, never a FiberFailure wrapper.
  const run = <A, E>(effect: Effect.Effect<A, E, TierStorage>) => runTyped(runtime, effect)
  const tiers = await run(Effect.flatMap(TierStorage, (service) => service.open(ctx, options))).catch(async (error: unknown) => {
    await runtime.dispose()
    throw error
  })
  let closed = false
  const guarded = <A, E>(effect: () => Effect.Effect<A, E>): Promise<A> =>
    closed
      ? Promise.reject(new InvalidArgument({ field: "tiers", detail: "this openTiers() handle is closed" }))
      : run(Effect.suspend(effect))

  return {
    cache: {
      dir: tiers.cache.dir,
      ensure: (key, build, ensureOptions) =>
        guarded(() =>
          tiers.cache.ensure(
            key,
            // The caller's own rejection passes through untouched.
            Effect.tryPromise({ try: () => build(), catch: (error) => error }),
            { validate: ensureOptions?.validate }
          )
        ),
      clear: () => guarded(() => tiers.cache.clear())
    },
    state: {
      dir: tiers.state.dir,
      read: <T>(name: string) => guarded(() => tiers.state.read(name)) as Promise<T>,
      write: (name, value) => guarded(() => tiers.state.write(name, value))
    },
    config: {
      dir: tiers.config.dir,
      get: <T>(key: string) => guarded(() => tiers.config.get(key)) as Promise<T | undefined>,
      set: (key, value) => guarded(() => tiers.config.set(key, value)),
      writeFile: (name, data) => guarded(() => tiers.config.writeFile(name, data))
    },
    close: async () => {
      if (closed) return
      closed = true
      await runtime.dispose()
    }
  }
}

/**
 * TD4 on the real disk: open the three tiers of a context. Creates nothing until a method needs it; rejects
 * with `TiersOverlap` when the tier directories overlap through a link or mount (TD5, checked again before
 * every destructive cache operation).
 */
export const openTiers: (ctx: TierDirs, options?: OpenTiersOptions) => Promise<PromiseTiers> = openTiersWithLayer(
  Layer.merge(NodeFileSystem.layer, NodeHost.layer).pipe(Layer.provide(StorageConfig.layerFromEnv))
)
