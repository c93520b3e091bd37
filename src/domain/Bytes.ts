/** Byte-level comparisons shared by the programs (a manifest re-read, a marker, a migrated file, the config mirror). Pure. */

/** Whether two byte arrays hold the same bytes. */
export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i])

const encoder = new TextEncoder()

/** How many bytes `text` takes in UTF-8 (a file name's length as a file system counts it, a profile's size). */
export const utf8Bytes = (text: string): number => encoder.encode(text).length
