/**
 * Promise versions of the web-host data tiers (docs/tiers.md "Extension data tiers (web host)"). A thin edge: the rules live in
 * src/domain/Tiers.ts and src/services/TierStorage.ts. Rejections are the library's typed errors themselves
 * (an `Error` with `_tag`), or whatever a caller's `build` rejected with.
 */
import * as Either from "effect/Either"
import * as os from "node:os"
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
import { nodeEnv } from "../layers/NodeHost.js"
import type { OpenTiersOptions } from "../services/TierStorage.js"
import type { PromiseTierSet } from "./tierSet.js"
import type { PromiseTiers } from "./tiersTypes.js"

export { chooseTier, resolveStateDir }
export type { ExtensionContext, ExtensionContextOptions, OpenTiersOptions, PromiseTierSet, PromiseTiers, TierChoice, TierDirs, TierFacts, TierName, TierPurpose }

/**
 * TD2: the three tier directories of `extId` under the data root (TD1: `dataRoot`, else `$PI_WEB_DATA_DIR`,
 * else `~/.pi/web/data`, or `~/.pi/web-dev/data` for `instance: "dev"`). No I/O. Throws `InvalidSegment`
 * for an extId that is not a portable segment. Reading `.dataDir` on the result throws `DataDirRemoved`.
 */
export const extensionContext = (extId: string, options?: ExtensionContextOptions): ExtensionContext => {
  const built = makeExtensionContext({
    extId,
    options,
    env: nodeEnv,
    home: os.homedir(),
    cwd: process.cwd()
  })
  if (Either.isLeft(built)) throw built.left
  return built.right
}

/** The `TierStorage` service over a world's layer. One runtime per handle. */
/**
 * TD4 on the real disk: open the three tiers of a context. Creates nothing until a method needs it; rejects
 * with `TiersOverlap` when the tier directories overlap through a link or mount (TD5, checked again before
 * every destructive cache operation). The tier service and the Node world load on the first call, not at
 * import (docs/install.md "Installing"; tiersRuntime.ts).
 */
export const openTiers = async (ctx: TierDirs, options?: OpenTiersOptions): Promise<PromiseTiers> =>
  (await import("./tiersRuntime.js")).openNodeTiers(ctx, options)
