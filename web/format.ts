/** Sizes, ages and dates as a person reads them (the CLI's units: B, KiB, MiB, GiB). */
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"] as const

export const formatBytes = (bytes: number): string => {
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${bytes} B` : `${value < 10 ? value.toFixed(1) : Math.round(value)} ${UNITS[unit]}`
}

/** A size that may be a lower bound. */
export const formatSize = (size: { readonly bytes: number; readonly complete: boolean }): string =>
  `${size.complete ? "" : "≥ "}${formatBytes(size.bytes)}`

export const formatCount = (n: number): string => n.toLocaleString("en-US")

export const formatAge = (then: number, now: number): string => {
  const s = Math.max(0, Math.round((now - then) / 1000))
  if (s < 60) return `${s} s ago`
  const m = Math.round(s / 60)
  if (m < 60) return `${m} min ago`
  const hours = Math.round(m / 60)
  if (hours < 48) return `${hours} h ago`
  return `${Math.round(hours / 24)} days ago`
}

export const formatDate = (ms: number): string => new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z")
