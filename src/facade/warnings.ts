/**
 * The edges' logger: warning-level log entries become typed `StorageWarning`s (see `domain/Warnings.ts`) for
 * a callback; other entries at warning level or above go to `onOther` as text. The facade gives it the
 * caller's `onWarning`, the CLI a printer on stderr.
 */
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { type StorageWarning, warningFromLog } from "../domain/Warnings.js"

const text = (message: unknown): string =>
  Array.isArray(message) ? message.map((m) => (typeof m === "string" ? m : String(m))).join(" ") : String(message)

export const warningLogger = (
  onWarning: (warning: StorageWarning) => void,
  onOther: (message: string) => void
): Logger.Logger<unknown, void> =>
  Logger.make(({ annotations, logLevel, message }) => {
    if (LogLevel.lessThan(logLevel, LogLevel.Warning)) return
    const line = text(message)
    const warning = warningFromLog(line, new Map(HashMap.toEntries(annotations)))
    try {
      if (warning !== undefined) onWarning(warning)
      else onOther(line)
    } catch (thrown) {
      // A throwing callback must not break the program that logged (the heartbeat, a prune): say both.
      process.emitWarning(`${line} (and the onWarning callback threw: ${String(thrown)})`, { type: "PiAgentStorageWarning" })
    }
  })

/** Replace Effect's default logger with `warningLogger` for everything run on the layer's runtime. */
export const warningLoggerLayer = (
  onWarning: (warning: StorageWarning) => void,
  onOther: (message: string) => void
): Layer.Layer<never> => Logger.replace(Logger.defaultLogger, warningLogger(onWarning, onOther))

/** Without `onWarning`, a Node process warning (shown on stderr unless the process silences warnings). */
export const emitProcessWarning = (warning: StorageWarning): void =>
  process.emitWarning(warning.message, { type: "PiAgentStorageWarning", code: warning._tag })
