/**
 * Test support: run a real process as if on another host (the tests run as root). Its own host name in a UTS
 * namespace (`unshare --uts`), its wall clock shifted by libfaketime (`FAKETIME="+20m"`, monotonic clock left
 * alone), and, in a private mount namespace, a boot id or machine id of its own bind-mounted over
 * `/proc/sys/kernel/random/boot_id` and `/etc/machine-id`. File mtimes stay the kernel's: the shared file
 * system's clock. `hostSupport` says once per file whether this machine allows it.
 */
import { type ChildProcess, execFileSync, spawn, type StdioOptions } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const LIBFAKETIME_CANDIDATES = [
  "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/faketime/libfaketime.so.1",
  "/usr/local/lib/faketime/libfaketime.so.1"
]

/** libfaketime's preload library, or `undefined` (`apt-get install -y faketime`). */
export const libfaketime: string | undefined = LIBFAKETIME_CANDIDATES.find((p) => fs.existsSync(p))

export interface SimulatedHost {
  readonly hostname: string
  /** A libfaketime offset for its wall clock: "+20m", "-1d". */
  readonly clock?: string
  /** Its own boot id (32 hex digits with dashes), bind-mounted in a private mount namespace. */
  readonly bootId?: string
  /** Its own machine id (32 hex digits), bind-mounted in a private mount namespace. */
  readonly machineId?: string
}

const SCRIPT = [
  "set -e",
  "if [ -n \"$PI_TEST_BOOT_ID\" ]; then mount --bind \"$PI_TEST_BOOT_ID\" /proc/sys/kernel/random/boot_id; fi",
  "if [ -n \"$PI_TEST_MACHINE_ID\" ]; then mount --bind \"$PI_TEST_MACHINE_ID\" /etc/machine-id; fi",
  "hostname \"$PI_TEST_HOSTNAME\"",
  // env execs the command itself (no fork): the pid spawned is the command's, so a SIGKILL reaches it.
  "if [ -n \"$PI_TEST_FAKETIME\" ]; then exec env LD_PRELOAD=\"$PI_TEST_LIBFAKETIME\" FAKETIME=\"$PI_TEST_FAKETIME\" FAKETIME_DONT_FAKE_MONOTONIC=1 \"$@\"; fi",
  "exec \"$@\""
].join("\n")

/**
 * Spawn `command args` on `host`; `scratch` holds the files bind-mounted for it. The pid spawned is the
 * command's own (every step execs), so signals reach it; an `ipc` channel passes through to a Node command.
 */
export const spawnOnHost = (
  host: SimulatedHost,
  scratch: string,
  command: string,
  args: ReadonlyArray<string>,
  stdio: StdioOptions = ["ignore", "pipe", "pipe"]
): ChildProcess => {
  const env: NodeJS.ProcessEnv = { ...process.env, PI_TEST_HOSTNAME: host.hostname, PI_TEST_BOOT_ID: "", PI_TEST_MACHINE_ID: "", PI_TEST_FAKETIME: "" }
  const file = (name: string, text: string) => {
    const at = fs.mkdtempSync(path.join(scratch, `${name}-`))
    fs.writeFileSync(path.join(at, name), `${text}\n`)
    return path.join(at, name)
  }
  if (host.bootId !== undefined) env["PI_TEST_BOOT_ID"] = file("boot_id", host.bootId)
  if (host.machineId !== undefined) env["PI_TEST_MACHINE_ID"] = file("machine-id", host.machineId)
  if (host.clock !== undefined) {
    if (libfaketime === undefined) throw new Error("libfaketime is not installed")
    env["PI_TEST_FAKETIME"] = host.clock
    env["PI_TEST_LIBFAKETIME"] = libfaketime
  }
  const mounts = host.bootId !== undefined || host.machineId !== undefined
  return spawn("unshare", [...(mounts ? ["--mount"] : []), "--uts", "sh", "-c", SCRIPT, "sh", command, ...args], {
    env,
    stdio
  })
}

/** Whether `spawnOnHost` works here (UTS and mount namespaces, bind mounts, libfaketime), or why not. */
export const hostSupport = (): { readonly available: true } | { readonly available: false; readonly why: string } => {
  if (process.platform !== "linux") return { available: false, why: "namespaces are Linux only" }
  if (libfaketime === undefined) return { available: false, why: "libfaketime is not installed (apt-get install -y faketime)" }
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "pi-host-probe-"))
  try {
    const boot = path.join(scratch, "boot_id")
    fs.writeFileSync(boot, "00000000-0000-4000-8000-000000000000\n")
    const out = execFileSync("unshare", ["--mount", "--uts", "sh", "-c", `mount --bind ${boot} /proc/sys/kernel/random/boot_id && hostname pi-probe && hostname && cat /proc/sys/kernel/random/boot_id`], {
      stdio: ["ignore", "pipe", "pipe"]
    }).toString()
    const faked = execFileSync("env", [`LD_PRELOAD=${libfaketime}`, "FAKETIME=+1d", process.execPath, "-e", "process.stdout.write(String(Date.now()))"]).toString()
    if (out !== "pi-probe\n00000000-0000-4000-8000-000000000000\n") return { available: false, why: `namespaces do not behave (${JSON.stringify(out)})` }
    if (Number(faked) < Date.now() + 23 * 60 * 60 * 1000) return { available: false, why: "libfaketime does not shift Node's clock here" }
    return { available: true }
  } catch (cause) {
    const stderr = (cause as { stderr?: Buffer }).stderr?.toString().trim()
    return { available: false, why: `unshare --mount --uts or mount --bind is refused here (${stderr || (cause instanceof Error ? cause.message : String(cause))})` }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true })
  }
}

/** The first line a child writes on stdout, parsed as JSON (rejects if it exits first or takes too long). */
export const firstJsonLine = <A>(child: ChildProcess, timeoutMs = 120_000): Promise<A> =>
  new Promise((resolve, reject) => {
    let out = ""
    let err = ""
    const timer = setTimeout(() => reject(new Error(`no output within ${timeoutMs} ms: ${err}`)), timeoutMs)
    child.stderr?.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)))
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString()
      const line = out.split("\n")[0]
      if (out.includes("\n") && line !== undefined) {
        clearTimeout(timer)
        try {
          resolve(JSON.parse(line) as A)
        } catch (e) {
          reject(e)
        }
      }
    })
    child.on("error", (e) => {
      clearTimeout(timer)
      reject(e)
    })
    child.on("exit", (code, signal) => {
      if (!out.includes("\n")) {
        clearTimeout(timer)
        reject(new Error(`exited (${code ?? signal}) before its output: ${err}`))
      }
    })
  })

export const exited = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())))
