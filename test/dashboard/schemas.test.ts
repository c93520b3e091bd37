/**
 * One source of truth (docs/dashboard.md "Dashboard"): the dashboard API's Schemas decode what the built CLI's `--json`
 * prints for the same reports, refusing any field they do not know (`onExcessProperty: "error"`). The
 * compile-time identity checks in src/dashboard/schemas.ts pin the types; this pins the bytes a person's
 * scripts read, on a seeded agent dir with something in every report.
 */
import { spawnSync } from "node:child_process"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { assert, describe, it } from "@effect/vitest"
import * as S from "../../src/dashboard/schemas.js"
import { PruneReport } from "../../src/domain/PruneReport.js"
import { CLI, seedAgentDir } from "../support/dashboard.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()

const cli = (agentDir: string, args: ReadonlyArray<string>, exits: ReadonlyArray<number> = [0]): unknown => {
  const r = spawnSync(process.execPath, [CLI, "--agent-dir", agentDir, ...args], { encoding: "utf8", timeout: 120_000 })
  assert.include(exits, r.status, `pi-storage ${args.join(" ")}: exit ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

const decodes = <A, I>(schema: Schema.Schema<A, I>, value: unknown, what: string) => {
  const decoded = Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })(value)
  if (Either.isLeft(decoded)) assert.fail(`${what}: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`)
}

describe("the dashboard's Schemas against the CLI's --json", () => {
  it("status, work ls, work prune --dry-run, doctor, backup create/list/verify, config snapshot/log/status, memory show", () => {
    const root = scratch("pi-storage-ui-schemas-")
    const { agentDir, backupRoot } = seedAgentDir(root)
    decodes(S.StatusDocument, cli(agentDir, ["status", "--json"]), "status --json")
    decodes(S.RunList, cli(agentDir, ["work", "ls", "--json"]), "work ls --json")
    const plan = cli(agentDir, ["work", "prune", "tools/bash", "--dry-run", "--json"]) as { removed: ReadonlyArray<unknown> }
    assert.isAbove(plan.removed.length, 0)
    decodes(PruneReport, plan, "work prune --dry-run --json")
    // doctor --json is the DoctorReport (which names the web data root it checked) with the agent dir in front.
    const { agentDir: dir, ...doctor } = cli(agentDir, ["doctor", "--json"], [0, 1]) as Record<string, unknown>
    assert.strictEqual(dir, agentDir)
    assert.isString(doctor.webDataRoot)
    assert.isAbove((doctor.findings as ReadonlyArray<unknown>).length, 0)
    decodes(S.DoctorReport, doctor, "doctor --json")
    decodes(S.CreateResult, cli(agentDir, ["backup", "create", "--root", backupRoot, "--json"]), "backup create --json")
    const list = cli(agentDir, ["backup", "list", "--root", backupRoot, "--json"]) as ReadonlyArray<unknown>
    assert.lengthOf(list, 1)
    decodes(Schema.Array(S.SnapshotSummary), list, "backup list --json")
    decodes(S.VerifyResult, cli(agentDir, ["backup", "verify", "--root", backupRoot, "--json"]), "backup verify --json")
    decodes(S.ConfigSnapshotResult, cli(agentDir, ["config", "snapshot", "--json"]), "config snapshot --json")
    const log = cli(agentDir, ["config", "log", "--json"]) as ReadonlyArray<unknown>
    assert.lengthOf(log, 1)
    decodes(Schema.Array(S.LogEntry), log, "config log --json")
    decodes(S.HistoryStatus, cli(agentDir, ["config", "status", "--json"]), "config status --json")
    decodes(S.ProfileView, cli(agentDir, ["memory", "show", "--json"]), "memory show --json")
  }, 300_000)

  it("a field the Schemas do not know is refused (the check can fail)", () => {
    const root = scratch("pi-storage-ui-schemas-extra-")
    const { agentDir } = seedAgentDir(root)
    const status = cli(agentDir, ["status", "--json"]) as Record<string, unknown>
    const decoded = Schema.decodeUnknownEither(S.StatusDocument, { onExcessProperty: "error" })({ ...status, surprise: 1 })
    assert.isTrue(Either.isLeft(decoded))
  }, 120_000)
})
