/**
 * MEM1 crash safety: a crash at every mutating step of `add`, `replace` and `remove`, followed by any next
 * mutation (not a retry), converges: every fact exactly once across USER.md and every shard file, none lost,
 * the crashed edit either done or not. Then a property over random sequences, budgets and crash points.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FastCheck as fc, TestClock } from "effect"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import type { UserProfile, UserProfileOptions } from "../../src/services/UserProfile.js"
import { HOST } from "./migrationSupport.js"
import { asProfile, assertSettled, factCounts, PI_FACTS, profileProcess, seedPi, USER } from "./userProfileSupport.js"

type Profile = UserProfile["Type"]

interface Scenario {
  readonly name: string
  readonly options: UserProfileOptions
  readonly seed: (world: MemoryWorld) => Effect.Effect<unknown, unknown>
  readonly op: (p: Profile) => Effect.Effect<unknown, unknown>
  /** The facts before and after the op (order aside). */
  readonly before: ReadonlyArray<string>
  readonly after: ReadonlyArray<string>
  /** A fact the op does not touch (for the next mutations). */
  readonly stable: string
}

const sorted = (xs: Iterable<string>) => [...xs].sort()
const long = (c: string) => c.repeat(60)

const plain3 = ["alpha fact", "beta fact", "gamma fact"]
const scenarios: ReadonlyArray<Scenario> = [
  {
    name: "add overflowing a plain profile into the first shard",
    options: { budgetBytes: 80 },
    seed: (world) => world.writeFixture(USER, plain3.map((e) => `${e}\n`).join("")),
    op: (p) => p.add(long("n")),
    before: plain3,
    after: [...plain3, long("n")],
    stable: "beta fact"
  },
  {
    name: "add overflowing Pi's archive into a new shard",
    options: { budgetBytes: 160 },
    seed: seedPi,
    op: (p) => p.add(long("n")),
    before: PI_FACTS,
    after: [...PI_FACTS, long("n")],
    stable: "- Works in Europe/Paris"
  },
  {
    name: "replace in a shard that then splits",
    options: { shardBudgetBytes: 40 },
    seed: seedPi,
    op: (p) => p.replace("pnpm", "- Uses bun, never npm or pnpm"),
    before: PI_FACTS,
    after: PI_FACTS.map((f) => (f === "- Uses pnpm" ? "- Uses bun, never npm or pnpm" : f)),
    stable: "- Likes tabs"
  },
  {
    name: "remove that empties a shard",
    options: { budgetBytes: 130 },
    seed: (world) =>
      Effect.gen(function*() {
        yield* seedPi(world)
        yield* asProfile(world, (p) => p.add(long("s")), { budgetBytes: 130 }) // hot overflow: a shard [hot, s]
        yield* asProfile(world, (p) => p.remove("answers in French"))
      }),
    op: (p) => p.remove("sss"),
    before: PI_FACTS.slice(0, 4).concat(long("s")),
    after: PI_FACTS.slice(0, 4),
    stable: "- Uses pnpm"
  },
  {
    name: "remove a hot entry",
    options: {},
    seed: seedPi,
    op: (p) => p.remove("French"),
    before: PI_FACTS,
    after: PI_FACTS.slice(0, 4),
    stable: "- Uses pnpm"
  },
  {
    name: "replace a hot entry, overflowing the budget",
    options: { budgetBytes: 140 },
    seed: seedPi,
    op: (p) => p.replace("French", long("f")),
    before: PI_FACTS,
    after: [...PI_FACTS.slice(0, 4), long("f")],
    stable: "- Prefers concise answers"
  }
]

/** The next mutations after a crash (not a retry of the crashed one): any of them must converge. */
const nextMutations = (s: Scenario): ReadonlyArray<{
  readonly name: string
  readonly run: (p: Profile) => Effect.Effect<unknown, unknown>
  readonly facts: (facts: ReadonlyArray<string>) => ReadonlyArray<string>
}> => [
  { name: "add", run: (p) => p.add("next fact"), facts: (f) => [...f, "next fact"] },
  { name: "remove", run: (p) => p.remove(s.stable), facts: (f) => f.filter((x) => x !== s.stable) },
  { name: "replace", run: (p) => p.replace(s.stable, "stable, edited"), facts: (f) => f.map((x) => (x === s.stable ? "stable, edited" : x)) }
]

const crashAtEveryStep = (s: Scenario) =>
  Effect.gen(function*() {
    const reference = MemoryWorld.make({ journal: false })
    yield* s.seed(reference)
    const start = reference.mutationCount
    yield* asProfile(reference, s.op, s.options)
    const steps = reference.mutationCount - start
    assertSettled(reference, s.after, `${s.name}: crash-free`)
    for (let k = 0; k <= steps; k++) {
      // The next mutation rotates through add, remove and replace: each kind meets crashes at every third step.
      for (const next of [nextMutations(s)[k % 3]!]) {
        const world = MemoryWorld.make({ journal: false })
        yield* s.seed(world)
        const first = profileProcess(world, s.options)
        world.crashAfter(k, { hostname: HOST, pid: first.pid })
        const exit = yield* first.run(s.op).pipe(Effect.exit)
        world.kill(HOST, first.pid)
        world.recover()
        // A crash between the lock's exclusive create and its write leaves it empty: held until the stale bound.
        yield* TestClock.adjust(DEFAULT_STALE_UNREADABLE_MS + 1)
        const what = `${s.name}: crash after step ${k} of ${steps}, then ${next.name}`
        // The last step is giving the lock back, which the op does not wait on (a dead holder's lock is reclaimed).
        if (k < steps - 1) assert.isTrue(Exit.isFailure(exit), `${what}: the op finished before the crash point`)
        // A reader sees the profile before or after the edit, never a mix.
        const seen = sorted((yield* asProfile(world, (p) => p.read, s.options)).entries.map((e) => e.text))
        assert.isTrue(
          [sorted(s.before), sorted(s.after)].some((f) => JSON.stringify(f) === JSON.stringify(seen)),
          `${what}: read saw ${JSON.stringify(seen)}`
        )
        yield* asProfile(world, next.run, s.options)
        const counts = factCounts(world)
        const done = [s.before, s.after].map((f) => sorted(next.facts(f)))
        assert.isTrue(done.some((f) => JSON.stringify(f) === JSON.stringify(sorted(counts.keys()))), `${what}: ${JSON.stringify([...counts])}`)
        assertSettled(world, sorted(counts.keys()), what)
      }
    }
    return steps
  })

