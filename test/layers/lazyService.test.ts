/**
 * A service of the stack that a program never uses costs it nothing when the stack is built (docs/work-runs.md "Effect
 * callers"): `lazyLayer` builds it on the first read of a member, once, in the layer's context.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, FiberRef, Layer } from "effect"
import { lazyLayer } from "../../src/layers/lazyService.js"

class Prefix extends Context.Tag("test/Prefix")<Prefix, string>() {}
class Greeter extends Context.Tag("test/Greeter")<Greeter, {
  readonly name: string
  readonly greet: (who: string) => Effect.Effect<string>
  readonly annotations: Effect.Effect<number>
}>() {}

const annotated = FiberRef.unsafeMake(0)

describe("lazyLayer", () => {
  it.effect("builds the service on its first use, once, with the layer's context and fiber refs", () =>
    Effect.gen(function*() {
      let builds = 0
      const make = Effect.gen(function*() {
        builds++
        const prefix = yield* Prefix
        const at = yield* FiberRef.get(annotated)
        return { name: prefix, greet: (who: string) => Effect.succeed(`${prefix} ${who}`), annotations: Effect.succeed(at) }
      })
      const layer = lazyLayer(Greeter, make).pipe(
        Layer.provide(Layer.succeed(Prefix, "hello")),
        Layer.provide(Layer.effectDiscard(FiberRef.set(annotated, 7)))
      )
      yield* Effect.gen(function*() {
        const greeter = yield* Greeter
        assert.strictEqual(builds, 0, "building the layer did not build the service")
        assert.strictEqual(yield* greeter.greet("you"), "hello you")
        const { name, annotations } = greeter
        assert.deepStrictEqual([name, yield* annotations, builds], ["hello", 7, 1])
        assert.deepStrictEqual(Object.keys(greeter).sort(), ["annotations", "greet", "name"])
        assert.isTrue("greet" in greeter)
        assert.strictEqual(builds, 1)
      }).pipe(Effect.provide(layer))
    }))

  it.effect("a layer that is built but never used never builds its service", () =>
    Effect.gen(function*() {
      let builds = 0
      const layer = lazyLayer(Greeter, Effect.sync(() => (builds++, { name: "", greet: Effect.succeed, annotations: Effect.succeed(0) })))
      yield* Effect.provide(Effect.void, layer)
      yield* Effect.provide(Effect.asVoid(Greeter), layer)
      assert.strictEqual(builds, 0)
    }))
})
