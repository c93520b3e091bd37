/**
 * One layer convention (docs/work-runs.md "Effect callers"), held over what the package exports at run time, not a
 * hand-kept list: every `Context.Tag` class among the root exports (and one level into its namespaces) is a
 * service, and
 * - `X.layer` is a Layer value (its default options), `X.layerWith` when present a function returning a
 *   Layer, and any other static `layer…` a Layer or a function returning one;
 * - the ports (`FileSystem`, `Host`, `ProcessRunner`) have no `layer`: the worlds provide them;
 * - one stack provides every one of them, the Memory world's (`Storage.layer(MemoryWorld.layer(world))`) and
 *   the Node one (`NodeStorage.layerWith`), each service usable; and each `X.layer` builds on its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as Root from "../../src/index.js"
import { scratchDirs } from "../support/scratchDirs.js"

const PORTS = new Set(["FileSystem", "Host", "ProcessRunner"])

/** A `Context.Reference` has a default value and needs no layer (UsageRecorder: the stack's UsageHistory layer provides the recording one). */
const isReference = (tag: object): boolean => typeof (tag as { readonly defaultValue?: unknown }).defaultValue === "function"

type Service = { readonly name: string; readonly tag: Context.Tag<unknown, unknown> & Record<string, unknown> }

/** The `Context.Tag` classes among a module's exports, and among the exports of the namespaces it re-exports. */
const servicesOf = (exports: Record<string, unknown>): Array<Service> => {
  const found = new Map<unknown, Service>()
  const visit = (name: string, value: unknown) => {
    if (typeof value === "function" && Context.isTag(value)) found.set(value, { name, tag: value as unknown as Service["tag"] })
  }
  for (const [name, value] of Object.entries(exports)) {
    visit(name, value)
    // `export * as NodeStorage`: a module namespace (a plain object without prototype or a frozen one).
    if (value !== null && typeof value === "object" && !Layer.isLayer(value)) {
      for (const [inner, v] of Object.entries(value)) visit(`${name}.${inner}`, v)
    }
  }
  return [...found.values()].sort((a, b) => a.name.localeCompare(b.name))
}

/** What breaks the convention, one line each. */
const conventionViolations = (services: ReadonlyArray<Service>): Array<string> =>
  services.flatMap(({ name, tag }) => {
    const problems: Array<string> = []
    if (PORTS.has(name)) {
      if ("layer" in tag) problems.push(`${name} is a port: its layers are the worlds (NodeWorld.layer, MemoryWorld.layer), not ${name}.layer`)
      return problems
    }
    if (isReference(tag) && !("layer" in tag)) return problems
    if (!Layer.isLayer(tag["layer"])) problems.push(`${name}.layer is ${typeof tag["layer"]}, not a Layer value (options go to ${name}.layerWith)`)
    for (const key of Object.getOwnPropertyNames(tag).filter((k) => k.startsWith("layer") && k !== "layer")) {
      const value = tag[key]
      if (Layer.isLayer(value)) continue
      if (typeof value !== "function") problems.push(`${name}.${key} is neither a Layer nor a function returning one`)
      else if (!Layer.isLayer((value as () => unknown)())) problems.push(`${name}.${key}() does not return a Layer`)
    }
    return problems
  })

const AGENT_DIR = "/home/user/.pi/agent"
const scratch = scratchDirs()

/** Each service of `services` in the context, and usable: its members readable (a lazy one is built here). */
const everyServiceUsable = (services: ReadonlyArray<Service>) =>
  Effect.forEach(services, ({ name, tag }) =>
    Effect.map(Effect.serviceOption(tag), (found) => {
      if (Option.isNone(found)) return `${name}: not provided`
      return Object.keys(found.value as object).length > 0 ? null : `${name}: provided without members`
    })).pipe(Effect.map((problems) => problems.filter((p) => p !== null)))

describe("one layer convention", () => {
  const services = servicesOf(Root)

  it("every exported service: layer is a Layer value, layerWith a function returning one; ports have no layer", () => {
    const names = services.map((s) => s.name)
    for (const known of ["AgentDir", "ConfigHistory", "Doctor", "Inventory", "StateBackups", "TierStorage", "UserProfile", "WorkRuns", "FileSystem"]) {
      assert.include(names, known, "the enumeration found the services")
    }
    assert.deepStrictEqual(conventionViolations(services), [])
  })

  it.scoped("the Memory world's stack provides every exported service", () =>
    Effect.gen(function*() {
      const stack = Root.Storage.layer(Root.MemoryWorld.layer(Root.MemoryWorld.make()), { agentDir: AGENT_DIR })
      const problems = yield* everyServiceUsable(services).pipe(Effect.provide(stack))
      assert.deepStrictEqual(problems, [])
    }))

  it.scoped("each service's layer value builds (its dependencies from the Memory world's stack) and provides it", () =>
    Effect.gen(function*() {
      const stack = Root.Storage.layer(Root.MemoryWorld.layer(Root.MemoryWorld.make()), { agentDir: AGENT_DIR })
      const problems: Array<string> = []
      for (const service of services.filter((s) => !PORTS.has(s.name) && !(isReference(s.tag) && !("layer" in s.tag)))) {
        const layer = (service.tag["layer"] as Layer.Layer<unknown, unknown, Root.StorageServices>).pipe(Layer.provide(stack))
        problems.push(...yield* everyServiceUsable([service]).pipe(Effect.provide(layer)))
      }
      assert.deepStrictEqual(problems, [])
    }))

  it.scoped("the Node stack provides every exported service", () =>
    Effect.gen(function*() {
      const stack = Root.NodeStorage.layerWith({ agentDir: scratch("pi-layers-"), migrate: false })
      const problems = yield* everyServiceUsable(services).pipe(Effect.provide(stack))
      assert.deepStrictEqual(problems, [])
    }))

  it("the guard bites: a layer function, a layerWith that returns no Layer, a port with a layer", () => {
    class Good extends Context.Tag("test/Good")<Good, { readonly go: () => void }>() {
      static readonly layer = Layer.succeed(Good, { go: () => {} })
      static readonly layerWith = (_: { readonly n?: number } = {}) => Good.layer
    }
    class Called extends Context.Tag("test/Called")<Called, object>() {
      static readonly layer = () => Layer.succeed(Called, {})
    }
    class Odd extends Context.Tag("test/Odd")<Odd, object>() {
      static readonly layer = Layer.succeed(Odd, {})
      static readonly layerWith = () => ({})
    }
    class Host extends Context.Tag("test/Host")<Host, object>() {
      static readonly layer = Layer.succeed(Host, {})
    }
    const planted = servicesOf({ Good, Called, Odd, ns: { Host }, notATag: () => 1 })
    assert.deepStrictEqual(planted.map((s) => s.name), ["Called", "Good", "ns.Host", "Odd"])
    // `ns.Host` is not the port `Host`: only the root's ports are exempt by name.
    assert.deepStrictEqual(conventionViolations(planted), [
      "Called.layer is function, not a Layer value (options go to Called.layerWith)",
      "Odd.layerWith() does not return a Layer"
    ])
    assert.deepStrictEqual(conventionViolations([{ name: "Host", tag: Host as unknown as Service["tag"] }]), [
      "Host is a port: its layers are the worlds (NodeWorld.layer, MemoryWorld.layer), not Host.layer"
    ])
  })
})
