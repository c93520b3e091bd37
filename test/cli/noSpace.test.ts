/**
 * A full disk says so (docs/errors.md "Errors"): ENOSPC and EDQUOT are the port reason `NoSpace` (errno kept), and
 * the CLI's message names it. In the Memory world by fault injection, through the CLI's error printer; on
 * Node, through the built CLI (the shipped bundle; `npm test` builds first) on a small tmpfs filled up.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it, vi } from "@effect/vitest"
import { Effect } from "effect"
import { makeContext, reportError } from "../../src/cli/context.js"
import { ExitCode, ExitStatus } from "../../src/cli/exit.js"
import { FileSystemError, reasonOfErrno } from "../../src/domain/Errors.js"
import { MemoryWorld } from "../../src/layers/MemoryWorld.js"
import { USER, asProfile } from "../services/userProfileSupport.js"

const MAIN = fileURLToPath(new URL("../../dist/bundle/cli/main.mjs", import.meta.url))
const NO_SPACE_WORDS = "no space left: the disk (or the user's disk quota) is full"

/** What the CLI's error printer writes for `error`, and the exit code it records. */
const printed = async (error: { readonly _tag: string; readonly message: string }) => {
  let stderr = ""
  const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true))
  const status = new ExitStatus()
  try {
    await Effect.runPromise(reportError(makeContext({ agentDir: undefined, noColor: true }, status, undefined), error))
  } finally {
    spy.mockRestore()
  }
  return { stderr, code: status.current }
}

describe("a full disk (Memory world)", () => {
  it("ENOSPC and EDQUOT are NoSpace in the one errno table; other reasons keep theirs", () => {
    assert.strictEqual(reasonOfErrno("ENOSPC"), "NoSpace")
    assert.strictEqual(reasonOfErrno("EDQUOT"), "NoSpace")
    assert.strictEqual(reasonOfErrno("EIO"), "Unknown")
    assert.strictEqual(reasonOfErrno("EACCES"), "PermissionDenied")
  })

  for (const errno of ["ENOSPC", "EDQUOT"]) {
    it.effect(`a profile write that meets ${errno} fails NoSpace (errno kept); the CLI says the disk is full, exit 1`, () =>
      Effect.gen(function*() {
        const world = MemoryWorld.make({ journal: false })
        world.injectFault({ op: "replaceFileIfUnchanged", count: Infinity, errno })
        const error = yield* Effect.flip(asProfile(world, (p) => p.add("likes tabs")))
        assert.strictEqual(error._tag, "FileSystemError")
        const fsError = error as FileSystemError
        assert.deepStrictEqual([fsError.reason, fsError.errno, fsError.method], ["NoSpace", errno, "replaceFileIfUnchanged"])
        assert.include(fsError.message, `${errno} (NoSpace): ${NO_SPACE_WORDS}`)
        // Nothing was written: USER.md is not there.
        assert.isUndefined(world.readFixtureText(USER))
        const { stderr, code } = yield* Effect.promise(() => printed(fsError))
        assert.strictEqual(code, ExitCode.findings)
        assert.match(stderr, /^pi-storage: [^\n]+\n$/)
        assert.include(stderr, NO_SPACE_WORDS)
      }))
  }

  it("a detail the port gave is kept instead of the reason's words", () => {
    const e = new FileSystemError({ reason: "NoSpace", errno: "ENOSPC", method: "copyFile", path: "/p", detail: "while copying 3 MiB" })
    assert.strictEqual(e.message, "copyFile /p: ENOSPC (NoSpace): while copying 3 MiB")
  })
})

/** Whether a tmpfs can be mounted here (root, CAP_SYS_ADMIN), or why not. */
const tmpfsSupport = (): { readonly available: true } | { readonly available: false; readonly why: string } => {
  const probe = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-tmpfs-probe-"))
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { stdio: ["ignore", "ignore", "pipe"] })
    execFileSync("umount", [probe])
    return { available: true }
  } catch (cause) {
    const stderr = (cause as { stderr?: Buffer }).stderr?.toString().trim()
    return { available: false, why: `mount -t tmpfs is refused here (${stderr || (cause instanceof Error ? cause.message : String(cause))})` }
  } finally {
    Fs.rmSync(probe, { recursive: true, force: true })
  }
}

const support = tmpfsSupport()
const mounted: Array<string> = []
afterAll(() => {
  for (const dir of mounted) {
    spawnSync("umount", ["-l", dir])
    Fs.rmSync(dir, { recursive: true, force: true })
  }
})

describe("a full disk (Node, a small tmpfs)", () => {
  it.skipIf(!support.available)(`memory add and work run on a full tmpfs: exit 1 and a message that says the disk is full${support.available ? "" : ` (skipped: ${support.why})`}`, () => {
    if (!Fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`)
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "pi-storage-full-"))
    mounted.push(dir)
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", dir])
    const agentDir = Path.join(dir, "agent")
    Fs.mkdirSync(agentDir, { mode: 0o700 })
    // Fill it: write until the device says no more.
    const fd = Fs.openSync(Path.join(dir, "filler"), "w")
    try {
      const block = Buffer.alloc(4096, 1)
      for (;;) Fs.writeSync(fd, block)
    } catch (e) {
      assert.strictEqual((e as NodeJS.ErrnoException).code, "ENOSPC")
    } finally {
      Fs.closeSync(fd)
    }
    const env = { ...process.env }
    delete env["PI_ADAPTATIVE_CODING_AGENT_DIR"]
    const cli = (...args: ReadonlyArray<string>) => spawnSync(process.execPath, [MAIN, "--agent-dir", agentDir, ...args], { env, encoding: "utf8" })
    for (const args of [["memory", "add", "likes tabs"], ["work", "run", "tools/bash", "--", "true"]]) {
      const r = cli(...args)
      const label = args.join(" ")
      assert.strictEqual(r.status, 1, `${label}: ${r.stderr}`)
      assert.match(r.stderr, /^pi-storage: [^\n]+\n$/, label)
      // The reason, and words that say it (the platform's own detail here: "no space left on device").
      assert.include(r.stderr, "ENOSPC (NoSpace)", label)
      assert.match(r.stderr, /no space left/, label)
    }
  })
})
