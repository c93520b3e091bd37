/**
 * The dashboard API's report types as Schemas (docs/dashboard.md "Dashboard"): the same reports the CLI's `--json` prints,
 * so one source of truth. Each Schema below is pinned to the TypeScript type the library's service returns by
 * a compile-time identity check (`same<…>()`): a field added to a report and not here (or the reverse) stops
 * the typecheck, and test/dashboard/schemas.test.ts decodes the CLI's real `--json` output with them, refusing
 * any field they do not know. The dashboard's own views (the storage map, the growth series, the prune plan)
 * are defined here too.
 */
import * as Schema from "effect/Schema"
import type { DoctorReport as DoctorReportType, Finding as FindingType } from "../domain/Findings.js"
import { FileSystemErrorReason, UnsafeRootReason } from "../domain/Errors.js"
import { FINDING_CODES } from "../domain/Findings.js"
import { StoppedBy } from "../domain/StoppedBy.js"
import { PruneReport } from "../domain/PruneReport.js"
import { ConfigSkip, InventoryProblem, SnapshotCreateProblem, SnapshotSkip, UnparsableShard, VerifyProblem } from "../domain/ReportProblems.js"
import { UsageRecord } from "../domain/UsageHistory.js"
import type { DiffResult as DiffResultType, HistoryStatus as HistoryStatusType, LogEntry as LogEntryType, SnapshotResult as ConfigSnapshotType } from "../services/ConfigHistory.js"
import type { InventoryReport as InventoryReportType, RunList as RunListType } from "../services/Inventory.js"
import type { StatusDocument as StatusDocumentType } from "../services/internal/statusDocument.js"
import { LastVerify } from "../services/StateBackups.js"
import type { CreateResult as CreateResultType, LastVerifyRead as LastVerifyReadType, SnapshotSummary as SnapshotSummaryType, VerifyResult as VerifyResultType } from "../services/StateBackups.js"
import type { MapLevel as MapLevelType } from "../services/StorageMap.js"
import type { ProfileView as ProfileViewType } from "../services/UserProfile.js"
import type { UsageHistoryView as UsageHistoryViewType } from "../services/UsageHistory.js"
import type { RemoveRunOutcome as RemoveRunOutcomeType } from "../services/WorkRuns.js"

/** Compile-time: `A` and `B` are the same type (readonly-ness and optionality included). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
const same = <A, B>(..._proof: Same<A, B> extends true ? [] : [never]): void => undefined

const Int = Schema.Number
const Severity = Schema.Literal("info", "warning", "error")

// ---------------------------------------------------------------------------------------------- status

export const Size = Schema.Struct({ bytes: Int, apparentBytes: Int, entries: Int, complete: Schema.Boolean, measured: Schema.Boolean })

export const TenantSummary = Schema.Struct({
  category: Schema.String,
  tenant: Schema.String,
  runs: Int,
  active: Int,
  inactive: Int,
  unowned: Int,
  size: Size,
  oldestLastUsedAt: Schema.NullOr(Int),
  truncated: Schema.Boolean
})

export const ExtensionSummary = Schema.Struct({ namespace: Schema.String, config: Schema.NullOr(Size), state: Schema.NullOr(Size), cache: Schema.NullOr(Size) })

export const WebExtensionSummary = Schema.Struct({
  extId: Schema.String,
  path: Schema.String,
  config: Schema.NullOr(Size),
  state: Schema.NullOr(Size),
  cache: Schema.NullOr(Size)
})

const inventoryFields = {
  agentDir: Schema.String,
  linkedFrom: Schema.NullOr(Schema.String),
  exists: Schema.Boolean,
  notADirectory: Schema.NullOr(Schema.String),
  workRoot: Schema.String,
  scannedAt: Int,
  tenants: Schema.Array(TenantSummary),
  extensions: Schema.Array(ExtensionSummary),
  webDataRoot: Schema.String,
  webExtensions: Schema.Array(WebExtensionSummary),
  truncated: Schema.Boolean,
  incomplete: Schema.Boolean,
  stoppedBy: Schema.Array(StoppedBy),
  errors: Schema.Array(InventoryProblem)
}
export const InventoryReport = Schema.Struct(inventoryFields)
same<typeof InventoryReport.Type, InventoryReportType>()

/** `pi-storage status --json`. */
export const StatusDocument = Schema.Struct({
  ...inventoryFields,
  source: Schema.Literal("option", "env", "default"),
  webDataRootSource: Schema.Literal("option", "env", "dev-instance", "default"),
  doctor: Schema.Struct({
    findings: Int,
    bySeverity: Schema.Struct({ info: Int, warning: Int, error: Int }),
    truncated: Schema.Boolean,
    needsAttention: Schema.Boolean
  }),
  walker: Schema.Struct({ kind: Schema.Literal("native", "portable"), why: Schema.optional(Schema.String) })
})
same<Omit<typeof StatusDocument.Type, "doctor">, Omit<StatusDocumentType, "doctor">>()
same<typeof StatusDocument.Type["doctor"]["bySeverity"][keyof typeof StatusDocument.Type["doctor"]["bySeverity"]], number>()

