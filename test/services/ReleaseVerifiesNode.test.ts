/**
 * docs/safety.md "How runs stay safe", on the Node layer: `release()` verifies what it touches. The run's own tool swaps the run
 * directory for a symlink to an outside directory holding a same-named lease and manifest, or replaces the
 * manifest by a hard link to an outside file of the same length: release (with or without `delete`) leaves
 * every outside byte as it was and says `released: false` with the reason.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { Effect } from "effect"
import * as NodeStorage from "../../src/layers/NodeStorage.js"
import { type ReleaseOutcome, WorkRuns, type WorkRun } from "../../src/services/WorkRuns.js"

let agentDir: string
let outside: string
beforeEach(() => {
  agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-release-"))
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "pi-outside-"))
})
afterEach(() => {
  fs.rmSync(agentDir, { recursive: true, force: true })
  fs.rmSync(outside, { recursive: true, force: true })
})

/** Acquire a run, let `attack` do what the tool does, then release it (optionally with delete). */
const acquireAttackRelease = (attack: (run: WorkRun) => void, del: boolean) =>
  Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      const w = yield* WorkRuns
      const run = yield* w.acquire({ category: "tools", tenant: "bash", runId: "victim" })
      attack(run)
      const outcome: ReleaseOutcome = yield* run.release(del ? { delete: true } : undefined)
      return outcome
    })).pipe(Effect.provide(NodeStorage.layerWith({ agentDir, migrate: false, workRuns: { opportunisticRetention: false } })))
  )

const snapshot = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name)
      if (e.isDirectory()) walk(p)
      else out[path.relative(dir, p)] = fs.readFileSync(p, "utf8")
    }
  }
  walk(dir)
  return out
}

describe("release verifies what it touches (Node)", () => {
  for (const del of [false, true]) {
    it(`a run directory swapped for a symlink to an outside directory: nothing outside changes${del ? " (delete: true)" : ""}`, async () => {
      let before: Record<string, string> = {}
      const outcome = await acquireAttackRelease((run) => {
        // The outside directory looks like the run: same-named lease and a manifest.
        fs.mkdirSync(path.join(outside, ".leases"))
        fs.writeFileSync(path.join(outside, ".leases", path.basename(run.leasePath)), fs.readFileSync(run.leasePath))
        fs.writeFileSync(path.join(outside, ".pi-work-run.json"), fs.readFileSync(path.join(run.path, ".pi-work-run.json")))
        fs.writeFileSync(path.join(outside, "precious.txt"), "outside data")
        fs.renameSync(run.path, `${run.path}.moved`)
        fs.symlinkSync(outside, run.path)
        before = snapshot(outside)
      }, del)
      expect(Object.keys(before)).toHaveLength(3)
      expect(snapshot(outside)).toEqual(before)
      expect(outcome).toEqual({ released: false, deleted: false, reason: expect.stringMatching(/is now a symlink/) })
    })

    it(`a manifest hard-linked to an outside file of the same length: the outside bytes stay${del ? " (delete: true)" : ""}`, async () => {
      const target = path.join(outside, "secret.json")
      const outcome = await acquireAttackRelease((run) => {
        const manifest = path.join(run.path, ".pi-work-run.json")
        fs.writeFileSync(target, "x".repeat(fs.statSync(manifest).size))
        fs.rmSync(manifest)
        fs.linkSync(target, manifest)
      }, del)
      expect(fs.readFileSync(target, "utf8")).toMatch(/^x+$/)
      expect(outcome).toEqual({ released: false, deleted: false, reason: expect.stringMatching(/has 2 links/) })
    })
  }

  it("an untouched run still releases, stamps and deletes as before", async () => {
    const kept = await acquireAttackRelease(() => {}, false)
    expect(kept).toEqual({ released: true, deleted: false })
    const manifest = JSON.parse(fs.readFileSync(path.join(agentDir, "work", "tools", "bash", "victim", ".pi-work-run.json"), "utf8"))
    expect(typeof manifest.releasedAt).toBe("number")
    expect(await acquireAttackRelease(() => {}, true)).toEqual({ released: true, deleted: true })
  })
})
