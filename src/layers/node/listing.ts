/**
 * A directory's listing as resumable synchronous steps (support.ts `runWalk`), so a tenant of 50,000 runs is
 * listed in slices of the event loop, not in one `readdir` of 90 ms (BENCHMARKS.md "Event loop during a
 * background prune"). The entries are read a buffer at a time (`opendir`), sorted in runs as they come, and the
 * runs merged pairwise into name order (a merge resumes where a slice stopped it): the answer `readdirSync`
 * and a sort would give. Names are
 * lossless as in osPath.ts: a name that comes back holding U+FFFD restarts the listing with names as bytes.
 *
 * Like a single `readdir` of a big directory (several `getdents` calls), an entry present throughout is listed
 * once; one created or removed meanwhile may or may not be.
 */
import * as fs from "node:fs"
import { nameOfBytes } from "../../domain/NameBytes.js"
import type { DirEntry, FileType } from "../../services/FileSystem.js"
import { osPath } from "./osPath.js"
import type { SyncWalk } from "./syncWalk.js"

/** Entries one `readdir` call of the listing reads. */
const READ_BUFFER = 256
/** Entries sorted at once while reading: well under a millisecond. */
const SORTED_RUN = 1024
/** Entries read between two looks at the clock. */
const CLOCK_EVERY = 64

const REPLACEMENT = "\ufffd"

const typeOf = (dirent: fs.Dirent): FileType =>
  dirent.isFile() ? "File" : dirent.isDirectory() ? "Directory" : dirent.isSymbolicLink() ? "SymbolicLink" : "Other"

const byName = (a: DirEntry, b: DirEntry): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** Two sorted runs being merged, resumable: `step` merges until both are used up (true) or `until` passes. */
class Merge {
  readonly out: Array<DirEntry>
  private i = 0
  private j = 0
  private k = 0
  constructor(private readonly a: ReadonlyArray<DirEntry>, private readonly b: ReadonlyArray<DirEntry>) {
    this.out = new Array<DirEntry>(a.length + b.length)
  }

  step(until: number): boolean {
    const { a, b, out } = this
    let { i, j, k } = this
    while (k < out.length) {
      const end = Math.min(out.length, k + CLOCK_EVERY * 16)
      while (k < end) out[k++] = j === b.length || (i < a.length && byName(b[j]!, a[i]!) >= 0) ? a[i++]! : b[j++]!
      if (performance.now() >= until) break
    }
    this.i = i
    this.j = j
    this.k = k
    return k === out.length
  }
}

/** Start listing `path` (opening it may throw, as `readdirSync` would); steps never follow a link below it. */
export const startListing = (path: string): SyncWalk<ReadonlyArray<DirEntry>> => {
  const target = osPath(path)
  let asBytes = false
  let dir: fs.Dir | undefined = fs.opendirSync(target, { bufferSize: READ_BUFFER })
  let run: Array<DirEntry> = []
  /** Sorted runs; merged pairwise from the front, each result queued at the back, until one is left. */
  let runs: Array<ReadonlyArray<DirEntry>> = []
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
      let name: string
      if (asBytes) {
        name = nameOfBytes(dirent.name as unknown as Buffer)
      } else if (dirent.name.includes(REPLACEMENT)) {
        // Lossy or a real U+FFFD: list again, every name as bytes.
        close()
        // (Node's types allow only string encodings here; "buffer" gives every name as a Buffer.)
        dir = fs.opendirSync(target, { bufferSize: READ_BUFFER, encoding: "buffer" as BufferEncoding })
        asBytes = true
        run = []
        runs = []
        return read(dir, until)
      } else {
        name = dirent.name
      }
      run.push({ name, type: typeOf(dirent) })
      if (run.length === SORTED_RUN) {
        runs.push(run.sort(byName))
        run = []
      }
    }
  }
  /** The merge under way, if any. */
  let merging: Merge | undefined
  return {
    step: (until) => {
      if (dir !== undefined) {
        if (!read(dir, until)) return false
        close()
        if (run.length > 0) runs.push(run.sort(byName))
        run = []
        return runs.length <= 1
      }
      if (merging === undefined) {
        if (runs.length <= 1) return true
        merging = new Merge(runs.shift()!, runs.shift()!)
      }
      if (!merging.step(until)) return false
      runs.push(merging.out)
      merging = undefined
      return runs.length <= 1
    },
    result: () => runs[0] ?? [],
    close
  }
}
