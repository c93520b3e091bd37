/**
 * Where the Node layer's paths meet `node:fs` (DESIGN "Names are bytes", domain/NameBytes.ts). Every path the
 * layer gives to `node:fs` goes through `osPath`, and every directory listing or link target comes back
 * through `listDirectory` / `readLinkLossless`: a byte of a name that is not UTF-8 travels as its escaped lone
 * surrogate in the library and as itself on disk. Node encodes a string path as UTF-8 (a lone surrogate
 * becomes U+FFFD, another file) and decodes names the same lossy way, so both directions go through bytes
 * exactly when a name needs it. A valid UTF-8 name costs one regular-expression test (out) or one
 * `includes` per name (in), and nothing else changes for it.
 *
 * Imports `node:fs` and the pure domain only: the remover thread (removerThread.ts) loads it without Effect.
 */
import * as fs from "node:fs"
import { bytesOfName, hasEscapedBytes, nameOfBytes } from "../../domain/NameBytes.js"

/** What `node:fs` decodes a byte that is not UTF-8 to: a name holding it may have been decoded lossily. */
const REPLACEMENT = "\ufffd"

/** The bytes of a path that holds escaped bytes, for `node:fs`. */
const bytesPath = (path: string): Buffer => {
  const bytes = bytesOfName(path)
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** The path as `node:fs` must be given it: the string itself, or its bytes when it holds a byte that is not UTF-8. */
export const osPath = (path: string): string | Buffer => (hasEscapedBytes(path) ? bytesPath(path) : path)

/** How Node shows a path it was given as bytes (in its own errors): UTF-8 decoded lossily. */
export const lossyPath = (path: string): string => (hasEscapedBytes(path) ? bytesPath(path).toString("utf8") : path)

/** A directory's entries, each name exactly as on disk (lossless); unsorted, as `readdir` lists them. */
export const listDirectory = (path: string): Array<fs.Dirent> => {
  const target = osPath(path)
  const entries = fs.readdirSync(target, { withFileTypes: true })
  for (const entry of entries) {
    if (entry.name.includes(REPLACEMENT)) return listDirectoryBytes(target)
  }
  return entries
}

/** The listing read again as bytes (some name holds U+FFFD: lossy, or a real U+FFFD), each name decoded losslessly. */
const listDirectoryBytes = (target: string | Buffer): Array<fs.Dirent> => {
  const entries: Array<fs.Dirent<string | Buffer>> = fs.readdirSync(target, { withFileTypes: true, encoding: "buffer" })
  for (const entry of entries) entry.name = nameOfBytes(entry.name as Buffer)
  return entries as Array<fs.Dirent>
}

/** A symbolic link's target exactly as stored (lossless). */
export const readLinkLossless = (path: string): string => {
  const target = osPath(path)
  const text = fs.readlinkSync(target)
  return text.includes(REPLACEMENT) ? nameOfBytes(fs.readlinkSync(target, { encoding: "buffer" })) : text
}

/**
 * The path a failed `node:fs` call should be reported under. Node names a path it was given as bytes by their
 * lossy decoding; when that is `given` (or a path below it) the report names `given`'s escaped string instead.
 */
export const reportedPath = (reported: string, given: string): string => {
  if (!reported.includes(REPLACEMENT) || !hasEscapedBytes(given)) return reported
  const lossy = lossyPath(given)
  if (reported === lossy) return given
  if (reported.startsWith(`${lossy}/`)) return given + reported.slice(lossy.length)
  return reported
}
