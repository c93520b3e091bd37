/**
 * The age rules on the file system's clock (docs/work-runs.md "Retention"): a run's last use is its files' last write
 * where the pruner read it, never a holder's stamp; now unknown means nothing is past its age; a staged run is
 * abandoned only once untouched for the stale bound on that clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { isPastMaxAge, lastUsedAt, type RunFacts } from "../../src/domain/PrunePlan.js"
import { isAbandonedStaging, STALE_STAGING_MS } from "../../src/domain/TenantEntries.js"

const DAY = 24 * 60 * 60 * 1000
const stamp = fc.integer({ min: 0, max: 4_000_000_000_000 })

describe("ages on the file system's clock", () => {
  it.prop("with its files' last write known, no stamp moves a run's last use or its age verdict", [stamp, stamp, fc.option(stamp, { nil: undefined }), fc.option(stamp, { nil: undefined }), fc.integer({ min: 0, max: 60 * DAY })], ([written, createdAt, releasedAt, heartbeat, age]) => {
    const run: RunFacts = { runId: "r", path: "/r", createdAt, releasedAt, newestHeartbeatAt: heartbeat, fsLastWrittenAt: written, active: false }
    assert.strictEqual(lastUsedAt(run), written)
    assert.strictEqual(isPastMaxAge(run, { maxAgeMs: DAY }, written + age), age > DAY)
    assert.isFalse(isPastMaxAge(run, { maxAgeMs: DAY }, null))
  })

  it("without it (a reader that does not look: the inventory), the latest stamp", () => {
    assert.strictEqual(lastUsedAt({ runId: "r", path: "/r", createdAt: 1, releasedAt: 3, newestHeartbeatAt: 2, active: false }), 3)
  })

  it("a staged run is abandoned once untouched for the stale bound on the file system's clock; unknown now keeps it", () => {
    assert.isFalse(isAbandonedStaging({ mtimeMs: 1000, fsNowMs: 1000 + STALE_STAGING_MS - 1 }))
    assert.isTrue(isAbandonedStaging({ mtimeMs: 1000, fsNowMs: 1000 + STALE_STAGING_MS }))
    assert.isFalse(isAbandonedStaging({ mtimeMs: 0, fsNowMs: null }))
  })
})
