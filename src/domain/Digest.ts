/** SHA-256 of text (UTF-8), lower-case hex: content-derived names and ids, and manifests' own hashes. */
import { createHash } from "node:crypto"

export const sha256Hex = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

/** SHA-256 of byte ranges one after another (no copy, no string), lower-case hex: a large manifest's own hash. */
export const sha256HexOfBytes = (...parts: ReadonlyArray<Uint8Array>): string => {
  const hash = createHash("sha256")
  for (const part of parts) hash.update(part)
  return hash.digest("hex")
}

/** The object id git gives a blob of these bytes (SHA-1 of `blob <size>\0` and the bytes): a patch's `index` line. */
export const gitBlobId = (bytes: Uint8Array): string =>
  createHash("sha1").update(`blob ${bytes.length}\0`, "latin1").update(bytes).digest("hex")
