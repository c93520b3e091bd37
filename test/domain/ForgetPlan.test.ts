/**
 * planForget against a simple model: sort newest first, cut the list into runs of equal day / week keys
 * (computed another way: `toLocaleDateString("en-CA")` and the "week of January 4th" rule), keep the first
 * snapshot of the first n runs per rule. Zones with DST (one that went back over midnight), far-future times.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { decodeForgetPolicy, type ForgetPolicy, type ForgetReason, type ForgetSnapshot, isoWeekKey, planForget, planForgetResult } from "../../src/domain/ForgetPlan.js"

const ZONES = ["UTC", "Europe/Berlin", "America/New_York", "America/Sao_Paulo", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham"]
const DAY = 86_400_000

const modelDay = (ms: number, timeZone: string): string => new Date(ms).toLocaleDateString("en-CA", { timeZone })

/** ISO week by the other textbook rule: week 1 is the week holding January 4th. */
const modelWeek = (ms: number, timeZone: string): string => {
  const [y, m, d] = modelDay(ms, timeZone).split("-").map(Number) as [number, number, number]
  const dayNumber = (yy: number, mm: number, dd: number) => Math.round(Date.UTC(yy, mm - 1, dd) / DAY)
  const mondayOfWeek1 = (yy: number) => {
    const jan4 = dayNumber(yy, 1, 4)
    return jan4 - ((new Date(jan4 * DAY).getUTCDay() + 6) % 7)
  }
  const today = dayNumber(y, m, d)
  let year = y
  if (today < mondayOfWeek1(year)) year--
  else if (today >= mondayOfWeek1(year + 1)) year++
  return `${year}-W${Math.floor((today - mondayOfWeek1(year)) / 7) + 1}`
}

const model = (snapshots: ReadonlyArray<ForgetSnapshot>, policy: ForgetPolicy, timeZone: string) => {
  const sorted = [...snapshots].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
  const reasons = new Map<string, Array<ForgetReason>>(sorted.map((s) => [s.id, []]))
  const rule = (reason: ForgetReason, n: number | undefined, key: (s: ForgetSnapshot, i: number) => string) => {
    const runs: Array<ForgetSnapshot> = []
    sorted.forEach((s, i) => {
      if (i === 0 || key(s, i) !== key(sorted[i - 1]!, i - 1)) runs.push(s)
    })
    for (const s of runs.slice(0, n ?? 0)) reasons.get(s.id)!.push(reason)
  }
  rule("last", policy.keepLast, (_s, i) => String(i))
  rule("daily", policy.keepDaily, (s) => modelDay(s.createdAt, timeZone))
  rule("weekly", policy.keepWeekly, (s) => modelWeek(s.createdAt, timeZone))
  return {
    keep: sorted.filter((s) => reasons.get(s.id)!.length > 0).map((s) => ({ id: s.id, reasons: reasons.get(s.id)! })),
    remove: sorted.filter((s) => reasons.get(s.id)!.length === 0).map((s) => s.id)
  }
}

/** Instants clustered around DST changes (2018 Sao Paulo went back over midnight) and far in the future. */
const instantArb = fc.oneof(
  fc.integer({ min: Date.UTC(2018, 1, 10), max: Date.UTC(2018, 1, 25) }),
  fc.integer({ min: Date.UTC(2024, 2, 20), max: Date.UTC(2024, 3, 5) }),
  fc.integer({ min: Date.UTC(2024, 9, 20), max: Date.UTC(2024, 10, 10) }),
  fc.integer({ min: Date.UTC(2026, 11, 20), max: Date.UTC(2027, 0, 10) }),
  fc.integer({ min: Date.UTC(2300, 0, 1), max: Date.UTC(2300, 2, 1) })
)
const snapshotsArb = fc.uniqueArray(fc.tuple(fc.hexaString({ minLength: 4, maxLength: 8 }), instantArb), {
  selector: ([id]) => id,
  maxLength: 40
}).map((rows) => rows.map(([id, createdAt]) => ({ id, createdAt })))
const count = fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined })
const policyArb = fc.record({ keepLast: count, keepDaily: count, keepWeekly: count })
  .filter((p) => (p.keepLast ?? 0) + (p.keepDaily ?? 0) + (p.keepWeekly ?? 0) > 0)