describe("user profile: a crash at every mutating step, then any next mutation, converges (Memory layer)", () => {
  for (const s of scenarios) {
    it.effect(s.name, () => Effect.map(crashAtEveryStep(s), (steps) => assert.isAbove(steps, 0)))
  }
})

// ---------------------------------------------------------------------------------------------------------
// Random sequences: the final set of facts equals the model's.

type Op =
  | { readonly _tag: "add"; readonly id: number; readonly variant: number }
  | { readonly _tag: "remove"; readonly id: number; readonly exact: boolean; readonly variant: number }
  | { readonly _tag: "replace"; readonly id: number; readonly variant: number; readonly to: number; readonly toVariant: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ _tag: fc.constant("add" as const), id: fc.nat(7), variant: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ _tag: fc.constant("remove" as const), id: fc.nat(7), exact: fc.boolean(), variant: fc.nat(1) }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("replace" as const), id: fc.nat(7), variant: fc.nat(1), to: fc.nat(7), toVariant: fc.nat(1) }) }
)

/** The model: a set of facts, edited by the rules of MEM1 (exact text, else the one entry containing it). */
const applyModel = (facts: ReadonlySet<string>, query: string, edit: (matched: string, next: Set<string>) => void): Set<string> => {
  const next = new Set(facts)
  const exact = facts.has(query) ? [query] : [...facts].filter((f) => f.includes(query))
  if (exact.length === 1) edit(exact[0]!, next)
  return next
}

describe("user profile: random mutation sequences, budgets and crash points (property)", () => {
  it.effect.prop(
    "after any sequence with crashes, one more mutation leaves exactly the model's facts, each once",
    [
      fc.array(fc.tuple(opArb, fc.option(fc.nat({ max: 14 }), { nil: undefined })), { minLength: 1, maxLength: 6 }),
      fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 16, maxLength: 16 }),
      fc.integer({ min: 110, max: 400 }),
      // Shards at least as large as the largest entry (57 bytes): a larger entry is InvalidEntry by design.
      fc.integer({ min: 58, max: 200 })
    ],
    ([ops, pads, budgetBytes, shardBudgetBytes]) =>
      Effect.gen(function*() {
        const options = { budgetBytes, shardBudgetBytes }
        const text = (id: number, variant: number) => `fact-${id}:${(variant === 0 ? "x" : "y").repeat(pads[id * 2 + variant]!)}`
        const world = MemoryWorld.make({ journal: false })
        let model = new Set<string>()
        for (const [op, crashAt] of ops) {
          const run = (p: Profile) =>
            op._tag === "add"
              ? p.add(text(op.id, op.variant))
              : op._tag === "remove"
              ? p.remove(op.exact ? text(op.id, op.variant) : `fact-${op.id}:`)
              : p.replace(text(op.id, op.variant), text(op.to, op.toVariant))
          const post = op._tag === "add"
            ? new Set([...model, text(op.id, op.variant)])
            : op._tag === "remove"
            ? applyModel(model, op.exact ? text(op.id, op.variant) : `fact-${op.id}:`, (m, next) => next.delete(m))
            : applyModel(model, text(op.id, op.variant), (m, next) => {
              next.delete(m)
              next.add(text(op.to, op.toVariant))
            })
          const proc = profileProcess(world, options)
          if (crashAt !== undefined) world.crashAfter(crashAt, { hostname: HOST, pid: proc.pid })
          const exit = yield* proc.run(run).pipe(Effect.exit)
          if (crashAt !== undefined) {
            world.kill(HOST, proc.pid)
            world.recover()
            // An empty lock left between its create and its write is held until the stale bound.
            yield* TestClock.adjust(DEFAULT_STALE_UNREADABLE_MS + 1)
          } else if (Exit.isFailure(exit)) {
            // Only the typed refusals of an edit that matches nothing or several entries.
            const tags = JSON.stringify(exit.cause)
            assert.isTrue(/EntryNotFound|AmbiguousEntry/.test(tags), tags)
          }
          const seen = new Set((yield* asProfile(world, (p) => p.read, options)).entries.map((e) => e.text))
          const same = (a: ReadonlySet<string>) => JSON.stringify(sorted(a)) === JSON.stringify(sorted(seen))
          if (crashAt === undefined) assert.isTrue(same(post), `${JSON.stringify(op)}: saw ${JSON.stringify(sorted(seen))}, model ${JSON.stringify(sorted(post))}`)
          else assert.isTrue(same(post) || same(model), `${JSON.stringify(op)} crashed at ${crashAt}: saw ${JSON.stringify(sorted(seen))}`)
          model = seen
        }
        yield* asProfile(world, (p) => p.add("final fact"), options)
        assertSettled(world, [...model, "final fact"], "end of sequence")
      }),
    { fastCheck: { numRuns: 25 } }
  )
})
