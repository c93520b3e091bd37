/**
 * Log a typed warning through Effect's logger (see `domain/Warnings.ts`): the message, the fields as
 * annotations. The one way programs report what they deliberately carried on through.
 */
import * as Effect from "effect/Effect"
import { type StorageWarning, warningAnnotations } from "../../domain/Warnings.js"

export const warn = (w: StorageWarning): Effect.Effect<void> =>
  Effect.logWarning(w.message).pipe(Effect.annotateLogs(warningAnnotations(w)))
