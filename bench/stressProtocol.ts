/** Messages between bench/stress.ts and its workers, and the tenants they share. */
export type ToParent =
  | { readonly t: "ready" }
  | { readonly t: "held"; readonly key: string; readonly path: string; readonly tokenFile: string; readonly token: string; readonly pid: number }
  | { readonly t: "releasing"; readonly key: string }
  | { readonly t: "ops"; readonly counts: Record<string, number> }
  | { readonly t: "violation"; readonly inv: string; readonly detail: string }
  | { readonly t: "done" }
  /** The worker created `path` exclusively and will never write it: SIGKILL it now. */
  | { readonly t: "created-empty"; readonly path: string; readonly kind: string }

export type ToWorker =
  | { readonly t: "ack"; readonly key: string }
  | { readonly t: "stop" }
  /** Die between create and write: create an empty marker or lease, report it, and wait for the SIGKILL. */
  | { readonly t: "die-mid-create" }

export const STRESS_CATEGORY = "stress"
export const STRESS_TENANTS = ["t0", "t1", "t2"] as const
export const NAMED_RUNS = ["shared-a", "shared-b"] as const

