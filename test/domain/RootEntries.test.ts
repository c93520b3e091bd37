import { assert, describe, it } from "@effect/vitest"
import { CANONICAL_ROOT_ENTRIES, LEGACY_ROOT_ENTRIES, TENANT_PRUNE_MARKER } from "../../src/domain/AgentPaths.js"
import { FINDING_CODES } from "../../src/domain/Findings.js"
import { markerFileNames } from "../../src/domain/MarkerFiles.js"
import { MIGRATION_MARKER } from "../../src/domain/MigrationPlan.js"
import { classifyRootEntry } from "../../src/domain/RootEntries.js"
import { durationWords } from "../../src/domain/DurationWords.js"
import { STALE_STAGING_MS, TENANT_LIBRARY_ENTRIES } from "../../src/domain/TenantEntries.js"
import { reclaimLockPath } from "../../src/services/internal/markers.js"

describe("doctor classification (DR1)", () => {
  it("reads the canonical and legacy tables; everything else is unknown with a hint", () => {
    for (const entry of CANONICAL_ROOT_ENTRIES) assert.strictEqual(classifyRootEntry(entry.name)._tag, "Canonical")
    for (const entry of LEGACY_ROOT_ENTRIES) assert.strictEqual(classifyRootEntry(entry.name)._tag, "Legacy")
    assert.strictEqual(classifyRootEntry("x:Zone.Identifier")._tag, "Legacy")
    assert.strictEqual(classifyRootEntry(MIGRATION_MARKER)._tag, "MigrationMarker")
    // Every file the marker rule brings is the library's own (the reclaim lock is also a clock-probe spot).
    assert.deepStrictEqual(markerFileNames(MIGRATION_MARKER).map(classifyRootEntry), [
      { _tag: "MigrationMarker", role: "marker" },
      { _tag: "MigrationMarker", role: "reclaim-lock" }
    ])
    assert.strictEqual(classifyRootEntry(`${MIGRATION_MARKER}.reclaim-1-2`)._tag, "Unknown")
    assert.deepStrictEqual(classifyRootEntry("usage.sqlite"), { _tag: "Unknown", hint: "database" })
    assert.deepStrictEqual(classifyRootEntry("debug.log"), { _tag: "Unknown", hint: "log" })
    assert.deepStrictEqual(classifyRootEntry("notes"), { _tag: "Unknown", hint: "other" })
  })

  it("every finding code has a severity and a meaning", () => {
    for (const [code, spec] of Object.entries(FINDING_CODES)) {
      assert.include(["info", "warning", "error"], spec.severity, code)
      assert.isAbove(spec.meaning.length, 20, code)
    }
  })
})

describe("tenant entries and the prose built from constants", () => {
  it("the tenant's reclaim lock is the name markers.ts gives it", () => {
    assert.isTrue(TENANT_LIBRARY_ENTRIES.has(reclaimLockPath(TENANT_PRUNE_MARKER)))
  })

  it("durationWords names the bound the constant sets", () => {
    assert.strictEqual(durationWords(STALE_STAGING_MS), "an hour")
    assert.strictEqual(durationWords(10 * 60 * 1000), "10 minutes")
    assert.strictEqual(durationWords(2 * 60 * 60 * 1000), "2 hours")
    assert.strictEqual(durationWords(1500), "1500 ms")
    assert.include(FINDING_CODES["work-abandoned-staging"].meaning, `${durationWords(STALE_STAGING_MS)} old`)
  })
})
