/**
 * The doctor (SPEC DR1, DR2): a bounded, read-only scan of the agent dir and, optionally, of the web host's
 * extension data root. It only calls `lstat`, `readDirectory` and `readFile` (plus the Host's pid probes
 * for liveness verdicts): it never moves, writes or deletes anything, whatever it finds.
 *
 * It reads the canonical and legacy tables (src/domain/AgentPaths.ts) through `classifyRootEntry`; it lists
 * no root names of its own. Runs, leases and markers are judged by the same code the pruner uses.
 */
import * as NodePath from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  agentPaths,
  TENANT_CLEANUP_DIR,
  TENANT_PRUNE_MARKER,
  TENANT_PRUNE_STAMP,
  TENANT_STAGING_DIR,
  TENANT_TRASH_DIR,
  WORK_RUN_MANIFEST
} from "../domain/AgentPaths.js"
import type { FileSystemError } from "../domain/Errors.js"
import type { FindingDraft } from "../domain/FindingDraft.js"
import {
  classifyRootEntry,
  displayPath,
  type DoctorReport,
  type Finding,
  type FindingCode,
  findingSeverity,
  MIGRATION_MARKER_RECLAIM_PREFIX,
  type Severity
} from "../domain/MigrationPlan.js"
import { type DirEntry, type FileInfo, FileSystem } from "./FileSystem.js"
import { Host } from "./Host.js"
import { resolveRootLink } from "./Migration.js"
import { type Deps, depsFromContext } from "./internal/deps.js"
import { configHistoryFindings } from "./internal/configSentinel.js"
import { judgeMarker, reclaimLockPath } from "./internal/markers.js"
import { type ConfigRedLineRule, configEntryViolation } from "../domain/ConfigRedLines.js"
import { TIER_NAMES, tierPaths } from "../domain/WebPaths.js"
import { stateBackupFindings } from "./StateBackups.js"
import { resolveStateDir } from "../domain/Tiers.js"
import { isActive, manifestTimes, readLeases, readManifest } from "./internal/runFacts.js"
import { leaseFinding, manifestTimeFindings, markerFinding } from "./internal/unreadableFindings.js"
import { userProfileFindings } from "./UserProfileDoctor.js"
import { aFileType, fileTypeWord } from "../domain/FileTypeWords.js"

export interface DoctorOptions {
  /** Entries examined before the scan stops (`truncated`); default 100,000. */
  readonly maxEntries?: number
  /** The web host's extension data root (`data/`), checked for DR2 when given. */
  readonly webDataRoot?: string
}

export const DEFAULT_DOCTOR_MAX_ENTRIES = 100_000
/** How deep the doctor looks inside an extension's config/ tier. */
const CONFIG_MAX_DEPTH = 16
/**
 * A fix that is a command is written in backticks, so it can be copied and is run by a test
 * (test/cli/doctorFixes.test.ts): `pi-storage …` acts on the agent dir the doctor checked (add
 * `--agent-dir DIR` when it is not the default), shell commands run in that agent dir.
 */
const MIGRATE_FIX = "run `pi-storage migrate` (migrateAgentDirLayout) to move it to its canonical place"

const modeString = (mode: number) => (mode & 0o7777).toString(8).padStart(3, "0")

class Scan {
  readonly findings: Array<Finding> = []
  scanned = 0
  truncated = false
  constructor(readonly deps: Deps, readonly maxEntries: number, readonly display: (p: string) => string) {}

  /** Count `n` examined entries; false once the budget is spent (the scan then stops descending). */
  take(n = 1): boolean {
    if (this.truncated) return false
    if (this.scanned + n > this.maxEntries) {
      this.truncated = true
      return false
    }
    this.scanned += n
    return true
  }

  add(code: FindingCode, path: string, message: string, fix?: string, severity?: Severity): void {
    this.findings.push({
      severity: severity ?? findingSeverity(code),
      code,
      path: this.display(path),
      message,
      ...(fix !== undefined ? { fix } : {})
    })
  }

  scanError(path: string, error: FileSystemError): void {
    this.add("scan-error", path, `could not read: ${error.message}`)
  }
}

const lstatOption = (scan: Scan, path: string): Effect.Effect<FileInfo | undefined> =>
  scan.deps.fs.lstat(path).pipe(
    Effect.catchAll((e) =>
      Effect.sync(() => {
        if (e.reason !== "NotFound") scan.scanError(path, e)
        return undefined
      })
    )
  )

