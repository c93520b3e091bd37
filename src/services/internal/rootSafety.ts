/**
 * WR10 for the pruner: refuse a work root, category or tenant directory that `rootSafetyProblems`
 * (src/domain/RootSafety.ts, the rule the doctor reports with) finds unsafe.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UnsafeRoot } from "../../domain/Errors.js"
import type { FileSystemError } from "../../domain/Errors.js"
import { rootSafetyProblems } from "../../domain/RootSafety.js"
import type { Deps } from "./deps.js"

/** `None` when the directory does not exist (nothing to prune); fails with `UnsafeRoot` (its first problem) when unsafe. */
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
    const [problem] = rootSafetyProblems(info.value, deps.host.uid)
    if (problem !== undefined) return yield* new UnsafeRoot({ path, reason: problem.reason, detail: problem.detail })
    return Option.some(undefined)
  })