// ---------------------------------------------------------------------------------------------- runs

export const Holder = Schema.Struct({ host: Schema.String, pid: Int, since: Schema.NullOr(Int) })

export const RunListing = Schema.Struct({
  category: Schema.String,
  tenant: Schema.String,
  runId: Schema.String,
  path: Schema.String,
  kind: Schema.Literal("generated", "named"),
  state: Schema.Literal("active", "released", "idle"),
  createdAt: Int,
  releasedAt: Schema.NullOr(Int),
  lastUsedAt: Int,
  leases: Int,
  holders: Schema.Array(Holder),
  size: Size
})

/** A work root, category or tenant a listing did not look into, and why (`RefusedTarget` in services/Inventory.ts). */
export const RefusedTarget = Schema.Struct({
  path: Schema.String,
  what: Schema.String,
  category: Schema.String,
  tenant: Schema.String,
  type: Schema.String,
  reason: UnsafeRootReason,
  detail: Schema.String
})

export const UnownedListing = Schema.Struct({ category: Schema.String, tenant: Schema.String, name: Schema.String, path: Schema.String, why: Schema.String })

/** `pi-storage work ls --json`. */
export const RunList = Schema.Struct({
  agentDir: Schema.String,
  linkedFrom: Schema.NullOr(Schema.String),
  notADirectory: Schema.NullOr(Schema.String),
  scannedAt: Int,
  runs: Schema.Array(RunListing),
  unowned: Schema.Array(UnownedListing),
  truncated: Schema.Boolean,
  incomplete: Schema.Boolean,
  stoppedBy: Schema.Array(StoppedBy),
  errors: Schema.Array(InventoryProblem),
  notListed: Schema.Array(RefusedTarget),
  missing: Schema.optional(Schema.Literal("category", "tenant"))
})
same<typeof RunList.Type, RunListType>()

/** `pi-storage work prune CATEGORY/TENANT --dry-run --json`. */
export { PruneReport }

/** What deleting one chosen run did (`WorkRuns.removeRuns`, `pi-storage work rm`). */
export const RemoveRunOutcome = Schema.Union(
  Schema.TaggedStruct("Removed", { runId: Schema.String }),
  Schema.TaggedStruct("Held", { runId: Schema.String, holders: Schema.Array(Holder), why: Schema.String }),
  Schema.TaggedStruct("Missing", { runId: Schema.String }),
  Schema.TaggedStruct("Unowned", { runId: Schema.String, why: Schema.String }),
  Schema.TaggedStruct("Skipped", { runId: Schema.String, why: Schema.String }),
  Schema.TaggedStruct("Unreadable", { runId: Schema.String, reason: FileSystemErrorReason, why: Schema.String })
)
same<typeof RemoveRunOutcome.Type, RemoveRunOutcomeType>()

/** A prune plan as the page shows it: the dry run and the id that names exactly it. */
export const PrunePlanView = Schema.Struct({
  category: Schema.String,
  tenant: Schema.String,
  planId: Schema.String,
  report: PruneReport
})
export type PrunePlanView = typeof PrunePlanView.Type

export const PruneRequest = Schema.Struct({ category: Schema.String, tenant: Schema.String, planId: Schema.String })

/** The plan was still the one shown: its runs were deleted (each under the cleanup protocol). */
export const PruneApplied = Schema.TaggedStruct("Applied", {
  planId: Schema.String,
  /** One per run of the plan, in its order. */
  outcomes: Schema.Array(RemoveRunOutcome)
})

/** The plan changed since the page showed it: nothing was removed; `plan` is the plan as it is now. */
export const PlanChanged = Schema.TaggedStruct("PlanChanged", { message: Schema.String, plan: PrunePlanView })

