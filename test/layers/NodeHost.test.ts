import { spawn } from "node:child_process"
import { once } from "node:events"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import * as fs from "node:fs"
import { parseMachineId, parseStartTime, parseUptime } from "../../src/layers/NodeHost.js"
import * as NodeHost from "../../src/layers/NodeHost.js"
import { Host } from "../../src/services/Host.js"

/** A real child that lives until killed; the scope kills it if a test fails early. */
const sleepingChild = Effect.acquireRelease(
  Effect.sync(() => spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" })),
  (child) => Effect.sync(() => child.kill("SIGKILL"))
)

const isLinux = process.platform === "linux"

describe("NodeHost", () => {
  it.scopedLive("a live child exists and keeps one start time; once reaped it has neither", () =>
    Effect.gen(function*() {
      const host = yield* Host
      const child = yield* sleepingChild
      const pid = child.pid
      assert.isDefined(pid)
      if (pid === undefined) return
      assert.isTrue(yield* host.pidExists(pid))
      const first = yield* host.processStartTime(pid)
      if (isLinux) assert.isNotNull(first)
      yield* Effect.sleep("20 millis")
      assert.strictEqual(yield* host.processStartTime(pid), first)

      const exited = Effect.promise(() => once(child, "exit"))
      child.kill("SIGKILL")
      yield* exited
      assert.isFalse(yield* host.pidExists(pid))
      assert.isNull(yield* host.processStartTime(pid))
    }).pipe(Effect.provide(NodeHost.layer)))

  it.effect("self facts agree with the process and with processStartTime(own pid)", () =>
    Effect.gen(function*() {
      const host = yield* Host
      assert.strictEqual(host.pid, process.pid)
      assert.isTrue(yield* host.pidExists(host.pid))
      assert.strictEqual(host.selfStartTime, yield* host.processStartTime(host.pid))
      assert.strictEqual(host.uid, process.getuid?.() ?? null)
      assert.strictEqual(host.env("PATH"), process.env["PATH"])
      assert.isUndefined(host.env("PI_AGENT_STORAGE_SURELY_UNSET_VARIABLE"))
      if (isLinux) {
        assert.isNotNull(host.selfStartTime)
        assert.match(host.bootId ?? "", /^[0-9a-f-]{36}$/)
      }
    }).pipe(Effect.provide(NodeHost.layer)))

  it.effect("pids that cannot name one process are never signalled and do not exist", () =>
    Effect.gen(function*() {
      const host = yield* Host
      for (const pid of [0, -1, -process.pid, 1.5, Number.NaN, 2 ** 60]) {
        assert.isFalse(yield* host.pidExists(pid), `pid ${pid}`)
        assert.isNull(yield* host.processStartTime(pid), `pid ${pid}`)
      }
    }).pipe(Effect.provide(NodeHost.layer)))

  it.effect("machine id and uptime: /etc/machine-id as it is, /proc/uptime in ms and growing", () =>
    Effect.gen(function*() {
      const host = yield* Host
      const file = (() => {
        try {
          return fs.readFileSync("/etc/machine-id", "utf8").trim()
        } catch {
          return null
        }
      })()
      if (file !== null && /^[0-9a-f]{32}$/.test(file)) assert.strictEqual(host.machineId, file)
      if (!isLinux) return
      const first = yield* host.uptimeMs!
      const proc = Number(fs.readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000
      assert.isNotNull(first)
      assert.isAtMost(Math.abs(first! - proc), 60_000)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 30)))
      assert.isAtLeast((yield* host.uptimeMs!)!, first!)
    }).pipe(Effect.provide(NodeHost.layer)))

  it("parsers: a machine id is 32 lowercase hex digits; uptime is the first field in ms", () => {
    assert.strictEqual(parseMachineId("3d1219c7c4c5404aaa1f6d2a48adfda4"), "3d1219c7c4c5404aaa1f6d2a48adfda4")
    for (const bad of [null, "", "uninitialized", "3D1219C7C4C5404AAA1F6D2A48ADFDA4", "3d1219c7c4c5404aaa1f6d2a48adfda", "3d1219c7-c4c5-404a-aa1f-6d2a48adfda4"]) {
      assert.isNull(parseMachineId(bad), String(bad))
    }
    assert.strictEqual(parseUptime("847.02 801.10"), 847_020)
    assert.strictEqual(parseUptime("12 3"), 12_000)
    for (const bad of [null, "", "-1 2", "abc", "1e9 1"]) assert.isNull(parseUptime(bad), String(bad))
  })

  it.prop(
    "field 22 is found after the last ')' whatever the command name holds",
    [FastCheck.string({ maxLength: 20 }), FastCheck.nat()],
    ([comm, start]) => {
      const rest = Array.from({ length: 50 }, (_, i) => (i === 19 ? String(start) : String(i + 3)))
      const line = `1234 (${comm}) ${rest.join(" ")}\n`
      return parseStartTime(line) === start
    }
  )
})
