/**
 * The files a marker brings (`<lock>` and its reclaim lock `<lock>.reclaim`, also where a reader probes the file
 * system's clock) are named by one rule (`domain/MarkerFiles.ts`), and every reader that must know them as the
 * library's own uses it (docs/config-history.md "Config history" layout, doctor `migration-marker`): the config history's git
 * exclusion, seen by a person running git in the history directory, and the doctor's root classifier, seen
 * through `pi-storage doctor`. Real files, real git, the built CLI (`npm run build`).
 */
import * as fs from "node:fs"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { markerFileNames } from "../../src/domain/MarkerFiles.js"
import { runNode } from "../support/child.js"
import { scratchDirs } from "../support/scratchDirs.js"
import { rawGit, setup } from "./configHistorySupport.js"

const CLI = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const scratch = scratchDirs()
const DAY = 24 * 60 * 60 * 1000

/** A marker body of a holder on another host (judged by its file's age). */
const remoteHolder = (purpose: string) => JSON.stringify({ version: 1, purpose, host: "elsewhere", pid: 4242, createdAt: Date.now() })

describe("the library's own marker files, as a person meets them", () => {
  it.scopedLive("a reclaim lock or clock probe beside the config history's lock is invisible to git in the history directory (an older exclusion is brought up to date)", () =>
    Effect.gen(function*() {
      const { history, write } = yield* setup()
      write("agent/settings.json", "{\"theme\":\"dark\"}\n")
      yield* history.snapshot({ message: "first" })
      // What an older build wrote: it named `.pi-history.lock.reclaim-*`, which nothing creates.
      fs.writeFileSync(NodePath.join(history.dir, ".git", "info", "exclude"), "/.pi-history.lock\n/.pi-history.lock.reclaim-*\n/.pi-change.json\n/.pi-pending\n")
      write("agent/settings.json", "{\"theme\":\"light\"}\n")
      yield* history.snapshot({ message: "second" })
      // A reclaimer of a dead writer's lock (or a clock probe) holds `<lock>.reclaim` while a person looks.
      for (const name of markerFileNames(".pi-history.lock")) fs.writeFileSync(NodePath.join(history.dir, name), remoteHolder("reclaim"))
      fs.writeFileSync(NodePath.join(history.dir, ".pi-pending"), "")
      assert.strictEqual(rawGit(history.dir, ["status", "--porcelain", "--untracked-files=all"]), "")
      // `git add -A` (a person tidying up by hand) would take nothing of ours into a commit.
      assert.strictEqual(rawGit(history.dir, ["add", "-A", "--dry-run"]), "")
    }))

  it.live("pi-storage doctor names the migration marker's reclaim lock as the library's own (held while fresh, a leftover once dead), never an unknown writer's", () =>
    Effect.promise(async () => {
      const agent = NodePath.join(scratch("marker-files-"), "agent")
      fs.mkdirSync(agent, { mode: 0o700 })
      const lock = NodePath.join(agent, ".pi-migration.lock.reclaim")
      const doctor = async () => {
        const r = await runNode(CLI, ["--agent-dir", agent, "doctor", "--json"])
        return (JSON.parse(r.stdout) as { findings: Array<{ severity: string; code: string; path: string; message: string }> }).findings
      }
      fs.writeFileSync(lock, remoteHolder("clock-probe"))
      const fresh = await doctor()
      assert.deepStrictEqual(fresh.map((f) => [f.code, f.severity, f.path]), [["migration-marker", "info", ".pi-migration.lock.reclaim"]])
      assert.include(fresh[0]!.message, "reclaim lock is held")
      // Untouched for a day on the file system's clock: its holder is gone.
      const old = (Date.now() - DAY) / 1000
      fs.utimesSync(lock, old, old)
      const dead = await doctor()
      assert.deepStrictEqual(dead.map((f) => [f.code, f.severity, f.path]), [["migration-marker", "warning", ".pi-migration.lock.reclaim"]])
      assert.include(dead[0]!.message, "leftover reclaim lock of the migration marker")
    }), 60_000)
})
