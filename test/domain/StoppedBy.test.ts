import { assert, describe, it } from "@effect/vitest"
import { inventoryEntriesStopped, listingStopped, pruneDepthStopped, pruneEntriesStopped, pruneScanStopped, scanEntriesStopped } from "../../src/domain/StoppedBy.js"

describe("inventoryEntriesStopped", () => {
  it("says what each size is: lower bounds, not measured, or some of each", () => {
    const words = (sizes: number, notMeasured: number) => inventoryEntriesStopped(100, sizes, notMeasured).message.split(": ")[1]
    assert.strictEqual(words(1, 0), "1 size is a lower bound; raise it (--max-entries)")
    assert.strictEqual(words(3, 0), "3 sizes are lower bounds; raise it (--max-entries)")
    assert.strictEqual(words(1, 1), "1 size is not measured; raise it (--max-entries)")
    assert.strictEqual(words(3, 3), "3 sizes are not measured; raise it (--max-entries)")
    assert.strictEqual(words(3, 2), "3 sizes not exact (2 not measured, the other a lower bound); raise it (--max-entries)")
    assert.strictEqual(words(5, 2), "5 sizes not exact (2 not measured, the rest lower bounds); raise it (--max-entries)")
    assert.strictEqual(inventoryEntriesStopped(100, 5, 2).left, 5)
  })
})

describe("the prune's stop lines", () => {
  it("suggests pruning again only when this prune took something; otherwise the bound is the only way on", () => {
    const moving = pruneScanStopped(5, 10, true).message
    assert.match(moving, /: 5 not considered; prune again \(each prune works through the first 5\) or raise maxScannedRuns \(--max-scanned-runs\)$/)
    const stuck = pruneScanStopped(5, 10, false).message
    assert.notInclude(stuck, "prune again")
    assert.match(stuck, /: 5 not considered; none of the first 5 could go, so pruning again would scan the same ones: raise maxScannedRuns \(--max-scanned-runs\)$/)
  })

  it("names the harness ceiling, not the caller's own option, when the bound is the ceiling's", () => {
    // Asked for more than the ceiling: capped, and said so.
    const capped = pruneScanStopped(5, 23, true, { asked: 20, ceiling: 5 })
    assert.match(capped.message, /raise the harness ceiling \(retentionCeiling\.maxScannedRuns\): maxScannedRuns 20 was asked and capped at the ceiling's 5$/)
    assert.strictEqual(capped.limit, 5)
    // Left to the ceiling's default: only the ceiling raises it.
    assert.match(pruneScanStopped(5, 23, true, { ceiling: 5 }).message, /raise the harness ceiling \(retentionCeiling\.maxScannedRuns\): a policy's maxScannedRuns is at most the ceiling's 5, its default$/)
    // Asked for exactly the limit (the CLI's ceiling is what a person asked), or below the ceiling: the option raises it.
    assert.match(pruneScanStopped(5, 23, true, { asked: 5, ceiling: 5 }).message, /or raise maxScannedRuns \(--max-scanned-runs\)$/)
    assert.match(pruneScanStopped(5, 23, true, { asked: 5, ceiling: 50 }).message, /or raise maxScannedRuns \(--max-scanned-runs\)$/)
    assert.match(pruneScanStopped(5, 23, true).message, /or raise maxScannedRuns \(--max-scanned-runs\)$/)
    assert.match(pruneEntriesStopped(10, 2, { asked: 1_000, ceiling: 10 }).message, /raise the harness ceiling \(retentionCeiling\.maxEntries\): maxEntries 1,000 was asked and capped at the ceiling's 10$/)
    assert.match(pruneDepthStopped(3, 1, { asked: 64, ceiling: 3 }).message, /raise the harness ceiling \(retentionCeiling\.maxDepth\): maxDepth 64 was asked and capped at the ceiling's 3$/)
  })

  it("agrees in number", () => {
    assert.include(pruneEntriesStopped(10, 1).message, "1 run not measured or measured only in part (its size unknown or a lower bound unless its removal counted it)")
    assert.include(pruneEntriesStopped(10, 3).message, "3 runs not measured or measured only in part (their sizes unknown or lower bounds unless their removal counted them)")
    assert.match(pruneDepthStopped(3, 1).message, /^the size walk of 1 run stopped at maxDepth 3 .*: its size is a lower bound;/)
    assert.match(pruneDepthStopped(3, 2).message, /^the size walks of 2 runs stopped at maxDepth 3 .*: their sizes are lower bounds;/)
    assert.match(listingStopped(3, 4, 1).message, /^1 tenant holds more than the 3 entries/)
    assert.match(listingStopped(3, 4, 2).message, /^2 tenants hold more than the 3 entries/)
    assert.match(listingStopped(1, 4, 1).message, /^1 tenant holds more than the 1 entry examined per tenant/)
    // A budget of 1 (what `--max-scan-entries 0` reads as): one entry, not "1 entries".
    assert.match(scanEntriesStopped(1, 5).message, /^the scan read its budget of 1 entry \(directory listings and leases\): at least 5 more/)
    assert.match(scanEntriesStopped(2_000, 5).message, /^the scan read its budget of 2,000 entries /)
  })
})
