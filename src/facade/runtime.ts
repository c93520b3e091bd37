/**
 * Running Effect programs from Promise code: one ManagedRuntime per opened store, and rejections that are the
 * typed errors themselves (with `_tag`), never a FiberFailure wrapper.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
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

/** A sleep on an unref'd timer: it never keeps the Node process alive by itself. */
const unrefSleep = (duration: Duration.Duration): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
    timer.unref()
    return Effect.sync(() => clearTimeout(timer))
  })

const live = Clock.make()

/**
 * The live clock with unref'd sleeps, the facade's `HeartbeatClock`: a held lease's heartbeat never keeps a
 * Promise caller's process alive (on exit the lease goes with the process, WR4). Only the heartbeat gets it:
 * a call the caller awaits (a lock wait, a busy retry) keeps real timers, or Node would exit mid-await.
 */
export const unrefClock: Clock.Clock = {
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => live.unsafeCurrentTimeMillis(),
  unsafeCurrentTimeNanos: () => live.unsafeCurrentTimeNanos(),
  currentTimeMillis: live.currentTimeMillis,
  currentTimeNanos: live.currentTimeNanos,
  sleep: unrefSleep
}
