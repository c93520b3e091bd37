/**
 * The doctor (docs/migrations.md "Doctor"): the read model's scan of the agent dir (and, optionally, of the web host's
 * extension data root) interpreted by the pure `findingsOf`, plus the findings of the user profile, the config
 * history and the state backups. It never moves, writes or deletes anything, whatever it finds.
 *
 * Root entries are seen through `classifyRootEntry`, work roots through WR10's `rootSafetyProblems`, runs,
 * leases and markers through the same facts the pruner plans with (src/services/internal/readModel.ts).
 */
import * as NodePath from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { agentPaths, runManifestPath } from "../domain/AgentPaths.js"
import type { ConfigRedLineRule } from "../domain/ConfigRedLines.js"
import { durationWords } from "../domain/DurationWords.js"
import { agentDirFlag, shellWord } from "../domain/FixCommands.js"
import { aFileType, fileTypeWord } from "../domain/FileTypeWords.js"
import { type DoctorReport, type Finding, type FindingCode, findingSeverity, type Severity } from "../domain/Findings.js"
import { displayPath } from "../domain/MigrationPlan.js"
import type { UnknownHint } from "../domain/RootEntries.js"
import type { RootSafetyProblem } from "../domain/RootSafety.js"
import { modeString, writableBy } from "../domain/RootSafety.js"
import { misnamedWhy } from "../domain/Segment.js"
import { classifyWebDataEntry } from "../domain/WebDataEntries.js"
import { scanEntriesStopped } from "../domain/StoppedBy.js"
import { STALE_STAGING_MS } from "../domain/TenantEntries.js"
import { AgentDir, resolveRootLink } from "./AgentDir.js"
import { FileSystem, type WalkBudget } from "./FileSystem.js"
import { Host } from "./Host.js"
import { type Deps, readOnlyDepsFromContext } from "./internal/deps.js"
import { configHistoryFindings, webRootRecordFindings } from "./internal/configSentinel.js"
import {
  type AgentDirFacts,
  DEFAULT_SCAN_MAX_ENTRIES,
  isTierName,
  type MarkerFact,
  type SafetyFact,
  scanAgentDir,
  type TenantFacts,
  type TenantItem
} from "./internal/readModel.js"
import { isActive } from "./internal/runFacts.js"
import type { FindingDraft } from "../domain/FindingDraft.js"
import { leaseFinding, manifestTimeFindings, markerFinding } from "./internal/unreadableFindings.js"
import { userProfileFindings } from "./internal/userProfileFindings.js"
import { StateBackups } from "./StateBackups.js"
import { webDataRootOf } from "./internal/webDataRoot.js"

export interface DoctorOptions {
  /** Entries examined before the scan stops (`truncated`); default 100,000. */
  readonly maxEntries?: number
  /**
   * The web host's extension data root (`data/`) checked for DR2: else `$PI_WEB_DATA_DIR`, else
   * `~/.pi/web/data` (TD1, `resolveWebDataRoot`: the root the tiers write under, the backups cover).
   */
  readonly webDataRoot?: string
  /** Measure each tenant within this budget while it is read (`Status`: the facts then carry its sizes). */
  readonly tenantSizes?: WalkBudget | undefined
}

export const DEFAULT_DOCTOR_MAX_ENTRIES = DEFAULT_SCAN_MAX_ENTRIES
/**
 * A fix that is a command is written in backticks, so it can be copied and is run by a test
 * (test/cli/doctorFixes.test.ts) from another directory: every path in it is absolute and `pi-storage …`
 * names the agent dir the doctor checked (domain/FixCommands.ts).
 */
const migrateFix = (agentDir: string) => `run \`pi-storage ${agentDirFlag(agentDir)} migrate\` (Migration.run) to move it to its canonical place`

/** What `findingsOf` needs besides the facts: the bounds and identity its prose names. */
export interface FindingContext {
  /** How long an unreadable marker or lease is held (the deps' `staleUnreadableMs`). */
  readonly staleUnreadableMs: number
  /** The current user (for a `chown` fix); `null` where ownership is not checked. */
  readonly uid: number | null
}

/** Collects findings with paths shown relative to the agent dir. */
class Findings {
  readonly list: Array<Finding> = []
  constructor(readonly agentDir: string) {}

  display(p: string): string {
    const rel = NodePath.relative(this.agentDir, p)
    return rel.startsWith("..") || NodePath.isAbsolute(rel) ? p : displayPath(this.agentDir, p)
  }

