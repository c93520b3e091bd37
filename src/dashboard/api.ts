/**
 * The dashboard's JSON API as an `@effect/platform` `HttpApi` (docs/dashboard.md "Dashboard"): every request and response
 * a Schema (schemas.ts: the CLI's `--json` report types), and the OpenAPI document derived from it, served at
 * `/api/openapi.json`. Reads are GET; every action is a POST (the server also checks its Origin and CSRF token:
 * security.ts) and answers 403 on a read-only dashboard.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { VERSION } from "../domain/Version.js"
import {
  ConfigSnapshotResult,
  ConfigView,
  CreateResult,
  DiffResult,
  DoctorReport,
  GrowthView,
  MapLevel,
  ProfileView,
  ProtectionView,
  PrunePlanView,
  PruneRequest,
  PruneResult,
  RunList,
  SessionInfo,
  StatusDocument,
  VerifyResult
} from "./schemas.js"

/** A request the dashboard cannot answer as asked (an unknown node, a bad tenant, a bad revision). */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", { message: Schema.String }, HttpApiSchema.annotations({ status: 400 })) {}

/** The library refused or failed (`reason` is its error's `_tag`: `BackupBusy`, `UnsafeRoot`, `GitFailed` …). */
export class ActionFailed extends Schema.TaggedError<ActionFailed>()(
  "ActionFailed",
  { reason: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** The dashboard was started read-only: no action runs. */
export class ReadOnly extends Schema.TaggedError<ReadOnly>()("ReadOnly", { message: Schema.String }, HttpApiSchema.annotations({ status: 403 })) {}

const TenantParams = Schema.Struct({ category: Schema.String, tenant: Schema.String })

export class StorageGroup extends HttpApiGroup.make("storage")
  .add(HttpApiEndpoint.get("session", "/session").addSuccess(SessionInfo))
  .add(HttpApiEndpoint.get("status", "/status").addSuccess(StatusDocument))
  .add(
    HttpApiEndpoint.get("map", "/map")
      // `fresh=1`: measure again now (the top-level scan is otherwise kept for a while).
      .setUrlParams(Schema.Struct({ node: Schema.optional(Schema.String), fresh: Schema.optional(Schema.Literal("1")) }))
      .addSuccess(MapLevel)
      .addError(BadRequest)
  )
  .add(
    HttpApiEndpoint.get("growth", "/growth")
      .setUrlParams(Schema.Struct({ days: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 400))) }))
      .addSuccess(GrowthView)
  )
  .add(HttpApiEndpoint.get("doctor", "/doctor").addSuccess(DoctorReport))
  .add(HttpApiEndpoint.get("profile", "/profile").addSuccess(ProfileView).addError(ActionFailed))
{}

export class WorkGroup extends HttpApiGroup.make("work")
  .add(HttpApiEndpoint.get("runs", "/runs").addSuccess(RunList).addError(BadRequest).addError(ActionFailed))
  .add(HttpApiEndpoint.get("plan", "/prune-plan").setUrlParams(TenantParams).addSuccess(PrunePlanView).addError(BadRequest).addError(ActionFailed))
  .add(
    HttpApiEndpoint.post("prune", "/prune")
      .setPayload(PruneRequest)
      .addSuccess(PruneResult)
      .addError(BadRequest)
      .addError(ActionFailed)
      .addError(ReadOnly)
  )
{}

export class ProtectionGroup extends HttpApiGroup.make("protection")
  .add(HttpApiEndpoint.get("protection", "/protection").addSuccess(ProtectionView))
  .add(HttpApiEndpoint.post("snapshot", "/snapshots").addSuccess(CreateResult).addError(ActionFailed).addError(ReadOnly))
  .add(HttpApiEndpoint.post("verify", "/verify").addSuccess(VerifyResult).addError(ActionFailed).addError(ReadOnly))
  .add(HttpApiEndpoint.get("config", "/config").addSuccess(ConfigView).addError(ActionFailed))
  .add(
    HttpApiEndpoint.get("diff", "/config/diff")
      .setUrlParams(Schema.Struct({ from: Schema.optional(Schema.String), to: Schema.optional(Schema.String) }))
      .addSuccess(DiffResult)
      .addError(BadRequest)
      .addError(ActionFailed)
  )
  .add(HttpApiEndpoint.post("recordConfig", "/config/snapshot").addSuccess(ConfigSnapshotResult).addError(ActionFailed).addError(ReadOnly))
{}

/** The whole API, under `/api`. */
export class DashboardApi extends HttpApi.make("pi-storage-dashboard")
  .add(StorageGroup)
  .add(WorkGroup)
  .add(ProtectionGroup)
  .prefix("/api")
  .annotate(OpenApi.Title, "pi-storage dashboard")
  .annotate(OpenApi.Version, VERSION)
  .annotate(OpenApi.Description, "What the coding agent keeps: the reports of pi-storage's --json, and its actions (POST).")
{}