/** What applying a plan did: an answer, not an error, either way (the page shows the new plan). */
export const PruneResult = Schema.Union(PruneApplied, PlanChanged)

// ---------------------------------------------------------------------------------------------- protection

export const SnapshotSummary = Schema.Struct({
  id: Schema.String,
  createdAt: Int,
  label: Schema.optional(Schema.String),
  path: Schema.String,
  files: Int,
  bytes: Int,
  apparentBytes: Int,
  uniqueBytes: Int,
  uniqueApparentBytes: Int,
  scope: Schema.Struct({ agentDir: Schema.String, webDataRoot: Schema.NullOr(Schema.String), roots: Schema.Array(Schema.String) })
})
same<typeof SnapshotSummary.Type, SnapshotSummaryType>()

/** `pi-storage backup create --json`. */
export const CreateResult = Schema.Struct({
  id: Schema.String,
  createdAt: Int,
  scope: Schema.Struct({ agentDir: Schema.String, webDataRoot: Schema.String, roots: Schema.Array(Schema.String) }),
  files: Int,
  bytes: Int,
  copiedFiles: Int,
  copiedBytes: Int,
  linkedFiles: Int,
  linkFallbacks: Int,
  changedDuringBackup: Schema.Array(Schema.String),
  skipped: Schema.Array(SnapshotSkip),
  problems: Schema.Array(SnapshotCreateProblem),
  sqliteLive: Schema.Array(Schema.String),
  removedLeftovers: Schema.Array(Schema.String)
})
same<typeof CreateResult.Type, CreateResultType>()

/** `pi-storage backup verify --json`. */
export const VerifyResult = Schema.Struct({
  ok: Schema.Boolean,
  checked: Int,
  checkedBytes: Int,
  corrupt: Schema.Array(Schema.String),
  missing: Schema.Array(Schema.String),
  problems: Schema.Array(VerifyProblem),
  complete: Schema.Boolean
})
same<typeof VerifyResult.Type, VerifyResultType>()

export const LastVerifyRead = Schema.Struct({ last: Schema.NullOr(LastVerify), problem: Schema.NullOr(Schema.String) })
same<typeof LastVerifyRead.Type, LastVerifyReadType>()

/** How well a tier is protected (docs/dashboard.md "Dashboard"): what it holds, what the newest snapshot or revision covers. */
export const Coverage = Schema.Struct({
  tier: Schema.Literal("config", "state", "cache", "work"),
  /** "protected" (all of it is in the newest snapshot / revision), "partly", "unprotected", or "not-backed-up" by design. */
  status: Schema.Literal("protected", "partly", "unprotected", "not-backed-up"),
  summary: Schema.String,
  /** Extensions whose state the newest snapshot lacks (state), files changed since the newest revision (config). */
  uncovered: Schema.Array(Schema.String),
  /** When the newest snapshot or revision was made (epoch ms), `null` when there is none. */
  newestAt: Schema.NullOr(Int)
})

export const ProtectionView = Schema.Struct({
  backupRoot: Schema.String,
  /** `pi-storage backup list --json`. */
  snapshots: Schema.Array(SnapshotSummary),
  /** Why the snapshots could not be listed, `null` when they were. */
  snapshotsProblem: Schema.NullOr(Schema.String),
  lastVerify: LastVerifyRead,
  coverage: Schema.Array(Coverage),
  /** The command that restores a snapshot (the page never restores). */
  restoreCommand: Schema.String
})

/** `pi-storage config log --json` (one entry). */
export const LogEntry = Schema.Struct({ revision: Schema.String, date: Schema.String, message: Schema.String, changed: Schema.Array(Schema.String) })
same<typeof LogEntry.Type, LogEntryType>()

/** `pi-storage config status --json`. */
export const HistoryStatus = Schema.Struct({
  head: Schema.NullOr(Schema.String),
  dirty: Schema.Boolean,
  interrupted: Schema.NullOr(Schema.Struct({
    message: Schema.String,
    startedAt: Int,
    lastGoodRevision: Schema.NullOr(Schema.String),
    webRoot: Schema.optional(Schema.String),
    unknown: Schema.optional(Schema.Literal(true)),
    blocked: Schema.optional(Schema.Literal(true))
  }))
})
same<typeof HistoryStatus.Type, HistoryStatusType>()