  add(code: FindingCode, path: string, message: string, fix?: string, severity?: Severity): void {
    this.list.push({
      severity: severity ?? findingSeverity(code),
      code,
      path: this.display(path),
      message,
      ...(fix !== undefined ? { fix } : {})
    })
  }

  draft(draft: FindingDraft | undefined): void {
    if (draft === undefined) return
    // One entry in the way of several of the library's directories (a `state` link to a file) is one finding.
    if (draft.code === "library-path-blocked" && this.list.some((f) => f.code === draft.code && f.path === this.display(draft.path))) return
    this.add(draft.code, draft.path, draft.message, draft.fix)
  }
}

// ---------------------------------------------------------------------------------------------------------
// DR1: the agent dir root and state/

const rootFindings = (out: Findings, facts: AgentDirFacts) => {
  for (const entry of facts.entries) {
    const c = entry.classification
    switch (c._tag) {
      case "Canonical": {
        const want = c.entry.kind === "file" ? "File" : "Directory"
        // A canonical name that is a symlink is the user's choice of disk (silent); the wrong kind is not.
        if (entry.type !== want && entry.type !== "SymbolicLink") {
          out.add(
            "canonical-kind-mismatch",
            entry.path,
            `${entry.name} should be a ${c.entry.kind} (${c.entry.description}) but is ${aFileType(entry.type)}`,
            `move it aside and let the library recreate ${entry.name}`
          )
        }
        break
      }
      case "Legacy": {
        out.add(c.unit.kind === "sidecar" ? "legacy-sidecar" : "legacy-entry", entry.path, `legacy ${entry.name} belongs at ${c.unit.destination.join("/")}`, migrateFix(out.agentDir))
        break
      }
      case "MigrationMarker": {
        const judged = entry.marker
        if (judged === undefined) break
        if (c.role === "reclaim-lock") {
          // Held for microseconds by a reclaimer of a dead migration marker or a probe of the file system's clock.
          if (judged.alive && judged.unreadable !== true) {
            out.add("migration-marker", entry.path, `the migration marker's reclaim lock is held (${judged.detail})`, undefined, "info")
          } else {
            out.add("migration-marker", entry.path, `leftover reclaim lock of the migration marker (${judged.detail})`, "delete it if no migration is running")
          }
          break
        }
        if (judged.alive && judged.unreadable !== true) {
          out.add("migration-marker", entry.path, `a migration is running (${judged.detail})`, undefined, "info")
        } else {
          out.add(
            "migration-marker",
            entry.path,
            `leftover migration marker (${judged.detail})`,
            "the next migration reclaims a dead owner's marker; delete it if no migration is running"
          )
        }
        break
      }
      case "AtomicWriteLeftover": {
        // Only a regular file is what the library's write leaves; anything else by that name is not its own.
        if (entry.type !== "File") {
          unknownRootEntry(out, entry, "other")
          break
        }
        out.add(
          "atomic-write-leftover",
          entry.path,
          `the library's temp file of an interrupted write of ${c.entry.name} (a crash before the rename; ${c.entry.name} itself is unchanged)`,
          `once no write of ${c.entry.name} is running, run \`rm -f ${shellWord(entry.path)}\``
        )
        break
      }
      case "Unknown": {
        unknownRootEntry(out, entry, c.hint)
        break
      }
    }
  }
}

const unknownRootEntry = (out: Findings, entry: AgentDirFacts["entries"][number], hint: UnknownHint) => {
  const what = hint === "database"
    ? "a database file"
    : hint === "log"
    ? "a log file"
    : hint === "temp"
    ? "a temporary file"
    : `an unknown ${fileTypeWord(entry.type)}`
  out.add(
    "unknown-root-entry",
    entry.path,
    `${what} at the agent dir root: possibly written by an external tool (the library never writes here)`,
    "find the writer; move its data to state/ (durable) or cache/ (rebuildable), or delete it if unneeded"
  )
}

const stateFindings = (out: Findings, facts: AgentDirFacts) => {
  const state = facts.state
  if (state === null || state.info.type !== "Directory") return
  if (writableBy(state.info.mode) === "world") {
    out.add("state-world-writable", state.path, `state/ has mode ${modeString(state.info.mode)}: anyone can change durable state`, `run \`chmod 700 ${shellWord(state.path)}\``)
  }
  if (state.conflicts.length > 0) {
    out.add(
      "migration-conflicts",
      agentPaths(facts.path).migrationConflictsDir,
      `${state.conflicts.length} preserved migration conflict(s) to review: ${state.conflicts.slice(0, 5).join(", ")}`,
      "compare each copy with the live one, keep what you need, then delete state/migration-conflicts/"
    )
  }
}

