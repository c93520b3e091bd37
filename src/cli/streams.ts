/**
 * Where the CLI's output goes: stdout and stderr, written synchronously (files and pipes on Linux), so a
 * document is complete before the process exits. A reader that goes away early (`pi-storage memory show |
 * head -1`) ends the output quietly: the write fails with EPIPE, nothing more is written to that stream, no
 * stack trace is printed, and the command finishes what it was doing (a lease is still released) and exits
 * 141 when it was stdout that closed, as a tool killed by SIGPIPE does (README "CLI quick tour"). Imports nothing.
 */
import { ExitCode } from "./exitCodes.js"

type Name = "stdout" | "stderr"

const closed: Record<Name, boolean> = { stdout: false, stderr: false }

/** A write that failed because the reader is gone (or the stream was already ended because of it). */
const isClosedPipe = (error: NodeJS.ErrnoException): boolean => error.code === "EPIPE" || error.code === "ERR_STREAM_DESTROYED"

let installed = false

/**
 * Listen for the streams' write errors: a closed pipe marks the stream closed; any other error is thrown
 * as Node would have (an unhandled stream error).
 */
export const quietOnClosedPipes = (): void => {
  if (installed) return
  installed = true
  for (const name of ["stdout", "stderr"] as const) {
    process[name].on("error", (error: NodeJS.ErrnoException) => {
      if (!isClosedPipe(error)) throw error
      closed[name] = true
      // For an ending that is not the runtime's teardown (`--version`, an argv mistake).
      if (name === "stdout") process.exitCode = ExitCode.closedPipe
    })
  }
}

export const writeOut = (text: string): void => {
  if (!closed.stdout) process.stdout.write(text)
}

export const writeErr = (text: string): void => {
  if (!closed.stderr) process.stderr.write(text)
}

/** The exit code to end with: 141 (128 + SIGPIPE) once stdout's reader has gone, else `code`. */
export const exitCodeAfterOutput = (code: number): number => (closed.stdout ? ExitCode.closedPipe : code)
