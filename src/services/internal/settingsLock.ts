/**
 * The lock every writer of a config tier's settings.json takes, across processes (docs/tiers.md "Extension data
 * tiers (web host)"): an exclusively created `.settings.json.lock` beside it, holding a token of its own. The
 * conditional replace alone guards against a person's save; between library writers it is not enough: with
 * eight processes setting keys at once, a save another writer had already been told was done could be
 * exchanged back out and kept aside (`.kept-`), its key lost from settings.json.
 *
 * The tiers have no `Host` to tell whether a holder is alive, so a lock is judged by its age alone: held for
 * a few milliseconds by a live writer, it is a crashed one's once older than `SETTINGS_LOCK_STALE_MS`, and is
 * then removed, only while it is still that very file. A writer waits at most `SETTINGS_LOCK_WAIT_MS` (then
 * `FileSystemError` `Busy`, nothing written).
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import { FileSystemError } from "../../domain/Errors.js"
import { SETTINGS_LOCK } from "../../domain/Tiers.js"
import type { FileVersion } from "../../domain/FileChange.js"
import type { FileSystem } from "../FileSystem.js"
import { nonce } from "./deps.js"

export const SETTINGS_LOCK_STALE_MS = 10_000
export const SETTINGS_LOCK_WAIT_MS = 30_000

type Fs = FileSystem["Type"]

const encoder = new TextEncoder()

/**
 * Run `use` holding the lock of the settings.json in `configDir` (made when missing); the lock is dropped
 * afterwards, on failure and interruption too, only while it is still the one taken here.
 */
export const withSettingsLock = <A, E>(fs: Fs, configDir: string, use: Effect.Effect<A, E>): Effect.Effect<A, E | FileSystemError> =>
  Effect.acquireUseRelease(takeLock(fs, configDir), () => use, (held) => dropLock(fs, held))

interface Held {
  readonly path: string
  readonly token: Uint8Array
}

const takeLock = (fs: Fs, configDir: string): Effect.Effect<Held, FileSystemError> =>
  Effect.gen(function*() {
    const path = NodePath.join(configDir, SETTINGS_LOCK)
    // Whose lock it is: only the writer holding these bytes drops it.
    const token = encoder.encode(`${yield* nonce}-${yield* nonce}\n`)
    const started = yield* Clock.currentTimeMillis
    for (;;) {
      const made = yield* Effect.either(fs.writeFileExclusive(path, token, { sync: false }))
      if (made._tag === "Right") return { path, token }
      const e = made.left
      if (e.reason === "NotFound") {
        yield* fs.makeDirectory(configDir, { recursive: true, mode: 0o700 })
        continue
      }
      if (e.reason !== "AlreadyExists") return yield* Effect.fail(e)
      yield* removeIfStale(fs, path)
      const now = yield* Clock.currentTimeMillis
      if (now - started >= SETTINGS_LOCK_WAIT_MS) {
        return yield* Effect.fail(
          new FileSystemError({
            reason: "Busy",
            errno: "",
            method: "config.set",
            path,
            detail: `another writer has held settings.json's lock for over ${SETTINGS_LOCK_WAIT_MS / 1000} s; nothing was written`
          })
        )
      }
      yield* Effect.sleep(Duration.millis(2 + (yield* Random.nextIntBetween(0, 8))))
    }
  })

/** A lock older than the stale bound is a crashed writer's: removed only while it is still that file. */
const removeIfStale = (fs: Fs, path: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const info = yield* fs.lstat(path)
    const now = yield* Clock.currentTimeMillis
    if (info.type !== "File" || now - info.mtimeMs < SETTINGS_LOCK_STALE_MS) return
    const bytes = yield* fs.readFile(path, { maxBytes: 4096 })
    const version: FileVersion = { dev: info.dev, ino: info.ino, bytes }
    yield* fs.replaceFileIfUnchanged(path, version, null, { sync: false })
    yield* Effect.logWarning(`removed a stale settings.json lock (older than ${SETTINGS_LOCK_STALE_MS / 1000} s: its writer crashed): ${path}`)
  }).pipe(Effect.catchAll(() => Effect.void)) // gone, changed or unreadable meanwhile: the next try sees what is there

const dropLock = (fs: Fs, held: Held): Effect.Effect<void> =>
  Effect.gen(function*() {
    const info = yield* fs.lstat(held.path)
    yield* fs.replaceFileIfUnchanged(held.path, { dev: info.dev, ino: info.ino, bytes: held.token }, null, { sync: false })
  }).pipe(
    Effect.catchAll((e) =>
      e.reason === "NotFound"
        ? Effect.void
        : Effect.logWarning(`settings.json's lock was not dropped (${e.message}); the next writer removes it once stale`)
    )
  )
