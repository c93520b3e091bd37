/**
 * A doctor finding before the doctor gives it its severity (from its code, `findingSeverity`): the one shape
 * every producer outside Doctor.ts returns (unreadable markers and leases, the USER.md profile, config
 * history, state backups), so the doctor adds them all the same way.
 */
import type { FindingCode } from "./Findings.js"

export interface FindingDraft {
  readonly code: FindingCode
  readonly path: string
  readonly message: string
  /** What to do about it (a command, or what the next prune or edit does by itself). */
  readonly fix?: string
}
