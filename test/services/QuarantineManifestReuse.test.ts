/**
 * The re-check under the cleanup marker reads the manifest again and reuses the scan's verdict only for the
 * very same bytes (the prune no longer decodes each victim's manifest twice, BENCHMARKS.md "Prune: deletion in C, batched, and cheaper errors"). Whatever changed in
 * between — another run's address, garbage, a manifest grown or cut — is decoded afresh and judged, so a
 * run whose manifest changed since the scan is never quarantined on the scan's word.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { DEFAULT_STALE_UNREADABLE_MS } from "../../src/domain/Liveness.js"
import { DEFAULT_REMOTE_LEASE_TTL_MS } from "../../src/domain/Retention.js"
import type { Deps } from "../../src/services/internal/deps.js"
import { prepareRemoval, quarantineOwnedRun } from "../../src/services/internal/removeRun.js"
import { type OwnedManifest, readManifest } from "../../src/services/internal/runFacts.js"
import { AGENT_DIR, spawnProcess } from "../support/memoryProcess.js"

const tenantDir = `${AGENT_DIR}/work/tools/bash`
const address = { tenantDir, category: "tools", tenant: "bash" }
const manifestOf = (runId: string) => `${tenantDir}/${runId}/.pi-work-run.json`
const text = (s: string) => new TextEncoder().encode(s)

/** A released run and the manifest as a scan read it. */
const releasedRun = (runId: string) =>
  Effect.gen(function*() {
    const world = MemoryWorld.make()
    const p = yield* spawnProcess(world)
    const run = yield* p.workRuns.acquire({ category: "tools", tenant: "bash", runId, retention: false })
    yield* run.release()
    const deps: Deps = { fs: p.fs, host: p.host, remoteLeaseTtlMs: DEFAULT_REMOTE_LEASE_TTL_MS, staleUnreadableMs: DEFAULT_STALE_UNREADABLE_MS }
    const scanned = yield* readManifest(deps, `${tenantDir}/${runId}`, { category: "tools", tenant: "bash", runId })
    assert.strictEqual(scanned._tag, "Owned")
    yield* prepareRemoval(deps, tenantDir).pipe(Effect.orDie)
    return { world, p, deps, scanned: scanned as OwnedManifest }
  })

describe("the re-check under the cleanup marker (Memory)", () => {
  it.scoped("the same bytes: the scan's verdict is reused, and the run is quarantined", () =>
    Effect.gen(function*() {
      const { deps, scanned } = yield* releasedRun("r1")
      const again = yield* readManifest(deps, `${tenantDir}/r1`, { category: "tools", tenant: "bash", runId: "r1" }, scanned)
      assert.strictEqual(again, scanned)
      const outcome = yield* quarantineOwnedRun(deps, { ...address, runId: "r1" }, scanned)
      assert.strictEqual(outcome._tag, "Moved")
    }))

  it.scoped("a manifest changed since the scan is decoded afresh: another run's, garbage or cut short, the run stays", () =>
    Effect.gen(function*() {
      const { p, deps, scanned } = yield* releasedRun("r1")
      const original = new TextDecoder().decode(scanned.bytes)
      const changes = [
        original.replace(`"runId":"r1"`, `"runId":"r9"`),
        "x".repeat(scanned.bytes.length),
        original.slice(0, Math.floor(original.length / 2))
      ]
      for (const changed of changes) {
        yield* p.fs.writeFileAtomic(manifestOf("r1"), text(changed)).pipe(Effect.orDie)
        const read = yield* readManifest(deps, `${tenantDir}/r1`, { category: "tools", tenant: "bash", runId: "r1" }, scanned)
        assert.notStrictEqual(read, scanned)
        assert.notStrictEqual(read._tag, "Owned")
        const outcome = yield* quarantineOwnedRun(deps, { ...address, runId: "r1" }, scanned)
        assert.deepStrictEqual([outcome._tag, outcome._tag === "Skipped" ? outcome.skip : ""], ["Skipped", "RunChanged"])
        assert.isTrue((yield* p.fs.lstat(`${tenantDir}/r1`).pipe(Effect.option))._tag === "Some")
      }
    }))

  it.scoped("a manifest rewritten with other bytes that still say the same run is judged on its own bytes", () =>
    Effect.gen(function*() {
      const { p, deps, scanned } = yield* releasedRun("r1")
      // Re-serialised (another key order, no padding): owned again, but from a fresh decode, not the scan's object.
      const rewritten = JSON.stringify({ ...scanned.manifest, version: 2 })
      yield* p.fs.writeFileAtomic(manifestOf("r1"), text(rewritten)).pipe(Effect.orDie)
      const read = yield* readManifest(deps, `${tenantDir}/r1`, { category: "tools", tenant: "bash", runId: "r1" }, scanned)
      assert.strictEqual(read._tag, "Owned")
      assert.notStrictEqual(read, scanned)
      assert.strictEqual(read._tag === "Owned" ? read.length : -1, text(rewritten).length)
    }))
})
