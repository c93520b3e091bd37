/**
 * One value per key when callers start at once. `RcMap.get` looks the key up, then waits for the map's
 * semaphore before it stores a new entry, so two root fibers started together (the facade's calls, each
 * `runFork`ed) can both miss and each run the lookup: two process runs, two stores for one agent dir.
 * Serialising the gets makes every later caller find the first one's entry (it is stored before the get
 * returns). The cost: a slow first lookup delays the first get of another key too.
 */
import * as Effect from "effect/Effect"
import * as RcMap from "effect/RcMap"
import type * as Scope from "effect/Scope"

export const serialRcMapGet = <K, A, E>(map: RcMap.RcMap<K, A, E>): ((key: K) => Effect.Effect<A, E, Scope.Scope>) => {
  const lock = Effect.unsafeMakeSemaphore(1)
  return (key) => lock.withPermits(1)(RcMap.get(map, key))
}
