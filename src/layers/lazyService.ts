/**
 * A service built on its first use rather than when its layer is built: the whole stack provides every
 * service, and one a program never touches costs it nothing at start-up (docs/work-runs.md "Effect callers").
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"

/**
 * A stand-in for the service `make` builds, built on the first read of any of its members
 * (`service.snapshot`, `const { log } = service`, `Object.keys(service)`), once, and answering from it after.
 * `make` must be synchronous (the services' `make`s build closures over the context, no I/O): it runs on
 * `runtime` (take the one the layer is built with: the same context, logger and config as an eager build).
 */
export const lazyService = <S extends object, R>(runtime: Runtime.Runtime<R>, make: Effect.Effect<S, never, R>): S => {
  let built: S | undefined
  const service = (): S => built ??= Runtime.runSync(runtime)(make)
  return new Proxy({} as S, {
    get: (_, key) => Reflect.get(service(), key),
    has: (_, key) => Reflect.has(service(), key),
    ownKeys: () => Reflect.ownKeys(service()),
    getOwnPropertyDescriptor: (_, key) => {
      const found = Reflect.getOwnPropertyDescriptor(service(), key)
      // Reported configurable: the (empty) proxy target holds none of them, which a proxy may only say of those.
      return found === undefined ? undefined : { ...found, configurable: true }
    },
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false
  })
}

/** `tag` provided by a `lazyService` of `make`. */
export const lazyLayer = <I, S extends object, R>(tag: Context.Tag<I, S>, make: Effect.Effect<S, never, R>): Layer.Layer<I, never, R> =>
  Layer.effect(tag, Effect.map(Effect.runtime<R>(), (runtime) => lazyService(runtime, make)))
