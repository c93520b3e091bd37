/**
 * The errors of `pi-agent-storage/testing`'s platform FileSystem (`MemoryPlatformFileSystem.ts`): what
 * `@effect/platform-node` builds from a Node ErrnoException, built from a simulated errno.
 */
import * as PlatformError from "@effect/platform/Error"
import { CRASHED, type Errno } from "../MemoryWorld.js"

/** `@effect/platform-node`'s errno → reason mapping (its internal/error.ts), matched exactly. */
export const platformReasonOfErrno = (code: string): PlatformError.SystemErrorReason => {
  switch (code) {
    case "ENOENT":
      return "NotFound"
    case "EACCES":
      return "PermissionDenied"
    case "EEXIST":
      return "AlreadyExists"
    case "EISDIR":
    case "ENOTDIR":
    case "ELOOP":
      return "BadResource"
    case "EBUSY":
      return "Busy"
    default:
      return "Unknown"
  }
}

const MESSAGES: Readonly<Record<string, string>> = {
  ENOENT: "no such file or directory",
  EEXIST: "file already exists",
  EISDIR: "illegal operation on a directory",
  ENOTDIR: "not a directory",
  ENOTEMPTY: "directory not empty",
  ELOOP: "too many symbolic links encountered",
  EBUSY: "resource busy or locked",
  EINVAL: "invalid argument",
  EBADF: "bad file descriptor",
  EPERM: "operation not permitted",
  EACCES: "permission denied",
  EXDEV: "cross-device link not permitted",
  ENAMETOOLONG: "name too long",
  ENOSPC: "no space left on device",
  EIO: "i/o error",
  [CRASHED]: "the simulated process has crashed",
  ERR_FS_EISDIR: "Path is a directory",
  ERR_FS_CP_EINVAL: "cannot copy to a subdirectory of self or to itself",
  ERR_FS_CP_DIR_TO_NON_DIR: "cannot overwrite non-directory with directory",
  ERR_FS_CP_NON_DIR_TO_DIR: "cannot overwrite directory with non-directory"
}

/** A failure with the syscall that met it (defaults to the call's own). */
export interface Failure extends Errno {
  readonly syscall?: string
}
export const fail = (code: string, syscall?: string): Failure =>
  syscall === undefined ? { _tag: "Errno", errno: code } : { _tag: "Errno", errno: code, syscall }

/** The error Node's layer builds from an ErrnoException: the errno rides along as `cause.code`. */
export const systemError = (method: string, subject: string | number, code: string, syscall: string): PlatformError.SystemError => {
  const description = `${code}: ${MESSAGES[code] ?? "simulated failure"}, ${syscall}${typeof subject === "string" ? ` '${subject}'` : ""}`
  const cause = Object.assign(new Error(description), { code, syscall, ...(typeof subject === "string" ? { path: subject } : { fd: subject }) })
  return new PlatformError.SystemError({ reason: platformReasonOfErrno(code), module: "FileSystem", method, pathOrDescriptor: subject, syscall, description, cause })
}
