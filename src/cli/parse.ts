/**
 * Pure parsers for command-line values. Each returns the value or a message that names what was wrong,
 * so the caller can print one clean line naming the flag.
 */
import { decodeSegment } from "../domain/Segment.js"
import { fail, MAX_SAFE, ok, parseCount, type Parsed, quoted } from "./parseCount.js"

export { parseCount, type Parsed }

/**
 * `amount` (digits, optionally `.` and digits) × `factor`, exactly (decimal, not floating point: `2.2MB` is
 * 2,200,000); `undefined` when the product is not a whole number.
 */
const wholeProduct = (amount: string, factor: number): bigint | undefined => {
  const [whole, fraction = ""] = amount.split(".")
  const scale = 10n ** BigInt(fraction.length)
  const scaled = BigInt(whole! + fraction) * BigInt(factor)
  return scaled % scale === 0n ? scaled / scale : undefined
}

const DURATION_UNITS: Readonly<Record<string, number>> = {
  s: 1000,
  m: 60 * 1000,
  h: 60 * 60 * 1000,
  d: 24 * 60 * 60 * 1000,
  w: 7 * 24 * 60 * 60 * 1000
}

/**
 * `30d`, `12h`, `90m`, `45s`, `2w`, fractions (`1.5d`) and sums (`2h30m`, `1d12h`) → milliseconds; `0` alone
 * needs no unit. Any other bare number is ambiguous and refused, and so is a span that is not a whole number
 * of milliseconds (`0.0001s`): it is never rounded to something else.
 */
export const parseDuration = (text: string): Parsed<number> => {
  const trimmed = text.trim()
  if (/^0+(\.0+)?$/.test(trimmed)) return ok(0)
  if (!/^(\d+(\.\d+)?[smhdw])+$/.test(trimmed)) {
    return fail(`expected a duration such as 30d, 12h, 1.5d, 2h30m or 0, got ${quoted(text)}`)
  }
  let ms = 0n
  for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)([smhdw])/g)) {
    const part = wholeProduct(amount!, DURATION_UNITS[unit!]!)
    if (part === undefined) return fail(`${quoted(text)} is not a whole number of milliseconds`)
    ms += part
  }
  return ms <= MAX_SAFE ? ok(Number(ms)) : fail(`duration ${quoted(text)} is too large`)
}

const SIZE_UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1000 ** 4,
  tib: 1024 ** 4
}

/**
 * `512MiB`, `2GiB`, `1.5GiB`, `0.5KiB` (512), `1000` (bytes), `10MB` (decimal) → bytes. A size that is not a
 * whole number of bytes after its unit (`0.5`, `0.3KiB`) is refused, never rounded: `--max-bytes 0.5` is a
 * mistake, not a request for 0 bytes.
 */
export const parseSize = (text: string): Parsed<number> => {
  const match = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(text.trim())
  const factor = match === null ? undefined : SIZE_UNITS[match[2]!.toLowerCase()]
  if (match === null || factor === undefined) {
    return fail(`expected a size such as 512MiB, 2GiB or 1000 (bytes), got ${quoted(text)}`)
  }
  const bytes = wholeProduct(match[1]!, factor)
  if (bytes === undefined) return fail(`${quoted(text)} is not a whole number of bytes`)
  return bytes <= MAX_SAFE ? ok(Number(bytes)) : fail(`size ${quoted(text)} is too large`)
}

/** A TCP port: 0 (any free one) to 65535. */
export const parsePort = (text: string): Parsed<number> => {
  const n = parseCount(text)
  return n.ok && n.value <= 65535 ? n : fail(`expected a port number from 0 to 65535, got ${quoted(text)}`)
}

/** A whole number of 1 or more. */
/** `parseSize` of a bound that must let something through: 0 is refused by the flag, naming it, not by the library later. */
export const parsePositiveSize = (text: string): Parsed<number> => {
  const size = parseSize(text)
  return !size.ok || size.value > 0 ? size : fail(`expected a size above 0, such as 1GiB, got ${quoted(text)}`)
}

export const parsePositiveCount = (text: string): Parsed<number> => {
  if (!/^\d+$/.test(text.trim())) return fail(`expected a whole number (1 or more), got ${quoted(text)}`)
  const n = parseCount(text)
  return !n.ok || n.value > 0 ? n : fail(`expected a whole number (1 or more), got ${quoted(text)}`)
}

export interface TenantTarget {
  readonly category: string
  readonly tenant: string
}

const segment = (field: string, value: string): Parsed<string> => {
  const decoded = decodeSegment(field, value)
  return decoded._tag === "Right" ? ok(decoded.right) : fail(decoded.left.message)
}

/** `CATEGORY/TENANT`, each a valid segment (WR2). */
export const parseTenantTarget = (text: string): Parsed<TenantTarget> => {
  const parts = text.split("/")
  if (parts.length !== 2) return fail(`expected CATEGORY/TENANT, got ${quoted(text)}`)
  const category = segment("category", parts[0]!)
  if (!category.ok) return category
  const tenant = segment("tenant", parts[1]!)
  if (!tenant.ok) return tenant
  return ok({ category: category.value, tenant: tenant.value })
}

/** `CATEGORY` or `CATEGORY/TENANT`. */
export const parseTenantFilter = (text: string): Parsed<{ readonly category: string; readonly tenant?: string }> => {
  if (!text.includes("/")) {
    const category = segment("category", text)
    return category.ok ? ok({ category: category.value }) : category
  }
  return parseTenantTarget(text)
}

/** A run name for `work run --name`. */
export const parseRunName = (text: string): Parsed<string> => segment("run name", text)
