/**
 * The dashboard API's handlers (docs/dashboard.md "Dashboard"): each one a call of the library's services, the same the
 * CLI makes for the same report or action (no second implementation), under the same locks: the inventory and
 * the doctor (`status`, `doctor`), `WorkRuns.prune` with `dryRun` (`work prune --dry-run`) and
 * `WorkRuns.removeRuns` (`work rm`), `StateBackups` (`backup list/create/verify`), `ConfigHistory`
 * (`config status/log/diff/snapshot`), `UserProfile.read` (`memory show`), the usage history and the storage map.
 *
 * Applying a prune plan applies exactly the plan shown: the dry run is made again, and only when its id is the
 * one the page showed are exactly its runs deleted, each under the cleanup protocol (a run that became active
 * meanwhile is kept and said so); a plan that changed is refused with the plan as it is now.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { DoctorReport } from "../domain/Findings.js"
import { prunePlanId } from "../domain/PrunePlanId.js"
import { recordsSince } from "../domain/UsageHistory.js"
import { walkerInUse } from "../layers/node/walkers.js"
import { AgentDir } from "../services/AgentDir.js"
import { ConfigHistory } from "../services/ConfigHistory.js"
import { Doctor } from "../services/Doctor.js"
import { FileSystem } from "../services/FileSystem.js"
import { Inventory } from "../services/Inventory.js"
import { statusDocument } from "../services/internal/statusDocument.js"
import { StateBackups } from "../services/StateBackups.js"
import { Status } from "../services/Status.js"
import { StorageConfig } from "../services/StorageConfig.js"
import { StorageMap } from "../services/StorageMap.js"
import { UsageHistory } from "../services/UsageHistory.js"
import { UserProfile } from "../services/UserProfile.js"
import { WorkRuns } from "../services/WorkRuns.js"
import { ActionFailed, BadRequest, DashboardApi, ReadOnly } from "./api.js"
import { coverageOf } from "./coverage.js"
import type { PrunePlanView } from "./schemas.js"

/** What one dashboard was opened with. */
export class DashboardSettings extends Context.Tag("pi-agent-storage/DashboardSettings")<DashboardSettings, {
  readonly readOnly: boolean
  /** The web data root it reads (resolved), `null` when none. */
  readonly webDataRoot: string | null
  /** `pi-storage` and the global flags naming this agent dir, for the commands the page shows. */
  readonly cli: string
  /** ` --root DIR` when the backup root was given, else "". */
  readonly backupRootFlag: string
  /** ` --web-data-root DIR` when a web data root was given, else "". */
  readonly webDataRootFlag: string
  readonly version: string
}>() {}

/** What several views read, measured once and reused for a while (an action forgets it). */
export class DashboardCache extends Context.Tag("pi-agent-storage/DashboardCache")<DashboardCache, {
  readonly doctor: Effect.Effect<DoctorReport>
  readonly invalidate: Effect.Effect<void>
}>() {}

const CLIENT_ERRORS = new Set(["InvalidSegment", "InvalidArgument", "InvalidPolicy", "UnknownRevision", "SnapshotNotFound"])

/** A library error as the API's: a request the library calls wrong is a `BadRequest`, anything else `ActionFailed`. */
const failed = (e: { readonly _tag: string; readonly message: string }) =>
  CLIENT_ERRORS.has(e._tag) ? new BadRequest({ message: e.message }) : new ActionFailed({ reason: e._tag, message: e.message })

const readOnlyRefusal = new ReadOnly({ message: "this dashboard is read-only (pi-storage ui --read-only): no action runs" })

const StorageHandlers = HttpApiBuilder.group(DashboardApi, "storage", (handlers) =>
  Effect.gen(function*() {
    const settings = yield* DashboardSettings
    const cache = yield* DashboardCache
    const agentDir = yield* AgentDir
    const status = yield* Status
    const config = yield* StorageConfig
    const map = yield* StorageMap
    const history = yield* UsageHistory
    const profile = yield* UserProfile.make().pipe(Effect.orDie)
    return handlers
      .handle("session", () =>
        Effect.succeed({ readOnly: settings.readOnly, agentDir: agentDir.path, webDataRoot: settings.webDataRoot, cli: settings.cli, version: settings.version }))
      .handle("status", () =>
        Effect.gen(function*() {
          const report = yield* status.status(settings.webDataRoot === null ? {} : { webDataRoot: settings.webDataRoot })
          return statusDocument(report, walkerInUse(config.walker))
        }))
      .handle("map", ({ urlParams }) =>
        Effect.zipRight(
          urlParams.fresh === "1" ? Effect.all([map.invalidate, cache.invalidate]) : Effect.void,
          map.level(urlParams.node ?? "root").pipe(Effect.mapError((e) => new BadRequest({ message: e.message })))
        ))
      .handle("growth", ({ urlParams }) =>
        Effect.gen(function*() {
          const days = urlParams.days ?? 30
          const view = yield* history.read()
          const now = yield* Clock.currentTimeMillis
          return { ...view, records: recordsSince(view.records, now, days), days, now }
        }))
      .handle("doctor", () => cache.doctor)
      .handle("profile", () => profile.read.pipe(Effect.mapError((e) => new ActionFailed({ reason: e._tag, message: e.message }))))
  }))

