/**
 * `openTiers` over a world: the runtime half of facade/tiers.ts, loaded on its first call (docs/install.md "Installing").
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { InvalidArgument } from "../domain/Errors.js"
import type { TierDirs } from "../domain/Tiers.js"
import * as NodeFileSystem from "../layers/NodeFileSystem.js"
import * as NodeHost from "../layers/NodeHost.js"
import type { FileSystem } from "../services/FileSystem.js"
import type { Host } from "../services/Host.js"
import { StorageConfig } from "../services/StorageConfig.js"
import { type OpenTiersOptions, TierStorage } from "../services/TierStorage.js"
import { runTyped } from "./runtime.js"
import type { PromiseTiers } from "./tiersTypes.js"
import { promiseTierSet } from "./tierSet.js"

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
    ...promiseTierSet(tiers, guarded),
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
