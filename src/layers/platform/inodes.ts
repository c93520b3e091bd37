/**
 * The inodes as `pi-agent-storage/testing`'s platform FileSystem (`MemoryPlatformFileSystem.ts`) sees them:
 * file contents it may grow in place, what the world does not record (gid, atime), `File.Info` and open flags.
 */
import * as PlatformFileSystem from "@effect/platform/FileSystem"
import * as Option from "effect/Option"
import { type FileNode, type Node, sizeOf } from "../MemoryWorld.js"

/**
 * File contents this layer grows in place: buffers it allocated, with spare capacity after the file's length
 * (appends and sinks are amortised, not one copy of the whole file per chunk). Any other buffer (written by
 * the library or a fixture, possibly a view of someone else's memory) is copied before this layer writes it.
 */
const growable = new WeakSet<ArrayBufferLike>()

export const writableData = (node: FileNode, length: number): Uint8Array => {
  const cur = node.data
  const target = Math.max(length, cur.length)
  if (growable.has(cur.buffer) && cur.byteOffset + target <= cur.buffer.byteLength) {
    if (target > cur.length) {
      const grown = new Uint8Array(cur.buffer, cur.byteOffset, target)
      grown.fill(0, cur.length)
      node.data = grown
    }
    return node.data
  }
  const buffer = new ArrayBuffer(Math.max(target, cur.length * 2, 256))
  growable.add(buffer)
  const next = new Uint8Array(buffer, 0, target)
  next.set(cur)
  node.data = next
  return next
}

export const setLength = (node: FileNode, length: number): void => {
  if (length >= node.data.length) writableData(node, length)
  else node.data = growable.has(node.data.buffer) ? node.data.subarray(0, length) : node.data.slice(0, length)
}

/** A copy the caller owns (never a view of the file). */
export const copyOut = (data: Uint8Array, start = 0, end = data.length): Uint8Array => new Uint8Array(data.subarray(start, end))

// ---------------------------------------------------------------------------------------------- what the world does not record

/** What the world's inodes do not record (see the module comment). */
export const extras = new WeakMap<Node, { gid?: number; atimeMs?: number }>()
export const extraOf = (node: Node) => {
  let e = extras.get(node)
  if (e === undefined) extras.set(node, (e = {}))
  return e
}

const S_IFREG = 0o100000
const S_IFDIR = 0o040000
const S_IFLNK = 0o120000
const BLOCK = 4096

export const infoOf = (node: Node): PlatformFileSystem.File.Info => {
  const size = sizeOf(node)
  const extra = extras.get(node)
  return {
    type: node.kind,
    mtime: Option.some(new Date(node.mtimeMs)),
    atime: Option.some(new Date(extra?.atimeMs ?? node.mtimeMs)),
    birthtime: Option.none(),
    dev: node.dev,
    rdev: Option.some(0),
    ino: Option.some(node.ino),
    mode: (node.kind === "File" ? S_IFREG : node.kind === "Directory" ? S_IFDIR : S_IFLNK) | node.mode,
    nlink: Option.some(node.nlink),
    uid: Option.some(node.uid),
    gid: Option.some(extra?.gid ?? node.uid),
    size: PlatformFileSystem.Size(size),
    blksize: Option.some(PlatformFileSystem.Size(BLOCK)),
    blocks: Option.some(Math.ceil(size / BLOCK) * (BLOCK / 512))
  }
}

// ---------------------------------------------------------------------------------------------- open flags

export interface Flags {
  readonly read: boolean
  readonly write: boolean
  readonly create: boolean
  readonly exclusive: boolean
  readonly truncate: boolean
  readonly append: boolean
}
const flags = (read: boolean, write: boolean, create: boolean, exclusive: boolean, truncate: boolean, append: boolean): Flags =>
  ({ read, write, create, exclusive, truncate, append })
export const FLAGS: Readonly<Record<PlatformFileSystem.OpenFlag, Flags>> = {
  "r": flags(true, false, false, false, false, false),
  "r+": flags(true, true, false, false, false, false),
  "w": flags(false, true, true, false, true, false),
  "wx": flags(false, true, true, true, true, false),
  "w+": flags(true, true, true, false, true, false),
  "wx+": flags(true, true, true, true, true, false),
  "a": flags(false, true, true, false, false, true),
  "ax": flags(false, true, true, true, false, true),
  "a+": flags(true, true, true, false, false, true),
  "ax+": flags(true, true, true, true, false, true)
}
