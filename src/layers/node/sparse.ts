/**
 * Copies and hashes that keep a sparse file's holes (docs/snapshots.md "State snapshots": a 1 GiB file with nothing
 * allocated stays a few KiB on disk in a snapshot and again on restore). Only a source with fewer allocated
 * bytes than its length (`hasHoles`) comes here; a dense file keeps the plain copy, and stays dense.
 *
 * With the native addon the data extents are found with SEEK_DATA/SEEK_HOLE (Node has no lseek): holes are
 * never read, and only data is written. Without it every block is read and the all-zero ones are not written.
 * Either way the copy's length is set last (ftruncate: a trailing hole has no write that would set it), and
 * the SHA-256 is of every byte, holes fed as zeros from memory. Reads and writes are at explicit offsets
 * (lseek moves the descriptor's position).
 *
 * The algorithm is written once, as a generator of I/O requests, and run either with synchronous syscalls
 * (small files, in the caller's synchronous step) or on the thread pool with a yield to the event loop
 * between long stretches of hashing zeros.
 */
import type { Hash } from "node:crypto"
import * as fs from "node:fs"
import type { Fsat } from "./fsat.js"
import * as os from "node:os"

/** lseek(fd, offset, SEEK_DATA = 0 | SEEK_HOLE = 1): the offset, or a negative errno (-ENXIO: no data from there on). */
export type SeekData = NonNullable<Fsat["seek"]>

const NO_DATA = -(os.constants.errno.ENXIO ?? 6)
const CHUNK = 64 * 1024
/** Zero runs shorter than a block are written: a file system can only leave whole blocks unallocated. */
const BLOCK = 4096
/** Hashing zeros: this many bytes per update, and a yield to the event loop after every this many updates. */
const ZEROS = Buffer.alloc(1 << 20)
const UPDATES_PER_YIELD = 64

/** A regular file whose allocated blocks (512-byte units, stat(2)) cover less than its length: it has holes. */
export const hasHoles = (stats: fs.Stats): boolean => stats.isFile() && stats.blocks * 512 < stats.size

type Request =
  | { readonly op: "read"; readonly buffer: Buffer; readonly length: number; readonly position: number }
  | { readonly op: "write"; readonly buffer: Buffer; readonly start: number; readonly end: number; readonly position: number }
  | { readonly op: "pause" }

/** A hole up to the next data, or data up to the next hole (`Infinity`: up to EOF); `undefined` at the end. */
const segmentAt = (fd: number, at: number, seek: SeekData | undefined): { readonly hole: boolean; readonly end: number } | undefined => {
  if (seek === undefined) return { hole: false, end: Infinity }
  const data = seek(fd, at, 0)
  if (data === NO_DATA) {
    const size = fs.fstatSync(fd).size
    return size > at ? { hole: true, end: size } : undefined
  }
  // A file system that cannot answer (or a file changing under us) is read as data to its end.
  if (data < 0 || data < at) return { hole: false, end: Infinity }
  if (data > at) return { hole: true, end: data }
  const hole = seek(fd, at, 1)
  return { hole: false, end: hole > at ? hole : Infinity }
}

const isZero = (buffer: Buffer, start: number, end: number): boolean => buffer.compare(ZEROS, 0, end - start, start, end) === 0

/**
 * Read `source` from offset 0 to its end, hashing every byte; with a `target`, write what is not a hole there
 * at the same offset (`skipZeroBlocks`: not the all-zero blocks either). Answers the length seen.
 */
function* sparsePlan(
  source: number,
  target: number | undefined,
  hash: Hash | undefined,
  seek: SeekData | undefined,
  buffer: Buffer
): Generator<Request, number, number> {
  const skipZeroBlocks = seek === undefined
  let at = 0
  for (;;) {
    const segment = segmentAt(source, at, seek)
    if (segment === undefined) return at
    if (segment.hole) {
      for (let updates = 1; at < segment.end; updates++) {
        const n = Math.min(ZEROS.byteLength, segment.end - at)
        hash?.update(ZEROS.subarray(0, n))
        at += n
        if (updates % UPDATES_PER_YIELD === 0) yield { op: "pause" }
      }
      continue
    }
    while (at < segment.end) {
      const n = yield { op: "read", buffer, length: Math.min(buffer.byteLength, segment.end - at), position: at }
      if (n === 0) return at
      hash?.update(buffer.subarray(0, n))
      if (target !== undefined) {
        if (!skipZeroBlocks) yield { op: "write", buffer, start: 0, end: n, position: at }
        else {
          // Runs of blocks (aligned to the file's offsets) that hold a non-zero byte, one write each.
          let run = -1
          for (let from = 0; from < n;) {
            const to = Math.min(n, from + BLOCK - ((at + from) % BLOCK))
            const zero = isZero(buffer, from, to)
            if (!zero && run < 0) run = from
            if (zero && run >= 0) {
              yield { op: "write", buffer, start: run, end: from, position: at + run }
              run = -1
            }
            from = to
          }
          if (run >= 0) yield { op: "write", buffer, start: run, end: n, position: at + run }
        }
      }
      at += n
    }
  }
}