describe("planForget", () => {
  it.prop("equals the run-of-keys model in every zone", [snapshotsArb, policyArb, fc.constantFrom(...ZONES)], ([snapshots, policy, timeZone]) => {
    const plan = planForget(snapshots, policy, { timeZone })
    assert.deepStrictEqual(plan, model(snapshots, policy, timeZone))
    // Every snapshot once, the newest kept, keepLast's share exact.
    assert.strictEqual(plan.keep.length + plan.remove.length, snapshots.length)
    if (snapshots.length > 0) {
      const newest = Math.max(...snapshots.map((s) => s.createdAt))
      assert.strictEqual(snapshots.find((s) => s.id === plan.keep[0]!.id)!.createdAt, newest)
    }
    assert.strictEqual(plan.keep.filter((k) => k.reasons.includes("last")).length, Math.min(policy.keepLast ?? 0, snapshots.length))
  }, { fastCheck: { numRuns: 300 } })

  it("keeps the newest of each day across a DST change and lists every reason", () => {
    // Europe/Berlin went back from 03:00 CEST to 02:00 CET on 2024-10-27: all four are that one local day.
    const at = (iso: string) => Date.parse(iso)
    const snapshots = [
      { id: "a", createdAt: at("2024-10-26T22:30:00Z") }, // 00:30 CEST on the 27th
      { id: "b", createdAt: at("2024-10-27T00:30:00Z") }, // 02:30 CEST
      { id: "c", createdAt: at("2024-10-27T01:30:00Z") }, // 02:30 CET (the hour again)
      { id: "d", createdAt: at("2024-10-27T22:30:00Z") }, // 23:30 CET, still the 27th
      { id: "e", createdAt: at("2024-10-28T06:00:00Z") }, // Monday the 28th: a new ISO week
      { id: "f", createdAt: at("2024-10-20T10:00:00Z") } // the week before, after a gap
    ]
    const plan = planForget(snapshots, { keepLast: 1, keepDaily: 2, keepWeekly: 3 }, { timeZone: "Europe/Berlin" })
    assert.deepStrictEqual(plan.keep, [
      { id: "e", reasons: ["last", "daily", "weekly"] },
      { id: "d", reasons: ["daily", "weekly"] },
      { id: "f", reasons: ["weekly"] }
    ])
    assert.deepStrictEqual(plan.remove, ["c", "b", "a"])
    // In UTC, "a" (22:30 on the 26th) is a day of its own, but keepDaily 2 is spent on the 28th and the 27th.
    assert.deepStrictEqual(planForget(snapshots, { keepDaily: 3 }, { timeZone: "UTC" }).keep.map((k) => k.id), ["e", "d", "a"])
  })

  it("refuses an empty or malformed policy and an unknown zone, typed", () => {
    for (const policy of [{}, { keepLast: 0 }, { keepDaily: 0, keepWeekly: 0 }]) {
      const r = planForgetResult([{ id: "a", createdAt: 0 }], policy)
      assert.isFalse(r.ok)
      if (!r.ok) assert.strictEqual(r.error._tag, "InvalidArgument")
    }
    const bad = planForgetResult([], { keepLast: -1 })
    assert.isTrue(!bad.ok && bad.error.field === "keepLast")
    const zone = planForgetResult([], { keepLast: 1 }, { timeZone: "Mars/Olympus" })
    assert.isTrue(!zone.ok && zone.error.field === "timeZone")
    assert.throws(() => planForget([], {}), /empty policy/)
  })

  it.prop(
    "the policy is decoded in one place: a rule that is not a whole count ≥ 0 is refused naming that rule",
    [
      fc.constantFrom("keepLast" as const, "keepDaily" as const, "keepWeekly" as const),
      fc.oneof(
        fc.integer({ max: -1 }),
        fc.double({ noInteger: true }),
        fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "2", null, true, [1], {})
      ),
      fc.integer({ min: 1, max: 50 })
    ],
    ([field, bad, good]) => {
      const other = field === "keepLast" ? "keepDaily" : "keepLast"
      const refused = decodeForgetPolicy({ [other]: good, [field]: bad })
      assert.isTrue(refused._tag === "Left" && refused.left._tag === "InvalidArgument" && refused.left.field === field)
      const viaPlan = planForgetResult([{ id: "a", createdAt: 0 }], { [other]: good, [field]: bad } as unknown as ForgetPolicy)
      assert.isTrue(!viaPlan.ok && viaPlan.error.field === field)
      const accepted = decodeForgetPolicy({ [field]: good, dryRun: true })
      assert.isTrue(accepted._tag === "Right")
      if (accepted._tag === "Right") assert.deepStrictEqual({ ...accepted.right }, { [field]: good })
    },
    { fastCheck: { numRuns: 200 } }
  )

  it("ISO weeks at year boundaries", () => {
    assert.strictEqual(isoWeekKey(2021, 1, 3), 202053) // Sunday of 2020's last week
    assert.strictEqual(isoWeekKey(2024, 12, 30), 202501) // Monday in week 1 of 2025
    assert.strictEqual(isoWeekKey(2026, 12, 31), 202653)
  })
})