const WorkHandlers = HttpApiBuilder.group(DashboardApi, "work", (handlers) =>
  Effect.gen(function*() {
    const settings = yield* DashboardSettings
    const cache = yield* DashboardCache
    const inventory = yield* Inventory
    const workRuns = yield* WorkRuns
    const map = yield* StorageMap
    /** `work prune CATEGORY/TENANT --dry-run`, with the id of exactly that plan. */
    const plan = (category: string, tenant: string) =>
      Effect.map(
        workRuns.prune({ category, tenant, dryRun: true }).pipe(Effect.mapError(failed)),
        (report): PrunePlanView => ({ category, tenant, planId: prunePlanId(category, tenant, report.removed), report })
      )
    return handlers
      .handle("runs", () => inventory.listRuns().pipe(Effect.mapError(failed)))
      .handle("plan", ({ urlParams }) => plan(urlParams.category, urlParams.tenant))
      .handle("prune", ({ payload }) =>
        Effect.gen(function*() {
          if (settings.readOnly) return yield* readOnlyRefusal
          const now = yield* plan(payload.category, payload.tenant)
          if (now.planId !== payload.planId || now.report.busy) {
            return {
              _tag: "PlanChanged" as const,
              message: now.report.busy
                ? "Another prune of this tenant is running: nothing was removed. Here is the plan as it is now."
                : "The plan changed since it was shown: nothing was removed. Here is the plan as it is now.",
              plan: now
            }
          }
          const runIds = now.report.removed.map((r) => r.runId)
          const outcomes = runIds.length === 0
            ? []
            : yield* workRuns.removeRuns({ category: payload.category, tenant: payload.tenant, runIds }).pipe(Effect.mapError(failed))
          yield* Effect.all([map.invalidate, cache.invalidate])
          return { _tag: "Applied" as const, planId: now.planId, outcomes }
        }))
  }))

const ProtectionHandlers = HttpApiBuilder.group(DashboardApi, "protection", (handlers) =>
  Effect.gen(function*() {
    const settings = yield* DashboardSettings
    const cache = yield* DashboardCache
    const fs = yield* FileSystem
    const map = yield* StorageMap
    const backups = yield* StateBackups
    const history = yield* ConfigHistory
    const action = <A, E extends { readonly _tag: string; readonly message: string }>(run: Effect.Effect<A, E>) =>
      settings.readOnly
        ? Effect.fail(readOnlyRefusal)
        : run.pipe(
          Effect.mapError((e) => new ActionFailed({ reason: e._tag, message: e.message })),
          Effect.tap(() => Effect.all([map.invalidate, cache.invalidate]))
        )
    return handlers
      .handle("protection", () =>
        Effect.gen(function*() {
          const listed = yield* Effect.either(backups.list())
          const snapshots = listed._tag === "Right" ? listed.right : []
          const lastVerify = yield* backups.lastVerify
          const configStatus = yield* Effect.either(history.status())
          const configLog = yield* Effect.either(history.log({ limit: 1 }))
          const configChanged = configStatus._tag === "Right" && configStatus.right.dirty
            ? yield* Effect.either(history.diff())
            : undefined
          const coverage = yield* coverageOf({
            fs,
            map,
            backupRoot: backups.root,
            snapshots,
            config: {
              status: configStatus._tag === "Right" ? configStatus.right : null,
              newest: configLog._tag === "Right" ? configLog.right[0] ?? null : null,
              changed: configChanged?._tag === "Right" ? configChanged.right.files : []
            }
          })
          return {
            backupRoot: backups.root,
            snapshots,
            snapshotsProblem: listed._tag === "Left" ? listed.left.message : null,
            lastVerify,
            coverage,
            restoreCommand: `${settings.cli} backup restore ID${settings.backupRootFlag}`
          }
        }))
      .handle("snapshot", () => action(backups.create({ label: "from the dashboard" })))
      .handle("verify", () => action(backups.verify()))
      .handle("config", () =>
        Effect.gen(function*() {
          const status = yield* history.status()
          const log = yield* history.log({ limit: 50 })
          return { dir: history.dir, status, log, rollbackCommand: `${settings.cli} config rollback REV${settings.webDataRootFlag}` }
        }).pipe(Effect.mapError((e) => new ActionFailed({ reason: e._tag, message: e.message }))))
      .handle("diff", ({ urlParams }) => history.diff({ from: urlParams.from, to: urlParams.to }).pipe(Effect.mapError(failed)))
      .handle("recordConfig", () => action(history.snapshot({ message: "recorded from the dashboard" })))
  }))

/** Every group's handlers; they need the library's services, the settings and the cache. */
export const handlersLayer = Layer.mergeAll(StorageHandlers, WorkHandlers, ProtectionHandlers)
