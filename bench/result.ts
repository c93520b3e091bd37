/** The shape every measurement reports, and how the table and the JSON document are made from it. */
import { fmt, renderTable, type Summary } from "./util.js"

export interface Row {
  /** What was measured, e.g. "prune wall". */
  readonly label: string
  readonly unit: string
  readonly ours: Summary
  readonly baseline?: Summary
  readonly baselineName?: string
  /** ours / baseline of the medians (or the measurement's own ratio). */
  readonly ratio?: number
  /** The ratio must not exceed this. */
  readonly target?: number
  /** ours − baseline of the medians must not exceed this (in `unit`), e.g. RSS ≤ `node -e 0` + 15 MiB. */
  readonly maxOver?: number
  /** The median of ours must not exceed this (in `unit`), e.g. an install ≤ 10 MB. */
  readonly max?: number
}

export interface Measurement {
  readonly name: string
  readonly rows: ReadonlyArray<Row>
  /** Facts worth keeping beside the figures (tree size, where the time goes …). */
  readonly notes: Record<string, unknown>
}

export const passes = (row: Row): boolean | undefined => {
  const checks: Array<boolean> = []
  if (row.target !== undefined && row.ratio !== undefined) checks.push(row.ratio <= row.target)
  if (row.maxOver !== undefined && row.baseline !== undefined) checks.push(row.ours.median - row.baseline.median <= row.maxOver)
  if (row.max !== undefined) checks.push(row.ours.median <= row.max)
  return checks.length === 0 ? undefined : checks.every((ok) => ok)
}

const targetText = (r: Row): string =>
  [
    r.target === undefined ? "" : `≤ ${r.target}×`,
    r.maxOver === undefined ? "" : `≤ +${r.maxOver} ${r.unit}`,
    r.max === undefined ? "" : `≤ ${r.max} ${r.unit}`
  ].filter((t) => t !== "").join(", ")

const range = (s: Summary) => `${fmt(s.min)}–${fmt(s.max)}`

export const renderMeasurements = (ms: ReadonlyArray<Measurement>): string => {
  const header = ["measurement", "unit", "ours median", "ours min–max", "baseline", "base median", "base min–max", "ratio", "target", "ok"]
  const rows = ms.flatMap((m) =>
    m.rows.map((r) => {
      const ok = passes(r)
      return [
        `${m.name}: ${r.label}`,
        r.unit,
        fmt(r.ours.median),
        range(r.ours),
        r.baselineName ?? "",
        r.baseline ? fmt(r.baseline.median) : "",
        r.baseline ? range(r.baseline) : "",
        r.ratio === undefined ? "" : `${fmt(r.ratio)}×`,
        targetText(r),
        ok === undefined ? "" : ok ? "yes" : "NO"
      ]
    })
  )
  return renderTable(header, rows)
}
