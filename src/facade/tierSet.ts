/**
 * The three tiers as Promises (docs/tiers.md "Extension data tiers"): one shape for a web-host extension's
 * `openTiers(ctx)` and an agent extension's `storage.getStorage(ns)`, over the `TierStorage` service's tiers.
 * A thin edge: `run` runs one tier call on the caller's runtime and rejects with the typed error itself.
 */
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
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
}

/**
 * A Promise caller's decode function as the Schema the tier service takes (docs/tiers.md "Extension data tiers":
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
    read: <T>(name: string, decode?: (json: unknown) => T) =>
      run(() => decode === undefined ? tiers.state.read(name) : tiers.state.read(name, schemaOfDecode(decode))) as Promise<T>,
    write: (name, value) => run(() => tiers.state.write(name, value))
  },
  config: {
    dir: tiers.config.dir,
    get: <T>(key: string, decode?: (json: unknown) => T) =>
      run(() => decode === undefined ? tiers.config.get(key) : tiers.config.get(key, schemaOfDecode(decode))) as Promise<T | undefined>,
    set: (key, value) => run(() => tiers.config.set(key, value)),
    delete: (key) => run(() => tiers.config.delete(key)),
    writeFile: (name, data) => run(() => tiers.config.writeFile(name, data)),
    readFile: (name) => run(() => tiers.config.readFile(name))
  }
})
