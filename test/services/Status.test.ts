/**
 * The `Status` service (Effect API): one call, the inventory and the doctor's count over the same roots. With
 * nothing configured the web data root is the default under the Host's home (TD1), and whatever mistakes lie
 * there, status's count is the doctor's own and status lists every extension the doctor checked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AgentDir } from "../../src/services/AgentDir.js"
import { Doctor } from "../../src/services/Doctor.js"
import { Inventory } from "../../src/services/Inventory.js"
import { Status } from "../../src/services/Status.js"
import { AGENT, spawn } from "./migrationSupport.js"

/** The web data root when nothing is configured: the Memory host's home is /home/user. */
const DEFAULT_WEB = "/home/user/.pi/web/data"

const services = (world: MemoryWorld) => {
  const ports = spawn(world).layer
  const agentDir = AgentDir.layerWith(AGENT).pipe(Layer.provide(ports))
  const base = Layer.merge(ports, agentDir)
  return Status.layer.pipe(Layer.provideMerge(Layer.mergeAll(Inventory.layer, Doctor.layer).pipe(Layer.provideMerge(base))))
}

/** One of the seed's mistakes an extension's data directory can hold (docs/migrations.md "Doctor": DR2). */
const MISTAKES = ["database", "log", "venv", "outside", "split"] as const
type Mistake = (typeof MISTAKES)[number]

const plant = (world: MemoryWorld, root: string, extId: string, mistakes: ReadonlyArray<Mistake>) =>
  Effect.gen(function*() {
    const at = `${root}/${extId}`
    yield* world.mkdirFixture(`${at}/state`)
    for (const m of mistakes) {
      if (m === "database") yield* world.writeFixture(`${at}/config/index.sqlite`, "db")
      if (m === "log") yield* world.writeFixture(`${at}/config/debug.log`, "log")
      if (m === "venv") yield* world.mkdirFixture(`${at}/config/node_modules`)
      if (m === "outside") yield* world.writeFixture(`${at}/exports.json`, "[]")
      if (m === "split") yield* world.mkdirFixture(`${at}/config/state`)
    }
  })

const extensions = fc.dictionary(
  fc.constantFrom("bookmarks", "notes", "todo", "x.y"),
  fc.uniqueArray(fc.constantFrom(...MISTAKES), { maxLength: MISTAKES.length }),
  { maxKeys: 4 }
)

describe("Status (Effect API): the doctor's count and the extensions, from one call on the same roots", () => {
  it.effect.prop(
    "at the default web data root, with or without an agent dir: status's count is the doctor's, its extensions the doctor's",
    [extensions, fc.boolean()],
    ([planted, withAgentDir]) =>
      Effect.gen(function*() {
        const world = MemoryWorld.make()
        if (withAgentDir) yield* world.mkdirFixture(AGENT)
        for (const [extId, mistakes] of Object.entries(planted)) yield* plant(world, DEFAULT_WEB, extId, mistakes)
        const { doctorReport, status } = yield* Effect.gen(function*() {
          const status = yield* (yield* Status).status()
          const doctorReport = yield* (yield* Doctor).doctor()
          return { doctorReport, status }
        }).pipe(Effect.provide(services(world)))
        assert.strictEqual(status.webDataRoot, DEFAULT_WEB)
        assert.strictEqual(status.webDataRootSource, "default")
        assert.strictEqual(doctorReport.webDataRoot, DEFAULT_WEB)
        assert.strictEqual(status.doctor.findings, doctorReport.findings.length)
        assert.strictEqual(status.doctor.needsAttention, doctorReport.findings.some((f) => f.severity !== "info"))
        const webFindings = doctorReport.findings.filter((f) => f.path.startsWith(`${DEFAULT_WEB}/`))
        const expected = Object.values(planted).reduce((n, ms) => n + ms.length, 0)
        assert.strictEqual(webFindings.length, expected, JSON.stringify(doctorReport.findings))
        assert.deepStrictEqual(status.webExtensions.map((e) => e.extId), Object.keys(planted).sort())
        assert.strictEqual(status.exists, withAgentDir)
      }),
    { fastCheck: { numRuns: 40 } }
  )

  it.effect("an explicit web data root is the one both parts look at", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.mkdirFixture(AGENT)
      yield* plant(world, DEFAULT_WEB, "bookmarks", ["database"])
      yield* plant(world, "/srv/web", "todo", ["log", "outside"])
      const status = yield* Effect.flatMap(Status, (s) => s.status({ webDataRoot: "/srv/web" })).pipe(Effect.provide(services(world)))
      assert.deepStrictEqual([status.webDataRoot, status.webDataRootSource], ["/srv/web", "option"])
      assert.deepStrictEqual(status.webExtensions.map((e) => [e.extId, e.config !== null, e.state !== null, e.cache]), [["todo", true, true, null]])
      assert.strictEqual(status.doctor.findings, 2)
    }))
})
