/** SHA-256 of text (UTF-8), lower-case hex: content-derived names and ids, and manifests' own hashes. */
import { createHash } from "node:crypto"

export const sha256Hex = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")
