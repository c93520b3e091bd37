/** Capturing what a program logs (tests of warnings: the deliberate ignores at safety boundaries). */
import { Effect, HashMap, Logger } from "effect"

export interface Logged {
  readonly level: string
  readonly message: string
  readonly annotations: Readonly<Record<string, unknown>>
}

/** Run `body` with a logger that records every entry. */
export const capturing = <A, E, R>(body: (logged: ReadonlyArray<Logged>) => Effect.Effect<A, E, R>) => {
  const logged: Array<Logged> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    logged.push({
      level: logLevel.label,
      message: String(Array.isArray(message) ? message[0] : message),
      annotations: Object.fromEntries(HashMap.toEntries(annotations))
    })
  })
  return body(logged).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
}

/** The warnings of one tag (`warning` annotation) among the captured entries. */
export const warningsOf = (logged: ReadonlyArray<Logged>, tag: string) =>
  logged.filter((l) => l.level === "WARN" && l.annotations["warning"] === tag)