/** List a directory within the budget: the first entries that fit, and `truncated` set if cut. */
const list = (scan: Scan, path: string): Effect.Effect<ReadonlyArray<DirEntry>> =>
  scan.deps.fs.readDirectory(path).pipe(
    Effect.map((entries) => {
      const room = Math.max(0, scan.maxEntries - scan.scanned)
      const kept = entries.slice(0, room)
      scan.take(kept.length)
      if (kept.length < entries.length) scan.truncated = true
      return kept
    }),
    Effect.catchAll((e) =>
      Effect.sync(() => {
        if (e.reason !== "NotFound") scan.scanError(path, e)
        return []
      })
    )
  )

// ---------------------------------------------------------------------------------------------------------
// DR1: the agent dir root

const checkRoot = (scan: Scan, agentDir: string) =>
  Effect.gen(function*() {
    for (const entry of yield* list(scan, agentDir)) {
      const path = NodePath.join(agentDir, entry.name)
      const c = classifyRootEntry(entry.name)
      switch (c._tag) {
        case "Canonical": {
          const want = c.entry.kind === "file" ? "File" : "Directory"
          // A canonical name that is a symlink is the user's choice of disk (silent); the wrong kind is not.
          if (entry.type !== want && entry.type !== "SymbolicLink") {
            scan.add(
              "canonical-kind-mismatch",
              path,
              `${entry.name} should be a ${c.entry.kind} (${c.entry.description}) but is ${aFileType(entry.type)}`,
              `move it aside and let the library recreate ${entry.name}`
            )
          }
          break
        }
        case "Legacy": {
          const to = c.unit.destination.join("/")
          scan.add(
            c.unit.kind === "sidecar" ? "legacy-sidecar" : "legacy-entry",
            path,
            `legacy ${entry.name} belongs at ${to}`,
            MIGRATE_FIX
          )
          break
        }
        case "MigrationMarker": {
          if (entry.name.startsWith(MIGRATION_MARKER_RECLAIM_PREFIX)) {
            scan.add("migration-marker", path, "leftover of a reclaimed migration marker (a crash mid-reclaim)", "delete it")
            break
          }
          const judged = yield* judgeMarker(scan.deps, path)
          if (judged === undefined) break
          if (judged.alive && judged.unreadable !== true) {
            scan.add("migration-marker", path, `a migration is running (${judged.detail})`, undefined, "info")
          } else {
            scan.add(
              "migration-marker",
              path,
              `leftover migration marker (${judged.detail})`,
              "the next migration reclaims a dead owner's marker; delete it if no migration is running"
            )
          }
          break
        }
        case "Unknown": {
          const what = c.hint === "database"
            ? "a database file"
            : c.hint === "log"
            ? "a log file"
            : c.hint === "temp"
            ? "a temporary file"
            : `an unknown ${fileTypeWord(entry.type)}`
          scan.add(
            "unknown-root-entry",
            path,
            `${what} at the agent dir root: possibly written by an external tool (the library never writes here)`,
            "find the writer; move its data to state/ (durable) or cache/ (rebuildable), or delete it if unneeded"
          )
          break
        }
      }
    }
  })

// ---------------------------------------------------------------------------------------------------------
// state/

const checkState = (scan: Scan, agentDir: string) =>
  Effect.gen(function*() {
    const paths = agentPaths(agentDir)
    const stateDir = paths.stateDir()
    const info = yield* lstatOption(scan, stateDir)
    if (info === undefined) return
    if (info.type === "Directory" && (info.mode & 0o002) !== 0) {
      scan.add("state-world-writable", stateDir, `state/ has mode ${modeString(info.mode)}: anyone can change durable state`, "run `chmod 700 state` in the agent dir")
    }
    if (info.type !== "Directory") return
    const conflicts = yield* lstatOption(scan, paths.migrationConflictsDir)
    if (conflicts?.type === "Directory") {
      const entries = yield* list(scan, paths.migrationConflictsDir)
      if (entries.length > 0) {
        scan.add(
          "migration-conflicts",
          paths.migrationConflictsDir,
          `${entries.length} preserved migration conflict(s) to review: ${entries.map((e) => e.name).slice(0, 5).join(", ")}`,
          "compare each copy with the live one, keep what you need, then delete state/migration-conflicts/"
        )
      }
    }
  })

// ---------------------------------------------------------------------------------------------------------
// work/

