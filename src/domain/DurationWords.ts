/**
 * A duration in the words a message uses (`an hour`, `10 minutes`), so prose that names a bound is built from
 * the constant that sets it. Pure.
 */
const UNITS: ReadonlyArray<readonly [number, string]> = [
  [24 * 60 * 60 * 1000, "day"],
  [60 * 60 * 1000, "hour"],
  [60 * 1000, "minute"],
  [1000, "second"]
]

/** The largest unit that divides `ms` exactly: `an hour`, `2 hours`, `10 minutes`, `1500 ms`. */
export const durationWords = (ms: number): string => {
  for (const [size, unit] of UNITS) {
    if (ms >= size && ms % size === 0) {
      const n = ms / size
      return n === 1 ? (unit === "hour" ? "an hour" : `a ${unit}`) : `${n} ${unit}s`
    }
  }
  return `${ms} ms`
}