/** `pi-storage config diff --json`. */
export const DiffResult = Schema.Struct({ files: Schema.Array(Schema.String), patch: Schema.String })
same<typeof DiffResult.Type, DiffResultType>()

/** `pi-storage config snapshot --json`. */
export const ConfigSnapshotResult = Schema.Struct({
  revision: Schema.NullOr(Schema.String),
  roots: Schema.Struct({ agentDir: Schema.String, webDataRoot: Schema.String }),
  changed: Schema.Array(Schema.String), skipped: Schema.Array(ConfigSkip) })
same<typeof ConfigSnapshotResult.Type, ConfigSnapshotType>()

export const ConfigView = Schema.Struct({
  dir: Schema.String,
  status: HistoryStatus,
  log: Schema.Array(LogEntry),
  /** The command that rolls back to a revision (`REV` stands for it; the page never rolls back). */
  rollbackCommand: Schema.String
})

// ---------------------------------------------------------------------------------------------- doctor and profile

const FindingCode = Schema.Literal(...(Object.keys(FINDING_CODES) as [keyof typeof FINDING_CODES, ...Array<keyof typeof FINDING_CODES>]))

export const Finding = Schema.Struct({ severity: Severity, code: FindingCode, path: Schema.String, message: Schema.String, fix: Schema.optional(Schema.String) })
same<typeof Finding.Type, FindingType>()

/** `pi-storage doctor --json`. */
export const DoctorReport = Schema.Struct({ findings: Schema.Array(Finding), scanned: Int, truncated: Schema.Boolean, stoppedBy: Schema.Array(StoppedBy), webDataRoot: Schema.String })
same<typeof DoctorReport.Type, DoctorReportType>()

/** `pi-storage memory show --json`. */
export const ProfileView = Schema.Struct({
  text: Schema.String,
  entries: Schema.Array(Schema.Struct({ id: Schema.String, text: Schema.String, shard: Schema.NullOr(Schema.String) })),
  sharded: Schema.Boolean,
  bytes: Int,
  budgetBytes: Int,
  unparsable: Schema.Array(UnparsableShard)
})
same<typeof ProfileView.Type, ProfileViewType>()

// ---------------------------------------------------------------------------------------------- map and growth

export const NodeSize = Schema.Struct({ bytes: Int, apparentBytes: Int, entries: Int, complete: Schema.Boolean })

export const MapNode = Schema.Struct({
  id: Schema.String,
  label: Schema.String,
  kind: Schema.Literal("root", "tier", "category", "tenant", "run", "unowned", "quarantined", "entry"),
  tier: Schema.NullOr(Schema.Literal("config", "state", "cache", "work", "other")),
  root: Schema.NullOr(Schema.Literal("agent", "web")),
  path: Schema.NullOr(Schema.String),
  size: NodeSize,
  expandable: Schema.Boolean,
  state: Schema.NullOr(Schema.Literal("active", "released", "idle", "quarantined", "unowned")),
  holders: Schema.Array(Holder),
  mark: Schema.NullOr(Schema.Struct({ count: Int, severity: Severity }))
})

export const MapLevel = Schema.Struct({
  node: MapNode,
  children: Schema.Array(MapNode),
  breadcrumb: Schema.Array(Schema.Struct({ id: Schema.String, label: Schema.String })),
  complete: Schema.Boolean,
  problems: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })),
  scannedAt: Int,
  roots: Schema.Struct({ agentDir: Schema.String, webDataRoot: Schema.NullOr(Schema.String) })
})
same<typeof MapLevel.Type, MapLevelType>()

export const GrowthView = Schema.Struct({
  path: Schema.String,
  records: Schema.Array(UsageRecord),
  problem: Schema.NullOr(Schema.Struct({ line: Int, why: Schema.String })),
  /** The window asked for, in days, and the server's now (epoch ms). */
  days: Int,
  now: Int
})
same<Omit<typeof GrowthView.Type, "days" | "now">, UsageHistoryViewType>()

// ---------------------------------------------------------------------------------------------- session

export const SessionInfo = Schema.Struct({
  readOnly: Schema.Boolean,
  agentDir: Schema.String,
  webDataRoot: Schema.NullOr(Schema.String),
  /** `pi-storage` with the flags that name this dashboard's agent dir (for the commands the page shows). */
  cli: Schema.String,
  version: Schema.String
})
