import { assert, describe, it } from "@effect/vitest"
import {
  type ExecutedDecision,
  isConflictPath,
  layoutReportOf,
  placeRule,
  preserveRule
} from "../../src/domain/LayoutMigration.js"

describe("layout migration rules", () => {
  it("placeRule: absence moves, two directories merge, identical copies drop, anything else is kept", () => {
    assert.strictEqual(placeRule("Directory", undefined, false), "move")
    assert.strictEqual(placeRule("Directory", "Directory", false), "merge-directory")
    assert.strictEqual(placeRule("File", "File", true), "remove-duplicate")
    assert.strictEqual(placeRule("SymbolicLink", "SymbolicLink", true), "remove-duplicate")
    assert.strictEqual(placeRule("File", "File", false), "preserve")
    assert.strictEqual(placeRule("File", "Directory", false), "preserve")
    assert.strictEqual(placeRule("Directory", "File", false), "preserve")
  })

  it("preserveRule: a claimed or differing candidate is skipped; a free one is taken; an unfinished directory is continued", () => {
    assert.strictEqual(preserveRule("File", undefined, false, false), "take")
    assert.strictEqual(preserveRule("File", undefined, false, true), "next")
    assert.strictEqual(preserveRule("File", "File", true, true), "next")
    assert.strictEqual(preserveRule("File", "File", true, false), "already-kept")
    assert.strictEqual(preserveRule("File", "File", false, false), "next")
    assert.strictEqual(preserveRule("Directory", "Directory", false, false), "continue-directory")
    assert.strictEqual(preserveRule("Directory", "File", false, false), "next")
  })

  it("the report is derived from the executed decisions only", () => {
    const d = (action: ExecutedDecision["action"], from: string, to: string, outcome: ExecutedDecision["outcome"] = "done"): ExecutedDecision =>
      ({ action, from, to, why: "w", outcome, ...(outcome === "failed" ? { error: "boom" } : {}) })
    const decisions = [
      d("merge-directory", "backups", "state/backups/config"),
      d("move", "backups/a", "state/backups/config/a"),
      d("remove-duplicate", "backups/b", "state/backups/config/b"),
      d("preserve-conflict", "backups/c", "state/migration-conflicts/backups/c"),
      d("remove-duplicate", "backups/e", "state/migration-conflicts/backups/e"),
      d("merge-directory", "backups/d", "state/backups/config/d"),
      d("move", "backups/d/x", "state/backups/config/d/x", "failed"),
      d("move", "tmp", "state/legacy-layout/tmp", "skipped"),
      d("refuse", "auto-learn", "state/legacy-layout/auto-learn")
    ]
    const report = layoutReportOf(decisions, true)
    assert.deepStrictEqual(report.moved, ["backups/a", "backups/b"])
    assert.deepStrictEqual(report.merged, ["backups"])
    assert.deepStrictEqual(report.conflicts, [
      { from: "backups/c", to: "state/migration-conflicts/backups/c" },
      { from: "backups/e", to: "state/migration-conflicts/backups/e" }
    ])
    assert.deepStrictEqual(report.errors, [{ _tag: "UnitFailed", path: "backups/d/x", message: "boom" }, { _tag: "UnitFailed", path: "auto-learn", message: "w" }])
    assert.isTrue(report.partial)
    assert.strictEqual(report.decisions, decisions)
    assert.isTrue(isConflictPath("state/migration-conflicts/x"))
    assert.isFalse(isConflictPath("state/migration-conflictsx"))
  })
})
