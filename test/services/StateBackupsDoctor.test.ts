/**
 * The doctor's state-snapshot findings (Memory world): a dead writer's incomplete snapshot, restore-aside
 * directories, and a backup root inside a snapshotted tree; a live writer's incomplete snapshot is silent.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as MemoryFs from "../../src/layers/MemoryFileSystem.js"
import * as MemoryHost from "../../src/layers/MemoryHost.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { doctorAt } from "../support/doctor.js"
import { FileSystem } from "../../src/services/FileSystem.js"
import { Host } from "../../src/services/Host.js"
import { AGENT, asProcess, HOST } from "./migrationSupport.js"

const ROOT = "/home/user/.pi/backups/agent"
const marker = (world: MemoryWorld, pid: number) =>
  JSON.stringify({ version: 1, purpose: "state-snapshot", host: HOST, bootId: world.bootId(HOST), pid, processStartedAt: world.startTimeOf(HOST, pid) ?? 1, createdAt: 1 })

const codes = (report: { findings: ReadonlyArray<{ code: string; path: string }> }) =>
  report.findings.filter((f) => f.code.startsWith("state-backup")).map((f) => `${f.code} ${f.path}`).sort()

describe("doctor: state snapshots", () => {
  it.effect("reports dead writers' incomplete snapshots and restore-aside directories, read-only", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      const dead = world.spawn(HOST)
      const deadMarker = marker(world, dead)
      world.kill(HOST, dead)
      const alive = world.spawn(HOST)
      yield* world.writeFixture(`${AGENT}/state/x.json`, "{}")
      yield* world.mkdirFixture(ROOT, { mode: 0o700 })
      yield* world.writeFixture(`${ROOT}/.incomplete-dead/.owner`, deadMarker)
      yield* world.mkdirFixture(`${ROOT}/.incomplete-nomarker`, { mode: 0o700 })
      yield* world.writeFixture(`${ROOT}/.incomplete-alive/.owner`, marker(world, alive))
      yield* world.writeFixture(`${AGENT}/state/restore-aside/2026-12-01T07-00-00.000Z-abcdef/agent/state/x.json`, "old")
      const before = world.tree("/")
      const report = yield* asProcess(world, doctorAt(AGENT))
      assert.deepStrictEqual(codes(report), [
        `state-backup-incomplete ${ROOT}/.incomplete-dead`,
        `state-backup-incomplete ${ROOT}/.incomplete-nomarker`,
        "state-backup-restore-aside state/restore-aside/2026-12-01T07-00-00.000Z-abcdef"
      ])
      assert.match(report.findings.find((f) => f.code === "state-backup-incomplete")!.fix!, /backup create/)
      assert.deepStrictEqual(world.tree("/"), before)
    }))

  it.effect("reports a backup root inside a snapshotted tree ($PI_STATE_BACKUP_DIR)", () =>
    Effect.gen(function*() {
      const world = MemoryWorld.make()
      yield* world.writeFixture(`${AGENT}/sessions/s.jsonl`, "{}")
      const host = MemoryHost.make(world, { hostname: HOST, env: { PI_STATE_BACKUP_DIR: `${AGENT}/sessions/backups` } })
      const fs = MemoryFs.make(world, { uid: host.uid ?? 1000, hostname: HOST, pid: host.pid })
      const report = yield* Effect.provide(doctorAt(AGENT), Layer.merge(Layer.succeed(FileSystem, fs), Layer.succeed(Host, host)))
      assert.deepStrictEqual(codes(report), ["state-backup-root-unsafe sessions/backups"])
      assert.strictEqual(report.findings.find((f) => f.code === "state-backup-root-unsafe")!.severity, "error")
    }))
})
