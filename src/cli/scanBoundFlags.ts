/**
 * The scan-bound flags (docs/work-runs.md "Retention"): each flag, the handler option the command tree gives
 * it (options.ts `scanBounds`) and the inventory limit it sets. One table for the tree and the short route
 * (route.ts), which reads these flags before anything heavy loads: imports nothing.
 */
export const SCAN_BOUNDS = [
  { flag: "max-scanned-runs", option: "maxScannedRuns", limit: "maxRunsPerTenant" },
  { flag: "max-entries", option: "maxEntries", limit: "maxEntries" },
  { flag: "max-depth", option: "maxDepth", limit: "maxDepth" },
  { flag: "max-scan-entries", option: "maxScanEntries", limit: "maxScanEntries" }
] as const

export type ScanBound = (typeof SCAN_BOUNDS)[number]

/** The scan bounds a view takes, by the inventory's names for them (absent: the default). */
export type ScanLimits = { readonly [K in ScanBound["limit"]]?: number }

/** The flag (without `--`) of a handler option. */
export const boundFlag = (option: ScanBound["option"]): string => SCAN_BOUNDS.find((b) => b.option === option)!.flag
