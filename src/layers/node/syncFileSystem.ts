/**
 * `syncFileSystem`: make what was written under a directory durable in one call. Native: syncfs(2) on the
 * thread pool (fsat.c `syncFs`): one flush of the file system, where an fsync per file would commit the
 * journal once per file. Portable (no addon): an fsync of every regular file and directory below `path`,
 * never through a link, one at a time on the thread pool: slower, the same guarantee for that tree.
 */
import * as fs from "node:fs"
import * as Effect from "effect/Effect"
import type { FileSystemError } from "../../domain/Errors.js"
import { type Fsat, fsatError } from "./fsat.js"
import { listDirectory, osPath } from "./osPath.js"
import { attempt, attemptSync, failWith, toFileSystemError } from "./support.js"

export const makeNativeSync = (fsat: Fsat) => (path: string): Effect.Effect<void, FileSystemError> =>
  Effect.async<void, FileSystemError>((resume) => {
    const queued = fsat.syncFs(osPath(path), (answer, syscall) => {
      resume(answer === 0 ? Effect.void : Effect.fail(toFileSystemError("syncFileSystem", path, fsatError(syscall, path, answer))))
    })
    if (queued !== 0) resume(Effect.fail(toFileSystemError("syncFileSystem", path, fsatError("syncFs", path, queued))))
  })

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = fs.constants

const fsyncPath = (path: string, flags: number) =>
  attempt("syncFileSystem", path, async () => {
    const handle = await fs.promises.open(osPath(path), flags | O_NOFOLLOW | O_NONBLOCK)
    try {
      await handle.sync()
    } catch (cause) {
      // A directory some file systems cannot fsync (EINVAL): its entries were synced one by one.
      if (!(typeof cause === "object" && cause !== null && "code" in cause && cause.code === "EINVAL")) throw cause
    } finally {
      await handle.close()
    }
  })

export const portableSync = (path: string): Effect.Effect<void, FileSystemError> =>
  Effect.gen(function*() {
    const info = yield* attemptSync("syncFileSystem", path, () => fs.lstatSync(osPath(path)))
    if (!info.isDirectory()) return yield* Effect.fail(failWith("syncFileSystem", path, "ENOTDIR", "not a directory"))
    const entries = yield* attemptSync("syncFileSystem", path, () => listDirectory(path))
    for (const entry of entries) {
      const child = `${path.endsWith("/") ? path : `${path}/`}${entry.name}`
      if (entry.isDirectory()) yield* portableSync(child)
      else if (entry.isFile()) yield* fsyncPath(child, O_RDONLY)
    }
    yield* fsyncPath(path, O_RDONLY | O_DIRECTORY)
  })