// ---------------------------------------------------------------------------------------------------------
// work/

/** WR10 as findings: one per problem `rootSafetyProblems` found (the pruner refuses on the first). */
const safetyFindings = (out: Findings, context: FindingContext, safety: SafetyFact, what: string) => {
  for (const problem of safety.problems) out.add("work-root-unsafe", safety.path, safetyMessage(what, safety, problem), safetyFix(out, context, safety, problem))
}

const safetyMessage = (what: string, safety: SafetyFact, problem: RootSafetyProblem): string => {
  switch (problem.reason) {
    case "symlink":
      return `${what} is a symlink; pruning refuses it and the doctor does not follow it`
    case "not-a-directory":
      return `${what} is ${aFileType(safety.info.type)}, not a directory`
    case "foreign-owner":
    case "group-or-world-writable":
      return `${what}: ${problem.detail}`
  }
}

const safetyFix = (out: Findings, context: FindingContext, safety: SafetyFact, problem: RootSafetyProblem): string => {
  const uid = context.uid
  switch (problem.reason) {
    case "symlink":
      return "replace the link with a real directory"
    case "not-a-directory":
      return "move it aside"
    case "foreign-owner":
      return `run \`chown ${uid} ${shellWord(safety.path)}\``
    case "group-or-world-writable":
      return `run \`chmod 700 ${shellWord(safety.path)}\``
  }
}

const markerFindings = (out: Findings, context: FindingContext, marker: MarkerFact) => {
  const judged = marker.judged
  if (judged === undefined) return
  const draft = markerFinding(marker.path, judged, marker.what, context.staleUnreadableMs, marker.nonEmpty)
  if (draft !== undefined) out.draft(draft)
  else if (!judged.alive) out.add("work-dead-marker", marker.path, `${marker.what} of a dead pruner (${judged.detail})`, "the next prune of this tenant reclaims it")
}

const itemFindings = (out: Findings, context: FindingContext, tenant: TenantFacts, item: TenantItem) => {
  const where = `${tenant.category}/${tenant.tenant}`
  switch (item._tag) {
    case "LibraryEntry": {
      const facts = item.facts
      if (facts === null) return
      switch (facts.kind) {
        case "stamp":
          return
        case "marker":
          return markerFindings(out, context, facts.marker)
        case "cleanup":
          for (const marker of facts.markers) markerFindings(out, context, marker)
          return
        case "trash":
          if (facts.entries > 0) {
            out.add(
              "work-unfinished-trash",
              item.path,
              `${facts.entries} quarantined run(s) not yet deleted (an interrupted prune)`,
              `run \`pi-storage ${agentDirFlag(out.agentDir)} work prune ${where}\` to finish deleting them`
            )
          }
          return
        case "staging":
          for (const staged of facts.staged) {
            for (const lease of staged.leases?.leases ?? []) out.draft(leaseFinding(lease, context.staleUnreadableMs))
            if (staged.leases !== null && isActive(staged.leases)) continue
            out.add(
              "work-abandoned-staging",
              staged.path,
              "a run whose creator died before placing it (or is still placing it)",
              `the next prune of this tenant removes it once its creator's lease is proven dead or it is ${durationWords(STALE_STAGING_MS)} old`
            )
          }
          return
        case "misplaced":
          return out.add("work-stray-entry", item.path, `${aFileType(item.type)} among the runs of ${where}; runs are directories`, "move it out of work/")
      }
      return
    }
    case "Unowned": {
      if (item.type !== "Directory") {
        return out.add("work-stray-entry", item.path, `${aFileType(item.type)} among the runs of ${where}; runs are directories`, "move it out of work/")
      }
      out.add(
        "work-unowned-run",
        item.path,
        `directory without a valid ownership manifest (${item.why}); the library never deletes it`,
        "inspect it and delete it by hand if it is not needed"
      )
      if (item.leases !== null) leaseFindings(out, context, item.path, item.leases)
      return
    }
    case "Run": {
      // (The manifest's path is made only for a finding: nearly every run has none.)
      if (item.times.farFuture.length > 0) for (const draft of manifestTimeFindings(runManifestPath(item.path), item.times)) out.draft(draft)
      return leaseFindings(out, context, item.path, item.leases)
    }
  }
}

