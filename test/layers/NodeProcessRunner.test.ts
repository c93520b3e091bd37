/**
 * The ProcessRunner port on Node, with real child processes: bytes in and out exactly, the environment given
 * and nothing else, exit codes as answers, a program that cannot start or is killed as `ProcessFailed`, and an
 * interrupted call kills its child.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as NodeProcessRunner from "../../src/layers/NodeProcessRunner.js"
import { scratchDirs } from "../support/scratchDirs.js"

const scratch = scratchDirs()
const PATH = process.env.PATH ?? "/usr/bin:/bin"
const run = (command: string, args: ReadonlyArray<string>, extra: { stdin?: Uint8Array; env?: Record<string, string>; cwd?: string; maxStdoutBytes?: number } = {}) =>
  NodeProcessRunner.make.run({ command, args, env: extra.env ?? { PATH }, cwd: extra.cwd ?? "/", stdin: extra.stdin, maxStdoutBytes: extra.maxStdoutBytes ?? (64 << 20), maxStderrBytes: 16 })

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("NodeProcessRunner", () => {
  it.effect("passes stdin through byte for byte (bytes that are not UTF-8 included) and collects large outputs whole", () =>
    Effect.gen(function*() {
      const input = Uint8Array.from([0x66, 0xff, 0x00, 0xe9, 0x0a, ...new Array(3 << 20).fill(0x61)])
      const out = yield* run("cat", [], { stdin: input })
      assert.strictEqual(out.exitCode, 0)
      assert.strictEqual(out.stdout.length, input.length)
      assert.isTrue(Buffer.from(out.stdout).equals(Buffer.from(input)))
      assert.strictEqual(out.stderr.length, 0)
    }))

  it.effect("gives the child exactly the environment of the call, and runs it in the call's directory", () =>
    Effect.gen(function*() {
      const dir = scratch("pi-runner-")
      const out = yield* run("sh", ["-c", "env; pwd"], { env: { PATH, ONLY_THIS: "yes" }, cwd: dir })
      const lines = Buffer.from(out.stdout).toString("utf8").trim().split("\n")
      const names = lines.slice(0, -1).map((l) => l.split("=")[0]).filter((n) => n !== "PWD" && n !== "SHLVL" && n !== "_")
      assert.deepStrictEqual(names.sort(), ["ONLY_THIS", "PATH"])
      assert.strictEqual(fs.realpathSync(lines.at(-1)!), fs.realpathSync(dir))
    }))

  it.effect("answers a non-zero exit code with what the program printed", () =>
    Effect.gen(function*() {
      const out = yield* run("sh", ["-c", "echo oops >&2; exit 3"])
      assert.strictEqual(out.exitCode, 3)
      assert.strictEqual(Buffer.from(out.stderr).toString(), "oops\n")
    }))

  it.effect("more output than the cap is OutputTooLarge (never a silent cut); stderr is kept up to its cap", () =>
    Effect.gen(function*() {
      const over = yield* Effect.flip(run("sh", ["-c", "head -c 100000 /dev/zero; sleep 30"], { maxStdoutBytes: 1000 }))
      assert.strictEqual(over.reason, "OutputTooLarge")
      const chatty = yield* run("sh", ["-c", "printf 'abcdefghijklmnopqrstuvwxyz' >&2"])
      assert.strictEqual(Buffer.from(chatty.stderr).toString(), "abcdefghijklmnop")
    }))

  it.effect("a program that cannot be started, or dies of a signal, is ProcessFailed", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(run("pi-no-such-program", []))
      assert.strictEqual(missing.reason, "Spawn")
      assert.include(missing.message, "pi-no-such-program")
      assert.strictEqual((missing.cause as NodeJS.ErrnoException).code, "ENOENT", "the platform's error is kept")
      const killed = yield* Effect.flip(run("sh", ["-c", "kill -KILL $$"]))
      assert.strictEqual(killed.reason, "Signal")
      assert.include(killed.detail, "SIGKILL")
    }))

  it.live("an interrupted call kills its child", () =>
    Effect.gen(function*() {
      const pidFile = path.join(scratch("pi-runner-"), "pid")
      const fiber = yield* Effect.fork(run("sh", ["-c", `echo $$ > ${pidFile}; exec sleep 30`]))
      while (!fs.existsSync(pidFile) || fs.readFileSync(pidFile, "utf8").trim() === "") yield* Effect.sleep("10 millis")
      const pid = Number(fs.readFileSync(pidFile, "utf8"))
      assert.isTrue(alive(pid))
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      for (let i = 0; i < 500 && alive(pid); i++) yield* Effect.sleep("10 millis")
      assert.isFalse(alive(pid), "the child is gone")
    }))
})
