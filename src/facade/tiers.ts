/**
 * Promise versions of the web-host data tiers (README "Extension data tiers (web host)"). A thin edge: the rules live in
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
    env: nodeEnv,
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
    /**
     * Rejects with `StateMissing` or `StateUnreadable` (its `cause` a `FileSystemError` or a `DecodeFailure`):
     * state is never defaulted or rebuilt. `decode` (optional) turns the parsed JSON into a `T` and throws to
     * refuse it (a zod schema's `parse`, Effect's `Schema.decodeUnknownSync(S)` …); a refusal is
     * `StateUnreadable` with a `DecodeFailure` saying what it threw. Without it, `T` is the caller's word.
     */
    read<T = unknown>(name: string, decode?: (json: unknown) => T): Promise<T>
    /** Atomic, fsynced JSON write of `state/<name>`; a value that is not strict JSON rejects with `InvalidArgument`. */
    write(name: string, value: unknown): Promise<void>
  }
  readonly config: {
    readonly dir: string
    /** The value under `key`, `undefined` when unset; `decode` as in `state.read` (a refusal is `ConfigUnreadable` naming the key). */
    get<T = unknown>(key: string, decode?: (json: unknown) => T): Promise<T | undefined>
    /** A value that is not strict JSON (`undefined` included: use `delete`) rejects with `InvalidArgument`. */
    set(key: string, value: unknown): Promise<void>
    /** Remove `key`; resolves `true` when it was set. */
    delete(key: string): Promise<boolean>
    /** Rejects with `ConfigRedLine` for databases, logs and anything over the config budget. */
    writeFile(name: string, data: Uint8Array | string): Promise<void>
    /** The bytes `writeFile` wrote, `undefined` when there is no such file. */
    readFile(name: string): Promise<Uint8Array | undefined>
  }
  /** Release the runtime; later calls reject with `InvalidArgument` (field "tiers"). Idempotent. */
  close(): Promise<void>
}

/** The `TierStorage` service over a world's layer. One runtime per handle. */
/**
 * TD4 on the real disk: open the three tiers of a context. Creates nothing until a method needs it; rejects
 * with `TiersOverlap` when the tier directories overlap through a link or mount (TD5, checked again before
 * every destructive cache operation). The tier service and the Node world load on the first call, not at
 * import (README "Installing"; tiersRuntime.ts).
 */
export const openTiers = async (ctx: TierDirs, options?: OpenTiersOptions): Promise<PromiseTiers> =>
  (await import("./tiersRuntime.js")).openNodeTiers(ctx, options)
