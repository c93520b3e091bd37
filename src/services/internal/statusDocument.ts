/**
 * The document `pi-storage status --json` prints and the dashboard's `/api/status` answers (README "Dashboard":
 * one report type for both): the inventory, where the agent dir came from, the doctor's counts and the walker.
 * Pure.
 */
import type { AgentDirSource } from "../../domain/AgentPaths.js"
import type { DoctorReport, Severity } from "../../domain/Findings.js"
import type { InventoryReport } from "../Inventory.js"

export interface StatusDocument extends InventoryReport {
  readonly source: AgentDirSource
  /** `null` when the agent dir does not exist. */
  readonly doctor: { readonly findings: number; readonly bySeverity: Record<Severity, number>; readonly truncated: boolean } | null
  /** The tree walker in use: `native` (the C addon) or `portable`, with why (an install without a C compiler). */
  readonly walker: { readonly kind: "native" | "portable"; readonly why?: string }
}

export const severityCounts = (findings: ReadonlyArray<{ readonly severity: Severity }>): Record<Severity, number> => {
  const counts: Record<Severity, number> = { error: 0, warning: 0, info: 0 }
  for (const f of findings) counts[f.severity]++
  return counts
}

export const statusDocument = (
  report: InventoryReport,
  source: AgentDirSource,
  doctor: DoctorReport | null,
  walker: StatusDocument["walker"]
): StatusDocument => ({
  ...report,
  source,
  doctor: doctor === null ? null : { findings: doctor.findings.length, bySeverity: severityCounts(doctor.findings), truncated: doctor.truncated },
  walker
})
