/**
 * The id of a prune plan as the dashboard shows it (docs/dashboard.md "Dashboard": "apply exactly the plan shown"): a hash
 * of the tenant and of each run the plan removes with its reason. A plan that removes other runs, or the same
 * runs for other reasons, has another id; sizes and the order runs were listed in do not change it. Pure.
 */
import { sha256Hex } from "./Digest.js"

export const prunePlanId = (
  category: string,
  tenant: string,
  removed: ReadonlyArray<{ readonly runId: string; readonly reason: string }>
): string =>
  sha256Hex(JSON.stringify([category, tenant, removed.map((r) => [r.runId, r.reason]).sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0))])).slice(0, 24)