/** WR10 as a finding: returns whether the directory may be descended (a real directory, not a link). */
const checkSafe = (scan: Scan, path: string, info: FileInfo, what: string): boolean => {
  if (info.type === "SymbolicLink") {
    scan.add("work-root-unsafe", path, `${what} is a symlink; pruning refuses it and the doctor does not follow it`, "replace the link with a real directory")
    return false
  }
  if (info.type !== "Directory") {
    scan.add("work-root-unsafe", path, `${what} is ${aFileType(info.type)}, not a directory`, "move it aside")
    return false
  }
  const uid = scan.deps.host.uid
  if (uid !== null && info.uid !== uid) {
    scan.add("work-root-unsafe", path, `${what} is owned by uid ${info.uid}, not the current user ${uid}`, `run \`chown ${uid} ${scan.display(path)}\``)
  }
  if ((info.mode & 0o022) !== 0) {
    scan.add("work-root-unsafe", path, `${what} has mode ${modeString(info.mode)} (writable by group or others)`, `run \`chmod 700 ${scan.display(path)}\``)
  }
  return true
}

const checkTenant = (scan: Scan, category: string, tenant: string, tenantDir: string) =>
  Effect.gen(function*() {
    for (const entry of yield* list(scan, tenantDir)) {
      const path = NodePath.join(tenantDir, entry.name)
      if (entry.name === TENANT_PRUNE_STAMP) continue
      if (entry.name === TENANT_PRUNE_MARKER || entry.name === reclaimLockPath(TENANT_PRUNE_MARKER)) {
        yield* checkMarker(scan, path, "prune marker")
        continue
      }
      if (entry.name === TENANT_CLEANUP_DIR && entry.type === "Directory") {
        for (const marker of yield* list(scan, path)) yield* checkMarker(scan, NodePath.join(path, marker.name), "cleanup marker")
        continue
      }
      if (entry.name === TENANT_TRASH_DIR && entry.type === "Directory") {
        const trash = yield* list(scan, path)
        if (trash.length > 0) {
          scan.add(
            "work-unfinished-trash",
            path,
            `${trash.length} quarantined run(s) not yet deleted (an interrupted prune)`,
            `run \`pi-storage work prune ${category}/${tenant}\` to finish deleting them`
          )
        }
        continue
      }
      if (entry.name === TENANT_STAGING_DIR && entry.type === "Directory") {
        for (const staged of yield* list(scan, path)) {
          const stagedPath = NodePath.join(path, staged.name)
          const leases = staged.type === "Directory" ? yield* readLeases(scan.deps, stagedPath) : undefined
          for (const lease of leases?.leases ?? []) addDraft(scan, leaseFinding(lease, scan.deps.staleUnreadableMs))
          if (leases !== undefined && isActive(leases)) continue
          scan.add("work-abandoned-staging", stagedPath, "a run whose creator died before placing it (or is still placing it)", "the next prune of this tenant removes it once its creator's lease is proven dead or it is an hour old")
        }
        continue
      }
      if (entry.type !== "Directory") {
        scan.add("work-stray-entry", path, `${aFileType(entry.type)} among the runs of ${category}/${tenant}; runs are directories`, "move it out of work/")
        continue
      }
      yield* checkRun(scan, category, tenant, entry.name, path)
    }
  })

const addDraft = (scan: Scan, draft: FindingDraft | undefined) => {
  if (draft !== undefined) scan.add(draft.code, draft.path, draft.message, draft.fix)
}

/** A prune or cleanup marker: a dead pruner's, an unreadable one, or a directory / symlink squatting on it. */
const checkMarker = (scan: Scan, path: string, what: "prune marker" | "cleanup marker") =>
  Effect.gen(function*() {
    const judged = yield* judgeMarker(scan.deps, path)
    if (judged === undefined) return
    const nonEmpty = judged.type === "Directory" && (yield* list(scan, path)).length > 0
    const draft = markerFinding(path, judged, what, scan.deps.staleUnreadableMs, nonEmpty)
    if (draft !== undefined) addDraft(scan, draft)
    else if (!judged.alive) scan.add("work-dead-marker", path, `${what} of a dead pruner (${judged.detail})`, "the next prune of this tenant reclaims it")
  })

