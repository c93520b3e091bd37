/**
 * `pi-agent-storage/dashboard` (docs/dashboard.md "Dashboard"): the storage dashboard for a host to mount, and its typed API.
 * A subpath of its own because it imports `@effect/platform` (an optional peer dependency), like
 * `pi-agent-storage/testing`: the root entry loads with nothing but `effect` installed.
 *
 *   const dashboard = createStorageDashboard({ hosts: ["127.0.0.1:8080"], basePath: "/storage" })
 *   server.on("request", (req, res) => req.url?.startsWith("/storage") ? dashboard.handler(req, res) : mine(req, res))
 *   console.log(dashboard.url("http://127.0.0.1:8080"))
 */
export { createStorageDashboard } from "./dashboard/server.js"
export type { StorageDashboard, StorageDashboardOptions } from "./dashboard/server.js"
export type { NodeHandler } from "./dashboard/nodeAdapter.js"
export { ActionFailed, BadRequest, DashboardApi, ProtectionGroup, ReadOnly, StorageGroup, WorkGroup } from "./dashboard/api.js"
export * as DashboardSchemas from "./dashboard/schemas.js"
export { loopbackHosts } from "./dashboard/security.js"
