/**
 * A directory's listing as resumable synchronous steps (support.ts `runWalk`), so a tenant of 50,000 runs is
 * listed in slices of the event loop, not in one `readdir` of 90 ms (BENCHMARKS.md "Event loop during a
 * background prune"). The entries are read a buffer at a time (`opendir`), then put in name order by a sort in
 * steps (domain/Steps.ts): the answer `readdirSync` and a sort would give. Names are
 * lossless as in osPath.ts: a name that comes back holding U+FFFD restarts the listing with names as bytes.
 *
 * Like a single `readdir` of a big directory (several `getdents` calls), an entry present throughout is listed
 * once; one created or removed meanwhile may or may not be.
 */
import * as fs from "node:fs"
import { nameOfBytes } from "../../domain/NameBytes.js"
import { sortSteps, type Steps } from "../../domain/Steps.js"
import type { DirEntry, FileType } from "../../services/FileSystem.js"
import { osPath } from "./osPath.js"
import type { SyncWalk } from "./syncWalk.js"

/** Entries one `readdir` call of the listing reads. */
const READ_BUFFER = 256
/** Entries read between two looks at the clock. */
const CLOCK_EVERY = 64

const REPLACEMENT = "\ufffd"

const typeOf = (dirent: fs.Dirent): FileType =>
  dirent.isFile() ? "File" : dirent.isDirectory() ? "Directory" : dirent.isSymbolicLink() ? "SymbolicLink" : "Other"

const byName = (a: DirEntry, b: DirEntry): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** Start listing `path` (opening it may throw, as `readdirSync` would); steps never follow a link below it. */
export const startListing = (path: string): SyncWalk<ReadonlyArray<DirEntry>> => {
  const target = osPath(path)
  let asBytes = false
  let dir: fs.Dir | undefined = fs.opendirSync(target, { bufferSize: READ_BUFFER })
  let entries: Array<DirEntry> = []
  /** The sort under way once every entry is read (domain/Steps.ts), and its answer. */
  let sorting: Steps<Array<DirEntry>> | undefined
  let sorted: ReadonlyArray<DirEntry> | undefined
  const close = () => {
    const open = dir
    dir = undefined
    open?.closeSync()
  }
  /** Read until the directory ends (true) or `until` passes (false). */
  const read = (open: fs.Dir, until: number): boolean => {
    for (let n = 1; ; n++) {
      if (n % CLOCK_EVERY === 0 && performance.now() >= until) return false
      const dirent = open.readSync()
      if (dirent === null) return true
      if (asBytes) {
        entries.push({ name: nameOfBytes(dirent.name as unknown as Buffer), type: typeOf(dirent) })
      } else if (dirent.name.includes(REPLACEMENT)) {
        // Lossy or a real U+FFFD: list again, every name as bytes.
        close()
        // (Node's types allow only string encodings here; "buffer" gives every name as a Buffer.)
        dir = fs.opendirSync(target, { bufferSize: READ_BUFFER, encoding: "buffer" as BufferEncoding })
        asBytes = true
        entries = []
        return read(dir, until)
      } else {
        entries.push({ name: dirent.name, type: typeOf(dirent) })
      }
    }
  }
  return {
    step: (until) => {
      if (dir !== undefined) {
        if (!read(dir, until)) return false
        close()
        sorting = sortSteps(entries, byName)
      }
      if (sorting === undefined) return true
      for (;;) {
        const next = sorting.next()
        if (next.done === true) {
          sorted = next.value
          sorting = undefined
          return true
        }
        if (performance.now() >= until) return false
      }
    },
    result: () => sorted ?? [],
    close
  }
}
