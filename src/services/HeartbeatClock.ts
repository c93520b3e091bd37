/**
 * The clock a held run's heartbeat sleeps on between refreshes (WR4), read once when `WorkRuns` is built.
 * The stamp a beat writes is always the fiber's own `Clock` time; only the waiting is this clock's.
 *
 * - Default: the live clock (real timers). Under `TestClock` a held run then never makes `TestClock.adjust`
 *   step through every 5-minute beat (a month adjusts at once), and on one host a holder is judged by its
 *   pid anyway.
 * - `HeartbeatClock.layerCurrentClock`: the clock of the fiber building the layer — the `TestClock` in a test,
 *   for simulations of remote hosts judging heartbeats (TestClock-driven beats).
 * - The Promise facade provides a clock whose sleeps are unref'd timers, so a held lease never keeps a Node
 *   process alive by itself.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export class HeartbeatClock extends Context.Reference<HeartbeatClock>()("pi-agent-storage/HeartbeatClock", {
  defaultValue: (): Clock.Clock => Clock.make()
}) {
  /** The default made explicit: the live clock (real timers). */
  static readonly layer: Layer.Layer<HeartbeatClock> = Layer.sync(HeartbeatClock, () => Clock.make())

  /** Beats on the clock of whoever builds the layer (the `TestClock` under `it.effect`). */
  static readonly layerCurrentClock: Layer.Layer<HeartbeatClock> = Layer.effect(HeartbeatClock, Effect.clock)
}
