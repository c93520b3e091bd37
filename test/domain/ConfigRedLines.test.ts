import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import {
  configEntryViolation,
  configFileNameViolation,
  configFileSizeViolation,
  DEFAULT_CONFIG_BUDGET_BYTES,
  isDatabaseFileName,
  isLogFileName
} from "../../src/domain/ConfigRedLines.js"

describe("config red lines (one rule for the tier, the doctor and the history)", () => {
  it("databases and logs by name, environments by directory name, files by size", () => {
    for (const db of ["a.s3db", "a.sl3", "x.db", "x.sqlite3-wal", "x.db-journal", "x.ldb", "X.MDB"]) {
      assert.strictEqual(configEntryViolation({ name: db, type: "File" })?.rule, "database", db)
    }
    for (const log of ["a.log", "a.log.1", "a.log.1.gz", "a.log.gz", "trace.out", "build.err", "A.LOG"]) {
      assert.strictEqual(configEntryViolation({ name: log, type: "File" })?.rule, "log", log)
    }
    for (const dir of [".venv", "venv", "node_modules", "__pycache__", "site-packages"]) {
      assert.strictEqual(configEntryViolation({ name: dir, type: "Directory" })?.rule, "virtualenv", dir)
    }
    // A directory is judged by its name as a directory only: `x.db/` is a folder of settings, not a database.
    assert.isNull(configEntryViolation({ name: "x.db", type: "Directory" }))
    assert.isNull(configEntryViolation({ name: "venv", type: "File" }))
    for (const ok of ["settings.json", "debug.login", "dbx.json", "output", "catalog", "a.logx"]) {
      assert.isNull(configEntryViolation({ name: ok, type: "File", size: 10 }), ok)
    }
    assert.strictEqual(configEntryViolation({ name: "big.bin", type: "File", size: DEFAULT_CONFIG_BUDGET_BYTES + 1 })?.rule, "size-budget")
    assert.isNull(configEntryViolation({ name: "fits.bin", type: "File", size: DEFAULT_CONFIG_BUDGET_BYTES }))
  })

  it.prop("a file's verdict is its name's verdict, else its size's", [
    fc.stringMatching(/^[a-z.]{1,8}\.(json|db|log|out|txt|sqlite|log\.2\.gz)$/), fc.nat(4096), fc.nat(4096)
  ], ([name, size, budget]) => {
    const v = configEntryViolation({ name, type: "File", size }, budget)
    const byName = isDatabaseFileName(name) || isLogFileName(name)
    return byName
      ? v !== null && v === configFileNameViolation(name)
      : (v === null) === (size <= budget) && (v === null || v.rule === configFileSizeViolation(size, budget)?.rule)
  })
})
