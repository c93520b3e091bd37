/**
 * The judgement behind the FileSystem port's `replaceFileIfUnchanged` (DESIGN "Safety rules": replace a file a
 * person may edit only if it is still what was read), pure and shared by both layers so they cannot drift:
 * is the entry at a path still the version a program read (same regular file, by device and inode, holding
 * the same bytes), or still absent? Else, in words, what changed.
 */
import { FileSystemError } from "./Errors.js"
import { aFileType } from "./FileTypeWords.js"

/** A regular file as a program read it: the identity of its inode and exactly the bytes read. */
export interface FileVersion {
  readonly dev: number
  readonly ino: number
  readonly bytes: Uint8Array
}

/** What a conditional replace expects at its path: that version, or `null` for nothing there at all. */
export type ExpectedFile = FileVersion | null

/** The entry at the path now, as `lstat` describes it (`type` is the port's `FileType`); `undefined` when none. */
export interface FoundEntry {
  readonly type: string
  readonly dev: number
  readonly ino: number
  readonly size: number
}

/** How the entry at a path differs from what was read (the words of the `Changed` error's detail). */
export type FileChangeKind = "created" | "removed" | "replaced" | "modified"

export interface FileChange {
  readonly kind: FileChangeKind
  readonly detail: string
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.byteLength !== b.byteLength) return false
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * `null` when `found` is still `expected`; else the change. `readBytes` is called only when identity and size
 * already match, and must read the same inode (the Node layer reads through a descriptor it checks again).
 */
export const changeSince = (
  expected: ExpectedFile,
  found: FoundEntry | undefined,
  readBytes: () => Uint8Array
): FileChange | null => {
  if (expected === null) {
    return found === undefined ? null : { kind: "created", detail: `${aFileType(found.type)} was created there since it was read as missing` }
  }
  if (found === undefined) return { kind: "removed", detail: "it was removed since it was read" }
  if (found.type !== "File") return { kind: "replaced", detail: `it was replaced by ${aFileType(found.type)} since it was read` }
  if (found.dev !== expected.dev || found.ino !== expected.ino) return { kind: "replaced", detail: "it was replaced by another file since it was read" }
  if (found.size !== expected.bytes.byteLength || !sameBytes(readBytes(), expected.bytes)) {
    return { kind: "modified", detail: "it was modified since it was read" }
  }
  return null
}

/** The port's answer when the entry changed: a `FileSystemError` with reason `Changed` (no errno applies). */
export const changedError = (method: string, path: string, change: FileChange): FileSystemError =>
  new FileSystemError({ reason: "Changed", errno: "", method, path, detail: change.detail })

/** Whether an error is a conditional replace's `Changed` answer (the file was edited meanwhile). */
export const isChanged = (error: { readonly _tag: string; readonly reason?: string }): boolean =>
  error._tag === "FileSystemError" && error.reason === "Changed"
