/**
 * Test support: `TierStorage.open` with the FileSystem from the test's context (a Node, Memory or faulty one).
 * The service also reads a Host, for `extensionContext` only; `open` never uses it, so the Node host serves.
 */
import { Effect, Layer } from "effect"
import type { TierDirs } from "../../src/domain/Tiers.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { type OpenTiersOptions, TierStorage } from "../../src/services/TierStorage.js"

export const openTiers = (ctx: TierDirs, options?: OpenTiersOptions) =>
  Effect.flatMap(TierStorage, (t) => t.open(ctx, options)).pipe(Effect.provide(TierStorage.layer.pipe(Layer.provide(NodeHost.layer))))
