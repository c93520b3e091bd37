/**
 * Names are bytes (docs: safety model, "Names are bytes"). A POSIX file name is any bytes but `/` and NUL; a
 * JavaScript string is UTF-16. The library carries every name and path as a string in which each byte that is
 * not part of valid UTF-8 stands for itself as one lone low surrogate, U+DC80 + (byte − 0x80) (Python's
 * "surrogateescape"). Valid UTF-8 never decodes to a lone surrogate, so the mapping is lossless both ways:
 * `bytesOfName(nameOfBytes(b))` is `b` for every byte string, and a path made of valid UTF-8 is the ordinary
 * string it always was (no cost, no change of any stored format).
 *
 * Where a path leaves the process (a syscall, git's stdin) it is turned back into its bytes by `bytesOfName`;
 * where a name enters it (a directory listing, git's NUL-separated output) it is decoded by `nameOfBytes`.
 * JSON keeps such a string as it is (`JSON.stringify` writes a lone surrogate as `\udcXX`), so manifests hold
 * these names losslessly. Human output never shows the raw form: see `domain/Display.ts`.
 */

const ESCAPE_BASE = 0xdc00
/** A U+DC80–U+DCFF that is not the second half of a surrogate pair (code units: no `u` flag). */
const LONE_ESCAPE = /(?<![\ud800-\udbff])[\udc80-\udcff]/

/** Whether `name` holds a byte that is not valid UTF-8 (one escaped lone surrogate or more). */
export const hasEscapedBytes = (name: string): boolean => LONE_ESCAPE.test(name)

const strict = new TextDecoder("utf-8", { fatal: true })

/** Length of the valid UTF-8 sequence starting at `i`, or 0 when the byte there starts none. */
const sequenceAt = (b: Uint8Array, i: number): number => {
  const x = b[i]!
  if (x < 0x80) return 1
  const need = x >= 0xc2 && x <= 0xdf ? 2 : x >= 0xe0 && x <= 0xef ? 3 : x >= 0xf0 && x <= 0xf4 ? 4 : 0
  if (need === 0 || i + need > b.length) return 0
  const y = b[i + 1]!
  // The second byte's range rules out overlong forms, surrogates (ED A0–BF) and code points above U+10FFFF.
  const lo = x === 0xe0 ? 0xa0 : x === 0xf0 ? 0x90 : 0x80
  const hi = x === 0xed ? 0x9f : x === 0xf4 ? 0x8f : 0xbf
  if (y < lo || y > hi) return 0
  for (let k = 2; k < need; k++) if ((b[i + k]! & 0xc0) !== 0x80) return 0
  return need
}

/** A name's bytes as the library's string: valid UTF-8 decoded, every other byte escaped as U+DC80–U+DCFF. */
export const nameOfBytes = (bytes: Uint8Array): string => {
  try {
    return strict.decode(bytes)
  } catch {
    // Not valid UTF-8 (rare): decode sequence by sequence, escaping each byte that starts none.
  }
  let out = ""
  let i = 0
  while (i < bytes.length) {
    const n = sequenceAt(bytes, i)
    if (n === 0) {
      out += String.fromCharCode(ESCAPE_BASE + bytes[i]!)
      i++
    } else {
      out += strict.decode(bytes.subarray(i, i + n))
      i += n
    }
  }
  return out
}

const encoder = new TextEncoder()

/**
 * The bytes a name stands for: UTF-8, except that each lone U+DC80–U+DCFF is its byte again. (Any other lone
 * surrogate cannot come from `nameOfBytes`; it is encoded as UTF-8 encodes it, U+FFFD.)
 */
export const bytesOfName = (name: string): Uint8Array => {
  if (!hasEscapedBytes(name)) return encoder.encode(name)
  const parts: Array<Uint8Array> = []
  let length = 0
  let start = 0
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < name.length) {
      const d = name.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++ // a pair: an astral character, valid UTF-8
        continue
      }
    }
    if (c >= 0xdc80 && c <= 0xdcff) {
      const text = encoder.encode(name.slice(start, i))
      parts.push(text, Uint8Array.of(c - ESCAPE_BASE))
      length += text.length + 1
      start = i + 1
    }
  }
  const rest = encoder.encode(name.slice(start))
  parts.push(rest)
  length += rest.length
  const out = new Uint8Array(length)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** The offset of the first byte that is not part of valid UTF-8 (by the rule `nameOfBytes` uses), or -1. */
export const invalidUtf8At = (bytes: Uint8Array): number => {
  let i = 0
  while (i < bytes.length) {
    if (bytes[i]! < 0x80) {
      i++
      continue
    }
    const n = sequenceAt(bytes, i)
    if (n === 0) return i
    i += n
  }
  return -1
}

const compareBytes = (a: Uint8Array, b: Uint8Array): number => {
  const common = Math.min(a.length, b.length)
  for (let i = 0; i < common; i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}

/**
 * Names in byte order (strcmp of their bytes: the order libuv lists them and git sorts paths), which for UTF-8 is
 * code point order. A name holding bytes that are not UTF-8 is compared by its bytes.
 */
export const byteOrder = (a: string, b: string): number => {
  if (hasEscapedBytes(a) || hasEscapedBytes(b)) return compareBytes(bytesOfName(a), bytesOfName(b))
  const common = Math.min(a.length, b.length)
  for (let i = 0; i < common; i++) {
    const x = a.codePointAt(i)!
    const y = b.codePointAt(i)!
    if (x !== y) return x - y
    if (x > 0xffff) i++
  }
  return a.length - b.length
}
