import { spawn } from "node:child_process"
import { once } from "node:events"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import { NodeHostLive, parseStartTime } from "../../src/layers/NodeHost.js"
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
    }).pipe(Effect.provide(NodeHostLive)))

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
    }).pipe(Effect.provide(NodeHostLive)))

  it.effect("pids that cannot name one process are never signalled and do not exist", () =>
    Effect.gen(function*() {
      const host = yield* Host
      for (const pid of [0, -1, -process.pid, 1.5, Number.NaN, 2 ** 60]) {
        assert.isFalse(yield* host.pidExists(pid), `pid ${pid}`)
        assert.isNull(yield* host.processStartTime(pid), `pid ${pid}`)
      }
    }).pipe(Effect.provide(NodeHostLive)))

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