/** A descriptor's error names no path: name the copy, so a failing write is never taken for an unreadable source. */
const naming = (to: string, cause: unknown): unknown => {
  if (typeof cause === "object" && cause !== null && !("path" in cause)) Object.assign(cause, { path: to })
  return cause
}

const SYNC_BUFFER = Buffer.allocUnsafe(CHUNK)

const runSync = (plan: Generator<Request, number, number>, source: number, target: number | undefined, to: string): number => {
  let step = plan.next(0)
  while (step.done !== true) {
    const request = step.value
    let answer = 0
    if (request.op === "read") answer = fs.readSync(source, request.buffer, 0, request.length, request.position)
    else if (request.op === "write") {
      try {
        for (let done = request.start; done < request.end;) {
          done += fs.writeSync(target!, request.buffer, done, request.end - done, request.position + done - request.start)
        }
      } catch (cause) {
        throw naming(to, cause)
      }
    }
    step = plan.next(answer)
  }
  return step.value
}

const readAt = (fd: number, buffer: Buffer, length: number, position: number) =>
  new Promise<number>((resolve, reject) => fs.read(fd, buffer, 0, length, position, (e, n) => (e ? reject(e) : resolve(n))))

const writeAt = (fd: number, buffer: Buffer, start: number, length: number, position: number) =>
  new Promise<number>((resolve, reject) => fs.write(fd, buffer, start, length, position, (e, n) => (e ? reject(e) : resolve(n))))

const runAsync = async (plan: Generator<Request, number, number>, source: number, target: number | undefined, to: string): Promise<number> => {
  let step = plan.next(0)
  while (step.done !== true) {
    const request = step.value
    let answer = 0
    if (request.op === "read") answer = await readAt(source, request.buffer, request.length, request.position)
    else if (request.op === "write") {
      try {
        for (let done = request.start; done < request.end;) {
          done += await writeAt(target!, request.buffer, done, request.end - done, request.position + done - request.start)
        }
      } catch (cause) {
        throw naming(to, cause)
      }
    } else await new Promise<void>((resolve) => setImmediate(resolve))
    step = plan.next(answer)
  }
  return step.value
}

const setLength = (target: number, length: number, to: string) => {
  try {
    fs.ftruncateSync(target, length)
  } catch (cause) {
    throw naming(to, cause)
  }
}

/** Copy `source` (from offset 0) to the new, empty `target` keeping its holes, synchronously; answers the length. */
export const copySparseSync = (source: number, target: number, to: string, hash: Hash | undefined, seek: SeekData | undefined): number => {
  const length = runSync(sparsePlan(source, target, hash, seek, SYNC_BUFFER), source, target, to)
  setLength(target, length, to)
  return length
}

/** `copySparseSync` with reads and writes on the thread pool. */
export const copySparse = async (source: number, target: number, to: string, hash: Hash | undefined, seek: SeekData | undefined): Promise<number> => {
  const length = await runAsync(sparsePlan(source, target, hash, seek, Buffer.allocUnsafe(CHUNK)), source, target, to)
  setLength(target, length, to)
  return length
}

/** Hash `fd` from offset 0, never reading its holes (with `seek`), synchronously; answers the length. */
export const hashSparseSync = (fd: number, hash: Hash, seek: SeekData | undefined): number =>
  runSync(sparsePlan(fd, undefined, hash, seek, SYNC_BUFFER), fd, undefined, "")

/** `hashSparseSync` with reads on the thread pool. */
export const hashSparse = (fd: number, hash: Hash, seek: SeekData | undefined): Promise<number> =>
  runAsync(sparsePlan(fd, undefined, hash, seek, Buffer.allocUnsafe(CHUNK)), fd, undefined, "")
