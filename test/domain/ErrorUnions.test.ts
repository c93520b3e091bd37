/**
 * docs/errors.md "Errors": the errno table a person reads is the one the code maps with; the one error union and its
 * guard are exported from the root as from the Promise facade (the same list); every service names its
 * errors, and each name is exactly what its methods fail with (checked by the compiler: `npx tsc` fails on a
 * union that names too much or too little).
 */
import { assert, describe, it } from "@effect/vitest"
import type { Effect } from "effect"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { ERRNO_REASONS, FileSystemErrorReason, reasonOfErrno } from "../../src/domain/Errors.js"
import * as Root from "../../src/index.js"
import * as Facade from "../../src/promise.js"
import type { StateBackups, StateBackupsError } from "../../src/services/StateBackups.js"
import type { TierStorage, TierStorageError, Tiers } from "../../src/services/TierStorage.js"
import type { WorkRuns, WorkRunsError } from "../../src/services/WorkRuns.js"

const ERRORS_PAGE = fs.readFileSync(fileURLToPath(new URL("../../docs/errors.md", import.meta.url)), "utf8")

/** The rows of the errno table of docs/errors.md (`| reason | errno | means |`), as written. */
const errnoTable = (): Array<{ reason: string; errnos: Array<string> }> => {
  const lines = ERRORS_PAGE.split("\n")
  const header = lines.findIndex((l) => /^\| reason \| errno \| means \|$/.test(l.trim()))
  assert.isAbove(header, -1, "docs/errors.md \"Errors\" has the errno table")
  const rows: Array<{ reason: string; errnos: Array<string> }> = []
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith("|")) break
    const [reason, errnos] = line.split("|").slice(1, 3).map((c) => c.trim())
    rows.push({ reason: reason!.replace(/`/g, ""), errnos: [...errnos!.matchAll(/`(E[A-Z]+)`/g)].map((m) => m[1]!) })
  }
  return rows
}

describe("docs/errors.md \"Errors\" and the code agree", () => {
  it("the errno table is ERRNO_REASONS, and it lists every reason once", () => {
    const rows = errnoTable()
    const fromReadme: Record<string, string> = {}
    for (const row of rows) for (const errno of row.errnos) fromReadme[errno] = row.reason
    assert.deepStrictEqual(fromReadme, { ...ERRNO_REASONS })
    assert.deepStrictEqual(rows.map((r) => r.reason).sort(), [...FileSystemErrorReason.literals].sort())
    for (const [errno, reason] of Object.entries(fromReadme)) assert.strictEqual(reasonOfErrno(errno), reason, errno)
    // "any other": unlisted codes, and names an object answers by inheritance, are Unknown.
    for (const other of ["EIO", "EROFS", "constructor", "toString", ""]) assert.strictEqual(reasonOfErrno(other), "Unknown", other)
  })
})

describe("one error union, exported from the root as from the facade", () => {
  it("StorageError and isStorageError come from pi-agent-storage too, the same list", () => {
    assert.strictEqual(Root.isStorageError, Facade.isStorageError)
    const tags = Root.StorageError.members.map((m) => m._tag)
    for (const tag of ["StateUnreadable", "ConfigUnreadable", "RunBusy", "SnapshotCorrupt", "ProfileBusy"]) assert.include(tags, tag)
    assert.isTrue(Root.isStorageError(new Root.RunBusy({ path: "/r", attempts: 8 })))
    // A cause is not a failure of its own: not in the union.
    assert.isFalse(Root.isStorageError(new Root.DecodeFailure({ stage: "json", detail: "x" })))
  })
})

// ---- each service's union is exactly what its methods fail with (compile time) ------------------------

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
type ErrorOf<F> = F extends (...args: ReadonlyArray<never>) => Effect.Effect<unknown, infer E, unknown> ? E : never

declare const tiers: Tiers
type TierMethodErrors =
  | ErrorOf<TierStorage["Type"]["open"]>
  | ErrorOf<TierStorage["Type"]["extensionContext"]>
  | ErrorOf<typeof tiers.cache.ensure<never, never>>
  | ErrorOf<Tiers["cache"]["clear"]>
  | ErrorOf<Tiers["state"]["read"]>
  | ErrorOf<Tiers["state"]["write"]>
  | ErrorOf<Tiers["config"]["get"]>
  | ErrorOf<Tiers["config"]["set"]>
  | ErrorOf<Tiers["config"]["delete"]>
  | ErrorOf<Tiers["config"]["writeFile"]>
  | ErrorOf<Tiers["config"]["readFile"]>

type BackupMethodErrors = {
  [K in "create" | "list" | "verify" | "forget" | "restore"]: ErrorOf<StateBackups["Type"][K]>
}["create" | "list" | "verify" | "forget" | "restore"]

type WorkRunsMethodErrors = {
  [K in "acquire" | "getProcessWorkRun" | "prune" | "removeRuns"]: ErrorOf<WorkRuns["Type"][K]>
}["acquire" | "getProcessWorkRun" | "prune" | "removeRuns"]

const exact = {
  TierStorageError: true satisfies Equals<TierStorageError, TierMethodErrors>,
  StateBackupsError: true satisfies Equals<StateBackupsError, BackupMethodErrors>,
  WorkRunsError: true satisfies Equals<WorkRunsError, WorkRunsMethodErrors>
}

describe("each service names its errors", () => {
  it("TierStorageError, StateBackupsError and WorkRunsError are exactly their methods' errors (tsc checks the types)", () => {
    assert.deepStrictEqual(Object.keys(exact), ["TierStorageError", "StateBackupsError", "WorkRunsError"])
  })
})

