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
}

export interface Measurement {
  readonly name: string
  readonly rows: ReadonlyArray<Row>
  /** Facts worth keeping beside the figures (tree size, where the time goes …). */
  readonly notes: Record<string, unknown>
}

export const passes = (row: Row): boolean | undefined =>
  row.target === undefined || row.ratio === undefined ? undefined : row.ratio <= row.target

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
        r.target === undefined ? "" : `≤ ${r.target}×`,
        ok === undefined ? "" : ok ? "yes" : "NO"
      ]
    })
  )
  return renderTable(header, rows)
}
