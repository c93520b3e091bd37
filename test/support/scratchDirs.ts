/**
 * Scratch directories under the OS temp dir that a test file removes when it ends: left behind, a full test
 * run leaves ~1,500 of them, and a crowded /tmp slows every later file creation there (BENCHMARKS.md).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as NodePath from "node:path"
import { afterAll } from "vitest"

/** Call at a test file's top level; the returned `make(prefix)` is `mkdtempSync` whose directories go with the file. */
export const scratchDirs = (): ((prefix: string) => string) => {
  const made: Array<string> = []
  afterAll(() => {
    for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
  })
  return (prefix) => {
    const dir = fs.mkdtempSync(NodePath.join(os.tmpdir(), prefix))
    made.push(dir)
    return dir
  }
}