const checkRun = (scan: Scan, category: string, tenant: string, runId: string, runDir: string) =>
  Effect.gen(function*() {
    if (scan.truncated) return
    const manifest = yield* readManifest(scan.deps, runDir, { category, tenant, runId })
    if (manifest._tag !== "Owned") {
      const why = manifest._tag === "Mismatch" ? `its manifest names ${manifest.found}` : manifest.why
      scan.add(
        "work-unowned-run",
        runDir,
        `directory without a valid ownership manifest (${why}); the library never deletes it`,
        "inspect it and delete it by hand if it is not needed"
      )
    }
    if (manifest._tag === "Owned") {
      const times = yield* manifestTimes(scan.deps, runDir, manifest.manifest)
      for (const draft of manifestTimeFindings(NodePath.join(runDir, WORK_RUN_MANIFEST), times)) addDraft(scan, draft)
    }
    const leases = yield* readLeases(scan.deps, runDir)
    scan.take(leases.leases.length)
    if (leases.problem !== null) {
      scan.add("work-stray-entry", runDir, `lease directory cannot be trusted: ${leases.problem}`, "inspect .leases/ by hand")
    }
    for (const lease of leases.leases) {
      const draft = leaseFinding(lease, scan.deps.staleUnreadableMs)
      if (draft !== undefined) addDraft(scan, draft)
      else if (!lease.verdict.alive) {
        scan.add("work-dead-lease", lease.path, `dead holder: ${lease.verdict.detail}`, "the next prune of this tenant removes it")
      }
    }
  })

const checkWork = (scan: Scan, agentDir: string) =>
  Effect.gen(function*() {
    const paths = agentPaths(agentDir)
    const root = yield* lstatOption(scan, paths.workRoot)
    if (root === undefined || !checkSafe(scan, paths.workRoot, root, "work/")) return
    for (const category of yield* list(scan, paths.workRoot)) {
      const categoryDir = paths.workCategoryDir(category.name)
      const categoryInfo = yield* lstatOption(scan, categoryDir)
      if (categoryInfo === undefined) continue
      if (category.type !== "Directory" && category.type !== "SymbolicLink") {
        scan.add("work-stray-entry", categoryDir, `${aFileType(category.type)} in work/, where only category directories belong`, "move it out of work/")
        continue
      }
      if (!checkSafe(scan, categoryDir, categoryInfo, `category ${category.name}`)) continue
      for (const tenant of yield* list(scan, categoryDir)) {
        const tenantDir = paths.workTenantDir(category.name, tenant.name)
        if (tenant.type !== "Directory" && tenant.type !== "SymbolicLink") {
          scan.add("work-stray-entry", tenantDir, `${aFileType(tenant.type)} in work/${category.name}/, where only tenant directories belong`, "move it out of work/")
          continue
        }
        const tenantInfo = yield* lstatOption(scan, tenantDir)
        if (tenantInfo === undefined || !checkSafe(scan, tenantDir, tenantInfo, `tenant ${category.name}/${tenant.name}`)) continue
        yield* checkTenant(scan, category.name, tenant.name, tenantDir)
      }
    }
  })

// ---------------------------------------------------------------------------------------------------------
// DR2: extension data tiers

/** The finding each config red line raises. */
const RED_LINE_FINDING: Record<Exclude<ConfigRedLineRule, "invalid-value">, FindingCode> = {
  database: "extension-config-database",
  log: "extension-config-log",
  virtualenv: "extension-config-venv",
  "size-budget": "extension-config-large-file"
}

const checkConfigTree = (scan: Scan, extId: string, dir: string, depth: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (const entry of yield* list(scan, dir)) {
      const path = NodePath.join(dir, entry.name)
      if (entry.type !== "Directory" && entry.type !== "File") continue
      // The same red lines the config tier refuses and the config history skips; a file's size only when its name passes.
      let violation = configEntryViolation({ name: entry.name, type: entry.type })
      if (violation === null && entry.type === "File") {
        const info = yield* lstatOption(scan, path)
        if (info !== undefined && info.type === "File") violation = configEntryViolation({ name: entry.name, type: "File", size: info.size })
      }
      if (violation !== null && violation.rule !== "invalid-value") {
        const what = entry.type === "Directory" ? `${entry.name}/` : entry.name
        scan.add(RED_LINE_FINDING[violation.rule], path, `${what} under ${extId}'s config/: ${violation.detail}`, `move it to ${violation.rightTier}/`)
        continue
      }
      if (entry.type === "Directory" && depth < CONFIG_MAX_DEPTH) yield* checkConfigTree(scan, extId, path, depth + 1)
    }
  })

