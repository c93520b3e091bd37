/**
 * The Promise tiers' handle: the type facade/tiers.ts returns and facade/tiersRuntime.ts builds (its own module so
 * that neither of the two imports the other; tiers.ts loads the runtime lazily, docs/install.md "Installing").
 */
import type { PromiseTierSet } from "./tierSet.js"

/** A web-host extension's tiers (`openTiers(ctx)`): the same tier set an agent extension's view carries, plus `close`. */
export interface PromiseTiers extends PromiseTierSet {
  /** Release the runtime; later calls reject with `InvalidArgument` (field "tiers"). Idempotent. */
  close(): Promise<void>
}
