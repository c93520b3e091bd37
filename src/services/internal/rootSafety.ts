/**
 * WR10: a prune refuses a work root, category or tenant directory that is a symlink, not a directory, not
 * owned by the current user, or writable by group or others.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UnsafeRoot } from "../../domain/Errors.js"
import type { FileSystemError } from "../../domain/Errors.js"
import type { Deps } from "./deps.js"
import { aFileType } from "../../domain/FileTypeWords.js"

/** `None` when the directory does not exist (nothing to prune); fails with `UnsafeRoot` when unsafe. */
export const checkSafeDirectory = (
  deps: Deps,
  path: string
): Effect.Effect<Option.Option<void>, UnsafeRoot | FileSystemError> =>
  Effect.gen(function*() {
    const info = yield* deps.fs.lstat(path).pipe(
      Effect.map(Option.some),
      Effect.catchIf((e) => e.reason === "NotFound", () => Effect.succeed(Option.none()))
    )
    if (Option.isNone(info)) return Option.none()
    const i = info.value
    if (i.type === "SymbolicLink") {
      return yield* new UnsafeRoot({ path, reason: "symlink", detail: "it is a symbolic link; pruning never follows links" })
    }
    if (i.type !== "Directory") return yield* new UnsafeRoot({ path, reason: "not-a-directory", detail: `it is ${aFileType(i.type)}` })
    const uid = deps.host.uid
    if (uid !== null && i.uid !== uid) {
      return yield* new UnsafeRoot({ path, reason: "foreign-owner", detail: `owned by uid ${i.uid}, not the current user ${uid}` })
    }
    if ((i.mode & 0o022) !== 0) {
      return yield* new UnsafeRoot({
        path,
        reason: "group-or-world-writable",
        detail: `mode ${(i.mode & 0o777).toString(8).padStart(3, "0")} is writable by group or others`
      })
    }
    return Option.some(undefined)
  })
