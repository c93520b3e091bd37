/** SHA-256 of text (UTF-8), lower-case hex: content-derived names and ids, and manifests' own hashes. */
import { createHash } from "node:crypto"

export const sha256Hex = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

/** SHA-256 of byte ranges one after another (no copy, no string), lower-case hex: a large manifest's own hash. */
export const sha256HexOfBytes = (...parts: ReadonlyArray<Uint8Array>): string => {
  const hash = createHash("sha256")
  for (const part of parts) hash.update(part)
  return hash.digest("hex")
}
