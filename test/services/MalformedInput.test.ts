/**
 * SPEC WR8a and WR2 at every Effect entry point: malformed policies are `InvalidPolicy` and delete nothing,
 * non-string segments are `InvalidSegment` (never a `TypeError`). Over the Memory world, so "nothing was
 * removed" is checked on the whole tree.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck as fc, TestClock } from "effect"
import { decodeRetentionInput, DEFAULT_RETENTION, resolvePolicy, RETENTION_FIELDS } from "../../src/domain/Retention.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const DAY = 24 * 60 * 60 * 1000
const TOOLS = `${AGENT_DIR}/work/tools/bash`
const EXT = `${AGENT_DIR}/work/extensions/notes`

const v1 = (category: string, tenant: string, runId: string) =>
  JSON.stringify({ version: 1, category, tenant, runId, createdAt: 0 })

/** Two owned runs unused for 40 days in each tenant: any valid prune of them (default maxAge 30 d) removes them. */
const plantOldRuns = (world: MemoryWorld) =>
  Effect.gen(function*() {
    for (const run of ["old-a", "old-b"]) {
      yield* world.writeFixture(`${TOOLS}/${run}/.pi-work-run.json`, v1("tools", "bash", run))
      yield* world.writeFixture(`${TOOLS}/${run}/out.txt`, "data")
      yield* world.writeFixture(`${EXT}/${run}/.pi-work-run.json`, v1("extensions", "notes", run))
    }
    yield* TestClock.adjust(40 * DAY)
  })

/** Paths and content hashes under the agent dir. */
const snapshot = (world: MemoryWorld) =>
  JSON.stringify(Object.entries(world.tree(AGENT_DIR)).map(([path, e]) => [path, e.type, e.hash ?? null]))

/** Independent oracle for WR8a: undefined, or a plain object whose keys are policy fields with safe non-negative integers. */
const isValidPolicy = (u: unknown): boolean => {
  if (u === undefined) return true
  if (typeof u !== "object" || u === null || Array.isArray(u)) return false
  const proto = Object.getPrototypeOf(u)
  if (proto !== Object.prototype && proto !== null) return false
  return Object.entries(u).every(([k, v]) =>
    (RETENTION_FIELDS as ReadonlyArray<string>).includes(k) &&
    (v === undefined || (typeof v === "number" && Number.isSafeInteger(v) && v >= 0)))
}

const NAMED_BAD: ReadonlyArray<readonly [unknown, string, string]> = [
  [{ maxBytes: NaN }, "maxBytes", "not-finite"],
  [{ maxBytes: -5 }, "maxBytes", "negative"],
  [{ maxInactiveRuns: 1.5 }, "maxInactiveRuns", "not-an-integer"],
  [{ maxAgeMs: "2" }, "maxAgeMs", "not-a-number"],
  [{ maxAgeMs: Infinity }, "maxAgeMs", "not-finite"],
  [{ maxEntries: 2 ** 60 }, "maxEntries", "not-an-integer"],
  [{ maxbytes: 0 }, "maxbytes", "unknown-key"],
  [null, "policy", "not-an-object"],
  [[], "policy", "not-an-object"],
  [7, "policy", "not-an-object"],
  [new Date(0), "policy", "not-an-object"]
]

