/**
 * `pi-storage config snapshot` answered from the clean scan (docs/config-history.md "The stat cache"): when the
 * stat cache's clean scan still holds (domain/ConfigCleanScan.ts), nothing changed, and this prints what the
 * full snapshot would (the same result, rendered by the same function) without loading effect, the program or
 * git. Loaded by launch.ts only for the short route's `config snapshot`; anything it cannot prove (no cache, a
 * cache it cannot trust, a path that answers otherwise, a `PI_STORAGE_*` setting whose warnings the program
 * would print) answers `false`, and the full program runs. Reads only; writes nothing but stdout.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { agentPaths, resolveAgentDir } from "../domain/AgentPaths.js"
import { cleanScanHolds, decodeCleanScan, type Identity, identityOf } from "../domain/ConfigCleanScan.js"
import {
  CHANGE_SENTINEL,
  HISTORY_DIR_NAME,
  parseWebRootRecord,
  PENDING_MARKER,
  STAT_CACHE,
  STAT_CACHE_MAX_BYTES,
  statCacheFits,
  statCacheScope,
  WEB_ROOT_RECORD,
  WEB_ROOT_RECORD_MAX_BYTES,
  webMirrorOf
} from "../domain/ConfigHistoryLayout.js"
import { findPackedRef, parseHeadFile, parseLooseRef } from "../domain/GitFormats.js"
import { resolveWebDataRoot } from "../domain/WebPaths.js"
import { nodeEnv, nodeEnvNames } from "../layers/NodeEnv.js"
import type { SplitArgv } from "./argv.js"
import { useColor } from "./color.js"
import { renderSnapshot } from "./commands/configRender.js"
import { painter } from "./format.js"
import type { DirectConfigSnapshot } from "./route.js"
import { writeOut } from "./streams.js"

const env = nodeEnv

const REF_MAX_BYTES = 4096
const PACKED_REFS_MAX_BYTES = 1 << 20

/** What lstat answers for `path` as an identity; `null` when absent, `undefined` when it cannot be told. */
const identityNow = (path: string): Identity | null | undefined => {
  try {
    const s = fs.lstatSync(path, { throwIfNoEntry: false })
    if (s === undefined) return null
    const type = s.isFile() ? "File" : s.isDirectory() ? "Directory" : s.isSymbolicLink() ? "SymbolicLink" : "Other"
    // The identity the full scan records, by the same rule (ConfigCleanScan `identityOf`).
    return identityOf({ type, size: s.size, mode: s.mode, ino: s.ino, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs })
  } catch (e) {
    // A component on the way is not a directory: absent, as the full scan reads it.
    return (e as NodeJS.ErrnoException).code === "ENOTDIR" ? null : undefined
  }
}

/**
 * A small regular file of ours, not followed through a link: its bytes, or `undefined` (absent, too large, not
 * a regular file, owned by someone else, unreadable).
 */
const readOwnFile = (path: string, maxBytes: number): Buffer | undefined => {
  let fd: number | undefined
  try {
    fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
    const st = fs.fstatSync(fd)
    if (!st.isFile() || st.size > maxBytes || (process.getuid !== undefined && st.uid !== process.getuid())) return undefined
    const buffer = Buffer.alloc(st.size)
    let read = 0
    while (read < st.size) {
      const n = fs.readSync(fd, buffer, read, st.size - read, read)
      if (n === 0) return undefined
      read += n
    }
    return buffer
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** HEAD from the ref files, strictly; `undefined` when it cannot be read. */
const headNow = (gitDir: string): string | null | undefined => {
  const headFile = readOwnFile(NodePath.join(gitDir, "HEAD"), REF_MAX_BYTES)
  if (headFile === undefined) return undefined
  const h = parseHeadFile(headFile)
  if (!h.ok) return undefined
  if (h.value._tag === "Detached") return h.value.oid
  const loose = readOwnFile(NodePath.join(gitDir, ...h.value.ref.split("/")), REF_MAX_BYTES)
  if (loose !== undefined) {
    const oid = parseLooseRef(loose)
    return oid.ok ? oid.value : undefined
  }
  const packed = readOwnFile(NodePath.join(gitDir, "packed-refs"), PACKED_REFS_MAX_BYTES)
  if (packed === undefined) return undefined
  const found = findPackedRef(packed, h.value.ref)
  return found.ok && found.value !== undefined ? found.value : undefined
}

/** Print the snapshot's answer and `true` when the clean scan proves nothing changed; else `false` (nothing printed). */
export const fastConfigSnapshot = (split: SplitArgv, route: DirectConfigSnapshot): boolean => {
  if (nodeEnvNames().some((k) => k.startsWith("PI_STORAGE_"))) return false
  const home = os.homedir()
  const cwd = process.cwd()
  const agentDir = resolveAgentDir({ explicit: split.globals.agentDir, env, home, cwd }).path
  // A link at the agent dir itself is resolved by the program (AgentDir): left to it.
  if (identityNow(agentDir)?.[0] !== "Directory") return false
  const webRoot = resolveWebDataRoot({ explicit: route.webDataRoot, env, home, cwd }).path
  const historyDir = NodePath.join(agentPaths(agentDir).configBackupsDir, HISTORY_DIR_NAME)
  const gitDir = NodePath.join(historyDir, ".git")
  // Which mirror this root's files are in: only a record that reads is trusted here (else the program decides).
  const record = readOwnFile(NodePath.join(gitDir, WEB_ROOT_RECORD), WEB_ROOT_RECORD_MAX_BYTES)
  const recorded = record === undefined ? undefined : parseWebRootRecord(record.toString("utf8"))
  if (recorded === undefined || !recorded.ok) return false
  const bytes = readOwnFile(NodePath.join(gitDir, STAT_CACHE), STAT_CACHE_MAX_BYTES)
  if (bytes === undefined) return false
  let cache: unknown
  try {
    cache = JSON.parse(bytes.toString("utf8"))
  } catch {
    return false
  }
  if (typeof cache !== "object" || cache === null) return false
  const c = cache as Record<string, unknown>
  if (!statCacheFits(c, statCacheScope(webRoot, webMirrorOf(webRoot, recorded.webRoot ?? webRoot))) || typeof c.head !== "string") return false
  const clean = decodeCleanScan(c.clean)
  if (clean === undefined) return false
  // An interrupted staging or change is the program's to report and repair.
  if (identityNow(NodePath.join(historyDir, PENDING_MARKER)) !== null || identityNow(NodePath.join(historyDir, CHANGE_SENTINEL)) !== null) return false
  if (headNow(gitDir) !== c.head) return false
  if (!cleanScanHolds(clean, { agentDir, webRoot }, identityNow)) return false
  const result = { revision: null, roots: { agentDir, webDataRoot: webRoot }, changed: [], skipped: clean.skipped }
  if (route.json) writeOut(JSON.stringify(result, null, 2) + "\n")
  else {
    const paint = painter(useColor({ noColorFlag: split.globals.noColor, noColorEnv: env("NO_COLOR"), term: env("TERM"), isTTY: process.stdout.isTTY }))
    writeOut(renderSnapshot(paint, result as Parameters<typeof renderSnapshot>[1]).text)
  }
  return true
}
