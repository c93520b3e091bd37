/**
 * The Promise tiers' handle: the type facade/tiers.ts returns and facade/tiersRuntime.ts builds (its own module so
 * that neither of the two imports the other; tiers.ts loads the runtime lazily, README "Installing").
 */
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
