/**
 * Test support: real bind mounts (the tests run as root). `bindMountSupport` says once per test file whether
 * this machine lets us mount; `bindMount` mounts for the caller's scope and always unmounts when it closes.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { Effect } from "effect"

const run = (command: string, args: ReadonlyArray<string>) => execFileSync(command, args, { stdio: ["ignore", "ignore", "pipe"] })

const unmount = (target: string) => {
  try {
    run("umount", [target])
  } catch {
    run("umount", ["-l", target]) // busy: detach it now, the kernel finishes when the last user goes
  }
}

/** Mount `source` at `target` (an existing directory) now. */
export const bindMountNow = (source: string, target: string): void => {
  run("mount", ["--bind", source, target])
}

/** Whether `mount --bind` works here, or why not (not root, no CAP_SYS_ADMIN, no mount binary …). */
export const bindMountSupport = (): { readonly available: true } | { readonly available: false; readonly why: string } => {
  const probe = fs.mkdtempSync(NodePath.join(os.tmpdir(), "pi-mount-probe-"))
  try {
    fs.mkdirSync(`${probe}/source`)
    fs.mkdirSync(`${probe}/target`)
    fs.writeFileSync(`${probe}/source/seen`, "")
    bindMountNow(`${probe}/source`, `${probe}/target`)
    const seen = fs.existsSync(`${probe}/target/seen`)
    unmount(`${probe}/target`)
    return seen ? { available: true } : { available: false, why: "mount --bind succeeded but showed nothing" }
  } catch (cause) {
    const stderr = (cause as { stderr?: Buffer }).stderr?.toString().trim()
    return { available: false, why: `mount --bind is refused here (${stderr || (cause instanceof Error ? cause.message : String(cause))})` }
  } finally {
    fs.rmSync(probe, { recursive: true, force: true })
  }
}

/**
 * Bind-mount `source` at `target` for the current scope; unmounted when the scope closes, however it ends
 * (a mount that moved with its directory: see `unmountAllUnderOnClose`).
 */
export const bindMount = (source: string, target: string) =>
  Effect.acquireRelease(Effect.sync(() => bindMountNow(source, target)), () => Effect.sync(() => unmount(target)))

/** The mount points at or below `dir` (from /proc/self/mountinfo), deepest first. */
export const mountsUnder = (dir: string): Array<string> =>
  fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n")
    .map((line) => line.split(" ")[4])
    .filter((field): field is string => field !== undefined)
    .map((field) => field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((point) => point === dir || point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length)

/**
 * Unmount everything at or below `dir` when the scope closes: a mount inside a run moves with it when the
 * run is renamed into `.trash/`, so the place it was mounted at is not where it ends up.
 */
export const unmountAllUnderOnClose = (dir: string) =>
  Effect.addFinalizer(() => Effect.sync(() => {
    for (const point of mountsUnder(dir)) unmount(point)
  }))
