/**
 * `openTiers` over a world: the runtime half of facade/tiers.ts, loaded on its first call (README "Installing").
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { InvalidArgument } from "../domain/Errors.js"
import type { TierDirs } from "../domain/Tiers.js"
import * as NodeFileSystem from "../layers/NodeFileSystem.js"
import * as NodeHost from "../layers/NodeHost.js"
import type { FileSystem } from "../services/FileSystem.js"
import type { Host } from "../services/Host.js"
import { StorageConfig } from "../services/StorageConfig.js"
import { type OpenTiersOptions, TierStorage } from "../services/TierStorage.js"
import { runTyped } from "./runtime.js"
import type { PromiseTiers } from "./tiers.js"

/**
 * A Promise caller's decode function as the Schema the tier service takes (README "Extension data tiers":
 * the facade names no Effect type, so it takes a function that throws to refuse). What it throws becomes
 * the `DecodeFailure`'s words.
 */
const schemaOfDecode = <T>(decode: (json: unknown) => T): Schema.Schema<T> =>
  Schema.transformOrFail(Schema.Unknown, Schema.Unknown, {
    strict: false,
    decode: (json, _, ast) => {
      try {
        return ParseResult.succeed(decode(json))
      } catch (error) {
        return ParseResult.fail(new ParseResult.Type(ast, json, error instanceof Error ? error.message : String(error)))
      }
    },
    encode: ParseResult.succeed
  }) as unknown as Schema.Schema<T>

export const openTiersWithLayer = (world: Layer.Layer<FileSystem | Host>) =>
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
      read: <T>(name: string, decode?: (json: unknown) => T) =>
        guarded(() => decode === undefined ? tiers.state.read(name) : tiers.state.read(name, schemaOfDecode(decode))) as Promise<T>,
      write: (name, value) => guarded(() => tiers.state.write(name, value))
    },
    config: {
      dir: tiers.config.dir,
      get: <T>(key: string, decode?: (json: unknown) => T) =>
        guarded(() => decode === undefined ? tiers.config.get(key) : tiers.config.get(key, schemaOfDecode(decode))) as Promise<T | undefined>,
      set: (key, value) => guarded(() => tiers.config.set(key, value)),
      delete: (key) => guarded(() => tiers.config.delete(key)),
      writeFile: (name, data) => guarded(() => tiers.config.writeFile(name, data)),
      readFile: (name) => guarded(() => tiers.config.readFile(name))
    },
    close: async () => {
      if (closed) return
      closed = true
      await runtime.dispose()
    }
  }
}

/** On the real disk, with `StorageConfig` from the environment. */
export const openNodeTiers: (ctx: TierDirs, options?: OpenTiersOptions) => Promise<PromiseTiers> = openTiersWithLayer(
  Layer.merge(NodeFileSystem.layer, NodeHost.layer).pipe(Layer.provide(StorageConfig.layerFromEnv))
)
