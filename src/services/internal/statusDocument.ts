/**
 * The document `pi-storage status --json` prints and the dashboard's `/api/status` answers (docs/dashboard.md "Dashboard":
 * one report type for both): the Status service's report (the inventory, where the roots came from, the
 * doctor's counts on the same roots) and the walker in use. Pure.
 */
import type { StatusReport } from "../Status.js"

export interface StatusDocument extends StatusReport {
  /** The tree walker in use: `native` (the C addon) or `portable`, with why (an install without a C compiler). */
  readonly walker: { readonly kind: "native" | "portable"; readonly why?: string }
}

export const statusDocument = (report: StatusReport, walker: StatusDocument["walker"]): StatusDocument => ({ ...report, walker })
