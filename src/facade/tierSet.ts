/**
 * The three tiers as Promises (README "Extension data tiers"): one shape for a web-host extension's
 * `openTiers(ctx)` and an agent extension's `storage.getStorage(ns)`, over the `TierStorage` service's tiers.
 * A thin edge: `run` runs one tier call on the caller's runtime and rejects with the typed error itself.
 */
import * as Effect from "effect/Effect"
import type { Tiers } from "../services/TierStorage.js"

export interface PromiseTierSet {
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
}

export const promiseTierSet = <X>(
  tiers: Tiers<X>,
  run: <A, E>(effect: () => Effect.Effect<A, E>) => Promise<A>
): PromiseTierSet => ({
  cache: {
    dir: tiers.cache.dir,
    ensure: (key, build, ensureOptions) =>
      run(() =>
        tiers.cache.ensure(
          key,
          // The caller's own rejection passes through untouched.
          Effect.tryPromise({ try: () => build(), catch: (error) => error }),
          { validate: ensureOptions?.validate }
        )
      ),
    clear: () => run(() => tiers.cache.clear())
  },
  state: {
    dir: tiers.state.dir,
    read: <T>(name: string) => run(() => tiers.state.read(name)) as Promise<T>,
    write: (name, value) => run(() => tiers.state.write(name, value))
  },
  config: {
    dir: tiers.config.dir,
    get: <T>(key: string) => run(() => tiers.config.get(key)) as Promise<T | undefined>,
    set: (key, value) => run(() => tiers.config.set(key, value)),
    writeFile: (name, data) => run(() => tiers.config.writeFile(name, data))
  }
})
