/**
 * The Host port: who and where this process is, and whether another process is alive (docs/safety.md "How runs stay safe": leases and liveness).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

export class Host extends Context.Tag("pi-agent-storage/Host")<Host, {
  readonly hostname: string
  /** Identity of the current boot (`/proc/sys/kernel/random/boot_id`), `null` where the OS does not tell. */
  readonly bootId: string | null
  /**
   * Identity of this machine (`/etc/machine-id`), recorded in leases and markers beside the host name: the
   * boot shortcut of the liveness verdict applies only when it matches. `null`/absent where there is none.
   */
  readonly machineId?: string | null
  /**
   * How long this host has been up (ms on its boot clock, which no wall-clock change moves), `null` where
   * unknown. Absent: unknown.
   */
  readonly uptimeMs?: Effect.Effect<number | null>
  readonly pid: number
  /** This process's own start time token (see `processStartTime`), `null` where unknown. */
  readonly selfStartTime: number | null
  /** Current user id; `null` on platforms without uids. */
  readonly uid: number | null
  readonly homeDir: string
  readonly cwd: string
  readonly env: (name: string) => string | undefined
  /** Start time of a process (an OS-specific monotonic token, e.g. clock ticks since boot); `null` if unknown or gone. */
  readonly processStartTime: (pid: number) => Effect.Effect<number | null>
  /** Whether a process with this pid exists (EPERM from kill(pid, 0) means it exists). */
  readonly pidExists: (pid: number) => Effect.Effect<boolean>
}>() {}