const checkExtension = (scan: Scan, root: string, extId: string) =>
  Effect.gen(function*() {
    // The same path functions the tiers write with.
    const { extensionDir: extDir, configDir } = tierPaths(root, extId)
    const legacyStateDir = resolveStateDir({ configDir })
    const entries = yield* list(scan, extDir)
    for (const entry of entries) {
      if (!(TIER_NAMES as ReadonlyArray<string>).includes(entry.name)) {
        scan.add(
          "extension-outside-tiers",
          NodePath.join(extDir, entry.name),
          `${entry.name} in data/${extId}/ is outside config/, state/ and cache/`,
          "decide its tier (if deleted, what does the user lose?) and move it there"
        )
      }
    }
    const config = entries.find((e) => e.name === "config" && e.type === "Directory")
    if (config === undefined) return
    const hasState = entries.some((e) => e.name === "state" && e.type === "Directory")
    const legacyState = yield* lstatOption(scan, legacyStateDir)
    if (hasState && legacyState?.type === "Directory") {
      scan.add(
        "extension-split-state",
        legacyStateDir,
        `both data/${extId}/config/state/ and data/${extId}/state/ exist: state writes are split`,
        "merge config/state into state/ with a merge-ledger migration plan (runMigrationPlan), never by overwriting"
      )
    }
    yield* checkConfigTree(scan, extId, configDir, 1)
  })

const checkWebData = (scan: Scan, root: string) =>
  Effect.gen(function*() {
    const info = yield* lstatOption(scan, root)
    if (info === undefined || info.type !== "Directory") return
    for (const ext of yield* list(scan, root)) {
      if (ext.type === "Directory") yield* checkExtension(scan, root, ext.name)
    }
  })

// ---------------------------------------------------------------------------------------------------------

const doctorProgram = (deps: Deps, agentDirInput: string, options?: DoctorOptions): Effect.Effect<DoctorReport> =>
  Effect.gen(function*() {
    const agentDir = yield* resolveRootLink(deps.fs, agentDirInput)
    const display = (p: string) => {
      const rel = NodePath.relative(agentDir, p)
      return rel.startsWith("..") || NodePath.isAbsolute(rel) ? p : displayPath(agentDir, p)
    }
    const scan = new Scan(deps, Math.max(1, options?.maxEntries ?? DEFAULT_DOCTOR_MAX_ENTRIES), display)
    const info = yield* scan.deps.fs.lstat(agentDir).pipe(Effect.either)
    if (info._tag === "Left" && info.left.reason === "NotFound") {
      scan.add("agent-dir-missing", agentDir, "the agent directory does not exist yet")
    } else if (info._tag === "Left") {
      scan.scanError(agentDir, info.left)
    } else if (info.right.type !== "Directory") {
      scan.add("agent-dir-not-directory", agentDir, `the agent directory is ${aFileType(info.right.type)}, not a directory`)
    } else {
      yield* checkRoot(scan, agentDir)
      yield* checkState(scan, agentDir)
      yield* checkWork(scan, agentDir)
      for (const f of yield* userProfileFindings(scan.deps, agentDir)) addDraft(scan, f)
      for (const f of yield* configHistoryFindings(deps, agentPaths(agentDir).configBackupsDir)) addDraft(scan, f)
      for (const f of yield* stateBackupFindings(scan.deps, agentDir, options?.webDataRoot)) addDraft(scan, f)
    }
    if (options?.webDataRoot !== undefined) {
      const webRoot = yield* resolveRootLink(deps.fs, options.webDataRoot)
      yield* checkWebData(scan, webRoot)
    }
    if (scan.truncated) {
      scan.add("scan-truncated", agentDir, `stopped after ${scan.scanned} entries (maxEntries)`, "run again with a larger maxEntries")
    }
    return { findings: scan.findings, scanned: scan.scanned, truncated: scan.truncated }
  })


/** DR1, DR2: the read-only doctor. Never fails; unreadable entries become `scan-error` findings. */
export const doctor = (agentDir: string, options?: DoctorOptions): Effect.Effect<DoctorReport, never, FileSystem | Host> =>
  Effect.flatMap(depsFromContext, (deps) => doctorProgram(deps, agentDir, options))

export class Doctor extends Context.Tag("pi-agent-storage/Doctor")<Doctor, {
  readonly doctor: (agentDir: string, options?: DoctorOptions) => Effect.Effect<DoctorReport>
}>() {
  static readonly layer: Layer.Layer<Doctor, never, FileSystem | Host> = Layer.effect(
    Doctor,
    Effect.map(depsFromContext, (deps) => ({ doctor: (agentDir, options) => doctorProgram(deps, agentDir, options) }))
  )
}