describe("malformed input at the Effect entry points (WR8a, WR2)", () => {
  it("the one decoder names field, value and rule", () => {
    for (const [policy, field, rule] of NAMED_BAD) {
      const decoded = decodeRetentionInput(policy)
      assert.isTrue(decoded._tag === "Left", JSON.stringify(policy))
      if (decoded._tag === "Left") {
        assert.deepStrictEqual([decoded.left._tag, decoded.left.field, decoded.left.rule], ["InvalidPolicy", field, rule])
        assert.include(decoded.left.message, field)
      }
    }
    const nan = decodeRetentionInput({ maxBytes: NaN })
    assert.isTrue(nan._tag === "Left" && nan.left.value === "NaN" && nan.left.message.includes("maxBytes = NaN"))
    const str = decodeRetentionInput({ maxAgeMs: "2" })
    assert.isTrue(str._tag === "Left" && str.left.value === "\"2\"")
    // A field given as undefined is absent (an options spread must not erase the base).
    const spread = decodeRetentionInput({ maxBytes: 0, maxDepth: undefined })
    assert.isTrue(spread._tag === "Right" && resolvePolicy(spread.right).maxDepth === DEFAULT_RETENTION.maxDepth && spread.right.maxBytes === 0)
  })

  it.scoped("prune, acquire and the extension view refuse every named bad policy and remove nothing", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      yield* plantOldRuns(world)
      const view = yield* p.extensions.getStorage("notes")
      const before = snapshot(world)
      for (const [policy, field, rule] of NAMED_BAD) {
        const attempts: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string }>> = [
          p.workRuns.prune({ category: "tools", tenant: "bash", policy: policy as never }),
          Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", retention: policy as never })),
          view.pruneWork({ policy: policy as never }),
          Effect.scoped(view.acquireWorkRun({ retention: policy as never }))
        ]
        for (const attempt of attempts) {
          const error = yield* Effect.flip(attempt)
          assert.deepStrictEqual([error._tag, "field" in error ? error.field : "", "rule" in error ? error.rule : ""], ["InvalidPolicy", field, rule])
        }
        yield* p.workRuns.awaitBackground
        assert.strictEqual(snapshot(world), before, `${JSON.stringify(policy)} changed the tree`)
      }
      // The same tree with a valid policy does lose both old runs: the refusals above were real.
      const report = yield* p.workRuns.prune({ category: "tools", tenant: "bash", policy: { maxBytes: 0 } })
      assert.deepStrictEqual(report.removed.map((r) => r.runId).sort(), ["old-a", "old-b"])
    }))

  const policyArb = fc.oneof(
    fc.anything(),
    fc.record(
      Object.fromEntries(RETENTION_FIELDS.map((f) => [f, fc.oneof(
        fc.integer({ min: 0, max: 1 << 30 }),
        fc.double(),
        fc.constantFrom(NaN, -0, Infinity, -Infinity, -1, 0.5, 2 ** 53, "2", null, undefined, true, {}, [])
      )])),
      { requiredKeys: [] }
    ),
    fc.dictionary(fc.string({ maxLength: 12 }), fc.integer({ min: 0, max: 10 }), { maxKeys: 2 })
  )

  it.prop("any JavaScript value decodes to a policy of safe non-negative integers exactly when it is one, else InvalidPolicy", [policyArb], ([policy]) => {
    const decoded = decodeRetentionInput(policy)
    assert.strictEqual(decoded._tag === "Right", isValidPolicy(policy))
    if (decoded._tag === "Right") {
      const limits = resolvePolicy(decoded.right)
      assert.isTrue(Object.values(limits).every((v) => Number.isSafeInteger(v) && v >= 0))
    } else {
      assert.strictEqual(decoded.left._tag, "InvalidPolicy")
      assert.isString(decoded.left.field)
    }
  }, { fastCheck: { numRuns: 1000 } })

  it.effect.prop("any JavaScript value as a policy: a valid prune, or InvalidPolicy with nothing removed", [policyArb], ([policy]) =>
    Effect.scoped(Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      yield* plantOldRuns(world)
      const before = snapshot(world)
      const exit = yield* Effect.exit(p.workRuns.prune({ category: "tools", tenant: "bash", policy: policy as never }))
      if (Exit.isSuccess(exit)) {
        assert.isTrue(isValidPolicy(policy), `accepted ${String(policy)}`)
        // A valid policy's limits are finite non-negative integers, so the plan is a real one.
        const decoded = decodeRetentionInput(policy)
        assert.isTrue(decoded._tag === "Right" && Object.values(decoded.right).every((v) => v === undefined || (Number.isSafeInteger(v) && v >= 0)))
        return
      }
      const failure = Cause.failureOption(exit.cause)
      assert.isTrue(failure._tag === "Some" && failure.value._tag === "InvalidPolicy", Cause.pretty(exit.cause))
      assert.isFalse(isValidPolicy(policy))
      assert.strictEqual(snapshot(world), before)
    })), { fastCheck: { numRuns: 25 } })

  it.scoped("non-string segments are InvalidSegment on every Effect entry point, never a TypeError", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const p = yield* spawnProcess(world)
      for (const bad of [undefined, 5, {}, null, [], Symbol("s"), 5n]) {
        const attempts = [
          ["category", Effect.scoped(p.workRuns.acquire({ category: bad as never, tenant: "bash", retention: false }))],
          ["tenant", Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: bad as never, retention: false }))],
          ...(bad === undefined ? [] : [["runId", Effect.scoped(p.workRuns.acquire({ category: "tools", tenant: "bash", runId: bad as never, retention: false }))]]),
          ["category", p.workRuns.prune({ category: bad as never, tenant: "bash" })],
          ["tenant", p.workRuns.getProcessWorkRun({ category: "tools", tenant: bad as never })],
          ["namespace", Effect.scoped(p.extensions.getStorage(bad as never))]
        ] as const
        for (const [field, attempt] of attempts) {
          const exit = yield* Effect.exit(attempt as Effect.Effect<unknown, { readonly _tag: string }>)
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit)) {
            const failure = Cause.failureOption(exit.cause)
            assert.isTrue(failure._tag === "Some", `${field} ${String(bad)}: ${Cause.pretty(exit.cause)}`)
            if (failure._tag === "Some") {
              const e = failure.value as { _tag: string; field: string; rule: string; message: string }
              assert.deepStrictEqual([e._tag, e.field, e.rule], ["InvalidSegment", field, "not-a-string"])
              assert.include(e.message, "must be a string")
            }
          }
        }
      }
      assert.isUndefined(world.tree(AGENT_DIR)[AGENT_DIR], "nothing was created")
    }))
})
