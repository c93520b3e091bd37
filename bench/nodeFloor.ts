/**
 * The prune's syscall sequence (floor.c's `prune`) in plain synchronous JavaScript, deleting in C on the
 * thread pool through the same addon and batches as the Node layer: what Node itself costs for the protocol,
 * with no Effect runtime and none of the judgement (no lease verdicts, no report). A measuring tool of the
 * benchmark, never a way to prune: it removes every run of the tenant it is given.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type Fsat, loadFsat } from "../src/layers/node/fsat.js"

const MARKER = Buffer.from(JSON.stringify({ version: 1, purpose: "cleanup", host: "bench", pid: process.pid, createdAt: 0 }))
/** As nativeRemove.ts BATCH_MAX. */
const BATCH = 8

const listIfThere = (dir: string) => {
  try {
    fs.lstatSync(dir)
  } catch {
    return
  }
  fs.readdirSync(dir)
}

/** The addon, or why not (no floor row then). */
export const nodeFloorAddon = (): { readonly fsat: Fsat } | { readonly why: string } => {
  const loaded = loadFsat()
  return "fsat" in loaded && typeof loaded.fsat.removeTrees === "function" ? loaded : { why: "why" in loaded ? loaded.why : "no removeTrees" }
}

/** Prune every run of `tenant` as the protocol's syscalls in plain JavaScript; resolves to the runs removed. */
export const nodeFloorPrune = (fsat: Fsat, tenant: string): Promise<number> =>
  new Promise((resolve, reject) => {
    for (const dir of [path.dirname(path.dirname(tenant)), path.dirname(tenant), tenant]) fs.lstatSync(dir)
    const pruneMarker = path.join(tenant, ".prune")
    fs.writeFileSync(pruneMarker, MARKER, { flag: "wx" })
    fs.lstatSync(pruneMarker)
    for (const name of [".cleanup", ".trash"]) {
      fs.mkdirSync(path.join(tenant, name), { recursive: true, mode: 0o700 })
      fs.lstatSync(path.join(tenant, name))
    }
    fs.readdirSync(path.join(tenant, ".cleanup"))
    const runs: Array<{ readonly name: string; readonly manifest: Buffer }> = []
    for (const entry of fs.readdirSync(tenant, { withFileTypes: true })) {
      if (entry.name.startsWith(".") || !entry.isDirectory()) continue
      const manifest = fs.readFileSync(path.join(tenant, entry.name, ".pi-work-run.json"))
      JSON.parse(manifest.toString("utf8"))
      listIfThere(path.join(tenant, entry.name, ".leases"))
      runs.push({ name: entry.name, manifest })
    }
    // One removal batch at a time, of the removals waiting then (≤ 8), as nativeRemove.ts with one removal thread.
    let removed = 0
    let busy = false
    let scanned = false
    const waiting: Array<string> = []
    const pump = () => {
      if (busy) return
      if (waiting.length === 0) {
        if (scanned) {
          try {
            fs.lstatSync(pruneMarker)
            fs.unlinkSync(pruneMarker)
            resolve(removed)
          } catch (e) {
            reject(e)
          }
        }
        return
      }
      const batch = waiting.splice(0, BATCH)
      busy = true
      const status = fsat.removeTrees!(batch, batch.map(() => Number.MAX_SAFE_INTEGER), batch.map(() => Number.MAX_SAFE_INTEGER), (index, answer) => {
        if (answer === 0) removed++
        if (index === batch.length - 1) {
          busy = false
          pump()
        }
      })
      if (status !== 0) reject(new Error(`removeTrees: ${status}`))
    }
    for (const run of runs) {
      const marker = path.join(tenant, ".cleanup", run.name)
      fs.writeFileSync(marker, MARKER, { flag: "wx" })
      const taken = fs.lstatSync(marker)
      const dir = path.join(tenant, run.name)
      fs.lstatSync(dir)
      if (!fs.readFileSync(path.join(dir, ".pi-work-run.json")).equals(run.manifest)) throw new Error(`${dir} changed`)
      listIfThere(path.join(dir, ".leases"))
      const target = path.join(tenant, ".trash", `${run.name}.0123abcd`)
      fs.renameSync(dir, target)
      if (fs.lstatSync(marker).ino === taken.ino) fs.unlinkSync(marker)
      waiting.push(target)
      pump()
    }
    scanned = true
    pump()
  })
