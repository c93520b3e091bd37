/**
 * A long document goes out a piece at a time as the reader takes it (streams.ts `writeOutPieces`): with a
 * slow reader, the writer waits for the pipe to drain instead of queueing the whole document in memory, and
 * the reader still gets every piece, in order. Through the built module, in a child process whose stdout is a
 * real pipe the test reads slowly.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const STREAMS = new URL("../../dist/cli/streams.js", import.meta.url).href
const PIECES = 400
const PIECE = 16 * 1024

const script = `
import { writeOutPieces } from ${JSON.stringify(STREAMS)}
let queued = 0
function* pieces() {
  for (let i = 0; i < ${PIECES}; i++) {
    queued = Math.max(queued, process.stdout.writableLength)
    yield String(i).padStart(6, "0") + "x".repeat(${PIECE} - 7) + "\\n"
  }
}
await writeOutPieces(pieces())
process.stderr.write(JSON.stringify({ queued }))
`

describe("cli/streams", () => {
  it("a slow reader holds the writer back: never more than a piece or two queued, and every piece arrives in order", async () => {
    if (!Fs.existsSync(fileURLToPath(STREAMS))) throw new Error("dist/cli/streams.js is missing: run `npm run build` first (npm test does)")
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        stdout += d
        // Read a chunk, then nothing for a while: the pipe fills and stays full.
        child.stdout.pause()
        setTimeout(() => child.stdout.resume(), 2)
      })
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
      child.once("error", reject)
      child.once("close", (code) => resolve({ code, stdout, stderr }))
    })
    assert.strictEqual(r.code, 0, r.stderr)
    const lines = r.stdout.split("\n").slice(0, -1)
    assert.strictEqual(lines.length, PIECES)
    lines.forEach((line, i) => assert.isTrue(line.startsWith(String(i).padStart(6, "0")) && line.length === PIECE - 1, `piece ${i}`))
    const { queued } = JSON.parse(r.stderr) as { queued: number }
    // Queueing everything would be 6.4 MiB; waiting for the drain leaves at most the stream's own buffer and a piece.
    assert.isAtMost(queued, 4 * PIECE)
  })
})
