/**
 * Where the CLI's output goes: stdout and stderr, and the wait for them before the process exits, so a
 * document is complete however long (a pipe is written asynchronously). A reader that goes away early
 * (`pi-storage memory show | head -1`) ends the output quietly: the write fails with EPIPE, nothing more is
 * written to that stream, no stack trace is printed, and the command finishes what it was doing (a lease is
 * still released) and exits 141 when it was stdout that closed, as a tool killed by SIGPIPE does (docs/cli.md "CLI
 * quick tour"). Imports nothing heavy.
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
      markClosed(name)
    })
  }
}

const markClosed = (name: Name): void => {
  closed[name] = true
  // For an ending that is not the runtime's teardown (`--version`, an argv mistake).
  if (name === "stdout") process.exitCode = ExitCode.closedPipe
}

/** A write's outcome, as soon as it is known (the stream's "error" event comes a tick later). */
const written = (name: Name) => (error?: Error | null): void => {
  if (error && isClosedPipe(error as NodeJS.ErrnoException)) markClosed(name)
}

/** Whether the stream takes more at once (false: wait for "drain"; nothing is written to a closed one). */
const write = (name: Name, text: string): boolean => closed[name] || process[name].write(text, written(name))

export const writeOut = (text: string): void => void write("stdout", text)

export const writeErr = (text: string): void => void write("stderr", text)

/**
 * Write `pieces` to stdout in order, waiting for the stream to drain whenever its buffer is full: a long
 * document (`work ls` of 40,000 runs) is made a piece at a time as the reader takes it, never held whole. A
 * reader that has gone away ends it (the rest is not made).
 */
export const writeOutPieces = async (pieces: Iterable<string>): Promise<void> => {
  for (const piece of pieces) {
    if (closed.stdout) return
    if (!write("stdout", piece)) await drained(process.stdout)
  }
}

/** Settles when `stream` can take more, or can take nothing ever again (closed, failed). */
const drained = (stream: NodeJS.WriteStream): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      for (const event of EVENTS) stream.off(event, done)
      resolve()
    }
    for (const event of EVENTS) stream.once(event, done)
  })

const EVENTS = ["drain", "close", "error"] as const

/**
 * Call `then` once everything written so far has left the process. A pipe is written asynchronously, and the
 * runtime ends a failing command with `process.exit`, which would drop what is still queued (a doctor report
 * piped into `less` cut at 64 KiB); an empty write's callback comes after every earlier write.
 */
export const whenOutputWritten = (then: () => void): void => {
  const pending = (["stdout", "stderr"] as const).filter((name) => !closed[name] && process[name].writableLength > 0)
  let left = pending.length
  if (left === 0) return then()
  for (const name of pending) {
    process[name].write("", (error) => {
      written(name)(error)
      if (--left === 0) then()
    })
  }
}

/** The exit code to end with: 141 (128 + SIGPIPE) once stdout's reader has gone, else `code`. */
export const exitCodeAfterOutput = (code: number): number => (closed.stdout ? ExitCode.closedPipe : code)
