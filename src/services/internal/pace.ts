/**
 * Letting the event loop turn during long computations between port calls (FileSystem `pace`): a prune plans
 * over up to 10,000 runs and builds reports as long, and on Node every turn of the loop it holds is a stall of
 * the harness that started it in the background (BENCHMARKS.md "Event loop during a background prune").
 */
import * as Effect from "effect/Effect"
import type { Steps } from "../../domain/Steps.js"
import type { FileSystem } from "../FileSystem.js"

type Port = FileSystem["Type"]

/** Items a loop over runs handles between two paces: well under a millisecond of work. */
export const PACE_ITEMS = 256

/** A yield to the event loop when the layer paces and the current slice is used; else nothing. */
export const pace = (fs: Port): Effect.Effect<void> => fs.pace?.() ?? Effect.void

/** Whether a loop at `index` should `pace`: every `every`th item (a test, not an Effect per item). */
export const paceDue = (index: number, every = PACE_ITEMS): boolean => index % every === every - 1

/** A pure computation's answer (domain/Steps.ts), paced between its steps. */
export const runPaced = <A>(fs: Port, steps: Steps<A>): Effect.Effect<A> =>
  Effect.suspend(() => {
    const loop: Effect.Effect<A> = Effect.suspend(() => {
      const next = steps.next()
      return next.done === true ? Effect.succeed(next.value) : Effect.zipRight(pace(fs), loop)
    })
    return loop
  })