const leaseFindings = (out: Findings, context: FindingContext, runDir: string, leases: NonNullable<Extract<TenantItem, { _tag: "Unowned" }>["leases"]>) => {
  if (leases.problem !== null) out.add("work-stray-entry", runDir, `lease directory cannot be trusted: ${leases.problem}`, "inspect .leases/ by hand")
  for (const lease of leases.leases) {
    const draft = leaseFinding(lease, context.staleUnreadableMs)
    if (draft !== undefined) out.draft(draft)
    else if (!lease.verdict.alive) out.add("work-dead-lease", lease.path, `dead holder: ${lease.verdict.detail}`, "the next prune of this tenant removes it")
  }
}

/** A category or tenant directory named as the library never names one: the rule `work prune --all` refuses it by. */
const misnamedFinding = (out: Findings, path: string, what: string, name: string) => {
  const why = misnamedWhy(name)
  if (why === null) return
  out.add(
    "work-misnamed-directory",
    path,
    `${what}: ${why}; the library never makes it, and never prunes under it`,
    "move it out of work/ (or rename it to a valid name if it is runs the library should own)"
  )
}

const workFindings = (out: Findings, context: FindingContext, facts: AgentDirFacts) => {
  const work = facts.work
  if (work === null) return
  safetyFindings(out, context, work.root, "work/")
  for (const stray of work.strays) {
    const belongs = stray.where === "work/" ? "category" : "tenant"
    out.add("work-stray-entry", stray.path, `${aFileType(stray.type)} in ${stray.where}, where only ${belongs} directories belong`, "move it out of work/")
  }
  for (const category of work.categories) {
    safetyFindings(out, context, category.safety, `category ${category.name}`)
    misnamedFinding(out, category.path, `category ${category.name}`, category.name)
    for (const tenant of category.tenants) {
      safetyFindings(out, context, tenant.safety, `tenant ${tenant.category}/${tenant.tenant}`)
      misnamedFinding(out, tenant.path, `tenant ${tenant.category}/${tenant.tenant}`, tenant.tenant)
      for (const item of tenant.items?.items ?? []) itemFindings(out, context, tenant, item)
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// DR2: extension data tiers

/** The finding each config red line raises. */
const RED_LINE_FINDING: Record<ConfigRedLineRule, FindingCode> = {
  database: "extension-config-database",
  log: "extension-config-log",
  virtualenv: "extension-config-venv",
  "size-budget": "extension-config-large-file"
}

/** A config tier entry over a red line (a database, a log, a virtualenv, a file over budget): the finding it calls for. */
const redLineFinding = (out: Findings, owner: string, entry: AgentDirFacts["extensionConfig"][number]["config"][number]) => {
  const v = entry.violation
  if (v === null) return
  const what = entry.type === "Directory" ? `${entry.name}/` : entry.name
  out.add(RED_LINE_FINDING[v.rule], entry.path, `${what} under ${owner}'s config/: ${v.detail}`, `move it to ${v.rightTier}/`)
}

/** DR2 for agent extensions: their config tiers, `config/extensions/<ns>/`, by the same red lines. */
const agentExtensionFindings = (out: Findings, facts: AgentDirFacts) => {
  for (const ext of facts.extensionConfig) for (const entry of ext.config) redLineFinding(out, ext.namespace, entry)
}

const webDataFindings = (out: Findings, facts: AgentDirFacts) => {
  for (const link of facts.webData?.links ?? []) {
    // The library's own aside directory as a link is no extension's: a restore refuses it by name (checkAsideDir).
    const entry = classifyWebDataEntry(link.name, "SymbolicLink")
    if (entry._tag === "LibraryDir") continue
    if (entry._tag === "Misnamed") {
      out.add(
        "extension-name-invalid",
        link.path,
        `data/${link.name}, a symlink, is no extension's data directory (${entry.why}): state snapshots and the config history leave it out, so nothing behind it is protected`,
        "rename it to the extension's id, or move what it holds into that extension's tiers"
      )
    } else if (link.leadsToDirectory) {
      out.add(
        "extension-dir-link",
        link.path,
        `data/${link.name} is a symlink: the tiers and state snapshots follow it, the config history does not (its config is not versioned), and a restore of its state refuses to write through it`,
        "keep it if the data lives on another disk on purpose; to have its config versioned, move the directory into place"
      )
    } else {
      out.add(
        "extension-dir-link",
        link.path,
        `data/${link.name} is a symlink that leads to no directory (nothing there, or a file, or a disk not mounted): the extension's tiers cannot open it and nothing of it is snapshotted`,
        "mount the disk it points to, or replace the link with the extension's directory"
      )
    }
  }
  for (const ext of facts.webData?.extensions ?? []) {
    const entry = classifyWebDataEntry(ext.id, "Directory")
    if (entry._tag === "LibraryDir") {
      // The library's own (a restore across filesystems), not an extension: the state-backup finding, not a tier to decide.
      for (const entry of ext.entries) {
        out.add(
          "state-backup-restore-aside",
          NodePath.join(ext.dir, entry.name),
          "live web data a restore moved aside beside the web data root (another filesystem than the agent dir); never deleted by the library",
          "copy back what you need, then delete the directory"
        )
      }
      continue
    }
    if (entry._tag === "Misnamed") {
      out.add(
        "extension-name-invalid",
        ext.dir,
        `data/${ext.id} is no extension's data directory (${entry.why}): state snapshots and the config history leave it out, so nothing in it is protected`,
        "rename it to the extension's id, or move what it holds into that extension's tiers"
      )
    }
    for (const entry of ext.entries) {
      if (!isTierName(entry.name)) {
        out.add(
          "extension-outside-tiers",
          NodePath.join(ext.dir, entry.name),
          `${entry.name} in data/${ext.id}/ is outside config/, state/ and cache/`,
          "decide its tier (if deleted, what does the user lose?) and move it there"
        )
      }
    }
    if (ext.splitState !== null) {
      out.add(
        "extension-split-state",
        ext.splitState,
        `both data/${ext.id}/config/state/ and data/${ext.id}/state/ exist: state writes are split`,
        "merge config/state into state/ with a merge-ledger migration plan (Migration.runPlan), never by overwriting"
      )
    }
    for (const entry of ext.config) redLineFinding(out, ext.id, entry)
    if (ext.conflicts.length > 0) {
      out.add(
        "migration-conflicts",
        ext.conflictsDir,
        `${ext.conflicts.length} preserved migration conflict(s) to review: ${ext.conflicts.slice(0, 5).join(", ")}`,
        `compare each copy with the live one, keep what you need, then delete data/${ext.id}/state/migration-conflicts/`
      )
    }
  }
}

/**
 * DR1, DR2 over the read model: the findings the facts call for, in scan order (root, state/, work/, the
 * extension data root), then what could not be read. Pure.
 */
export const findingsOf = (facts: AgentDirFacts, context: FindingContext): { readonly agentDir: ReadonlyArray<Finding>; readonly webData: ReadonlyArray<Finding>; readonly problems: ReadonlyArray<Finding> } => {
  const agentDir = new Findings(facts.path)
  switch (facts.status._tag) {
    case "Missing":
      agentDir.add("agent-dir-missing", facts.path, "the agent directory does not exist yet")
      break
    case "NotADirectory":
      agentDir.add("agent-dir-not-directory", facts.path, `the agent directory is ${aFileType(facts.status.type)}, not a directory`)
      break
    case "Unreadable":
      agentDir.add("scan-error", facts.path, `could not read: ${facts.status.error.message}`)
      break
    case "Directory":
      rootFindings(agentDir, facts)
      stateFindings(agentDir, facts)
      workFindings(agentDir, context, facts)
      agentExtensionFindings(agentDir, facts)
  }
  const webData = new Findings(facts.path)
  webDataFindings(webData, facts)
  const problems = new Findings(facts.path)
  for (const p of facts.problems) problems.add("scan-error", p.path, `could not read: ${p.error.message}`)
  return { agentDir: agentDir.list, webData: webData.list, problems: problems.list }
}

/** What `doctor` reads besides its ports: the agent dir `AgentDir` resolved, and the state backups' own look. */
interface DoctorInputs {
  readonly deps: Deps
  readonly agentDir: AgentDir["Type"]
  readonly stateBackups: (webDataRoot: string) => Effect.Effect<ReadonlyArray<FindingDraft>>
}

/** The doctor's report and the read model's facts it was judged on (`Status` hands them to the inventory). */
const doctorProgram = (
  inputs: DoctorInputs,
  options?: DoctorOptions
): Effect.Effect<{ readonly report: DoctorReport; readonly facts: AgentDirFacts }> =>
  Effect.gen(function*() {
    const { deps } = inputs
    // AgentDir resolved the agent dir's own root link once; the web data root (TD1's one resolution) here alike.
    const agentDir = inputs.agentDir.path
    const webDataRootGiven = webDataRootOf(deps.host, options?.webDataRoot).path
    const webDataRoot = yield* resolveRootLink(deps.fs, webDataRootGiven)
    const facts = yield* scanAgentDir(deps, agentDir, {
      maxEntries: options?.maxEntries ?? DEFAULT_DOCTOR_MAX_ENTRIES,
      rootEntries: true,
      state: true,
      work: true,
      details: true,
      extensionConfig: true,
      webDataRoot,
      tenantSizes: options?.tenantSizes,
      // Runs with nothing to report (`runIsNoteworthy`: no lease, no lease directory it cannot trust, no
      // far-future stamp) are only counted (TenantItems.tally): the report and `Status` need no more
      // (test/services/NoteworthyRuns.test.ts: the findings of this read are those of a read keeping every run).
      runItems: "noteworthy"
    })
    const found = findingsOf(facts, { staleUnreadableMs: deps.staleUnreadableMs, uid: deps.host.uid })
    const others = new Findings(agentDir)
    if (facts.status._tag === "Directory") {
      for (const f of yield* userProfileFindings(deps, inputs.agentDir.paths)) others.draft(f)
      for (const f of yield* configHistoryFindings(deps, inputs.agentDir.paths.configBackupsDir, agentDir)) others.draft(f)
      for (const f of yield* webRootRecordFindings(deps, inputs.agentDir.paths.configBackupsDir)) others.draft(f)
      for (const f of yield* inputs.stateBackups(webDataRootGiven)) others.draft(f)
    }
    const findings = [...found.agentDir, ...others.list, ...found.webData, ...found.problems]
    const stoppedBy = facts.truncated ? [scanEntriesStopped(facts.maxEntries, facts.unread, "maxEntries")] : []
    if (facts.truncated) {
      const truncated = new Findings(agentDir)
      truncated.add("scan-truncated", agentDir, stoppedBy[0]!.message, "run again with a larger scan budget: --max-scan-entries (Promise and Effect: doctor({ maxEntries }))")
      findings.push(...truncated.list)
    }
    return { report: { findings, scanned: facts.scanned, truncated: facts.truncated, stoppedBy, webDataRoot }, facts }
  })

export class Doctor extends Context.Tag("pi-agent-storage/Doctor")<Doctor, {
  /**
   * DR1, DR2: the read-only doctor of the agent dir `AgentDir` resolved and of the web data root (TD1).
   * Never fails; unreadable entries become `scan-error` findings.
   */
  readonly doctor: (options?: DoctorOptions) => Effect.Effect<DoctorReport>
  /**
   * `doctor`'s report and the read model's facts it judged: `Status` hands them to `Inventory.summary`, so
   * `status` reads the agent dir once where the facts hold what the inventory would read (docs/architecture.md
   * "One read model"). Its tenants keep the items of owned runs with something to report (`runIsNoteworthy`) and
   * count every owned run in `TenantItems.tally`.
   */
  readonly doctorWithFacts: (options?: DoctorOptions) => Effect.Effect<{ readonly report: DoctorReport; readonly facts: AgentDirFacts }>
}>() {
  /** Ports, the resolved `AgentDir` and the `StorageConfig` bounds from the context. */
  static readonly make: Effect.Effect<Doctor["Type"], never, FileSystem | Host | AgentDir> = Effect.gen(function*() {
    const deps = yield* readOnlyDepsFromContext
    const agentDir = yield* AgentDir
    // The state backups' findings come from their own service, built on this context per call (the web data
    // root is a per-call option, and the backup root depends on it).
    const context = yield* Effect.context<FileSystem | Host | AgentDir>()
    const stateBackups = (webDataRoot: string) =>
      Effect.flatMap(StateBackups.make({ webDataRoot }), (b) => b.findings).pipe(Effect.provide(context))
    return Doctor.of({
      doctor: (options) => Effect.map(doctorProgram({ deps, agentDir, stateBackups }, options), (done) => done.report),
      doctorWithFacts: (options) => doctorProgram({ deps, agentDir, stateBackups }, options)
    })
  })

  static readonly layer: Layer.Layer<Doctor, never, FileSystem | Host | AgentDir> = Layer.effect(Doctor, Doctor.make)
}
