/**
 * Running Effect programs from Promise code: one ManagedRuntime per opened store, and rejections that are the
 * typed errors themselves (with `_tag`), never a FiberFailure wrapper.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as ManagedRuntime from "effect/ManagedRuntime"

export const squashTyped = (cause: Cause.Cause<unknown>): unknown => {
  const failure = Cause.failureOption(cause)
  if (failure._tag === "Some") return failure.value
  return Cause.squash(cause)
}

export const runTyped = async <A, E, R>(
  runtime: ManagedRuntime.ManagedRuntime<R, unknown>,
  effect: Effect.Effect<A, E, R>
): Promise<A> => {
  const exit = await runtime.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return exit.value
  throw squashTyped(exit.cause)
}

/** A sleep on an unref'd timer: background waits (heartbeats) never keep the Node process alive. */
export const unrefSleep = (duration: Duration.Duration): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
    timer.unref()
    return Effect.sync(() => clearTimeout(timer))
  })
